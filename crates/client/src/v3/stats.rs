//! Per-procedure call statistics of an NFSv3 client (for benchmarks), in
//! the shape of [`SlotStats`](crate::SlotStats): plain counters and
//! durations, copied out as a snapshot.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use proto::nfs3::{NFSPROC3_COUNT, NFSPROC3_NAMES};

/// Counters of one procedure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcStats {
    /// Calls sent (including those that failed).
    pub calls: u64,
    /// Calls that failed: no reply, an RPC-level rejection, an
    /// undecodable reply or a status other than NFS3_OK.
    pub errors: u64,
    /// XDR bytes of the procedure arguments sent (RPC header and record
    /// mark not counted).
    pub bytes_sent: u64,
    /// XDR bytes of the procedure results received (RPC header and record
    /// mark not counted).
    pub bytes_received: u64,
    /// Sum of round-trip times, from handing the call to the connection
    /// until its reply arrived.
    pub rtt_total: Duration,
    /// Longest single round trip.
    pub rtt_max: Duration,
}

impl ProcStats {
    /// Mean round-trip time, if any call was made.
    pub fn rtt_mean(&self) -> Option<Duration> {
        (self.calls > 0).then(|| self.rtt_total / self.calls.min(u32::MAX as u64) as u32)
    }

    fn add(&mut self, o: &ProcStats) {
        self.calls += o.calls;
        self.errors += o.errors;
        self.bytes_sent += o.bytes_sent;
        self.bytes_received += o.bytes_received;
        self.rtt_total += o.rtt_total;
        self.rtt_max = self.rtt_max.max(o.rtt_max);
    }
}

/// A snapshot of all procedures' counters, indexed by procedure number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats3 {
    pub procs: [ProcStats; NFSPROC3_COUNT],
}

impl Stats3 {
    /// The counters of procedure `proc_` (zero for an unknown number).
    pub fn get(&self, proc_: u32) -> ProcStats {
        self.procs.get(proc_ as usize).copied().unwrap_or_default()
    }

    /// All procedures together.
    pub fn total(&self) -> ProcStats {
        let mut t = ProcStats::default();
        for p in &self.procs {
            t.add(p);
        }
        t
    }

    /// The procedures that were called, with their RFC names.
    pub fn called(&self) -> impl Iterator<Item = (u32, &'static str, &ProcStats)> + '_ {
        self.procs
            .iter()
            .enumerate()
            .filter(|(_, p)| p.calls > 0)
            .map(|(i, p)| (i as u32, NFSPROC3_NAMES[i], p))
    }

    /// What happened between `earlier` and this snapshot. `rtt_max` is
    /// this snapshot's (a maximum cannot be subtracted).
    pub fn since(&self, earlier: &Stats3) -> Stats3 {
        let mut d = *self;
        for (p, e) in d.procs.iter_mut().zip(earlier.procs.iter()) {
            p.calls = p.calls.saturating_sub(e.calls);
            p.errors = p.errors.saturating_sub(e.errors);
            p.bytes_sent = p.bytes_sent.saturating_sub(e.bytes_sent);
            p.bytes_received = p.bytes_received.saturating_sub(e.bytes_received);
            p.rtt_total = p.rtt_total.saturating_sub(e.rtt_total);
        }
        d
    }
}

#[derive(Debug, Default)]
struct ProcCounters {
    calls: AtomicU64,
    errors: AtomicU64,
    sent: AtomicU64,
    received: AtomicU64,
    rtt_nanos: AtomicU64,
    rtt_max_nanos: AtomicU64,
}

/// The live counters, updated lock-free by concurrent calls.
#[derive(Debug, Default)]
pub(crate) struct StatsTable {
    procs: [ProcCounters; NFSPROC3_COUNT],
}

impl StatsTable {
    /// Records one call of `proc_`.
    pub(crate) fn record(&self, proc_: u32, sent: usize, received: usize, rtt: Duration) {
        let Some(c) = self.procs.get(proc_ as usize) else {
            return;
        };
        let nanos = u64::try_from(rtt.as_nanos()).unwrap_or(u64::MAX);
        c.calls.fetch_add(1, Ordering::Relaxed);
        c.sent.fetch_add(sent as u64, Ordering::Relaxed);
        c.received.fetch_add(received as u64, Ordering::Relaxed);
        c.rtt_nanos.fetch_add(nanos, Ordering::Relaxed);
        c.rtt_max_nanos.fetch_max(nanos, Ordering::Relaxed);
    }

    /// Counts a failure of a call already recorded.
    pub(crate) fn error(&self, proc_: u32) {
        if let Some(c) = self.procs.get(proc_ as usize) {
            c.errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn snapshot(&self) -> Stats3 {
        let mut s = Stats3::default();
        for (out, c) in s.procs.iter_mut().zip(self.procs.iter()) {
            *out = ProcStats {
                calls: c.calls.load(Ordering::Relaxed),
                errors: c.errors.load(Ordering::Relaxed),
                bytes_sent: c.sent.load(Ordering::Relaxed),
                bytes_received: c.received.load(Ordering::Relaxed),
                rtt_total: Duration::from_nanos(c.rtt_nanos.load(Ordering::Relaxed)),
                rtt_max: Duration::from_nanos(c.rtt_max_nanos.load(Ordering::Relaxed)),
            };
        }
        s
    }

    pub(crate) fn reset(&self) {
        for c in &self.procs {
            for a in [
                &c.calls,
                &c.errors,
                &c.sent,
                &c.received,
                &c.rtt_nanos,
                &c.rtt_max_nanos,
            ] {
                a.store(0, Ordering::Relaxed);
            }
        }
    }
}
