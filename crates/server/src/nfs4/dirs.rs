//! Directory helpers shared by several operations: change info, pseudo
//! directory entries and parents.

use proto::nfs4::*;

use super::check::need_dir;
use super::compound::context::{Compound, Fh};
use crate::exports::namespace::{Child, Parent};

/// A `change_info4` from a directory's change attribute before and after
/// an operation (RFC 8881 §3.3.8). Not atomic: other changes may fall
/// between the two reads.
pub fn change_info(before: u64, after: u64) -> ChangeInfo4 {
    ChangeInfo4 {
        atomic: false,
        before,
        after,
    }
}

/// The entry `name` of pseudo directory `node`, as this client sees it
/// (RFC 8881 §7.3): NFS4ERR_NOENT if there is none, NFS4ERR_ACCESS if it
/// leads only to exports the client has no rule for.
pub fn pseudo_child(cx: &Compound, node: u16, name: &[u8]) -> Result<Child, NfsStat4> {
    let child = cx
        .exports
        .ns
        .child(node, name)
        .ok_or(NfsStat4::Nfs4errNoent)?;
    if !cx.exports.visible(child, cx.conn.peer().ip()) {
        return Err(NfsStat4::Nfs4errAccess);
    }
    Ok(child)
}

/// The parent directory of the directory `dir` (RFC 8881 §18.14):
/// NFS4ERR_NOENT at the namespace root. From an export's root it leads
/// back to the pseudo directory or the other export's directory it is
/// mounted on.
pub async fn parent_fh(cx: &Compound, dir: &Fh) -> Result<Fh, NfsStat4> {
    if let Some(node) = dir.pseudo {
        let n = cx.exports.ns.node(node).ok_or(NfsStat4::Nfs4errStale)?;
        return n
            .parent
            .map(|p| cx.pseudo_fh(p))
            .ok_or(NfsStat4::Nfs4errNoent);
    }
    let export = cx.export(dir.export)?;
    if dir.handle == export.vfs.root() {
        return match cx.exports.ns.parents.get(&dir.export) {
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
