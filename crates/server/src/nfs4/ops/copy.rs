//! COPY (RFC 7862 §15.2): intra-server and always synchronous. The saved
//! filehandle is the source, the current filehandle the destination; the
//! source stateid must allow reading, the destination stateid writing.
//! An inter-server copy (a non-empty `ca_source_server`) is
//! NFS4ERR_NOTSUPP, as knfsd answers with inter-server copy disabled.

use proto::nfs4::*;

use crate::nfs4::check::{both_regular, copy_endpoints};
use crate::nfs4::compound::context::Compound;
use crate::nfs4::deleg;
use crate::stable::durable;

pub async fn run(cx: &mut Compound, args: Copy4Args) -> Copy4Res {
    match copy(cx, args).await {
        Ok(count) => Copy4Res::Ok(Copy4ResOk {
            response: WriteResponse4 {
                // Synchronous: no callback id, whatever the client asked.
                callback_id: None,
                count,
                // Copied through the page cache: COMMIT makes it durable.
                committed: StableHow4::Unstable4,
                writeverf: cx.srv.write_verf,
            },
            requirements: CopyRequirements4 {
                consecutive: true,
                synchronous: true,
            },
        }),
        Err(s) => Copy4Res::Err(s),
    }
}

async fn copy(cx: &mut Compound, args: Copy4Args) -> Result<u64, NfsStat4> {
    let (src, dst) = copy_endpoints(cx, &args.src_stateid, &args.dst_stateid)?;
    if !args.source_server.is_empty() {
        return Err(NfsStat4::Nfs4errNotsupp);
    }
    // The destination's delegations are recalled (§10.4.6), and a write
    // delegation of the source (but the copier's own).
    deleg::settle_io(cx, &dst.key(), &args.dst_stateid, false).await?;
    deleg::settle_io(cx, &src.key(), &args.src_stateid, true).await?;
    let (sh, dh) = (src.handle, dst.handle.clone());
    let (so, dof, n) = (args.src_offset, args.dst_offset, args.count);
    let copied = cx
        .vfs(dst.export, move |v, c| {
            if let Err(s) = both_regular(v, &sh, &dh)? {
                return Ok(Err(s));
            }
            v.copy(c, &sh, so, &dh, dof, n).map(Ok)
        })
        .await??;
    durable::barrier(cx.export(dst.export)?, &dst.handle).await?;
    Ok(copied)
}
