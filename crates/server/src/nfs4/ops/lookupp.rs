//! LOOKUPP (RFC 8881 §18.14): replaces the current filehandle, a
//! directory, with that of its parent; NFS4ERR_NOENT at the namespace
//! root. From an export's root it leads back to the pseudo directory or
//! the other export's directory it is mounted on.

use proto::nfs4::*;

use super::lookup::need_dir;
use crate::nfs4::compound::{Compound, Fh};
use crate::nfs4::pseudo::Parent;

pub async fn run(cx: &mut Compound) -> LookupP4Res {
    lookupp(cx).await.into()
}

async fn lookupp(cx: &mut Compound) -> Result<(), NfsStat4> {
    let dir = cx.cfh()?.clone();
    let fh = parent_fh(cx, &dir).await?;
    cx.set_cfh(fh);
    Ok(())
}

/// The parent directory of the directory `dir`.
pub(crate) async fn parent_fh(cx: &Compound, dir: &Fh) -> Result<Fh, NfsStat4> {
    if let Some(node) = dir.pseudo {
        let n = cx.srv.ns.node(node).ok_or(NfsStat4::Nfs4errStale)?;
        return n
            .parent
            .map(|p| cx.pseudo_fh(p))
            .ok_or(NfsStat4::Nfs4errNoent);
    }
    let export = cx.export(dir.export)?;
    if dir.handle == export.vfs.root() {
        return match cx.srv.ns.parents.get(&dir.export) {
            Some(Parent::Pseudo(p)) => Ok(cx.pseudo_fh(*p)),
            Some(Parent::Junction { export, handle }) => {
                // Checked as LOOKUP into the outer export would be.
                let (export, h) = (*export, handle.clone());
                let (parent, _) = cx.vfs(export, move |fs, c| fs.lookup_parent(c, &h)).await?;
                Ok(cx.make_fh(export, parent))
            }
            Some(Parent::None) | None => {
                // The namespace root; still NOTDIR etc. as before.
                let h = dir.handle.clone();
                cx.vfs(dir.export, move |fs, _| need_dir(&fs.getattr(&h)?))
                    .await?;
                Err(NfsStat4::Nfs4errNoent)
            }
        };
    }
    let h = dir.handle.clone();
    let (parent, _) = cx
        .vfs(dir.export, move |fs, c| {
            need_dir(&fs.getattr(&h)?)?;
            fs.lookup_parent(c, &h)
        })
        .await?;
    Ok(cx.make_fh(dir.export, parent))
}
