//! CLONE (RFC 7862 §15.13): the destination range shares the source's
//! blocks (FICLONERANGE). A file system that cannot share blocks answers
//! NFS4ERR_NOTSUPP; ranges not aligned to its block size NFS4ERR_INVAL.

use proto::nfs4::*;

use crate::nfs4::check::{both_regular, copy_endpoints};
use crate::nfs4::compound::context::Compound;
use crate::nfs4::deleg;
use crate::stable::durable;

pub async fn run(cx: &mut Compound, args: Clone4Args) -> Clone4Res {
    clone(cx, args).await.into()
}

async fn clone(cx: &mut Compound, args: Clone4Args) -> Result<(), NfsStat4> {
    let (src, dst) = copy_endpoints(cx, &args.src_stateid, &args.dst_stateid)?;
    // The destination's delegations are recalled (§10.4.6), and a write
    // delegation of the source (but the copier's own).
    deleg::settle_io(cx, &dst.key(), &args.dst_stateid, false).await?;
    deleg::settle_io(cx, &src.key(), &args.src_stateid, true).await?;
    let (sh, dh) = (src.handle, dst.handle.clone());
    let (so, dof, n) = (args.src_offset, args.dst_offset, args.count);
    cx.vfs(dst.export, move |v, c| {
        if let Err(s) = both_regular(v, &sh, &dh)? {
            return Ok(Err(s));
        }
        match v.clone_range(c, &sh, so, &dh, dof, n) {
            Err(vfs::Errno(libc::EOPNOTSUPP | libc::EXDEV | libc::ENOTTY)) => {
                Ok(Err(NfsStat4::Nfs4errNotsupp))
            }
            r => r.map(Ok),
        }
    })
    .await??;
    durable::barrier(cx.export(dst.export)?, &dst.handle).await?;
    Ok(())
}
