//! RENAME (RFC 1813 §3.3.14): the NFSv4 delegations of the object renamed
//! and of one it replaces are recalled; the directories' delegations are
//! told of a rename within one, or of a removal from one and an addition
//! to the other. Renaming onto another link to the same file does
//! nothing.

use proto::nfs3::*;
use proto::nfs4::NotifyType4;

use crate::conflicts::directories;
use crate::v3::nfs3::{check_name, from_errno, from_v4, wcc, Ctx};

pub async fn run(cx: &Ctx, args: Rename3Args) -> Rename3Res {
    let fail = |s| Res3::Fail(s, Rename3ResBody::default());
    let (from, to) = match (cx.obj(&args.from.dir), cx.obj(&args.to.dir)) {
        (Ok(f), Ok(t)) => (f, t),
        (Err(s), _) | (_, Err(s)) => return fail(s),
    };
    if from.export != to.export {
        return fail(NfsStat3::Xdev);
    }
    let names = check_name(&args.from.name).and_then(|o| {
        let n = check_name(&args.to.name)?;
        cx.check_writable(to.export)?;
        Ok((o, n))
    });
    let (old, new) = match names {
        Ok(x) => x,
        Err(s) => return fail(s),
    };
    for (d, n) in [(&from, &old), (&to, &new)] {
        if let Err(s) = cx.settle_name(d, n).await {
            return fail(s);
        }
    }
    let within = from.handle == to.handle;
    let (fk, tk) = (
        (from.export, from.handle.0.clone()),
        (to.export, to.handle.0.clone()),
    );
    let who = cx.changer();
    let out = if within {
        NotifyType4::RenameEntry
    } else {
        NotifyType4::RemoveEntry
    };
    let mut settled = directories::settle(who, &fk, out).await;
    if settled.is_ok() && !within {
        settled = directories::settle(who, &tk, NotifyType4::AddEntry).await;
    }
    if let Err(s) = settled {
        return fail(from_v4(s));
    }
    let _order = directories::order(who, &[&fk, &tk]).await;
    let cookie = directories::cookie_of(who, &fk, &old, out).await;
    let fsid = cx.fsid(from.export);
    let (fh, th, o, n) = (
        from.handle.clone(),
        to.handle.clone(),
        old.clone(),
        new.clone(),
    );
    let (srv, export) = (cx.srv.clone(), from.export);
    let r = cx
        .vfs(from.export, move |v, c| {
            let fb = v.getattr(&fh).ok();
            let tb = v.getattr(&th).ok();
            let dirs = [&fb, &tb].iter().all(|a| {
                a.as_ref()
                    .is_some_and(|a| a.ftype == vfs::FileType::Directory)
            });
            let r = if !dirs {
                Err(NfsStat3::Notdir)
            } else {
                same_file(v, c, &fh, &o, &th, &n).and_then(|same| {
                    if same {
                        Ok(false)
                    } else {
                        // A replaced file NFSv4 clients hold open stays
                        // theirs.
                        let keep = crate::conflicts::unlinked::keeper(&srv, export);
                        v.rename_keeping(c, (&fh, &o), (&th, &n), &keep)
                            .map(|()| true)
                            .map_err(from_errno)
                    }
                })
            };
            Ok((fb, v.getattr(&fh).ok(), tb, v.getattr(&th).ok(), r))
        })
        .await;
    let (fb, fa, tb, ta, r) = match r {
        Ok(x) => x,
        Err(s) => return fail(s),
    };
    let body = Rename3ResBody {
        fromdir_wcc: wcc(fb.as_ref(), fa.as_ref(), fsid),
        todir_wcc: wcc(tb.as_ref(), ta.as_ref(), fsid),
    };
    match r {
        Ok(moved) => {
            if moved && within {
                directories::renamed(who, &fk, &old, cookie, &new);
            } else if moved {
                directories::removed(who, &fk, &old, cookie);
                directories::added(who, &tk, &new);
            }
            Res3::Ok(body)
        }
        Err(s) => Res3::Fail(s, body),
    }
}

/// Whether `old` in `from` and `new` in `to` are links to one file (then
/// the rename does nothing, RFC 1813 §3.3.14).
fn same_file(
    v: &dyn vfs::Vfs,
    c: &vfs::Creds,
    from: &vfs::Handle,
    old: &[u8],
    to: &vfs::Handle,
    new: &[u8],
) -> Result<bool, NfsStat3> {
    let (_, a) = v.lookup(c, from, old).map_err(from_errno)?;
    match v.lookup(c, to, new) {
        Ok((_, b)) => Ok(a.fileid == b.fileid),
        Err(vfs::Errno(libc::ENOENT)) => Ok(false),
        Err(e) => Err(from_errno(e)),
    }
}
