//! The client's error type.

use proto::nfs4::*;

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("connect: {0}")]
    Io(#[from] std::io::Error),
    #[error("rpc: {0}")]
    Rpc(#[from] rpc::CallError),
    #[error("undecodable reply: {0}")]
    Xdr(#[from] xdr::Error),
    /// SEQUENCE itself failed (the operations did not run).
    #[error("SEQUENCE failed: {0:?}")]
    Sequence(NfsStat4),
    /// The COMPOUND status was not NFS4_OK: `index` is the failing
    /// operation's position among the operations the caller passed
    /// (SEQUENCE not counted), `results` the results up to and including it.
    #[error("operation {index} (opnum {opnum}) failed: {status:?}")]
    Status {
        index: usize,
        opnum: u32,
        status: NfsStat4,
        results: Vec<NfsResOp4>,
    },
    /// The reply did not have the expected shape.
    #[error("unexpected reply: {0}")]
    Unexpected(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn from_compound(status: NfsStat4, results: Vec<NfsResOp4>) -> Error {
        let (index, opnum) = match results.last() {
            Some(r) => (results.len() - 1, opnum_of(r)),
            None => (0, 0),
        };
        Error::Status {
            index,
            opnum,
            status,
            results,
        }
    }

    pub(crate) fn unexpected(r: &NfsResOp4) -> Error {
        Error::Unexpected(format!("{r:?}"))
    }

    /// The NFS status behind this error, if it is one.
    pub fn status(&self) -> Option<NfsStat4> {
        match self {
            Error::Sequence(s) => Some(*s),
            Error::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The conflicting lock of a LOCK or LOCKT that failed with
    /// NFS4ERR_DENIED.
    pub fn denied(&self) -> Option<&Lock4Denied> {
        match self {
            Error::Status { results, .. } => match results.last() {
                Some(NfsResOp4::Lock(Lock4Res::Denied(d))) => Some(d),
                Some(NfsResOp4::LockT(LockT4Res::Denied(d))) => Some(d),
                _ => None,
            },
            _ => None,
        }
    }
}

/// The operation number of a result.
pub fn opnum_of(r: &NfsResOp4) -> u32 {
    r.opnum()
}
