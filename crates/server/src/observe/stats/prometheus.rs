//! The statistics in the Prometheus text exposition format (version
//! 0.0.4). The names are documented in docs/metrics.md.

use std::fmt::Write;

use super::hist;
use super::report::{ClientReport, ExportReport, OpReport, Report};

/// A metric's name, its help text and how to read it from `T`.
type Field<T> = (&'static str, &'static str, fn(&T) -> u64);

/// Latency bucket bounds exported: each power of two from 2^10 ns
/// (about 1 µs) to 2^40 ns (about 18 minutes), in seconds. They fall on
/// the histogram's own bucket bounds, so the counts are exact.
fn le_bounds() -> impl Iterator<Item = (u64, String)> {
    (10..=40u32).map(|k| {
        let ns = 1u64 << k;
        (ns, format!("{}", ns as f64 / 1e9))
    })
}

/// Escapes a label value (backslash, double quote, newline).
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn help(out: &mut String, name: &str, kind: &str, text: &str) {
    let _ = writeln!(out, "# HELP {name} {text}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// Renders `r` as Prometheus text.
pub fn render(r: &Report) -> String {
    let mut out = String::with_capacity(16 * 1024);
    // Every (program, operation) pair, COMPOUND as NFSv4's own.
    let mut ops: Vec<(&str, &OpReport)> = r
        .programs
        .iter()
        .flat_map(|p| p.ops.iter().map(move |o| (p.name.as_str(), o)))
        .collect();
    if r.compounds.count > 0 {
        ops.push(("NFSv4", &r.compounds));
    }
    let key =
        |prog: &str, o: &OpReport| format!("program=\"{}\",op=\"{}\"", label(prog), label(&o.name));
    help(
        &mut out,
        "ferrite_operations_total",
        "counter",
        "Operations (NFSv4 operations and COMPOUNDs, procedures of the other programs) answered.",
    );
    for (p, o) in &ops {
        let _ = writeln!(out, "ferrite_operations_total{{{}}} {}", key(p, o), o.count);
    }
    help(
        &mut out,
        "ferrite_operation_errors_total",
        "counter",
        "Operations answered with a status other than OK, by status.",
    );
    for (p, o) in &ops {
        for (s, n) in &o.statuses {
            let _ = writeln!(
                out,
                "ferrite_operation_errors_total{{{},status=\"{}\"}} {n}",
                key(p, o),
                label(s)
            );
        }
    }
    help(
        &mut out,
        "ferrite_operation_received_bytes_total",
        "counter",
        "Bytes of operations' arguments.",
    );
    for (p, o) in &ops {
        let _ = writeln!(
            out,
            "ferrite_operation_received_bytes_total{{{}}} {}",
            key(p, o),
            o.bytes_in
        );
    }
    help(
        &mut out,
        "ferrite_operation_sent_bytes_total",
        "counter",
        "Bytes of operations' results.",
    );
    for (p, o) in &ops {
        let _ = writeln!(
            out,
            "ferrite_operation_sent_bytes_total{{{}}} {}",
            key(p, o),
            o.bytes_out
        );
    }
    help(
        &mut out,
        "ferrite_operation_duration_seconds",
        "histogram",
        "Time from an operation's start to its result.",
    );
    for (p, o) in &ops {
        let k = key(p, o);
        let mut cumulative = 0u64;
        let mut it = o.latency.iter().peekable();
        for (ns, le) in le_bounds() {
            while let Some(&&(i, n)) = it.peek() {
                if hist::bounds(i as usize).1 <= ns {
                    cumulative += n;
                    it.next();
                } else {
                    break;
                }
            }
            let _ = writeln!(
                out,
                "ferrite_operation_duration_seconds_bucket{{{k},le=\"{le}\"}} {cumulative}"
            );
        }
        let _ = writeln!(
            out,
            "ferrite_operation_duration_seconds_bucket{{{k},le=\"+Inf\"}} {}",
            o.count
        );
        let _ = writeln!(
            out,
            "ferrite_operation_duration_seconds_sum{{{k}}} {}",
            o.nanos as f64 / 1e9
        );
        let _ = writeln!(
            out,
            "ferrite_operation_duration_seconds_count{{{k}}} {}",
            o.count
        );
    }
    let per_export: [Field<ExportReport>; 6] = [
        (
            "ferrite_export_operations_total",
            "Operations on each export (NFSv4 operations with a filehandle in it).",
            |e| e.ops,
        ),
        (
            "ferrite_export_errors_total",
            "Of those, the ones answered with an error.",
            |e| e.errors,
        ),
        (
            "ferrite_export_read_bytes_total",
            "Bytes READ from each export.",
            |e| e.bytes_read,
        ),
        (
            "ferrite_export_written_bytes_total",
            "Bytes written to each export.",
            |e| e.bytes_written,
        ),
        (
            "ferrite_export_metadata_changes_total",
            "Metadata changes (objects created, removed, renamed, linked or changed) made durable before they were answered.",
            |e| e.metadata_changes,
        ),
        (
            "ferrite_export_metadata_syncs_total",
            "Syncs run to make them durable (fewer than the changes where changes share one).",
            |e| e.metadata_syncs,
        ),
    ];
    for (name, text, f) in per_export {
        help(&mut out, name, "counter", text);
        for e in &r.exports {
            let _ = writeln!(out, "{name}{{export=\"{}\"}} {}", label(&e.path), f(e));
        }
    }
    help(
        &mut out,
        "ferrite_nfs4_clients",
        "gauge",
        "NFSv4 client records.",
    );
    let _ = writeln!(out, "ferrite_nfs4_clients {}", r.clients.len());
    let sums: [Field<ClientReport>; 4] = [
        ("ferrite_nfs4_sessions", "NFSv4 sessions.", |c| c.sessions),
        ("ferrite_nfs4_opens", "NFSv4 open stateids.", |c| c.opens),
        ("ferrite_nfs4_locks", "NFSv4 lock stateids.", |c| c.locks),
        ("ferrite_nfs4_delegations", "NFSv4 delegations held.", |c| {
            c.delegations
        }),
    ];
    for (name, text, f) in sums {
        help(&mut out, name, "gauge", text);
        let _ = writeln!(out, "{name} {}", r.clients.iter().map(f).sum::<u64>());
    }
    help(
        &mut out,
        "ferrite_hosts",
        "gauge",
        "Hosts seen over NFSv3, MOUNT, NLM or NSM (at most 4096 remembered).",
    );
    let _ = writeln!(out, "ferrite_hosts {}", r.hosts.len());
    help(
        &mut out,
        "ferrite_load_utilization",
        "gauge",
        "The load model's utilization of each resource (0 to 1), damped over 1, 5 and 15 seconds.",
    );
    for res in &r.load.resources {
        if let Some(u) = res.utilization {
            for (v, w) in u.iter().zip(["1s", "5s", "15s"]) {
                let _ = writeln!(
                    out,
                    "ferrite_load_utilization{{resource=\"{}\",window=\"{w}\"}} {v}",
                    label(&res.name)
                );
            }
        }
    }
    help(
        &mut out,
        "ferrite_load_limiting",
        "gauge",
        "1 for the resource the load model finds limiting the server (no series when none does).",
    );
    if let Some(l) = &r.load.limiting {
        let _ = writeln!(out, "ferrite_load_limiting{{resource=\"{}\"}} 1", label(l));
    }
    let p = &r.process;
    let process: [(&str, &str, &str, String); 6] = [
        (
            "process_cpu_seconds_total",
            "counter",
            "User and system CPU time.",
            format!("{}", p.cpu_s),
        ),
        (
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory.",
            p.resident_bytes.to_string(),
        ),
        (
            "process_open_fds",
            "gauge",
            "Open file descriptors.",
            p.open_fds.to_string(),
        ),
        (
            "process_max_fds",
            "gauge",
            "The descriptor limit.",
            p.max_fds.to_string(),
        ),
        (
            "process_threads",
            "gauge",
            "Threads.",
            p.threads.to_string(),
        ),
        (
            "process_start_time_seconds",
            "gauge",
            "Start time, seconds since the epoch.",
            r.started.to_string(),
        ),
    ];
    let rl = &r.reloads;
    help(
        &mut out,
        "ferrite_config_reloads_total",
        "counter",
        "Configuration reloads (SIGHUP, ferrite reload), by result: applied or refused.",
    );
    let _ = writeln!(
        out,
        "ferrite_config_reloads_total{{result=\"applied\"}} {}",
        rl.applied
    );
    let _ = writeln!(
        out,
        "ferrite_config_reloads_total{{result=\"refused\"}} {}",
        rl.refused
    );
    let process = process.into_iter().chain([
        (
            "ferrite_config_last_reload_successful",
            "gauge",
            "1 unless the last reload was refused (the configuration served is then not the file's).",
            u8::from(rl.last_error.is_none()).to_string(),
        ),
        (
            "ferrite_config_last_reload_success_timestamp_seconds",
            "gauge",
            "When the configuration served was last loaded (the start, or the last reload applied), seconds since the epoch.",
            rl.last_applied.max(r.started).to_string(),
        ),
    ]);
    for (name, kind, text, v) in process {
        help(&mut out, name, kind, text);
        let _ = writeln!(out, "{name} {v}");
    }
    out
}
