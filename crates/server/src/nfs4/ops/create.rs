//! CREATE (RFC 8881 §18.4): makes a directory, symbolic link, device,
//! socket or fifo in the directory that is the current filehandle; the new
//! object becomes the current filehandle. Regular files are made by OPEN
//! (NFS4ERR_BADTYPE here).

use proto::nfs4::*;

use crate::conflicts::directories;
use crate::nfs4::attrs;
use crate::nfs4::check::need_dir;
use crate::nfs4::compound::context::{check_name, Compound};
use crate::nfs4::dirdeleg;
use crate::nfs4::dirs::change_info;

pub async fn run(cx: &mut Compound, args: Create4Args) -> Create4Res {
    create(cx, args).await.into()
}

/// The mode an object gets when the client sends none.
fn default_mode(kind: &vfs::CreateKind) -> u32 {
    match kind {
        vfs::CreateKind::Directory | vfs::CreateKind::Symlink(_) => 0o777,
        _ => 0o644,
    }
}

async fn create(cx: &mut Compound, args: Create4Args) -> Result<Create4ResOk, NfsStat4> {
    let dir = cx.cfh()?.clone();
    cx.check_writable(&dir)?;
    let name = check_name(&args.objname)?;
    let kind = match args.objtype {
        CreateType4::Dir => vfs::CreateKind::Directory,
        CreateType4::Link(text) => {
            if text.is_empty() || text.contains(&0) {
                return Err(NfsStat4::Nfs4errInval);
            }
            vfs::CreateKind::Symlink(text)
        }
        CreateType4::Blk(d) => vfs::CreateKind::Block(d.specdata1, d.specdata2),
        CreateType4::Chr(d) => vfs::CreateKind::Char(d.specdata1, d.specdata2),
        CreateType4::Sock => vfs::CreateKind::Socket,
        CreateType4::Fifo => vfs::CreateKind::Fifo,
        CreateType4::Other(_) => return Err(NfsStat4::Nfs4errBadtype),
    };
    let (mut set, attrset) = attrs::to_setattr(cx, &args.createattrs).await?;
    if set.size.is_some() {
        // Only regular files have a size to set.
        return Err(NfsStat4::Nfs4errInval);
    }
    if set.mode.is_none() {
        set.mode = Some(default_mode(&kind));
    }
    // Other clients' delegations of the directory (§10.9).
    directories::settle(dirdeleg::by(cx), &dir.key(), NotifyType4::AddEntry).await?;
    let _order = directories::order(dirdeleg::by(cx), &[&dir.key()]).await;
    let added = name.clone();
    let h = dir.handle.clone();
    let (obj, cinfo) = cx
        .vfs(dir.export, move |fs, c| {
            let before = fs.getattr(&h)?;
            need_dir(&before)?;
            let obj = fs.create(c, &h, &name, &kind, &set)?;
            let after = fs.getattr(&h)?;
            Ok((obj, change_info(before.change, after.change)))
        })
        .await?;
    directories::added(dirdeleg::by(cx), &dir.key(), &added);
    let fh = cx.make_child_fh(dir.export, obj.0, &obj.1, &dir.handle);
    cx.set_cfh(fh);
    Ok(Create4ResOk { cinfo, attrset })
}
