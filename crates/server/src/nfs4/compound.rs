//! COMPOUND processing (RFC 8881 §16.2, §2.10.6 for sessions).
//!
//! Operations are decoded one at a time, so a malformed or unknown
//! operation gets its own error result (NFS4ERR_BADXDR, NFS4ERR_OP_ILLEGAL)
//! after the ones before it have run. The first operation decides the
//! compound's kind: SEQUENCE (the normal case), or one of the operations
//! allowed alone outside a session. What else is checked before an
//! operation runs comes from its entry in the operation table
//! ([`ops::OPS`]). Each result is encoded once, straight into the reply.

use std::hash::{Hash, Hasher};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Poll;

use bytes::Bytes;
use proto::nfs4::*;
use rpc::{Call, Connection, Reply};
use tracing::{debug, error, warn};
use xdr::{Encoder, Pack, Piece, Unpack};

use super::ops::{self, OpDesc, OpFuture};
use crate::exports::export::{ClientRule, Export, Flavor};
use crate::exports::filehandle::parent_hint;
use crate::exports::filehandle::{FhError, FhTarget};
use crate::exports::namespace::PSEUDO_EXPORT;
use crate::exports::Exports;
use crate::handoff::off_thread;
use crate::instance::Server;
use state::session::Session;

/// The current (or saved) filehandle: an object of an export, or a node
/// of the pseudo filesystem (`pseudo` set, `export` = [`PSEUDO_EXPORT`],
/// empty `handle`).
#[derive(Debug, Clone)]
pub struct Fh {
    pub export: u16,
    pub handle: vfs::Handle,
    /// The filehandle as the client sees it.
    pub wire: Bytes,
    /// The pseudo node this is (RFC 8881 §7.3).
    pub pseudo: Option<u16>,
}

impl Fh {
    pub fn key(&self) -> state::FileKey {
        (self.export, self.handle.0.clone())
    }
}

/// The slot SEQUENCE took for this compound (RFC 8881 §2.10.6.1).
///
/// Completed with the reply at the end of the compound. Dropped without
/// that (a panic, or the request's task cancelled) it frees the slot with
/// no reply cached: a retry then gets NFS4ERR_RETRY_UNCACHED_REP
/// (§2.10.6.1.3), since operations may have run, instead of finding the
/// slot in use forever.
pub struct SlotUse {
    pub slotid: u32,
    /// The request's sequence ID on the slot.
    pub seqid: u32,
    pub digest: u64,
    pub cachethis: bool,
    session: Arc<Session>,
    done: bool,
}

impl SlotUse {
    /// Takes charge of `slotid` of `session`, which SEQUENCE admitted.
    pub fn new(
        session: Arc<Session>,
        slotid: u32,
        seqid: u32,
        digest: u64,
        cachethis: bool,
    ) -> Self {
        SlotUse {
            slotid,
            seqid,
            digest,
            cachethis,
            session,
            done: false,
        }
    }

    /// Frees the slot, keeping `reply` (if any) for retries.
    pub fn complete(mut self, reply: Option<Vec<Bytes>>) {
        self.release(reply);
    }

    fn release(&mut self, reply: Option<Vec<Bytes>>) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        let mut t = self.session.slots.lock().unwrap_or_else(|p| p.into_inner());
        t.complete(self.slotid, self.digest, reply);
    }
}

impl Drop for SlotUse {
    fn drop(&mut self) {
        self.release(None);
    }
}

/// Everything an operation sees of its compound.
pub struct Compound {
    pub srv: Arc<Server>,
    /// The exports as the compound began: a reload meanwhile does not
    /// change them under it.
    pub exports: Arc<Exports>,
    pub conn: Arc<Connection>,
    pub auth: rpc::Auth,
    /// The credential's identity as sent, before any export's squashing;
    /// backend calls use [`Compound::creds_for`] instead.
    pub creds: vfs::Creds,
    pub minorversion: u32,
    pub cfh: Option<Fh>,
    pub sfh: Option<Fh>,
    pub cur_stateid: Option<StateId4>,
    pub saved_stateid: Option<StateId4>,
    pub session: Option<Arc<Session>>,
    pub slot: Option<SlotUse>,
    /// Number of operations in the request, and the index of the one running.
    pub nops: usize,
    pub index: usize,
    /// Size of the request's COMPOUND arguments.
    pub request_size: usize,
    /// Digest of the request, for false-retry detection.
    pub digest: u64,
    /// Set by SEQUENCE when the request is a retransmission: the reply to
    /// send again as it was.
    pub replay: Option<Vec<Bytes>>,
    /// The previous operation set the current filehandle (PUTFH,
    /// PUTROOTFH, PUTPUBFH, RESTOREFH) without checking its security
    /// flavor (RFC 8881 §2.6.3.1.1).
    pub sec_pending: bool,
}

/// The result of one operation: typed, or just an opcode and error status
/// (for an operation that could not be decoded or was refused before it
/// ran).
#[allow(clippy::large_enum_variant)]
pub enum OpResult {
    Typed(NfsResOp4),
    Error(u32, NfsStat4),
}

impl OpResult {
    pub fn status(&self) -> NfsStat4 {
        match self {
            OpResult::Typed(r) => r.status(),
            OpResult::Error(_, s) => *s,
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
        }
    }
}

/// The largest error result ([`OpResult::Error`] of SETATTR): room kept
/// after a result when another operation follows, so that one can always
/// at least fail.
const ERROR_RESULT_MAX: usize = 12;

/// An accepted RPC reply's header (RFC 5531 §9): xid, message type,
/// reply status, an AUTH_NONE verifier and the accept status. The session
/// limits count it (RFC 8881 §18.36.3).
const RPC_REPLY_HEADER: usize = 4 + 4 + 4 + 8 + 4;

/// Small replies are kept in the slot even when the client did not ask
/// (RFC 8881 §2.10.6.1.3), sparing it NFS4ERR_RETRY_UNCACHED_REP.
const UNASKED_CACHE_MAX: usize = 2048;

/// The fore channel's reply limits for this request (RFC 8881
/// §2.10.6.4): ca_maxresponsesize, and ca_maxresponsesize_cached when the
/// client asked for the reply to be cached.
struct Limits {
    max: usize,
    cached: Option<usize>,
}

impl Limits {
    fn of(cx: &Compound) -> Option<Limits> {
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
    fn check(&self, size: usize) -> Result<(), NfsStat4> {
        if size > self.max {
            Err(NfsStat4::Nfs4errRepTooBig)
        } else if self.cached.is_some_and(|c| size > c) {
            Err(NfsStat4::Nfs4errRepTooBigToCache)
        } else {
            Ok(())
        }
    }
}

/// Bytes at the start of a request the false-retry digest covers: every
/// operation's arguments but a large WRITE's data.
const DIGEST_HEAD: usize = 512;
/// Bytes at its end: what follows a WRITE's data (a GETATTR, say).
const DIGEST_TAIL: usize = 64;

/// The request's digest, for telling a retry from a false one
/// (RFC 8881 §2.10.6.1.3.1, which leaves the means to the server): its
/// length, its first [`DIGEST_HEAD`] and last [`DIGEST_TAIL`] bytes. A
/// retry that differs only inside a large payload goes unnoticed; hashing
/// whole 1 MiB WRITEs cost 40% of a sequential write's server CPU.
fn digest(b: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    b.len().hash(&mut h);
    if b.len() <= DIGEST_HEAD + DIGEST_TAIL {
        b.hash(&mut h);
    } else {
        b[..DIGEST_HEAD].hash(&mut h);
        b[b.len() - DIGEST_TAIL..].hash(&mut h);
    }
    h.finish()
}

fn creds_of(auth: &rpc::Auth) -> vfs::Creds {
    match auth {
        rpc::Auth::Sys(p) => vfs::Creds {
            uid: p.uid,
            gid: p.gid,
            groups: p.gids.clone(),
        },
        // AUTH_NONE callers are treated as nobody.
        rpc::Auth::None => vfs::Creds {
            uid: 65534,
            gid: 65534,
            groups: Vec::new(),
        },
    }
}

/// `COMPOUND4res` (RFC 8881 §16.2.2): the header, then the results
/// already encoded in `results`.
fn reply(status: NfsStat4, tag: &Bytes, count: u32, results: Encoder) -> Vec<Bytes> {
    let mut out = reply_head(status, tag, count).finish();
    out.extend(results.finish());
    out
}

/// [`reply`] with the results' ranges of files kept as such.
fn reply_pieces(status: NfsStat4, tag: &Bytes, count: u32, results: Encoder) -> Vec<Piece> {
    let mut out: Vec<Piece> = reply_head(status, tag, count)
        .finish()
        .into_iter()
        .map(Piece::Mem)
        .collect();
    out.extend(results.finish_pieces());
    out
}

fn reply_head(status: NfsStat4, tag: &Bytes, count: u32) -> Encoder {
    let mut e = Encoder::with_capacity(12 + tag.len());
    status.pack(&mut e);
    tag.pack(&mut e);
    e.u32(count);
    e
}

/// `results` with its ranges of files read into memory, on the blocking
/// pool; `None` if one can no longer be read in full.
async fn in_memory(results: Encoder) -> Option<Encoder> {
    let pieces = results.finish_pieces();
    let read = off_thread(move || xdr::in_memory(pieces)).await;
    let mut e = Encoder::new();
    for b in read.ok()?.ok()? {
        e.raw(&b);
    }
    Some(e)
}

/// Checks an operation must pass before it runs, in this order: its place
/// in the compound (RFC 8881 §16.2.3, §18.46.3), then what its table entry
/// says: a writable current object, support (§15.1.1.5) and minor
/// version, a current filehandle, and, if it modifies anything, room for
/// its reply (§2.10.6.4). `used` is the reply's size so far; `more`, that
/// another operation follows.
fn admit(
    cx: &Compound,
    d: &OpDesc,
    op: &NfsArgOp4,
    used: usize,
    more: bool,
) -> Result<(), NfsStat4> {
    if cx.index == 0 {
        return match op {
            NfsArgOp4::Sequence(_) => Ok(()),
            _ if d.sessionless() && cx.nops == 1 => Ok(()),
            _ if d.sessionless() => Err(NfsStat4::Nfs4errNotOnlyOp),
            _ => Err(NfsStat4::Nfs4errOpNotInSession),
        };
    }
    if let NfsArgOp4::Sequence(_) = op {
        return Err(NfsStat4::Nfs4errSequencePos);
    }
    if cx.session.is_none() {
        return Err(NfsStat4::Nfs4errOpNotInSession);
    }
    if let (true, Some(fh)) = (d.writes_cfh(), &cx.cfh) {
        cx.check_writable(fh)?;
    }
    if d.handler.is_none() || (d.v42() && cx.minorversion < 2) {
        return Err(NfsStat4::Nfs4errNotsupp);
    }
    if d.needs_fh() && cx.cfh.is_none() {
        return Err(NfsStat4::Nfs4errNofilehandle);
    }
    // A modifying operation runs only if its reply can be sent (and
    // cached when asked): its effect must not be lost to REP_TOO_BIG.
    if let (true, Some(limits)) = (d.modifies(), Limits::of(cx)) {
        let slack = if more { ERROR_RESULT_MAX } else { 0 };
        limits.check(used + d.reply_size(cx, op) + slack)?;
    }
    Ok(())
}

/// Runs an operation; a panic in it (a bug) becomes NFS4ERR_SERVERFAULT
/// for it, logged at most every ten seconds, so the compound still
/// answers and frees its slot.
async fn run_caught(d: &OpDesc, mut fut: OpFuture<'_>) -> OpResult {
    let r = std::future::poll_fn(|tcx| {
        match std::panic::catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(tcx))) {
            Ok(Poll::Ready(r)) => Poll::Ready(Ok(r)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(p) => Poll::Ready(Err(p)),
        }
    })
    .await;
    r.unwrap_or_else(|p| {
        static LAST: AtomicU64 = AtomicU64::new(0);
        if now_and_then(&LAST) {
            let why = p
                .downcast_ref::<&str>()
                .copied()
                .or(p.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("?");
            error!(
                op = d.name,
                "operation panicked (answered SERVERFAULT): {why}"
            );
        }
        OpResult::Error(d.num as u32, NfsStat4::Nfs4errServerfault)
    })
}

/// Runs one COMPOUND call.
pub async fn run(srv: Arc<Server>, call: Call) -> Reply {
    let stats = srv.stats.clone();
    let request_size = call.args.remaining();
    let (reply, nanos) = run_timed(srv, call).await;
    stats.compounds.record(
        crate::observe::stats::reply_status(&reply, true),
        request_size,
        crate::observe::stats::reply_len(&reply),
        nanos,
    );
    reply
}

/// The reply, and the time its operations took (none for a COMPOUND
/// refused before any ran).
async fn run_timed(srv: Arc<Server>, call: Call) -> (Reply, u64) {
    let reply = match run_decoded(srv, call).await {
        Ok(timed) => return timed,
        Err(refused) => refused,
    };
    (reply, 0)
}

async fn run_decoded(srv: Arc<Server>, call: Call) -> Result<(Reply, u64), Reply> {
    let Call {
        mut args,
        auth,
        conn,
        xid,
        ..
    } = call;
    let request_size = args.remaining();
    let req_digest = digest(args.rest());
    let tag = match Bytes::unpack(&mut args) {
        Ok(t) => t,
        Err(e) => {
            warn!(xid, "COMPOUND header undecodable: {e}");
            return Err(Reply::Error(rpc::ReplyError::GarbageArgs));
        }
    };
    let (minorversion, nops) = match (args.u32(), args.count(u32::MAX as usize, 4)) {
        (Ok(m), Ok(n)) => (m, n),
        _ => return Err(Reply::Error(rpc::ReplyError::GarbageArgs)),
    };
    if !(1..=2).contains(&minorversion) {
        let status = NfsStat4::Nfs4errMinorVersMismatch;
        return Err(Reply::Success(reply(status, &tag, 0, Encoder::new())));
    }
    // Every operation is decoded first (up to the first that does not
    // decode, which answers NFS4ERR_BADXDR when reached), so that where
    // the compound runs can be chosen before any of it runs. Not past the
    // most operations a session may have plus one: a longer compound
    // fails at its first operation (TOO_MANY_OPS at SEQUENCE, else
    // NOT_ONLY_OP or OP_NOT_IN_SESSION), so no more are needed, and a
    // client cannot make the server hold more.
    let decodable = nops.min(srv.cfg.max_ops as usize + 1);
    let mut decoded = Vec::with_capacity(decodable.min(16));
    for i in 0..decodable {
        let before = args.remaining();
        // The opcode, for the error result if the arguments do not decode.
        let peeked = args
            .rest()
            .get(..4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            .filter(|n| <OpNum4 as xdr::Discriminant>::from_u32(*n).is_ok())
            .unwrap_or(OpNum4::Illegal as u32);
        match NfsArgOp4::unpack(&mut args) {
            Ok(op) => decoded.push(Ok((op, (before - args.remaining()) as u32))),
            Err(e) => {
                debug!(xid, op = i, "undecodable operation: {e}");
                decoded.push(Err(peeked));
                break;
            }
        }
    }
    // Operations that may wait on the backend, each with (about) one
    // backend call: with two or more, the whole compound goes to the
    // blocking pool once; with one, that call goes alone, as it would.
    let waiting = decoded
        .iter()
        .filter(|op| {
            op.as_ref()
                .is_ok_and(|(op, _)| ops::desc(op.opnum()).is_some_and(|d| !d.quick()))
        })
        .count();
    let cx = Compound {
        creds: creds_of(&auth),
        exports: srv.exports(),
        srv,
        conn,
        auth,
        minorversion,
        cfh: None,
        sfh: None,
        cur_stateid: None,
        saved_stateid: None,
        session: None,
        slot: None,
        nops,
        index: 0,
        request_size,
        digest: req_digest,
        replay: None,
        sec_pending: false,
    };
    if waiting < 2 {
        return Ok(execute(cx, tag, decoded).await);
    }
    // One thread hand-off for the whole compound: its backend calls run
    // in place on this blocking thread (see `on_pool`).
    let rt = tokio::runtime::Handle::current();
    let ran = crate::handoff::iopool::Pool::global()
        .run(move || {
            let _pool = crate::handoff::OnPool::enter();
            rt.block_on(execute(cx, tag, decoded))
        })
        .await;
    ran.map_err(|e| {
        static LAST: AtomicU64 = AtomicU64::new(0);
        if now_and_then(&LAST) {
            error!(xid, "COMPOUND failed on the blocking pool: {e}");
        }
        Reply::Error(rpc::ReplyError::SystemErr)
    })
}

/// A decoded operation and the size of its arguments, or the opcode of
/// one that did not decode.
type Decoded = Result<(NfsArgOp4, u32), u32>;

/// Runs a COMPOUND's decoded operations in order (RFC 8881 §16.2.3) and
/// builds the reply; with the time they took.
async fn execute(mut cx: Compound, tag: Bytes, decoded: Vec<Decoded>) -> (Reply, u64) {
    let nops = cx.nops;
    // The reply before its results: RPC header, status, tag, count.
    let head = RPC_REPLY_HEADER + 4 + 4 + tag.len() + xdr::pad_len(tag.len()) + 4;
    let mut results = Encoder::with_capacity(512);
    let mut count = 0u32;
    let mut status = NfsStat4::Nfs4Ok;
    // Where the previous result starts and its operation, for a WRONGSEC
    // found only by the next operation.
    let mut last = (0, 0);
    // Every operation so far may be cached without the client asking.
    let mut cacheable = true;
    // An operation ran whose reply a persistent session keeps.
    let mut persists = false;
    let stats = cx.srv.stats.clone();
    let nfs4 = stats.program(crate::observe::stats::Program::Nfs4);
    // Each operation's time runs from the end of the one before: one
    // clock read per operation.
    let mut t0 = std::time::Instant::now();
    let start = t0;
    let took = |end: std::time::Instant| end.duration_since(start).as_nanos() as u64;
    for (i, op) in decoded.into_iter().enumerate() {
        cx.index = i;
        let (op, arg_size) = match op {
            Ok(op) => op,
            Err(peeked) => {
                status = NfsStat4::Nfs4errBadxdr;
                let mark = results.len();
                OpResult::Error(peeked, status).pack(&mut results);
                nfs4.op(peeked)
                    .record(status as u32, 0, results.len() - mark, 0);
                count += 1;
                break;
            }
        };
        let desc = ops::desc(op.opnum());
        // §2.6.3.1.1.7: a put-filehandle operation followed by one that
        // uses the filehandle fails with NFS4ERR_WRONGSEC itself when the
        // flavor is not one the filehandle's export accepts.
        if std::mem::take(&mut cx.sec_pending) && !desc.is_some_and(OpDesc::handles_wrongsec) {
            if let Some(Err(s)) = cx.cfh.as_ref().map(|fh| cx.check_flavor(fh)) {
                results.truncate(last.0);
                OpResult::Error(last.1, s).pack(&mut results);
                status = s;
                break;
            }
        }
        let Some(d) = desc else {
            status = NfsStat4::Nfs4errOpIllegal;
            OpResult::Error(OpNum4::Illegal as u32, status).pack(&mut results);
            nfs4.op(OpNum4::Illegal as u32)
                .record(status as u32, arg_size as usize, 0, 0);
            count += 1;
            break;
        };
        let opnum = d.num as u32;
        let mark = results.len();
        last = (mark, opnum);
        persists |= crate::stable::sessions::persists(&op);
        let more = i + 1 < nops;
        let r = match (admit(&cx, d, &op, head + mark, more), d.handler) {
            (Ok(()), Some(handler)) => run_caught(d, handler(&mut cx, op)).await,
            (Err(s), _) => OpResult::Error(opnum, s),
            (Ok(()), None) => OpResult::Error(opnum, NfsStat4::Nfs4errNotsupp),
        };
        // A replayed SEQUENCE answers with the cached reply as it was.
        if let Some(cached) = cx.replay.take() {
            return (Reply::Success(cached), took(std::time::Instant::now()));
        }
        r.pack(&mut results);
        count += 1;
        status = r.status();
        // Checked once encoded; a modifying operation was checked before
        // it ran, so this only catches a wrong estimate.
        if let Some(limits) = Limits::of(&cx) {
            let slack = if status == NfsStat4::Nfs4Ok && more {
                ERROR_RESULT_MAX
            } else {
                0
            };
            if let Err(s) = limits.check(head + results.len() + slack) {
                if d.modifies() && status == NfsStat4::Nfs4Ok {
                    static LAST: AtomicU64 = AtomicU64::new(0);
                    if now_and_then(&LAST) {
                        warn!(op = d.name, "reply larger than its estimate");
                    }
                }
                results.truncate(mark);
                status = s;
                OpResult::Error(opnum, status).pack(&mut results);
            }
        }
        let now = std::time::Instant::now();
        let nanos = now.duration_since(t0).as_nanos() as u64;
        t0 = now;
        count_op(
            &cx,
            &stats,
            opnum,
            status,
            arg_size,
            results.len() - mark,
            nanos,
        );
        cacheable &= d.cacheable();
        cx.sec_pending = d.puts_fh() && status == NfsStat4::Nfs4Ok;
        if status != NfsStat4::Nfs4Ok {
            break;
        }
    }
    // The records of clients this compound purged are gone from stable
    // storage before it is answered: it may have taken a lock one of them
    // held, which that client must not reclaim after a restart (RFC 8881
    // §8.4.3).
    cx.srv.settle_records().await;
    // A READ answered with a range of a file (only when the slot keeps no
    // reply): sent from the page cache, and not kept; unless a namespace
    // change in the same COMPOUND must keep its reply across a restart,
    // which then reads it into memory.
    let results = if results.has_files() {
        if !persists {
            if let Some(slot) = cx.slot.take() {
                slot.complete(None);
            }
            return (
                Reply::Pieces(reply_pieces(status, &tag, count, results)),
                took(t0),
            );
        }
        match in_memory(results).await {
            Some(r) => r,
            None => return (Reply::Error(rpc::ReplyError::SystemErr), took(t0)),
        }
    } else {
        results
    };
    let out = reply(status, &tag, count, results);
    if let Some(slot) = cx.slot.take() {
        let size: usize = out.iter().map(Bytes::len).sum();
        let keep = size <= slot.session.fore.maxresponsesize_cached as usize
            && (slot.cachethis || (cacheable && size <= UNASKED_CACHE_MAX));
        if keep && persists {
            keep_across_restarts(&slot, &out).await;
        }
        slot.complete(keep.then(|| out.clone()));
    }
    (Reply::Success(out), took(t0))
}

/// Counts operation `opnum`, which took `nanos`, under its number and
/// under the export of the current filehandle (its data bytes for READ
/// and WRITE: their results and arguments).
fn count_op(
    cx: &Compound,
    stats: &crate::observe::stats::Stats,
    opnum: u32,
    status: NfsStat4,
    arg_size: u32,
    result_size: usize,
    nanos: u64,
) {
    stats
        .program(crate::observe::stats::Program::Nfs4)
        .op(opnum)
        .record(status as u32, arg_size as usize, result_size, nanos);
    if let Some(fh) = cx.cfh.as_ref().filter(|fh| fh.pseudo.is_none()) {
        let ok = status == NfsStat4::Nfs4Ok;
        let (read, written) = match opnum {
            n if n == OpNum4::Read as u32 && ok => (result_size as u64, 0),
            n if n == OpNum4::Write as u32 && ok => (0, arg_size as u64),
            _ => (0, 0),
        };
        stats.export_op(fh.export, ok, read, written);
    }
}

/// On a persistent session, puts the reply of a request that changed the
/// namespace on stable storage before it is sent, so that
/// its retry after a restart gets it back (RFC 8881 §2.10.6.5;
/// `stable::sessions`). If that fails the reply is sent all the same (the
/// change is made): a retry after a restart then finds the session dead.
async fn keep_across_restarts(slot: &SlotUse, out: &[Bytes]) {
    let Some(file) = super::session_io::io(&slot.session).persist.get().cloned() else {
        return;
    };
    let reply = out.to_vec();
    let (slotid, seqid, digest) = (slot.slotid, slot.seqid, slot.digest);
    let r = match off_thread(move || file.keep(slotid, seqid, digest, &reply)).await {
        Ok(r) => r.map(|_| ()),
        Err(_) => Err(std::io::Error::other("panicked")),
    };
    if let Err(e) = r {
        static LAST: AtomicU64 = AtomicU64::new(0);
        if now_and_then(&LAST) {
            warn!("persistent session: a reply could not be kept: {e}");
        }
    }
}

/// True at most once every ten seconds per `last` (the time it was last
/// true), to keep what a client can provoke from flooding the log.
fn now_and_then(last: &AtomicU64) -> bool {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let then = last.load(Ordering::Relaxed);
    now >= then + 10
        && last
            .compare_exchange(then, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
}

impl Compound {
    /// Who the client is, as the call's credential says (RFC 8881
    /// §2.4.3).
    pub fn principal(&self) -> state::Principal {
        match &self.auth {
            rpc::Auth::None => state::Principal::None,
            rpc::Auth::Sys(p) => state::Principal::Sys {
                uid: p.uid,
                gid: p.gid,
            },
        }
    }

    /// The current filehandle (NFS4ERR_NOFILEHANDLE without one).
    pub fn cfh(&self) -> Result<&Fh, NfsStat4> {
        self.cfh.as_ref().ok_or(NfsStat4::Nfs4errNofilehandle)
    }

    /// Replaces the current filehandle; the current stateid goes with the
    /// old one (RFC 8881 §16.2.3.1.2).
    pub fn set_cfh(&mut self, fh: Fh) {
        self.cfh = Some(fh);
        self.cur_stateid = None;
    }

    /// Leaves no current filehandle, as SECINFO and SECINFO_NO_NAME do
    /// (RFC 8881 §2.6.3.1.1.8).
    pub fn consume_cfh(&mut self) {
        self.cfh = None;
        self.cur_stateid = None;
    }

    /// Makes the root of the namespace the current filehandle (PUTROOTFH,
    /// and PUTPUBFH, whose public filehandle is the root here: RFC 8881
    /// §18.20, §18.21).
    pub fn put_root_fh(&mut self) -> Result<(), NfsStat4> {
        let fh = self.root_fh()?;
        self.set_cfh(fh);
        Ok(())
    }

    pub fn export(&self, id: u16) -> Result<&Arc<Export>, NfsStat4> {
        self.exports.get(id).ok_or(NfsStat4::Nfs4errStale)
    }

    /// A filehandle for a directory of an export (or an object reached
    /// other than by name).
    pub fn make_fh(&self, export: u16, handle: vfs::Handle) -> Fh {
        self.fh_with(export, handle, None)
    }

    /// A filehandle for the object `handle` with attributes `attr`,
    /// reached as an entry of the directory `dir`: a non-directory's
    /// handle names `dir` where the backend wants it ([`parent_hint`]).
    pub fn make_child_fh(
        &self,
        export: u16,
        handle: vfs::Handle,
        attr: &vfs::Attr,
        dir: &vfs::Handle,
    ) -> Fh {
        let parent = self
            .exports
            .get(export)
            .and_then(|e| parent_hint(&*e.vfs, attr, dir));
        self.fh_with(export, handle, parent)
    }

    fn fh_with(&self, export: u16, handle: vfs::Handle, parent: Option<vfs::Handle>) -> Fh {
        let wire = self.srv.fh.encode(&FhTarget::Object {
            export,
            handle: handle.clone(),
            parent,
        });
        Fh {
            export,
            handle,
            wire,
            pseudo: None,
        }
    }

    /// The filehandle of pseudo node `node`.
    pub fn pseudo_fh(&self, node: u16) -> Fh {
        Fh {
            export: PSEUDO_EXPORT,
            handle: vfs::Handle(Bytes::new()),
            wire: self.srv.fh.encode(&FhTarget::Pseudo(node)),
            pseudo: Some(node),
        }
    }

    /// The root of an export, for a client entering it: checked against
    /// the export's client rules (but not its flavors: see
    /// [`Compound::check_flavor`]).
    pub fn export_root_fh(&self, export: u16) -> Result<Fh, NfsStat4> {
        self.admit(export)?;
        let e = self.export(export)?;
        Ok(self.make_fh(e.id, e.vfs.root()))
    }

    /// The root of the server's namespace: the pseudo root, or the export
    /// at "/".
    pub fn root_fh(&self) -> Result<Fh, NfsStat4> {
        if let Some(id) = self.exports.ns.root_export {
            return self.export_root_fh(id);
        }
        if self.exports.ns.active() {
            return Ok(self.pseudo_fh(0));
        }
        Err(NfsStat4::Nfs4errNoent)
    }

    /// Decodes a filehandle a client presented, checking the client may
    /// use its export.
    pub fn parse_fh(&self, wire: &Bytes) -> Result<Fh, NfsStat4> {
        match self.srv.fh.decode(wire) {
            Ok(FhTarget::Object {
                export,
                handle,
                parent,
            }) => {
                self.admit(export)?;
                if let Some(p) = parent {
                    self.export(export)?.vfs.note_parent(&handle, &p);
                }
                Ok(Fh {
                    export,
                    handle,
                    wire: wire.clone(),
                    pseudo: None,
                })
            }
            // A pseudo node of another configuration.
            Ok(FhTarget::Pseudo(n)) if self.exports.ns.node(n).is_none() => {
                Err(NfsStat4::Nfs4errStale)
            }
            Ok(FhTarget::Pseudo(n)) => Ok(self.pseudo_fh(n)),
            // Ours, for an export that is gone or now another directory.
            Err(FhError::Stale) => Err(NfsStat4::Nfs4errStale),
            Err(FhError::Bad) => Err(NfsStat4::Nfs4errBadhandle),
        }
    }

    /// The client rule this compound's client is under for `export`:
    /// NFS4ERR_ACCESS without one, NFS4ERR_PERM from an unprivileged port
    /// when the rule asks for a privileged one.
    pub fn admit(&self, export: u16) -> Result<&ClientRule, NfsStat4> {
        let e = self.export(export)?;
        let peer = self.conn.peer();
        e.rules
            .admit(peer)
            .inspect_err(|s| refusal_warning(&e.path, peer, *s))
    }

    /// NFS4ERR_WRONGSEC unless the credential's flavor is one `fh`'s
    /// export accepts; pseudo nodes accept every flavor.
    pub fn check_flavor(&self, fh: &Fh) -> Result<(), NfsStat4> {
        if fh.pseudo.is_some() {
            return Ok(());
        }
        if self.export(fh.export)?.rules.allows(Flavor::of(&self.auth)) {
            Ok(())
        } else {
            Err(NfsStat4::Nfs4errWrongsec)
        }
    }

    /// The flavors `fh`'s export accepts, as SECINFO lists them.
    pub fn flavors(&self, fh: &Fh) -> Result<Vec<SecInfo4>, NfsStat4> {
        let sec = match fh.pseudo {
            Some(_) => vec![Flavor::Sys, Flavor::None],
            None => self.export(fh.export)?.rules.sec.clone(),
        };
        Ok(sec
            .into_iter()
            .map(|f| SecInfo4::Flavor(f.number()))
            .collect())
    }

    /// NFS4ERR_ROFS if `fh` may not be modified by this client: a pseudo
    /// node, or an object of an export it may only read.
    pub fn check_writable(&self, fh: &Fh) -> Result<(), NfsStat4> {
        if fh.pseudo.is_some() || self.admit(fh.export)?.read_only {
            return Err(NfsStat4::Nfs4errRofs);
        }
        Ok(())
    }

    /// The identity backend calls on `export` act with: the credential's,
    /// squashed as the client's rule says.
    pub fn creds_for(&self, export: u16) -> Result<vfs::Creds, NfsStat4> {
        let rule = self.admit(export)?;
        if !self.export(export)?.rules.allows(Flavor::of(&self.auth)) {
            return Err(NfsStat4::Nfs4errWrongsec);
        }
        Ok(rule.creds(&self.auth))
    }

    /// Runs a backend call that never blocks ([`vfs::Vfs::read_nowait`]
    /// and the like) right here, on the async thread, with the identity
    /// [`Compound::vfs`] would use; `None` if the backend cannot answer
    /// without blocking (or `export` is a pseudo node), for the caller to
    /// go through [`Compound::vfs`].
    pub fn vfs_nowait<T, F>(&self, export: u16, f: F) -> Option<Result<T, NfsStat4>>
    where
        F: FnOnce(&dyn vfs::Vfs, &vfs::Creds) -> Option<vfs::Result<T>>,
    {
        if export == PSEUDO_EXPORT {
            return None;
        }
        let fs = match self.export(export) {
            Ok(e) => &e.vfs,
            Err(s) => return Some(Err(s)),
        };
        let creds = match self.creds_for(export) {
            Ok(c) => c,
            Err(s) => return Some(Err(s)),
        };
        f(fs.as_ref(), &creds).map(|r| r.map_err(crate::errors::from_errno))
    }

    /// The backend's attributes of `fh`: without blocking when the backend
    /// can say ([`vfs::Vfs::getattr_nowait`]), else on the blocking pool.
    pub async fn attr_of(&self, fh: &Fh) -> Result<vfs::Attr, NfsStat4> {
        if let Some(a) = self.vfs_nowait(fh.export, |v, _| v.getattr_nowait(&fh.handle)) {
            return a;
        }
        let handle = fh.handle.clone();
        self.vfs(fh.export, move |v, _| v.getattr(&handle)).await
    }

    /// Runs a backend call for `fh`'s export on the blocking pool, with the
    /// identity the export's rules give this compound's client. A pseudo
    /// node has no backend: such calls answer NFS4ERR_ISDIR (operations
    /// that mean something for a pseudo directory handle it before).
    pub async fn vfs<T, F>(&self, export: u16, f: F) -> Result<T, NfsStat4>
    where
        T: Send + 'static,
        F: FnOnce(&dyn vfs::Vfs, &vfs::Creds) -> vfs::Result<T> + Send + 'static,
    {
        if export == PSEUDO_EXPORT {
            return Err(NfsStat4::Nfs4errIsdir);
        }
        let fs = self.export(export)?.vfs.clone();
        let creds = self.creds_for(export)?;
        self.blocking(fs, creds, f).await
    }

    /// Runs a backend call on the blocking pool with `creds`, no rules
    /// applied.
    pub async fn blocking<T, F>(
        &self,
        fs: std::sync::Arc<dyn vfs::Vfs>,
        creds: vfs::Creds,
        f: F,
    ) -> Result<T, NfsStat4>
    where
        T: Send + 'static,
        F: FnOnce(&dyn vfs::Vfs, &vfs::Creds) -> vfs::Result<T> + Send + 'static,
    {
        match off_thread(move || f(fs.as_ref(), &creds)).await {
            Ok(r) => r.map_err(crate::errors::from_errno),
            Err(e) => {
                warn!("backend call failed: {e}");
                Err(NfsStat4::Nfs4errServerfault)
            }
        }
    }

    /// Resolves the special "current stateid" (RFC 8881 §16.2.3.1.2).
    pub fn resolve_stateid(&self, sid: &StateId4) -> Result<StateId4, NfsStat4> {
        if *sid == StateId4::CURRENT {
            self.cur_stateid.ok_or(NfsStat4::Nfs4errBadStateid)
        } else {
            Ok(*sid)
        }
    }

    /// Checks the stateid of an I/O operation on the current filehandle
    /// for `access` (RFC 8881 §8.2); returns whether the file still has
    /// to be checked to be a regular file (a special stateid was used).
    pub fn check_io(&self, sid: &StateId4, access: u32) -> Result<bool, NfsStat4> {
        self.check_io_of(self.cfh()?, sid, access)
    }

    /// [`Compound::check_io`] for the object `fh`.
    pub fn check_io_of(&self, fh: &Fh, sid: &StateId4, access: u32) -> Result<bool, NfsStat4> {
        let client = self.clientid()?;
        let sid = self.resolve_stateid(sid)?;
        self.srv.state().check_io(client, &sid, &fh.key(), access)
    }

    /// The client this compound's session belongs to.
    pub fn clientid(&self) -> Result<ClientId4, NfsStat4> {
        self.session
            .as_ref()
            .map(|s| s.client)
            .ok_or(NfsStat4::Nfs4errOpNotInSession)
    }
}

/// Checks a component name (RFC 8881 §14.2): empty or not UTF-8 (or
/// containing the non-characters U+FFFE, U+FFFF) is
/// NFS4ERR_INVAL, "." and ".." are NFS4ERR_BADNAME, '/' or NUL is
/// NFS4ERR_BADCHAR, longer than 255 bytes is NFS4ERR_NAMETOOLONG.
pub fn check_name(name: &Bytes) -> Result<Bytes, NfsStat4> {
    match std::str::from_utf8(name) {
        // U+FFFE and U+FFFF are not characters (RFC 8881 §14.4 requires
        // valid UTF-8 names; pynfs RNM8/RNM9 treat these as invalid).
        Ok(s) if !s.is_empty() && !s.contains(['\u{fffe}', '\u{ffff}']) => {}
        _ => return Err(NfsStat4::Nfs4errInval),
    }
    if &name[..] == b"." || &name[..] == b".." {
        return Err(NfsStat4::Nfs4errBadname);
    }
    if name.iter().any(|&c| c == b'/' || c == 0) {
        return Err(NfsStat4::Nfs4errBadchar);
    }
    if name.len() > 255 {
        return Err(NfsStat4::Nfs4errNametoolong);
    }
    Ok(name.clone())
}

/// Says in the log why a client was refused an export (at most every ten
/// seconds, so a client retrying in a loop cannot flood it): otherwise the
/// user only sees "Operation not permitted" from mount.
fn refusal_warning(export: &str, peer: std::net::SocketAddr, status: NfsStat4) {
    static LAST: AtomicU64 = AtomicU64::new(0);
    if !now_and_then(&LAST) {
        return;
    }
    let why = match status {
        NfsStat4::Nfs4errPerm => {
            "its source port is not privileged and the export's rule has secure = true"
        }
        NfsStat4::Nfs4errAccess => "no client rule of the export matches its address",
        _ => "refused",
    };
    warn!(%peer, export, "client refused: {why}");
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicU32};
    use std::sync::Mutex;

    use super::*;
    use state::session::BackChannel;
    use state::slots::{CacheMemory, SlotDecision, SlotError, SlotTable};

    fn session() -> Arc<Session> {
        Arc::new(Session {
            id: [1; 16],
            client: 1,
            fore: ChannelAttrs4::default(),
            flags: 0,
            slots: Mutex::new(SlotTable::new(2, CacheMemory::new(1 << 20))),
            back: Mutex::new(BackChannel {
                program: 0,
                sec: Vec::new(),
                attrs: ChannelAttrs4::default(),
                conns: Vec::new(),
                seqid: 1,
            }),
            lease: Arc::new(state::lease::Lease::new(Default::default())),
            cb_down: AtomicBool::new(false),
            minorversion: AtomicU32::new(1),
            io: super::super::session_io::SessionIo::boxed(),
        })
    }

    #[test]
    fn the_digest_covers_arguments_not_bulk_data() {
        let mut write = vec![7u8; 100];
        write.extend(vec![0u8; 1 << 20]);
        write.extend(vec![9u8; 40]);
        let d = digest(&write);
        // Other arguments (before the data), another length, another
        // trailing operation: a false retry.
        for at in [0, 99, write.len() - 1] {
            let mut other = write.clone();
            other[at] ^= 1;
            assert_ne!(digest(&other), d, "byte {at}");
        }
        assert_ne!(digest(&write[..write.len() - 1]), d);
        // Other data in the middle of a large payload: not looked at.
        let mut data = write.clone();
        data[1 << 19] = 1;
        assert_eq!(digest(&data), d);
        // Small requests are covered whole.
        let small = vec![3u8; DIGEST_HEAD + DIGEST_TAIL];
        for at in 0..small.len() {
            let mut other = small.clone();
            other[at] ^= 1;
            assert_ne!(digest(&other), digest(&small), "byte {at}");
        }
    }

    fn begin(s: &Session, seqid: u32) -> Result<SlotDecision, SlotError> {
        s.slots.lock().unwrap().begin(0, seqid, 9)
    }

    #[test]
    fn a_slot_is_freed_on_every_exit_path() {
        let s = session();
        // Completed: a retry gets the cached reply.
        assert_eq!(begin(&s, 1), Ok(SlotDecision::Execute));
        let reply = vec![Bytes::from_static(b"reply")];
        SlotUse::new(s.clone(), 0, 1, 9, true).complete(Some(reply.clone()));
        assert_eq!(begin(&s, 1), Ok(SlotDecision::Replay(reply)));
        // Dropped mid-compound (a panic unwinding, a cancelled task): the
        // slot is free, the retry told its reply was not kept.
        assert_eq!(begin(&s, 2), Ok(SlotDecision::Execute));
        let slot = SlotUse::new(s.clone(), 0, 2, 9, true);
        assert_eq!(begin(&s, 2), Err(SlotError::InProgress));
        let unwound = std::panic::catch_unwind(AssertUnwindSafe(move || {
            let _held = slot;
            panic!("an operation's bug");
        }));
        assert!(unwound.is_err());
        assert_eq!(begin(&s, 2), Err(SlotError::Uncached));
        assert_eq!(begin(&s, 3), Ok(SlotDecision::Execute));
    }

    #[tokio::test]
    async fn a_panicking_operation_answers_serverfault() {
        let d = ops::desc(OpNum4::Write as u32).unwrap();
        let ok: OpFuture<'static> = Box::pin(async { OpResult::Error(1, NfsStat4::Nfs4errPerm) });
        assert_eq!(run_caught(d, ok).await.status(), NfsStat4::Nfs4errPerm);
        let bug: OpFuture<'static> = Box::pin(async {
            tokio::task::yield_now().await;
            panic!("an operation's bug")
        });
        let r = run_caught(d, bug).await;
        assert!(matches!(
            r,
            OpResult::Error(n, NfsStat4::Nfs4errServerfault) if n == OpNum4::Write as u32
        ));
    }

    #[test]
    fn limits_refuse_what_exceeds_them() {
        let asked = Limits {
            max: 100,
            cached: Some(50),
        };
        assert_eq!(asked.check(50), Ok(()));
        assert_eq!(asked.check(51), Err(NfsStat4::Nfs4errRepTooBigToCache));
        assert_eq!(asked.check(101), Err(NfsStat4::Nfs4errRepTooBig));
        let unasked = Limits {
            max: 100,
            cached: None,
        };
        assert_eq!(unasked.check(100), Ok(()));
    }
}
