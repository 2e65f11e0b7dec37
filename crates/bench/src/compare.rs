//! `ferrite bench compare A.json B.json`: per-metric ratios B/A with a 95%
//! confidence interval (delta method, Welch–Satterthwaite degrees of
//! freedom; see [`crate::stats::ratio`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::results::Results;
use crate::stats::{ratio, Summary};

/// The comparison table as text.
pub fn compare(a: &Results, b: &Results) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "A: {} on {} ({} runs)\nB: {} on {} ({} runs)",
        a.workload,
        a.target,
        a.runs.len(),
        b.workload,
        b.target,
        b.runs.len()
    );
    if a.workload != b.workload {
        let _ = writeln!(o, "warning: different workloads");
    }
    let _ = writeln!(
        o,
        "{:<20} {:>14} {:>14} {:>8} {:>20}",
        "metric", "A mean", "B mean", "B/A", "95% CI of B/A"
    );
    let unit_a = a.params.workload.unit_name();
    let unit_b = b.params.workload.unit_name();
    let collect = |r: &Results, unit: &str, k: &str| -> Vec<f64> {
        r.runs
            .iter()
            .filter_map(|run| Results::metrics(run, unit).get(k).copied())
            .collect()
    };
    let keys: Vec<String> = a
        .runs
        .first()
        .map(|r| Results::metrics(r, unit_a).into_keys().collect())
        .unwrap_or_default();
    for k in keys {
        let (va, vb) = (collect(a, unit_a, &k), collect(b, unit_b, &k));
        if va.is_empty() || vb.is_empty() {
            continue;
        }
        let (sa, sb) = (Summary::of(&va), Summary::of(&vb));
        let r = ratio(&sa, &sb);
        let ci = if sa.mean == 0.0 {
            "n/a (A is zero)".to_string()
        } else if r.low.is_nan() {
            "n/a (need ≥2 runs)".to_string()
        } else {
            format!("[{:.3}, {:.3}]", r.low, r.high)
        };
        let _ = writeln!(
            o,
            "{:<20} {:>14.2} {:>14.2} {:>8.3} {:>20}",
            k, sa.mean, sb.mean, r.ratio, ci
        );
    }
    let (pa, pb) = (ops_per_unit(a), ops_per_unit(b));
    if !pa.is_empty() || !pb.is_empty() {
        let _ = writeln!(
            o,
            "operations per {} in the measured period (all runs):",
            a.params.workload.unit_name()
        );
        let _ = writeln!(o, "{:<20} {:>14} {:>14}", "operation", "A", "B");
        let names: std::collections::BTreeSet<&String> = pa.keys().chain(pb.keys()).collect();
        for n in names {
            let v = |m: &BTreeMap<String, f64>| m.get(n).map_or("-".into(), |x| format!("{x:.3}"));
            let _ = writeln!(o, "{:<20} {:>14} {:>14}", n, v(&pa), v(&pb));
        }
    }
    o
}

/// Every operation of the measured periods of all runs, divided by the
/// units those runs completed: what the papers' operation tables count.
fn ops_per_unit(r: &Results) -> BTreeMap<String, f64> {
    let units: u64 = r.runs.iter().map(|x| x.ops).sum();
    let mut m = BTreeMap::new();
    for run in &r.runs {
        if let Some(t) = run.nfs.get("measure") {
            for (k, v) in &t.ops {
                *m.entry(k.clone()).or_insert(0.0) += *v as f64;
            }
        }
    }
    for v in m.values_mut() {
        *v /= units.max(1) as f64;
    }
    m
}
