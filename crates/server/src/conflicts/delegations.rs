//! Conflicts with delegations (RFC 8881 §10.2, §10.4.6), for every
//! protocol's requests that change a file or its name: the change recalls the
//! delegations of the file and waits for their return, up to
//! [`crate::instance::Nfs4Config::recall_wait`], before it goes on; if one is still
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
//!
//! Write delegations (§10.4) also conflict with reading: an OPEN for
//! reading or a READ by anyone but the holder's client and open owner
//! recalls one. I/O under a stateid of the holder's client and open owner
//! does not recall its write delegation: it writes its cache through. A
//! GETATTR of such a file by another client asks the holder with
//! CB_GETATTR (`crate::nfs4::deleg::holder_attrs`, §10.4.3) instead of
//! recalling. NFSv3 and NLM changes conflict with every delegation
//! ([`settle_anyone`]).

use std::sync::Arc;
use std::time::Instant;

use proto::nfs4::*;
use state::{Breaker, FileKey};

use crate::instance::Server;

/// Recalls the delegations of `file` that conflict with `breaker`, and
/// the pNFS layouts of other clients its I/O or change conflicts with
/// (RFC 8881 §12.5.5: a read through the metadata server conflicts with
/// RW layouts, a write or a change with every layout; an OPEN with
/// none), and waits.
pub async fn settle(
    srv: &Arc<Server>,
    file: &FileKey,
    breaker: Breaker,
    reads: bool,
) -> Result<(), NfsStat4> {
    let state = srv.state();
    let quiet = if reads {
        !state.write_delegations_outstanding()
    } else {
        !state.delegations_outstanding()
    };
    let layouts = state.layouts_outstanding() && !matches!(breaker, Breaker::Opener(_));
    if quiet && !layouts {
        return Ok(());
    }
    let client = match &breaker {
        Breaker::Anyone => None,
        Breaker::Opener((c, _)) | Breaker::Io(c, _) => Some(*c),
    };
    wait_out(srv, || {
        let mut b = if quiet {
            state::Breaking::default()
        } else {
            state.break_delegations(file, &breaker, reads)
        };
        if layouts {
            let lb = state.break_layouts(file, client, reads);
            if let Some(cb) = srv.callbacks() {
                for r in lb.recalls {
                    cb.recall_layout(r);
                }
            }
            b.pending |= lb.pending;
        }
        b
    })
    .await
}

/// [`settle`] for a change of `file` by a client with no NFSv4 state
/// (NFSv3, NLM, a local writer) (`reads`: a read,
/// which conflicts with write delegations alone): every NFSv4 delegation
/// it conflicts with is recalled (the caller answers NFS3ERR_JUKEBOX for
/// NFS4ERR_DELAY).
pub async fn settle_anyone(srv: &Arc<Server>, file: &FileKey, reads: bool) -> Result<(), NfsStat4> {
    settle(srv, file, Breaker::Anyone, reads).await
}

/// Recalls the delegations `breaking` finds in the way, again and again
/// (each is recalled once) until none is, waiting for their return up to
/// [`crate::instance::Nfs4Config::recall_wait`]: then NFS4ERR_DELAY.
pub async fn wait_out(
    srv: &Arc<Server>,
    breaking: impl Fn() -> state::Breaking,
) -> Result<(), NfsStat4> {
    let deadline = Instant::now() + srv.cfg.recall_wait;
    loop {
        let gone = srv.deleg_gone.notified();
        tokio::pin!(gone);
        gone.as_mut().enable();
        let b = breaking();
        if let Some(cb) = srv.callbacks() {
            for r in b.recalls {
                cb.recall(r);
            }
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
