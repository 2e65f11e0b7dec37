//! RECLAIM_COMPLETE (RFC 8881 §18.51).

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound, args: ReclaimComplete4Args) -> ReclaimComplete4Res {
    let id = match cx.clientid() {
        Ok(id) => id,
        Err(e) => return Res4::Err(e),
    };
    if args.one_fs {
        // Per-file-system completion: we keep no per-fs reclaim state.
        return match cx.cfh() {
            Ok(_) => Res4::Ok(()),
            Err(e) => Res4::Err(e),
        };
    }
    complete(cx, id).await.into()
}

/// The client's record goes to stable storage before the reply: from then
/// on it may hold state, which it may reclaim after a restart (RFC 8881
/// §8.4.2.1). The grace period ends at once if it was the last recorded
/// client to reclaim.
async fn complete(cx: &mut Compound, id: ClientId4) -> Result<(), NfsStat4> {
    let owner = cx.srv.state().reclaim_owner(id)?;
    cx.record_client(id, owner).await?;
    if let Err(e) = cx.srv.state().reclaim_complete(id) {
        if e == NfsStat4::Nfs4errStaleClientid {
            // Purged while its record was written: the record goes too
            // (before the reply, at the end of the compound).
            cx.srv.state().records().dead([id]);
        }
        return Err(e);
    }
    cx.srv.end_grace_if_due().await;
    Ok(())
}
