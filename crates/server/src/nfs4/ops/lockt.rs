//! LOCKT (RFC 8881 §18.11).

use proto::nfs4::*;

use crate::nfs4::check::{lock_denied as denied, lock_kind as kind, regular};
use crate::nfs4::compound::context::Compound;
use state::locks;

pub async fn run(cx: &mut Compound, args: LockT4Args) -> LockT4Res {
    match lockt(cx, args).await {
        Ok(None) => LockT4Res::Ok,
        Ok(Some(d)) => LockT4Res::Denied(d),
        Err(s) => LockT4Res::Err(s),
    }
}

async fn lockt(cx: &mut Compound, args: LockT4Args) -> Result<Option<Lock4Denied>, NfsStat4> {
    let fh = cx.cfh()?.clone();
    let client = cx.clientid()?;
    // A lock being reclaimed may not be there yet (RFC 8881 §8.4.2.1).
    if cx.srv.state().in_grace() {
        return Err(NfsStat4::Nfs4errGrace);
    }
    let (start, end) = locks::range(args.offset, args.length).ok_or(NfsStat4::Nfs4errInval)?;
    regular(&cx.attr_of(&fh).await?)?;
    let owner = (client, args.owner.owner);
    let held = cx
        .srv
        .state()
        .test_lock(&owner, &fh.key(), start, end, kind(args.locktype));
    Ok(held.map(denied))
}
