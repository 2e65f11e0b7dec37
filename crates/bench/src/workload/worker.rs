//! A worker (one task of one client): what it holds, its setup, one unit
//! of work of each workload, its teardown.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::watch;

use super::fileset::SetNodes;
use super::mix::{MixOp, MIX_DIR_ENTRIES, MIX_FILES};
use super::params::{Params, Workload};
use super::schedule::{Period, Schedule};
use crate::fs::{BenchFs, Node, OpenFile, OpenMode};
use crate::record::{OpStats, Phase, Recorder, UNIT_PHASE};
use crate::rng::Rng;
use crate::{Error, Result};

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
    pub(super) fn index(&self) -> u32 {
        self.client * self.p.threads + self.thread
    }

    /// Setup-phase work: opens held for the run.
    pub async fn setup(&mut self) -> Result<Held> {
        let mut held = Held::default();
        let p = self.p.clone();
        match p.workload {
            Workload::Randread | Workload::Seqread => {
                let (file, _, _) = self.large_share();
                let f = self
                    .fs
                    .open(
                        &self.set.base,
                        &p.file_set().large_file(file),
                        OpenMode::Read,
                        self.index(),
                    )
                    .await?;
                held.open.push(f);
            }
            Workload::Randwrite | Workload::Seqwrite => {
                let (file, _, _) = self.large_share();
                let f = self
                    .fs
                    .open(
                        &self.set.base,
                        &p.file_set().large_file(file),
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

    /// Large-file workloads: the file this worker uses (worker `w` of a
    /// set of `n` files uses file `w mod n`), its rank among the workers
    /// of that file and how many they are.
    fn large_share(&self) -> (u64, u64, u64) {
        let files = self.p.files.max(1);
        let w = u64::from(self.index());
        let workers = u64::from(self.p.workers());
        let file = w % files;
        let sharing = (workers - file).div_ceil(files).max(1);
        (file, w / files, sharing)
    }

    /// This worker's [start, end) stripe of its large file, io-aligned:
    /// the workers of one file split it evenly.
    fn stripe(&self) -> (u64, u64) {
        let io = u64::from(self.p.io_size);
        let blocks = self.p.file_size / io;
        let (_, i, n) = self.large_share();
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

    pub(super) fn own_dir(&self) -> Result<Node> {
        self.own_dir
            .clone()
            .ok_or_else(|| Error::Msg(format!("{} without a directory", self.p.workload)))
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
pub(super) const APPEND: usize = 16 << 10;

/// Runs `fut` with its calls counted in `phase`.
pub async fn in_phase<T>(phase: Phase, fut: impl std::future::Future<Output = T>) -> T {
    UNIT_PHASE.scope(phase, fut).await
}
