//! COMPOUND processing (RFC 8881 §16.2, §2.10.6 for sessions).
//!
//! Operations are decoded one at a time, so a malformed or unknown
//! operation gets its own error result (NFS4ERR_BADXDR, NFS4ERR_OP_ILLEGAL)
//! after the ones before it have run. The first operation decides the
//! compound's kind: SEQUENCE (the normal case), or one of the operations
//! allowed alone outside a session. What else is checked before an
//! operation runs comes from its entry in the operation table
//! ([`ops::OPS`]). Each result is encoded once, straight into the reply.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::task::Poll;

use bytes::Bytes;
use proto::nfs4::*;
use rpc::{Call, Reply};
use tracing::{debug, error, warn};
use xdr::{Encoder, Pack, Unpack};

pub mod context;
pub mod reply;
pub mod slot;
pub mod v40;

use context::*;
pub use context::{check_name, Compound, Fh};
pub use reply::OpResult;
use reply::*;
pub use slot::SlotUse;
use slot::*;

use super::ops::{self, OpDesc, OpFuture};
use crate::instance::Server;

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
    if cx.minorversion == 0 {
        // NFSv4.0 has no sessions (RFC 7530 §15.2): any operation may
        // come first, and its own operations are not NFSv4.1's.
        return admit_checks(cx, d, op, used, more);
    }
    if d.v40() {
        // RFC 8881 §18: "MUST NOT implement" in NFSv4.1.
        return Err(NfsStat4::Nfs4errNotsupp);
    }
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
    admit_checks(cx, d, op, used, more)
}

/// [`admit`]'s checks after the operation's place in the compound.
fn admit_checks(
    cx: &Compound,
    d: &OpDesc,
    op: &NfsArgOp4,
    used: usize,
    more: bool,
) -> Result<(), NfsStat4> {
    // An absent file system (a referral, RFC 8881 §11.3): an operation
    // that starts there is not performed, but GETATTR, VERIFY and
    // NVERIFY may ask where it went (their own check); operations that
    // set the current filehandle need none.
    if let (
        true,
        Some(Fh {
            absent: Some(_), ..
        }),
    ) = (d.needs_fh(), &cx.cfh)
    {
        if !matches!(
            op,
            NfsArgOp4::GetAttr(_) | NfsArgOp4::Verify(_) | NfsArgOp4::NVerify(_)
        ) {
            return Err(NfsStat4::Nfs4errMoved);
        }
    }
    // An export not served here now (RFC 8881 §11.14): moved away,
    // leaving or arriving ([`crate::exports::away`]).
    if let (true, Some(fh)) = (d.needs_fh(), &cx.cfh) {
        if fh.pseudo.is_none() && fh.absent.is_none() {
            if let Some(a) = cx.srv.away.get(fh.export) {
                away(cx, &a, op, fh.export)?;
            }
        }
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

/// What an operation on an export that is away is told: on one served
/// elsewhere, NFS4ERR_MOVED (§11.3, which also tells the client its lease
/// moved, §18.46.3), but GETATTR, which may ask where it went
/// (`attrs::get_with`); on one leaving, NFS4ERR_DELAY for what would
/// change its state while the state is handed over; on one arriving, or
/// one whose move's outcome this server is waiting to learn,
/// NFS4ERR_DELAY.
fn away(
    cx: &Compound,
    a: &crate::exports::away::Away,
    op: &NfsArgOp4,
    export: u16,
) -> Result<(), NfsStat4> {
    use crate::exports::away::Away;
    match a {
        Away::Elsewhere(_) if matches!(op, NfsArgOp4::GetAttr(_)) => Ok(()),
        Away::Elsewhere(_) => {
            if let Some(s) = &cx.session {
                cx.srv.state().moved_seen(s.client, export);
            }
            Err(NfsStat4::Nfs4errMoved)
        }
        Away::Arriving | Away::Uncertain(_) => Err(NfsStat4::Nfs4errDelay),
        Away::Leaving => match op {
            NfsArgOp4::Open(_)
            | NfsArgOp4::OpenDowngrade(_)
            | NfsArgOp4::Close(_)
            | NfsArgOp4::Lock(_)
            | NfsArgOp4::LockU(_)
            | NfsArgOp4::LayoutGet(_)
            | NfsArgOp4::GetDirDelegation(_) => Err(NfsStat4::Nfs4errDelay),
            _ => Ok(()),
        },
    }
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
    if minorversion > 2 {
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
    // NFSv4.0 has no session to say how many operations a COMPOUND may
    // have: more than the server takes is NFS4ERR_RESOURCE (RFC 7530
    // §15.2), before any runs.
    if minorversion == 0 && nops > srv.cfg.max_ops as usize {
        let status = NfsStat4::Nfs4errResource;
        return Err(Reply::Success(reply(status, &tag, 0, Encoder::new())));
    }
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
    if tracing::enabled!(tracing::Level::TRACE) {
        let opnums: Vec<u32> = decoded
            .iter()
            .map(|op| match op {
                Ok((op, _)) => op.opnum(),
                Err(n) => *n,
            })
            .collect();
        tracing::trace!(xid, minorversion, ?opnums, "COMPOUND");
    }
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
        client40: None,
        open_confirm: false,
    };
    // NFSv4.0: a retransmission of a COMPOUND that changed something is
    // answered from the duplicate request cache (`v40::Drc`).
    let drc = (minorversion == 0
        && decoded.iter().any(|op| {
            op.as_ref()
                .is_ok_and(|(op, _)| ops::desc(op.opnum()).is_some_and(|d| d.modifies()))
        }))
    .then(|| (cx.conn.peer(), xid, req_digest));
    if let Some((peer, xid, digest)) = drc {
        if let Some(r) = cx.srv.drc40.get(peer, xid, digest) {
            return Ok((Reply::Success(r), 0));
        }
    }
    // The server only for a reply to keep: no reference count taken for
    // every other COMPOUND.
    let drc = drc.map(|key| (key, cx.srv.clone()));
    let keep = move |done: (Reply, u64)| {
        if let (Some(((peer, xid, digest), srv)), Reply::Success(r)) = (drc, &done.0) {
            srv.drc40.keep(peer, xid, digest, r);
        }
        done
    };
    if waiting < 2 {
        return Ok(keep(execute(cx, tag, decoded).await));
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
    ran.map(keep).map_err(|e| {
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
        if cx.minorversion == 0 && opnum > v40::LAST_OP {
            // An NFSv4.1 operation in an NFSv4.0 COMPOUND (RFC 7530 §15.2).
            status = NfsStat4::Nfs4errOpIllegal;
            OpResult::Error(OpNum4::Illegal as u32, status).pack(&mut results);
            count += 1;
            break;
        }
        let admitted = admit(&cx, d, &op, head + mark, more);
        let begun = match admitted {
            Ok(()) if cx.minorversion == 0 => {
                v40::identify(&mut cx, &op).and_then(|()| v40::begin(&mut cx, &op))
            }
            Ok(()) => Ok(v40::Begun::Plain),
            Err(s) => Err(s),
        };
        let (r, seq) = match (begun, d.handler) {
            (Ok(v40::Begun::Replay(r)), _) => (OpResult::Replayed(r), None),
            (Ok(begun), Some(handler)) => {
                let r = run_caught(d, handler(&mut cx, op)).await;
                (
                    r,
                    if let v40::Begun::Run(s) = begun {
                        Some(s)
                    } else {
                        None
                    },
                )
            }
            (Err(s), _) => (OpResult::Error(opnum, s), None),
            (Ok(_), None) => (OpResult::Error(opnum, NfsStat4::Nfs4errNotsupp), None),
        };
        let r = if cx.minorversion == 0 {
            v40::result40(opnum, r)
        } else {
            r
        };
        if let Some(seq) = seq {
            seq.end(r.status(), xdr::to_bytes(&r), cx.cur_stateid);
        }
        cx.open_confirm = false;
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicU32};
    use std::sync::Mutex;

    use super::*;
    use state::session::BackChannel;
    use state::session::Session;
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
                ident: 0,
            }),
            lease: Arc::new(state::lease::Lease::new(Default::default())),
            cb_down: AtomicBool::new(false),
            minorversion: AtomicU32::new(1),
            owner_names: AtomicBool::new(false),
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
