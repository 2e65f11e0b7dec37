//! A COMPOUND's reply (RFC 8881 §16.2.3): operation results encoded once,
//! the fore channel's size limits, and the header and status before them.

use crate::handoff::off_thread;
use bytes::Bytes;
use proto::nfs4::*;
use xdr::{Encoder, Pack, Piece};

use super::context::Compound;

/// The result of one operation: typed, or just an opcode and error status
/// (for an operation that could not be decoded or was refused before it
/// ran).
#[allow(clippy::large_enum_variant)]
pub enum OpResult {
    Typed(NfsResOp4),
    Error(u32, NfsStat4),
    /// An NFSv4.0 owner's last result, encoded, sent again for a
    /// retransmission (RFC 7530 §9.1.7).
    Replayed(Bytes),
}

impl OpResult {
    pub fn status(&self) -> NfsStat4 {
        match self {
            OpResult::Typed(r) => r.status(),
            OpResult::Error(_, s) => *s,
            OpResult::Replayed(r) => super::v40::status_of(r),
        }
    }
}

impl Pack for OpResult {
    fn pack(&self, e: &mut Encoder) {
        match self {
            OpResult::Typed(r) => r.pack(e),
            OpResult::Error(op, s) => {
                e.u32(*op);
                s.pack(e);
                // SETATTR4res carries its attrsset bitmap whatever the
                // status (RFC 8881 §18.30.2): an empty one.
                if *op == OpNum4::SetAttr as u32 {
                    Bitmap4::default().pack(e);
                }
            }
            OpResult::Replayed(r) => e.raw(r),
        }
    }
}

/// The largest error result ([`OpResult::Error`] of SETATTR): room kept
/// after a result when another operation follows, so that one can always
/// at least fail.
pub(crate) const ERROR_RESULT_MAX: usize = 12;

/// An accepted RPC reply's header (RFC 5531 §9): xid, message type,
/// reply status, an AUTH_NONE verifier and the accept status. The session
/// limits count it (RFC 8881 §18.36.3).
pub(crate) const RPC_REPLY_HEADER: usize = 4 + 4 + 4 + 8 + 4;

/// Small replies are kept in the slot even when the client did not ask
/// (RFC 8881 §2.10.6.1.3), sparing it NFS4ERR_RETRY_UNCACHED_REP.
pub(crate) const UNASKED_CACHE_MAX: usize = 2048;

/// The fore channel's reply limits for this request (RFC 8881
/// §2.10.6.4): ca_maxresponsesize, and ca_maxresponsesize_cached when the
/// client asked for the reply to be cached.
pub(crate) struct Limits {
    pub(crate) max: usize,
    pub(crate) cached: Option<usize>,
}

impl Limits {
    pub(crate) fn of(cx: &Compound) -> Option<Limits> {
        let (s, slot) = (cx.session.as_ref()?, cx.slot.as_ref()?);
        Some(Limits {
            max: s.fore.maxresponsesize as usize,
            cached: slot
                .cachethis
                .then_some(s.fore.maxresponsesize_cached as usize),
        })
    }

    /// NFS4ERR_REP_TOO_BIG if a reply of `size` bytes exceeds what the
    /// client accepts, NFS4ERR_REP_TOO_BIG_TO_CACHE if what it asked to
    /// be cached.
    pub(crate) fn check(&self, size: usize) -> Result<(), NfsStat4> {
        if size > self.max {
            Err(NfsStat4::Nfs4errRepTooBig)
        } else if self.cached.is_some_and(|c| size > c) {
            Err(NfsStat4::Nfs4errRepTooBigToCache)
        } else {
            Ok(())
        }
    }
}

/// `COMPOUND4res` (RFC 8881 §16.2.2): the header, then the results
/// already encoded in `results`.
pub(crate) fn reply(status: NfsStat4, tag: &Bytes, count: u32, results: Encoder) -> Vec<Bytes> {
    let mut out = reply_head(status, tag, count).finish();
    out.extend(results.finish());
    out
}

/// [`reply`] with the results' ranges of files kept as such.
pub(crate) fn reply_pieces(
    status: NfsStat4,
    tag: &Bytes,
    count: u32,
    results: Encoder,
) -> Vec<Piece> {
    let mut out: Vec<Piece> = reply_head(status, tag, count)
        .finish()
        .into_iter()
        .map(Piece::Mem)
        .collect();
    out.extend(results.finish_pieces());
    out
}

pub(crate) fn reply_head(status: NfsStat4, tag: &Bytes, count: u32) -> Encoder {
    let mut e = Encoder::with_capacity(12 + tag.len());
    status.pack(&mut e);
    tag.pack(&mut e);
    e.u32(count);
    e
}

/// `results` with its ranges of files read into memory, on the blocking
/// pool; `None` if one can no longer be read in full.
pub(crate) async fn in_memory(results: Encoder) -> Option<Encoder> {
    let pieces = results.finish_pieces();
    let read = off_thread(move || xdr::in_memory(pieces)).await;
    let mut e = Encoder::new();
    for b in read.ok()?.ok()? {
        e.raw(&b);
    }
    Some(e)
}
