//! LOOKUPP (RFC 8881 §18.14): replaces the current filehandle, a
//! directory, with that of its parent; NFS4ERR_NOENT at the export root.

use proto::nfs4::*;

use super::lookup::need_dir;
use crate::nfs4::compound::Compound;

pub async fn run(cx: &mut Compound) -> LookupP4Res {
    lookupp(cx).await.into()
}

async fn lookupp(cx: &mut Compound) -> Result<(), NfsStat4> {
    let dir = cx.cfh()?.clone();
    let h = dir.handle.clone();
    let (parent, _) = cx
        .vfs(dir.export, move |fs, c| {
            need_dir(&fs.getattr(&h)?)?;
            if h == fs.root() {
                return Err(vfs::Errno(libc::ENOENT));
            }
            fs.lookup_parent(c, &h)
        })
        .await?;
    let fh = cx.make_fh(dir.export, parent);
    cx.set_cfh(fh);
    Ok(())
}
