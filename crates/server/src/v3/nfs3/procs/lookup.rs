//! LOOKUP (RFC 1813 §3.3.3): a name in a directory, "." and ".." included
//! (the export's root is its own parent: a client cannot climb out of an
//! export).

use proto::nfs3::*;

use crate::v3::nfs3::{check_name, fattr3, parent_of, Ctx, Obj};

pub async fn run(cx: &Ctx, args: Lookup3Args) -> Lookup3Res {
    let dir = match cx.obj(&args.what.dir) {
        Ok(d) => d,
        Err(s) => return Res3::Fail(s, Lookup3ResFail::default()),
    };
    let r = lookup(cx, &dir, &args.what.name).await;
    let dir_attributes = cx.post_op(&dir).await;
    match r {
        Ok((object, a)) => Res3::Ok(Lookup3ResOk {
            object,
            obj_attributes: Some(a),
            dir_attributes,
        }),
        Err(s) => Res3::Fail(s, Lookup3ResFail { dir_attributes }),
    }
}

async fn lookup(cx: &Ctx, dir: &Obj, name: &bytes::Bytes) -> Result<(NfsFh3, Fattr3), NfsStat3> {
    let fsid = cx.export(dir.export)?.fsid;
    let h = dir.handle.clone();
    let found = match &name[..] {
        b"." => {
            cx.vfs(dir.export, move |v, _| Ok((h.clone(), v.getattr(&h)?)))
                .await?
        }
        b".." => {
            cx.vfs(dir.export, move |v, c| parent_of(v, c, &h, v.getattr(&h)?))
                .await?
        }
        _ => {
            let name = check_name(name)?;
            // A name the backend's caches hold: no thread hand-off.
            match cx.vfs_nowait(dir.export, |v, c| v.lookup_nowait(c, &h, &name)) {
                Some(r) => r?,
                None => {
                    cx.vfs(dir.export, move |v, c| v.lookup(c, &h, &name))
                        .await?
                }
            }
        }
    };
    let (handle, a) = found;
    let fh = cx.fh(dir.export, handle, &a, Some(&dir.handle));
    Ok((fh, fattr3(&a, fsid)))
}
