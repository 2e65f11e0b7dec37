//! The crash harness of issue 11, point 6, shared by `crash_kill.rs`
//! (SIGKILL: the page cache survives) and `crash_power.rs` (SIGKILL and a
//! power loss of crashfs under the export, log and state: only what was
//! fsynced survives). The `ferrite` binary serves an export with a write
//! log; client tasks run a mixed workload (stable writes, unstable writes
//! and their COMMIT, creates, renames, removes, truncations) while the
//! server is killed at random points, sometimes again during its restart
//! (while it replays the log); after each restart every acknowledged
//! result must be there: the bytes of every stable write or committed
//! range, every created or renamed name, the absence of every removed
//! one, the size of every truncation. The clients hold persistent
//! sessions: a REMOVE or RENAME the crash left unanswered is retried after
//! the restart with its old session, slot and sequence ID, and must get
//! either its kept reply (it ran once) or NFS4ERR_DEADSESSION (its reply
//! was not kept, so the names stay unsure) — never a second execution.
//!
//! `CRASH_POINTS` sets the number of crashes; `CRASH_SEED` the seed
//! (printed, to replay a failure); `CRASH_VERBOSE` times each round;
//! `CRASH_SERVER_ARGS` adds options to the server's command line (for
//! example `--async`, which a power loss must catch out).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use client::{Client, ClientOptions, OpenOpts};
use proto::nfs4::*;

const TASKS: usize = 4;
const MAX_FILE: u64 = 64 * 1024;
const FILES_PER_TASK: usize = 40;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

pub struct Server {
    pub child: Option<Child>,
    /// Serves with a write log (stable writes logged) or without (each
    /// stable write syncs the file).
    pub log: bool,
    pub addr: SocketAddr,
    pub dir: PathBuf,
}

impl Server {
    pub fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("server.log"))
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_ferrite"))
            .arg("serve")
            .arg(self.dir.join("export"))
            .args(["--listen", &self.addr.to_string()])
            .arg("--state-dir")
            .arg(self.dir.join("state"))
            .args(if self.log {
                vec![
                    "--log".into(),
                    self.dir.join("log").into_os_string(),
                    "--log-mib".into(),
                    "16".into(),
                ]
            } else {
                vec![]
            })
            .args(["--grace", "0"])
            // crashfs is FUSE and keeps no extended attributes: the
            // export's identity from the command line (its handles are
            // inode numbers, which crashfs never reuses).
            .args(["--fsid", "crash"])
            .args(
                std::env::var("CRASH_SERVER_ARGS")
                    .unwrap_or_default()
                    .split_whitespace(),
            )
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("ferrite starts");
        self.child = Some(child);
    }

    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill(); // SIGKILL
            let _ = c.wait();
        }
    }

    /// Waits until it accepts connections; panics if it exits first.
    pub fn ready(&mut self) {
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(st)) = c.try_wait() {
                    let log =
                        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
                    panic!("ferrite exited with {st} at start:\n{log}");
                }
            }
            if std::net::TcpStream::connect(self.addr).is_ok() {
                return;
            }
            assert!(Instant::now() < until, "ferrite did not start in 30 s");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// What one task knows of its files: certain content, names certainly
/// absent, and what an unacknowledged request may or may not have done.
#[derive(Default, Clone)]
struct Model {
    files: BTreeMap<String, Vec<u8>>,
    gone: BTreeSet<String>,
    /// Names whose content or existence an unfinished request left open.
    unsure: BTreeSet<String>,
    /// A REMOVE or RENAME the crash left unanswered, exactly as sent
    /// (SEQUENCE included): retried after the restart, as a client would.
    pending: Option<Pending>,
}

#[derive(Clone)]
struct Pending {
    request: Vec<NfsArgOp4>,
    /// The name removed, or renamed from and to.
    from: String,
    to: Option<String>,
}

/// Sends `ops` under a SEQUENCE on a slot of its own, recording the
/// request in `m` until it is answered: `None` if the connection died
/// first (the request stays pending), else the reply's status.
async fn tracked(
    c: &Client,
    m: &mut Model,
    ops: &[NfsArgOp4],
    from: &str,
    to: Option<&str>,
) -> Option<NfsStat4> {
    let slot = c.take_slot().await;
    let mut request = vec![NfsArgOp4::Sequence(c.sequence_args(&slot, true))];
    request.extend_from_slice(ops);
    m.pending = Some(Pending {
        request: request.clone(),
        from: from.to_string(),
        to: to.map(str::to_string),
    });
    let r = c.compound_raw(b"crash", 1, &request).await.ok()?;
    m.pending = None;
    Some(r.status)
}

fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut r = Rng(seed | 1);
    (0..len).map(|_| r.next() as u8).collect()
}

fn write_at(v: &mut Vec<u8>, off: usize, data: &[u8]) {
    if v.len() < off + data.len() {
        v.resize(off + data.len(), 0);
    }
    v[off..off + data.len()].copy_from_slice(data);
}

async fn file_fh(c: &Client, root: &NfsFh4, name: &str) -> client::Result<NfsFh4> {
    c.lookup(root, name).await
}

/// Runs random requests for task `t` until one fails (the server died).
async fn work(c: Client, root: NfsFh4, t: usize, mut m: Model, seed: u64) -> Model {
    let mut r = Rng(seed);
    let mut serial = 0u64;
    loop {
        serial += 1;
        let names: Vec<String> = m.files.keys().cloned().collect();
        let pick = (!names.is_empty()).then(|| names[r.below(names.len() as u64) as usize].clone());
        let mut op = r.below(100);
        if op < 15 && m.files.len() >= FILES_PER_TASK {
            // Enough files: a remove instead, so a round's checks stay short.
            op = 70;
        }
        let anon = StateId4::ANONYMOUS;
        match (op, pick) {
            (0..=14, _) | (_, None) => {
                let name = format!("t{t}-{seed:x}-{serial}");
                m.unsure.insert(name.clone());
                let o = match c.open(&root, &name, OpenOpts::create(0o644)).await {
                    Ok(o) => o,
                    Err(_) => return m,
                };
                // Made; the CLOSE's fate does not matter to the name.
                m.unsure.remove(&name);
                m.gone.remove(&name);
                m.files.insert(name.clone(), Vec::new());
                if c.close(&o.fh, o.stateid).await.is_err() {
                    return m;
                }
            }
            (15..=49, Some(name)) => {
                let stable = op < 35;
                let off = r.below(MAX_FILE) as usize;
                let data = pattern(r.next(), 1 + r.below(8192) as usize);
                m.unsure.insert(name.clone());
                let Ok(fh) = file_fh(&c, &root, &name).await else {
                    return m;
                };
                let how = if stable {
                    StableHow4::FileSync4
                } else {
                    StableHow4::Unstable4
                };
                if c.write(&fh, anon, off as u64, Bytes::from(data.clone()), how)
                    .await
                    .is_err()
                {
                    return m;
                }
                if !stable && c.commit(&fh, 0, 0).await.is_err() {
                    return m;
                }
                m.unsure.remove(&name);
                write_at(m.files.get_mut(&name).unwrap(), off, &data);
            }
            (50..=59, Some(name)) => {
                let size = r.below(MAX_FILE);
                m.unsure.insert(name.clone());
                let Ok(fh) = file_fh(&c, &root, &name).await else {
                    return m;
                };
                let set = Attrs {
                    size: Some(size),
                    ..Default::default()
                };
                if c.setattr(&fh, anon, &set).await.is_err() {
                    return m;
                }
                m.unsure.remove(&name);
                m.files.get_mut(&name).unwrap().resize(size as usize, 0);
            }
            (60..=69, Some(name)) => {
                let to = format!("t{t}-{seed:x}-{serial}");
                m.unsure.insert(name.clone());
                m.unsure.insert(to.clone());
                let ops = [
                    NfsArgOp4::PutFh(PutFh4Args {
                        object: root.clone(),
                    }),
                    NfsArgOp4::SaveFh,
                    NfsArgOp4::Rename(Rename4Args {
                        oldname: Bytes::from(name.clone()),
                        newname: Bytes::from(to.clone()),
                    }),
                ];
                match tracked(&c, &mut m, &ops, &name, Some(&to)).await {
                    Some(NfsStat4::Nfs4Ok) => {}
                    Some(s) => panic!("task {t}: RENAME {name} {to}: {s:?}"),
                    None => return m,
                }
                m.unsure.remove(&name);
                m.unsure.remove(&to);
                let data = m.files.remove(&name).unwrap();
                m.files.insert(to.clone(), data);
                m.gone.insert(name);
                m.gone.remove(&to);
            }
            (70..=77, Some(name)) => {
                m.unsure.insert(name.clone());
                let ops = [
                    NfsArgOp4::PutFh(PutFh4Args {
                        object: root.clone(),
                    }),
                    NfsArgOp4::Remove(Remove4Args {
                        target: Bytes::from(name.clone()),
                    }),
                ];
                match tracked(&c, &mut m, &ops, &name, None).await {
                    Some(NfsStat4::Nfs4Ok) => {}
                    Some(s) => panic!("task {t}: REMOVE {name}: {s:?}"),
                    None => return m,
                }
                m.unsure.remove(&name);
                m.files.remove(&name);
                m.gone.insert(name);
            }
            (_, Some(name)) => {
                // A live check: what the server says now.
                let Ok(fh) = file_fh(&c, &root, &name).await else {
                    return m;
                };
                let want = &m.files[&name];
                match c.read(&fh, anon, 0, MAX_FILE as u32 * 2).await {
                    Ok((got, _)) => assert!(
                        got[..] == want[..],
                        "task {t}: {name} read {} bytes, {} expected, before any crash",
                        got.len(),
                        want.len()
                    ),
                    Err(_) => return m,
                }
            }
        }
    }
}

/// Retries the request the crash left unanswered, as the client would on
/// its persistent session: the original reply (it took effect once: the
/// model follows it) or NFS4ERR_DEADSESSION (its reply was not kept: the
/// names stay unsure). Anything else means it ran again.
async fn retry(c: &Client, m: &mut Model, round: usize) -> (usize, usize) {
    let Some(p) = m.pending.take() else {
        return (0, 0);
    };
    let r = c
        .compound_raw(b"crash", 1, &p.request)
        .await
        .expect("the retry is answered");
    match r.status {
        NfsStat4::Nfs4Ok => {
            m.unsure.remove(&p.from);
            let data = m.files.remove(&p.from);
            m.gone.insert(p.from.clone());
            if let Some(to) = p.to {
                m.unsure.remove(&to);
                m.gone.remove(&to);
                m.files
                    .insert(to, data.expect("a renamed file the model knew"));
            }
            (1, 0)
        }
        NfsStat4::Nfs4errDeadsession => (0, 1),
        s => panic!(
            "round {round}: the retried request of {} got {s:?}: it ran a second time ({r:?})",
            p.from
        ),
    }
}

/// Checks every certain fact of `m` against the export, then makes the
/// model what is there (unsure names resolved).
async fn verify(c: &Client, root: &NfsFh4, m: &mut Model, round: usize) {
    for name in m.unsure.clone() {
        m.files.remove(&name);
        m.gone.remove(&name);
        if let Ok(fh) = c.lookup(root, &name).await {
            let (got, _) = c
                .read(&fh, StateId4::ANONYMOUS, 0, MAX_FILE as u32 * 2)
                .await
                .unwrap();
            m.files.insert(name.clone(), got.to_vec());
        } else {
            m.gone.insert(name.clone());
        }
    }
    m.unsure.clear();
    for (name, want) in &m.files {
        let fh = c
            .lookup(root, name)
            .await
            .unwrap_or_else(|e| panic!("round {round}: acknowledged {name} is gone: {e}"));
        let (got, _) = c
            .read(&fh, StateId4::ANONYMOUS, 0, MAX_FILE as u32 * 2)
            .await
            .unwrap();
        if got[..] != want[..] {
            let at = got.iter().zip(want.iter()).position(|(a, b)| a != b);
            panic!(
                "round {round}: {name}: {} bytes, {} acknowledged; first difference at {at:?}",
                got.len(),
                want.len()
            );
        }
    }
    for name in &m.gone {
        let e = c.lookup(root, name).await;
        assert!(e.is_err(), "round {round}: removed {name} is back");
    }
    // Checked once after the crash that followed the removal: later rounds
    // check only names removed since (the set would grow without end).
    m.gone.clear();
}

/// A client of its own (owner `who`) and the root's handle.
async fn connect(addr: SocketAddr, who: &str) -> client::Result<(Client, NfsFh4)> {
    let mut o = ClientOptions::new(format!("crash-{}-{who}", std::process::id()));
    o.delay_retry = Duration::from_secs(5);
    o.persist = true;
    let c = Client::connect(addr, o).await?;
    let root = c.root_fh().await?;
    Ok((c, root))
}

pub fn free_port() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

pub fn run(points: usize, seed: u64, dir: &Path, log: bool, power: Option<&crashfs::Mounted>) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // The export exists and is durable before the server first starts
    // (as an administrator's directory would be); the state and log
    // directories are the server's to make durable.
    std::fs::create_dir_all(dir.join("export")).unwrap();
    for d in [dir.join("export"), dir.to_path_buf()] {
        std::fs::File::open(d).unwrap().sync_all().unwrap();
    }
    let mut srv = Server {
        child: None,
        log,
        addr: free_port(),
        dir: dir.to_path_buf(),
    };
    let mut r = Rng(seed);
    let mut models = vec![Model::default(); TASKS];
    srv.spawn();
    srv.ready();
    let verbose = std::env::var_os("CRASH_VERBOSE").is_some();
    let mut first_root: Option<NfsFh4> = None;
    // Retried REMOVEs and RENAMEs: answered from the kept reply, or told
    // the session is dead.
    let mut retries = (0usize, 0usize);
    for round in 0..points {
        let t0 = Instant::now();
        let addr = srv.addr;
        let tasks: Vec<_> = (0..TASKS)
            .map(|t| {
                let m = models[t].clone();
                let s = r.next();
                rt.spawn(async move {
                    // The kill may come before the client is connected.
                    match connect(addr, &format!("{round}-{t}")).await {
                        Ok((c, root)) => work(c, root, t, m, s).await,
                        Err(_) => m,
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(30 + r.below(300)));
        srv.kill();
        lose_power(power);
        models = tasks
            .into_iter()
            .map(|h| rt.block_on(h).expect("task"))
            .collect();
        let t1 = Instant::now();
        srv.spawn();
        if r.below(4) == 0 {
            // Killed again while it starts (replaying the log).
            std::thread::sleep(Duration::from_millis(r.below(40)));
            srv.kill();
            lose_power(power);
            srv.spawn();
        }
        srv.ready();
        let t2 = Instant::now();
        rt.block_on(async {
            let (c, root) = connect(srv.addr, &format!("{round}-check"))
                .await
                .expect("a client connects after the restart");
            // File handles outlive the crash: the same root handle (a
            // lost filehandle key would make every handle stale).
            let first = first_root.get_or_insert_with(|| root.clone());
            assert_eq!(*first, root, "round {round}: the root's handle changed");
            for m in &mut models {
                let (replayed, dead) = retry(&c, m, round).await;
                retries.0 += replayed;
                retries.1 += dead;
                verify(&c, &root, m, round).await;
            }
        });
        if verbose {
            eprintln!(
                "round {round}: work+kill {:?}, restart {:?}, check {:?}",
                t1 - t0,
                t2 - t1,
                t2.elapsed()
            );
        }
    }
    let files: usize = models.iter().map(|m| m.files.len()).sum();
    let what = if power.is_some() {
        "power losses"
    } else {
        "kills"
    };
    let how = if log { "with" } else { "without" };
    eprintln!(
        "crash: {points} {what} survived {how} a write log (seed {seed:#x}), {files} files checked after each; {} retries got their kept reply, {} found the session dead",
        retries.0, retries.1
    );
    if let Some(fs) = power {
        eprintln!("crash: crashfs {:?}", fs.stats());
    }
}

/// After a kill, the power loss (if this run has one): what the killed
/// server had not made durable is gone. The kernel may still be handing
/// crashfs a request the server made before it died: a request of our
/// own, queued after it, lands only once it has (crashfs answers the
/// kernel's requests one at a time, in order), however slow the machine.
/// A lookup of a name never used before always goes to crashfs.
pub fn lose_power(power: Option<&crashfs::Mounted>) {
    static BARRIER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    if let Some(fs) = power {
        let n = BARRIER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let _ = std::fs::symlink_metadata(fs.path().join(format!(".barrier-{n}")));
        fs.power_loss();
    }
}

/// `CRASH_POINTS` (default `default`) and `CRASH_SEED` (default: from the
/// clock), the seed printed to replay a failure.
pub fn points_and_seed(default: usize) -> (usize, u64) {
    let points = std::env::var("CRASH_POINTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    let seed = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|v| u64::from_str_radix(v.trim_start_matches("0x"), 16).ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    eprintln!("crash: seed {seed:#x} (CRASH_SEED to replay)");
    (points, seed)
}
