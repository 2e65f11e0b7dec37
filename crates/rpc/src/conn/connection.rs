//! The [`Connection`]: its state, its life (idle, closing) and what it
//! sends (calls on the back channel and their replies, replies to calls).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use xdr::{Decoder, Encoder, Pack, Piece};

use super::limits::{Charge, ConnConfig, Flow, Shared};
use super::message::{parse_reply_verf, reply_pieces, CallError, Reply};
use crate::admit;
use crate::gss::Seal;
use crate::msg::*;
use crate::out::{Flushed, Out, Queued};
use crate::record::record_header;

/// Where a connection's messages go.
pub(super) enum Sink {
    Socket(Arc<Out<Option<Charge>>>),
    InProcess(mpsc::Sender<Vec<Bytes>>),
    /// A datagram's sender: nothing can be sent back on it but the reply,
    /// which the datagram server sends itself.
    Datagram,
}

/// Messages an in-process connection may have waiting for its receiver.
const IN_PROCESS_QUEUE: usize = 1024;

static NEXT_CONN_ID: AtomicU64 = AtomicU64::new(1);

pub struct Connection {
    pub(super) id: u64,
    pub(super) peer: SocketAddr,
    local: SocketAddr,
    sink: Sink,
    pending: Mutex<HashMap<u32, oneshot::Sender<Bytes>>>,
    next_xid: AtomicU32,
    closed: AtomicBool,
    pub(super) closed_tx: watch::Sender<bool>,
    pub(super) flow: Arc<Flow>,
    born: Instant,
    /// Milliseconds after `born` of the last record read or reply written.
    active_ms: AtomicU64,
    /// Calls handed to the service whose replies are not queued yet.
    pub(super) running: AtomicUsize,
    /// A well-formed call has arrived on it.
    pub(super) proven: AtomicBool,
    /// Its service said it carries state ([`Connection::mark_stateful`]).
    stateful: AtomicBool,
    /// Its transport security ([`crate::tls::Xprt`] as a number).
    xprt: AtomicU8,
    /// The listener whose table counts it, if any.
    listener: Option<Arc<Shared>>,
    /// A number the service keeps on it ([`Connection::set_tag`]).
    tag: AtomicU64,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Connection#{}({})", self.id, self.peer)
    }
}

impl Connection {
    pub(super) fn new(
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
            xprt: AtomicU8::new(0),
            listener,
            tag: AtomicU64::new(0),
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
    pub(super) fn touch(&self) {
        let ms = self.born.elapsed().as_millis() as u64;
        self.active_ms.fetch_max(ms, Ordering::Relaxed);
    }

    /// When the connection goes idle if nothing happens before.
    pub(super) fn idle_at(&self, idle: Duration) -> Instant {
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

    /// Its transport security: plain, TLS, or TLS with a verified client
    /// certificate (RFC 9289).
    pub fn xprt(&self) -> crate::tls::Xprt {
        crate::tls::Xprt::from_u8(self.xprt.load(Ordering::Acquire))
    }

    pub(crate) fn set_xprt(&self, x: crate::tls::Xprt) {
        self.xprt.store(x as u8, Ordering::Release);
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

    /// Keeps a number on the connection for its service (Ferrite's
    /// NFSv4.0: the client its last request named, for the requests that
    /// name none).
    pub fn set_tag(&self, tag: u64) {
        self.tag.store(tag, Ordering::Relaxed);
    }

    /// The number [`Connection::set_tag`] kept, 0 if none.
    pub fn tag(&self) -> u64 {
        self.tag.load(Ordering::Relaxed)
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
        let (_, d) = self
            .call_raw(prog, vers, proc_, cred, |_| OpaqueAuth::none(), args)
            .await?;
        Ok(d)
    }

    /// [`Connection::call`] with the verifier made from the call's header
    /// (xid through credential: RPCSEC_GSS's checksum, RFC 2203 §5.3.1);
    /// returns the reply's verifier too.
    pub async fn call_raw(
        &self,
        prog: u32,
        vers: u32,
        proc_: u32,
        cred: &OpaqueAuth,
        verifier: impl FnOnce(&[u8]) -> OpaqueAuth,
        args: Vec<Bytes>,
    ) -> Result<(OpaqueAuth, Decoder), CallError> {
        let xid = self.next_xid.fetch_add(1, Ordering::Relaxed);
        let (done_tx, done_rx) = oneshot::channel();
        self.pending
            .lock()
            .map_err(|_| CallError::Closed)?
            .insert(xid, done_tx);
        let mut h = Encoder::with_capacity(64);
        h.u32(xid);
        h.u32(CALL);
        h.u32(RPC_VERSION);
        h.u32(prog);
        h.u32(vers);
        h.u32(proc_);
        cred.pack(&mut h);
        let verf = if cred.flavor == RPCSEC_GSS {
            let mut head = h;
            let bytes = std::mem::take(&mut head).to_bytes();
            h = Encoder::with_capacity(bytes.len() + 64);
            h.raw(&bytes);
            verifier(&bytes)
        } else {
            OpaqueAuth::none()
        };
        verf.pack(&mut h);
        let args = args.into_iter().map(Piece::Mem).collect();
        if !self.send_message(h, args, None, false) {
            if let Ok(mut p) = self.pending.lock() {
                p.remove(&xid);
            }
            return Err(CallError::Closed);
        }
        // Given up on (the caller's timeout dropped this future): the
        // pending entry goes too.
        struct Forget<'a>(&'a Connection, u32);
        impl Drop for Forget<'_> {
            fn drop(&mut self) {
                if let Ok(mut p) = self.0.pending.lock() {
                    p.remove(&self.1);
                }
            }
        }
        let _forget = Forget(self, xid);
        let reply = done_rx.await.map_err(|_| CallError::Closed)?;
        parse_reply_verf(reply)
    }

    /// A call under an RPCSEC_GSS context with the context's service:
    /// the arguments sealed, the reply checked and unsealed.
    pub async fn call_gss(
        &self,
        prog: u32,
        vers: u32,
        proc_: u32,
        ctx: &crate::gss::ClientContext,
        args: Vec<Bytes>,
    ) -> Result<Decoder, CallError> {
        let _place = ctx.place().await;
        loop {
            let seq = ctx.next_seq();
            let service = ctx.service;
            let cred = ctx.cred(crate::gss::wire::GssProc::Data, seq, service);
            let sealed = ctx.seal_args(seq, service, args.clone())?;
            let call = self.call_raw(prog, vers, proc_, &cred, |h| ctx.verifier(h), sealed);
            // A server may drop a call silently (RFC 2203 §5.3.3.1: one
            // it takes for a replay or too old); it is sent again, with a
            // new sequence number, as RFC 2203 §5.3.3.1 asks of a retry.
            match tokio::time::timeout(ctx.retransmit_after, call).await {
                Ok(r) => {
                    let (verf, d) = r?;
                    return ctx.open_reply(seq, service, &verf, d);
                }
                Err(_) => ctx.retransmitted(),
            }
        }
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
    pub(super) fn finish(&self, xid: u32, reply: Reply, seal: &Seal, charge: Charge, direct: bool) {
        self.reply(xid, reply, seal, charge, direct);
        self.running.fetch_sub(1, Ordering::AcqRel);
    }

    /// Answers call `xid`, sealed by `seal`; `charge` is what the call held.
    pub(super) fn reply(&self, xid: u32, reply: Reply, seal: &Seal, charge: Charge, direct: bool) {
        if let Some((h, body)) = reply_pieces(xid, reply, seal) {
            self.send_message(h, body, Some(charge), direct);
        }
    }

    /// Writes the replies the reader queued (`direct`) and anything else
    /// waiting, leaving what the socket cannot take now to the writer task.
    pub(super) fn flush(&self) {
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

fn rand_xid() -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let id = NEXT_CONN_ID.load(Ordering::Relaxed);
    ((t ^ (t >> 29) ^ id.wrapping_mul(0x9e37_79b9_7f4a_7c15)) & 0xffff_ffff) as u32
}
