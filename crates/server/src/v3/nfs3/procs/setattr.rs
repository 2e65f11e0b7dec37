//! SETATTR (RFC 1813 §3.3.2): with the guard (the ctime the client
//! expects, NFS3ERR_NOT_SYNC if it differs). A change recalls the
//! object's NFSv4 delegations; a directory's tells (or recalls) its
//! directory delegations.

use proto::nfs3::*;
use proto::nfs4::NotifyType4;

use crate::conflicts::directories;
use crate::v3::nfs3::{fattr3, from_errno, from_v4, sattr, wcc, Ctx};

pub async fn run(cx: &Ctx, args: SetAttr3Args) -> SetAttr3Res {
    let fail = |s, obj_wcc| Res3::Fail(s, SetAttr3ResBody { obj_wcc });
    let o = match cx.obj(&args.object) {
        Ok(o) => o,
        Err(s) => return fail(s, WccData::default()),
    };
    if let Err(s) = cx.check_writable(o.export) {
        return fail(s, WccData::default());
    }
    let set = sattr(&args.new_attributes);
    if let Err(s) = cx.settle(&o, false).await {
        return fail(s, WccData::default());
    }
    if set.size.is_some() {
        if let Err(s) = cx.check_share(&o, proto::nfs4::OPEN4_SHARE_ACCESS_WRITE) {
            return fail(s, WccData::default());
        }
    }
    let key = (o.export, o.handle.0.clone());
    let who = cx.changer();
    if let Err(s) = directories::settle(who, &key, NotifyType4::ChangeDirAttrs).await {
        return fail(from_v4(s), WccData::default());
    }
    let _order = directories::order(who, &[&key]).await;
    let fsid = cx.fsid(o.export);
    let (h, guard) = (o.handle.clone(), args.guard);
    let r = cx
        .vfs(o.export, move |v, c| {
            let before = v.getattr(&h)?;
            if let Some(want) = guard {
                if fattr3(&before, (0, 0)).ctime != want {
                    return Ok((Some(before), None, Err(NfsStat3::NotSync)));
                }
            }
            let mut set = set;
            if set.size.is_some() {
                match before.ftype {
                    vfs::FileType::Regular => {}
                    vfs::FileType::Directory => {
                        return Ok((Some(before), None, Err(NfsStat3::Isdir)))
                    }
                    _ => return Ok((Some(before), None, Err(NfsStat3::Inval))),
                }
            }
            // A symbolic link's mode cannot change on Linux: ignored.
            if before.ftype == vfs::FileType::Symlink {
                set.mode = None;
            }
            let r = if set.is_empty() {
                Ok(())
            } else {
                v.setattr(c, &h, &set).map(|_| ()).map_err(from_errno)
            };
            let after = v.getattr(&h).ok();
            Ok((Some(before), after, r))
        })
        .await;
    let (before, after, r) = match r {
        Ok(x) => x,
        Err(s) => return fail(s, WccData::default()),
    };
    let obj_wcc = wcc(before.as_ref(), after.as_ref(), fsid);
    if let Err(s) = r {
        return fail(s, obj_wcc);
    }
    if let Some(a) = after
        .as_ref()
        .filter(|a| a.ftype == vfs::FileType::Directory)
    {
        directories::attrs_changed(who, &key, a);
    }
    Res3::Ok(SetAttr3ResBody { obj_wcc })
}
