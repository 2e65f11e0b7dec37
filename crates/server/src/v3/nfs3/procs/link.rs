//! LINK (RFC 1813 §3.3.15): a new name for a non-directory. Its NFSv4
//! delegations are recalled, and the directory's delegations told.

use proto::nfs3::*;
use proto::nfs4::NotifyType4;

use crate::conflicts::directories;
use crate::v3::nfs3::{change_dir, check_name, from_errno, from_v4, wcc, Ctx};

pub async fn run(cx: &Ctx, args: Link3Args) -> Link3Res {
    let fail = |s| Res3::Fail(s, Link3ResBody::default());
    let (file, dir) = match (cx.obj(&args.file), cx.obj(&args.link.dir)) {
        (Ok(f), Ok(d)) => (f, d),
        (Err(s), _) | (_, Err(s)) => return fail(s),
    };
    if file.export != dir.export {
        return fail(NfsStat3::Xdev);
    }
    let name = match check_name(&args.link.name).and_then(|n| {
        cx.check_writable(dir.export)?;
        Ok(n)
    }) {
        Ok(n) => n,
        Err(s) => return fail(s),
    };
    if let Err(s) = cx.settle(&file, false).await {
        return fail(s);
    }
    let key = (dir.export, dir.handle.0.clone());
    let who = cx.changer();
    if let Err(s) = directories::settle(who, &key, NotifyType4::AddEntry).await {
        return fail(from_v4(s));
    }
    let _order = directories::order(who, &[&key]).await;
    let fsid = cx.fsid(dir.export);
    let (fh, dh, n) = (file.handle.clone(), dir.handle.clone(), name.clone());
    let (before, after, r) = change_dir(cx, &dir, move |v, c| {
        if v.getattr(&fh).map_err(from_errno)?.ftype == vfs::FileType::Directory {
            return Err(NfsStat3::Isdir);
        }
        v.link(c, &fh, &dh, &n).map_err(from_errno)
    })
    .await;
    let body = Link3ResBody {
        file_attributes: cx.post_op(&file).await,
        linkdir_wcc: wcc(before.as_ref(), after.as_ref(), fsid),
    };
    match r {
        Ok(()) => {
            directories::added(who, &key, &name);
            Res3::Ok(body)
        }
        Err(s) => Res3::Fail(s, body),
    }
}
