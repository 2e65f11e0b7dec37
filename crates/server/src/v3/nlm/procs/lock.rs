//! NLMPROC4_LOCK (XNFS ch. 10 NLM_LOCK): takes a byte-range lock in the
//! lock table NFSv4 shares. A blocking request that is denied is queued
//! (NLM4_BLOCKED) and granted later by the server, which then calls the
//! host back (NLM_GRANTED). In the grace period only reclaims are
//! granted. The host is recorded with the status monitor before its lock
//! is answered.

use std::sync::Arc;

use proto::nlm::*;

use state::nlm::NlmRefusal;

/// Reclaims logged at most this often.
static RECLAIM_LOG: rpc::RateLimit = rpc::RateLimit::per_secs(10);
use crate::v3::nlm::{kind, owner, range, Nlm, NlmCall};

pub async fn run(nlm: &Arc<Nlm>, c: &NlmCall, a: Nlm4LockArgs) -> Nlm4Res {
    Nlm4Res {
        stat: lock(nlm, c, &a, true)
            .await
            .err()
            .unwrap_or(Nlm4Stats::Granted),
        cookie: a.cookie,
    }
}

/// LOCK, and NM_LOCK when `monitored` is false (no status monitor
/// record, never blocking).
pub async fn lock(
    nlm: &Nlm,
    c: &NlmCall,
    a: &Nlm4LockArgs,
    monitored: bool,
) -> Result<(), Nlm4Stats> {
    let (obj, file) = nlm.file(c, &a.alock.fh)?;
    let (start, end) = range(a.alock.l_offset, a.alock.l_len)?;
    if a.exclusive && nlm.ctx(c).check_writable(obj.export).is_err() {
        return Err(Nlm4Stats::Rofs);
    }
    let host = nlm.host(c, &a.alock.caller_name)?;
    let me = owner(&host, a.alock.svid, &a.alock.oh);
    if !nlm.settle(c, &obj).await {
        // A write delegation not returned yet: the client tries again.
        return Err(if a.block {
            Nlm4Stats::Blocked
        } else {
            Nlm4Stats::Denied
        });
    }
    if monitored && !nlm.monitor(&host).await {
        return Err(Nlm4Stats::DeniedNolocks);
    }
    // Remembered before it is queued: the grant may come at once.
    let block = monitored && a.block && nlm.remember_blocked(&me, &file, a);
    let st = nlm.srv.state();
    let r = st.nlm_lock(&me, &file, start, end, kind(a.exclusive), block, a.reclaim);
    if !matches!(r, Err(NlmRefusal::Blocked)) {
        nlm.forget_blocked(&me, &file);
    }
    // A courtesy NFSv4 client whose lock yielded was purged: its record
    // goes from stable storage before this lock is answered, so that it
    // cannot reclaim its lock after a restart (RFC 8881 §8.4.3).
    if r.is_ok() {
        nlm.srv.settle_records().await;
    }
    match r {
        Ok(()) if a.reclaim => {
            if let Some(n) = RECLAIM_LOG.allow() {
                tracing::info!(host = %host.addr, name = %String::from_utf8_lossy(&host.name), "NLM: lock reclaimed ({n} more not logged)");
            }
            Ok(())
        }
        Ok(()) => Ok(()),
        Err(NlmRefusal::Grace) => Err(Nlm4Stats::DeniedGracePeriod),
        Err(NlmRefusal::Denied(_)) => Err(Nlm4Stats::Denied),
        Err(NlmRefusal::Blocked) => Err(Nlm4Stats::Blocked),
        Err(NlmRefusal::NoLocks) => Err(Nlm4Stats::DeniedNolocks),
    }
}
