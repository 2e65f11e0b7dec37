//! FREE_STATEID (RFC 8881 §18.38).

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound, args: FreeStateId4Args) -> FreeStateId4Res {
    let r = free(cx, args);
    // A removed file kept for its holders goes with the last of its state.
    crate::conflicts::unlinked::sweep(&cx.srv).await;
    r.into()
}

fn free(cx: &mut Compound, args: FreeStateId4Args) -> Result<(), NfsStat4> {
    let client = cx.clientid()?;
    let sid = cx.resolve_stateid(&args.stateid)?;
    cx.srv.state().free_stateid(client, &sid)
}
