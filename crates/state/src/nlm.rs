//! NLM's locks and share reservations in the one lock table (the NFSv3
//! lock manager, `crate::nlm`): an NLM lock owner is an [`OwnerKey`] whose
//! client id is its host's, in a range NFSv4 never issues
//! ([`nlm_client`]), so NLM and NFSv4 owners conflict, queue and wait for
//! each other in the same `FileLocks` and `LockWaiters`.
//!
//! What differs from NFSv4: an NLM host has no lease (its locks last until
//! it unlocks, its lock manager says it restarted, or FREE_ALL); a blocked
//! NLM request is granted by the server itself when it becomes grantable,
//! and its lock manager told with NLM_GRANTED ([`NlmGrant`]); and an NLM
//! waiter lasts while its client keeps asking (the Linux client retries a
//! blocked lock every 30 s), at most [`NLM_WAIT`] between retries.

use std::time::Duration;

use proto::nfs4::ClientId4;

use crate::locks::{Held, LockKind};
use crate::types::{FileKey, OwnerKey};

/// The client ids of NLM hosts: this prefix and the host's number.
/// NFSv4 client ids are `epoch << 32 | n`, and the epoch (one more at
/// every restart) never reaches `u32::MAX`.
const NLM_PREFIX: u64 = 0xFFFF_FFFF << 32;

/// The client id of NLM host `host`.
pub fn nlm_client(host: u32) -> ClientId4 {
    NLM_PREFIX | u64::from(host)
}

/// Whether `id` is an NLM host's (not an NFSv4 client's).
pub fn is_nlm(id: ClientId4) -> bool {
    id & NLM_PREFIX == NLM_PREFIX
}

/// How long an NLM waiter is kept without a retry of its request.
pub const NLM_WAIT: Duration = Duration::from_secs(120);

/// Share reservations (NLM SHARE) held at most per file.
pub const MAX_SHARES_PER_FILE: usize = 1024;

/// A blocked NLM request the server granted: its host must be told
/// (NLM_GRANTED).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NlmGrant {
    pub file: FileKey,
    pub owner: OwnerKey,
    pub start: u64,
    pub end: u64,
    pub kind: LockKind,
}

/// Why an NLM LOCK was not granted.
#[derive(Debug, PartialEq, Eq)]
pub enum NlmRefusal {
    /// The grace period after a restart: only reclaims.
    Grace,
    /// Another owner's lock (or an earlier waiter) is in the way.
    Denied(Held<OwnerKey>),
    /// Queued: NLM_GRANTED follows when it can be granted.
    Blocked,
    /// Past a bound (share reservations of one file).
    NoLocks,
}

/// How long a waiter of `owner` is kept without asking again.
pub fn wait_limit(owner: &OwnerKey, lease: Duration) -> Duration {
    if is_nlm(owner.0) {
        NLM_WAIT
    } else {
        lease
    }
}
