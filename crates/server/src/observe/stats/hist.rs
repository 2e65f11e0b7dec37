//! A latency histogram that records without locks: log-linear buckets,
//! eight per doubling from 1 µs (so a bucket's width is at most an eighth
//! of its lower bound), one below 1 µs, and the last open-ended.

use std::sync::atomic::{AtomicU64, Ordering};

/// Doublings covered above 1 µs: up to 2^41 ns, about 37 minutes.
pub const OCTAVES: usize = 31;
/// Buckets per doubling.
pub const SUB: usize = 8;
/// Every bucket: the one below 1 µs, then `SUB` per doubling.
pub const BUCKETS: usize = 1 + OCTAVES * SUB;
/// 1 µs is 2^10 ns (1.024 µs: the buckets' bounds are powers of two).
const FIRST_SHIFT: u32 = 10;

/// The bucket a duration of `ns` nanoseconds falls in.
pub fn bucket(ns: u64) -> usize {
    if ns < 1 << FIRST_SHIFT {
        return 0;
    }
    let top = 63 - ns.leading_zeros(); // floor(log2 ns) >= 10
    let octave = (top - FIRST_SHIFT) as usize;
    if octave >= OCTAVES {
        return BUCKETS - 1;
    }
    let sub = ((ns >> (top - 3)) & 7) as usize;
    1 + octave * SUB + sub
}

/// The bounds of bucket `i` in nanoseconds: `[low, high)`.
pub fn bounds(i: usize) -> (u64, u64) {
    if i == 0 {
        return (0, 1 << FIRST_SHIFT);
    }
    let (octave, sub) = ((i - 1) / SUB, ((i - 1) % SUB) as u64);
    let shift = octave as u32 + FIRST_SHIFT - 3;
    ((8 + sub) << shift, (9 + sub) << shift)
}

/// Counts per bucket.
pub struct Histogram {
    counts: Box<[AtomicU64]>,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl Histogram {
    pub fn record(&self, ns: u64) {
        self.counts[bucket(ns)].fetch_add(1, Ordering::Relaxed);
    }

    /// Everything counted.
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// The non-empty buckets: (index, count).
    pub fn sparse(&self) -> Vec<(u16, u64)> {
        self.counts
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let n = c.load(Ordering::Relaxed);
                (n > 0).then_some((i as u16, n))
            })
            .collect()
    }
}

/// The `q` quantile (0 to 1) of the durations counted in `sparse` (as
/// [`Histogram::sparse`] gives, ascending), in nanoseconds: linear within
/// its bucket. None when nothing was counted.
pub fn quantile(sparse: &[(u16, u64)], q: f64) -> Option<f64> {
    let total: u64 = sparse.iter().map(|&(_, n)| n).sum();
    if total == 0 {
        return None;
    }
    let rank = (q.clamp(0.0, 1.0) * total as f64).max(1.0);
    let mut seen = 0u64;
    for &(i, n) in sparse {
        if (seen + n) as f64 >= rank {
            let (lo, hi) = bounds(i as usize);
            let within = (rank - seen as f64) / n as f64;
            return Some(lo as f64 + within * (hi - lo) as f64);
        }
        seen += n;
    }
    sparse.last().map(|&(i, _)| bounds(i as usize).1 as f64)
}

/// `now` less `before`, bucket by bucket (both sparse and ascending; a
/// bucket only grows, so the difference is what was counted between).
pub fn since(now: &[(u16, u64)], before: &[(u16, u64)]) -> Vec<(u16, u64)> {
    now.iter()
        .filter_map(|&(i, n)| {
            let old = before.iter().find(|&&(j, _)| j == i).map_or(0, |&(_, m)| m);
            (n > old).then_some((i, n - old))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_duration_falls_inside_its_bucket() {
        for ns in [
            0,
            1,
            1023,
            1024,
            1025,
            1151,
            1152,
            2047,
            2048,
            999_999,
            1 << 40,
            u64::MAX / 2,
        ] {
            let i = bucket(ns);
            let (lo, hi) = bounds(i);
            assert!(
                (lo <= ns && ns < hi) || i == BUCKETS - 1,
                "{ns} in bucket {i} [{lo}, {hi})"
            );
        }
        // Buckets tile the line: each starts where the one before ends.
        for i in 1..BUCKETS {
            assert_eq!(bounds(i - 1).1, bounds(i).0, "{i}");
        }
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn quantiles_are_within_a_bucket_of_the_truth() {
        let h = Histogram::default();
        // 1 to 1000 µs, one each.
        for us in 1..=1000u64 {
            h.record(us * 1000);
        }
        let s = h.sparse();
        for (q, want) in [(0.5, 500_000.0), (0.99, 990_000.0), (0.01, 10_000.0)] {
            let got = quantile(&s, q).unwrap();
            assert!(
                (got - want).abs() <= want / 8.0,
                "q {q}: {got} against {want}"
            );
        }
        assert_eq!(quantile(&[], 0.5), None);
        let later = {
            h.record(5_000_000);
            h.sparse()
        };
        let d = since(&later, &s);
        assert_eq!(d.iter().map(|&(_, n)| n).sum::<u64>(), 1);
        assert!(quantile(&d, 0.5).unwrap() >= 4_000_000.0);
    }
}
