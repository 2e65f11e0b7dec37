//! What a run measures while it runs: per-call accounting of everything
//! sent to the server ([`OpStats`], like `/proc/self/mountstats`) and
//! workload-level latencies and throughput ([`Recorder`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use hdrhistogram::Histogram;
use rpc::OpaqueAuth;
use serde::{Deserialize, Serialize};

/// Which part of a run an operation belongs to. Only [`Phase::Measure`]
/// feeds throughput and latency; every phase is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Connecting, looking up the file set, opening files held for the run.
    Setup = 0,
    /// The warm-up period (time-based workloads only).
    Warmup = 1,
    /// The measured period.
    Measure = 2,
    /// Closing, cleaning up, destroying sessions.
    Teardown = 3,
}

impl Phase {
    pub const ALL: [Phase; 4] = [Phase::Setup, Phase::Warmup, Phase::Measure, Phase::Teardown];

    pub fn name(self) -> &'static str {
        match self {
            Phase::Setup => "setup",
            Phase::Warmup => "warmup",
            Phase::Measure => "measure",
            Phase::Teardown => "teardown",
        }
    }

    fn from_u8(v: u8) -> Phase {
        match v {
            0 => Phase::Setup,
            1 => Phase::Warmup,
            2 => Phase::Measure,
            _ => Phase::Teardown,
        }
    }
}

/// Totals for one kind of call (an NFSv4 COMPOUND named by its main
/// operation, an NFSv3 procedure, or a system call for `dir:` targets).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallStats {
    /// Calls transmitted (a retried call counts each time).
    pub count: u64,
    /// Calls that failed (any status other than OK, or a transport error).
    pub errors: u64,
    /// Bytes on the wire to the server, RPC record marker and header
    /// included (0 for system calls).
    pub bytes_sent: u64,
    /// Bytes on the wire from the server, record marker and RPC reply
    /// header included.
    pub bytes_recv: u64,
    /// Sum of round-trip times: handing the request to the connection until
    /// the reply is decoded (system calls: the call's duration).
    pub rtt_total_ns: u64,
    /// Sum of queueing times: creating the request until it is sent (the
    /// wait for a session slot).
    pub queue_total_ns: u64,
    pub mean_rtt_us: f64,
    pub mean_queue_us: f64,
}

/// One phase's counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseTable {
    /// Every operation sent, by name (NFSv4: every operation inside every
    /// COMPOUND, SEQUENCE included).
    pub ops: BTreeMap<String, u64>,
    /// Per call kind: count, bytes, mean RTT and queueing time.
    pub calls: BTreeMap<String, CallStats>,
}

impl PhaseTable {
    /// Adds `other` into this table.
    pub fn merge(&mut self, other: &PhaseTable) {
        for (k, v) in &other.ops {
            *self.ops.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &other.calls {
            let c = self.calls.entry(k.clone()).or_default();
            c.count += v.count;
            c.errors += v.errors;
            c.bytes_sent += v.bytes_sent;
            c.bytes_recv += v.bytes_recv;
            c.rtt_total_ns += v.rtt_total_ns;
            c.queue_total_ns += v.queue_total_ns;
        }
        self.finish();
    }

    fn finish(&mut self) {
        for c in self.calls.values_mut() {
            if c.count > 0 {
                c.mean_rtt_us = c.rtt_total_ns as f64 / c.count as f64 / 1e3;
                c.mean_queue_us = c.queue_total_ns as f64 / c.count as f64 / 1e3;
            }
        }
    }

    /// Count of one operation.
    pub fn op(&self, name: &str) -> u64 {
        self.ops.get(name).copied().unwrap_or(0)
    }
}

#[derive(Default)]
struct RawTable {
    ops: BTreeMap<&'static str, u64>,
    calls: BTreeMap<&'static str, CallStats>,
}

/// Per-phase accounting of every call a run makes. Shared by all clients
/// of a run.
pub struct OpStats {
    phase: AtomicU8,
    tables: Mutex<[RawTable; 4]>,
}

impl Default for OpStats {
    fn default() -> Self {
        OpStats {
            phase: AtomicU8::new(Phase::Setup as u8),
            tables: Mutex::new(Default::default()),
        }
    }
}

/// One call to record.
#[derive(Debug, Clone, Copy)]
pub struct CallRecord<'a> {
    pub phase: Phase,
    pub kind: &'static str,
    pub ops: &'a [&'static str],
    pub bytes_sent: u64,
    pub bytes_recv: u64,
    pub queue: Duration,
    pub rtt: Duration,
    pub ok: bool,
}

impl OpStats {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn lock(&self) -> MutexGuard<'_, [RawTable; 4]> {
        self.tables.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The phase new calls are counted in.
    pub fn phase(&self) -> Phase {
        Phase::from_u8(self.phase.load(Ordering::Acquire))
    }

    pub fn set_phase(&self, p: Phase) {
        self.phase.store(p as u8, Ordering::Release);
    }

    pub fn record(&self, r: CallRecord<'_>) {
        let mut t = self.lock();
        let t = &mut t[r.phase as usize];
        for op in r.ops {
            *t.ops.entry(op).or_default() += 1;
        }
        let c = t.calls.entry(r.kind).or_default();
        c.count += 1;
        c.errors += u64::from(!r.ok);
        c.bytes_sent += r.bytes_sent;
        c.bytes_recv += r.bytes_recv;
        c.rtt_total_ns += r.rtt.as_nanos() as u64;
        c.queue_total_ns += r.queue.as_nanos() as u64;
    }

    /// Counts operations that were sent outside [`OpStats::record`] (for
    /// example inside the client's session setup) without timing.
    pub fn count_ops(&self, phase: Phase, kind: &'static str, ops: &[&'static str]) {
        self.record(CallRecord {
            phase,
            kind,
            ops,
            bytes_sent: 0,
            bytes_recv: 0,
            queue: Duration::ZERO,
            rtt: Duration::ZERO,
            ok: true,
        });
    }

    /// The tables so far, by phase name.
    pub fn snapshot(&self) -> BTreeMap<String, PhaseTable> {
        let t = self.lock();
        let mut out = BTreeMap::new();
        for p in Phase::ALL {
            let raw = &t[p as usize];
            let mut pt = PhaseTable {
                ops: raw.ops.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                calls: raw
                    .calls
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.clone()))
                    .collect(),
            };
            pt.finish();
            out.insert(p.name().to_string(), pt);
        }
        out
    }
}

/// Latency distribution of one kind of workload step, in microseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_us: f64,
    pub min_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    /// Points (latency µs, fraction ≤) of the empirical CDF.
    pub cdf: Vec<(f64, f64)>,
}

fn new_hist() -> Histogram<u64> {
    // 1 ns .. 1 hour, 3 significant digits.
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).unwrap_or_else(|_| {
        Histogram::new(3).unwrap_or_else(|_| unreachable!("3 significant digits are valid"))
    })
}

fn summarize(h: &Histogram<u64>) -> LatencySummary {
    let us = |ns: u64| ns as f64 / 1e3;
    let mut cdf = Vec::new();
    if !h.is_empty() {
        let mut qs: Vec<f64> = (0..=100).map(|i| i as f64 / 100.0).collect();
        qs.extend([0.995, 0.999, 0.9995, 0.9999]);
        qs.sort_by(|a, b| a.total_cmp(b));
        for q in qs {
            cdf.push((us(h.value_at_quantile(q)), q));
        }
    }
    LatencySummary {
        count: h.len(),
        mean_us: h.mean() / 1e3,
        min_us: us(h.min()),
        p50_us: us(h.value_at_quantile(0.5)),
        p90_us: us(h.value_at_quantile(0.9)),
        p99_us: us(h.value_at_quantile(0.99)),
        p999_us: us(h.value_at_quantile(0.999)),
        max_us: us(h.max()),
        cdf,
    }
}

/// Bytes on the wire before a call's arguments: record marker (4), xid,
/// message type, RPC version, program, version, procedure (24), the
/// credential (flavor, length, body padded to 4) and an AUTH_NONE
/// verifier (8).
pub fn call_overhead(cred: &OpaqueAuth) -> u64 {
    (4 + 24 + 8 + cred.body.len().div_ceil(4) * 4 + 8) as u64
}

/// Bytes on the wire before a reply's results: record marker (4), xid,
/// message type, reply status (12), an AUTH_NONE verifier (8) and the
/// accept status (4).
pub const REPLY_OVERHEAD: u64 = 4 + 4 + 4 + 4 + 8 + 4;

tokio::task_local! {
    /// The phase of the unit of work the current task is running: calls
    /// made inside it are counted there, whatever the run's phase is by the
    /// time they are sent.
    pub static UNIT_PHASE: Phase;
}

/// The phase a call made now belongs to: the current unit's, else the
/// run's.
pub fn current_phase(stats: &OpStats) -> Phase {
    UNIT_PHASE
        .try_with(|p| *p)
        .unwrap_or_else(|_| stats.phase())
}

/// Workload-level measurements: units of work done (the throughput) and
/// latency per workload step. Only units that started in the measure phase
/// count.
pub struct Recorder {
    units: AtomicU64,
    bytes: AtomicU64,
    errors: AtomicU64,
    hists: Mutex<BTreeMap<&'static str, Histogram<u64>>>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            units: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            hists: Mutex::new(BTreeMap::new()),
        }
    }
}

impl Recorder {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Records the latency of one step named `name` of a unit started in
    /// `phase`.
    pub fn latency(&self, phase: Phase, name: &'static str, d: Duration) {
        if phase != Phase::Measure {
            return;
        }
        let ns = (d.as_nanos() as u64).max(1);
        let mut h = self.hists.lock().unwrap_or_else(|p| p.into_inner());
        let _ = h.entry(name).or_insert_with(new_hist).record(ns);
    }

    /// One unit of work finished (what ops/s counts), moving `bytes` of
    /// file data; its latency is recorded under `name`.
    pub fn unit(&self, phase: Phase, name: &'static str, d: Duration, bytes: u64) {
        if phase != Phase::Measure {
            return;
        }
        self.units.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.latency(phase, name, d);
    }

    pub fn error(&self, phase: Phase) {
        if phase == Phase::Measure {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// (units, bytes, errors) so far.
    pub fn totals(&self) -> (u64, u64, u64) {
        (
            self.units.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
            self.errors.load(Ordering::Relaxed),
        )
    }

    pub fn latencies(&self) -> BTreeMap<String, LatencySummary> {
        let h = self.hists.lock().unwrap_or_else(|p| p.into_inner());
        h.iter()
            .map(|(k, v)| (k.to_string(), summarize(v)))
            .collect()
    }
}

/// CPU time used by this process so far (user, system), from
/// `getrusage(RUSAGE_SELF)`.
pub fn cpu_times() -> (Duration, Duration) {
    // SAFETY: getrusage only writes the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return (Duration::ZERO, Duration::ZERO);
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// CPU time used so far by process `pid`, all its threads (user,
/// system), from `/proc/PID/stat`: clock-tick resolution.
pub fn process_cpu_times(pid: u32) -> Option<(Duration, Duration)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces:
    // count fields after its closing parenthesis (field 3 is the state).
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // SAFETY: sysconf has no preconditions.
    let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let tck = if tck > 0 { tck as f64 } else { 100.0 };
    let ticks = |i: usize| -> Option<Duration> {
        let t: u64 = f.get(i)?.parse().ok()?;
        Some(Duration::from_secs_f64(t as f64 / tck))
    };
    // utime and stime are fields 14 and 15: 11 and 12 after field 3.
    Some((ticks(11)?, ticks(12)?))
}

/// The user and system CPU time of the processes in cgroup `dir`: cgroup
/// v1's cpuacct.usage (nanoseconds of run time, from the scheduler),
/// split between user and system as cpuacct.usage_user and usage_sys
/// split it (those two count clock ticks); or v2's cpu.stat user_usec
/// and system_usec.
pub fn cgroup_cpu_times(dir: &std::path::Path) -> Option<(Duration, Duration)> {
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
    let num = |v: &str| v.trim().parse::<u64>().ok();
    if let Some(total) = read("cpuacct.usage") {
        let total = num(&total)?;
        let u = read("cpuacct.usage_user")
            .and_then(|v| num(&v))
            .unwrap_or(0);
        let s = read("cpuacct.usage_sys").and_then(|v| num(&v)).unwrap_or(0);
        let sys = if u + s > 0 {
            (u128::from(total) * u128::from(s) / u128::from(u + s)) as u64
        } else {
            0
        };
        return Some((Duration::from_nanos(total - sys), Duration::from_nanos(sys)));
    }
    let stat = read("cpu.stat")?;
    let usec = |key: &str| {
        stat.lines()
            .find_map(|l| l.strip_prefix(key)?.trim().parse::<u64>().ok())
            .map(Duration::from_micros)
    };
    Some((usec("user_usec ")?, usec("system_usec ")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorder_counts_only_while_measuring() {
        let r = Recorder::new();
        r.unit(Phase::Warmup, "x", Duration::from_micros(5), 10);
        assert_eq!(r.totals(), (0, 0, 0));
        for i in 1..=100 {
            r.unit(Phase::Measure, "x", Duration::from_micros(i), 10);
        }
        assert_eq!(r.totals(), (100, 1000, 0));
        let l = &r.latencies()["x"];
        assert_eq!(l.count, 100);
        assert!((l.p50_us - 50.0).abs() < 0.1, "{}", l.p50_us);
        assert!((l.p99_us - 99.0).abs() < 0.1);
        assert!((l.max_us - 100.0).abs() < 0.1);
    }

    #[test]
    fn opstats_by_phase() {
        let s = OpStats::new();
        s.record(CallRecord {
            phase: Phase::Measure,
            kind: "READ",
            ops: &["SEQUENCE", "PUTFH", "READ"],
            bytes_sent: 100,
            bytes_recv: 4200,
            queue: Duration::from_micros(2),
            rtt: Duration::from_micros(100),
            ok: true,
        });
        s.count_ops(Phase::Setup, "session", &["EXCHANGE_ID"]);
        let t = s.snapshot();
        assert_eq!(t["measure"].op("READ"), 1);
        assert_eq!(t["measure"].op("SEQUENCE"), 1);
        assert_eq!(t["setup"].op("EXCHANGE_ID"), 1);
        let c = &t["measure"].calls["READ"];
        assert_eq!((c.count, c.bytes_recv), (1, 4200));
        assert!((c.mean_rtt_us - 100.0).abs() < 1e-9);
        assert!((c.mean_queue_us - 2.0).abs() < 1e-9);
    }

    #[test]
    fn cpu_times_advance() {
        let (u0, s0) = cpu_times();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let (u1, s1) = cpu_times();
        assert!(u1 + s1 >= u0 + s0);
    }

    #[test]
    fn a_process_cpu_time_is_read_from_proc() {
        let me = std::process::id();
        let (u0, s0) = process_cpu_times(me).expect("our own /proc/PID/stat");
        // Spin for 300 ms of CPU time, as getrusage (which counts the
        // same time, to the microsecond) sees it, not of wall time: on a
        // busy machine this thread gets less than a core. The deadline
        // only stops a spin that got almost no CPU for minutes.
        let (g0, h0) = cpu_times();
        let deadline = std::time::Instant::now() + Duration::from_secs(300);
        let mut x = 0u64;
        loop {
            for i in 0..100_000u64 {
                x = x.wrapping_mul(31).wrapping_add(i);
            }
            let (g, h) = cpu_times();
            if g + h >= g0 + h0 + Duration::from_millis(300) {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no CPU time for 5 min"
            );
        }
        std::hint::black_box(x);
        let (u1, s1) = process_cpu_times(me).unwrap();
        // 300 ms of CPU shows, at clock-tick resolution (10 ms at 100 Hz,
        // the coarsest in use): at least 100 ms of it, whatever the speed.
        assert!(
            u1 + s1 >= u0 + s0 + Duration::from_millis(100),
            "{u0:?}+{s0:?} → {u1:?}+{s1:?}"
        );
        assert_eq!(process_cpu_times(u32::MAX), None);
        let d = std::env::temp_dir().join(format!("ferrite-cg-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        assert_eq!(cgroup_cpu_times(&d), None);
        std::fs::write(
            d.join("cpu.stat"),
            "usage_usec 30\nuser_usec 10\nsystem_usec 20\n",
        )
        .unwrap();
        assert_eq!(
            cgroup_cpu_times(&d),
            Some((Duration::from_micros(10), Duration::from_micros(20)))
        );
        std::fs::write(d.join("cpuacct.usage"), "1000\n").unwrap();
        std::fs::write(d.join("cpuacct.usage_user"), "4000000\n").unwrap();
        std::fs::write(d.join("cpuacct.usage_sys"), "0\n").unwrap();
        assert_eq!(
            cgroup_cpu_times(&d),
            Some((Duration::from_nanos(1000), Duration::ZERO))
        );
        std::fs::write(d.join("cpuacct.usage_sys"), "12000000\n").unwrap();
        assert_eq!(
            cgroup_cpu_times(&d),
            Some((Duration::from_nanos(250), Duration::from_nanos(750)))
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}
