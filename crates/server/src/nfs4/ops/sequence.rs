//! SEQUENCE (RFC 8881 §18.46).

use proto::nfs4::*;

use crate::nfs4::compound::{context::Compound, slot::SlotUse};
use crate::stable::sessions::Dead;
use state::slots::{SlotDecision, SlotError};

pub async fn run(cx: &mut Compound, args: Sequence4Args) -> Sequence4Res {
    // §18.46.3: a SEQUENCE that fails changes neither the slot nor the
    // lease, so the lease is renewed only once the slot admits it.
    let Some(session) = cx.srv.state().session(&args.sessionid) else {
        return dead(cx, &args);
    };
    if cx.nops > session.fore.maxoperations as usize {
        return Res4::Err(NfsStat4::Nfs4errTooManyOps);
    }
    if cx.request_size > session.fore.maxrequestsize as usize {
        return Res4::Err(NfsStat4::Nfs4errReqTooBig);
    }
    let (highest, target) = {
        let mut t = session.slots.lock().unwrap_or_else(|p| p.into_inner());
        match t.begin(args.slotid, args.sequenceid, cx.digest) {
            Ok(SlotDecision::Execute) => {
                cx.srv.state().renew(&session);
                // A full listener closes this connection only after
                // those that carry no session (rpc's admission).
                cx.conn.mark_stateful();
            }
            Ok(SlotDecision::Replay(reply)) => {
                // The retry of a request that succeeded.
                cx.srv.state().renew(&session);
                cx.replay = Some(reply);
                return Res4::Err(NfsStat4::Nfs4errDelay);
            }
            Err(e) => {
                return Res4::Err(match e {
                    SlotError::BadSlot => NfsStat4::Nfs4errBadslot,
                    SlotError::InProgress => NfsStat4::Nfs4errDelay,
                    SlotError::Misordered => NfsStat4::Nfs4errSeqMisordered,
                    SlotError::Uncached => NfsStat4::Nfs4errRetryUncachedRep,
                    SlotError::FalseRetry => NfsStat4::Nfs4errSeqFalseRetry,
                })
            }
        }
        (t.highest_slotid(), t.target_highest_slotid())
    };
    // From here the slot is freed on every path out of the compound.
    let slot = SlotUse::new(
        session.clone(),
        args.slotid,
        args.sequenceid,
        cx.digest,
        args.cachethis,
    );
    let mut status_flags = 0;
    if session.flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN != 0 && !session.callable() {
        status_flags |= SEQ4_STATUS_CB_PATH_DOWN_SESSION;
    }
    // Revoked delegations not yet freed (§18.46.3).
    if session.lease.has_revoked() {
        status_flags |= SEQ4_STATUS_RECALLABLE_STATE_REVOKED;
    }
    // State of it moved with an export it has not been told of yet
    // (RFC 8881 §11.14, `state::migration`).
    if cx.srv.state().lease_moved(session.client) {
        status_flags |= SEQ4_STATUS_LEASE_MOVED;
    }
    cx.slot = Some(slot);
    cx.session = Some(session);
    Res4::Ok(Sequence4ResOk {
        sessionid: args.sessionid,
        sequenceid: args.sequenceid,
        slotid: args.slotid,
        highest_slotid: highest,
        target_highest_slotid: target,
        status_flags,
    })
}

/// A session no live one has: a dead session of the earlier instance
/// (RFC 8881 §2.10.6.5) answers the retry of a request whose reply it
/// kept with that reply, anything else with NFS4ERR_DEADSESSION; any
/// other session is NFS4ERR_BADSESSION.
fn dead(cx: &mut Compound, args: &Sequence4Args) -> Sequence4Res {
    let d = cx
        .srv
        .sessions
        .dead(&args.sessionid, args.slotid, args.sequenceid, cx.digest);
    Res4::Err(match d {
        Dead::Unknown => NfsStat4::Nfs4errBadsession,
        Dead::Replay(reply) => {
            cx.replay = Some(vec![reply]);
            NfsStat4::Nfs4errDelay
        }
        Dead::FalseRetry => NfsStat4::Nfs4errSeqFalseRetry,
        Dead::Dead => NfsStat4::Nfs4errDeadsession,
    })
}
