//! The NFSv4.1 evaluation micro-workloads: parameters, file sets
//! (`prepare`) and what each worker does.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::fs::{BenchFs, Node, OpenFile, OpenMode};
use crate::record::{OpStats, Phase, Recorder, UNIT_PHASE};
use crate::rng::Rng;
use crate::{Error, Result};

/// The workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// Random reads of `--io-size` from one large file.
    Randread,
    /// Random writes of `--io-size` to one large file.
    Randwrite,
    /// Sequential reads; each worker streams its own stripe of the file.
    Seqread,
    /// Sequential writes; each worker streams its own stripe of the file.
    Seqwrite,
    /// Random whole-file reads of small files: OPEN, READ, CLOSE.
    SmallfileRead,
    /// Each client creates `--files` files of `--file-size` in its own
    /// directory.
    Create,
    /// READDIR of random directories of a tree of empty files (mean width 5).
    Dirlist,
    /// Per file, ten times: OPEN, LOCK, READ whole file, LOCKU, CLOSE.
    LockedRead,
    /// Group A holds read opens; group B opens the same files read-write.
    DelegRecall,
    /// An operation mix (also called `mix`): by default nhfsstone's
    /// "typical diskless" one (the Legato paper, Figure 1: 34% LOOKUP,
    /// 22% READ, 15% WRITE, 13% GETATTR, 8% READLINK, 3% READDIR, 2%
    /// CREATE, 1% each REMOVE, SETATTR, FSSTAT; 19% modify data), or
    /// `--mix`'s. WRITEs are FILE_SYNC, as NFSv2's were. With `--rate`
    /// (or `--load`) the load is offered at that many operations per
    /// second.
    #[value(alias = "mix")]
    #[serde(alias = "mix")]
    Nhfsstone,
    /// Filebench's fileserver personality: per unit one of create and
    /// write a whole file, append 16 KiB, read a whole file, delete, stat
    /// (in turn), over `--files` (10,000, in directories of 20) of mean
    /// size `--file-size` (128 KiB), I/O of `--io-size` (1 MiB).
    /// Customary: `--threads 50`.
    Fileserver,
    /// Filebench's webserver: ten whole-file reads of random files (1,000
    /// of 16 KiB, in directories of 20), then 16 KiB appended to the
    /// worker's log, and again (one of these a unit).
    /// Customary: `--threads 100`.
    Webserver,
    /// Filebench's varmail: per unit one of delete; create, append 16
    /// KiB, fsync; read whole, append, fsync; read whole (in turn), over
    /// 1,000 files of 16 KiB in one directory. Customary: `--threads 16`.
    Varmail,
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Randread => "randread",
            Workload::Randwrite => "randwrite",
            Workload::Seqread => "seqread",
            Workload::Seqwrite => "seqwrite",
            Workload::SmallfileRead => "smallfile-read",
            Workload::Create => "create",
            Workload::Dirlist => "dirlist",
            Workload::LockedRead => "locked-read",
            Workload::DelegRecall => "deleg-recall",
            Workload::Nhfsstone => "nhfsstone",
            Workload::Fileserver => "fileserver",
            Workload::Webserver => "webserver",
            Workload::Varmail => "varmail",
        }
    }

    /// Time-based workloads run for `--duration` (or `--ops` operations)
    /// after `--warmup`; the others do a fixed amount of work (capped by
    /// `--duration`).
    pub fn time_based(self) -> bool {
        !matches!(
            self,
            Workload::Create | Workload::LockedRead | Workload::DelegRecall
        )
    }

    /// The latency histogram ops/s is computed from.
    pub fn unit_name(self) -> &'static str {
        match self {
            Workload::Randread | Workload::Seqread => "read",
            Workload::Randwrite | Workload::Seqwrite => "write",
            Workload::SmallfileRead => "file",
            Workload::Create => "create",
            Workload::Dirlist => "readdir",
            Workload::LockedRead => "locked-read",
            Workload::DelegRecall => "conflict-open",
            Workload::Nhfsstone => "op",
            Workload::Fileserver | Workload::Webserver | Workload::Varmail => "op",
        }
    }

    fn large(self) -> bool {
        matches!(
            self,
            Workload::Randread | Workload::Randwrite | Workload::Seqread | Workload::Seqwrite
        )
    }
}

/// Resolved parameters of a benchmark (what the JSON records).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Params {
    pub workload: Workload,
    pub target: String,
    pub clients: u32,
    pub threads: u32,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub runs: u32,
    pub seed: u64,
    pub io_size: u32,
    pub files: u64,
    pub file_size: u64,
    pub sync: bool,
    /// Iterations per file (locked-read).
    pub iterations: u32,
    pub delay_ms: f64,
    pub jitter_ms: f64,
    /// Loss probability, 0..1.
    pub loss: f64,
    /// Keep files the workload created (create).
    pub keep: bool,
    /// A server process on this machine whose CPU time over the measured
    /// period is reported ([`crate::results::ServerCpu`]).
    #[serde(default)]
    pub server_pid: Option<u32>,
    /// Operations per second offered in all (nhfsstone; 0: each worker
    /// sends its next request when the last is answered).
    #[serde(default)]
    pub rate: f64,
    /// nhfsstone's operation mix: weights (percentages) per operation;
    /// none: [`NHFSSTONE_MIX`].
    #[serde(default)]
    pub mix: Option<Vec<(MixOp, f64)>>,
    /// Time-based workloads: measure this many operations in all (what
    /// the workload counts as one: a READ, a file, a flow operation)
    /// instead of for `duration_s`, which then only caps the run (a run
    /// the cap ends is not `completed`); 0: measure for `duration_s`.
    /// The amount of work is then the same however fast the machine.
    #[serde(default)]
    pub ops: u64,
}

/// Per-workload defaults for the options not given.
#[derive(Debug, Clone, Copy, Default)]
pub struct Overrides {
    pub clients: Option<u32>,
    pub io_size: Option<u32>,
    pub files: Option<u64>,
    pub file_size: Option<u64>,
}

impl Params {
    /// Defaults for `w`; `o` overrides them.
    pub fn new(w: Workload, target: String, o: Overrides) -> Params {
        let (io, files, size) = match w {
            Workload::Randread | Workload::Randwrite => (4096, 1, 256 << 20),
            Workload::Seqread | Workload::Seqwrite => (1 << 20, 1, 256 << 20),
            Workload::SmallfileRead | Workload::LockedRead | Workload::DelegRecall => {
                (65536, 1000, 4096)
            }
            Workload::Create => (65536, 1000, 4096),
            // NFSv2's transfer size, nhfsstone's.
            Workload::Nhfsstone => (8192, 1000, 8192),
            // Filebench's: iosize 1m; nfiles and (mean) filesize.
            Workload::Fileserver => (1 << 20, 10_000, 128 << 10),
            Workload::Webserver | Workload::Varmail => (1 << 20, 1000, 16 << 10),
            Workload::Dirlist => (65536, 50_000, 0),
        };
        let clients = if w == Workload::DelegRecall { 2 } else { 1 };
        Params {
            workload: w,
            target,
            clients: o.clients.unwrap_or(clients),
            threads: 1,
            duration_s: 10.0,
            warmup_s: 2.0,
            runs: 1,
            seed: 1,
            io_size: o.io_size.unwrap_or(io),
            files: o.files.unwrap_or(files),
            file_size: o.file_size.unwrap_or(size),
            sync: false,
            iterations: 10,
            delay_ms: 0.0,
            jitter_ms: 0.0,
            loss: 0.0,
            keep: false,
            server_pid: None,
            rate: 0.0,
            mix: None,
            ops: 0,
        }
    }

    /// The operation mix nhfsstone draws from: weights that add up to
    /// 100.
    pub fn mix(&self) -> Vec<(MixOp, f64)> {
        self.mix.clone().unwrap_or_else(|| {
            NHFSSTONE_MIX
                .iter()
                .map(|&(op, pct)| (op, f64::from(pct)))
                .collect()
        })
    }

    pub fn workers(&self) -> u32 {
        self.clients * self.threads
    }

    pub fn check(&self) -> Result<()> {
        if self.clients == 0 || self.threads == 0 {
            return Err(Error::Msg(
                "--clients and --threads must be at least 1".into(),
            ));
        }
        if self.io_size == 0 || self.io_size > 1 << 20 {
            return Err(Error::Msg("--io-size must be 1 B .. 1 MiB".into()));
        }
        if self.workload.large() && self.file_size < u64::from(self.io_size) {
            return Err(Error::Msg("--file-size must be at least --io-size".into()));
        }
        if self.workload == Workload::DelegRecall && self.clients < 2 {
            return Err(Error::Msg(
                "deleg-recall needs --clients 2 or more (half hold opens, half conflict)".into(),
            ));
        }
        if !(self.rate >= 0.0 && self.rate.is_finite()) {
            return Err(Error::Msg(
                "--rate must be a number of operations per second, 0 or more".into(),
            ));
        }
        if self.rate > 0.0 && self.workload != Workload::Nhfsstone {
            return Err(Error::Msg("--rate applies to nhfsstone only".into()));
        }
        if self.workload == Workload::Nhfsstone && self.file_size < u64::from(self.io_size) {
            return Err(Error::Msg(
                "nhfsstone: --file-size must be at least --io-size".into(),
            ));
        }
        if self.files == 0 {
            return Err(Error::Msg("--files must be at least 1".into()));
        }
        if self.ops > 0 && !self.workload.time_based() {
            return Err(Error::Msg(format!(
                "--ops applies to time-based workloads: {} does a fixed amount of work",
                self.workload
            )));
        }
        if let Some(m) = &self.mix {
            if self.workload != Workload::Nhfsstone {
                return Err(Error::Msg(
                    "--mix applies to the mix (nhfsstone) workload only".into(),
                ));
            }
            check_mix(m)?;
        }
        Ok(())
    }

    /// The file set this workload reads, if any.
    pub fn file_set(&self) -> FileSet {
        match self.workload {
            Workload::Randread | Workload::Randwrite | Workload::Seqread | Workload::Seqwrite => {
                FileSet::Large {
                    size: self.file_size,
                }
            }
            Workload::SmallfileRead
            | Workload::LockedRead
            | Workload::DelegRecall
            | Workload::Nhfsstone => FileSet::Files {
                n: self.files,
                size: self.file_size,
                kind: "files",
            },
            // Sets of their own: these change them as they run.
            Workload::Fileserver | Workload::Webserver | Workload::Varmail => FileSet::Files {
                n: self.files,
                size: self.file_size,
                kind: self.workload.name(),
            },
            Workload::Dirlist => FileSet::Tree { n: self.files },
            Workload::Create => FileSet::None,
        }
    }
}

/// Files per subdirectory of a `files-*` set.
pub const FILES_PER_DIR: u64 = 1000;
/// Filebench's fileserver and webserver: a mean directory width of 20.
pub const PERSONALITY_DIR_WIDTH: u64 = 20;
/// Entries per directory of a `tree-*` set.
pub const TREE_WIDTH: u64 = 5;
/// The directory all file sets live in, under the target's path.
pub const BENCH_DIR: &str = "ferrite-bench";

/// A prepared file set, under `ferrite-bench/` in the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileSet {
    None,
    /// One file `large-SIZE`.
    Large {
        size: u64,
    },
    /// `KIND-NxSIZE/dK/fI`, 1000 files per `dK`; KIND is "files", or
    /// the personality whose runs change the set.
    Files {
        n: u64,
        size: u64,
        kind: &'static str,
    },
    /// `tree-N/…`: a 5-ary directory tree whose leaves hold 5 empty files.
    Tree {
        n: u64,
    },
}

impl FileSet {
    pub fn name(&self) -> String {
        match self {
            FileSet::None => String::new(),
            FileSet::Large { size } => format!("large-{size}"),
            FileSet::Files { n, size, kind } => format!("{kind}-{n}x{size}"),
            FileSet::Tree { n } => format!("tree-{n}"),
        }
    }

    fn marker(&self) -> String {
        format!("{}.ready", self.name())
    }

    /// Files per `dK` directory of a `files` set: Filebench's width for
    /// the fileserver and webserver sets (20), one directory for
    /// varmail's, [`FILES_PER_DIR`] otherwise.
    pub fn per_dir(&self) -> u64 {
        match self {
            FileSet::Files {
                kind: "fileserver" | "webserver",
                ..
            } => PERSONALITY_DIR_WIDTH,
            FileSet::Files {
                kind: "varmail", ..
            } => u64::MAX,
            _ => FILES_PER_DIR,
        }
    }
}

/// Depth of the tree for `n` files: leaves (5 files each) are addressed by
/// `depth` base-5 digits.
pub fn tree_depth(n: u64) -> u32 {
    let leaves = n.div_ceil(TREE_WIDTH).max(1);
    let mut d = 1;
    let mut cap = TREE_WIDTH;
    while cap < leaves {
        cap *= TREE_WIDTH;
        d += 1;
    }
    d
}

/// The directory path (relative to the set) of leaf `l`.
pub fn tree_leaf(l: u64, depth: u32) -> Vec<String> {
    let mut digits = Vec::with_capacity(depth as usize);
    let mut x = l;
    for _ in 0..depth {
        digits.push(format!("d{}", x % TREE_WIDTH));
        x /= TREE_WIDTH;
    }
    digits.reverse();
    digits
}

/// Every directory of the tree (relative paths, parents before children;
/// the set's own directory is the empty path).
pub fn tree_dirs(n: u64) -> Vec<Vec<String>> {
    let depth = tree_depth(n);
    let leaves = n.div_ceil(TREE_WIDTH).max(1);
    let mut seen = std::collections::BTreeSet::new();
    for l in 0..leaves {
        let p = tree_leaf(l, depth);
        for k in 0..=p.len() {
            seen.insert(p[..k].to_vec());
        }
    }
    let mut v: Vec<Vec<String>> = seen.into_iter().collect();
    v.sort_by_key(|p| p.len());
    v
}

/// The resolved nodes of a file set, shared by every worker of a run.
#[derive(Debug, Clone)]
pub struct SetNodes {
    /// `ferrite-bench/`.
    pub bench: Node,
    /// The set's directory (files, tree) or `ferrite-bench/` (large).
    pub base: Node,
    /// files: `dK` directories; tree: every directory.
    pub dirs: Vec<Node>,
    /// files: how many files each `dK` holds ([`FileSet::per_dir`]).
    pub per_dir: u64,
}

impl SetNodes {
    /// The directory of file `i` of a `files` set.
    pub fn dir_of(&self, i: u64) -> &Node {
        &self.dirs[(i / self.per_dir.max(1)) as usize]
    }
}

fn not_prepared(p: &Params, set: &FileSet) -> Error {
    let mut cmd = format!("ferrite bench prepare {} --target {}", p.workload, p.target);
    match set {
        FileSet::Large { size } => cmd += &format!(" --file-size {size}"),
        FileSet::Files { n, size, .. } => cmd += &format!(" --files {n} --file-size {size}"),
        FileSet::Tree { n } => cmd += &format!(" --files {n}"),
        FileSet::None => {}
    }
    Error::NotPrepared(format!(
        "file set {BENCH_DIR}/{} is not on {} (or its preparation did not finish); create it once with:\n  {cmd}",
        set.name(),
        p.target
    ))
}

/// Runs `n` jobs `0..n` with `conc` at a time; `f(i)` does job `i`.
async fn parallel<F, Fut>(n: u64, conc: usize, f: F) -> Result<()>
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<()>> + Send + 'static,
{
    let f = Arc::new(f);
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..conc.max(1) {
        let f = f.clone();
        let next = next.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return Ok(());
                }
                f(i).await?;
            }
        }));
    }
    let mut res = Ok(());
    for t in tasks {
        match t.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => res = Err(e),
            Err(e) => res = Err(Error::Msg(format!("task: {e}"))),
        }
    }
    res
}

fn pattern(len: usize, seed: u64) -> Bytes {
    let mut r = Rng::new(seed);
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        v.extend_from_slice(&r.next_u64().to_le_bytes());
    }
    v.truncate(len);
    Bytes::from(v)
}

/// Writes `size` bytes to `f` in pieces of at most 1 MiB (UNSTABLE).
async fn fill(fs: &dyn BenchFs, f: &OpenFile, size: u64, data: &Bytes) -> Result<()> {
    let mut off = 0;
    while off < size {
        let n = (size - off).min(data.len() as u64) as usize;
        fs.write(f, off, data.slice(..n), false).await?;
        off += n as u64;
    }
    Ok(())
}

/// Builds the file set `p` needs (idempotent: an existing complete set is
/// kept). Prints progress to stderr.
pub async fn prepare(fs: Arc<dyn BenchFs>, p: &Params) -> Result<()> {
    let set = p.file_set();
    let root = fs.root();
    let bench = fs.mkdir(&root, BENCH_DIR).await?;
    if set == FileSet::None {
        eprintln!("{}: nothing to prepare", p.workload);
        return Ok(());
    }
    if fs.lookup(&bench, &set.marker()).await?.is_some() {
        eprintln!(
            "{}: {BENCH_DIR}/{} is already prepared",
            p.workload,
            set.name()
        );
        return Ok(());
    }
    let started = Instant::now();
    let chunk = pattern(1 << 20, p.seed);
    let done = Arc::new(AtomicU64::new(0));
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let ticker = {
        let done = done.clone();
        let name = set.name();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                if tty {
                    eprint!(
                        "\rprepare {name}: {} done\x1b[K",
                        done.load(Ordering::Relaxed)
                    );
                }
            }
        })
    };
    let res: Result<()> = async {
        let mut total = 0;
        match set {
            FileSet::None => {}
            FileSet::Large { size } => {
                let f = fs.open(&bench, &set.name(), OpenMode::Create, 0).await?;
                let f = Arc::new(f);
                let pieces = size.div_ceil(1 << 20);
                total = pieces;
                let (fs2, f2, done2) = (fs.clone(), f.clone(), done.clone());
                parallel(pieces, 4, move |i| {
                    let (fs, f, chunk, done) =
                        (fs2.clone(), f2.clone(), chunk.clone(), done2.clone());
                    async move {
                        let off = i << 20;
                        let n = (size - off).min(1 << 20) as usize;
                        fs.write(&f, off, chunk.slice(..n), false).await?;
                        done.fetch_add(1, Ordering::Relaxed);
                        Ok(())
                    }
                })
                .await?;
                fs.commit(&f).await?;
                let f = Arc::try_unwrap(f).map_err(|_| Error::Msg("file still shared".into()))?;
                fs.close(f).await?;
            }
            FileSet::Files { n, size, .. } => {
                let base = fs.mkdir(&bench, &set.name()).await?;
                let per_dir = set.per_dir();
                let ndirs = n.div_ceil(per_dir);
                let mut dirs = Vec::new();
                for d in 0..ndirs {
                    dirs.push(fs.mkdir(&base, &format!("d{d}")).await?);
                }
                let dirs = Arc::new(dirs);
                total = n;
                let (fs2, done2) = (fs.clone(), done.clone());
                let data = chunk.clone();
                parallel(n, 16, move |i| {
                    let (fs, dirs, data, done) =
                        (fs2.clone(), dirs.clone(), data.clone(), done2.clone());
                    async move {
                        let dir = &dirs[(i / per_dir) as usize];
                        let f = fs
                            .open(dir, &format!("f{i}"), OpenMode::Create, (i % 16) as u32)
                            .await?;
                        fill(fs.as_ref(), &f, size, &data).await?;
                        fs.close(f).await?;
                        done.fetch_add(1, Ordering::Relaxed);
                        Ok(())
                    }
                })
                .await?;
            }
            FileSet::Tree { n } => {
                let base = fs.mkdir(&bench, &set.name()).await?;
                let dirs = tree_dirs(n);
                total = n;
                // Directories level by level (parents exist first).
                let nodes = Arc::new(std::sync::Mutex::new(std::collections::HashMap::new()));
                nodes
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(Vec::<String>::new(), base.clone());
                let maxlen = dirs.iter().map(|d| d.len()).max().unwrap_or(0);
                for level in 1..=maxlen {
                    let these: Arc<Vec<Vec<String>>> =
                        Arc::new(dirs.iter().filter(|d| d.len() == level).cloned().collect());
                    let (fs2, nodes2) = (fs.clone(), nodes.clone());
                    let count = these.len() as u64;
                    parallel(count, 16, move |i| {
                        let (fs, nodes, these) = (fs2.clone(), nodes2.clone(), these.clone());
                        async move {
                            let path = &these[i as usize];
                            let parent = nodes
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .get(&path[..path.len() - 1])
                                .cloned()
                                .ok_or_else(|| Error::Msg("missing parent".into()))?;
                            let node = fs.mkdir(&parent, &path[path.len() - 1]).await?;
                            nodes
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .insert(path.clone(), node);
                            Ok(())
                        }
                    })
                    .await?;
                }
                let depth = tree_depth(n);
                let (fs2, done2) = (fs.clone(), done.clone());
                parallel(n, 16, move |i| {
                    let (fs, nodes, done) = (fs2.clone(), nodes.clone(), done2.clone());
                    async move {
                        let leaf = tree_leaf(i / TREE_WIDTH, depth);
                        let dir = nodes
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .get(&leaf)
                            .cloned()
                            .ok_or_else(|| Error::Msg("missing leaf".into()))?;
                        let f = fs
                            .open(
                                &dir,
                                &format!("f{}", i % TREE_WIDTH),
                                OpenMode::Create,
                                (i % 16) as u32,
                            )
                            .await?;
                        fs.close(f).await?;
                        done.fetch_add(1, Ordering::Relaxed);
                        Ok(())
                    }
                })
                .await?;
            }
        }
        let m = fs.open(&bench, &set.marker(), OpenMode::Create, 0).await?;
        fs.close(m).await?;
        eprintln!(
            "{}prepare {}: {total} done in {:.1} s",
            if tty { "\r\x1b[K" } else { "" },
            set.name(),
            started.elapsed().as_secs_f64()
        );
        Ok(())
    }
    .await;
    ticker.abort();
    res
}

/// Looks up the prepared set (setup phase); an error that says how to
/// prepare it when it is missing.
pub async fn resolve(fs: &Arc<dyn BenchFs>, p: &Params) -> Result<SetNodes> {
    let set = p.file_set();
    let root = fs.root();
    let bench = match set {
        FileSet::None => fs.mkdir(&root, BENCH_DIR).await?,
        _ => fs
            .lookup(&root, BENCH_DIR)
            .await?
            .ok_or_else(|| not_prepared(p, &set))?,
    };
    if set != FileSet::None && fs.lookup(&bench, &set.marker()).await?.is_none() {
        return Err(not_prepared(p, &set));
    }
    let mut nodes = SetNodes {
        base: bench.clone(),
        bench,
        dirs: Vec::new(),
        per_dir: set.per_dir(),
    };
    match set {
        FileSet::None | FileSet::Large { .. } => {}
        FileSet::Files { n, .. } => {
            nodes.base = fs
                .lookup(&nodes.bench, &set.name())
                .await?
                .ok_or_else(|| not_prepared(p, &set))?;
            for d in 0..n.div_ceil(set.per_dir()) {
                let node = fs
                    .lookup(&nodes.base, &format!("d{d}"))
                    .await?
                    .ok_or_else(|| not_prepared(p, &set))?;
                nodes.dirs.push(node);
            }
        }
        FileSet::Tree { n } => {
            nodes.base = fs
                .lookup(&nodes.bench, &set.name())
                .await?
                .ok_or_else(|| not_prepared(p, &set))?;
            let dirs = tree_dirs(n);
            let mut map = std::collections::HashMap::new();
            map.insert(Vec::<String>::new(), nodes.base.clone());
            // Parents come first: resolve level by level, 16 at a time.
            let maxlen = dirs.iter().map(|d| d.len()).max().unwrap_or(0);
            let map = Arc::new(std::sync::Mutex::new(map));
            for level in 1..=maxlen {
                let these: Arc<Vec<Vec<String>>> =
                    Arc::new(dirs.iter().filter(|d| d.len() == level).cloned().collect());
                let (fs2, map2, set2, p2) = (fs.clone(), map.clone(), set, p.clone());
                parallel(these.len() as u64, 16, move |i| {
                    let (fs, map, these, p) =
                        (fs2.clone(), map2.clone(), these.clone(), p2.clone());
                    async move {
                        let path = &these[i as usize];
                        let parent = map
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .get(&path[..path.len() - 1])
                            .cloned()
                            .ok_or_else(|| not_prepared(&p, &set2))?;
                        let node = fs
                            .lookup(&parent, &path[path.len() - 1])
                            .await?
                            .ok_or_else(|| not_prepared(&p, &set2))?;
                        map.lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .insert(path.clone(), node);
                        Ok(())
                    }
                })
                .await?;
            }
            let map = map.lock().unwrap_or_else(|p| p.into_inner());
            for d in &dirs {
                if let Some(n) = map.get(d) {
                    nodes.dirs.push(n.clone());
                }
            }
        }
    }
    Ok(nodes)
}

/// What one worker (one task of one client) needs.
pub struct Worker {
    pub fs: Arc<dyn BenchFs>,
    pub stats: Arc<OpStats>,
    pub rec: Arc<Recorder>,
    pub p: Arc<Params>,
    pub set: Arc<SetNodes>,
    /// Client index and thread index within the client.
    pub client: u32,
    pub thread: u32,
    /// Per-client work counters (create, deleg-recall) and one global
    /// counter (locked-read).
    pub counters: Arc<Counters>,
    pub rng: Rng,
    /// This client's directory (create).
    pub own_dir: Option<Node>,
    pub data: Bytes,
    /// nhfsstone: the operation mix ([`Params::mix`]) and its weights'
    /// sum.
    pub mix: Vec<(MixOp, f64)>,
    pub mix_total: f64,
    /// nhfsstone with `--rate`: the period the offered load is scheduled
    /// in, as the runner announces it (none: the run has ended).
    pub pace: watch::Receiver<Option<Period>>,
}

/// Shared work counters.
pub struct Counters {
    pub per_client: Vec<AtomicU64>,
    pub global: AtomicU64,
}

impl Counters {
    pub fn new(clients: u32) -> Arc<Counters> {
        Arc::new(Counters {
            per_client: (0..clients).map(|_| AtomicU64::new(0)).collect(),
            global: AtomicU64::new(0),
        })
    }
}

/// The state a worker keeps between setup, its loop and teardown.
#[derive(Default)]
pub struct Held {
    /// Files held open for the run (large-file workloads, deleg-recall A).
    pub open: Vec<OpenFile>,
    /// Files this worker created (create), to remove at teardown.
    pub created: Vec<String>,
    /// Sequential position (seqread/seqwrite); files made (nhfsstone).
    pub cursor: u64,
    /// nhfsstone: this worker's symbolic link.
    pub link: Option<Node>,
    /// nhfsstone: this worker's directory of [`MIX_DIR_ENTRIES`] (in the
    /// client's, with its name) that READDIR lists: its size stays put
    /// while CREATEs, twice as many as REMOVEs, grow the client's.
    pub listed: Option<(Node, String)>,
    /// nhfsstone with `--rate`: this worker's requests of the current
    /// period.
    pub sched: Option<Schedule>,
    /// fileserver, varmail: the size of each file of the set this worker
    /// owns (indices worker, worker + workers, ...), none where absent.
    pub owned: Vec<Option<u64>>,
    /// fileserver, varmail: which flow operation comes next; webserver:
    /// which of the ten reads and the append.
    pub step: usize,
}

/// Whether a worker does measured work (false: deleg-recall group A, which
/// only holds opens while group B runs).
pub fn is_active(p: &Params, client: u32) -> bool {
    p.workload != Workload::DelegRecall || client >= p.clients.div_ceil(2)
}

impl Worker {
    fn index(&self) -> u32 {
        self.client * self.p.threads + self.thread
    }

    /// Setup-phase work: opens held for the run.
    pub async fn setup(&mut self) -> Result<Held> {
        let mut held = Held::default();
        let p = self.p.clone();
        match p.workload {
            Workload::Randread | Workload::Seqread => {
                let f = self
                    .fs
                    .open(
                        &self.set.base,
                        &p.file_set().name(),
                        OpenMode::Read,
                        self.index(),
                    )
                    .await?;
                held.open.push(f);
            }
            Workload::Randwrite | Workload::Seqwrite => {
                let f = self
                    .fs
                    .open(
                        &self.set.base,
                        &p.file_set().name(),
                        OpenMode::ReadWrite,
                        self.index(),
                    )
                    .await?;
                held.open.push(f);
            }
            Workload::Nhfsstone => {
                // Distinct files: a second OPEN of one file by the same
                // owner would leave the first stateid old.
                let first = self.rng.below(p.files);
                for k in 0..(MIX_FILES as u64).min(p.files) {
                    let i = (first + k) % p.files;
                    let dir = self.set.dir_of(i);
                    let f = self
                        .fs
                        .open(dir, &format!("f{i}"), OpenMode::ReadWrite, self.index())
                        .await?;
                    held.open.push(f);
                }
                let name = format!("w{}", self.index());
                let dir = self.fs.mkdir(&self.own_dir()?, &name).await?;
                held.link = Some(self.fs.symlink(&dir, "l", "f0").await?);
                for k in 1..MIX_DIR_ENTRIES {
                    let f = self
                        .fs
                        .open(&dir, &format!("e{k}"), OpenMode::Create, self.index())
                        .await?;
                    self.fs.close(f).await?;
                }
                held.listed = Some((dir, name));
                // Something for the first REMOVE.
                self.mix_create(&mut held).await?;
            }
            Workload::Fileserver | Workload::Varmail => {
                // What this worker owns of the set now (earlier runs
                // created and deleted).
                let n = u64::from(p.workers());
                let mut i = u64::from(self.index());
                while i < p.files {
                    let dir = self.set.dir_of(i);
                    let size = match self.fs.lookup(dir, &format!("f{i}")).await? {
                        Some(node) => Some(self.fs.size(&node).await?),
                        None => None,
                    };
                    held.owned.push(size);
                    i += n;
                }
                if held.owned.is_empty() {
                    return Err(Error::Msg(format!(
                        "{}: {} files for {} workers: at least one each",
                        p.workload,
                        p.files,
                        p.workers()
                    )));
                }
                held.step = self.index() as usize;
            }
            Workload::Webserver => {
                let name = format!("log-w{}", self.index());
                let f = self
                    .fs
                    .open(&self.own_dir()?, &name, OpenMode::Create, self.index())
                    .await?;
                held.open.push(f);
                held.created.push(name);
            }
            Workload::DelegRecall if !is_active(&p, self.client) => {
                let mut i = u64::from(self.thread);
                while i < p.files {
                    let dir = self.set.dir_of(i);
                    let f = self
                        .fs
                        .open(dir, &format!("f{i}"), OpenMode::Read, self.index())
                        .await?;
                    held.open.push(f);
                    i += u64::from(p.threads);
                }
            }
            _ => {}
        }
        if matches!(p.workload, Workload::Seqread | Workload::Seqwrite) {
            let (start, _) = self.stripe();
            held.cursor = start;
        }
        Ok(held)
    }

    /// This worker's [start, end) stripe of the large file, io-aligned.
    fn stripe(&self) -> (u64, u64) {
        let io = u64::from(self.p.io_size);
        let blocks = self.p.file_size / io;
        let n = u64::from(self.p.workers());
        let i = u64::from(self.index());
        let a = blocks * i / n;
        let b = (blocks * (i + 1) / n).max(a + 1).min(blocks.max(1));
        (a * io, b * io)
    }

    /// One unit of work. `Ok(false)`: this worker has no more work.
    pub async fn unit(&mut self, held: &mut Held, phase: Phase) -> Result<bool> {
        let p = self.p.clone();
        let io = p.io_size;
        let t = Instant::now();
        match p.workload {
            Workload::Randread => {
                let blocks = (p.file_size / u64::from(io)).max(1);
                let off = self.rng.below(blocks) * u64::from(io);
                let n = self.fs.read(&held.open[0], off, io).await?;
                self.rec.unit(phase, "read", t.elapsed(), n);
            }
            Workload::Randwrite => {
                let blocks = (p.file_size / u64::from(io)).max(1);
                let off = self.rng.below(blocks) * u64::from(io);
                let data = self.data.slice(..io as usize);
                self.fs.write(&held.open[0], off, data, p.sync).await?;
                self.rec.unit(phase, "write", t.elapsed(), u64::from(io));
            }
            Workload::Seqread | Workload::Seqwrite => {
                let (start, end) = self.stripe();
                if held.cursor >= end {
                    held.cursor = start;
                }
                let off = held.cursor;
                held.cursor += u64::from(io);
                if p.workload == Workload::Seqread {
                    let n = self.fs.read(&held.open[0], off, io).await?;
                    self.rec.unit(phase, "read", t.elapsed(), n);
                } else {
                    let data = self.data.slice(..io as usize);
                    self.fs.write(&held.open[0], off, data, p.sync).await?;
                    self.rec.unit(phase, "write", t.elapsed(), u64::from(io));
                }
            }
            Workload::SmallfileRead => {
                let i = self.rng.below(p.files);
                let n = self.read_whole(i, phase, false).await?;
                self.rec.unit(phase, "file", t.elapsed(), n);
            }
            Workload::LockedRead => {
                let i = self.counters.global.fetch_add(1, Ordering::Relaxed);
                if i >= p.files {
                    return Ok(false);
                }
                for _ in 0..p.iterations {
                    let t = Instant::now();
                    let n = self.read_whole(i, phase, true).await?;
                    self.rec.unit(phase, "locked-read", t.elapsed(), n);
                }
            }
            Workload::Create => {
                let c = &self.counters.per_client[self.client as usize];
                let i = c.fetch_add(1, Ordering::Relaxed);
                if i >= p.files {
                    return Ok(false);
                }
                let dir = self.own_dir()?;
                let name = format!("f{i}");
                let f = self
                    .fs
                    .open(&dir, &name, OpenMode::Create, self.index())
                    .await?;
                held.created.push(name);
                let mut off = 0;
                while off < p.file_size {
                    let n = (p.file_size - off).min(u64::from(io)) as usize;
                    self.fs.write(&f, off, self.data.slice(..n), p.sync).await?;
                    off += n as u64;
                }
                if !p.sync && p.file_size > 0 {
                    self.fs.commit(&f).await?;
                }
                self.fs.close(f).await?;
                self.rec.unit(phase, "create", t.elapsed(), p.file_size);
            }
            Workload::Nhfsstone => self.mix_op(held, phase).await?,
            Workload::Fileserver | Workload::Varmail => self.flow_op(held, phase).await?,
            // Ten whole-file reads, then the append: one operation a unit.
            Workload::Webserver if held.step % 11 < 10 => {
                held.step += 1;
                let i = self.rng.below(p.files);
                let n = self.read_whole(i, phase, false).await?;
                self.rec.unit(phase, "op", t.elapsed(), n);
                self.rec.latency(phase, "read-file", t.elapsed());
            }
            Workload::Webserver => {
                held.step += 1;
                let off = held.cursor;
                let data = self.data.slice(..APPEND.min(self.data.len()));
                let n = data.len() as u64;
                self.fs.write(&held.open[0], off, data, false).await?;
                held.cursor += n;
                self.rec.unit(phase, "op", t.elapsed(), n);
                self.rec.latency(phase, "append-log", t.elapsed());
            }
            Workload::Dirlist => {
                let d = self.rng.below(self.set.dirs.len() as u64) as usize;
                let _entries = self.fs.readdir(&self.set.dirs[d]).await?;
                self.rec.unit(phase, "readdir", t.elapsed(), 0);
            }
            Workload::DelegRecall => {
                let c = &self.counters.per_client[self.client as usize];
                let i = c.fetch_add(1, Ordering::Relaxed);
                if i >= p.files {
                    return Ok(false);
                }
                let dir = self.set.dir_of(i);
                let f = self
                    .fs
                    .open(dir, &format!("f{i}"), OpenMode::ReadWrite, self.index())
                    .await?;
                self.rec.unit(phase, "conflict-open", t.elapsed(), 0);
                let t = Instant::now();
                self.fs.close(f).await?;
                self.rec.latency(phase, "close", t.elapsed());
            }
        }
        Ok(true)
    }

    fn own_dir(&self) -> Result<Node> {
        self.own_dir
            .clone()
            .ok_or_else(|| Error::Msg(format!("{} without a directory", self.p.workload)))
    }

    /// With `--rate`: waits until this worker's next request of the
    /// current period ([`Schedule`]) falls due. When its response time
    /// counts from, or none: no request this time (the runner has moved
    /// on to another period or ended the run, or no more of this
    /// worker's requests fall due in this one).
    async fn pace(&mut self, held: &mut Held, phase: Phase) -> Option<Instant> {
        let mut rx = self.pace.clone();
        let period = (*rx.borrow_and_update())?;
        if period.phase != phase {
            // This unit's phase is the one before: the runner has just
            // moved on (it announces the period, then the phase).
            tokio::task::yield_now().await;
            return None;
        }
        if held.sched.map(|s| s.period) != Some(period) {
            // A new period starts a new schedule: what the last one still
            // owed is not sent in this one.
            held.sched = Some(Schedule::new(
                period,
                self.p.rate,
                self.p.workers(),
                self.index(),
            ));
        }
        let Some(due) = held.sched.as_mut().and_then(Schedule::next_due) else {
            // This worker is done with the period: until the next one (or
            // the end of the run).
            let _ = rx.changed().await;
            return None;
        };
        if due <= Instant::now() {
            return Some(due);
        }
        tokio::select! {
            biased;
            () = tokio::time::sleep_until(due.into()) => Some(Instant::now()),
            // The period ended first (the runner moved on).
            _ = rx.changed() => None,
        }
    }

    /// nhfsstone: one operation drawn from the mix. With `--rate`, a
    /// request the worker is late for (the last reply came after it was
    /// due) counts its response time from when it was due, so a server
    /// that falls behind the offered load sees the backlog in its
    /// response times instead of a slower client; one the worker waits
    /// for counts from when it is sent (the timer's lateness is the
    /// client's).
    async fn mix_op(&mut self, held: &mut Held, phase: Phase) -> Result<()> {
        let start = if self.p.rate > 0.0 {
            match self.pace(held, phase).await {
                Some(t) => t,
                None => return Ok(()),
            }
        } else {
            Instant::now()
        };
        let mut pick = self.rng.f64() * self.mix_total;
        let op = self
            .mix
            .iter()
            .find(|(_, w)| {
                let hit = pick < *w;
                pick -= *w;
                hit
            })
            .or(self.mix.last())
            .map_or(MixOp::Lookup, |(op, _)| *op);
        let f = self.rng.below(held.open.len() as u64) as usize;
        let io = self.p.io_size;
        let mut bytes = 0;
        match op {
            MixOp::Getattr => {
                self.fs.size(&held.open[f].node).await?;
            }
            MixOp::Setattr => self.fs.set_mode(&held.open[f].node, 0o644).await?,
            MixOp::Lookup => {
                let i = self.rng.below(self.p.files);
                let dir = self.set.dir_of(i);
                self.fs
                    .lookup(dir, &format!("f{i}"))
                    .await?
                    .ok_or_else(|| Error::Msg(format!("nhfsstone: f{i} is missing")))?;
            }
            MixOp::Readlink => {
                let link = held
                    .link
                    .as_ref()
                    .ok_or_else(|| Error::Msg("no link".into()))?;
                self.fs.readlink(link).await?;
            }
            MixOp::Read => bytes = self.fs.read(&held.open[f], 0, io).await?,
            MixOp::Write => {
                let data = self.data.slice(..io as usize);
                self.fs.write(&held.open[f], 0, data, true).await?;
                bytes = u64::from(io);
            }
            MixOp::Create => self.mix_create(held).await?,
            MixOp::Remove => match held.created.is_empty() {
                false => {
                    let name = held.created.remove(0);
                    self.fs.remove(&self.own_dir()?, &name).await?;
                }
                // Nothing of ours left to remove: make one instead.
                true => self.mix_create(held).await?,
            },
            MixOp::Readdir => {
                let (dir, _) = held
                    .listed
                    .as_ref()
                    .ok_or_else(|| Error::Msg("no directory".into()))?;
                self.fs.readdir(dir).await?;
            }
            MixOp::Fsstat => {
                self.fs.fsstat(&self.set.bench).await?;
            }
        }
        let took = start.elapsed();
        self.rec.unit(phase, "op", took, bytes);
        self.rec.latency(phase, op.name(), took);
        Ok(())
    }

    /// nhfsstone's CREATE: an empty file in the client's directory (OPEN
    /// with create, CLOSE), remembered for a later REMOVE.
    async fn mix_create(&mut self, held: &mut Held) -> Result<()> {
        let name = format!("m{}-{}", self.index(), held.cursor);
        held.cursor += 1;
        let f = self
            .fs
            .open(&self.own_dir()?, &name, OpenMode::Create, self.index())
            .await?;
        held.created.push(name);
        self.fs.close(f).await
    }

    /// OPEN, [LOCK,] READ…, [LOCKU,] CLOSE of small file `i`.
    async fn read_whole(&mut self, i: u64, phase: Phase, lock: bool) -> Result<u64> {
        let p = self.p.clone();
        let dir = self.set.dir_of(i);
        let t = Instant::now();
        let mut f = self
            .fs
            .open(dir, &format!("f{i}"), OpenMode::Read, self.index())
            .await?;
        self.rec.latency(phase, "open", t.elapsed());
        if lock {
            let t = Instant::now();
            self.fs.lock(&mut f, false).await?;
            self.rec.latency(phase, "lock", t.elapsed());
        }
        let mut got = 0;
        let io = u64::from(p.io_size);
        while got < p.file_size {
            let t = Instant::now();
            let want = (p.file_size - got).min(io) as u32;
            let n = self.fs.read(&f, got, want).await?;
            self.rec.latency(phase, "read", t.elapsed());
            if n == 0 {
                break;
            }
            got += n;
        }
        if lock {
            let t = Instant::now();
            self.fs.unlock(&mut f).await?;
            self.rec.latency(phase, "unlock", t.elapsed());
        }
        let t = Instant::now();
        self.fs.close(f).await?;
        self.rec.latency(phase, "close", t.elapsed());
        Ok(got)
    }

    /// Teardown-phase work: close held files, remove created ones.
    pub async fn teardown(&mut self, held: Held) -> Result<()> {
        for f in held.open {
            self.fs.close(f).await?;
        }
        if !self.p.keep {
            if let Some(dir) = &self.own_dir {
                for n in &held.created {
                    self.fs.remove(dir, n).await?;
                }
                if let Some((listed, name)) = &held.listed {
                    self.fs.remove(listed, "l").await?;
                    for k in 1..MIX_DIR_ENTRIES {
                        self.fs.remove(listed, &format!("e{k}")).await?;
                    }
                    self.fs.rmdir(dir, name).await?;
                }
            }
        }
        Ok(())
    }
}

/// Bytes a personality appends at a time (Filebench's meanappendsize).
const APPEND: usize = 16 << 10;

impl Worker {
    /// The name and directory of owned file `k` of this worker.
    fn owned(&self, k: usize) -> (String, Node) {
        let i = u64::from(self.index()) + k as u64 * u64::from(self.p.workers());
        (format!("f{i}"), self.set.dir_of(i).clone())
    }

    /// A random owned file that exists (`true`) or does not; none if
    /// there is no such file.
    fn pick_owned(&mut self, held: &Held, exists: bool) -> Option<usize> {
        let n = held.owned.len();
        let start = self.rng.below(n as u64) as usize;
        (0..n)
            .map(|d| (start + d) % n)
            .find(|&k| held.owned[k].is_some() == exists)
    }

    /// A whole-file size around the mean (`--file-size`): uniform in
    /// [mean/2, 3·mean/2].
    fn file_size(&mut self) -> u64 {
        let mean = self.p.file_size;
        mean / 2 + self.rng.below(mean + 1)
    }

    /// Writes `len` bytes to `f` from `off`, `--io-size` at a time.
    async fn write_span(&self, f: &OpenFile, off: u64, len: u64) -> Result<()> {
        let io = u64::from(self.p.io_size).min(self.data.len() as u64).max(1);
        let mut done = 0;
        while done < len {
            let n = (len - done).min(io) as usize;
            self.fs
                .write(f, off + done, self.data.slice(..n), false)
                .await?;
            done += n as u64;
        }
        Ok(())
    }

    /// Reads an open file of `size` whole, `--io-size` at a time.
    async fn read_span(&self, f: &OpenFile, size: u64) -> Result<u64> {
        let io = u64::from(self.p.io_size);
        let mut got = 0;
        while got < size {
            let n = self.fs.read(f, got, (size - got).min(io) as u32).await?;
            if n == 0 {
                break;
            }
            got += n;
        }
        Ok(got)
    }

    /// fileserver and varmail: the next operation of the flow, each
    /// recorded as a unit ("op") and under its own name.
    async fn flow_op(&mut self, held: &mut Held, phase: Phase) -> Result<()> {
        let t = Instant::now();
        let varmail = self.p.workload == Workload::Varmail;
        let flow: &[&str] = if varmail {
            &["delete", "create-append-fsync", "read-append-fsync", "read"]
        } else {
            &["create-write", "append", "read", "delete", "stat"]
        };
        let what = flow[held.step % flow.len()];
        held.step += 1;
        let me = self.index();
        let mut bytes = 0;
        match what {
            "create-write" | "create-append-fsync" => {
                // A free name; with none, one deleted first.
                let k = match self.pick_owned(held, false) {
                    Some(k) => k,
                    None => {
                        let k = self.pick_owned(held, true).unwrap_or(0);
                        let (name, dir) = self.owned(k);
                        self.fs.remove(&dir, &name).await?;
                        held.owned[k] = None;
                        k
                    }
                };
                let (name, dir) = self.owned(k);
                let f = self.fs.open(&dir, &name, OpenMode::Create, me).await?;
                let len = if varmail {
                    APPEND as u64
                } else {
                    self.file_size()
                };
                self.write_span(&f, 0, len).await?;
                if varmail {
                    self.fs.commit(&f).await?;
                }
                self.fs.close(f).await?;
                held.owned[k] = Some(len);
                bytes = len;
            }
            "append" | "read-append-fsync" | "read" => {
                let Some(k) = self.pick_owned(held, true) else {
                    return Ok(());
                };
                let (name, dir) = self.owned(k);
                let size = held.owned[k].unwrap_or(0);
                let mode = if what == "read" {
                    OpenMode::Read
                } else {
                    OpenMode::ReadWrite
                };
                let f = self.fs.open(&dir, &name, mode, me).await?;
                if what != "append" {
                    bytes += self.read_span(&f, size).await?;
                }
                if what != "read" {
                    let n = APPEND as u64;
                    self.write_span(&f, size, n).await?;
                    if varmail {
                        self.fs.commit(&f).await?;
                    }
                    held.owned[k] = Some(size + n);
                    bytes += n;
                }
                self.fs.close(f).await?;
            }
            "delete" => {
                let Some(k) = self.pick_owned(held, true) else {
                    return Ok(());
                };
                let (name, dir) = self.owned(k);
                self.fs.remove(&dir, &name).await?;
                held.owned[k] = None;
            }
            _ => {
                // stat
                let Some(k) = self.pick_owned(held, true) else {
                    return Ok(());
                };
                let (name, dir) = self.owned(k);
                if let Some(node) = self.fs.lookup(&dir, &name).await? {
                    self.fs.size(&node).await?;
                }
            }
        }
        self.rec.unit(phase, "op", t.elapsed(), bytes);
        self.rec.latency(phase, what, t.elapsed());
        Ok(())
    }
}

/// Files of the set each nhfsstone worker holds open for its READs,
/// WRITEs, GETATTRs and SETATTRs.
const MIX_FILES: usize = 4;

/// Entries of the directory an nhfsstone worker lists: its symbolic link
/// and empty files.
const MIX_DIR_ENTRIES: usize = 16;

/// An operation of the nhfsstone mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MixOp {
    Getattr,
    Setattr,
    Lookup,
    Readlink,
    Read,
    Write,
    Create,
    Remove,
    Readdir,
    Fsstat,
}

/// A mix's weights must be non-negative numbers adding up to 100, and
/// name each operation at most once.
pub fn check_mix(m: &[(MixOp, f64)]) -> Result<()> {
    let total: f64 = m.iter().map(|(_, w)| w).sum();
    if m.iter().any(|(_, w)| !(w.is_finite() && *w >= 0.0)) || (total - 100.0).abs() > 0.01 {
        return Err(Error::Msg(format!(
            "the mix's percentages must be numbers of 0 or more adding up to 100 (these add up to {total})"
        )));
    }
    for (i, (op, _)) in m.iter().enumerate() {
        if m[..i].iter().any(|(o, _)| o == op) {
            return Err(Error::Msg(format!("the mix names {} twice", op.name())));
        }
    }
    Ok(())
}

/// Reads a mix: "getattr=13,lookup=34,..." (commas or new lines; "#"
/// starts a comment), or the name of a file holding one.
pub fn parse_mix(spec: &str) -> Result<Vec<(MixOp, f64)>> {
    let text = if spec.contains('=') {
        spec.to_string()
    } else {
        std::fs::read_to_string(spec).map_err(|e| Error::Msg(format!("--mix {spec}: {e}")))?
    };
    let mut out = Vec::new();
    for item in text
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .flat_map(|l| l.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let (name, w) = item
            .split_once('=')
            .ok_or_else(|| Error::Msg(format!("mix entry {item:?}: expected OPERATION=PERCENT")))?;
        let op = MixOp::ALL
            .into_iter()
            .find(|o| o.name() == name.trim().to_ascii_lowercase())
            .ok_or_else(|| {
                let known: Vec<&str> = MixOp::ALL.iter().map(|o| o.name()).collect();
                Error::Msg(format!(
                    "mix entry {item:?}: no operation {name:?} (known: {})",
                    known.join(", ")
                ))
            })?;
        let w: f64 =
            w.trim().trim_end_matches('%').parse().map_err(|_| {
                Error::Msg(format!("mix entry {item:?}: {w:?} is not a percentage"))
            })?;
        out.push((op, w));
    }
    check_mix(&out)?;
    Ok(out)
}

impl MixOp {
    pub const ALL: [MixOp; 10] = [
        MixOp::Getattr,
        MixOp::Setattr,
        MixOp::Lookup,
        MixOp::Readlink,
        MixOp::Read,
        MixOp::Write,
        MixOp::Create,
        MixOp::Remove,
        MixOp::Readdir,
        MixOp::Fsstat,
    ];

    pub fn name(self) -> &'static str {
        match self {
            MixOp::Getattr => "getattr",
            MixOp::Setattr => "setattr",
            MixOp::Lookup => "lookup",
            MixOp::Readlink => "readlink",
            MixOp::Read => "read",
            MixOp::Write => "write",
            MixOp::Create => "create",
            MixOp::Remove => "remove",
            MixOp::Readdir => "readdir",
            MixOp::Fsstat => "fsstat",
        }
    }
}

/// The Legato paper's Figure 1, "Typical Diskless NFS Operation Mix":
/// percent of operations (they add up to 100).
pub const NHFSSTONE_MIX: [(MixOp, u32); 10] = [
    (MixOp::Getattr, 13),
    (MixOp::Setattr, 1),
    (MixOp::Lookup, 34),
    (MixOp::Readlink, 8),
    (MixOp::Read, 22),
    (MixOp::Write, 15),
    (MixOp::Create, 2),
    (MixOp::Remove, 1),
    (MixOp::Readdir, 3),
    (MixOp::Fsstat, 1),
];

/// A period the offered load (nhfsstone's `--rate`) is scheduled in: the
/// runner announces one for the warm-up and one for the measured period.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Period {
    pub phase: Phase,
    pub start: Instant,
    /// No request falls due at or after this (the measured period's end;
    /// none: until the runner moves on).
    pub end: Option<Instant>,
}

/// One worker's requests of an open-loop schedule. Request `g` of the
/// whole schedule falls due `g / rate` seconds into the period; worker
/// `w` of `W` sends requests `w`, `w + W`, `w + 2W` ...; none falls due
/// at or after the period's end. The due times never move: a worker held
/// up by a slow reply sends the requests it missed late, one after the
/// other, but never more than fell due. So in a period of `d` seconds
/// the workers together start at most `⌈rate × d⌉` requests, however
/// late, and a new period (the measured one after the warm-up) starts
/// from its own first request, not with the last one's backlog.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Schedule {
    pub period: Period,
    rate: f64,
    workers: u64,
    /// This worker's next request of the whole schedule.
    next: u64,
}

impl Schedule {
    /// Worker `index` of `workers`' share of `rate` requests a second in
    /// `period`.
    pub fn new(period: Period, rate: f64, workers: u32, index: u32) -> Schedule {
        Schedule {
            period,
            rate,
            workers: u64::from(workers.max(1)),
            next: u64::from(index),
        }
    }

    /// When this worker's next request falls due; none once they fall
    /// at or after the period's end.
    pub fn next_due(&mut self) -> Option<Instant> {
        let at = self.next as f64 / self.rate;
        if let Some(end) = self.period.end {
            let span = end.saturating_duration_since(self.period.start);
            if at >= span.as_secs_f64() {
                return None;
            }
        }
        self.next += self.workers;
        Some(self.period.start + Duration::from_secs_f64(at))
    }
}

/// Runs `fut` with its calls counted in `phase`.
pub async fn in_phase<T>(phase: Phase, fut: impl std::future::Future<Output = T>) -> T {
    UNIT_PHASE.scope(phase, fut).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_is_figure_1() {
        assert_eq!(NHFSSTONE_MIX.iter().map(|(_, p)| p).sum::<u32>(), 100);
        let modify: u32 = NHFSSTONE_MIX
            .iter()
            .filter(|(op, _)| {
                matches!(
                    op,
                    MixOp::Setattr | MixOp::Write | MixOp::Create | MixOp::Remove
                )
            })
            .map(|(_, p)| p)
            .sum();
        assert_eq!(modify, 19, "the paper: 19% of these operations modify data");
    }

    /// Every due time of `workers` workers' schedules in `period`, in
    /// order, with each worker's own in order too.
    fn all_due(period: Period, rate: f64, workers: u32) -> Vec<Duration> {
        let mut all = Vec::new();
        for w in 0..workers {
            let mut s = Schedule::new(period, rate, workers, w);
            let mut last = None;
            // A bound on the loop, far above any case here.
            for _ in 0..1_000_000 {
                let Some(due) = s.next_due() else { break };
                assert!(last.is_none_or(|l| due > l), "worker {w}: out of order");
                last = Some(due);
                all.push(due - period.start);
            }
            // Spent is spent: asking again gives nothing more.
            assert_eq!(s.next_due(), None);
        }
        all.sort();
        all
    }

    /// The open-loop arithmetic, with no clock involved: in a period of
    /// d seconds at rate r, the workers together start at most ⌈r·d⌉
    /// requests (the offered load, never more) and, given all the time
    /// they need, that many; request g falls due g/r seconds in.
    #[test]
    fn a_period_offers_its_rate_and_no_more() {
        let start = Instant::now();
        for (rate, secs, workers) in [
            (200.0, 1.0, 4),
            (100.0, 0.6, 4),
            (300.0, 0.6, 4),
            (7.0, 1.0, 3),
            (3.0, 0.1, 4),
            (1000.0, 0.25, 1),
            (333.3, 2.0, 16),
        ] {
            let period = Period {
                phase: Phase::Measure,
                start,
                end: Some(start + Duration::from_secs_f64(secs)),
            };
            let due = all_due(period, rate, workers);
            let offered = rate * secs;
            assert!(
                due.len() as f64 <= offered.ceil() && due.len() as f64 >= offered.floor(),
                "{rate}/s for {secs} s over {workers}: {} requests",
                due.len()
            );
            for (g, d) in due.iter().enumerate() {
                let want = g as f64 / rate;
                assert!((d.as_secs_f64() - want).abs() < 1e-6, "request {g}: {d:?}");
                assert!(d.as_secs_f64() < secs);
            }
        }
        // The measured period's: 200/s for 1 s, 200 requests (the
        // failure this fixes started 219).
        let period = Period {
            phase: Phase::Measure,
            start,
            end: Some(start + Duration::from_secs(1)),
        };
        assert_eq!(all_due(period, 200.0, 4).len(), 200);
    }

    /// A worker late for its requests (a slow reply, a stall) gets the
    /// same due times whenever it asks: the missed ones, then the rest,
    /// no more. A new period (the measured one after the warm-up)
    /// starts from its own first request whatever the last one owed.
    #[test]
    fn lateness_moves_no_due_time_and_a_new_period_starts_afresh() {
        let start = Instant::now();
        let warmup = Period {
            phase: Phase::Warmup,
            start,
            end: None,
        };
        // 100/s over 4 workers: worker 1's requests are 1, 5, 9 ...
        let mut s = Schedule::new(warmup, 100.0, 4, 1);
        let due: Vec<Duration> = (0..3).map(|_| s.next_due().unwrap() - start).collect();
        let ms = |n: u64| Duration::from_millis(n);
        assert_eq!(due, [ms(10), ms(50), ms(90)]);
        // The warm-up has no end: its schedule goes on until the runner
        // moves on, owing 997 more requests by the time it does here.
        for _ in 0..997 {
            assert!(s.next_due().is_some());
        }
        let t0 = start + Duration::from_secs(10);
        let measure = Period {
            phase: Phase::Measure,
            start: t0,
            end: Some(t0 + Duration::from_millis(200)),
        };
        assert_ne!(s.period, measure);
        let mut m = Schedule::new(measure, 100.0, 4, 1);
        let due: Vec<Duration> = std::iter::from_fn(|| m.next_due())
            .map(|d| d - t0)
            .collect();
        assert_eq!(due, [ms(10), ms(50), ms(90), ms(130), ms(170)]);
    }

    #[test]
    fn tree_shape() {
        assert_eq!(tree_depth(50_000), 6);
        assert_eq!(tree_depth(5), 1);
        assert_eq!(tree_depth(26), 2);
        let dirs = tree_dirs(50_000);
        // 10,000 leaves plus their ancestors.
        let leaves = dirs.iter().filter(|d| d.len() == 6).count();
        assert_eq!(leaves, 10_000);
        let entries = 50_000 + dirs.len() - 1;
        let width = entries as f64 / dirs.len() as f64;
        assert!((4.5..=5.5).contains(&width), "mean width {width}");
        assert_eq!(tree_leaf(7, 2), vec!["d1".to_string(), "d2".to_string()]);
    }
}
