//! Leases (RFC 8881 §8.3): when each client last renewed, and the order in
//! which leases run out.
//!
//! Renewing must be cheap, since every SEQUENCE renews (§8.3): it is one
//! atomic store into the client's [`Lease`], shared by the client record
//! and its sessions, with no lock over the state. [`ExpiryQueue`] orders
//! clients by the renewal time it last saw; the reaper looks only at the
//! front, and an entry found renewed since is put back at its new place.
//! So a tick costs time in the clients whose recorded time has passed, not
//! in all clients, and each client moves at most once per lease.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use proto::nfs4::ClientId4;

/// The time a client last renewed its lease, and how many of its
/// delegations are revoked and not yet freed (for SEQUENCE's
/// SEQ4_STATUS_RECALLABLE_STATE_REVOKED, RFC 8881 §18.46.3, read without
/// the state's lock).
#[derive(Debug)]
pub struct Lease {
    last: AtomicU64,
    revoked: AtomicU32,
}

impl Lease {
    pub fn new(now: Duration) -> Lease {
        Lease {
            last: AtomicU64::new(now.as_nanos() as u64),
            revoked: AtomicU32::new(0),
        }
    }

    /// Renews at `now` (never moves back).
    pub fn renew(&self, now: Duration) {
        self.last
            .fetch_max(now.as_nanos() as u64, Ordering::Relaxed);
    }

    pub fn last(&self) -> Duration {
        Duration::from_nanos(self.last.load(Ordering::Relaxed))
    }

    /// Whether the client has revoked delegations it has not freed.
    pub fn has_revoked(&self) -> bool {
        self.revoked.load(Ordering::Relaxed) > 0
    }

    pub(super) fn add_revoked(&self, n: i32) {
        if n >= 0 {
            self.revoked.fetch_add(n as u32, Ordering::Relaxed);
        } else {
            self.revoked.fetch_sub(n.unsigned_abs(), Ordering::Relaxed);
        }
    }

    /// Whether more than `lease` has passed since the last renewal.
    pub fn expired(&self, now: Duration, lease: Duration) -> bool {
        now > self.last() + lease
    }
}

/// Clients ordered by a deadline: (time after which the client may be
/// removed, as last computed; client).
#[derive(Debug, Default)]
pub struct ExpiryQueue(BTreeSet<(Duration, ClientId4)>);

impl ExpiryQueue {
    pub fn insert(&mut self, deadline: Duration, id: ClientId4) {
        self.0.insert((deadline, id));
    }

    pub fn remove(&mut self, deadline: Duration, id: ClientId4) {
        self.0.remove(&(deadline, id));
    }

    /// Takes the first entry whose deadline is before `now`.
    pub fn pop_due(&mut self, now: Duration) -> Option<(Duration, ClientId4)> {
        let first = *self.0.first()?;
        if first.0 >= now {
            return None;
        }
        self.0.pop_first()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renewals_only_move_forward_and_queue_pops_in_order() {
        let s = Duration::from_secs;
        let l = Lease::new(s(5));
        l.renew(s(3));
        assert_eq!(l.last(), s(5));
        l.renew(s(9));
        assert!(!l.expired(s(19), s(10)));
        assert!(l.expired(s(20), s(10)));
        let mut q = ExpiryQueue::default();
        q.insert(s(30), 2);
        q.insert(s(10), 1);
        q.insert(s(20), 3);
        assert_eq!(q.pop_due(s(10)), None);
        assert_eq!(q.pop_due(s(25)), Some((s(10), 1)));
        assert_eq!(q.pop_due(s(25)), Some((s(20), 3)));
        assert_eq!(q.pop_due(s(25)), None);
        assert_eq!(q.len(), 1);
    }
}
