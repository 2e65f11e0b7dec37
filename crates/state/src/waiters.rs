//! Blocking-lock waiters of one file (RFC 8881 §9.6, §20.11).
//!
//! A client whose READW_LT or WRITEW_LT LOCK was denied polls: it retries
//! the LOCK, sooner if the server sends CB_NOTIFY_LOCK. To keep such a
//! waiter from being starved by newcomers, the server remembers it here,
//! in arrival order, for as long as it keeps retrying (each retry within a
//! lease of the last). While it waits:
//! * a LOCK of another owner that conflicts with the waiter's request and
//!   was not queued before it is denied too (unless that owner already
//!   holds the whole range it asks for: re-locking one's own range, say a
//!   downgrade, takes nothing from the waiter);
//! * when an unlock makes its request grantable (no held lock and no
//!   earlier waiter in the way), it is told once, with CB_NOTIFY_LOCK;
//! * its retry that succeeds removes it.
//!
//! Plain data with times passed in, like the rest of `state`; generic in
//! the owner so NLM's blocking locks can share it.

use std::collections::VecDeque;
use std::hash::Hash;
use std::time::Duration;

use crate::locks::{FileLocks, LockKind};

/// One queued request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiter<O> {
    pub owner: O,
    pub start: u64,
    pub end: u64,
    pub kind: LockKind,
    /// When it last asked (first denial or latest retry).
    pub last: Duration,
    /// Told (CB_NOTIFY_LOCK) since it last asked.
    pub notified: bool,
}

impl<O> Waiter<O> {
    /// Whether this request and `[start, end)` of `kind` cannot both be held.
    pub fn conflicts(&self, start: u64, end: u64, kind: LockKind) -> bool {
        self.start < end
            && start < self.end
            && (self.kind == LockKind::Write || kind == LockKind::Write)
    }
}

/// The waiters of one file, oldest first.
#[derive(Debug)]
pub struct LockWaiters<O> {
    queue: VecDeque<Waiter<O>>,
}

impl<O> Default for LockWaiters<O> {
    fn default() -> Self {
        LockWaiters {
            queue: VecDeque::new(),
        }
    }
}

impl<O: Clone + Eq + Hash> LockWaiters<O> {
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// The queue, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Waiter<O>> {
        self.queue.iter()
    }

    /// Forgets waiters that have not asked again within `limit` of their
    /// owner (a lease for NFSv4 owners).
    pub fn expire(&mut self, now: Duration, limit: impl Fn(&O) -> Duration) {
        self.queue
            .retain(|w| now.saturating_sub(w.last) <= limit(&w.owner));
    }

    /// Position of `owner`'s entry.
    fn position(&self, owner: &O) -> Option<usize> {
        self.queue.iter().position(|w| &w.owner == owner)
    }

    /// The oldest waiter ahead of `owner` (every waiter, if `owner` is
    /// not queued) whose request conflicts with `[start, end)` of `kind`.
    pub fn ahead(&self, owner: &O, start: u64, end: u64, kind: LockKind) -> Option<&Waiter<O>> {
        let limit = self.position(owner).unwrap_or(self.queue.len());
        self.queue
            .iter()
            .take(limit)
            .find(|w| &w.owner != owner && w.conflicts(start, end, kind))
    }

    /// Queues `owner`'s request, or refreshes it (keeping its place, taking
    /// the new range and kind) when it is already queued.
    pub fn wait(&mut self, owner: &O, start: u64, end: u64, kind: LockKind, now: Duration) {
        let w = Waiter {
            owner: owner.clone(),
            start,
            end,
            kind,
            last: now,
            notified: false,
        };
        match self.position(owner) {
            Some(i) => self.queue[i] = w,
            None => self.queue.push_back(w),
        }
    }

    /// Removes `owner`'s entry (its lock was granted, or it went away).
    pub fn remove(&mut self, owner: &O) {
        self.queue.retain(|w| &w.owner != owner);
    }

    /// Marks `owner`'s entry as not told (what [`LockWaiters::grantable`]
    /// returned could not be granted after all: a local lock).
    pub fn unnotify(&mut self, owner: &O) {
        if let Some(i) = self.position(owner) {
            self.queue[i].notified = false;
        }
    }

    /// Keeps only the waiters whose owner satisfies `f`.
    pub fn retain_owners(&mut self, mut f: impl FnMut(&O) -> bool) {
        self.queue.retain(|w| f(&w.owner));
    }

    /// The waiters not yet told whose request could now be granted: no
    /// other owner's lock in `locks` and no earlier waiter conflicts. They
    /// are marked as told.
    pub fn grantable(&mut self, locks: &FileLocks<O>) -> Vec<Waiter<O>> {
        let mut out = Vec::new();
        for i in 0..self.queue.len() {
            let w = &self.queue[i];
            if w.notified || locks.test(&w.owner, w.start, w.end, w.kind).is_some() {
                continue;
            }
            let blocked = self
                .queue
                .iter()
                .take(i)
                .any(|e| e.owner != w.owner && e.conflicts(w.start, w.end, w.kind));
            if blocked {
                continue;
            }
            self.queue[i].notified = true;
            out.push(self.queue[i].clone());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use LockKind::*;

    const LEASE: Duration = Duration::from_secs(10);

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn queue_order_and_conflicts() {
        let mut q = LockWaiters::default();
        q.wait(&1, 0, 100, Write, secs(0));
        q.wait(&2, 50, 150, Read, secs(1));
        // A newcomer reading [0, 10) meets waiter 1 (write).
        assert_eq!(q.ahead(&3, 0, 10, Read).unwrap().owner, 1);
        // Reading past waiter 1's range only meets readers: no conflict.
        assert!(q.ahead(&3, 120, 130, Read).is_none());
        assert_eq!(q.ahead(&3, 120, 130, Write).unwrap().owner, 2);
        // Waiter 2 is behind 1, so 1 never waits for 2...
        assert!(q.ahead(&1, 0, 100, Write).is_none());
        // ...but 2 waits for 1.
        assert_eq!(q.ahead(&2, 50, 150, Read).unwrap().owner, 1);
        // A retry keeps the place and takes the new range.
        q.wait(&1, 0, 10, Write, secs(2));
        assert!(q.ahead(&2, 50, 150, Read).is_none());
        assert_eq!(q.len(), 2);
        q.remove(&1);
        assert_eq!(q.len(), 1);
    }

    #[test]
    fn waiters_expire_a_lease_after_their_last_try() {
        let mut q = LockWaiters::default();
        q.wait(&1, 0, 10, Write, secs(0));
        q.wait(&2, 0, 10, Write, secs(5));
        q.expire(secs(10), |_| LEASE);
        assert_eq!(q.len(), 2);
        q.expire(secs(11), |_| LEASE);
        assert_eq!(q.len(), 1);
        // Retrying keeps it alive.
        q.wait(&2, 0, 10, Write, secs(14));
        q.expire(secs(24), |_| LEASE);
        assert_eq!(q.len(), 1);
        q.expire(secs(25), |_| LEASE);
        assert!(q.is_empty());
    }

    #[test]
    fn grantable_once_in_order() {
        let mut locks = FileLocks::default();
        locks.lock(&9, 0, 100, Write).unwrap();
        let mut q = LockWaiters::default();
        q.wait(&1, 0, 50, Write, secs(0));
        q.wait(&2, 40, 60, Write, secs(0));
        q.wait(&3, 70, 80, Read, secs(0));
        assert!(q.grantable(&locks).is_empty());
        locks.unlock(&9, 0, 100);
        // 1 may go; 2 is behind 1's conflicting request; 3 is free.
        let g: Vec<u32> = q.grantable(&locks).into_iter().map(|w| w.owner).collect();
        assert_eq!(g, vec![1, 3]);
        // Told once only, until it asks again.
        assert!(q.grantable(&locks).is_empty());
        q.wait(&3, 70, 80, Read, secs(1));
        assert_eq!(q.grantable(&locks).len(), 1);
        // 1 takes its lock and leaves; 2 becomes grantable when 1 unlocks.
        locks.lock(&1, 0, 50, Write).unwrap();
        q.remove(&1);
        assert!(q.grantable(&locks).is_empty());
        locks.unlock(&1, 0, 50);
        assert_eq!(q.grantable(&locks)[0].owner, 2);
    }
}
