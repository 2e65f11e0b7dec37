//! `ferrite bench`: NFS micro-workloads (the NFSv4.1 evaluation set),
//! a runner with per-second series, latency histograms and per-operation
//! accounting, statistics across runs, a latency-injecting proxy, and
//! JSON/CSV/HTML output.
//!
//! The benchmark measures servers from the outside: over the wire with
//! Ferrite's own client (`nfs4://`), or through POSIX calls on a kernel
//! mount (`dir:`). It never uses server internals.

pub mod cli;
pub mod compare;
pub mod design;
pub mod experiment;
pub mod files;
pub mod floor;
pub mod fs;
pub mod nfs3;
pub mod nfs4;
pub mod nullserver;
pub mod pnfs;
pub mod posix;
pub mod proxy;
pub mod record;
pub mod report;
pub mod results;
pub mod rng;
pub mod runner;
pub mod stats;
pub mod sweep;
pub mod target;
pub mod workload;

pub use results::{Results, RunResult};
pub use workload::{Params, Workload};

/// Why a benchmark step failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Msg(String),
    /// The file set the workload needs is missing.
    #[error("{0}")]
    NotPrepared(String),
    #[error("{op} failed: {status:?}")]
    Nfs4 {
        status: proto::nfs4::NfsStat4,
        op: &'static str,
    },
    #[error("NFS client: {0}")]
    Client(#[from] client::Error),
    #[error("NFSv3 client: {0}")]
    Nfs3(#[from] client::v3::Error),
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
