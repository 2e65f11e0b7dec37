//! RENAME (RFC 8881 §18.26): moves `oldname` in the saved filehandle's
//! directory to `newname` in the current filehandle's directory.
//!
//! Renaming an object onto itself, or onto another link to the same file,
//! succeeds and does nothing (§18.26.4): the change info then shows no
//! change in either directory.

use proto::nfs4::*;

use crate::conflicts::{directories, unlinked};
use crate::nfs4::check::need_dir;
use crate::nfs4::compound::context::{check_name, Compound};
use crate::nfs4::deleg;
use crate::nfs4::dirdeleg;
use crate::nfs4::dirs::change_info;

pub async fn run(cx: &mut Compound, args: Rename4Args) -> Rename4Res {
    rename(cx, args).await.into()
}

async fn rename(cx: &mut Compound, args: Rename4Args) -> Result<Rename4ResOk, NfsStat4> {
    let target = cx.cfh()?.clone();
    let source = cx.sfh.clone().ok_or(NfsStat4::Nfs4errNofilehandle)?;
    let oldname = check_name(&args.oldname)?;
    let newname = check_name(&args.newname)?;
    if source.export != target.export {
        return Err(NfsStat4::Nfs4errXdev);
    }
    cx.check_writable(&target)?;
    // Delegations of the file renamed and of one it replaces are
    // recalled (§10.4.6).
    deleg::settle_name(cx, &source, &oldname).await?;
    deleg::settle_name(cx, &target, &newname).await?;
    // And other clients' delegations of the directories (§10.9): a
    // rename within one, or a removal from one and an addition to the
    // other.
    let within = source.handle == target.handle;
    let (from, into) = (source.key(), target.key());
    let out = if within {
        NotifyType4::RenameEntry
    } else {
        NotifyType4::RemoveEntry
    };
    directories::settle(dirdeleg::by(cx), &from, out).await?;
    if !within {
        directories::settle(dirdeleg::by(cx), &into, NotifyType4::AddEntry).await?;
    }
    let _order = directories::order(dirdeleg::by(cx), &[&from, &into]).await;
    let cookie = directories::cookie_of(dirdeleg::by(cx), &from, &oldname, out).await;
    let names = (oldname.clone(), newname.clone());
    let (sh, th) = (source.handle, target.handle.clone());
    let (srv, export) = (cx.srv.clone(), target.export);
    let (source_cinfo, target_cinfo) = cx
        .vfs(target.export, move |fs, c| {
            let sb = fs.getattr(&sh)?;
            need_dir(&sb)?;
            let tb = fs.getattr(&th)?;
            need_dir(&tb)?;
            let (_, obj) = fs.lookup(c, &sh, &oldname)?;
            match fs.lookup(c, &th, &newname) {
                Ok((_, existing)) if existing.fileid == obj.fileid => {
                    return Ok((
                        change_info(sb.change, sb.change),
                        change_info(tb.change, tb.change),
                    ));
                }
                Ok(_) => {}
                Err(vfs::Errno(libc::ENOENT)) => {}
                Err(e) => return Err(e),
            }
            // §18.26.4 asks for NFS4ERR_EXIST when the target is of an
            // incompatible type or a non-empty directory. NFS4ERR_NOTDIR,
            // NFS4ERR_ISDIR and NFS4ERR_NOTEMPTY say which (both names are
            // directories here, so these errnos can only describe the two
            // objects), and are what the Linux client hands applications
            // as rename(2)'s errno, as the Linux server answers: it cannot
            // tell ENOTDIR from EEXIST itself when it has not looked the
            // target up.
            // A replaced file clients hold open stays theirs (§18.16.3).
            let keep = unlinked::keeper(&srv, export);
            fs.rename_keeping(c, (&sh, &oldname), (&th, &newname), &keep)?;
            let sa = fs.getattr(&sh)?;
            let ta = fs.getattr(&th)?;
            Ok((
                change_info(sb.change, sa.change),
                change_info(tb.change, ta.change),
            ))
        })
        .await?;
    // A rename onto another link to the same file changed nothing.
    if source_cinfo.before != source_cinfo.after {
        let (old, new) = &names;
        if within {
            directories::renamed(dirdeleg::by(cx), &from, old, cookie, new);
        } else {
            directories::removed(dirdeleg::by(cx), &from, old, cookie);
            directories::added(dirdeleg::by(cx), &into, new);
        }
    }
    Ok(Rename4ResOk {
        source_cinfo,
        target_cinfo,
    })
}
