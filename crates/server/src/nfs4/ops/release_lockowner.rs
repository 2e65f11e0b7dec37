//! RELEASE_LOCKOWNER (RFC 7530 §16.37): an NFSv4.0 lock owner that holds
//! no lock is forgotten, its lock stateids with it; one holding a lock is
//! NFS4ERR_LOCKS_HELD.

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound, args: ReleaseLockOwner4Args) -> ReleaseLockOwner4Res {
    let owner = &args.lock_owner;
    let state = cx.srv.state();
    state
        .renew40(owner.clientid)
        .and_then(|()| state.release_lockowner(owner.clientid, &owner.owner))
        .into()
}
