//! The server load model (issue 14, point 3; the CITI report's Task 5):
//! how busy each resource the server depends on is, as a utilization
//! between 0 and 1 damped over 1, 5 and 15 seconds (as the kernel's load
//! average is, each sample weighted `1 - e^(-dt/T)`), and which of them,
//! if any, limits the server.
//!
//! Resources, sampled once a second while the server is serving and
//! every [`QUIET_EVERY`] seconds while nothing changes ([`sample`]):
//! * **CPU**: the process's user and system time over the interval, per
//!   core it may run on (its affinity).
//! * **Worker pool** ([`crate::handoff::iopool`]): the calls in it, running or
//!   queued for a thread, on average, against its most threads.
//! * **Disk**, per device under an export: the share of the interval
//!   with I/O in flight on the device (/proc/diskstats `io_ticks`), or, if
//!   higher, how many of the server's calls waited on I/O on average:
//!   the pool's threads' time in calls less their CPU time (their
//!   /proc/self/task CPU times), plus the time calls queued behind them
//!   in the same proportion. A server whose every request waits for a
//!   sync is disk-bound even when the device idles between flushes. The
//!   average queue depth (weighted time) is shown beside it.
//! * **Network**: bytes of requests and replies against a configured link
//!   capacity (none configured: shown, never limiting).
//! * **Memory**: the share of the interval some task stalled on memory
//!   (PSI, /proc/pressure/memory), where the kernel has it.
//!
//! The verdict: the resource with the highest 5-second utilization if it
//! is at least [`BUSY`]; otherwise, if operations are being served, not
//! the server (its clients, or the network between, set the pace); with
//! no operations, idle.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// A utilization from which a resource counts as the limit.
pub const BUSY: f64 = 0.75;
/// The damping windows, seconds.
pub const WINDOWS: [f64; 3] = [1.0, 5.0, 15.0];
/// Seconds between samples while no operation, byte or pool call has
/// come since the last: a quiet server is not woken each second to
/// measure that it is quiet (the damping follows each window's length).
pub const QUIET_EVERY: f64 = 10.0;
/// Below this many operations a second the server counts as idle.
const IDLE_OPS: f64 = 1.0;

/// A value damped over the three windows.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Damped(pub [f64; 3]);

impl Damped {
    /// Takes in `x`, observed over the last `dt` seconds.
    pub fn update(&mut self, x: f64, dt: f64) {
        for (avg, window) in self.0.iter_mut().zip(WINDOWS) {
            let weight = 1.0 - (-dt / window).exp();
            *avg += weight * (x - *avg);
        }
    }
}

/// One reading of everything the model looks at; counters are totals
/// since some start, so only differences between readings matter.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    /// Seconds on a monotonic clock.
    pub at: f64,
    /// The process's CPU seconds.
    pub cpu_s: f64,
    /// Cores the process may run on.
    pub cores: f64,
    pub pool: crate::handoff::iopool::Usage,
    /// CPU seconds of the pool's threads.
    pub pool_cpu_s: f64,
    /// The pool's most threads.
    pub pool_max: f64,
    /// Per device: (milliseconds with I/O in flight, weighted milliseconds).
    pub disks: BTreeMap<String, (u64, u64)>,
    /// Bytes received and sent.
    pub net_bytes: u64,
    /// Microseconds some task stalled on memory, if the kernel says.
    pub mem_stall_us: Option<u64>,
    /// Operations answered.
    pub ops: u64,
}

/// One resource's state, as reported.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ResourceLoad {
    /// "cpu", "pool", "disk vda", "network", "memory".
    pub name: String,
    /// Utilization over 1, 5 and 15 seconds; none for a resource without
    /// a capacity (the network, unless configured).
    pub utilization: Option<[f64; 3]>,
    /// What lies behind it, in words ("queue depth 3.1", "820 MB/s").
    pub detail: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct LoadReport {
    pub resources: Vec<ResourceLoad>,
    /// The resource that limits the server, if one does.
    pub limiting: Option<String>,
    /// The model's verdict in a sentence.
    pub verdict: String,
    /// Operations a second, over 1, 5 and 15 seconds.
    pub ops_per_s: [f64; 3],
}

/// The model: damped utilizations, fed one [`Sample`] at a time.
#[derive(Debug, Default)]
pub struct Model {
    /// Link capacity in bytes a second, if configured.
    pub link_bytes_per_s: Option<f64>,
    prev: Option<Sample>,
    cpu: Damped,
    pool: Damped,
    pool_in_io: Damped,
    pool_queued: Damped,
    waiting_on_io: Damped,
    disks: BTreeMap<String, (Damped, Damped)>,
    net: Damped,
    net_rate: Damped,
    mem: Option<Damped>,
    ops: Damped,
}

fn ratio(num: f64, den: f64) -> f64 {
    if den > 0.0 {
        (num / den).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

impl Model {
    pub fn new(link_bytes_per_s: Option<f64>) -> Self {
        Model {
            link_bytes_per_s,
            ..Default::default()
        }
    }

    /// The sample taken in last, if any.
    pub fn last_sample(&self) -> Option<&Sample> {
        self.prev.as_ref()
    }

    /// Takes in a sample (the first only sets the baseline).
    pub fn observe(&mut self, s: Sample) {
        let Some(p) = self.prev.replace(s.clone()) else {
            return;
        };
        let dt = s.at - p.at;
        if dt <= 0.0 {
            return;
        }
        self.cpu
            .update(ratio(s.cpu_s - p.cpu_s, dt * s.cores.max(1.0)), dt);
        // Seconds a second: calls running in the pool, queued for it, and
        // of those running, off the CPU (blocked, in I/O).
        let busy = s.pool.busy_ns.saturating_sub(p.pool.busy_ns) as f64 / 1e9 / dt;
        let queued = s.pool.wait_ns.saturating_sub(p.pool.wait_ns) as f64 / 1e9 / dt;
        let on_cpu = ((s.pool_cpu_s - p.pool_cpu_s) / dt).clamp(0.0, busy);
        let io_share = if busy > 0.0 {
            (busy - on_cpu) / busy
        } else {
            0.0
        };
        let waiting_on_io = (busy - on_cpu) + queued * io_share;
        self.pool.update(ratio(busy + queued, s.pool_max), dt);
        self.pool_in_io.update(busy - on_cpu, dt);
        self.pool_queued.update(queued, dt);
        self.waiting_on_io.update(waiting_on_io, dt);
        for (dev, &(ticks, weighted)) in &s.disks {
            let Some(&(t0, w0)) = p.disks.get(dev) else {
                continue;
            };
            let (util, queue) = self.disks.entry(dev.clone()).or_default();
            let ms = dt * 1e3;
            let in_flight = ratio(ticks.saturating_sub(t0) as f64, ms);
            util.update(in_flight.max(waiting_on_io.min(1.0)), dt);
            queue.update(weighted.saturating_sub(w0) as f64 / ms, dt);
        }
        let rate = s.net_bytes.saturating_sub(p.net_bytes) as f64 / dt;
        self.net_rate.update(rate, dt);
        if let Some(cap) = self.link_bytes_per_s {
            self.net.update(ratio(rate, cap), dt);
        }
        if let (Some(a), Some(b)) = (s.mem_stall_us, p.mem_stall_us) {
            let stall = ratio(a.saturating_sub(b) as f64, dt * 1e6);
            self.mem
                .get_or_insert_with(Damped::default)
                .update(stall, dt);
        }
        self.ops.update(s.ops.saturating_sub(p.ops) as f64 / dt, dt);
    }

    pub fn report(&self) -> LoadReport {
        let mut resources = vec![
            ResourceLoad {
                name: "cpu".into(),
                utilization: Some(self.cpu.0),
                detail: format!(
                    "{:.2} of {} core(s)",
                    self.cpu.0[1] * self.prev.as_ref().map_or(1.0, |p| p.cores),
                    self.prev.as_ref().map_or(1.0, |p| p.cores)
                ),
            },
            ResourceLoad {
                name: "pool".into(),
                utilization: Some(self.pool.0),
                detail: format!(
                    "{:.2} calls blocked in I/O and {:.2} queued for a thread on average, of {} threads at most",
                    self.pool_in_io.0[1],
                    self.pool_queued.0[1],
                    self.prev.as_ref().map_or(0.0, |p| p.pool_max)
                ),
            },
        ];
        for (dev, (util, queue)) in &self.disks {
            resources.push(ResourceLoad {
                name: format!("disk {dev}"),
                utilization: Some(util.0),
                detail: format!(
                    "queue depth {:.2}; {:.2} of the server's calls waiting on I/O",
                    queue.0[1], self.waiting_on_io.0[1]
                ),
            });
        }
        resources.push(ResourceLoad {
            name: "network".into(),
            utilization: self.link_bytes_per_s.map(|_| self.net.0),
            detail: match self.link_bytes_per_s {
                Some(cap) => format!("{:.1} of {:.1} MB/s", self.net_rate.0[1] / 1e6, cap / 1e6),
                None => format!(
                    "{:.1} MB/s (no link capacity configured: --link-mbps)",
                    self.net_rate.0[1] / 1e6
                ),
            },
        });
        if let Some(m) = &self.mem {
            resources.push(ResourceLoad {
                name: "memory".into(),
                utilization: Some(m.0),
                detail: "share of time some task stalled on memory (PSI)".into(),
            });
        }
        let top = resources
            .iter()
            .filter_map(|r| r.utilization.map(|u| (u[1], r.name.clone())))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        let ops = self.ops.0[1];
        let (limiting, verdict) = match top {
            Some((u, name)) if u >= BUSY => (
                Some(name.clone()),
                format!("the server is limited by its {name} ({:.0}% busy)", u * 100.0),
            ),
            _ if ops < IDLE_OPS => (None, "idle".to_string()),
            Some((u, name)) => (
                None,
                format!(
                    "not the server: its busiest resource, {name}, is {:.0}% busy; the clients or the network between set the pace ({ops:.0} operations/s)",
                    u * 100.0
                ),
            ),
            None => (None, "no resource measured".to_string()),
        };
        LoadReport {
            resources,
            limiting,
            verdict,
            ops_per_s: self.ops.0,
        }
    }
}

/// Reads a sample now: `devices` are the block devices under the
/// exports, `net_bytes` and `ops` the statistics' totals, `cores` the
/// cores the process may run on. The pool's threads' CPU time (a walk of
/// /proc/self/task) is read only without `pool_cpu_s` (the caller's, kept
/// from the last sample when the pool took no calls since). Reads /proc
/// (no disk I/O), so may run anywhere.
pub fn sample(
    at: f64,
    pool: &crate::handoff::iopool::Pool,
    devices: &[String],
    net_bytes: u64,
    ops: u64,
    cores: f64,
    pool_cpu_s: Option<f64>,
) -> Sample {
    let mut disks = BTreeMap::new();
    if !devices.is_empty() {
        if let Ok(text) = std::fs::read_to_string("/proc/diskstats") {
            for (dev, v) in parse_diskstats(&text) {
                if devices.contains(&dev) {
                    disks.insert(dev, v);
                }
            }
        }
    }
    let mem_stall_us = std::fs::read_to_string("/proc/pressure/memory")
        .ok()
        .and_then(|t| parse_psi_some_total(&t));
    let usage = pool.usage();
    let pool_cpu_s = pool_cpu_s.unwrap_or_else(|| threads_cpu_s(pool.name()));
    Sample {
        at,
        cpu_s: process_cpu_s(),
        cores,
        pool: usage,
        pool_cpu_s,
        pool_max: pool.max_threads() as f64,
        disks,
        net_bytes,
        mem_stall_us,
        ops,
    }
}

/// This process's user and system CPU seconds (getrusage: one system
/// call, where /proc/self/stat is three).
pub fn process_cpu_s() -> f64 {
    // SAFETY: an all-zero rusage is a valid value for getrusage to fill.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid rusage to fill.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(ru.ru_utime) + secs(ru.ru_stime)
}

/// The CPU seconds of this process's threads named `name`.
pub fn threads_cpu_s(name: &str) -> f64 {
    // SAFETY: sysconf has no preconditions.
    let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    let mut ticks = 0u64;
    for t in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
            continue;
        };
        if let Some((comm, used)) = thread_ticks(&stat) {
            if comm == name {
                ticks += used;
            }
        }
    }
    ticks as f64 / tck
}

/// A /proc/PID/task/TID/stat line's command and utime + stime.
fn thread_ticks(stat: &str) -> Option<(&str, u64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?;
    let f: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
    Some((comm, num(11)? + num(12)?))
}

/// /proc/diskstats (Documentation/admin-guide/iostats.rst): per device,
/// field 13 (milliseconds spent doing I/Os) and 14 (weighted
/// milliseconds), counted from 1 with the device's name the third.
pub fn parse_diskstats(text: &str) -> Vec<(String, (u64, u64))> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
            Some((f.get(2)?.to_string(), (num(12)?, num(13)?)))
        })
        .collect()
}

/// The `total` of the `some` line of a PSI file, microseconds.
pub fn parse_psi_some_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    line.split_whitespace()
        .find_map(|w| w.strip_prefix("total="))?
        .parse()
        .ok()
}

/// The block device (its name in /proc/diskstats) holding `dir`, if it
/// is on one (not tmpfs, FUSE or NFS).
pub fn device_of(dir: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).ok()?.dev();
    // SAFETY: major and minor only split the number.
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    if major == 0 {
        return None;
    }
    let link = std::fs::read_link(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    Some(link.file_name()?.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t: f64, cpu_s: f64) -> Sample {
        Sample {
            at: t,
            cpu_s,
            cores: 1.0,
            ops: (t * 1000.0) as u64,
            ..Default::default()
        }
    }

    /// A step from 0 to 1 reaches 1 - e^(-t/T) after t seconds in each
    /// window, whatever the sampling interval.
    #[test]
    fn damping_follows_each_window() {
        for dt in [1.0, 0.5] {
            let mut d = Damped::default();
            let mut t = 0.0;
            while t < 10.0 - 1e-9 {
                d.update(1.0, dt);
                t += dt;
            }
            for (avg, w) in d.0.iter().zip(WINDOWS) {
                let want = 1.0 - (-10.0f64 / w).exp();
                assert!(
                    (avg - want).abs() < 1e-9,
                    "dt {dt} window {w}: {avg} vs {want}"
                );
            }
        }
    }

    #[test]
    fn a_busy_cpu_is_named() {
        let mut m = Model::new(None);
        for s in 0..=20 {
            // 0.95 CPU seconds a second on one core.
            m.observe(at(s as f64, s as f64 * 0.95));
        }
        let r = m.report();
        assert_eq!(r.limiting.as_deref(), Some("cpu"), "{r:?}");
        let cpu = &r.resources[0];
        assert!(cpu.utilization.unwrap()[0] > 0.94);
        assert!(cpu.utilization.unwrap()[2] < cpu.utilization.unwrap()[1]);
        assert!((r.ops_per_s[0] - 1000.0).abs() < 1.0);
    }

    #[test]
    fn a_busy_disk_is_named_and_a_quiet_server_is_not_the_limit() {
        let mut m = Model::new(None);
        for s in 0..=40u64 {
            let mut x = at(s as f64, s as f64 * 0.3);
            x.disks.insert("vda".into(), (s * 990, s * 4000));
            m.observe(x);
        }
        let r = m.report();
        assert_eq!(r.limiting.as_deref(), Some("disk vda"), "{r:?}");
        let disk = r.resources.iter().find(|x| x.name == "disk vda").unwrap();
        assert!(disk.detail.contains("queue depth 4.0"), "{}", disk.detail);

        // Operations served, nothing busy: the clients set the pace.
        let mut m = Model::new(Some(125e6));
        for s in 0..=20u64 {
            let mut x = at(s as f64, s as f64 * 0.05);
            x.net_bytes = s * 1_000_000;
            m.observe(x);
        }
        let r = m.report();
        assert_eq!(r.limiting, None);
        assert!(r.verdict.starts_with("not the server"), "{}", r.verdict);
        let net = r.resources.iter().find(|x| x.name == "network").unwrap();
        assert!((net.utilization.unwrap()[0] - 0.008).abs() < 1e-6);

        // No operations: idle.
        let mut m = Model::new(None);
        for s in 0..=5 {
            m.observe(Sample {
                at: s as f64,
                cores: 1.0,
                ..Default::default()
            });
        }
        assert_eq!(m.report().verdict, "idle");
    }

    /// A model fed 40 seconds of a pool whose calls, each second, spend
    /// `busy` seconds running (`cpu` of them on the CPU) and `queued`
    /// waiting for one of `max` threads, beside a device with I/O in
    /// flight `in_flight` of the time.
    fn pool_run(busy: f64, cpu: f64, queued: f64, max: f64, in_flight: f64) -> Model {
        let mut m = Model::new(None);
        for s in 0..=40u64 {
            let mut x = at(s as f64, s as f64 * 0.5);
            let ns = |v: f64| (v * 1e9) as u64 * s;
            x.pool = crate::handoff::iopool::Usage {
                calls: s * 1000,
                busy_ns: ns(busy),
                wait_ns: ns(queued),
            };
            x.pool_cpu_s = s as f64 * cpu;
            x.pool_max = max;
            x.disks
                .insert("vda".into(), ((in_flight * 1000.0) as u64 * s, 3000 * s));
            m.observe(x);
        }
        m
    }

    /// Each second, calls spend 0.8 s blocked in the pool (0.1 s of it
    /// on the CPU) and 1.9 s queued behind them: the device is idle half
    /// the time, but the server waits on it all the time.
    #[test]
    fn a_server_waiting_on_syncs_is_disk_bound() {
        let r = pool_run(0.8, 0.1, 1.9, 512.0, 0.5).report();
        assert_eq!(r.limiting.as_deref(), Some("disk vda"), "{r:?}");
        let pool = r.resources.iter().find(|x| x.name == "pool").unwrap();
        assert!(pool.utilization.unwrap()[1] < 0.01, "{pool:?}");
        // The same pool time on the CPU instead: not the disk.
        let r = pool_run(0.8, 0.8, 0.1, 512.0, 0.05).report();
        assert_eq!(r.limiting, None, "{r:?}");
    }

    /// 8 threads at most, 10 calls in them or waiting for them.
    #[test]
    fn a_full_pool_is_named() {
        let r = pool_run(8.0, 0.1, 2.0, 8.0, 0.0).report();
        let pool = r.resources.iter().find(|x| x.name == "pool").unwrap();
        assert!(pool.utilization.unwrap()[1] > 0.99, "{pool:?}");
        // Its threads wait on the disk, and the disk counts the calls
        // waiting on it: both are full; the pool is named only when it
        // alone is.
        let r = pool_run(8.0, 7.9, 2.0, 8.0, 0.0).report();
        assert_eq!(r.limiting.as_deref(), Some("pool"), "{r:?}");
    }

    #[test]
    fn proc_files_are_read() {
        let d = "   8       0 sda 100 0 800 50 200 0 1600 90 0 123 456 0 0 0 0\n 254 1 vda1 1 2 3 4 5 6 7 8 1 77 88\n";
        assert_eq!(
            parse_diskstats(d),
            vec![
                ("sda".to_string(), (123, 456)),
                ("vda1".to_string(), (77, 88))
            ]
        );
        let psi = "some avg10=0.00 avg60=0.00 avg300=0.00 total=4242\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=1\n";
        assert_eq!(parse_psi_some_total(psi), Some(4242));
        let t = "4242 (ferrite-io) S 1 2 3 4 5 6 7 8 9 10 120 30 0 0 20 0 9";
        assert_eq!(thread_ticks(t), Some(("ferrite-io", 150)));
        assert_eq!(device_of(Path::new("/proc")), None);
    }

    /// getrusage's CPU time moves with work done, as /proc/self/stat's.
    #[test]
    fn process_cpu_time_grows_with_work() {
        let a = process_cpu_s();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut x = 0u64;
        while process_cpu_s() <= a {
            for i in 0..100_000u64 {
                x = x.wrapping_mul(31).wrapping_add(i);
            }
            std::hint::black_box(x);
            assert!(std::time::Instant::now() < deadline, "CPU time never moved");
        }
    }
}
