//! The RPC messages of a connection (RFC 5531 §9): the caller's identity,
//! the header of a call received, a reply to send and why a call failed.

use bytes::Bytes;
use xdr::{Decoder, Encoder, Pack, Piece, Unpack};

use crate::gss::Seal;
use crate::msg::*;

/// The caller's identity as its credential states it (RFC 5531 §8.2, App. A).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    None,
    Sys(AuthSysParms),
    /// RPCSEC_GSS (RFC 2203): the context's principal and the call's
    /// service. Only ever received: a caller seals its calls with a
    /// [`crate::gss::ClientContext`].
    Gss(crate::gss::GssAuth),
}

impl Auth {
    /// The credential to send for this identity.
    pub fn to_opaque(&self) -> OpaqueAuth {
        match self {
            Auth::None => OpaqueAuth::none(),
            Auth::Sys(p) => OpaqueAuth {
                flavor: AUTH_SYS,
                body: xdr::to_bytes(p),
            },
            Auth::Gss(_) => OpaqueAuth::none(),
        }
    }

    /// Whether replies to this caller are checksummed or encrypted whole
    /// (krb5i, krb5p): they cannot be sent from a file's pages.
    pub fn wraps_body(&self) -> bool {
        matches!(self, Auth::Gss(g) if g.service != crate::gss::GssService::None)
    }

    /// A plain AUTH_SYS credential.
    pub fn sys(uid: u32, gid: u32, gids: Vec<u32>, machine: &str) -> Auth {
        Auth::Sys(AuthSysParms {
            stamp: 0,
            machinename: Bytes::copy_from_slice(machine.as_bytes()),
            uid,
            gid,
            gids,
        })
    }
}

/// What a service answers.
pub enum Reply {
    /// SUCCESS with the encoded results as a gather list.
    Success(Vec<Bytes>),
    /// SUCCESS with results that include ranges of files (READ data), which
    /// a TCP connection sends from the page cache (`sendfile`); other
    /// transports read them first ([`Reply::in_memory`]).
    Pieces(Vec<Piece>),
    Error(ReplyError),
    /// Send nothing (the request is being answered elsewhere or dropped).
    Drop,
}

impl Reply {
    pub fn success<T: Pack + ?Sized>(v: &T) -> Reply {
        let mut e = Encoder::new();
        v.pack(&mut e);
        if e.has_files() {
            Reply::Pieces(e.finish_pieces())
        } else {
            Reply::Success(e.finish())
        }
    }

    /// The reply with every range of a file read into memory (this blocks):
    /// SYSTEM_ERR if one can no longer be read in full.
    pub fn in_memory(self) -> Reply {
        match self {
            Reply::Pieces(pieces) => match xdr::in_memory(pieces) {
                Ok(chunks) => Reply::Success(chunks),
                Err(_) => Reply::Error(ReplyError::SystemErr),
            },
            r => r,
        }
    }
}

/// Why an outgoing call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("connection closed")]
    Closed,
    #[error("call rejected: {0:?}")]
    Rejected(ReplyError),
    #[error("malformed reply: {0}")]
    Garbage(#[from] xdr::Error),
    #[error("security: {0}")]
    Security(String),
}

/// The reply message to call `xid` (RFC 5531 §9): its header and the
/// results after it, in memory; none for [`Reply::Drop`].
pub fn reply_message(xid: u32, reply: Reply) -> Option<(Encoder, Vec<Bytes>)> {
    let (h, body) = reply_pieces(xid, reply.in_memory(), &Seal::None)?;
    // `in_memory` left only bytes in memory: this reads nothing.
    Some((h, xdr::in_memory(body).ok()?))
}

/// [`reply_message`], ranges of files kept as such, its verifier and
/// body sealed by `seal` (RPCSEC_GSS, RFC 2203 §5.3.3.2). A reply that
/// cannot be sealed becomes SYSTEM_ERR.
pub(super) fn reply_pieces(xid: u32, reply: Reply, seal: &Seal) -> Option<(Encoder, Vec<Piece>)> {
    let mut h = Encoder::with_capacity(32);
    h.u32(xid);
    h.u32(REPLY);
    let reply = match reply {
        Reply::Pieces(p) if seal.wraps_body() => Reply::Pieces(p).in_memory(),
        r => r,
    };
    let sealed = match reply {
        Reply::Drop => return None,
        Reply::Success(body) => seal.seal(Some(body)).map(|(v, b)| {
            (
                v,
                b.unwrap_or_default().into_iter().map(Piece::Mem).collect(),
            )
        }),
        Reply::Pieces(body) => seal.seal(None).map(|(v, _)| (v, body)),
        Reply::Error(err) => {
            let verf = match &err {
                ReplyError::RpcMismatch { .. } | ReplyError::Auth(_) => Ok(OpaqueAuth::none()),
                _ => seal.seal(None).map(|(v, _)| v),
            };
            encode_error(&mut h, &err, &verf.unwrap_or_else(|_| OpaqueAuth::none()));
            return Some((h, Vec::new()));
        }
    };
    let Ok((verf, body)) = sealed else {
        encode_error(&mut h, &ReplyError::SystemErr, &OpaqueAuth::none());
        return Some((h, Vec::new()));
    };
    h.u32(MSG_ACCEPTED);
    verf.pack(&mut h);
    AcceptStat::Success.pack(&mut h);
    Some((h, body))
}

fn encode_error(h: &mut Encoder, err: &ReplyError, verf: &OpaqueAuth) {
    let accepted = |h: &mut Encoder, stat: AcceptStat| {
        h.u32(MSG_ACCEPTED);
        verf.pack(h);
        stat.pack(h);
    };
    match *err {
        ReplyError::ProgUnavail => accepted(h, AcceptStat::ProgUnavail),
        ReplyError::ProgMismatch { low, high } => {
            accepted(h, AcceptStat::ProgMismatch);
            h.u32(low);
            h.u32(high);
        }
        ReplyError::ProcUnavail => accepted(h, AcceptStat::ProcUnavail),
        ReplyError::GarbageArgs => accepted(h, AcceptStat::GarbageArgs),
        ReplyError::SystemErr => accepted(h, AcceptStat::SystemErr),
        ReplyError::RpcMismatch { low, high } => {
            h.u32(MSG_DENIED);
            h.u32(RPC_MISMATCH);
            h.u32(low);
            h.u32(high);
        }
        ReplyError::Auth(stat) => {
            h.u32(MSG_DENIED);
            h.u32(AUTH_ERROR);
            stat.pack(h);
        }
    }
}

/// Decodes a reply message after its xid and message type.
pub fn parse_reply(reply: Bytes) -> Result<Decoder, CallError> {
    parse_reply_verf(reply).map(|(_, d)| d)
}

/// [`parse_reply`], with the reply's verifier.
pub fn parse_reply_verf(reply: Bytes) -> Result<(OpaqueAuth, Decoder), CallError> {
    let mut d = Decoder::new(reply);
    match d.u32()? {
        MSG_ACCEPTED => {
            let verf = OpaqueAuth::unpack(&mut d)?;
            match AcceptStat::unpack(&mut d)? {
                AcceptStat::Success => Ok((verf, d)),
                AcceptStat::ProgUnavail => Err(CallError::Rejected(ReplyError::ProgUnavail)),
                AcceptStat::ProgMismatch => Err(CallError::Rejected(ReplyError::ProgMismatch {
                    low: d.u32()?,
                    high: d.u32()?,
                })),
                AcceptStat::ProcUnavail => Err(CallError::Rejected(ReplyError::ProcUnavail)),
                AcceptStat::GarbageArgs => Err(CallError::Rejected(ReplyError::GarbageArgs)),
                AcceptStat::SystemErr => Err(CallError::Rejected(ReplyError::SystemErr)),
            }
        }
        MSG_DENIED => match d.u32()? {
            RPC_MISMATCH => Err(CallError::Rejected(ReplyError::RpcMismatch {
                low: d.u32()?,
                high: d.u32()?,
            })),
            _ => Err(CallError::Rejected(ReplyError::Auth(AuthStat::unpack(
                &mut d,
            )?))),
        },
        v => Err(CallError::Garbage(xdr::Error::BadDiscriminant(
            v,
            "reply_stat",
        ))),
    }
}

/// RFC 5531 §8.2: the body of an `opaque_auth` is at most 400 bytes.
pub const MAX_AUTH_BYTES: usize = 400;

/// A call's header as received (RFC 5531 §9), up to its arguments.
#[derive(Debug, Clone)]
pub struct CallHead {
    pub prog: u32,
    pub vers: u32,
    pub proc_: u32,
    pub cred: OpaqueAuth,
    pub verf: OpaqueAuth,
}

/// Decodes a call's header, credential and verifier. `Err` carries the
/// rejection to send back: a credential or verifier that does not
/// decode is AUTH_BADCRED or AUTH_BADVERF (RFC 5531 §9), not
/// GARBAGE_ARGS. `d` starts after the xid and message type; it is left
/// at the procedure's arguments.
pub fn parse_head(d: &mut Decoder) -> Result<CallHead, ReplyError> {
    let garbage = |_| ReplyError::GarbageArgs;
    let rpcvers = d.u32().map_err(garbage)?;
    let prog = d.u32().map_err(garbage)?;
    let vers = d.u32().map_err(garbage)?;
    let proc_ = d.u32().map_err(garbage)?;
    if rpcvers != RPC_VERSION {
        return Err(ReplyError::RpcMismatch {
            low: RPC_VERSION,
            high: RPC_VERSION,
        });
    }
    let bad_cred = |_| ReplyError::Auth(AuthStat::BadCred);
    let flavor = d.u32().map_err(bad_cred)?;
    let body = d.opaque(MAX_AUTH_BYTES).map_err(bad_cred)?;
    let bad_verf = |_| ReplyError::Auth(AuthStat::BadVerf);
    let verf_flavor = d.u32().map_err(bad_verf)?;
    let verf = d.opaque(MAX_AUTH_BYTES).map_err(bad_verf)?;
    Ok(CallHead {
        prog,
        vers,
        proc_,
        cred: OpaqueAuth { flavor, body },
        verf: OpaqueAuth {
            flavor: verf_flavor,
            body: verf,
        },
    })
}

/// The identity an AUTH_NONE or AUTH_SYS credential states; other
/// flavors are AUTH_REJECTEDCRED here (RPCSEC_GSS goes through a
/// [`crate::gss::Gate`]).
pub fn simple_auth(cred: &OpaqueAuth) -> Result<Auth, ReplyError> {
    match cred.flavor {
        AUTH_NONE => Ok(Auth::None),
        AUTH_SYS => xdr::from_bytes(cred.body.clone())
            .map(Auth::Sys)
            .map_err(|_| ReplyError::Auth(AuthStat::BadCred)),
        _ => Err(ReplyError::Auth(AuthStat::RejectedCred)),
    }
}

/// [`parse_head`] for AUTH_NONE and AUTH_SYS callers: the program,
/// version, procedure and identity.
pub fn parse_call(d: &mut Decoder) -> Result<(u32, u32, u32, Auth), ReplyError> {
    let h = parse_head(d)?;
    Ok((h.prog, h.vers, h.proc_, simple_auth(&h.cred)?))
}
