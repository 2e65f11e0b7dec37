//! How far is `ferrite bench`'s own client from being the bottleneck?
//!
//! Runs the same randread workload (4 KiB READs from a 64 MiB file) with
//! 1, 4 and 16 threads against
//!
//! * the *null server* (`ferrite bench null-server`, `bench::nullserver`):
//!   canned NFSv4.1 replies, no file system, so its throughput is the
//!   ceiling of the client + RPC transport + loopback, and
//! * a real Ferrite (`ferrite serve` on a scratch directory),
//!
//! and prints (and writes to `target/client-overhead.md`) a table of both
//! throughputs, the client's CPU use against the null server and the ratio
//! Ferrite / null. With two or more CPUs the servers are pinned to CPU 1
//! and the benchmark client to CPU 0 (`taskset`). Each server's own CPU
//! time (from `/proc/PID/stat`) is reported per READ too, which tells
//! whether the server or the client saturated its core.
//!
//! ```sh
//! cargo bench -p ferrite --bench client_overhead
//! FERRITE_OVERHEAD_DURATION=10s FERRITE_OVERHEAD_RUNS=5 cargo bench -p ferrite --bench client_overhead
//! ```
//!
//! Environment: `FERRITE_OVERHEAD_DURATION` (measured period per run,
//! default 5s), `FERRITE_OVERHEAD_WARMUP` (1s), `FERRITE_OVERHEAD_RUNS`
//! (3), `FERRITE_OVERHEAD_THREADS` (1,4,16). The result files are kept in
//! `target/client-overhead/`.

use std::fmt::Write as _;
use std::fs::File;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bench::results::Results;
use bench::stats::{ratio, Summary};

const BIN: &str = env!("CARGO_BIN_EXE_ferrite");
const FILE_SIZE: &str = "64m";
const IO_SIZE: &str = "4k";

/// A server process, stopped (SIGTERM, then SIGKILL) when dropped — also
/// when the benchmark panics.
struct Server {
    name: &'static str,
    child: Child,
    addr: SocketAddr,
    log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // SAFETY: kill(2) on the pid of a child we have not reaped.
            unsafe {
                libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
            }
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(3) {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

impl Server {
    /// Starts `ferrite ARGS --listen 127.0.0.1:PORT` (pinned to `cpu`) and
    /// waits until it accepts connections.
    fn start(name: &'static str, cpu: Option<u32>, args: &[&str], logdir: &Path) -> Server {
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").expect("a free port");
            l.local_addr().expect("its address").port()
        };
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let log = logdir.join(format!("{name}.log"));
        let out = File::create(&log).expect("server log");
        let err = out.try_clone().expect("server log");
        let mut cmd = ferrite(cpu);
        cmd.args(args)
            .arg("--listen")
            .arg(addr.to_string())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name}: {e}"));
        let mut s = Server {
            name,
            child,
            addr,
            log,
        };
        let t = Instant::now();
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return s;
            }
            if let Ok(Some(status)) = s.child.try_wait() {
                panic!(
                    "{name} exited ({status}):\n{}",
                    std::fs::read_to_string(&s.log).unwrap_or_default()
                );
            }
            if t.elapsed() > Duration::from_secs(30) {
                panic!("{name} did not listen on {addr} within 30 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn url(&self) -> String {
        format!("nfs4://{}/", self.addr)
    }

    /// User + system CPU time of the server process so far.
    fn cpu(&self) -> Duration {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // Fields after "(comm)": state is field 3; utime and stime are 14, 15.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let f: Vec<u64> = rest
            .split_whitespace()
            .skip(11)
            .take(2)
            .filter_map(|x| x.parse().ok())
            .collect();
        // SAFETY: sysconf has no preconditions.
        let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
        let ticks: u64 = f.iter().sum();
        Duration::from_nanos(ticks * 1_000_000_000 / tick)
    }
}

/// `ferrite`, under `taskset -c CPU` when pinning.
fn ferrite(cpu: Option<u32>) -> Command {
    match cpu {
        Some(c) => {
            let mut cmd = Command::new("taskset");
            cmd.arg("-c").arg(c.to_string()).arg(BIN);
            cmd
        }
        None => Command::new(BIN),
    }
}

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// Runs `ferrite bench ARGS` (pinned to `cpu`), failing loudly.
fn bench(cpu: Option<u32>, args: &[&str]) {
    let out = ferrite(cpu)
        .arg("bench")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("running ferrite bench");
    if !out.status.success() {
        panic!(
            "ferrite bench {} failed ({}):\n{}\n{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Busy and total time of each CPU so far, in ticks (`/proc/stat`).
fn cpu_ticks() -> Vec<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    stat.lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .map(|l| {
            // user nice system idle iowait irq softirq steal
            let v: Vec<u64> = l
                .split_whitespace()
                .skip(1)
                .take(8)
                .filter_map(|x| x.parse().ok())
                .collect();
            let total: u64 = v.iter().sum();
            let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
            (total - idle, total)
        })
        .collect()
}

/// User + system time of the children this process has waited for.
fn children_cpu() -> Duration {
    // SAFETY: an all-zero rusage is valid; getrusage fills it in.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// One `ferrite bench run` against one server: its results and where the
/// CPU time went during the whole invocation (connects, warm-ups,
/// measured periods and teardowns of every run).
struct Measured {
    res: Results,
    /// The server's CPU time per READ (warm-up and measured READs).
    server_us_per_read: f64,
    /// CPU time of the benchmark process and of the server, in cores
    /// (CPU time ÷ wall time).
    client_cores: f64,
    server_cores: f64,
    /// How busy each CPU was, whoever used it (0..1).
    busy: Vec<f64>,
}

fn measure(
    srv: &Server,
    cpu: Option<u32>,
    threads: u32,
    (duration, warmup, runs): (&str, &str, &str),
    out: &Path,
) -> Measured {
    let json = out.join(format!("{}-t{threads}.json", srv.name));
    let url = srv.url();
    let t = threads.to_string();
    let json_s = json.display().to_string();
    let (srv0, kids0, ticks0, t0) = (srv.cpu(), children_cpu(), cpu_ticks(), Instant::now());
    bench(
        cpu,
        &[
            "run",
            "randread",
            "--target",
            &url,
            "--io-size",
            IO_SIZE,
            "--file-size",
            FILE_SIZE,
            "--threads",
            &t,
            "--duration",
            duration,
            "--warmup",
            warmup,
            "--runs",
            runs,
            "-o",
            &json_s,
        ],
    );
    let wall = t0.elapsed().as_secs_f64();
    let server_cpu = srv.cpu().saturating_sub(srv0);
    let client_cpu = children_cpu().saturating_sub(kids0);
    let busy = cpu_ticks()
        .iter()
        .zip(&ticks0)
        .map(|(b, a)| (b.0 - a.0) as f64 / (b.1 - a.1).max(1) as f64)
        .collect();
    let res = Results::load(&json).expect("reading the results");
    let reads: u64 = res
        .runs
        .iter()
        .flat_map(|r| r.nfs.values())
        .map(|p| p.op("READ"))
        .sum();
    Measured {
        res,
        server_us_per_read: server_cpu.as_secs_f64() * 1e6 / reads.max(1) as f64,
        client_cores: client_cpu.as_secs_f64() / wall,
        server_cores: server_cpu.as_secs_f64() / wall,
        busy,
    }
}

fn summary(r: &Results, k: &str) -> Summary {
    r.summary
        .get(k)
        .copied()
        .unwrap_or_else(|| Summary::of(&[]))
}

fn pm(s: &Summary) -> String {
    if s.ci95.is_finite() {
        format!("{} ± {}", thousands(s.mean), thousands(s.ci95))
    } else {
        thousands(s.mean)
    }
}

fn thousands(x: f64) -> String {
    let n = x.round() as i64;
    let s = n.abs().to_string();
    let mut o = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            o.push(',');
        }
        o.push(c);
    }
    if n < 0 {
        format!("-{o}")
    } else {
        o
    }
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` does not: only
    // check that this builds and starts then.
    if !std::env::args().any(|a| a == "--bench") {
        println!("client_overhead: run with `cargo bench -p ferrite --bench client_overhead`");
        return;
    }
    let duration = env_or("FERRITE_OVERHEAD_DURATION", "5s");
    let warmup = env_or("FERRITE_OVERHEAD_WARMUP", "1s");
    let runs = env_or("FERRITE_OVERHEAD_RUNS", "3");
    let threads: Vec<u32> = env_or("FERRITE_OVERHEAD_THREADS", "1,4,16")
        .split(',')
        .map(|t| t.trim().parse().expect("FERRITE_OVERHEAD_THREADS: numbers"))
        .collect();

    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let taskset = Command::new("taskset")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let pin = cpus >= 2 && taskset;
    let (server_cpu, client_cpu) = if pin {
        (Some(1), Some(0))
    } else {
        (None, None)
    };

    let target_dir = Path::new(BIN)
        .parent()
        .and_then(Path::parent)
        .expect("the target directory")
        .to_path_buf();
    let out = target_dir.join("client-overhead");
    std::fs::create_dir_all(&out).expect("creating target/client-overhead");
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let export = scratch.path().join("export");
    let state = scratch.path().join("state");
    let load_before = loadavg();
    let started = Instant::now();

    let null = Server::start(
        "null-server",
        server_cpu,
        &["bench", "null-server"],
        scratch.path(),
    );
    let fe = Server::start(
        "ferrite",
        server_cpu,
        &[
            "serve",
            &export.display().to_string(),
            "--state-dir",
            &state.display().to_string(),
        ],
        scratch.path(),
    );
    eprintln!(
        "client_overhead: null server {}, Ferrite {}; {} CPUs, {}; randread {IO_SIZE} from {FILE_SIZE}, {duration} x {runs} runs (warm-up {warmup}); load {load_before}",
        null.addr,
        fe.addr,
        cpus,
        if pin {
            "servers on CPU 1, client on CPU 0"
        } else {
            "not pinned"
        }
    );
    bench(
        None,
        &[
            "prepare",
            "randread",
            "--target",
            &fe.url(),
            "--file-size",
            FILE_SIZE,
        ],
    );

    let mut rows = Vec::new();
    for &t in &threads {
        let cfg = (duration.as_str(), warmup.as_str(), runs.as_str());
        let n = measure(&null, client_cpu, t, cfg, &out);
        let f = measure(&fe, client_cpu, t, cfg, &out);
        let (ns, fs) = (summary(&n.res, "ops_per_s"), summary(&f.res, "ops_per_s"));
        eprintln!(
            "  threads {t:>2}: null {:>9.0} ops/s, Ferrite {:>9.0} ops/s",
            ns.mean, fs.mean
        );
        rows.push((t, n, f));
    }
    let load_after = loadavg();
    drop(fe);
    drop(null);

    let mut md = String::new();
    let _ = writeln!(
        md,
        "randread, {IO_SIZE} READs from a {FILE_SIZE} file, {duration} measured × {runs} runs \
         (warm-up {warmup}), {cpus} CPUs, {}; load average {load_before} before, \
         {load_after} after; {:.0} s in all.\n",
        if pin {
            "servers pinned to CPU 1, client to CPU 0"
        } else {
            "nothing pinned"
        },
        started.elapsed().as_secs_f64()
    );
    let _ = writeln!(
        md,
        "| threads | null server ops/s (± 95% CI) | client CPU % (null) | client CPU µs/op (null) \
         | Ferrite ops/s (± 95% CI) | client CPU µs/op (Ferrite) | Ferrite / null (95% CI) |"
    );
    let _ = writeln!(md, "| --- | --- | --- | --- | --- | --- | --- |");
    for (t, n, f) in &rows {
        let (ns, fs) = (summary(&n.res, "ops_per_s"), summary(&f.res, "ops_per_s"));
        let r = ratio(&ns, &fs);
        let ci = if r.low.is_finite() {
            format!("{:.2} [{:.2}, {:.2}]", r.ratio, r.low, r.high)
        } else {
            format!("{:.2}", r.ratio)
        };
        let _ = writeln!(
            md,
            "| {t} | {} | {:.0}% | {:.1} | {} | {:.1} | {ci} |",
            pm(&ns),
            summary(&n.res, "cpu_percent").mean,
            summary(&n.res, "cpu_us_per_op").mean,
            pm(&fs),
            summary(&f.res, "cpu_us_per_op").mean,
        );
    }
    let _ = writeln!(
        md,
        "\nWhere the CPU time went during each `bench run` (every run, connects and \
         warm-ups included): the server's CPU time per READ (`/proc/PID/stat`), \
         the client's and the server's CPU time in cores (CPU time ÷ wall time), \
         and how busy each CPU was whoever used it (`/proc/stat`; the rest is \
         other processes).\n"
    );
    let ncpu = rows.first().map_or(0, |(_, n, _)| n.busy.len());
    let _ = write!(
        md,
        "| threads | server | server CPU µs/READ | client cores | server cores |"
    );
    for c in 0..ncpu {
        let _ = write!(md, " CPU {c} busy |");
    }
    let _ = write!(md, "\n| --- | --- | --- | --- | --- |");
    for _ in 0..ncpu {
        let _ = write!(md, " --- |");
    }
    let _ = writeln!(md);
    for (t, n, f) in &rows {
        for (name, m) in [("null", n), ("Ferrite", f)] {
            let _ = write!(
                md,
                "| {t} | {name} | {:.1} | {:.2} | {:.2} |",
                m.server_us_per_read, m.client_cores, m.server_cores
            );
            for b in &m.busy {
                let _ = write!(md, " {:.0}% |", b * 100.0);
            }
            let _ = writeln!(md);
        }
    }
    print!("\n{md}");
    let path = target_dir.join("client-overhead.md");
    std::fs::write(&path, &md).expect("writing client-overhead.md");
    println!(
        "\ntable: {}\nresults: {}/{{null-server,ferrite}}-tN.json",
        path.display(),
        out.display()
    );
}
