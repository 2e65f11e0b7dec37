//! The `ferrite bench` command line (the binary wires [`BenchArgs`] in as
//! a subcommand and calls [`main`]).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::results::Results;
use crate::workload::{Overrides, Params, Workload};
use crate::{runner, Error, Result};

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ferrite bench prepare randread --target nfs4://127.0.0.1:2049/
  ferrite bench run randread --threads 16 --target nfs4://127.0.0.1:2049/ -o a.json
  ferrite bench run randread --target 'nfs3://127.0.0.1:2049/?mountport=2049' -o b.json
  ferrite bench compare a.json b.json
  ferrite bench report a.json b.json -o report.html
  ferrite bench run mix --load-sweep --target nfs4://127.0.0.1:2049/ -o curve.json   # response time against load
  ferrite bench design nfs-versions.toml -o design.json   # a 2^k factorial experiment
See docs/benchmarking.md for every workload and option.")]
pub struct BenchArgs {
    #[command(subcommand)]
    pub cmd: BenchCmd,
}

#[derive(Debug, Subcommand)]
pub enum BenchCmd {
    /// Run a workload against a target and report the results.
    Run(RunArgs),
    /// Build the file set a workload reads (once; `run` reuses it).
    Prepare(RunArgs),
    /// Write an HTML report with SVG plots from result files.
    Report(ReportArgs),
    /// Compare two result files: per-metric ratios B/A with 95% CIs.
    Compare(CompareArgs),
    /// Serve canned NFSv4.1 replies and store nothing: the client's ceiling.
    NullServer(NullServerArgs),
    /// Forward TCP connections to a server through a link of limited
    /// capacity (shared by every connection through this proxy) and/or
    /// with added delay: a slow network in front of one server.
    Proxy(ProxyArgs),
    /// Run an experiment planned as a two-level factorial design (full
    /// 2^k·r or fractional 2^(k-p)·r) and report each effect with its
    /// confidence interval and share of the variation.
    Design(DesignArgs),
}

#[derive(Debug, Args)]
#[command(after_help = "Example (docs/benchmarking.md explains the file):
  ferrite bench design docs/designs/version-delay.toml --plan   # the runs, without running them
  ferrite bench design docs/designs/version-delay.toml -o design.json")]
pub struct DesignArgs {
    /// The experiment (TOML): workload, response, factors and levels.
    pub file: PathBuf,
    /// Print the design and its runs, and run nothing.
    #[arg(long)]
    pub plan: bool,
    /// Write the outcome (design, responses, analysis, every run's
    /// results) as JSON.
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct NullServerArgs {
    /// Address and port to listen on.
    #[arg(long, default_value = "127.0.0.1:20500")]
    pub listen: std::net::SocketAddr,
    /// Serve each connection on a thread of its own with blocking reads
    /// and writes, no event loop: the floor of what loopback TCP and the
    /// scheduler cost per call, to set one-request rows against.
    #[arg(long)]
    pub threaded: bool,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Example: a 40 MiB/s link in front of a data server on port 2051
  ferrite bench proxy --listen 127.0.0.1:3051 --to 127.0.0.1:2051 --rate 40MiB/s
Runs until stopped (Ctrl-C or SIGTERM)."
)]
pub struct ProxyArgs {
    /// Address and port to listen on.
    #[arg(long)]
    pub listen: std::net::SocketAddr,
    /// The server connections are forwarded to.
    #[arg(long)]
    pub to: std::net::SocketAddr,
    /// Link capacity per direction, shared by all connections: 40MiB/s,
    /// 20MB/s (decimal), 500KiB/s, or bytes a second.
    #[arg(long, value_parser = parse_rate)]
    pub rate: Option<f64>,
    /// One-way delay added in each direction: 10ms.
    #[arg(long, value_parser = parse_secs)]
    pub delay: Option<f64>,
    /// Uniform ± jitter on the delay: 2ms.
    #[arg(long, value_parser = parse_secs)]
    pub jitter: Option<f64>,
    /// Chunk "loss" (an extra 200 ms): 0.1%.
    #[arg(long, value_parser = parse_fraction)]
    pub loss: Option<f64>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The workload.
    #[arg(value_enum)]
    pub workload: Workload,
    /// nfs4://HOST:PORT/PATH[?persist=1&pnfs=off], nfs4.0://HOST:PORT/PATH,
    /// nfs3://HOST:PORT/PATH[?mountport=N&nlmport=M] or dir:/PATH. Over
    /// nfs4:// READ and WRITE go straight to the data servers when the
    /// server hands out flexible-file layouts (pNFS); ?pnfs=off sends
    /// them through the server. nfs4.0:// speaks NFSv4.0 (no session,
    /// per-owner sequence ids; no callback path, so no delegations).
    #[arg(long)]
    pub target: String,
    /// Clients, each with its own client ID, session and TCP connection
    /// (default 1; deleg-recall 2).
    #[arg(long)]
    pub clients: Option<u32>,
    /// Concurrent workers per client.
    #[arg(long, default_value_t = 1)]
    pub threads: u32,
    /// Measured period (time-based workloads) or cap (fixed-work ones):
    /// 10s, 500ms, 2m.
    #[arg(long, default_value = "10s", value_parser = parse_secs)]
    pub duration: f64,
    /// Time-based workloads: measure this many operations in all instead
    /// of for --duration, which then only caps the run: the same work
    /// however fast the machine.
    #[arg(long)]
    pub ops: Option<u64>,
    /// Runs (each with fresh sessions); mean and 95% CI across them.
    #[arg(long, default_value_t = 1)]
    pub runs: u32,
    /// Warm-up before each measured period (time-based workloads).
    #[arg(long, default_value = "2s", value_parser = parse_secs)]
    pub warmup: f64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Bytes per READ/WRITE: 4k .. 1m.
    #[arg(long, value_parser = parse_size)]
    pub io_size: Option<u64>,
    /// Number of files (smallfile-read, locked-read, deleg-recall, dirlist;
    /// create: per client; large-file workloads: files of --file-size,
    /// default 1, worker w using file w mod N).
    #[arg(long)]
    pub files: Option<u64>,
    /// File size (large-file workloads: the one file; others: each file).
    #[arg(long, value_parser = parse_size)]
    pub file_size: Option<u64>,
    /// FILE_SYNC writes (dir: fdatasync after each write).
    #[arg(long)]
    pub sync: bool,
    /// locked-read: open-lock-read-unlock-close cycles per file.
    #[arg(long, default_value_t = 10)]
    pub iterations: u32,
    /// One-way delay added by an in-process proxy per client: 10ms.
    #[arg(long, value_parser = parse_secs)]
    pub delay: Option<f64>,
    /// Uniform ± jitter on the delay: 2ms.
    #[arg(long, value_parser = parse_secs)]
    pub jitter: Option<f64>,
    /// Chunk "loss" (an extra 200 ms): 0.1%.
    #[arg(long, value_parser = parse_fraction)]
    pub loss: Option<f64>,
    /// Operations per second offered in all, spread evenly over the
    /// workers (nhfsstone; default: as fast as the replies come).
    #[arg(long)]
    pub rate: Option<f64>,
    /// mix (nhfsstone): the operation mix, as "getattr=13,lookup=34,..."
    /// (percentages adding up to 100; getattr, setattr, lookup, readlink,
    /// read, write, create, remove, readdir, fsstat) or a file holding
    /// one (default: the Legato paper's Figure 1 mix).
    #[arg(long, value_name = "MIX|FILE")]
    pub mix: Option<String>,
    /// mix: offer these loads in turn, operations per second
    /// ("500,1000,2000"), and print the load-response curve and its knee.
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["rate", "load_sweep"])]
    pub load: Vec<f64>,
    /// mix: find the saturation throughput (a run as fast as the replies
    /// come), then offer 10%, 20% ... 125% of it: the load-response curve
    /// and its knee.
    #[arg(long, conflicts_with = "rate")]
    pub load_sweep: bool,
    /// Run the workload at each of these one-way delays in turn
    /// ("0,1ms,5ms,10ms,40ms"; the in-process proxy, as --delay) and
    /// print throughput against delay.
    #[arg(long, value_delimiter = ',', value_parser = parse_secs, conflicts_with_all = ["delay", "load", "load_sweep"])]
    pub delay_sweep: Vec<f64>,
    /// Keep the files `create` made.
    #[arg(long)]
    pub keep: bool,
    /// A server process on this machine (its PID): its CPU time over the
    /// measured period (utime + stime of all its threads, from
    /// /proc/PID/stat) is reported per unit of work.
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// With --server-pid: the server's CPU time is read in nanoseconds
    /// from this cgroup holding it (cgroup v1 cpuacct.usage_user and
    /// usage_sys, or v2 cpu.stat), where /proc counts clock ticks.
    #[arg(long, requires = "server_pid")]
    pub server_cgroup: Option<PathBuf>,
    /// Write the results as JSON.
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
    /// Write the results as CSV.
    #[arg(long)]
    pub csv: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Result files (JSON).
    #[arg(required = true)]
    pub results: Vec<PathBuf>,
    #[arg(short = 'o', long, default_value = "report.html")]
    pub output: PathBuf,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    pub a: PathBuf,
    pub b: PathBuf,
}

/// "10s", "250ms", "2m", "1h", "30us", or plain seconds.
pub fn parse_secs(s: &str) -> std::result::Result<f64, String> {
    let s = s.trim();
    let (num, mul) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("bad duration {s:?} (try 10s, 250ms, 2m)"))?;
    if v < 0.0 || !v.is_finite() {
        return Err(format!("bad duration {s:?}"));
    }
    Ok(v * mul)
}

/// "4096", "4k", "4KiB", "1m", "1MiB", "2g" (binary multiples).
pub fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let t = t.trim_end_matches("ib").trim_end_matches('b');
    let (num, mul) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('m') => (&t[..t.len() - 1], 1 << 20),
        Some('g') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("bad size {s:?} (try 4k, 1m, 256MiB)"))?;
    if v < 0.0 || !v.is_finite() {
        return Err(format!("bad size {s:?}"));
    }
    Ok((v * mul as f64) as u64)
}

/// A rate in bytes a second: "40MiB/s", "500KiB/s", "1GiB/s" (binary),
/// "20MB/s", "100kB/s" (decimal), "40m" (binary, as sizes), or a number.
pub fn parse_rate(s: &str) -> std::result::Result<f64, String> {
    let t = s.trim();
    let t = t.strip_suffix("/s").unwrap_or(t);
    let lower = t.to_ascii_lowercase();
    let decimal = ["kb", "mb", "gb"].iter().any(|u| lower.ends_with(u));
    let v = if decimal {
        let (num, mul) = match &lower[lower.len() - 2..] {
            "kb" => (&lower[..lower.len() - 2], 1e3),
            "mb" => (&lower[..lower.len() - 2], 1e6),
            _ => (&lower[..lower.len() - 2], 1e9),
        };
        num.trim()
            .parse::<f64>()
            .map_err(|_| format!("bad rate {s:?} (try 40MiB/s, 20MB/s)"))?
            * mul
    } else {
        parse_size(t).map_err(|_| format!("bad rate {s:?} (try 40MiB/s, 20MB/s)"))? as f64
    };
    if !(v > 0.0 && v.is_finite()) {
        return Err(format!("bad rate {s:?}: must be above 0"));
    }
    Ok(v)
}

/// "0.1%" or "0.001".
pub fn parse_fraction(s: &str) -> std::result::Result<f64, String> {
    let s = s.trim();
    let (num, div) = match s.strip_suffix('%') {
        Some(n) => (n, 100.0),
        None => (s, 1.0),
    };
    let v: f64 = num.parse().map_err(|_| format!("bad fraction {s:?}"))?;
    let v = v / div;
    if !(0.0..=1.0).contains(&v) {
        return Err(format!("{s:?} is not between 0 and 100%"));
    }
    Ok(v)
}

impl RunArgs {
    pub fn params(&self) -> Result<Params> {
        let io_size = match self.io_size {
            Some(n) => {
                Some(u32::try_from(n).map_err(|_| Error::Msg("--io-size too large".into()))?)
            }
            None => None,
        };
        let mut p = Params::new(
            self.workload,
            self.target.clone(),
            Overrides {
                clients: self.clients,
                io_size,
                files: self.files,
                file_size: self.file_size,
            },
        );
        p.threads = self.threads;
        p.duration_s = self.duration;
        p.ops = self.ops.unwrap_or(0);
        p.warmup_s = self.warmup;
        p.runs = self.runs.max(1);
        p.seed = self.seed;
        p.sync = self.sync;
        p.iterations = self.iterations;
        p.delay_ms = self.delay.unwrap_or(0.0) * 1e3;
        p.jitter_ms = self.jitter.unwrap_or(0.0) * 1e3;
        p.loss = self.loss.unwrap_or(0.0);
        p.keep = self.keep;
        p.server_pid = self.server_pid;
        p.server_cgroup = self.server_cgroup.clone();
        p.rate = self.rate.unwrap_or(0.0);
        p.mix = self
            .mix
            .as_deref()
            .map(crate::workload::parse_mix)
            .transpose()?;
        if (!self.load.is_empty() || self.load_sweep) && p.workload != Workload::Nhfsstone {
            return Err(Error::Msg(
                "--load and --load-sweep apply to the mix (nhfsstone) workload".into(),
            ));
        }
        // Validates the target syntax early.
        let _: crate::target::Target = p.target.parse()?;
        Ok(p)
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// Prints to stdout; a closed pipe (`| head`) is not an error.
fn out(s: &str) {
    use std::io::Write;
    let _ = std::io::stdout().write_all(s.as_bytes());
}

fn write(path: &PathBuf, s: &str) -> Result<()> {
    std::fs::write(path, s).map_err(|e| Error::Msg(format!("{}: {e}", path.display())))
}

/// `ferrite bench report` of files of one kind: each read with `load`,
/// the page made by `html`.
fn report_of<T>(
    a: &ReportArgs,
    load: fn(&std::path::Path) -> Result<T>,
    html: fn(&[(String, T)]) -> String,
) -> Result<()> {
    let mut all = Vec::new();
    for f in &a.results {
        all.push((f.display().to_string(), load(f)?));
    }
    write(&a.output, &html(&all))?;
    out(&format!("report: {}\n", a.output.display()));
    Ok(())
}

/// Runs a `ferrite bench` command.
pub fn main(args: BenchArgs) -> Result<()> {
    match args.cmd {
        BenchCmd::Run(a) if !a.delay_sweep.is_empty() || !a.load.is_empty() || a.load_sweep => {
            let p = a.params()?;
            let s = runtime()?.block_on(async {
                if !a.delay_sweep.is_empty() {
                    let ms: Vec<f64> = a.delay_sweep.iter().map(|s| s * 1e3).collect();
                    crate::sweep::run_delays(&p, &ms).await
                } else if a.load_sweep {
                    crate::sweep::run(&p, crate::sweep::Loads::Sweep).await
                } else {
                    crate::sweep::run(&p, crate::sweep::Loads::Given(a.load.clone())).await
                }
            })?;
            out(&crate::sweep::render(&s));
            if let Some(o) = &a.output {
                crate::files::save_json(o, &s)?;
                out(&format!("results: {}\n", o.display()));
            }
            Ok(())
        }
        BenchCmd::Run(a) => {
            let p = a.params()?;
            let res = runtime()?.block_on(runner::run(&p))?;
            out(&res.render_summary());
            if let Some(o) = &a.output {
                write(o, &res.to_json()?)?;
                out(&format!("results: {}\n", o.display()));
            }
            if let Some(c) = &a.csv {
                write(c, &res.to_csv())?;
                out(&format!("csv: {}\n", c.display()));
            }
            Ok(())
        }
        BenchCmd::Prepare(a) => {
            let p = a.params()?;
            runtime()?.block_on(runner::prepare(&p))
        }
        BenchCmd::Report(a) if a.results.iter().any(|f| crate::sweep::is_sweep(f)) => {
            report_of(&a, crate::sweep::load, crate::report::sweep_html)
        }
        BenchCmd::Report(a) if a.results.iter().any(|f| crate::experiment::is_outcome(f)) => {
            report_of(&a, crate::experiment::load, crate::report::design_html)
        }
        BenchCmd::Report(a) => {
            let mut all = Vec::new();
            for f in &a.results {
                all.push((f.display().to_string(), Results::load(f)?));
            }
            write(&a.output, &crate::report::html(&all))?;
            out(&format!("report: {}\n", a.output.display()));
            Ok(())
        }
        BenchCmd::Compare(a) => {
            let (ra, rb) = (Results::load(&a.a)?, Results::load(&a.b)?);
            out(&crate::compare::compare(&ra, &rb));
            Ok(())
        }
        BenchCmd::NullServer(a) if a.threaded => crate::floor::run(a.listen),
        BenchCmd::NullServer(a) => runtime()?.block_on(crate::nullserver::run(a.listen)),
        BenchCmd::Proxy(a) => {
            let cfg = crate::proxy::DelayConfig {
                delay: std::time::Duration::from_secs_f64(a.delay.unwrap_or(0.0)),
                jitter: std::time::Duration::from_secs_f64(a.jitter.unwrap_or(0.0)),
                loss: a.loss.unwrap_or(0.0),
                seed: 1,
            };
            runtime()?.block_on(crate::proxy::run_standalone(a.listen, a.to, cfg, a.rate))
        }
        BenchCmd::Design(a) => crate::experiment::main(&a.file, a.output.as_ref(), a.plan),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_secs("10s").unwrap(), 10.0);
        assert!((parse_secs("250ms").unwrap() - 0.25).abs() < 1e-12);
        assert_eq!(parse_secs("2m").unwrap(), 120.0);
        assert_eq!(parse_secs("3").unwrap(), 3.0);
        assert!(parse_secs("x").is_err());
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
        assert_eq!(parse_size("1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_size("256m").unwrap(), 256 << 20);
        assert_eq!(parse_size("100").unwrap(), 100);
        assert!((parse_fraction("0.1%").unwrap() - 0.001).abs() < 1e-15);
        assert_eq!(parse_fraction("0.5").unwrap(), 0.5);
        assert!(parse_fraction("150%").is_err());
        assert_eq!(parse_rate("40MiB/s").unwrap(), 40.0 * 1048576.0);
        assert_eq!(parse_rate("40m").unwrap(), 40.0 * 1048576.0);
        assert_eq!(parse_rate("20MB/s").unwrap(), 20e6);
        assert_eq!(parse_rate("100kB/s").unwrap(), 1e5);
        assert_eq!(parse_rate("512KiB/s").unwrap(), 524288.0);
        assert_eq!(parse_rate("1000").unwrap(), 1000.0);
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("fast").is_err());
    }
}
