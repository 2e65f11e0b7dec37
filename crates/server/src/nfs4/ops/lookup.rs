//! LOOKUP (RFC 8881 §18.13): replaces the current filehandle, a directory,
//! with that of the named object in it. Crossing from a pseudo directory
//! or a junction into an export checks the export's rules: no rule for
//! the client is NFS4ERR_ACCESS, an unprivileged port where a privileged
//! one is required NFS4ERR_PERM, a security flavor the export does not
//! accept NFS4ERR_WRONGSEC (§2.6.3.1.1.3). A referral's name succeeds:
//! the operations after it are answered NFS4ERR_MOVED (§11.15.1).

use bytes::Bytes;
use proto::nfs4::*;

use crate::exports::namespace::Child;
use crate::nfs4::check::need_dir;
use crate::nfs4::compound::context::{check_name, Compound, Fh};
use crate::nfs4::dirs::pseudo_child;

pub async fn run(cx: &mut Compound, args: Lookup4Args) -> Lookup4Res {
    lookup(cx, args).await.into()
}

async fn lookup(cx: &mut Compound, args: Lookup4Args) -> Result<(), NfsStat4> {
    let dir = cx.cfh()?.clone();
    let name = check_name(&args.objname)?;
    let fh = lookup_fh(cx, &dir, name).await?;
    cx.set_cfh(fh);
    Ok(())
}

/// The filehandle `name` in `dir` leads to, crossing into another export
/// where one is mounted, with the checks for entering it.
async fn lookup_fh(cx: &Compound, dir: &Fh, name: Bytes) -> Result<Fh, NfsStat4> {
    if let Some(node) = dir.pseudo {
        let fh = match pseudo_child(cx, node, &name)? {
            Child::Node(n) => cx.pseudo_fh(n),
            Child::Export(e) => cx.export_root_fh(e)?,
            // NFS4_OK: the absent file system's root becomes current; what
            // follows is NFS4ERR_MOVED (RFC 8881 §11.15.1).
            Child::Referral(r) => cx.referral_fh(r),
        };
        cx.check_flavor(&fh)?;
        return Ok(fh);
    }
    // A name the backend's caches hold is looked up here, without a
    // thread hand-off (in a directory: otherwise the blocking path says
    // what the current filehandle is).
    let fast = cx.vfs_nowait(dir.export, |fs, c| fs.lookup_nowait(c, &dir.handle, &name));
    let (obj, attr) = match fast {
        Some(r) => r?,
        None => {
            let h = dir.handle.clone();
            cx.vfs(dir.export, move |fs, c| {
                need_dir(&fs.getattr(&h)?)?;
                fs.lookup(c, &h, &name)
            })
            .await?
        }
    };
    if let Some(&inner) = cx.exports.ns.junctions.get(&(dir.export, obj.clone())) {
        let fh = cx.export_root_fh(inner)?;
        cx.check_flavor(&fh)?;
        return Ok(fh);
    }
    Ok(cx.make_child_fh(dir.export, obj, &attr, &dir.handle))
}
