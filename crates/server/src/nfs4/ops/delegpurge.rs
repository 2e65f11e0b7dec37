//! DELEGPURGE (RFC 8881 §18.5): the client will reclaim none of the
//! delegations the server kept across its restart (CLAIM_DELEGATE_PREV,
//! CLAIM_DELEG_PREV_FH): they are forgotten. In NFSv4.1 the client is the
//! session's; the argument's client ID is not used.

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound, _args: DelegPurge4Args) -> DelegPurge4Res {
    delegpurge(cx).into()
}

fn delegpurge(cx: &mut Compound) -> Result<(), NfsStat4> {
    let client = cx.clientid()?;
    cx.srv.state().purge_prev_delegations(client)
}
