//! COMMIT (RFC 1813 §3.3.21): the file's unstable writes made stable (the
//! whole file: the range is a hint), with the write verifier.

use proto::nfs3::*;

use crate::v3::nfs3::Ctx;

pub async fn run(cx: &Ctx, args: Commit3Args) -> Commit3Res {
    let o = match cx.obj(&args.file) {
        Ok(o) => o,
        Err(s) => return Res3::Fail(s, FileWccFail3::default()),
    };
    let r = cx.make_stable(&o).await;
    let file_wcc = WccData {
        before: None,
        after: cx.post_op(&o).await,
    };
    match r {
        Ok(()) => Res3::Ok(Commit3ResOk {
            file_wcc,
            verf: cx.srv.write_verf,
        }),
        Err(s) => Res3::Fail(s, FileWccFail3 { file_wcc }),
    }
}
