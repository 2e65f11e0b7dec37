//! READDIR (RFC 1813 §3.3.16): the entries of a directory after `cookie`,
//! as many as fit in `count` bytes of reply. "." and ".." come first, with
//! cookies 1 and 2 (the backend's are never 0, 1 or 2); the cookie
//! verifier never changes, as the cookies stay valid across restarts
//! (`crate::exports::COOKIEVERF`). The listing itself is the backend's
//! ([`crate::v3::nfs3::procs::readdirplus::list`]).

use proto::nfs3::*;

use crate::v3::nfs3::procs::readdirplus::{list, Budget, DIR_OK};
use crate::v3::nfs3::Ctx;

pub async fn run(cx: &Ctx, args: ReadDir3Args) -> ReadDir3Res {
    let dir = match cx.obj(&args.dir) {
        Ok(d) => d,
        Err(s) => return Res3::Fail(s, DirAttrFail3::default()),
    };
    let budget = Budget {
        names: usize::MAX,
        total: (args.count as usize).min(cx.srv.cfg.max_io as usize),
        fixed: DIR_OK,
    };
    match list(cx, &dir, args.cookie, &args.cookieverf, budget, false).await {
        Ok(l) => Res3::Ok(ReadDir3ResOk {
            dir_attributes: l.dir_attributes,
            cookieverf: crate::exports::COOKIEVERF,
            reply: DirList3 {
                entries: l
                    .entries
                    .into_iter()
                    .map(|e| Entry3 {
                        fileid: e.fileid,
                        name: e.name,
                        cookie: e.cookie,
                    })
                    .collect::<Vec<_>>()
                    .into(),
                eof: l.eof,
            },
        }),
        Err(s) => Res3::Fail(
            s,
            DirAttrFail3 {
                dir_attributes: cx.post_op(&dir).await,
            },
        ),
    }
}
