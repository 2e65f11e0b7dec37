//! The NFSv3 client's error type.

use proto::mount::MountStat3;
use proto::nfs3::{NfsStat3, NFSPROC3_NAMES};
use proto::nlm::{nlmproc4_name, Nlm4Stats};

/// Why an NFSv3, MOUNT, NLM or port mapper call failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("connect: {0}")]
    Io(#[from] std::io::Error),
    #[error("rpc: {0}")]
    Rpc(#[from] rpc::CallError),
    #[error("undecodable reply: {0}")]
    Xdr(#[from] xdr::Error),
    /// MNT answered something other than MNT3_OK.
    #[error("MNT {path}: {status:?}")]
    Mount { path: String, status: MountStat3 },
    /// A procedure answered a status other than NFS3_OK.
    #[error("{} failed: {status:?}", proc_name(*proc_))]
    Status { proc_: u32, status: NfsStat3 },
    /// An NLM procedure (`NLMPROC4_*`) answered a status other than
    /// NLM4_GRANTED.
    #[error("{} failed: {stat:?}", nlmproc4_name(*proc_))]
    Nlm { proc_: u32, stat: Nlm4Stats },
    /// The reply did not have the expected shape.
    #[error("unexpected reply: {0}")]
    Unexpected(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The NFS status behind this error, if it is one.
    pub fn status(&self) -> Option<NfsStat3> {
        match self {
            Error::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The NLM status behind this error, if it is one.
    pub fn nlm_stat(&self) -> Option<Nlm4Stats> {
        match self {
            Error::Nlm { stat, .. } => Some(*stat),
            _ => None,
        }
    }
}

/// The RFC name of an NFSv3 procedure number.
pub fn proc_name(proc_: u32) -> &'static str {
    NFSPROC3_NAMES.get(proc_ as usize).copied().unwrap_or("?")
}
