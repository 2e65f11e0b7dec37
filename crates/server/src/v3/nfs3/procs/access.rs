//! ACCESS (RFC 1813 §3.3.4): which of the asked rights the caller has, as
//! the backend's permission check says; a read-only export or rule takes
//! the modifying ones away.

use proto::nfs3::*;

use crate::v3::nfs3::Ctx;

pub async fn run(cx: &Ctx, args: Access3Args) -> Access3Res {
    let o = match cx.obj(&args.object) {
        Ok(o) => o,
        Err(s) => return Res3::Fail(s, ObjAttrFail3::default()),
    };
    let read_only = cx
        .export(o.export)
        .ok()
        .and_then(|e| e.rules.rule_for(cx.peer.ip()))
        .is_none_or(|r| r.read_only);
    let want = args.access;
    // Without a thread hand-off when the backend can answer every check
    // so (its permission cache); else on the blocking pool.
    let fast = cx.vfs_nowait(o.export, |v, c| {
        let dir = match v.getattr_nowait(&o.handle)? {
            Ok(a) => a.ftype == vfs::FileType::Directory,
            Err(e) => return Some(Err(e)),
        };
        let r = grant(want, dir, read_only, |mask| {
            match v.access_nowait(c, &o.handle, mask) {
                Some(Ok(b)) => Ok(b),
                Some(Err(e)) => Err(Some(e)),
                None => Err(None),
            }
        });
        match r {
            Ok(g) => Some(Ok(g)),
            Err(Some(e)) => Some(Err(e)),
            Err(None) => None,
        }
    });
    let granted = match fast {
        Some(r) => r,
        None => {
            let h = o.handle.clone();
            cx.vfs(o.export, move |v, c| {
                let dir = v.getattr(&h)?.ftype == vfs::FileType::Directory;
                grant(want, dir, read_only, |mask| v.access(c, &h, mask))
            })
            .await
        }
    };
    let obj_attributes = cx.post_op(&o).await;
    match granted {
        Ok(access) => Res3::Ok(Access3ResOk {
            obj_attributes,
            access,
        }),
        Err(s) => Res3::Fail(s, ObjAttrFail3 { obj_attributes }),
    }
}

/// The ACCESS3 bits of `want` that `may` (a permission check of
/// R_OK, W_OK or X_OK) grants on a directory or not (`dir`); nothing that
/// modifies on a read-only export.
fn grant<E>(
    want: u32,
    dir: bool,
    read_only: bool,
    mut may: impl FnMut(i32) -> Result<bool, E>,
) -> Result<u32, E> {
    let mut got = 0;
    if want & ACCESS3_READ != 0 && may(libc::R_OK)? {
        got |= ACCESS3_READ;
    }
    if want & (ACCESS3_LOOKUP | ACCESS3_EXECUTE) != 0 && may(libc::X_OK)? {
        got |= want & if dir { ACCESS3_LOOKUP } else { ACCESS3_EXECUTE };
    }
    let modify = ACCESS3_MODIFY | ACCESS3_EXTEND | ACCESS3_DELETE;
    if want & modify != 0 && !read_only && may(libc::W_OK)? {
        // DELETE means removing entries of a directory.
        got |= want
            & if dir {
                modify
            } else {
                ACCESS3_MODIFY | ACCESS3_EXTEND
            };
    }
    Ok(got)
}
