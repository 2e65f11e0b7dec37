//! Running a benchmark: clients (each its own client ID, session and TCP
//! connection, optionally through a delay proxy), workers, phases,
//! per-second series, progress and CPU accounting.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{mpsc, watch};

use crate::fs::BenchFs;
use crate::nfs3::{Nfs3Addrs, Nfs3Fs};
use crate::nfs4::Nfs4Fs;
use crate::posix::PosixFs;
use crate::proxy::{DelayConfig, Proxy};
use crate::record::{cgroup_cpu_times, cpu_times, process_cpu_times, OpStats, Phase, Recorder};
use crate::results::{Cpu, Host, Results, RunResult, SeriesPoint, ServerCpu, SlotWait, SCHEMA};
use crate::rng::Rng;
use crate::target::Target;
use crate::workload::{self, in_phase, is_active, Counters, Params, Period, Worker, Workload};
use crate::{Error, Result};

/// A connected benchmark client and the proxies it goes through.
pub struct Conn {
    pub fs: Arc<dyn BenchFs>,
    _proxies: Vec<Proxy>,
}

fn owner_name(run: u32, client: u32) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "ferrite-bench-{}-{}-r{run}-c{client}-{nanos:x}",
        hostname(),
        std::process::id()
    )
}

pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

/// `addr`, or a delay proxy in front of it when `p` asks for one.
async fn via_proxy(
    p: &Params,
    run: u32,
    client: u32,
    addr: SocketAddr,
    proxies: &mut Vec<Proxy>,
) -> Result<SocketAddr> {
    if p.delay_ms <= 0.0 && p.jitter_ms <= 0.0 && p.loss <= 0.0 {
        return Ok(addr);
    }
    let px = Proxy::start(
        addr,
        DelayConfig {
            delay: Duration::from_secs_f64(p.delay_ms / 1e3),
            jitter: Duration::from_secs_f64(p.jitter_ms / 1e3),
            loss: p.loss,
            seed: p.seed
                ^ (u64::from(run) << 32)
                ^ u64::from(client)
                ^ ((proxies.len() as u64) << 48),
        },
    )
    .await?;
    let a = px.addr;
    proxies.push(px);
    Ok(a)
}

/// Connects client `client` of run `run` to `p.target`.
pub async fn connect(p: &Params, run: u32, client: u32, stats: Arc<OpStats>) -> Result<Conn> {
    let target: Target = p.target.parse()?;
    let mut proxies = Vec::new();
    let fs: Arc<dyn BenchFs> = match &target {
        Target::Dir(path) => {
            if p.delay_ms > 0.0 || p.jitter_ms > 0.0 || p.loss > 0.0 {
                return Err(Error::Msg(
                    "--delay/--jitter/--loss apply to network targets, not dir:".into(),
                ));
            }
            PosixFs::new(path.clone(), stats)?
        }
        Target::Nfs3 {
            path,
            mountport,
            nlmport,
            ..
        } => {
            let addr = target
                .addr()
                .await?
                .ok_or_else(|| Error::Msg("no address".into()))?;
            let locks = p.workload == Workload::LockedRead;
            let mut addrs = Nfs3Addrs::resolve(addr, *mountport, *nlmport, locks).await?;
            // MOUNT is setup only and goes direct; NFS and NLM are delayed.
            addrs.nfs = via_proxy(p, run, client, addrs.nfs, &mut proxies).await?;
            if let Some(n) = addrs.nlm {
                addrs.nlm = Some(via_proxy(p, run, client, n, &mut proxies).await?);
            }
            Nfs3Fs::connect(addrs, path, owner_name(run, client), stats)
                .await
                .map_err(|e| Error::Msg(format!("connecting to {}: {e}", p.target)))?
        }
        Target::Nfs4 {
            host,
            path,
            minor,
            persist,
            pnfs,
            sec,
            tls,
            tls_identity,
            ..
        } => {
            let addr = target
                .addr()
                .await?
                .ok_or_else(|| Error::Msg("no address".into()))?;
            let addr = via_proxy(p, run, client, addr, &mut proxies).await?;
            let gss = sec.map(|service| client::GssOptions {
                target: format!("nfs@{host}"),
                ccache: None,
                service,
            });
            let tls = match tls {
                Some(ca) => Some(
                    rpc::tls::TlsClient::from_pem(
                        ca,
                        host,
                        tls_identity
                            .as_ref()
                            .map(|(c, k)| (c.as_path(), k.as_path())),
                    )
                    .map_err(|e| Error::Msg(format!("tls={}: {e}", ca.display())))?,
                ),
                None => None,
            };
            let how = crate::nfs4::Nfs4Options {
                minor: *minor,
                persist: *persist,
                pnfs: *pnfs,
                sec: crate::nfs4::Security { gss, tls },
            };
            Nfs4Fs::connect(addr, path, how, owner_name(run, client), stats)
                .await
                .map_err(|e| Error::Msg(format!("connecting to {}: {e}", p.target)))?
        }
    };
    Ok(Conn {
        fs,
        _proxies: proxies,
    })
}

/// `ferrite bench prepare`: builds the workload's file set with one client.
pub async fn prepare(p: &Params) -> Result<()> {
    p.check()?;
    let stats = OpStats::new();
    let c = connect(p, 0, 0, stats).await?;
    let r = workload::prepare(c.fs.clone(), p).await;
    let _ = c.fs.shutdown().await;
    r
}

/// Runs every run of `p` and collects the results.
pub async fn run(p: &Params) -> Result<Results> {
    p.check()?;
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut runs = Vec::new();
    for r in 0..p.runs {
        runs.push(run_once(p, r).await?);
    }
    let mut res = Results {
        schema: SCHEMA.into(),
        workload: p.workload.name().into(),
        target: p.target.clone(),
        params: p.clone(),
        host: Host {
            hostname: hostname(),
            cores: cores(),
            ferrite_version: env!("CARGO_PKG_VERSION").into(),
        },
        started_unix,
        runs,
        summary: Default::default(),
    };
    res.summarize();
    Ok(res)
}

pub fn cores() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

enum Msg {
    Ready,
    /// A worker finished its first unit of the warm-up.
    Warmed,
    LoopDone {
        active: bool,
    },
}

/// One run: connect, set up, (warm up,) measure, tear down.
pub async fn run_once(p: &Params, run: u32) -> Result<RunResult> {
    let stats = OpStats::new();
    let rec = Recorder::new();
    let progress = std::io::stderr().is_terminal();
    let mut conns = Vec::new();
    for c in 0..p.clients {
        conns.push(connect(p, run, c, stats.clone()).await?);
    }
    let fs0 = conns[0].fs.clone();
    let set = Arc::new(in_phase(Phase::Setup, workload::resolve(&fs0, p)).await?);
    // create, nhfsstone, webserver (its logs): a directory per run and
    // one per client.
    let mut own_dirs = Vec::new();
    let mut run_dir = None;
    if matches!(
        p.workload,
        workload::Workload::Create | workload::Workload::Nhfsstone | workload::Workload::Webserver
    ) {
        let name = format!(
            "create-{}-{}-r{run}",
            std::process::id(),
            Rng::new(p.seed ^ started_nanos()).next_u64() % 1_000_000
        );
        let d = in_phase(Phase::Setup, fs0.mkdir(&set.bench, &name)).await?;
        for (c, conn) in conns.iter().enumerate() {
            own_dirs.push(Some(
                in_phase(Phase::Setup, conn.fs.mkdir(&d, &format!("c{c}"))).await?,
            ));
        }
        run_dir = Some((name, d));
    }

    let params = Arc::new(p.clone());
    let counters = Counters::new(p.clients);
    let data = {
        let mut r = Rng::new(p.seed);
        let mut v = Vec::with_capacity(p.io_size as usize + 8);
        while v.len() < p.io_size.max(1) as usize {
            v.extend_from_slice(&r.next_u64().to_le_bytes());
        }
        Bytes::from(v)
    };
    let (go_tx, go_rx) = watch::channel(false);
    let (stop_tx, stop_rx) = watch::channel(false);
    // The measured period's figures are taken: teardowns may begin. A
    // worker that finished early waits for it, so that its teardown (the
    // removal of what it created) is not counted in the others' period.
    let (measured_tx, measured_rx) = watch::channel(false);
    // The period the offered load (--rate) is scheduled in.
    let (pace_tx, pace_rx) = watch::channel(None::<Period>);
    // With --ops: the measured operations handed out so far.
    let tickets = Arc::new(AtomicU64::new(0));
    let (msg_tx, mut msg_rx) = mpsc::unbounded_channel();
    let mut tasks = Vec::new();
    let mut n_active = 0;
    let mix = p.mix();
    for c in 0..p.clients {
        let active = is_active(p, c);
        for t in 0..p.threads {
            n_active += usize::from(active);
            let mut w = Worker {
                fs: conns[c as usize].fs.clone(),
                stats: stats.clone(),
                rec: rec.clone(),
                p: params.clone(),
                set: set.clone(),
                client: c,
                thread: t,
                counters: counters.clone(),
                rng: Rng::for_worker(p.seed, run, c, t),
                own_dir: own_dirs.get(c as usize).cloned().flatten(),
                data: data.clone(),
                mix: mix.clone(),
                mix_total: mix.iter().map(|(_, w)| w).sum(),
                pace: pace_rx.clone(),
            };
            let (mut go, mut stop, tx) = (go_rx.clone(), stop_rx.clone(), msg_tx.clone());
            let mut measured = measured_rx.clone();
            let (tickets, ops) = (tickets.clone(), p.ops);
            tasks.push(tokio::spawn(async move {
                let held = in_phase(Phase::Setup, w.setup()).await;
                let mut held = match held {
                    Ok(h) => h,
                    Err(e) => return Err(e),
                };
                let _ = tx.send(Msg::Ready);
                let _ = go.wait_for(|g| *g).await;
                let mut result = Ok(());
                if active {
                    let mut warmed = false;
                    while !*stop.borrow() {
                        let phase = w.stats.phase();
                        // --ops: a unit of the measured period only with
                        // one of its tickets.
                        if phase == Phase::Measure
                            && ops > 0
                            && tickets.fetch_add(1, Ordering::Relaxed) >= ops
                        {
                            break;
                        }
                        match in_phase(phase, w.unit(&mut held, phase)).await {
                            Ok(true) => {
                                if phase == Phase::Warmup && !warmed {
                                    warmed = true;
                                    let _ = tx.send(Msg::Warmed);
                                }
                            }
                            Ok(false) => break,
                            Err(e) => {
                                w.rec.error(phase);
                                result = Err(e);
                                break;
                            }
                        }
                    }
                } else {
                    let _ = stop.wait_for(|s| *s).await;
                }
                let _ = tx.send(Msg::LoopDone { active });
                // (Err: the run ended early; nothing is measured.)
                let _ = measured.wait_for(|m| *m).await;
                let td = in_phase(Phase::Teardown, w.teardown(held)).await;
                result.and(td)
            }));
        }
    }
    drop(msg_tx);
    let nworkers = tasks.len();
    // Wait for every worker's setup (a failed one ends the run).
    let mut ready = 0;
    while ready < nworkers {
        match msg_rx.recv().await {
            Some(Msg::Ready) => ready += 1,
            Some(Msg::Warmed | Msg::LoopDone { .. }) => {}
            None => break,
        }
    }
    if ready < nworkers {
        let _ = stop_tx.send(true);
        let _ = go_tx.send(true);
        let _ = measured_tx.send(true);
        for t in tasks {
            if let Ok(Err(e)) = t.await {
                return Err(e);
            }
        }
        return Err(Error::Msg("a worker failed during setup".into()));
    }

    let time_based = p.workload.time_based();
    let label = format!("[{} run {}/{}]", p.workload, run + 1, p.runs);
    // Workers whose loops ended (an error), all and active ones.
    let mut all_done = 0;
    let mut active_done = 0;
    if time_based && p.warmup_s > 0.0 {
        pace_tx.send_replace(Some(Period {
            phase: Phase::Warmup,
            start: Instant::now(),
            end: None,
        }));
        stats.set_phase(Phase::Warmup);
        let _ = go_tx.send(true);
        if progress {
            eprint!("\r{label} warming up for {:.0} s\x1b[K", p.warmup_s);
        }
        tokio::time::sleep(Duration::from_secs_f64(p.warmup_s)).await;
        // And until every active worker has finished a unit of it: none
        // starts measuring cold, however slow the machine.
        let mut warmed = 0;
        while warmed + active_done < n_active {
            match msg_rx.recv().await {
                Some(Msg::Warmed) => warmed += 1,
                Some(Msg::LoopDone { active }) => {
                    all_done += 1;
                    active_done += usize::from(active);
                }
                Some(Msg::Ready) => {}
                None => break,
            }
        }
    }
    let slots0 = slot_totals(&conns);
    let cpu0 = cpu_times();
    let server0 = match &p.server_cgroup {
        Some(cg) => cgroup_cpu_times(cg),
        None => p.server_pid.and_then(process_cpu_times),
    };
    let t0 = Instant::now();
    // The period first, then the phase: a worker that sees the new phase
    // finds its period.
    pace_tx.send_replace(Some(Period {
        phase: Phase::Measure,
        start: t0,
        end: Some(t0 + Duration::from_secs_f64(p.duration_s)),
    }));
    stats.set_phase(Phase::Measure);
    let _ = go_tx.send(true);
    // Stops the workers: no unit starts after this, and a worker waiting
    // for its next request's due time wakes.
    let stop = || {
        let _ = stop_tx.send(true);
        pace_tx.send_replace(None);
    };

    // Per-second series and the progress line.
    let (tick_stop_tx, mut tick_stop_rx) = watch::channel(false);
    let ticker = {
        let rec = rec.clone();
        let label = label.clone();
        let duration = p.duration_s;
        tokio::spawn(async move {
            let mut series = Vec::new();
            let mut last = (0u64, 0u64);
            let mut next = t0 + Duration::from_secs(1);
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(next.into()) => {}
                    _ = tick_stop_rx.changed() => break,
                }
                let (u, b, e) = rec.totals();
                let t = next.duration_since(t0).as_secs_f64();
                series.push(SeriesPoint {
                    t_s: t,
                    ops_per_s: (u - last.0) as f64,
                    mb_per_s: (b - last.1) as f64 / 1e6,
                });
                if progress {
                    eprint!(
                        "\r{label} {:>4.0}/{:.0} s {:>10.0} ops/s {:>8.2} MB/s  total {u} ops, {e} errors\x1b[K",
                        t,
                        duration,
                        (u - last.0) as f64,
                        (b - last.1) as f64 / 1e6
                    );
                }
                last = (u, b);
                next += Duration::from_secs(1);
            }
            (series, last, next - Duration::from_secs(1))
        })
    };

    // Measure until the active workers finish (fixed-work workloads,
    // --ops) or the duration ends.
    let deadline = tokio::time::sleep(Duration::from_secs_f64(p.duration_s));
    tokio::pin!(deadline);
    let mut t_end = None;
    let mut completed = true;
    if active_done == n_active {
        t_end = Some(Instant::now());
        stop();
    }
    while all_done < nworkers {
        tokio::select! {
            m = msg_rx.recv() => match m {
                Some(Msg::LoopDone { active }) => {
                    all_done += 1;
                    if active {
                        active_done += 1;
                        if active_done == n_active {
                            t_end.get_or_insert_with(Instant::now);
                            stop();
                        }
                    }
                }
                Some(Msg::Ready | Msg::Warmed) => {}
                None => break,
            },
            _ = &mut deadline, if !*stop_tx.borrow() => {
                if !time_based || p.ops > 0 {
                    completed = false;
                }
                stop();
            }
        }
    }
    let t_end = t_end.unwrap_or_else(Instant::now);
    let cpu1 = cpu_times();
    let server1 = match &p.server_cgroup {
        Some(cg) => cgroup_cpu_times(cg),
        None => p.server_pid.and_then(process_cpu_times),
    };
    let slots1 = slot_totals(&conns);
    stats.set_phase(Phase::Teardown);
    for c in &conns {
        c.fs.measured();
    }
    let _ = measured_tx.send(true);
    let _ = tick_stop_tx.send(true);
    let (mut series, last, last_tick) = ticker
        .await
        .map_err(|e| Error::Msg(format!("ticker: {e}")))?;
    let elapsed = t_end.duration_since(t0).as_secs_f64().max(1e-9);
    let (units, bytes, errors) = rec.totals();
    let tail = t_end.saturating_duration_since(last_tick).as_secs_f64();
    if units > last.0 && tail > 0.0 {
        series.push(SeriesPoint {
            t_s: elapsed,
            ops_per_s: (units - last.0) as f64 / tail,
            mb_per_s: (bytes - last.1) as f64 / 1e6 / tail,
        });
    }
    if progress {
        eprint!("\r\x1b[K");
    }

    let mut first_err = None;
    for t in tasks {
        match t.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(e) => {
                first_err.get_or_insert(Error::Msg(format!("worker: {e}")));
            }
        }
    }
    // Teardown of the create directories.
    if let Some((name, d)) = &run_dir {
        if !p.keep {
            for (c, conn) in conns.iter().enumerate() {
                let r = in_phase(Phase::Teardown, conn.fs.rmdir(d, &format!("c{c}"))).await;
                if let Err(e) = r {
                    first_err.get_or_insert(e);
                }
            }
            if let Err(e) = in_phase(Phase::Teardown, fs0.rmdir(&set.bench, name)).await {
                first_err.get_or_insert(e);
            }
        }
    }
    let recalls = conns.iter().map(|c| c.fs.recalls()).sum();
    let delegations = conns.iter().map(|c| c.fs.delegations()).sum();
    for c in &conns {
        let _ = in_phase(Phase::Teardown, c.fs.shutdown()).await;
    }
    if let Some(e) = first_err {
        return Err(e);
    }

    let cpu_s = (cpu1.0 + cpu1.1)
        .saturating_sub(cpu0.0 + cpu0.1)
        .as_secs_f64();
    let cores = cores();
    let slot_acq = slots1.0 - slots0.0;
    let slot_wait_ns = slots1.2 - slots0.2;
    Ok(RunResult {
        run,
        elapsed_s: elapsed,
        ops: units,
        bytes,
        errors,
        ops_per_s: units as f64 / elapsed,
        mb_per_s: bytes as f64 / 1e6 / elapsed,
        completed,
        series,
        latency: rec.latencies(),
        nfs: stats.snapshot(),
        slot_wait: SlotWait {
            acquired: slot_acq,
            waited: slots1.1 - slots0.1,
            total_ms: slot_wait_ns as f64 / 1e6,
            max_ms: slots1.3 as f64 / 1e6,
            mean_us: if slot_acq > 0 {
                slot_wait_ns as f64 / slot_acq as f64 / 1e3
            } else {
                0.0
            },
        },
        cpu: Cpu {
            user_s: cpu1.0.saturating_sub(cpu0.0).as_secs_f64(),
            sys_s: cpu1.1.saturating_sub(cpu0.1).as_secs_f64(),
            cores,
            percent: cpu_s / (elapsed * f64::from(cores)) * 100.0,
            us_per_op: if units > 0 {
                cpu_s * 1e6 / units as f64
            } else {
                0.0
            },
        },
        server_cpu: match (p.server_pid, server0, server1) {
            (Some(pid), Some(s0), Some(s1)) => {
                let (u, s) = (s1.0.saturating_sub(s0.0), s1.1.saturating_sub(s0.1));
                let total = (u + s).as_secs_f64();
                Some(ServerCpu {
                    pid,
                    user_s: u.as_secs_f64(),
                    sys_s: s.as_secs_f64(),
                    percent: total / elapsed * 100.0,
                    us_per_op: if units > 0 {
                        total * 1e6 / units as f64
                    } else {
                        0.0
                    },
                })
            }
            _ => None,
        },
        recalls,
        delegations,
    })
}

fn started_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Sums of (acquired, waited, wait ns) and the max wait over all clients.
fn slot_totals(conns: &[Conn]) -> (u64, u64, u64, u64) {
    conns.iter().fold((0, 0, 0, 0), |a, c| {
        let s = c.fs.slot_wait();
        (a.0 + s.0, a.1 + s.1, a.2 + s.2, a.3.max(s.3))
    })
}
