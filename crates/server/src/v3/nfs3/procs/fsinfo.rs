//! FSINFO (RFC 1813 §3.3.19): the server's transfer sizes (its largest
//! READ and WRITE, as NFSv4's maxread and maxwrite), the largest file, and
//! what the export supports.

use proto::nfs3::*;

use crate::v3::nfs3::Ctx;

pub async fn run(cx: &Ctx, args: FsRoot3Args) -> FsInfo3Res {
    let o = match cx.obj(&args.fsroot) {
        Ok(o) => o,
        Err(s) => return Res3::Fail(s, ObjAttrFail3::default()),
    };
    let obj_attributes = cx.post_op(&o).await;
    let io = cx.srv.cfg.max_io;
    Res3::Ok(FsInfo3ResOk {
        obj_attributes,
        rtmax: io,
        rtpref: io,
        rtmult: 4096,
        wtmax: io,
        wtpref: io,
        wtmult: 4096,
        dtpref: 64 * 1024,
        maxfilesize: vfs::MAX_FILE_SIZE,
        time_delta: NfsTime3 {
            seconds: 0,
            nseconds: 1,
        },
        properties: FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME,
    })
}
