//! LOCKU (RFC 8881 §18.12). Waiters for a blocking lock that the unlock
//! made grantable are told with CB_NOTIFY_LOCK (RFC 8881 §20.11).

use proto::nfs4::*;

use crate::nfs4::callback;
use crate::nfs4::compound::context::Compound;
use state::locks;

pub async fn run(cx: &mut Compound, args: LockU4Args) -> LockU4Res {
    locku(cx, args).into()
}

fn locku(cx: &mut Compound, args: LockU4Args) -> Result<StateId4, NfsStat4> {
    let key = cx.cfh()?.key();
    let client = cx.clientid()?;
    let sid = cx.resolve_stateid(&args.lock_stateid)?;
    let (start, end) = locks::range(args.offset, args.length).ok_or(NfsStat4::Nfs4errInval)?;
    let (sid, notes) = cx.srv.state().unlock(client, &sid, &key, start, end)?;
    callback::notify_locks(notes);
    cx.cur_stateid = Some(sid);
    Ok(sid)
}
