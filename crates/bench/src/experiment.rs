//! `ferrite bench design FILE`: an experiment planned as a two-level
//! factorial design ([`crate::design`]), run with the benchmark's
//! workloads, and analysed: each main effect and interaction with its
//! confidence interval, and how much of the variation each explains.
//!
//! The file (TOML) names the workload, the response (a metric of the
//! results, such as `ops_per_s` or `latency_p50_us`), the replications,
//! the design (full, or fractional by `fraction = p` or `generators`),
//! and each factor's two levels as settings of a run: `target` (NFS
//! version: nfs3:// or nfs4://), `threads`, `clients`, `io_size`,
//! `delay`, `jitter`, `files`, `file_size`, `sync`, `rate`, and
//! `server_args`, appended to the file's `server` command: a server
//! factor (delegations, a write log) makes the run start that server
//! (and stop the one before) when its command changes.
//!
//! Runs go in a random order (from `seed`), replication after
//! replication, so that a drift in time does not pass for an effect.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::cli::{parse_secs, parse_size};
use crate::design::{analyse, letter, word_name, Analysis, Design};
use crate::results::Results;
use crate::rng::Rng;
use crate::workload::{Overrides, Params, Workload};
use crate::{runner, Error, Result};

/// The experiment file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub workload: Workload,
    /// The target of every run unless a level sets it.
    pub target: String,
    /// The metric analysed: any of a run's metrics (`ops_per_s`,
    /// `mb_per_s`, `latency_mean_us`, `latency_p50_us`, `latency_p99_us`,
    /// `server_cpu_us_per_op` with `server` ...).
    pub response: String,
    /// "none" (an additive model: effects in the response's unit) or
    /// "log" (a multiplicative one, Jain §18.7: effects on log10 of the
    /// response, for responses spanning orders of magnitude, such as
    /// throughput with and without a delay; an effect e multiplies the
    /// response by 10^(2e) from its low level to its high one).
    #[serde(default)]
    pub transform: Transform,
    #[serde(default = "two")]
    pub replications: u32,
    /// Measured seconds of each run ("10s"); with `ops`, the cap.
    #[serde(default = "ten_s")]
    pub duration: String,
    /// Measured operations of each run in all, instead of a duration
    /// (time-based workloads; 0: none): the same work in every run,
    /// however fast the machine.
    #[serde(default)]
    pub ops: u64,
    #[serde(default = "one_s")]
    pub warmup: String,
    /// 0.95 unless given.
    #[serde(default = "ninety_five")]
    pub confidence: f64,
    #[serde(default = "one")]
    pub seed: u64,
    /// A fractional design: p, with the generators of highest
    /// resolution.
    #[serde(default)]
    pub fraction: u32,
    /// A fractional design with these generators ("D=AB", one per
    /// generated factor: the last factors, in order).
    #[serde(default)]
    pub generators: Vec<String>,
    /// The least resolution the fractional design must have (III: main
    /// effects clear of each other; IV: also of two-factor
    /// interactions; V: two-factor interactions clear of each other);
    /// a design below it is refused.
    pub resolution: Option<usize>,
    /// A server to start for the runs (a command line; each level's
    /// `server_args` are appended), stopped at the end.
    pub server: Option<String>,
    /// The defaults of every run.
    #[serde(default)]
    pub base: Level,
    #[serde(rename = "factor")]
    pub factors: Vec<Factor>,
}

/// How responses are analysed ([`Plan::transform`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transform {
    #[default]
    None,
    Log,
}

fn two() -> u32 {
    2
}
fn one() -> u64 {
    1
}
fn ten_s() -> String {
    "10s".into()
}
fn one_s() -> String {
    "1s".into()
}
fn ninety_five() -> f64 {
    0.95
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Factor {
    pub name: String,
    pub low: Level,
    pub high: Level,
}

/// What a level sets; unset: the base's, else the workload's default.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Level {
    /// A name for the level in the report ("NFSv3", "5 ms").
    pub label: Option<String>,
    pub target: Option<String>,
    pub threads: Option<u32>,
    pub clients: Option<u32>,
    pub io_size: Option<String>,
    pub delay: Option<String>,
    pub jitter: Option<String>,
    pub files: Option<u64>,
    pub file_size: Option<String>,
    pub sync: Option<bool>,
    pub rate: Option<f64>,
    pub server_args: Option<String>,
}

impl Level {
    /// What it sets, as "threads 8, delay 5ms"; "defaults" if nothing.
    fn settings(&self) -> String {
        let mut out = Vec::new();
        let mut add = |what: &str, v: Option<String>| {
            if let Some(v) = v {
                out.push(format!("{what} {v}"));
            }
        };
        add("target", self.target.clone());
        add("threads", self.threads.map(|v| v.to_string()));
        add("clients", self.clients.map(|v| v.to_string()));
        add("io_size", self.io_size.clone());
        add("delay", self.delay.clone());
        add("jitter", self.jitter.clone());
        add("files", self.files.map(|v| v.to_string()));
        add("file_size", self.file_size.clone());
        add("sync", self.sync.map(|v| v.to_string()));
        add("rate", self.rate.map(|v| v.to_string()));
        add("server", self.server_args.clone().map(|a| format!("+ {a}")));
        if out.is_empty() {
            "defaults".into()
        } else {
            out.join(", ")
        }
    }

    /// `self` with `over`'s settings where it has them.
    fn and(&self, over: &Level) -> Level {
        macro_rules! pick {
            ($($f:ident),*) => { Level { $($f: over.$f.clone().or_else(|| self.$f.clone()),)* } };
        }
        let mut l = pick!(
            label,
            target,
            threads,
            clients,
            io_size,
            delay,
            jitter,
            files,
            file_size,
            sync,
            rate,
            server_args
        );
        // Server arguments add up.
        l.server_args = match (&self.server_args, &over.server_args) {
            (Some(a), Some(b)) => Some(format!("{a} {b}")),
            (a, b) => b.clone().or_else(|| a.clone()),
        };
        l
    }
}

impl Plan {
    pub fn load(path: &Path) -> Result<Plan> {
        Plan::parse(&crate::files::text(path)?)
            .map_err(|e| Error::Msg(format!("{}: {e}", path.display())))
    }

    pub fn parse(text: &str) -> std::result::Result<Plan, String> {
        let p: Plan = toml::from_str(text).map_err(|e| e.to_string())?;
        let d = p.design()?;
        if p.replications == 0 {
            return Err("replications must be at least 1".into());
        }
        let server_args = p.base.server_args.is_some()
            || p.factors
                .iter()
                .any(|f| f.low.server_args.is_some() || f.high.server_args.is_some());
        if p.server.is_none() && server_args {
            return Err("server_args without a server command to add them to".into());
        }
        if !(p.confidence > 0.0 && p.confidence < 1.0) {
            return Err(format!(
                "confidence {} is not between 0 and 1",
                p.confidence
            ));
        }
        // Every run's settings must make a valid run.
        for row in 0..d.runs() {
            p.params(&d, row)
                .map_err(|e| format!("run {}: {e}", row + 1))?;
        }
        Ok(p)
    }

    pub fn design(&self) -> std::result::Result<Design, String> {
        let d = self.design_unchecked()?;
        if let (Some(want), Some(got)) = (self.resolution, d.resolution()) {
            if got < want {
                return Err(format!(
                    "this design has resolution {}, below the {} asked for: fewer generated factors (a smaller fraction), or other generators",
                    roman(got),
                    roman(want)
                ));
            }
        }
        Ok(d)
    }

    fn design_unchecked(&self) -> std::result::Result<Design, String> {
        let k = self.factors.len();
        if k == 0 {
            return Err("no [[factor]]".into());
        }
        match (self.fraction, self.generators.is_empty()) {
            (0, true) => Design::full(k),
            (_, false) => {
                let g: Vec<&str> = self.generators.iter().map(|s| s.as_str()).collect();
                if self.fraction != 0 && self.fraction as usize != g.len() {
                    return Err(format!(
                        "fraction = {} but {} generators",
                        self.fraction,
                        g.len()
                    ));
                }
                Design::fractional(k, &g)
            }
            (p, true) => Design::best(k, p as usize),
        }
    }

    /// The settings of run `row` of `d`.
    fn level(&self, d: &Design, row: usize) -> Level {
        d.levels(row)
            .iter()
            .zip(&self.factors)
            .fold(self.base.clone(), |acc, (&s, f)| {
                acc.and(if s > 0 { &f.high } else { &f.low })
            })
    }

    /// The benchmark parameters of run `row`.
    pub fn params(&self, d: &Design, row: usize) -> std::result::Result<Params, String> {
        let l = self.level(d, row);
        let size = |s: &Option<String>| s.as_deref().map(parse_size).transpose();
        let secs = |s: &Option<String>| s.as_deref().map(parse_secs).transpose();
        let io_size = size(&l.io_size)?
            .map(|n| u32::try_from(n).map_err(|_| "io_size too large".to_string()))
            .transpose()?;
        let mut p = Params::new(
            self.workload,
            l.target.clone().unwrap_or_else(|| self.target.clone()),
            Overrides {
                clients: l.clients,
                io_size,
                files: l.files,
                file_size: size(&l.file_size)?,
            },
        );
        p.threads = l.threads.unwrap_or(1);
        p.duration_s = parse_secs(&self.duration)?;
        p.ops = self.ops;
        p.warmup_s = parse_secs(&self.warmup)?;
        p.runs = 1;
        p.seed = self.seed;
        p.sync = l.sync.unwrap_or(false);
        p.delay_ms = secs(&l.delay)?.unwrap_or(0.0) * 1e3;
        p.jitter_ms = secs(&l.jitter)?.unwrap_or(0.0) * 1e3;
        p.rate = l.rate.unwrap_or(0.0);
        p.check().map_err(|e| e.to_string())?;
        let _: crate::target::Target = p.target.parse().map_err(|e: Error| e.to_string())?;
        Ok(p)
    }

    /// The server command of run `row`, if the plan has a server.
    fn server_command(&self, d: &Design, row: usize) -> Option<String> {
        let base = self.server.as_ref()?;
        Some(match self.level(d, row).server_args {
            Some(a) if !a.trim().is_empty() => format!("{base} {a}"),
            _ => base.clone(),
        })
    }

    fn level_label(f: &Factor, high: bool) -> String {
        let l = if high { &f.high } else { &f.low };
        l.label.clone().unwrap_or_else(|| l.settings())
    }

    /// Design `d` (this plan's) and its factors, before anything runs.
    pub fn describe(&self, d: &Design) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "2^{} design{}: {} runs x {} replications = {} runs of {} ({})",
            if d.p() == 0 {
                d.k.to_string()
            } else {
                format!("({}-{})", d.k, d.p())
            },
            d.resolution()
                .map_or(String::new(), |r| format!(", resolution {}", roman(r))),
            d.runs(),
            self.replications,
            d.runs() * self.replications as usize,
            self.workload,
            if self.ops > 0 {
                format!("{} operations, at most {}", self.ops, self.duration)
            } else {
                self.duration.clone()
            },
        );
        if d.p() > 0 {
            let base = d.base();
            let gens: Vec<String> = d
                .generators
                .iter()
                .enumerate()
                .map(|(j, &g)| format!("{}={}", letter(base + j), word_name(g)))
                .collect();
            let rel: Vec<String> = d.defining_relation().into_iter().map(word_name).collect();
            let _ = writeln!(
                o,
                "generators {}; defining relation {}",
                gens.join(", "),
                rel.join(" = ")
            );
        }
        for (i, f) in self.factors.iter().enumerate() {
            let _ = writeln!(
                o,
                "  {} {}: -1 = {}, +1 = {}",
                letter(i),
                f.name,
                Self::level_label(f, false),
                Self::level_label(f, true)
            );
        }
        o
    }
}

fn roman(r: usize) -> String {
    const R: [&str; 9] = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX"];
    R.get(r.wrapping_sub(1))
        .map_or_else(|| r.to_string(), |s| s.to_string())
}

/// A finished experiment: what was asked, what was measured, what it
/// means.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    pub schema: String,
    pub plan: Plan,
    /// Factor levels of each run, in standard order.
    pub levels: Vec<Vec<i8>>,
    /// The response of each run's replications.
    pub responses: Vec<Vec<f64>>,
    pub analysis: Analysis,
    /// Each measured run's full results, by run (from 1) and replication.
    pub results: BTreeMap<String, Results>,
}

/// A server a plan starts: stopped when dropped.
struct Server {
    command: String,
    child: Child,
}

impl Drop for Server {
    fn drop(&mut self) {
        // SIGTERM first, for a clean stop; then SIGKILL.
        let pid = self.child.id() as i32;
        // SAFETY: kill(2) on our own child.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_server(command: &str, target: &str, log: &Path) -> Result<Server> {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| Error::Msg(format!("{}: {e}", log.display())))?;
    let err = out
        .try_clone()
        .map_err(|e| Error::Msg(format!("{}: {e}", log.display())))?;
    let mut child = Command::new("sh")
        .args(["-c", &format!("exec {command}")])
        .stdout(out)
        .stderr(err)
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| Error::Msg(format!("starting {command:?}: {e}")))?;
    let t: crate::target::Target = target.parse()?;
    let at = match &t {
        crate::target::Target::Nfs4 { host, port, .. }
        | crate::target::Target::Nfs3 { host, port, .. } => {
            use std::net::ToSocketAddrs;
            (host.as_str(), *port).to_socket_addrs()?.next()
        }
        crate::target::Target::Dir(_) => None,
    };
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            return Err(Error::Msg(format!(
                "the server {command:?} exited ({st}) before it answered; see {}",
                log.display()
            )));
        }
        if let Some(a) = at {
            if std::net::TcpStream::connect_timeout(&a, Duration::from_millis(200)).is_ok() {
                break;
            }
        } else {
            break;
        }
        if Instant::now() > until {
            let _ = child.kill();
            return Err(Error::Msg(format!(
                "the server {command:?} did not answer at {target} within 30 s"
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(Server {
        command: command.to_string(),
        child,
    })
}

/// Runs `plan`, printing progress to standard error; `log` receives a
/// started server's output.
pub fn run(plan: &Plan, log: &Path) -> Result<Outcome> {
    let d = plan.design().map_err(Error::Msg)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let n = d.runs();
    let r = plan.replications as usize;
    let mut responses = vec![Vec::with_capacity(r); n];
    let mut results = BTreeMap::new();
    let mut rng = Rng::new(plan.seed);
    let mut server: Option<Server> = None;
    let mut prepared: Vec<(String, String)> = Vec::new();
    let total = n * r;
    let mut done = 0;
    for rep in 0..r {
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
        for row in order {
            let mut p = plan.params(&d, row).map_err(Error::Msg)?;
            let want = plan.server_command(&d, row);
            if want.as_deref() != server.as_ref().map(|s| s.command.as_str()) {
                drop(server.take());
                if let Some(cmd) = &want {
                    eprintln!("design: starting the server: {cmd}");
                    server = Some(start_server(cmd, &p.target, log)?);
                }
            }
            if let Some(s) = &server {
                p.server_pid = Some(s.child.id());
            }
            let key = (p.target.clone(), format!("{:?}", p.file_set()));
            if !prepared.contains(&key) {
                rt.block_on(runner::prepare(&p))?;
                prepared.push(key);
            }
            done += 1;
            eprintln!(
                "design: run {done} of {total}: row {} ({}), replication {}",
                row + 1,
                signs(&d.levels(row)),
                rep + 1
            );
            let res = rt.block_on(runner::run(&p))?;
            let unit = res.params.workload.unit_name();
            let m = Results::metrics(&res.runs[0], unit);
            let v = *m.get(&plan.response).ok_or_else(|| {
                Error::Msg(format!(
                    "response {:?} is not a metric of these runs (they have: {})",
                    plan.response,
                    m.keys().cloned().collect::<Vec<_>>().join(", ")
                ))
            })?;
            responses[row].push(v);
            results.insert(format!("run{}-rep{}", row + 1, rep + 1), res);
        }
    }
    drop(server);
    let analysis = analyse_plan(plan, &d, &responses)?;
    Ok(Outcome {
        schema: SCHEMA.into(),
        plan: plan.clone(),
        levels: (0..n).map(|row| d.levels(row)).collect(),
        responses,
        analysis,
        results,
    })
}

/// How an effect is named in reports: "mean" for I, "A (NFS version)"
/// for a main effect, the word ("AB") for an interaction.
pub fn effect_label(plan: &Plan, e: &str) -> String {
    if e == "I" {
        return "mean".into();
    }
    if e.len() == 1 {
        let i = e.as_bytes()[0].wrapping_sub(b'A') as usize;
        if let Some(f) = plan.factors.get(i) {
            return format!("{e} ({})", f.name);
        }
    }
    e.to_string()
}

/// Reads an outcome `ferrite bench design -o` wrote.
pub fn load(path: &Path) -> Result<Outcome> {
    crate::files::load_json(path)
}

/// Whether the JSON file at `path` is a design outcome.
pub fn is_outcome(path: &Path) -> bool {
    crate::files::schema(path).as_deref() == Some(SCHEMA)
}

const SCHEMA: &str = "ferrite-bench-design/1";

/// The analysis of `responses` as `plan` asks (its transform).
pub fn analyse_plan(plan: &Plan, d: &Design, responses: &[Vec<f64>]) -> Result<Analysis> {
    let y: Vec<Vec<f64>> = match plan.transform {
        Transform::None => responses.to_vec(),
        Transform::Log => {
            if responses.iter().flatten().any(|&v| v <= 0.0) {
                return Err(Error::Msg(format!(
                    "transform = \"log\" needs positive responses; {} has a zero or negative one",
                    plan.response
                )));
            }
            responses
                .iter()
                .map(|v| v.iter().map(|x| x.log10()).collect())
                .collect()
        }
    };
    analyse(d, &y, plan.confidence).map_err(Error::Msg)
}

fn signs(levels: &[i8]) -> String {
    levels
        .iter()
        .map(|&s| if s > 0 { '+' } else { '-' })
        .collect()
}

/// The outcome as text: the design, each run's responses, the effects.
pub fn render(o: &Outcome) -> String {
    let mut s = o
        .plan
        .design()
        .map_or_else(|_| String::new(), |d| o.plan.describe(&d));
    let _ = writeln!(
        s,
        "\nresponse: {}{}",
        o.plan.response,
        if o.plan.transform == Transform::Log {
            " (effects on its log10: 10^(2 x effect) is the factor from -1 to +1)"
        } else {
            ""
        }
    );
    let letters: String = (0..o.plan.factors.len()).map(letter).collect();
    let _ = writeln!(
        s,
        "  run  {letters:<w$}  mean        replications",
        w = letters.len()
    );
    for (row, (l, y)) in o.levels.iter().zip(&o.responses).enumerate() {
        let mean = y.iter().sum::<f64>() / y.len().max(1) as f64;
        let reps: Vec<String> = y.iter().map(|v| format!("{v:.4}")).collect();
        let _ = writeln!(
            s,
            "  {:>3}  {}  {mean:<10.4}  {}",
            row + 1,
            signs(l),
            reps.join(" ")
        );
    }
    let a = &o.analysis;
    let _ = writeln!(
        s,
        "\neffects ({}% confidence intervals; * where the interval leaves out 0):",
        a.confidence * 100.0
    );
    let name_of = |e: &str| effect_label(&o.plan, e);
    let mut rows: Vec<&crate::design::Effect> = a.effects.iter().collect();
    rows[1..].sort_by(|x, y| {
        y.variation
            .unwrap_or(0.0)
            .total_cmp(&x.variation.unwrap_or(0.0))
    });
    for e in rows {
        let ci =
            e.ci.map_or("-".to_string(), |(lo, hi)| format!("[{lo:.4}, {hi:.4}]"));
        let var = e
            .variation
            .map_or(String::new(), |v| format!("{:5.1}%", v * 100.0));
        let mark = if e.significant == Some(true) {
            "*"
        } else {
            " "
        };
        let aliases = if e.aliases.is_empty() {
            String::new()
        } else {
            format!("  = {}", e.aliases.join(" = "))
        };
        let _ = writeln!(
            s,
            "  {:<24} {:>12.4} {mark} {ci:<28} {var}{aliases}",
            name_of(&e.name),
            e.estimate
        );
    }
    if let Some(v) = a.error_variation {
        let _ = writeln!(
            s,
            "  {:<24} {:>12} {:<30} {:5.1}%",
            "error",
            "",
            "",
            v * 100.0
        );
    } else {
        let _ = writeln!(s, "  (one replication: no error estimate, no intervals)");
    }
    s
}

/// `ferrite bench design`: runs (or with `plan_only`, describes) the
/// experiment in `file`; the outcome as JSON to `output`.
pub fn main(file: &Path, output: Option<&PathBuf>, plan_only: bool) -> Result<()> {
    let plan = Plan::load(file)?;
    let d = plan.design().map_err(Error::Msg)?;
    if plan_only {
        let mut s = plan.describe(&d);
        let servers: Vec<Option<String>> = (0..d.runs())
            .map(|row| plan.server_command(&d, row))
            .collect();
        let varies = servers.iter().any(|c| *c != servers[0]);
        if let (false, Some(c)) = (varies, &servers[0]) {
            let _ = writeln!(s, "  server for every run: {c}");
        }
        for (row, server) in servers.iter().enumerate() {
            let p = plan.params(&d, row).map_err(Error::Msg)?;
            let _ = writeln!(
                s,
                "  run {:>3} {}: {} threads {} io {} delay {} ms{}",
                row + 1,
                signs(&d.levels(row)),
                p.target,
                p.threads,
                p.io_size,
                p.delay_ms,
                server
                    .as_ref()
                    .filter(|_| varies)
                    .map_or(String::new(), |c| format!("; server: {c}"))
            );
        }
        print!("{s}");
        return Ok(());
    }
    let log = output.map_or_else(
        || PathBuf::from("design-server.log"),
        |o| o.with_extension("server.log"),
    );
    let o = run(&plan, &log)?;
    print!("{}", render(&o));
    if let Some(path) = output {
        crate::files::save_json(path, &o)?;
        println!("results: {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
workload = "randread"
target = "nfs4://127.0.0.1:2049/"
response = "ops_per_s"
replications = 3
duration = "2s"
fraction = 1
server = "ferrite serve /srv/x --listen 127.0.0.1:2049"

[[factor]]
name = "NFS version"
low = { target = "nfs3://127.0.0.1:2049/?mountport=2049", label = "NFSv3" }
high = { label = "NFSv4.1" }

[[factor]]
name = "threads"
low = { threads = 1 }
high = { threads = 16 }

[[factor]]
name = "delay"
low = { delay = "0ms" }
high = { delay = "5ms" }

[[factor]]
name = "delegations"
low = {}
high = { server_args = "--delegations" }
"#;

    #[test]
    fn a_plan_maps_levels_to_runs() {
        let p = Plan::parse(FILE).unwrap();
        let d = p.design().unwrap();
        // 2^(4-1), D = ABC: resolution IV.
        assert_eq!((d.runs(), d.resolution()), (8, Some(4)));
        assert!(Plan::parse(&FILE.replace("fraction = 1", "fraction = 1\nresolution = 4")).is_ok());
        let desc = p.describe(&d);
        assert!(
            desc.starts_with("2^(4-1) design, resolution IV: 8 runs x 3 replications = 24 runs"),
            "{desc}"
        );
        assert!(desc.contains("D=ABC"), "{desc}");
        assert!(
            desc.contains("A NFS version: -1 = NFSv3, +1 = NFSv4.1"),
            "{desc}"
        );
        for row in 0..8 {
            let l = d.levels(row);
            let q = p.params(&d, row).unwrap();
            assert_eq!(q.target.starts_with("nfs3"), l[0] < 0);
            assert_eq!(q.threads, if l[1] > 0 { 16 } else { 1 });
            assert_eq!(q.delay_ms, if l[2] > 0 { 5.0 } else { 0.0 });
            let cmd = p.server_command(&d, row).unwrap();
            assert_eq!(cmd.ends_with("--delegations"), l[3] > 0, "{cmd}");
            assert_eq!(q.duration_s, 2.0);
        }
    }

    /// With transform = "log", effects are on log10 of the response: a
    /// response that doubles with A and is ten times larger with B shows
    /// A = log10(2)/2 and B = 1/2, and nothing else.
    #[test]
    fn a_log_transform_makes_factors_multiplicative() {
        let p = Plan::parse(&format!("transform = \"log\"\n{FILE}").replace("fraction = 1", ""))
            .unwrap();
        let d = Design::full(2).unwrap();
        let y: Vec<Vec<f64>> = (0..4)
            .map(|row| {
                let l = d.levels(row);
                let v =
                    100.0 * if l[0] > 0 { 2.0 } else { 1.0 } * if l[1] > 0 { 10.0 } else { 1.0 };
                vec![v, v]
            })
            .collect();
        let a = analyse_plan(&p, &d, &y).unwrap();
        let q: Vec<f64> = a.effects.iter().map(|e| e.estimate).collect();
        assert!((q[1] - 2f64.log10() / 2.0).abs() < 1e-12, "{q:?}");
        assert!((q[2] - 0.5).abs() < 1e-12, "{q:?}");
        assert!(q[3].abs() < 1e-12, "{q:?}");
        let zero = vec![vec![0.0, 1.0]; 4];
        assert!(analyse_plan(&p, &d, &zero).is_err());
    }

    #[test]
    fn bad_plans_are_refused() {
        for (bad, why) in [
            (
                FILE.replace("fraction = 1", "fraction = 4"),
                "does not exist",
            ),
            (FILE.replace("threads = 16", "threads = 0"), "run "),
            (FILE.replace("\"5ms\"", "\"soon\""), "bad duration"),
            (
                FILE.replace("replications = 3", "replications = 0"),
                "replications",
            ),
            (
                FILE.replace(
                    "fraction = 1",
                    "fraction = 1\ngenerators = [\"D=AB\", \"E=AC\"]",
                ),
                "generators",
            ),
            (
                FILE.replace("workload = \"randread\"", "workload = \"nothing\""),
                "unknown variant",
            ),
            (
                FILE.replace("name = \"threads\"", "name = \"threads\"\ncolour = 1"),
                "unknown field",
            ),
            (
                FILE.replace("fraction = 1", "fraction = 1\nresolution = 5"),
                "resolution IV, below the V",
            ),
            (
                FILE.replace("server = \"ferrite serve", "# server = \"ferrite serve"),
                "server_args without a server",
            ),
        ] {
            let e = Plan::parse(&bad).unwrap_err();
            assert!(e.contains(why), "{why}: {e}");
        }
    }
}
