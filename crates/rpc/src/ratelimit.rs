//! Rate limits for log lines a peer can provoke: at most one line per
//! interval, with a count of the ones left out.
//!
//! ```
//! static GARBAGE: rpc::ratelimit::RateLimit = rpc::ratelimit::RateLimit::per_secs(5);
//! if let Some(suppressed) = GARBAGE.allow() {
//!     eprintln!("garbage record ({suppressed} more since the last report)");
//! }
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Allows one event per interval and counts the others.
#[derive(Debug)]
pub struct RateLimit {
    every_ms: u64,
    /// Milliseconds since [`epoch`] at which the next event is allowed.
    next_ms: AtomicU64,
    suppressed: AtomicU64,
}

fn now_ms() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64
}

impl RateLimit {
    /// At most one event per `every`.
    pub const fn new(every: Duration) -> Self {
        RateLimit {
            every_ms: every.as_millis() as u64,
            next_ms: AtomicU64::new(0),
            suppressed: AtomicU64::new(0),
        }
    }

    /// At most one event every `secs` seconds.
    pub const fn per_secs(secs: u64) -> Self {
        Self::new(Duration::from_secs(secs))
    }

    /// `Some(n)` if this event may be reported, `n` being how many were
    /// refused since the last one reported; `None` if it is to be left out.
    pub fn allow(&self) -> Option<u64> {
        self.allow_at(now_ms())
    }

    /// [`RateLimit::allow`] at `now` milliseconds since [`now_ms`]'s epoch.
    fn allow_at(&self, now: u64) -> Option<u64> {
        let next = self.next_ms.load(Ordering::Relaxed);
        if now >= next
            && self
                .next_ms
                .compare_exchange(
                    next,
                    now.saturating_add(self.every_ms),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            return Some(self.suppressed.swap(0, Ordering::Relaxed));
        }
        self.suppressed.fetch_add(1, Ordering::Relaxed);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a clock of the test's own: the verdict does not depend on how
    /// fast the calls come.
    #[test]
    fn one_per_interval_with_a_count() {
        let r = RateLimit::new(Duration::from_millis(200));
        assert_eq!(r.allow_at(1000), Some(0));
        for t in 1000..1010 {
            assert_eq!(r.allow_at(t), None);
        }
        assert_eq!(r.allow_at(1199), None);
        assert_eq!(r.allow_at(1200), Some(11));
        assert_eq!(r.allow_at(1250), None);
        assert_eq!(r.allow_at(5000), Some(1));
    }

    /// The real clock: the first event is always reported.
    #[test]
    fn the_first_event_is_reported() {
        let r = RateLimit::per_secs(3600);
        assert_eq!(r.allow(), Some(0));
        assert_eq!(r.allow(), None);
    }
}
