//! LOOKUP (RFC 8881 §18.13): replaces the current filehandle, a directory,
//! with that of the named object in it.

use proto::nfs4::*;

use crate::nfs4::compound::{check_name, Compound};

pub async fn run(cx: &mut Compound, args: Lookup4Args) -> Lookup4Res {
    lookup(cx, args).await.into()
}

async fn lookup(cx: &mut Compound, args: Lookup4Args) -> Result<(), NfsStat4> {
    let dir = cx.cfh()?.clone();
    let name = check_name(&args.objname)?;
    let h = dir.handle.clone();
    let (obj, _) = cx
        .vfs(dir.export, move |fs, c| {
            need_dir(&fs.getattr(&h)?)?;
            fs.lookup(c, &h, &name)
        })
        .await?;
    let fh = cx.make_fh(dir.export, obj);
    cx.set_cfh(fh);
    Ok(())
}

/// Fails unless `a` is a directory: a symbolic link gives ELOOP
/// (NFS4ERR_SYMLINK, RFC 8881 §15.1.2.11), anything else ENOTDIR
/// (NFS4ERR_NOTDIR). For use inside backend calls.
pub(crate) fn need_dir(a: &vfs::Attr) -> vfs::Result<()> {
    match a.ftype {
        vfs::FileType::Directory => Ok(()),
        vfs::FileType::Symlink => Err(vfs::Errno(libc::ELOOP)),
        _ => Err(vfs::Errno(libc::ENOTDIR)),
    }
}

/// A `change_info4` from a directory's change attribute before and after
/// an operation (RFC 8881 §3.3.8). Not atomic: other changes may fall
/// between the two reads.
pub(crate) fn change_info(before: u64, after: u64) -> ChangeInfo4 {
    ChangeInfo4 {
        atomic: false,
        before,
        after,
    }
}
