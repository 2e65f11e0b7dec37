//! REMOVE (RFC 8881 §18.25): removes a name from the directory that is the
//! current filehandle (a non-directory, or an empty directory).

use proto::nfs4::*;

use crate::conflicts::{directories, unlinked};
use crate::nfs4::check::need_dir;
use crate::nfs4::compound::context::{check_name, Compound};
use crate::nfs4::deleg;
use crate::nfs4::dirdeleg;
use crate::nfs4::dirs::change_info;

pub async fn run(cx: &mut Compound, args: Remove4Args) -> Remove4Res {
    remove(cx, args).await.into()
}

async fn remove(cx: &mut Compound, args: Remove4Args) -> Result<Remove4ResOk, NfsStat4> {
    let dir = cx.cfh()?.clone();
    cx.check_writable(&dir)?;
    let name = check_name(&args.target)?;
    // Delegations of the file are recalled (§10.4.6).
    deleg::settle_name(cx, &dir, &name).await?;
    // And other clients' delegations of the directory (§10.9).
    let kind = NotifyType4::RemoveEntry;
    directories::settle(dirdeleg::by(cx), &dir.key(), kind).await?;
    let _order = directories::order(dirdeleg::by(cx), &[&dir.key()]).await;
    let cookie = directories::cookie_of(dirdeleg::by(cx), &dir.key(), &name, kind).await;
    let gone = name.clone();
    let (h, srv, export) = (dir.handle.clone(), cx.srv.clone(), dir.export);
    let cinfo = cx
        .vfs(dir.export, move |fs, c| {
            let before = fs.getattr(&h)?;
            need_dir(&before)?;
            // A file clients hold open stays theirs (§18.16.3).
            fs.remove_keeping(c, &h, &name, &unlinked::keeper(&srv, export))?;
            let after = fs.getattr(&h)?;
            Ok(change_info(before.change, after.change))
        })
        .await?;
    directories::removed(dirdeleg::by(cx), &dir.key(), &gone, cookie);
    Ok(Remove4ResOk { cinfo })
}
