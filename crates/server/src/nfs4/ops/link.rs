//! LINK (RFC 8881 §18.9): makes a new name, in the directory that is the
//! current filehandle, for the object that is the saved filehandle.

use proto::nfs4::*;

use crate::conflicts::directories;
use crate::nfs4::check::need_dir;
use crate::nfs4::compound::context::{check_name, Compound};
use crate::nfs4::deleg;
use crate::nfs4::dirdeleg;
use crate::nfs4::dirs::change_info;

pub async fn run(cx: &mut Compound, args: Link4Args) -> Link4Res {
    link(cx, args).await.into()
}

async fn link(cx: &mut Compound, args: Link4Args) -> Result<Link4ResOk, NfsStat4> {
    let dir = cx.cfh()?.clone();
    let src = cx.sfh.clone().ok_or(NfsStat4::Nfs4errNofilehandle)?;
    let name = check_name(&args.newname)?;
    if src.export != dir.export {
        return Err(NfsStat4::Nfs4errXdev);
    }
    cx.check_writable(&dir)?;
    // Delegations of the file are recalled (§10.4.6).
    deleg::settle(cx, &src.key()).await?;
    // And other clients' delegations of the directory (§10.9).
    directories::settle(dirdeleg::by(cx), &dir.key(), NotifyType4::AddEntry).await?;
    let _order = directories::order(dirdeleg::by(cx), &[&dir.key()]).await;
    let added = name.clone();
    let (dh, sh) = (dir.handle.clone(), src.handle);
    let cinfo = cx
        .vfs(dir.export, move |fs, c| {
            let before = fs.getattr(&dh)?;
            need_dir(&before)?;
            if fs.getattr(&sh)?.ftype == vfs::FileType::Directory {
                return Err(vfs::Errno(libc::EISDIR));
            }
            fs.link(c, &sh, &dh, &name)?;
            let after = fs.getattr(&dh)?;
            Ok(change_info(before.change, after.change))
        })
        .await?;
    directories::added(dirdeleg::by(cx), &dir.key(), &added);
    Ok(Link4ResOk { cinfo })
}
