//! The workloads and the resolved parameters of a benchmark: defaults per
//! workload, checks, and the file set each reads.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::fileset::FileSet;
use super::mix::{check_mix, MixOp, NHFSSTONE_MIX};
use crate::{Error, Result};

/// The workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// Random reads of `--io-size` from one large file (of `--files`:
    /// worker w uses file w mod N).
    Randread,
    /// Random writes of `--io-size` to one large file (as randread).
    Randwrite,
    /// Sequential reads; each worker streams its own stripe of its file
    /// (the workers of one file split it).
    Seqread,
    /// Sequential writes; each worker streams its own stripe of its file.
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
    /// A cgroup holding that server, read for its CPU time instead of
    /// /proc (nanoseconds rather than clock ticks).
    #[serde(default)]
    pub server_cgroup: Option<std::path::PathBuf>,
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
            server_cgroup: None,
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
                    n: self.files,
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
