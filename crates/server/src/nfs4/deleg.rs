//! Conflicts with delegations (RFC 8881 §10.2, §10.4.6), for the
//! operations that change a file or its name: the change recalls the
//! delegations of the file and waits for their return, up to
//! [`super::Nfs4Config::recall_wait`], before it goes on; if one is still
//! held then, the request is answered NFS4ERR_DELAY and the client retries.
//!
//! Who conflicts. An OPEN for writing does not recall a delegation its
//! own client and open owner were granted: they coordinate their own opens
//! (§10.4; pynfs DELEG23). Every other delegation of the file conflicts,
//! the same client's under another open owner included: one client may
//! see a file through several caches, each with its own open owners (the
//! Linux client's `nosharecache` mounts share one client ID, and a process
//! on one would not see a lock another holds under a delegation on the
//! other). A change itself (WRITE, SETATTR, REMOVE, RENAME, LINK) recalls
//! every delegation of the file: the holder of a read delegation trusts its
//! cache until it gives the delegation back.

use std::time::Instant;

use proto::nfs4::*;

use super::callback;
use super::compound::Compound;
use super::state::FileKey;

/// Settles the conflicts of a change to `file` with its delegations (any
/// client's): Ok once none is held, else NFS4ERR_DELAY when the wait is
/// over.
pub async fn settle(cx: &Compound, file: &FileKey) -> Result<(), NfsStat4> {
    settle_for(cx, file, None).await
}

/// [`settle`] for an OPEN by `owner` of this compound's client: the
/// delegation that client and owner hold does not conflict.
pub async fn settle_open(
    cx: &Compound,
    file: &FileKey,
    owner: &bytes::Bytes,
) -> Result<(), NfsStat4> {
    let breaker = (cx.clientid()?, owner.clone());
    settle_for(cx, file, Some(&breaker)).await
}

/// Recalls the delegations of `file` not granted to `breaker` and waits.
async fn settle_for(
    cx: &Compound,
    file: &FileKey,
    breaker: Option<&super::state::OwnerKey>,
) -> Result<(), NfsStat4> {
    let state = cx.srv.state();
    if !state.delegations_outstanding() {
        return Ok(());
    }
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

/// Guards `file` against local writers for a delegation about to be
/// granted (`vfs::Vfs::guard_local_writes`, a kernel read lease on a local
/// export): a local process that opens it for writing, or truncates it,
/// then recalls its delegations and waits in the kernel until they are
/// gone. False if it cannot be guarded now (it is open for writing
/// somewhere): no delegation then.
pub async fn guard(cx: &Compound, file: &FileKey) -> bool {
    let srv = std::sync::Arc::downgrade(&cx.srv);
    let rt = tokio::runtime::Handle::current();
    let key = file.clone();
    let on_break: vfs::lease::OnBreak = std::sync::Arc::new(move || {
        let (srv, key) = (srv.clone(), key.clone());
        rt.spawn(async move {
            let Some(srv) = srv.upgrade() else { return };
            let b = srv.state().break_delegations(&key, None);
            for r in b.recalls {
                callback::recall(&srv, r);
            }
        });
    });
    let h = file.1.clone();
    cx.vfs(file.0, move |v, _| {
        Ok(v.guard_local_writes(&h, on_break).unwrap_or(false))
    })
    .await
    .unwrap_or(false)
}

/// Ends a guard [`guard`] took for a delegation that was not granted.
pub fn unguard(cx: &Compound, file: &FileKey) {
    if let Ok(e) = cx.export(file.0) {
        e.vfs.unguard_local_writes(&file.1);
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
