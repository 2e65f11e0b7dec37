//! The grace period after a restart (RFC 8881 §8.4.2.1, §8.4.3): only
//! the clients recorded by an earlier instance reclaim, for as long as
//! they make progress, and new state waits for them. The records
//! themselves are the driver's to keep on stable storage; the state
//! names those to remove ([`crate::records`]).

use std::collections::HashSet;
use std::time::Duration;

use bytes::Bytes;
use tracing::info;

/// The grace period after a restart (RFC 8881 §8.4.2.1).
///
/// It lasts its length, and beyond that for as long as the recorded
/// clients are still making progress: every reclaim, RECLAIM_COMPLETE or
/// EXCHANGE_ID of a recorded client keeps it open for at least
/// [`progress_window`] more, up to [`grace_cap`] (three leases by
/// default, and a little more per recorded client), so that a restart
/// with many clients on a busy machine does not cost the slow ones their
/// state. It ends early
/// once every recorded client has sent RECLAIM_COMPLETE. (The Linux
/// server also extends its grace period while clients reclaim:
/// fs/nfsd/nfs4state.c, `clients_still_reclaiming`.)
#[derive(Debug)]
pub struct Grace {
    /// Owners recorded by earlier instances: the clients that may reclaim.
    previous: HashSet<Bytes>,
    /// Those of them that sent RECLAIM_COMPLETE in this instance.
    done: HashSet<Bytes>,
    /// When it ends (state clock) without progress after it.
    ends: Duration,
    /// The latest it may end, however clients progress.
    limit: Duration,
    /// How long it stays open after a recorded client's progress.
    window: Duration,
    /// The last progress of a recorded client.
    progress: Option<Duration>,
    over: bool,
}

/// The longest a grace period of `length` may last however recorded
/// clients progress: its length plus two leases (three leases by
/// default), and a quarter of a second more per recorded client, since
/// every client's recovery takes round trips and a durable record. Seen
/// here: pynfs's 1,000-client reboot tests (REBT2c, 3c, 4c) recover about
/// eleven clients a second on two cores beside two CPU hogs, 90 s for all
/// of them, twice three 15 s leases; the cap then is 295 s. A recorded
/// client that keeps the period open by coming back again and again holds
/// new clients off for no longer than this.
pub fn grace_cap(length: Duration, lease: Duration, recorded: usize) -> Duration {
    let per_client =
        Duration::from_millis(250).saturating_mul(recorded.min(u32::MAX as usize) as u32);
    length
        .saturating_add(lease.saturating_mul(2))
        .saturating_add(per_client)
}

/// How long the grace period stays open after a recorded client's last
/// reclaim, RECLAIM_COMPLETE or EXCHANGE_ID: a third of the lease, at
/// least 2 s and at most 30 s. A client reclaiming many files sends one
/// request after another; a gap this long means it has stopped (or
/// crashed again), and the others should not wait for it.
pub fn progress_window(lease: Duration) -> Duration {
    (lease / 3).clamp(Duration::from_secs(2), Duration::from_secs(30))
}

impl Grace {
    /// No grace period: nothing to reclaim.
    pub fn none() -> Grace {
        Grace {
            previous: HashSet::new(),
            done: HashSet::new(),
            ends: Duration::ZERO,
            limit: Duration::ZERO,
            window: Duration::ZERO,
            progress: None,
            over: true,
        }
    }

    /// A grace period from `now` for `length` (longer while clients make
    /// progress, up to [`grace_cap`]), for the clients of `previous`;
    /// none if there are none or `length` is zero.
    pub fn start(
        previous: HashSet<Bytes>,
        now: Duration,
        length: Duration,
        lease: Duration,
    ) -> Grace {
        if previous.is_empty() || length.is_zero() {
            return Grace::none();
        }
        let limit = grace_cap(length, lease, previous.len());
        info!(
            clients = previous.len(),
            seconds = length.as_secs(),
            at_most = limit.as_secs(),
            "grace period: only reclaims until the recorded clients are done"
        );
        Grace {
            previous,
            done: HashSet::new(),
            ends: now + length,
            limit: now + limit,
            window: progress_window(lease),
            progress: None,
            over: false,
        }
    }

    /// Whether the server is in its grace period.
    pub fn active(&self) -> bool {
        !self.over
    }

    /// Whether a client with this owner may reclaim: it has a record.
    pub fn recorded(&self, owner: &Bytes) -> bool {
        self.previous.contains(owner)
    }

    /// Whether a client with this owner has sent RECLAIM_COMPLETE in this
    /// grace period (an earlier incarnation of it, perhaps).
    pub fn completed(&self, owner: &Bytes) -> bool {
        self.done.contains(owner)
    }

    /// The client with `owner` sent RECLAIM_COMPLETE, its record durable.
    pub fn reclaimed(&mut self, owner: &Bytes, now: Duration) {
        if !self.over && self.previous.contains(owner) {
            self.done.insert(owner.clone());
            self.note_progress(now);
        }
    }

    /// A recorded client made progress (a reclaim was granted, or it
    /// came back with EXCHANGE_ID): the period lasts at least the window
    /// more.
    pub fn note_progress(&mut self, now: Duration) {
        if !self.over {
            self.progress = Some(self.progress.map_or(now, |p| p.max(now)));
        }
    }

    /// The client with `owner` sent EXCHANGE_ID: progress if recorded
    /// (one that has already sent RECLAIM_COMPLETE too: a client coming
    /// back is recovering, whatever it did before).
    pub fn returned(&mut self, owner: &Bytes, now: Duration) {
        if !self.over && self.previous.contains(owner) {
            self.note_progress(now);
        }
    }

    /// When it ends if no recorded client makes progress from now on.
    pub fn end_time(&self) -> Duration {
        let after_progress = self.progress.map_or(Duration::ZERO, |p| p + self.window);
        self.ends.max(after_progress).min(self.limit)
    }

    /// Whether the grace period may end: every recorded client has
    /// reclaimed, or its time ([`Grace::end_time`]) is up.
    pub fn due(&self, now: Duration) -> bool {
        if self.over {
            return false;
        }
        self.done.len() == self.previous.len() || now >= self.end_time()
    }

    /// Ends it (after the earlier instances' records are gone).
    pub fn end(&mut self) {
        if !self.over {
            info!(
                reclaimed = self.done.len(),
                recorded = self.previous.len(),
                "grace period over"
            );
        }
        self.over = true;
        self.previous.clear();
        self.done.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grace_ends_when_every_recorded_client_reclaimed_or_time_is_up() {
        let a = Bytes::from("a");
        let b = Bytes::from("b");
        let s = Duration::from_secs;
        let prev: HashSet<Bytes> = [a.clone(), b.clone()].into_iter().collect();
        let mut g = Grace::start(prev.clone(), s(10), s(90), s(90));
        assert!(g.active() && g.recorded(&a) && !g.recorded(&Bytes::from("c")));
        assert!(!g.due(s(20)));
        g.reclaimed(&a, s(20));
        g.reclaimed(&Bytes::from("c"), s(20));
        assert!(!g.due(s(20)));
        g.reclaimed(&b, s(21));
        assert!(g.due(s(21)), "every recorded client is done");
        g.end();
        assert!(!g.active() && !g.recorded(&a));
        let g = Grace::start(prev.clone(), s(10), s(90), s(90));
        assert!(!g.due(s(99)));
        assert!(g.due(s(100)), "no progress: its length");
        assert!(!Grace::start(HashSet::new(), Duration::ZERO, s(90), s(90)).active());
        assert!(!Grace::start(prev.clone(), Duration::ZERO, Duration::ZERO, s(90)).active());
    }

    /// Progress by recorded clients keeps the period open a window past
    /// each step, up to its length plus two leases; others do not.
    #[test]
    fn grace_lasts_while_recorded_clients_progress_up_to_three_leases() {
        let s = Duration::from_secs;
        let owners: Vec<Bytes> = (0..1000).map(|i| Bytes::from(format!("c{i}"))).collect();
        let lease = s(15);
        let window = progress_window(lease);
        assert_eq!(window, s(5));
        assert_eq!(progress_window(s(90)), s(30));
        assert_eq!(progress_window(s(3)), s(2));
        let mut g = Grace::start(owners.iter().cloned().collect(), s(0), lease, lease);
        // An unrecorded client's EXCHANGE_ID is no progress.
        g.returned(&Bytes::from("stranger"), s(14));
        assert_eq!(g.end_time(), s(15));
        // One recorded client after another, each taking 40 ms: the
        // period outlasts its length while they keep coming.
        let mut t = Duration::ZERO;
        for (i, o) in owners.iter().enumerate().take(999) {
            t = Duration::from_millis(40 * i as u64);
            g.returned(o, t);
            g.note_progress(t + Duration::from_millis(10));
            g.reclaimed(o, t + Duration::from_millis(20));
            assert!(!g.due(t + Duration::from_millis(30)), "client {i}");
        }
        assert!(t > s(39), "{t:?}: past two leases");
        // Then silence: it ends a window after the last step.
        let last = t + Duration::from_millis(20);
        assert!(!g.due(last + window - Duration::from_millis(1)));
        assert!(g.due(last + window));
        // The cap: three leases and a quarter second per recorded client
        // (four here), however clients go on.
        let four: HashSet<Bytes> = owners.iter().take(4).cloned().collect();
        let mut g = Grace::start(four.clone(), s(0), lease, lease);
        for t in 0..46 {
            g.note_progress(s(t));
            assert!(!g.due(s(t)), "{t}");
        }
        g.note_progress(s(46));
        assert_eq!(g.end_time(), s(46));
        assert!(g.due(s(46)), "capped");
        assert_eq!(grace_cap(lease, lease, 1000), s(295));
        // A longer grace period than the lease: its length plus two leases.
        let g = Grace::start(four, s(0), s(60), lease);
        assert_eq!(g.limit, s(91));
    }
}
