//! Who made each file by exclusive create, so that a verifier which
//! happens to equal another client's is not taken for that client's
//! retransmission.
//!
//! An exclusive create (RFC 8881 §18.16.3, EXCLUSIVE4 and EXCLUSIVE4_1)
//! that finds the file already there with the request's verifier is a
//! retransmission and succeeds. Only the client that made the file can
//! retransmit its create, but the verifier alone does not say which
//! client that was: the Linux client builds it from `jiffies` and the
//! process ID, so two identical machines racing for one name can send the
//! same one, and both would "win". The server remembers the creator of
//! recent exclusive creates (in memory, bounded; after a restart, or once
//! forgotten, the verifier alone decides, as before) and answers
//! NFS4ERR_EXIST to a matching verifier from any other client.
//!
//! The creator is known only once its create returns, and on disk that is
//! after the directory is synced: a racing create of the same name, told
//! meanwhile that the file exists with its verifier, would find no
//! creator recorded and take the file for its own. So an exclusive create
//! holds the name's lock ([`Creators::name_lock`]) from before it creates
//! until its creator is recorded or checked.

use std::hash::BuildHasher;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use proto::nfs4::ClientId4;

use crate::cache::Cache;

/// Creates remembered at most (the oldest is forgotten first).
const KEEP: usize = 16384;

/// Locks that names hash to: creates of different names rarely wait for
/// each other.
const STRIPES: usize = 64;

pub struct Creators {
    made: Cache<(u16, vfs::Handle), ClientId4>,
    names: [Mutex<()>; STRIPES],
    hasher: std::collections::hash_map::RandomState,
}

impl Default for Creators {
    fn default() -> Self {
        Creators {
            made: Cache::new("exclusive creator", KEEP, Duration::MAX),
            names: std::array::from_fn(|_| Mutex::new(())),
            hasher: Default::default(),
        }
    }
}

impl Creators {
    /// The lock of `name` in directory `dir` of `export`, held by an
    /// exclusive create across its create and [`Creators::record`] or
    /// [`Creators::may_retransmit`]. It blocks: take it on the blocking
    /// pool.
    pub fn name_lock(&self, export: u16, dir: &vfs::Handle, name: &[u8]) -> MutexGuard<'_, ()> {
        let h = self.hasher.hash_one((export, dir, name));
        let stripe = &self.names[(h % STRIPES as u64) as usize];
        // The lock guards no data: a poisoned one is as good.
        stripe.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `client` made `handle` of `export` by exclusive create.
    pub fn record(&self, export: u16, handle: &vfs::Handle, client: ClientId4) {
        self.made.insert((export, handle.clone()), client);
    }

    /// Whether an exclusive create by `client` that found `handle` with its
    /// verifier may be its retransmission: unless another client is known
    /// to have made the file.
    pub fn may_retransmit(&self, export: u16, handle: &vfs::Handle, client: ClientId4) -> bool {
        self.made
            .get(&(export, handle.clone()))
            .is_none_or(|c| c == client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_creator_retransmits_and_the_oldest_is_forgotten() {
        let c = Creators::default();
        let h = vfs::Handle(bytes::Bytes::from_static(b"h1"));
        assert!(c.may_retransmit(1, &h, 7), "unknown: the verifier decides");
        c.record(1, &h, 7);
        assert!(c.may_retransmit(1, &h, 7));
        assert!(!c.may_retransmit(1, &h, 8));
        assert!(c.may_retransmit(2, &h, 8), "another export's file");
        for i in 0..KEEP as u64 {
            c.record(
                1,
                &vfs::Handle(bytes::Bytes::from(i.to_be_bytes().to_vec())),
                9,
            );
        }
        assert!(
            c.may_retransmit(1, &h, 8),
            "forgotten: the verifier decides"
        );
        assert!(c.made.len() <= KEEP);
    }
}
