//! Results: the versioned JSON document (`"schema": "ferrite-bench/1"`),
//! its CSV form and the terminal summary.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::record::{LatencySummary, PhaseTable};
use crate::stats::Summary;
use crate::workload::{Params, Workload};
use crate::{Error, Result};

pub const SCHEMA: &str = "ferrite-bench/1";

/// One second of the measured period.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesPoint {
    /// Seconds since the measured period began (end of this interval).
    pub t_s: f64,
    pub ops_per_s: f64,
    /// 10^6 bytes of file data per second.
    pub mb_per_s: f64,
}

/// Session slot waits during the measured period (all clients).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SlotWait {
    pub acquired: u64,
    pub waited: u64,
    pub total_ms: f64,
    pub max_ms: f64,
    /// total / acquired.
    pub mean_us: f64,
}

/// This process's CPU time over the measured period.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cpu {
    pub user_s: f64,
    pub sys_s: f64,
    pub cores: u32,
    /// (user + sys) / (wall × cores) × 100: 100 means every core was busy
    /// in the benchmark process (a client-bound run).
    pub percent: f64,
    /// (user + sys) per unit of work, µs.
    pub us_per_op: f64,
}

/// A server process's CPU time over the measured period (`--server-pid`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerCpu {
    pub pid: u32,
    pub user_s: f64,
    pub sys_s: f64,
    /// (user + sys) / wall × 100: the share of one core.
    pub percent: f64,
    /// (user + sys) per unit of work, µs.
    pub us_per_op: f64,
}

/// One run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub run: u32,
    /// Length of the measured period.
    pub elapsed_s: f64,
    /// Units of work done in the measured period (see the workload).
    pub ops: u64,
    /// File data moved (read or written) in the measured period.
    pub bytes: u64,
    pub errors: u64,
    pub ops_per_s: f64,
    pub mb_per_s: f64,
    /// False when a fixed-work workload hit `--duration` first.
    pub completed: bool,
    pub series: Vec<SeriesPoint>,
    /// Latency per workload step ("read", "open", "locked-read", ...).
    pub latency: BTreeMap<String, LatencySummary>,
    /// Per phase (setup, warmup, measure, teardown): operations by name
    /// and per-call statistics.
    pub nfs: BTreeMap<String, PhaseTable>,
    pub slot_wait: SlotWait,
    pub cpu: Cpu,
    /// The server's CPU time, when `--server-pid` named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu: Option<ServerCpu>,
    /// CB_RECALLs received (all clients).
    pub recalls: u64,
    /// Delegations granted by OPENs (all clients).
    pub delegations: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    pub hostname: String,
    pub cores: u32,
    pub ferrite_version: String,
}

/// A complete benchmark result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    pub schema: String,
    pub workload: String,
    pub target: String,
    pub params: Params,
    pub host: Host,
    /// Unix time the benchmark started.
    pub started_unix: u64,
    pub runs: Vec<RunResult>,
    /// Across runs: mean, standard deviation and 95% CI half-width
    /// (Student's t, n − 1 degrees of freedom) of each headline metric.
    pub summary: BTreeMap<String, Summary>,
}

impl Results {
    /// Headline metrics per run, by name (what `summary` and `compare`
    /// use).
    pub fn metrics(run: &RunResult, unit: &str) -> BTreeMap<String, f64> {
        let mut m = BTreeMap::new();
        m.insert("ops_per_s".into(), run.ops_per_s);
        m.insert("mb_per_s".into(), run.mb_per_s);
        if let Some(l) = run.latency.get(unit) {
            m.insert("latency_mean_us".into(), l.mean_us);
            m.insert("latency_p50_us".into(), l.p50_us);
            m.insert("latency_p90_us".into(), l.p90_us);
            m.insert("latency_p99_us".into(), l.p99_us);
            m.insert("latency_p999_us".into(), l.p999_us);
        }
        m.insert("cpu_percent".into(), run.cpu.percent);
        m.insert("cpu_us_per_op".into(), run.cpu.us_per_op);
        if let Some(s) = &run.server_cpu {
            m.insert("server_cpu_percent".into(), s.percent);
            m.insert("server_cpu_us_per_op".into(), s.us_per_op);
        }
        m.insert("slot_wait_mean_us".into(), run.slot_wait.mean_us);
        m
    }

    pub fn summarize(&mut self) {
        let unit = self.params.workload.unit_name();
        let mut by: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for r in &self.runs {
            for (k, v) in Self::metrics(r, unit) {
                by.entry(k).or_default().push(v);
            }
        }
        self.summary = by
            .iter()
            .map(|(k, v)| (k.clone(), Summary::of(v)))
            .collect();
    }

    pub fn to_json(&self) -> Result<String> {
        Ok(serde_json::to_string_pretty(self)?)
    }

    pub fn from_json(s: &str) -> Result<Results> {
        let v: serde_json::Value = serde_json::from_str(s)?;
        match v.get("schema").and_then(|s| s.as_str()) {
            Some(SCHEMA) => Ok(serde_json::from_value(v)?),
            Some(other) => Err(Error::Msg(format!(
                "unsupported schema {other} (this is {SCHEMA})"
            ))),
            None => Err(Error::Msg("not a ferrite-bench result (no schema)".into())),
        }
    }

    pub fn load(path: &std::path::Path) -> Result<Results> {
        let s = std::fs::read_to_string(path)
            .map_err(|e| Error::Msg(format!("{}: {e}", path.display())))?;
        Self::from_json(&s).map_err(|e| Error::Msg(format!("{}: {e}", path.display())))
    }

    /// Everything as long-format CSV: `run,section,name,field,value`.
    pub fn to_csv(&self) -> String {
        let mut o = String::from("run,section,name,field,value\n");
        let q = |s: &str| {
            if s.contains(',') || s.contains('"') {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        };
        let mut row = |run: &str, sec: &str, name: &str, field: &str, v: String| {
            let _ = writeln!(o, "{run},{sec},{},{field},{v}", q(name));
        };
        let p = serde_json::to_value(&self.params).unwrap_or_default();
        if let Some(obj) = p.as_object() {
            for (k, v) in obj {
                row("", "params", k, "value", q(v.to_string().trim_matches('"')));
            }
        }
        for (k, s) in &self.summary {
            for (f, v) in [
                ("n", s.n as f64),
                ("mean", s.mean),
                ("stddev", s.stddev),
                ("ci95", s.ci95),
                ("min", s.min),
                ("max", s.max),
            ] {
                row("all", "summary", k, f, v.to_string());
            }
        }
        for r in &self.runs {
            let run = r.run.to_string();
            for (f, v) in [
                ("elapsed_s", r.elapsed_s),
                ("ops", r.ops as f64),
                ("bytes", r.bytes as f64),
                ("errors", r.errors as f64),
                ("ops_per_s", r.ops_per_s),
                ("mb_per_s", r.mb_per_s),
                ("completed", f64::from(u8::from(r.completed))),
                ("recalls", r.recalls as f64),
                ("delegations", r.delegations as f64),
                ("cpu_user_s", r.cpu.user_s),
                ("cpu_sys_s", r.cpu.sys_s),
                ("cpu_percent", r.cpu.percent),
                ("cpu_us_per_op", r.cpu.us_per_op),
                ("slot_acquired", r.slot_wait.acquired as f64),
                ("slot_waited", r.slot_wait.waited as f64),
                ("slot_wait_total_ms", r.slot_wait.total_ms),
                ("slot_wait_max_ms", r.slot_wait.max_ms),
            ] {
                row(&run, "run", "", f, v.to_string());
            }
            if let Some(s) = &r.server_cpu {
                for (f, v) in [
                    ("server_cpu_user_s", s.user_s),
                    ("server_cpu_sys_s", s.sys_s),
                    ("server_cpu_percent", s.percent),
                    ("server_cpu_us_per_op", s.us_per_op),
                ] {
                    row(&run, "run", "", f, v.to_string());
                }
            }
            for s in &r.series {
                row(
                    &run,
                    "series",
                    &format!("{:.3}", s.t_s),
                    "ops_per_s",
                    s.ops_per_s.to_string(),
                );
                row(
                    &run,
                    "series",
                    &format!("{:.3}", s.t_s),
                    "mb_per_s",
                    s.mb_per_s.to_string(),
                );
            }
            for (n, l) in &r.latency {
                for (f, v) in [
                    ("count", l.count as f64),
                    ("mean_us", l.mean_us),
                    ("min_us", l.min_us),
                    ("p50_us", l.p50_us),
                    ("p90_us", l.p90_us),
                    ("p99_us", l.p99_us),
                    ("p999_us", l.p999_us),
                    ("max_us", l.max_us),
                ] {
                    row(&run, "latency", n, f, v.to_string());
                }
            }
            for (phase, t) in &r.nfs {
                for (op, c) in &t.ops {
                    row(&run, &format!("ops.{phase}"), op, "count", c.to_string());
                }
                for (k, c) in &t.calls {
                    for (f, v) in [
                        ("count", c.count as f64),
                        ("errors", c.errors as f64),
                        ("bytes_sent", c.bytes_sent as f64),
                        ("bytes_recv", c.bytes_recv as f64),
                        ("mean_rtt_us", c.mean_rtt_us),
                        ("mean_queue_us", c.mean_queue_us),
                    ] {
                        row(&run, &format!("calls.{phase}"), k, f, v.to_string());
                    }
                }
            }
        }
        o
    }

    /// The terminal summary.
    pub fn render_summary(&self) -> String {
        let mut o = String::new();
        let p = &self.params;
        let _ = writeln!(
            o,
            "{} on {}: {} client(s) x {} thread(s), io {} B, files {}, file size {} B{}{}",
            p.workload,
            self.target,
            p.clients,
            p.threads,
            p.io_size,
            p.files,
            p.file_size,
            if p.sync { ", FILE_SYNC" } else { "" },
            if p.delay_ms > 0.0 {
                format!(
                    ", +{} ms one-way (jitter {} ms, loss {}%)",
                    p.delay_ms,
                    p.jitter_ms,
                    p.loss * 100.0
                )
            } else {
                String::new()
            }
        );
        let unit = p.workload.unit_name();
        for r in &self.runs {
            let l = r.latency.get(unit);
            let _ = writeln!(
                o,
                "  run {}: {:>10.1} ops/s {:>9.2} MB/s  {} ops in {:.2} s{}  p50 {:.0} µs  p99 {:.0} µs  p99.9 {:.0} µs  client CPU {:.0}% ({:.1} µs/op){}",
                r.run,
                r.ops_per_s,
                r.mb_per_s,
                r.ops,
                r.elapsed_s,
                if r.completed { "" } else { " (cut by --duration)" },
                l.map(|l| l.p50_us).unwrap_or(f64::NAN),
                l.map(|l| l.p99_us).unwrap_or(f64::NAN),
                l.map(|l| l.p999_us).unwrap_or(f64::NAN),
                r.cpu.percent,
                r.cpu.us_per_op,
                r.server_cpu
                    .as_ref()
                    .map(|s| format!(
                        "  server CPU {:.0}% ({:.1} µs/op)",
                        s.percent, s.us_per_op
                    ))
                    .unwrap_or_default(),
            );
            // Operation mixes and personalities: each kind of operation.
            if matches!(
                p.workload,
                Workload::Nhfsstone
                    | Workload::Fileserver
                    | Workload::Webserver
                    | Workload::Varmail
            ) {
                for (name, l) in r.latency.iter().filter(|(n, _)| n.as_str() != unit) {
                    let _ = writeln!(
                        o,
                        "    {name:<20} {:>9} ({:>5.1}%)  mean {:>8.0} µs  p50 {:>8.0} µs  p99 {:>8.0} µs",
                        l.count,
                        100.0 * l.count as f64 / r.ops.max(1) as f64,
                        l.mean_us,
                        l.p50_us,
                        l.p99_us
                    );
                }
            }
        }
        if self.runs.len() > 1 {
            let _ = writeln!(
                o,
                "  across {} runs (mean ± 95% CI, Student's t):",
                self.runs.len()
            );
            for k in [
                "ops_per_s",
                "mb_per_s",
                "latency_p50_us",
                "latency_p99_us",
                "cpu_percent",
            ] {
                if let Some(s) = self.summary.get(k) {
                    let _ = writeln!(o, "    {k:<16} {:>12.2} ± {:.2}", s.mean, s.ci95);
                }
            }
        }
        if let Some(r) = self.runs.last() {
            if let Some(t) = r.nfs.get("measure") {
                let _ = writeln!(
                    o,
                    "  calls in the measured period of run {} (per call: bytes sent/received, mean RTT, mean queueing):",
                    r.run
                );
                let _ = writeln!(
                    o,
                    "    {:<22} {:>9} {:>8} {:>6} {:>9} {:>9} {:>10} {:>10}",
                    "call", "count", "per unit", "errors", "sent B", "recv B", "RTT µs", "queue µs"
                );
                let per_unit = |n: u64| n as f64 / r.ops.max(1) as f64;
                for (k, c) in &t.calls {
                    let per = |x: u64| x as f64 / c.count.max(1) as f64;
                    let _ = writeln!(
                        o,
                        "    {:<22} {:>9} {:>8.2} {:>6} {:>9.0} {:>9.0} {:>10.1} {:>10.1}",
                        k,
                        c.count,
                        per_unit(c.count),
                        c.errors,
                        per(c.bytes_sent),
                        per(c.bytes_recv),
                        c.mean_rtt_us,
                        c.mean_queue_us
                    );
                }
                let ops: Vec<String> = t
                    .ops
                    .iter()
                    .map(|(k, v)| format!("{k} {v} ({:.2})", per_unit(*v)))
                    .collect();
                let _ = writeln!(o, "    operations (count, per {unit}): {}", ops.join(", "));
            }
            // NFSv3 and dir: targets have no session slot table.
            if r.slot_wait.acquired > 0 {
                let _ = writeln!(
                    o,
                    "  slot waits: {} of {} acquisitions waited, mean {:.1} µs, max {:.2} ms",
                    r.slot_wait.waited,
                    r.slot_wait.acquired,
                    r.slot_wait.mean_us,
                    r.slot_wait.max_ms,
                );
            }
            let _ = writeln!(
                o,
                "  delegations granted {}, recalls received {}",
                r.delegations, r.recalls
            );
        }
        o
    }
}
