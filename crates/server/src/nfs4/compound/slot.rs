//! The slot a COMPOUND took (RFC 8881 §2.10.6.1): its reply cached at the
//! end, the digest that tells a retry from a false one, and the replies
//! a persistent session keeps across restarts (§2.10.6.5).

use crate::handoff::off_thread;
use bytes::Bytes;
use state::session::Session;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tracing::warn;

/// The slot SEQUENCE took for this compound (RFC 8881 §2.10.6.1).
///
/// Completed with the reply at the end of the compound. Dropped without
/// that (a panic, or the request's task cancelled) it frees the slot with
/// no reply cached: a retry then gets NFS4ERR_RETRY_UNCACHED_REP
/// (§2.10.6.1.3), since operations may have run, instead of finding the
/// slot in use forever.
pub struct SlotUse {
    pub slotid: u32,
    /// The request's sequence ID on the slot.
    pub seqid: u32,
    pub digest: u64,
    pub cachethis: bool,
    pub(crate) session: Arc<Session>,
    done: bool,
}

impl SlotUse {
    /// Takes charge of `slotid` of `session`, which SEQUENCE admitted.
    pub fn new(
        session: Arc<Session>,
        slotid: u32,
        seqid: u32,
        digest: u64,
        cachethis: bool,
    ) -> Self {
        SlotUse {
            slotid,
            seqid,
            digest,
            cachethis,
            session,
            done: false,
        }
    }

    /// Frees the slot, keeping `reply` (if any) for retries.
    pub fn complete(mut self, reply: Option<Vec<Bytes>>) {
        self.release(reply);
    }

    pub(crate) fn release(&mut self, reply: Option<Vec<Bytes>>) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        let mut t = self.session.slots.lock().unwrap_or_else(|p| p.into_inner());
        t.complete(self.slotid, self.digest, reply);
    }
}

impl Drop for SlotUse {
    fn drop(&mut self) {
        self.release(None);
    }
}

/// Bytes at the start of a request the false-retry digest covers: every
/// operation's arguments but a large WRITE's data.
pub(crate) const DIGEST_HEAD: usize = 512;

/// Bytes at its end: what follows a WRITE's data (a GETATTR, say).
pub(crate) const DIGEST_TAIL: usize = 64;

/// The request's digest, for telling a retry from a false one
/// (RFC 8881 §2.10.6.1.3.1, which leaves the means to the server): its
/// length, its first [`DIGEST_HEAD`] and last [`DIGEST_TAIL`] bytes. A
/// retry that differs only inside a large payload goes unnoticed; hashing
/// whole 1 MiB WRITEs cost 40% of a sequential write's server CPU.
pub(crate) fn digest(b: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    b.len().hash(&mut h);
    if b.len() <= DIGEST_HEAD + DIGEST_TAIL {
        b.hash(&mut h);
    } else {
        b[..DIGEST_HEAD].hash(&mut h);
        b[b.len() - DIGEST_TAIL..].hash(&mut h);
    }
    h.finish()
}

/// On a persistent session, puts the reply of a request that changed the
/// namespace on stable storage before it is sent, so that
/// its retry after a restart gets it back (RFC 8881 §2.10.6.5;
/// `stable::sessions`). If that fails the reply is sent all the same (the
/// change is made): a retry after a restart then finds the session dead.
pub(crate) async fn keep_across_restarts(slot: &SlotUse, out: &[Bytes]) {
    let Some(file) = crate::nfs4::session_io::io(&slot.session)
        .persist
        .get()
        .cloned()
    else {
        return;
    };
    let reply = out.to_vec();
    let (slotid, seqid, digest) = (slot.slotid, slot.seqid, slot.digest);
    let r = match off_thread(move || file.keep(slotid, seqid, digest, &reply)).await {
        Ok(r) => r.map(|_| ()),
        Err(_) => Err(std::io::Error::other("panicked")),
    };
    if let Err(e) = r {
        static LAST: AtomicU64 = AtomicU64::new(0);
        if now_and_then(&LAST) {
            warn!("persistent session: a reply could not be kept: {e}");
        }
    }
}

/// True at most once every ten seconds per `last` (the time it was last
/// true), to keep what a client can provoke from flooding the log.
pub(crate) fn now_and_then(last: &AtomicU64) -> bool {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let then = last.load(Ordering::Relaxed);
    now >= then + 10
        && last
            .compare_exchange(then, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
}
