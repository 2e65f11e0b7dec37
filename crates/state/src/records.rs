//! Which client records must leave stable storage (RFC 8881 §8.4.2.1,
//! §8.4.3): the state notes a client it purged here, under its lock and
//! without waiting for a disk; the driver, which keeps the records,
//! takes what is noted and makes the removals durable before it answers
//! the request that purged the client (Ferrite's server:
//! `server::stable::records`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use proto::nfs4::ClientId4;

/// Removals noted and not yet made.
#[derive(Debug, Default)]
pub struct Pending {
    /// Records of purged clients, to remove.
    pub dead: Vec<ClientId4>,
    /// Remove the records of earlier instances (the grace period ended).
    pub forget_previous: bool,
}

impl Pending {
    pub fn is_empty(&self) -> bool {
        self.dead.is_empty() && !self.forget_previous
    }
}

/// The removals waiting for the driver.
#[derive(Debug)]
pub struct RecordQueue {
    /// Whether records are kept at all (no queue grows for a server
    /// without a state directory).
    kept: bool,
    pending: Mutex<Pending>,
    has_pending: AtomicBool,
}

impl RecordQueue {
    /// A queue for a driver that keeps records (`kept`) or none.
    pub fn new(kept: bool) -> RecordQueue {
        RecordQueue {
            kept,
            pending: Mutex::new(Pending::default()),
            has_pending: AtomicBool::new(false),
        }
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds `work` to what is pending (also what a failed removal puts
    /// back, to be tried again).
    pub fn note(&self, work: Pending) {
        if !self.kept {
            return;
        }
        let mut p = self.pending();
        p.dead.extend(work.dead);
        p.forget_previous |= work.forget_previous;
        if !p.is_empty() {
            self.has_pending.store(true, Ordering::Release);
        }
    }

    /// Notes that the clients `ids` were purged.
    pub fn dead(&self, ids: impl IntoIterator<Item = ClientId4>) {
        self.note(Pending {
            dead: ids.into_iter().collect(),
            forget_previous: false,
        });
    }

    /// Whether removals wait for the driver.
    pub fn has_pending(&self) -> bool {
        self.has_pending.load(Ordering::Acquire)
    }

    /// Everything noted so far, for the driver to remove. The driver
    /// takes it under its own lock for the disk and holds that lock until
    /// the removals are durable, so that a caller that finds the queue
    /// empty after taking that lock knows every removal noted before it is
    /// done.
    pub fn take(&self) -> Pending {
        let mut p = self.pending();
        self.has_pending.store(false, Ordering::Release);
        std::mem::take(&mut *p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noted_removals_are_taken_once_and_put_back_on_failure() {
        let q = RecordQueue::new(true);
        assert!(!q.has_pending());
        q.dead([7, 8]);
        assert!(q.has_pending());
        let w = q.take();
        assert_eq!(w.dead, vec![7, 8]);
        assert!(!q.has_pending() && q.take().is_empty());
        q.note(w);
        q.note(Pending {
            dead: vec![],
            forget_previous: true,
        });
        let w = q.take();
        assert_eq!(w.dead, vec![7, 8]);
        assert!(w.forget_previous);
        let none = RecordQueue::new(false);
        none.dead([1]);
        assert!(!none.has_pending() && none.take().is_empty());
    }
}
