//! Conflicts with delegations (RFC 8881 §10.2, §10.4.6), for the
//! operations that change a file or its name: a change by one client to a
//! file another client holds a delegation of recalls the delegation and
//! waits for its return, up to [`super::Nfs4Config::recall_wait`], before
//! it goes on; if the delegation is still held then, the request is
//! answered NFS4ERR_DELAY and the client retries.

use std::time::Instant;

use proto::nfs4::*;

use super::callback;
use super::compound::Compound;
use super::state::FileKey;

/// Settles the conflicts of a change to `file` by this compound's client
/// with other clients' delegations: Ok once none is held, else
/// NFS4ERR_DELAY when the wait is over.
pub async fn settle(cx: &Compound, file: &FileKey) -> Result<(), NfsStat4> {
    let state = cx.srv.state();
    if !state.delegations_outstanding() {
        return Ok(());
    }
    let breaker = cx.clientid().ok();
    let deadline = Instant::now() + cx.srv.cfg.recall_wait;
    loop {
        let gone = state.deleg_gone().notified();
        tokio::pin!(gone);
        gone.as_mut().enable();
        let b = state.break_delegations(file, breaker);
        for r in b.recalls {
            callback::recall(&cx.srv, r);
        }
        if !b.pending {
            return Ok(());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(NfsStat4::Nfs4errDelay);
        }
        let _ = tokio::time::timeout(left, gone).await;
    }
}

/// [`settle`] for the object `name` in the directory `dir`, if it exists
/// (REMOVE, RENAME): looked up only when some delegation is held.
pub async fn settle_name(
    cx: &Compound,
    dir: &super::compound::Fh,
    name: &bytes::Bytes,
) -> Result<(), NfsStat4> {
    if !cx.srv.state().delegations_outstanding() {
        return Ok(());
    }
    let (dh, n) = (dir.handle.clone(), name.clone());
    let found = cx
        .vfs(dir.export, move |v, c| Ok(v.lookup(c, &dh, &n).ok()))
        .await?;
    match found {
        Some((h, _)) => settle(cx, &(dir.export, h)).await,
        None => Ok(()),
    }
}
