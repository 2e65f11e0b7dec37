//! One TCP connection carrying RPC in both directions (RFC 5531; RFC 8881
//! §2.9.3.1 for the NFSv4.1 back channel sharing the fore connection).
//!
//! Incoming CALLs are handed to a [`Service`] as concurrent tasks and
//! answered in whatever order they finish; incoming REPLYs complete the
//! matching outgoing [`Connection::call`]. Server and client use the same
//! type: the server calls back over it, the client serves callbacks on it.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tracing::{debug, warn, Instrument};
use xdr::{Decoder, Encoder, Pack, Piece, Unpack};

use crate::admit;
use crate::msg::*;
use crate::out::{Flushed, Out, Queued};
use crate::ratelimit::RateLimit;
use crate::record::{record_header, BufferBudget, RecordError, RecordReader};

/// The caller's identity as its credential states it (RFC 5531 §8.2, App. A).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    None,
    Sys(AuthSysParms),
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
        }
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

/// A call received from the peer, with its arguments not yet decoded.
pub struct Call {
    pub xid: u32,
    pub prog: u32,
    pub vers: u32,
    pub proc_: u32,
    pub auth: Auth,
    pub args: Decoder,
    pub conn: Arc<Connection>,
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

pub type ReplyFuture = Pin<Box<dyn Future<Output = Reply> + Send + 'static>>;

/// A program (or several) served on a connection.
pub trait Service: Send + Sync + 'static {
    fn call(&self, call: Call) -> ReplyFuture;
    /// The connection has closed.
    fn disconnected(&self, _conn: &Arc<Connection>) {}
}

/// Limits for a connection, and for the connections of one listener
/// ([`crate::serve`]). Every limit holds whatever the peer sends.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnConfig {
    /// Largest record accepted (RFC 5531 §11), in bytes.
    pub max_record: usize,
    /// Calls accepted and not yet answered on the wire, per connection.
    pub max_in_flight: usize,
    /// Bytes a connection may hold for its calls (the arguments of calls
    /// being processed, the replies not yet written) before it stops being
    /// read until its peer takes replies (back-pressure on that connection
    /// only).
    pub max_pending_bytes: usize,
    /// Bytes counted for a call's reply until the reply is known; bounds
    /// how many calls one connection runs at once.
    pub reply_reserve: usize,
    /// Bytes buffered for records not yet complete, in total over the
    /// connections of a listener (each connection also buffers up to
    /// [`crate::record::FREE_PER_CONN`] without counting). A connection
    /// over it waits; the read timeout still runs.
    pub max_buffered_total: usize,
    /// Connections open at once per listener; at the cap a new connection
    /// is still accepted and the one idle longest is closed in its place
    /// (`rpc::admit`). Also at most three quarters of the descriptor
    /// limit.
    pub max_connections: usize,
    /// Connections open at once from one source address (`None`: a
    /// quarter of the cap, but at least 16 or the cap); over it, that
    /// address's connection idle longest is closed for the new one.
    pub max_connections_per_source: Option<usize>,
    /// A record begun must be complete within this time.
    pub read_timeout: Option<Duration>,
    /// A connection whose peer takes no reply bytes for this long is closed.
    pub write_timeout: Option<Duration>,
    /// A connection with nothing received, sent or in progress for this
    /// long is closed. Keep it above the NFSv4 lease: a client holding
    /// state renews it at least once per lease (RFC 8881 §8.3).
    pub idle_timeout: Option<Duration>,
}

impl Default for ConnConfig {
    fn default() -> Self {
        ConnConfig {
            max_record: 4 * 1024 * 1024 + 64 * 1024,
            max_in_flight: 1024,
            max_pending_bytes: 8 * 1024 * 1024,
            reply_reserve: 128 * 1024,
            max_buffered_total: 64 * 1024 * 1024,
            max_connections: 4096,
            max_connections_per_source: None,
            read_timeout: Some(Duration::from_secs(30)),
            write_timeout: Some(Duration::from_secs(120)),
            idle_timeout: Some(Duration::from_secs(300)),
        }
    }
}

/// What the connections of one listener share.
pub(crate) struct Shared {
    pub(crate) buffered: Arc<BufferBudget>,
    live: AtomicUsize,
    /// Connections not yet closed, by source address.
    pub(crate) table: Mutex<admit::Table>,
}

impl Shared {
    pub(crate) fn new(cfg: &ConnConfig) -> Arc<Self> {
        Arc::new(Shared {
            buffered: BufferBudget::new(cfg.max_buffered_total),
            live: AtomicUsize::new(0),
            table: Mutex::new(admit::Table::default()),
        })
    }

    /// Connections whose socket is still open (closed ones count until
    /// their reader and writer have ended and dropped the socket).
    pub(crate) fn live(&self) -> usize {
        self.live.load(Ordering::Acquire)
    }
}

/// Counts a connection as live until its reader and writer have ended.
struct Live(Arc<Shared>);

impl Live {
    fn new(shared: Arc<Shared>) -> Arc<Live> {
        shared.live.fetch_add(1, Ordering::AcqRel);
        Arc::new(Live(shared))
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The bytes a connection holds for its calls: reserved or queued replies
/// and the arguments of calls running. The reader waits below `max`.
struct Flow {
    used: AtomicUsize,
    max: usize,
    room: Notify,
}

impl Flow {
    fn new(max: usize) -> Arc<Flow> {
        Arc::new(Flow {
            used: AtomicUsize::new(0),
            max,
            room: Notify::new(),
        })
    }

    fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    fn charge(self: &Arc<Self>, bytes: usize, permit: Option<OwnedSemaphorePermit>) -> Charge {
        self.used.fetch_add(bytes, Ordering::AcqRel);
        Charge {
            flow: self.clone(),
            bytes,
            _permit: permit,
        }
    }

    fn has_room(&self) -> bool {
        self.used() < self.max.max(1)
    }

    /// Resolves once the connection holds less than its budget.
    async fn room(&self) {
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.has_room() {
                return;
            }
            notified.await;
        }
    }
}

/// Bytes (and the in-flight slot) a call holds until its reply is written.
struct Charge {
    flow: Arc<Flow>,
    bytes: usize,
    _permit: Option<OwnedSemaphorePermit>,
}

impl Charge {
    fn set(&mut self, bytes: usize) {
        if bytes > self.bytes {
            self.flow
                .used
                .fetch_add(bytes - self.bytes, Ordering::AcqRel);
        } else if bytes < self.bytes {
            self.flow
                .used
                .fetch_sub(self.bytes - bytes, Ordering::AcqRel);
            self.flow.room.notify_one();
        }
        self.bytes = bytes;
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.flow.used.fetch_sub(self.bytes, Ordering::AcqRel);
        self.flow.room.notify_one();
    }
}

/// Where a connection's messages go.
enum Sink {
    Socket(Arc<Out<Option<Charge>>>),
    InProcess(mpsc::Sender<Vec<Bytes>>),
    /// A datagram's sender: nothing can be sent back on it but the reply,
    /// which the datagram server sends itself.
    Datagram,
}

/// Messages an in-process connection may have waiting for its receiver.
const IN_PROCESS_QUEUE: usize = 1024;

static GARBAGE_LOG: RateLimit = RateLimit::per_secs(10);
static REJECT_LOG: RateLimit = RateLimit::per_secs(10);
static CLOSE_LOG: RateLimit = RateLimit::per_secs(10);

/// Why an outgoing call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("connection closed")]
    Closed,
    #[error("call rejected: {0:?}")]
    Rejected(ReplyError),
    #[error("malformed reply: {0}")]
    Garbage(#[from] xdr::Error),
}

static NEXT_CONN_ID: AtomicU64 = AtomicU64::new(1);

pub struct Connection {
    id: u64,
    peer: SocketAddr,
    local: SocketAddr,
    sink: Sink,
    pending: Mutex<HashMap<u32, oneshot::Sender<Bytes>>>,
    next_xid: AtomicU32,
    closed: AtomicBool,
    closed_tx: watch::Sender<bool>,
    flow: Arc<Flow>,
    born: Instant,
    /// Milliseconds after `born` of the last record read or reply written.
    active_ms: AtomicU64,
    /// Calls handed to the service whose replies are not queued yet.
    running: AtomicUsize,
    /// A well-formed call has arrived on it.
    proven: AtomicBool,
    /// Its service said it carries state ([`Connection::mark_stateful`]).
    stateful: AtomicBool,
    /// The listener whose table counts it, if any.
    listener: Option<Arc<Shared>>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Connection#{}({})", self.id, self.peer)
    }
}

impl Connection {
    fn new(
        peer: SocketAddr,
        local: SocketAddr,
        sink: Sink,
        max_pending: usize,
        listener: Option<Arc<Shared>>,
    ) -> Arc<Self> {
        let (closed_tx, _) = watch::channel(false);
        Arc::new(Connection {
            id: NEXT_CONN_ID.fetch_add(1, Ordering::Relaxed),
            peer,
            local,
            sink,
            pending: Mutex::new(HashMap::new()),
            next_xid: AtomicU32::new(rand_xid()),
            closed: AtomicBool::new(false),
            closed_tx,
            flow: Flow::new(max_pending),
            born: Instant::now(),
            active_ms: AtomicU64::new(0),
            running: AtomicUsize::new(0),
            proven: AtomicBool::new(false),
            stateful: AtomicBool::new(false),
            listener,
        })
    }

    /// A connection with no socket, for tests and in-process harnesses:
    /// every message it sends (calls on the back channel) arrives on the
    /// receiver as one record, record mark first; replies to those calls
    /// are handed back with [`Connection::deliver`]. Messages the receiver
    /// leaves waiting beyond a fixed queue are dropped.
    pub fn in_process(
        peer: SocketAddr,
        local: SocketAddr,
    ) -> (Arc<Connection>, mpsc::Receiver<Vec<Bytes>>) {
        let (tx, rx) = mpsc::channel(IN_PROCESS_QUEUE);
        let conn = Connection::new(
            peer,
            local,
            Sink::InProcess(tx),
            ConnConfig::default().max_pending_bytes,
            None,
        );
        (conn, rx)
    }

    /// The sender of one datagram (RFC 5531 over UDP, [`crate::udp`]): its
    /// address for the service, and no way to call it back.
    pub(crate) fn datagram(peer: SocketAddr, local: SocketAddr) -> Arc<Connection> {
        let conn = Connection::new(peer, local, Sink::Datagram, 0, None);
        conn.closed.store(true, Ordering::Release);
        conn
    }

    /// Takes one message received from the peer (no record mark): a REPLY
    /// completes the matching [`Connection::call`]. False when it is not a
    /// reply to a call waiting for one.
    pub fn deliver(&self, message: Bytes) -> bool {
        let mut d = Decoder::new(message);
        match (d.u32(), d.u32()) {
            (Ok(xid), Ok(REPLY)) => self.deliver_reply(xid, d.take_rest()),
            _ => false,
        }
    }

    /// Completes the call `xid` with its reply: the message after the xid
    /// and message type (RFC 5531 §9 `reply_body`). False when no call
    /// waits for it.
    pub fn deliver_reply(&self, xid: u32, reply: Bytes) -> bool {
        let waiter = self.pending.lock().ok().and_then(|mut p| p.remove(&xid));
        match waiter {
            Some(w) => w.send(reply).is_ok(),
            None => false,
        }
    }

    /// Notes traffic, for the idle timeout.
    fn touch(&self) {
        let ms = self.born.elapsed().as_millis() as u64;
        self.active_ms.fetch_max(ms, Ordering::Relaxed);
    }

    /// When the connection goes idle if nothing happens before.
    fn idle_at(&self, idle: Duration) -> Instant {
        let last = self.born + Duration::from_millis(self.active_ms.load(Ordering::Relaxed));
        last.checked_add(idle)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(86400 * 365))
    }

    /// When something was last received or sent.
    pub(crate) fn last_active(&self) -> Instant {
        self.born + Duration::from_millis(self.active_ms.load(Ordering::Relaxed))
    }

    /// Whether a well-formed call has arrived on it.
    pub(crate) fn proven(&self) -> bool {
        self.proven.load(Ordering::Relaxed)
    }

    /// Whether its service said it carries state.
    pub(crate) fn stateful(&self) -> bool {
        self.stateful.load(Ordering::Relaxed)
    }

    /// Says the connection carries state a client would lose with it (an
    /// NFSv4.1 session in use): when its listener is full, connections
    /// without state are closed before it (`rpc::admit`).
    pub fn mark_stateful(&self) {
        if !self.stateful.load(Ordering::Relaxed) {
            self.stateful.store(true, Ordering::Relaxed);
        }
    }

    /// Calls running, replies unwritten or callbacks unanswered.
    pub(crate) fn busy(&self) -> bool {
        self.flow.used() > 0 || self.pending.lock().is_ok_and(|p| !p.is_empty())
    }

    pub fn id(&self) -> u64 {
        self.id
    }
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }
    pub fn local(&self) -> SocketAddr {
        self.local
    }
    /// Whether this stands for the sender of a datagram (UDP).
    pub fn is_datagram(&self) -> bool {
        matches!(self.sink, Sink::Datagram)
    }
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Resolves once the connection has closed.
    pub async fn closed(&self) {
        let mut rx = self.closed_tx.subscribe();
        let _ = rx.wait_for(|c| *c).await;
    }

    /// Closes the connection: pending calls fail, the socket is shut.
    pub fn close(&self) {
        let first = !self.closed.swap(true, Ordering::AcqRel);
        self.closed_tx.send_replace(true);
        if let Ok(mut p) = self.pending.lock() {
            p.clear();
        }
        if let (true, Some(l)) = (first, &self.listener) {
            admit::lock(&l.table).remove(self.id, self.peer.ip());
        }
    }

    /// Queues a record. The writer task is woken for it unless `direct`:
    /// then the connection's reader flushes it itself before it next waits
    /// for input.
    fn send(&self, chunks: Vec<Piece>, charge: Option<Charge>, direct: bool) -> bool {
        if self.is_closed() {
            return false;
        }
        match &self.sink {
            Sink::Socket(out) => {
                if !out.push(Queued {
                    chunks,
                    hold: charge,
                }) {
                    return false;
                }
                if !direct {
                    out.wake.notify_one();
                }
                true
            }
            // In process (tests): ranges of files are read here.
            Sink::InProcess(tx) => match xdr::in_memory(chunks) {
                Ok(chunks) => tx.try_send(chunks).is_ok(),
                Err(_) => false,
            },
            Sink::Datagram => false,
        }
    }

    /// Queues one record; `charge` (resized to the record) is held until
    /// the record has been written.
    fn send_message(
        &self,
        header: Encoder,
        body: Vec<Piece>,
        charge: Option<Charge>,
        direct: bool,
    ) -> bool {
        let head = header.finish();
        let len: usize =
            head.iter().map(Bytes::len).sum::<usize>() + body.iter().map(Piece::len).sum::<usize>();
        let mut chunks = Vec::with_capacity(1 + head.len() + body.len());
        chunks.push(Piece::Mem(record_header(len)));
        chunks.extend(head.into_iter().map(Piece::Mem));
        chunks.extend(body);
        let charge = charge.map(|mut c| {
            c.set(len + 4);
            c
        });
        self.send(chunks, charge, direct)
    }

    /// Sends a call and waits for its reply; returns the decoder positioned
    /// at the procedure's results.
    pub async fn call(
        &self,
        prog: u32,
        vers: u32,
        proc_: u32,
        cred: &OpaqueAuth,
        args: Vec<Bytes>,
    ) -> Result<Decoder, CallError> {
        let xid = self.next_xid.fetch_add(1, Ordering::Relaxed);
        let (done_tx, done_rx) = oneshot::channel();
        self.pending
            .lock()
            .map_err(|_| CallError::Closed)?
            .insert(xid, done_tx);
        let mut h = Encoder::with_capacity(64);
        h.u32(xid);
        h.u32(CALL);
        CallHeader {
            rpcvers: RPC_VERSION,
            prog,
            vers,
            proc_,
            cred: cred.clone(),
            verf: OpaqueAuth::none(),
        }
        .pack(&mut h);
        let args = args.into_iter().map(Piece::Mem).collect();
        if !self.send_message(h, args, None, false) {
            if let Ok(mut p) = self.pending.lock() {
                p.remove(&xid);
            }
            return Err(CallError::Closed);
        }
        let reply = done_rx.await.map_err(|_| CallError::Closed)?;
        parse_reply(reply)
    }

    /// [`Connection::call`] with typed arguments.
    pub async fn call_with<A: Pack>(
        &self,
        prog: u32,
        vers: u32,
        proc_: u32,
        cred: &OpaqueAuth,
        args: &A,
    ) -> Result<Decoder, CallError> {
        let mut e = Encoder::new();
        args.pack(&mut e);
        self.call(prog, vers, proc_, cred, e.finish()).await
    }

    /// Answers a call counted in `running` (`direct`: see [`Self::send`]).
    fn finish(&self, xid: u32, reply: Reply, charge: Charge, direct: bool) {
        self.reply(xid, reply, charge, direct);
        self.running.fetch_sub(1, Ordering::AcqRel);
    }

    /// Answers call `xid`; `charge` is what the call held.
    fn reply(&self, xid: u32, reply: Reply, charge: Charge, direct: bool) {
        if let Some((h, body)) = reply_pieces(xid, reply) {
            self.send_message(h, body, Some(charge), direct);
        }
    }

    /// Writes the replies the reader queued (`direct`) and anything else
    /// waiting, leaving what the socket cannot take now to the writer task.
    fn flush(&self) {
        let Sink::Socket(out) = &self.sink else {
            return;
        };
        match out.flush() {
            Flushed::All => self.touch(),
            Flushed::Blocked => out.wake.notify_one(),
            Flushed::Closed => self.close(),
        }
    }
}

/// The reply message to call `xid` (RFC 5531 §9): its header and the
/// results after it, in memory; none for [`Reply::Drop`].
pub fn reply_message(xid: u32, reply: Reply) -> Option<(Encoder, Vec<Bytes>)> {
    let (h, body) = reply_pieces(xid, reply.in_memory())?;
    // `in_memory` left only bytes in memory: this reads nothing.
    Some((h, xdr::in_memory(body).ok()?))
}

/// [`reply_message`], ranges of files kept as such.
fn reply_pieces(xid: u32, reply: Reply) -> Option<(Encoder, Vec<Piece>)> {
    let mut h = Encoder::with_capacity(32);
    h.u32(xid);
    h.u32(REPLY);
    let accepted = |h: &mut Encoder| {
        h.u32(MSG_ACCEPTED);
        OpaqueAuth::none().pack(h);
        AcceptStat::Success.pack(h);
    };
    let body = match reply {
        Reply::Drop => return None,
        Reply::Success(body) => {
            accepted(&mut h);
            body.into_iter().map(Piece::Mem).collect()
        }
        Reply::Pieces(body) => {
            accepted(&mut h);
            body
        }
        Reply::Error(err) => {
            encode_error(&mut h, &err);
            Vec::new()
        }
    };
    Some((h, body))
}

fn encode_error(h: &mut Encoder, err: &ReplyError) {
    let accepted = |h: &mut Encoder, stat: AcceptStat| {
        h.u32(MSG_ACCEPTED);
        OpaqueAuth::none().pack(h);
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
    let mut d = Decoder::new(reply);
    match d.u32()? {
        MSG_ACCEPTED => {
            let _verf = OpaqueAuth::unpack(&mut d)?;
            match AcceptStat::unpack(&mut d)? {
                AcceptStat::Success => Ok(d),
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

/// Decodes a call's header and credential. `Err` carries the rejection to
/// send back: a credential or verifier that does not decode is
/// AUTH_BADCRED or AUTH_BADVERF (RFC 5531 §9), not GARBAGE_ARGS.
/// `d` starts after the xid and message type; it is left at the
/// procedure's arguments.
pub fn parse_call(d: &mut Decoder) -> Result<(u32, u32, u32, Auth), ReplyError> {
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
    let _verf_flavor = d.u32().map_err(bad_verf)?;
    let _verf = d.opaque(MAX_AUTH_BYTES).map_err(bad_verf)?;
    let auth = match flavor {
        AUTH_NONE => Auth::None,
        AUTH_SYS => Auth::Sys(xdr::from_bytes(body).map_err(bad_cred)?),
        _ => return Err(ReplyError::Auth(AuthStat::RejectedCred)),
    };
    Ok((prog, vers, proc_, auth))
}

/// Starts serving a connection: a reader task dispatching calls and replies
/// and a writer task sending records in order of completion. The buffer
/// budget ([`ConnConfig::max_buffered_total`]) is this connection's own.
pub fn start(
    stream: TcpStream,
    service: Option<Arc<dyn Service>>,
    cfg: ConnConfig,
) -> std::io::Result<Arc<Connection>> {
    let shared = Shared::new(&cfg);
    start_shared(stream, service, cfg, shared)
}

/// Closes the connection for `why`, logging at most one line per interval.
fn closing(conn: &Connection, why: std::fmt::Arguments<'_>) {
    match CLOSE_LOG.allow() {
        Some(0) => warn!(peer = %conn.peer, "closing connection: {why}"),
        Some(n) => warn!(
            peer = %conn.peer,
            "closing connection: {why} ({n} similar closings not logged)"
        ),
        None => debug!(peer = %conn.peer, "closing connection: {why}"),
    }
}

/// [`start`] with the budgets shared by the connections of a listener.
pub(crate) fn start_shared(
    stream: TcpStream,
    service: Option<Arc<dyn Service>>,
    cfg: ConnConfig,
    shared: Arc<Shared>,
) -> std::io::Result<Arc<Connection>> {
    let peer = stream.peer_addr()?;
    let local = stream.local_addr()?;
    let _ = stream.set_nodelay(true);
    let (rd, wr) = stream.into_split();
    let out = Arc::new(Out::new(wr));
    let conn = Connection::new(
        peer,
        local,
        Sink::Socket(out.clone()),
        cfg.max_pending_bytes,
        Some(shared.clone()),
    );
    admit::lock(&shared.table).insert(&conn);
    let live = Live::new(shared.clone());

    let wconn = conn.clone();
    let wlive = live.clone();
    let write_timeout = cfg.write_timeout;
    tokio::spawn(async move {
        let _live = wlive;
        let mut closed = wconn.closed_tx.subscribe();
        'conn: loop {
            tokio::select! {
                _ = out.wake.notified() => {}
                _ = closed.wait_for(|c| *c) => break,
            }
            // Let the calls still running finish first, so that their
            // replies leave in this one writev rather than one each.
            if wconn.running.load(Ordering::Acquire) > 0 {
                tokio::task::yield_now().await;
            }
            loop {
                match out.flush() {
                    Flushed::All => {
                        wconn.touch();
                        break;
                    }
                    Flushed::Closed => break 'conn,
                    Flushed::Blocked => {}
                }
                // The peer is slow to take replies: wait for room.
                let Some(socket) = out.socket() else {
                    break 'conn;
                };
                let room = async {
                    match write_timeout {
                        Some(t) => tokio::time::timeout(t, socket.writable()).await,
                        None => Ok(socket.writable().await),
                    }
                };
                let room = tokio::select! {
                    r = room => r,
                    _ = closed.wait_for(|c| *c) => break 'conn,
                };
                match room {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => {
                        debug!(conn = wconn.id, "write failed: {e}");
                        break 'conn;
                    }
                    Err(_) => {
                        closing(
                            &wconn,
                            format_args!(
                                "replies not read for {:?}",
                                write_timeout.unwrap_or_default()
                            ),
                        );
                        break 'conn;
                    }
                }
            }
        }
        wconn.close();
        // Queued replies, and what they hold, go with the socket.
        out.shut();
    });

    let rconn = conn.clone();
    let in_flight = Arc::new(Semaphore::new(cfg.max_in_flight.max(1)));
    tokio::spawn(async move {
        let _live = live;
        let mut reader = RecordReader::with_budget(rd, cfg.max_record, shared.buffered.clone());
        let mut closed = rconn.closed_tx.subscribe();
        let idle = cfg.idle_timeout.map(|t| t.max(Duration::from_millis(100)));
        let mut idle_timer = Box::pin(tokio::time::sleep_until(idle.map_or_else(
            || rconn.idle_at(Duration::from_secs(86400)),
            |t| rconn.idle_at(t),
        )));
        'conn: loop {
            if rconn.is_closed() {
                break;
            }
            // A record already here is taken at once; before waiting for
            // more input, the replies of the calls answered so far leave
            // (in one writev).
            let whole = reader.record_buffered();
            if !whole {
                rconn.flush();
            }
            // Back-pressure: read nothing more while the connection holds
            // its budget of call and reply bytes.
            if !rconn.flow.has_room() {
                rconn.flush();
                tokio::select! {
                    _ = rconn.flow.room() => {}
                    _ = closed.wait_for(|c| *c) => break,
                }
            }
            let rec = if whole {
                // Complete in the buffer: no read, so no timeout to arm.
                Some(reader.next().await)
            } else {
                // Wait for the next record to begin, closing the connection if
                // it stays idle. The timer is armed once and moved on only when
                // it fires early (activity since), not once per record.
                loop {
                    let began = tokio::select! {
                        biased;
                        r = reader.ready() => r,
                        _ = &mut idle_timer, if idle.is_some() => {
                            let idle_at = idle.map(|t| rconn.idle_at(t));
                            if rconn.busy() {
                                rconn.touch();
                            } else if idle_at.is_some_and(|at| Instant::now() >= at) {
                                debug!(peer = %rconn.peer, "closing idle connection");
                                break 'conn;
                            }
                            if let Some(t) = idle {
                                idle_timer.as_mut().reset(rconn.idle_at(t));
                            }
                            continue;
                        }
                        _ = closed.wait_for(|c| *c) => break 'conn,
                    };
                    match began {
                        Ok(true) => break,
                        Ok(false) => break 'conn,
                        Err(e) => {
                            debug!(peer = %rconn.peer, "read failed: {e}");
                            break 'conn;
                        }
                    }
                }
                let next = async {
                    match cfg.read_timeout {
                        Some(t) => tokio::time::timeout(t, reader.next()).await.ok(),
                        None => Some(reader.next().await),
                    }
                };
                tokio::select! {
                    r = next => r,
                    _ = closed.wait_for(|c| *c) => break,
                }
            };
            let rec = match rec {
                Some(Ok(Some(r))) => r,
                Some(Ok(None)) => break,
                Some(Err(RecordError::Io(e))) => {
                    debug!(peer = %rconn.peer, "read failed: {e}");
                    break;
                }
                Some(Err(e)) => {
                    closing(&rconn, format_args!("{e}"));
                    break;
                }
                None => {
                    closing(
                        &rconn,
                        format_args!(
                            "record not complete within {:?}",
                            cfg.read_timeout.unwrap_or_default()
                        ),
                    );
                    break;
                }
            };
            rconn.touch();
            let rec_len = rec.len();
            let mut d = Decoder::new(rec);
            let (xid, mtype) = match (d.u32(), d.u32()) {
                (Ok(x), Ok(t)) => (x, t),
                _ => {
                    if let Some(n) = GARBAGE_LOG.allow() {
                        warn!(
                            peer = %rconn.peer,
                            "record too short for an RPC header; ignored ({n} more garbage records not logged)"
                        );
                    }
                    continue;
                }
            };
            match mtype {
                REPLY => {
                    if !rconn.deliver_reply(xid, d.take_rest()) {
                        debug!(xid, "reply to no pending call; ignored");
                    }
                }
                CALL => {
                    let (prog, vers, proc_, auth) = match parse_call(&mut d) {
                        Ok(v) => v,
                        Err(e) => {
                            if let Some(n) = REJECT_LOG.allow() {
                                warn!(
                                    peer = %rconn.peer,
                                    xid,
                                    "rejecting call: {e:?} ({n} more rejections not logged)"
                                );
                            }
                            rconn.reply(xid, Reply::Error(e), rconn.flow.charge(0, None), true);
                            continue;
                        }
                    };
                    rconn.proven.store(true, Ordering::Relaxed);
                    let Some(svc) = service.clone() else {
                        let charge = rconn.flow.charge(0, None);
                        rconn.reply(xid, Reply::Error(ReplyError::ProgUnavail), charge, true);
                        continue;
                    };
                    let permit = match in_flight.clone().try_acquire_owned() {
                        Ok(p) => p,
                        Err(_) => {
                            rconn.flush();
                            tokio::select! {
                                p = in_flight.clone().acquire_owned() => match p {
                                    Ok(p) => p,
                                    Err(_) => break,
                                },
                                _ = closed.wait_for(|c| *c) => break,
                            }
                        }
                    };
                    // The arguments until the call returns, then the reply
                    // until it is written.
                    let charge = rconn.flow.charge(rec_len + cfg.reply_reserve, Some(permit));
                    let call = Call {
                        xid,
                        prog,
                        vers,
                        proc_,
                        auth,
                        args: d,
                        conn: rconn.clone(),
                    };
                    let span = tracing::debug_span!("rpc", xid, prog, vers, proc_);
                    // Most calls finish without waiting (their backend
                    // work needs no thread hand-off): run each here once,
                    // and give it a task of its own only if it must wait.
                    rconn.running.fetch_add(1, Ordering::AcqRel);
                    // A panic here must not take the connection's reader
                    // with it: the call alone fails, as in a task.
                    let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        span.in_scope(|| svc.call(call))
                    }));
                    let Ok(mut fut) = made else {
                        rconn.finish(xid, Reply::Error(ReplyError::SystemErr), charge, true);
                        continue;
                    };
                    let first = std::future::poll_fn(|cx| {
                        std::task::Poll::Ready(std::panic::catch_unwind(
                            std::panic::AssertUnwindSafe(|| {
                                span.in_scope(|| fut.as_mut().poll(cx))
                            }),
                        ))
                    })
                    .await;
                    match first {
                        Err(_) => {
                            rconn.finish(xid, Reply::Error(ReplyError::SystemErr), charge, true);
                        }
                        Ok(std::task::Poll::Ready(reply)) => rconn.finish(xid, reply, charge, true),
                        Ok(std::task::Poll::Pending) => {
                            let conn = rconn.clone();
                            tokio::spawn(
                                async move {
                                    let reply = fut.await;
                                    conn.finish(xid, reply, charge, false);
                                }
                                .instrument(span),
                            );
                        }
                    }
                }
                other => {
                    if let Some(n) = GARBAGE_LOG.allow() {
                        warn!(
                            peer = %rconn.peer,
                            xid,
                            other,
                            "unknown message type; ignored ({n} more garbage records not logged)"
                        );
                    }
                }
            }
        }
        rconn.flush();
        rconn.close();
        // Buffered bytes go back to the listener's budget now.
        drop(reader);
        if let Some(svc) = service {
            svc.disconnected(&rconn);
        }
    });
    Ok(conn)
}

/// Opens a connection to `addr`, optionally serving callbacks on it.
pub async fn connect(
    addr: SocketAddr,
    service: Option<Arc<dyn Service>>,
    cfg: ConnConfig,
) -> std::io::Result<Arc<Connection>> {
    let stream = TcpStream::connect(addr).await?;
    start(stream, service, cfg)
}

fn rand_xid() -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let id = NEXT_CONN_ID.load(Ordering::Relaxed);
    ((t ^ (t >> 29) ^ id.wrapping_mul(0x9e37_79b9_7f4a_7c15)) & 0xffff_ffff) as u32
}
