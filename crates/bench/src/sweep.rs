//! Load-response curves, as the Legato paper's Figure 2 (seeds/002):
//! the operation mix offered at one load after another, each run's
//! achieved load and response time (mean, median, 99th percentile), and
//! the knee. And delay sweeps, as the NFSv4.1 evaluation's figures
//! (seeds/000): any workload run at one injected delay after another,
//! throughput against delay.
//!
//! The load is open loop: each worker's requests fall due at fixed
//! intervals whatever the replies do, and a request sent late (its worker
//! still waited for an earlier reply) counts its response time from when
//! it fell due, so a server that cannot keep up sees response times grow
//! through the run, as nhfsstone's did (`Worker::mix_op`).
//!
//! The knee is the load of greatest *power*, achieved load over mean
//! response time (Kleinrock; Jain §3.3): past it, response time grows
//! faster than throughput.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::results::Results;
use crate::workload::Params;
use crate::{runner, Error, Result};

/// Fractions of the saturation throughput `--load-sweep` offers.
pub const SWEEP: [f64; 12] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25];

/// One offered load, or one delay.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Step {
    /// Operations per second offered; 0: as fast as the replies come
    /// (the saturation run, and every step of a delay sweep).
    pub offered: f64,
    /// The one-way delay injected, in milliseconds.
    #[serde(default)]
    pub delay_ms: f64,
    pub achieved: f64,
    #[serde(default)]
    pub mb_per_s: f64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub errors: u64,
    /// The server's CPU per operation, with `--server-pid`.
    pub server_cpu_us_per_op: Option<f64>,
    pub results: Results,
}

/// What a sweep varies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Axis {
    /// The offered load (`--load`, `--load-sweep`).
    #[default]
    Load,
    /// The injected delay (`--delay-sweep`).
    Delay,
}

/// A load-response curve, or a delay sweep.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sweep {
    pub schema: String,
    #[serde(default)]
    pub axis: Axis,
    pub workload: String,
    pub target: String,
    /// The mix, percentages per operation.
    pub mix: Vec<(String, f64)>,
    pub steps: Vec<Step>,
    /// The step of greatest power (offered load over response time),
    /// among the paced ones.
    pub knee: Option<usize>,
}

pub const SCHEMA: &str = "ferrite-bench-sweep/1";

/// Which loads to offer.
pub enum Loads {
    /// These, in operations per second.
    Given(Vec<f64>),
    /// A run as fast as the replies come, then [`SWEEP`] of its
    /// throughput.
    Sweep,
}

fn step_of(offered: f64, r: Results) -> Step {
    let g = |k: &str| r.summary.get(k).map_or(f64::NAN, |s| s.mean);
    Step {
        offered,
        delay_ms: r.params.delay_ms,
        achieved: g("ops_per_s"),
        mb_per_s: g("mb_per_s"),
        mean_us: g("latency_mean_us"),
        p50_us: g("latency_p50_us"),
        p99_us: g("latency_p99_us"),
        errors: r.runs.iter().map(|x| x.errors).sum(),
        server_cpu_us_per_op: r.summary.get("server_cpu_us_per_op").map(|s| s.mean),
        results: r,
    }
}

/// Runs `p` at each load, printing each step to standard error.
pub async fn run(p: &Params, loads: Loads) -> Result<Sweep> {
    if p.rate != 0.0 {
        return Err(Error::Msg(
            "--load and --load-sweep set the rate themselves: no --rate".into(),
        ));
    }
    let mut steps = Vec::new();
    let offered: Vec<f64> = match loads {
        Loads::Given(v) => {
            if v.is_empty() || v.iter().any(|&x| !(x > 0.0 && x.is_finite())) {
                return Err(Error::Msg(
                    "--load: operations per second, each above 0".into(),
                ));
            }
            v
        }
        Loads::Sweep => {
            eprintln!("load sweep: as fast as the replies come, for the saturation throughput");
            let s = step_of(0.0, runner::run(p).await?);
            eprintln!(
                "load sweep: saturation {:.0} operations/s (mean {:.0} µs)",
                s.achieved, s.mean_us
            );
            if s.achieved.is_nan() || s.achieved <= 0.0 {
                return Err(Error::Msg("the saturation run completed nothing".into()));
            }
            let max = s.achieved;
            steps.push(s);
            SWEEP.iter().map(|f| (f * max).round().max(1.0)).collect()
        }
    };
    for load in offered {
        let mut q = p.clone();
        q.rate = load;
        q.check()?;
        let s = step_of(load, runner::run(&q).await?);
        eprintln!(
            "load {:.0}/s offered: {:.0}/s achieved, mean {:.0} µs, p99 {:.0} µs",
            s.offered, s.achieved, s.mean_us, s.p99_us
        );
        steps.push(s);
    }
    let knee = knee(&steps);
    Ok(Sweep {
        schema: SCHEMA.into(),
        axis: Axis::Load,
        workload: p.workload.to_string(),
        target: p.target.clone(),
        mix: p
            .mix()
            .iter()
            .map(|(o, w)| (o.name().to_string(), *w))
            .collect(),
        steps,
        knee,
    })
}

/// Runs `p` at each one-way delay of `delays_ms` in turn (the in-process
/// proxy, as `--delay`), printing each step to standard error.
pub async fn run_delays(p: &Params, delays_ms: &[f64]) -> Result<Sweep> {
    if delays_ms.is_empty() || delays_ms.iter().any(|d| !(d.is_finite() && *d >= 0.0)) {
        return Err(Error::Msg("--delay-sweep: delays of 0 or more".into()));
    }
    let mut steps = Vec::new();
    for &d in delays_ms {
        let mut q = p.clone();
        q.delay_ms = d;
        let s = step_of(p.rate, runner::run(&q).await?);
        eprintln!(
            "delay {d} ms: {:.0} {}/s, {:.1} MB/s, mean {:.0} µs",
            s.achieved,
            p.workload.unit_name(),
            s.mb_per_s,
            s.mean_us
        );
        steps.push(s);
    }
    Ok(Sweep {
        schema: SCHEMA.into(),
        axis: Axis::Delay,
        workload: p.workload.to_string(),
        target: p.target.clone(),
        mix: if p.workload == crate::workload::Workload::Nhfsstone {
            p.mix()
                .iter()
                .map(|(o, w)| (o.name().to_string(), *w))
                .collect()
        } else {
            Vec::new()
        },
        steps,
        knee: None,
    })
}

/// The paced step of greatest power (achieved load over mean response
/// time).
pub fn knee(steps: &[Step]) -> Option<usize> {
    steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.offered > 0.0 && s.mean_us > 0.0 && s.achieved.is_finite())
        .max_by(|(_, a), (_, b)| (a.achieved / a.mean_us).total_cmp(&(b.achieved / b.mean_us)))
        .map(|(i, _)| i)
}

/// The curve as a table.
pub fn render(s: &Sweep) -> String {
    if s.axis == Axis::Delay {
        return render_delays(s);
    }
    let mut o = String::new();
    let mix: Vec<String> = s.mix.iter().map(|(n, w)| format!("{n} {w}%")).collect();
    let _ = writeln!(o, "{} on {}: {}", s.workload, s.target, mix.join(", "));
    let _ = writeln!(
        o,
        "{:>10} {:>10} {:>9} {:>9} {:>9} {:>7} {:>11}",
        "offered/s", "achieved/s", "mean ms", "p50 ms", "p99 ms", "errors", "srv µs/op"
    );
    for (i, st) in s.steps.iter().enumerate() {
        let offered = if st.offered > 0.0 {
            format!("{:.0}", st.offered)
        } else {
            "max".into()
        };
        let _ = writeln!(
            o,
            "{offered:>10} {:>10.0} {:>9.3} {:>9.3} {:>9.3} {:>7} {:>11}{}",
            st.achieved,
            st.mean_us / 1e3,
            st.p50_us / 1e3,
            st.p99_us / 1e3,
            st.errors,
            st.server_cpu_us_per_op
                .map_or("-".into(), |v| format!("{v:.1}")),
            if s.knee == Some(i) { "  <- knee" } else { "" }
        );
    }
    if let Some(k) = s.knee.and_then(|k| s.steps.get(k)) {
        let _ = writeln!(
            o,
            "knee: {:.0} operations/s offered ({:.0} achieved, mean response {:.3} ms): the most throughput per unit of response time",
            k.offered,
            k.achieved,
            k.mean_us / 1e3
        );
    }
    o
}

fn render_delays(s: &Sweep) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{} on {}, by one-way delay:", s.workload, s.target);
    let _ = writeln!(
        o,
        "{:>9} {:>12} {:>9} {:>9} {:>9} {:>9} {:>7}",
        "delay ms", "units/s", "MB/s", "mean ms", "p50 ms", "p99 ms", "errors"
    );
    for st in &s.steps {
        let _ = writeln!(
            o,
            "{:>9} {:>12.1} {:>9.2} {:>9.3} {:>9.3} {:>9.3} {:>7}",
            st.delay_ms,
            st.achieved,
            st.mb_per_s,
            st.mean_us / 1e3,
            st.p50_us / 1e3,
            st.p99_us / 1e3,
            st.errors
        );
    }
    if let (Some(first), Some(last)) = (s.steps.first(), s.steps.last()) {
        if first.achieved > 0.0 && s.steps.len() > 1 {
            let _ = writeln!(
                o,
                "at {} ms, {:.1}% of the throughput at {} ms",
                last.delay_ms,
                100.0 * last.achieved / first.achieved,
                first.delay_ms
            );
        }
    }
    o
}

/// Whether the JSON file at `path` is a load-response curve.
pub fn is_sweep(path: &std::path::Path) -> bool {
    crate::files::schema(path).as_deref() == Some(SCHEMA)
}

pub fn load(path: &std::path::Path) -> Result<Sweep> {
    crate::files::load_json(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(offered: f64, achieved: f64, mean_us: f64) -> Step {
        let mut p = Params::new(
            crate::workload::Workload::Nhfsstone,
            "dir:/x".into(),
            Default::default(),
        );
        p.rate = offered;
        Step {
            offered,
            delay_ms: 0.0,
            achieved,
            mb_per_s: 0.0,
            mean_us,
            p50_us: mean_us,
            p99_us: mean_us,
            errors: 0,
            server_cpu_us_per_op: None,
            results: Results {
                schema: String::new(),
                workload: String::new(),
                target: String::new(),
                params: p,
                host: crate::results::Host {
                    hostname: String::new(),
                    cores: 1,
                    ferrite_version: String::new(),
                },
                started_unix: 0,
                runs: vec![],
                summary: Default::default(),
            },
        }
    }

    /// Response time flat, then rising: the knee is where throughput per
    /// unit of response time peaks, before the rise; the unpaced
    /// saturation run never is.
    #[test]
    fn the_knee_is_the_load_of_greatest_power() {
        let steps = vec![
            step(0.0, 10_000.0, 100.0),
            step(1000.0, 1000.0, 500.0),
            step(2000.0, 2000.0, 510.0),
            step(4000.0, 3990.0, 600.0),
            step(6000.0, 5500.0, 1500.0),
            step(8000.0, 5600.0, 9000.0),
        ];
        assert_eq!(knee(&steps), Some(3));
        let s = Sweep {
            schema: SCHEMA.into(),
            axis: Axis::Load,
            workload: "nhfsstone".into(),
            target: "dir:/x".into(),
            mix: vec![("lookup".into(), 100.0)],
            steps,
            knee: Some(3),
        };
        let t = render(&s);
        assert!(t.contains("max"), "{t}");
        assert!(
            t.lines().filter(|l| l.ends_with("<- knee")).count() == 1,
            "{t}"
        );
        assert!(t.contains("knee: 4000 operations/s offered"), "{t}");
        assert_eq!(knee(&s.steps[..1]), None);
    }
}
