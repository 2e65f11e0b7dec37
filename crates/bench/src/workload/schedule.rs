//! The open-loop schedule of nhfsstone's `--rate`: the periods the runner
//! announces and each worker's due times in them.

use std::time::{Duration, Instant};

use crate::record::Phase;

/// A period the offered load (nhfsstone's `--rate`) is scheduled in: the
/// runner announces one for the warm-up and one for the measured period.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Period {
    pub phase: Phase,
    pub start: Instant,
    /// No request falls due at or after this (the measured period's end;
    /// none: until the runner moves on).
    pub end: Option<Instant>,
}

/// One worker's requests of an open-loop schedule. Request `g` of the
/// whole schedule falls due `g / rate` seconds into the period; worker
/// `w` of `W` sends requests `w`, `w + W`, `w + 2W` ...; none falls due
/// at or after the period's end. The due times never move: a worker held
/// up by a slow reply sends the requests it missed late, one after the
/// other, but never more than fell due. So in a period of `d` seconds
/// the workers together start at most `⌈rate × d⌉` requests, however
/// late, and a new period (the measured one after the warm-up) starts
/// from its own first request, not with the last one's backlog.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Schedule {
    pub period: Period,
    rate: f64,
    workers: u64,
    /// This worker's next request of the whole schedule.
    next: u64,
}

impl Schedule {
    /// Worker `index` of `workers`' share of `rate` requests a second in
    /// `period`.
    pub fn new(period: Period, rate: f64, workers: u32, index: u32) -> Schedule {
        Schedule {
            period,
            rate,
            workers: u64::from(workers.max(1)),
            next: u64::from(index),
        }
    }

    /// When this worker's next request falls due; none once they fall
    /// at or after the period's end.
    pub fn next_due(&mut self) -> Option<Instant> {
        let at = self.next as f64 / self.rate;
        if let Some(end) = self.period.end {
            let span = end.saturating_duration_since(self.period.start);
            if at >= span.as_secs_f64() {
                return None;
            }
        }
        self.next += self.workers;
        Some(self.period.start + Duration::from_secs_f64(at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every due time of `workers` workers' schedules in `period`, in
    /// order, with each worker's own in order too.
    fn all_due(period: Period, rate: f64, workers: u32) -> Vec<Duration> {
        let mut all = Vec::new();
        for w in 0..workers {
            let mut s = Schedule::new(period, rate, workers, w);
            let mut last = None;
            // A bound on the loop, far above any case here.
            for _ in 0..1_000_000 {
                let Some(due) = s.next_due() else { break };
                assert!(last.is_none_or(|l| due > l), "worker {w}: out of order");
                last = Some(due);
                all.push(due - period.start);
            }
            // Spent is spent: asking again gives nothing more.
            assert_eq!(s.next_due(), None);
        }
        all.sort();
        all
    }

    /// The open-loop arithmetic, with no clock involved: in a period of
    /// d seconds at rate r, the workers together start at most ⌈r·d⌉
    /// requests (the offered load, never more) and, given all the time
    /// they need, that many; request g falls due g/r seconds in.
    #[test]
    fn a_period_offers_its_rate_and_no_more() {
        let start = Instant::now();
        for (rate, secs, workers) in [
            (200.0, 1.0, 4),
            (100.0, 0.6, 4),
            (300.0, 0.6, 4),
            (7.0, 1.0, 3),
            (3.0, 0.1, 4),
            (1000.0, 0.25, 1),
            (333.3, 2.0, 16),
        ] {
            let period = Period {
                phase: Phase::Measure,
                start,
                end: Some(start + Duration::from_secs_f64(secs)),
            };
            let due = all_due(period, rate, workers);
            let offered = rate * secs;
            assert!(
                due.len() as f64 <= offered.ceil() && due.len() as f64 >= offered.floor(),
                "{rate}/s for {secs} s over {workers}: {} requests",
                due.len()
            );
            for (g, d) in due.iter().enumerate() {
                let want = g as f64 / rate;
                assert!((d.as_secs_f64() - want).abs() < 1e-6, "request {g}: {d:?}");
                assert!(d.as_secs_f64() < secs);
            }
        }
        // The measured period's: 200/s for 1 s, 200 requests (the
        // failure this fixes started 219).
        let period = Period {
            phase: Phase::Measure,
            start,
            end: Some(start + Duration::from_secs(1)),
        };
        assert_eq!(all_due(period, 200.0, 4).len(), 200);
    }

    /// A worker late for its requests (a slow reply, a stall) gets the
    /// same due times whenever it asks: the missed ones, then the rest,
    /// no more. A new period (the measured one after the warm-up)
    /// starts from its own first request whatever the last one owed.
    #[test]
    fn lateness_moves_no_due_time_and_a_new_period_starts_afresh() {
        let start = Instant::now();
        let warmup = Period {
            phase: Phase::Warmup,
            start,
            end: None,
        };
        // 100/s over 4 workers: worker 1's requests are 1, 5, 9 ...
        let mut s = Schedule::new(warmup, 100.0, 4, 1);
        let due: Vec<Duration> = (0..3).map(|_| s.next_due().unwrap() - start).collect();
        let ms = |n: u64| Duration::from_millis(n);
        assert_eq!(due, [ms(10), ms(50), ms(90)]);
        // The warm-up has no end: its schedule goes on until the runner
        // moves on, owing 997 more requests by the time it does here.
        for _ in 0..997 {
            assert!(s.next_due().is_some());
        }
        let t0 = start + Duration::from_secs(10);
        let measure = Period {
            phase: Phase::Measure,
            start: t0,
            end: Some(t0 + Duration::from_millis(200)),
        };
        assert_ne!(s.period, measure);
        let mut m = Schedule::new(measure, 100.0, 4, 1);
        let due: Vec<Duration> = std::iter::from_fn(|| m.next_due())
            .map(|d| d - t0)
            .collect();
        assert_eq!(due, [ms(10), ms(50), ms(90), ms(130), ms(170)]);
    }
}
