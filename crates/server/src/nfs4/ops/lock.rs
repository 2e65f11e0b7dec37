//! LOCK (RFC 8881 §18.10). A denied blocking request (READW_LT,
//! WRITEW_LT) queues its owner as a waiter on the file: the client polls,
//! later requests of other owners do not overtake it, and an unlock that
//! makes it grantable sends CB_NOTIFY_LOCK (RFC 8881 §9.6, §20.11; see
//! `state::waiters`).

use proto::nfs4::*;

use crate::nfs4::check::{lock_denied, lock_kind};
use crate::nfs4::compound::context::Compound;
use state::locks;
use state::{LockError, LockRequest};

pub async fn run(cx: &mut Compound, args: Lock4Args) -> Lock4Res {
    match lock(cx, args) {
        Ok(lock_stateid) => Lock4Res::Ok(Lock4ResOk { lock_stateid }),
        Err(LockError::Denied(h)) => Lock4Res::Denied(lock_denied(h)),
        Err(LockError::Status(s)) => Lock4Res::Err(s),
    }
}

fn lock(cx: &mut Compound, args: Lock4Args) -> Result<StateId4, LockError> {
    let key = cx.cfh()?.key();
    let client = cx.clientid()?;
    let (start, end) = locks::range(args.offset, args.length).ok_or(NfsStat4::Nfs4errInval)?;
    let kind = lock_kind(args.locktype);
    let blocking = matches!(
        args.locktype,
        NfsLockType4::ReadwLt | NfsLockType4::WritewLt
    );
    let (presented, owner) = match &args.locker {
        Locker4::OpenOwner(o) => (
            cx.resolve_stateid(&o.open_stateid)?,
            Some(o.lock_owner.owner.clone()),
        ),
        Locker4::LockOwner(l) => (cx.resolve_stateid(&l.lock_stateid)?, None),
    };
    let sid = cx.srv.state().lock(&LockRequest {
        client,
        new_owner: owner,
        presented,
        file: key,
        start,
        end,
        kind,
        blocking,
        reclaim: args.reclaim,
        fh: cx.cfh()?.wire.clone(),
    })?;
    cx.cur_stateid = Some(sid);
    Ok(sid)
}
