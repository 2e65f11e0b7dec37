//! RPC message wire types (RFC 5531 §9 and §8 for authentication).

use bytes::Bytes;
use xdr::{Pack, Unpack};

pub const RPC_VERSION: u32 = 2;

/// RFC 5531 §8.2: auth_flavor.
pub const AUTH_NONE: u32 = 0;
pub const AUTH_SYS: u32 = 1;
pub const AUTH_SHORT: u32 = 2;
pub const RPCSEC_GSS: u32 = 6;

/// RFC 5531 §8.2: opaque_auth; the body is at most 400 bytes.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct OpaqueAuth {
    pub flavor: u32,
    #[xdr(max = 400)]
    pub body: Bytes,
}

impl OpaqueAuth {
    pub fn none() -> Self {
        OpaqueAuth {
            flavor: AUTH_NONE,
            body: Bytes::new(),
        }
    }
}

/// RFC 5531 Appendix A: authsys_parms.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct AuthSysParms {
    pub stamp: u32,
    #[xdr(max = 255)]
    pub machinename: Bytes,
    pub uid: u32,
    pub gid: u32,
    #[xdr(max = 16)]
    pub gids: Vec<u32>,
}

/// RFC 5531 §9: msg_type.
pub const CALL: u32 = 0;
pub const REPLY: u32 = 1;

/// RFC 5531 §9: the header of call_body, up to and including the verifier.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct CallHeader {
    pub rpcvers: u32,
    pub prog: u32,
    pub vers: u32,
    pub proc_: u32,
    pub cred: OpaqueAuth,
    pub verf: OpaqueAuth,
}

/// RFC 5531 §9: accept_stat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
#[repr(u32)]
pub enum AcceptStat {
    Success = 0,
    ProgUnavail = 1,
    ProgMismatch = 2,
    ProcUnavail = 3,
    GarbageArgs = 4,
    SystemErr = 5,
}

/// RFC 5531 §9: reject_stat.
pub const RPC_MISMATCH: u32 = 0;
pub const AUTH_ERROR: u32 = 1;

/// RFC 5531 §9: reply_stat.
pub const MSG_ACCEPTED: u32 = 0;
pub const MSG_DENIED: u32 = 1;

/// RFC 5531 §9: auth_stat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
#[repr(u32)]
pub enum AuthStat {
    Ok = 0,
    BadCred = 1,
    RejectedCred = 2,
    BadVerf = 3,
    RejectedVerf = 4,
    TooWeak = 5,
    InvalidResp = 6,
    Failed = 7,
    /// RFC 2203 §4: no credentials for the user (unknown context, bad
    /// header checksum): the client makes a new context.
    GssCredProblem = 13,
    /// RFC 2203 §4: a problem with the context (expired, sequence
    /// numbers used up).
    GssCtxProblem = 14,
}

/// RFC 5531 §9: the reply_body arms other than a successful result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyError {
    ProgUnavail,
    ProgMismatch { low: u32, high: u32 },
    ProcUnavail,
    GarbageArgs,
    SystemErr,
    RpcMismatch { low: u32, high: u32 },
    Auth(AuthStat),
}
