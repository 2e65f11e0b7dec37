//! `ferrite stat`: a running server's statistics, read over its
//! administration socket (`server::observe::admin`), printed as tables, or every
//! few seconds for the interval just past (`--watch`, as nfsstat's
//! interval mode), or as JSON.

use std::fmt::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use server::observe::stats::report::{OpReport, Report};

#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "Examples:
  ferrite stat                         # the server whose state directory is the default one
  ferrite stat --state-dir /srv/state  # the server started with --state-dir /srv/state
  ferrite stat --watch                 # every second, what happened in that second
  ferrite stat --watch 10              # every 10 seconds
  ferrite stat --json | jq .clients    # everything, as JSON")]
pub struct StatArgs {
    #[command(flatten)]
    pub server: ServerArg,
    /// Print again every SECS seconds (default 1), each time what was
    /// counted in the interval: operations per second and their latency.
    #[arg(long, value_name = "SECS", num_args = 0..=1, default_missing_value = "1")]
    pub watch: Option<f64>,
    /// Print the report as JSON (one line).
    #[arg(long, conflicts_with = "watch")]
    pub json: bool,
}

/// Which running server: its socket, or its state directory.
#[derive(clap::Args, Debug, Clone)]
pub struct ServerArg {
    /// The server's administration socket (default: STATE_DIR/admin.sock).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// The server's state directory, where its socket is.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

impl ServerArg {
    pub fn socket(&self) -> PathBuf {
        self.socket.clone().unwrap_or_else(|| {
            self.state_dir
                .clone()
                .unwrap_or_else(crate::config::default_state_dir)
                .join(server::observe::admin::SOCKET)
        })
    }
}

/// Sends `cmd` over the administration socket at `path`; its answer.
pub async fn ask(path: &std::path::Path, cmd: &str) -> anyhow::Result<String> {
    server::observe::admin::request(path, cmd).await.with_context(|| {
        format!(
            "no server answers at {} (is it running, with this state directory, and are you root or its user?)",
            path.display()
        )
    })
}

/// What a server answered (a report of type `T`), or the error it
/// answered with, prefixed by `refused`.
pub fn answer_of<T: serde::de::DeserializeOwned>(raw: &str, refused: &str) -> anyhow::Result<T> {
    let value: serde_json::Value = serde_json::from_str(raw).context("the server's answer")?;
    if let Some(e) = value.get("error") {
        let why = e.as_str().map_or_else(|| e.to_string(), str::to_string);
        bail!("{refused}: {why}");
    }
    serde_json::from_value(value).context("the server's answer")
}

/// Sends `cmd` to the server `server` names and returns its answer, on a
/// runtime of its own.
pub fn ask_once(server: &ServerArg, cmd: &str) -> anyhow::Result<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(ask(&server.socket(), cmd))
}

fn report_of(raw: &str) -> anyhow::Result<Report> {
    answer_of(raw, "the server says")
}

#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "Example:
  ferrite exports --state-dir /var/lib/ferrite")]
pub struct ExportsArgs {
    #[command(flatten)]
    pub server: ServerArg,
    /// Print them as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `ferrite exports`: what a running server exports, and to whom.
pub fn exports_main(args: ExportsArgs) -> anyhow::Result<()> {
    let r = report_of(&ask_once(&args.server, "stat")?)?;
    if args.json {
        out(&format!("{}\n", serde_json::to_string(&r.exports)?));
        return Ok(());
    }
    let mut o = String::new();
    for e in &r.exports {
        let _ = writeln!(o, "{} (id {}): {}", e.path, e.id, e.dir);
        let _ = writeln!(o, "  clients, first match applies: {}", e.clients.join(" "));
        let _ = writeln!(o, "  security: {}", e.sec.join(", "));
        if !e.options.is_empty() {
            let _ = writeln!(o, "  options: {}", e.options.join(", "));
        }
    }
    for r in &r.referrals {
        let _ = writeln!(o, "{} (referral): {}", r.path, r.locations.join(", "));
    }
    out(&o);
    Ok(())
}

pub fn main(args: StatArgs) -> anyhow::Result<()> {
    let path = args.server.socket();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let fetch = || async {
            let raw = ask(&path, "stat").await?;
            if args.json {
                return Ok::<_, anyhow::Error>((raw, None));
            }
            let r = report_of(&raw)?;
            Ok((raw, Some(r)))
        };
        let Some(secs) = args.watch else {
            let (raw, r) = fetch().await?;
            match r {
                Some(r) => out(&render(&r, None)),
                None => out(&raw),
            };
            return Ok(());
        };
        if !(secs > 0.0 && secs.is_finite()) {
            bail!("--watch takes a number of seconds above 0");
        }
        let mut before = fetch().await?.1.context("no report")?;
        loop {
            tokio::time::sleep(Duration::from_secs_f64(secs)).await;
            let now = fetch().await?.1.context("no report")?;
            if !out(&format!("\n{}", render(&now, Some((&before, secs))))) {
                return Ok(());
            }
            before = now;
        }
    })
}

/// Writes `text` to standard output; false once nobody reads it (a
/// closed pipe, as when piped into `head`).
pub fn out(text: &str) -> bool {
    use std::io::Write as _;
    let mut o = std::io::stdout().lock();
    o.write_all(text.as_bytes())
        .and_then(|()| o.flush())
        .is_ok()
}

/// The tables; with `since` (an earlier report and the seconds between),
/// per-second rates and latencies of that interval only.
pub fn render(r: &Report, since: Option<(&Report, f64)>) -> String {
    let mut o = String::new();
    let p = &r.process;
    let _ = writeln!(
        o,
        "ferrite {} (pid {}), up {}, CPU {:.1} s, {} MiB resident, {} of {} descriptors, {} threads",
        r.version,
        r.pid,
        duration(r.uptime_s),
        p.cpu_s,
        p.resident_bytes >> 20,
        p.open_fds,
        p.max_fds,
        p.threads
    );
    let rl = &r.reloads;
    if rl.applied + rl.refused > 0 {
        let ago = |t: u64| duration((r.started as f64 + r.uptime_s - t as f64).max(0.0));
        let last = match &rl.last_error {
            Some(e) => format!("last refused {} ago: {e}", ago(rl.last_refused)),
            None => format!("last applied {} ago", ago(rl.last_applied)),
        };
        let _ = writeln!(
            o,
            "configuration reloads: {} applied, {} refused; {last}",
            rl.applied, rl.refused
        );
    }
    if let Some(g) = &r.security.gss {
        let _ = writeln!(
            o,
            "RPCSEC_GSS: {} of {} contexts held; {} established, {} refused; calls {} denied, \
             {} dropped (replays), {} with bad sealed arguments",
            g.contexts, g.max_contexts, g.established, g.refused, g.denied, g.dropped, g.garbage
        );
    }
    if let Some(t) = &r.security.tls {
        let _ = writeln!(
            o,
            "RPC-over-TLS: {} probes; {} handshakes done ({} with a client certificate), {} failed",
            t.probes, t.established, t.mutual, t.failed
        );
    }
    let l = &r.load;
    let _ = writeln!(
        o,
        "load: {} (operations/s {:.0}, {:.0}, {:.0} over 1, 5, 15 s)",
        l.verdict, l.ops_per_s[0], l.ops_per_s[1], l.ops_per_s[2]
    );
    for res in &l.resources {
        let u = res
            .utilization
            .map_or("     -      -      -".to_string(), |u| {
                format!(
                    "{:>5.0}% {:>5.0}% {:>5.0}%",
                    u[0] * 100.0,
                    u[1] * 100.0,
                    u[2] * 100.0
                )
            });
        let mark = if l.limiting.as_deref() == Some(res.name.as_str()) {
            " <- limiting"
        } else {
            ""
        };
        let _ = writeln!(o, "  {:<12} {u}  {}{mark}", res.name, res.detail);
    }
    if let Some((b, secs)) = since {
        let _ = writeln!(
            o,
            "interval {secs} s: server CPU {:.0}% of a core",
            (p.cpu_s - b.process.cpu_s).max(0.0) / secs * 100.0
        );
    }
    // An operation first used in the interval counts whole.
    let diff = |op: &OpReport, earlier: Option<&Vec<OpReport>>| -> OpReport {
        match earlier.and_then(|ops| ops.iter().find(|x| x.name == op.name)) {
            Some(b) => op.since(b),
            None => op.clone(),
        }
    };
    let unit = if since.is_some() { "per s" } else { "count" };
    for prog in &r.programs {
        let earlier = since.and_then(|(b, _)| {
            b.programs
                .iter()
                .find(|x| x.name == prog.name)
                .map(|x| &x.ops)
        });
        let mut rows: Vec<OpReport> = prog.ops.iter().map(|op| diff(op, earlier)).collect();
        if prog.name == "NFSv4" && r.compounds.count > 0 {
            let c = match since {
                Some((b, _)) => r.compounds.since(&b.compounds),
                None => r.compounds.clone(),
            };
            rows.insert(0, c);
        }
        rows.retain(|x| x.count > 0);
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(
            o,
            "\n{:<22} {:>10} {:>8} {:>10} {:>10} {:>9} {:>9} {:>9}",
            prog.name, unit, "errors", "MB in", "MB out", "mean µs", "p50 µs", "p99 µs"
        );
        for x in &rows {
            let per = |n: u64| match since {
                Some((_, secs)) => format!("{:.1}", n as f64 / secs),
                None => n.to_string(),
            };
            let us = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
            let _ = writeln!(
                o,
                "  {:<20} {:>10} {:>8} {:>10.2} {:>10.2} {:>9} {:>9} {:>9}",
                x.name,
                per(x.count),
                x.errors,
                x.bytes_in as f64 / 1e6,
                x.bytes_out as f64 / 1e6,
                us(x.mean_us()),
                us(x.quantile_us(0.5)),
                us(x.quantile_us(0.99)),
            );
            if !x.statuses.is_empty() {
                let list: Vec<String> =
                    x.statuses.iter().map(|(s, n)| format!("{s} {n}")).collect();
                let _ = writeln!(o, "  {:<20} {}", "", list.join(", "));
            }
        }
    }
    let _ = writeln!(
        o,
        "\n{:<22} {:>10} {:>8} {:>12} {:>12} {:>10} {:>8}",
        "export", "ops", "errors", "MB read", "MB written", "durable", "syncs"
    );
    for e in &r.exports {
        let b = since.and_then(|(b, _)| b.exports.iter().find(|x| x.id == e.id));
        let d = |now: u64, f: fn(&server::observe::stats::report::ExportReport) -> u64| {
            now - b.map_or(0, f).min(now)
        };
        let _ = writeln!(
            o,
            "  {:<20} {:>10} {:>8} {:>12.2} {:>12.2} {:>10} {:>8}",
            e.path,
            d(e.ops, |x| x.ops),
            d(e.errors, |x| x.errors),
            d(e.bytes_read, |x| x.bytes_read) as f64 / 1e6,
            d(e.bytes_written, |x| x.bytes_written) as f64 / 1e6,
            d(e.metadata_changes, |x| x.metadata_changes),
            d(e.metadata_syncs, |x| x.metadata_syncs)
        );
    }
    if !r.clients.is_empty() {
        let _ = writeln!(
            o,
            "\n{:<18} {:<22} {:>4} {:>8} {:>6} {:>6} {:>6} {:>9}  owner",
            "NFSv4 client", "address", "vers", "sessions", "opens", "locks", "delegs", "renewed"
        );
        for c in &r.clients {
            let _ = writeln!(
                o,
                "  {:<16} {:<22} {:>4} {:>8} {:>6} {:>6} {:>6} {:>8.0}s  {}{}",
                c.id,
                c.address.as_deref().unwrap_or("-"),
                c.version,
                c.sessions,
                c.opens,
                c.locks,
                c.delegations,
                c.since_renewal_s,
                c.owner
                    .chars()
                    .filter(|ch| !ch.is_control())
                    .take(40)
                    .collect::<String>(),
                if c.confirmed { "" } else { " (unconfirmed)" }
            );
        }
    }
    if !r.hosts.is_empty() {
        let _ = writeln!(
            o,
            "\n{:<22} {:>10} {:>8}  programs",
            "host (v3, NLM ...)", "calls", "idle"
        );
        for h in &r.hosts {
            let _ = writeln!(
                o,
                "  {:<20} {:>10} {:>7}s  {}",
                h.address,
                h.calls,
                h.idle_s,
                h.programs.join(" ")
            );
        }
    }
    o
}

fn duration(secs: f64) -> String {
    let s = secs as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}
