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
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch, Semaphore};
use tracing::{debug, warn, Instrument};
use xdr::{Decoder, Encoder, Pack, Unpack};

use crate::msg::*;
use crate::record::{record_header, write_all_vectored, RecordReader};

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
    Error(ReplyError),
    /// Send nothing (the request is being answered elsewhere or dropped).
    Drop,
}

impl Reply {
    pub fn success<T: Pack + ?Sized>(v: &T) -> Reply {
        let mut e = Encoder::new();
        v.pack(&mut e);
        Reply::Success(e.finish())
    }
}

pub type ReplyFuture = Pin<Box<dyn Future<Output = Reply> + Send + 'static>>;

/// A program (or several) served on a connection.
pub trait Service: Send + Sync + 'static {
    fn call(&self, call: Call) -> ReplyFuture;
    /// The connection has closed.
    fn disconnected(&self, _conn: &Arc<Connection>) {}
}

/// Limits for one connection.
#[derive(Debug, Clone)]
pub struct ConnConfig {
    /// Largest record accepted (RFC 5531 §11), in bytes.
    pub max_record: usize,
    /// Calls processed at once before reading further from the socket.
    pub max_in_flight: usize,
}

impl Default for ConnConfig {
    fn default() -> Self {
        ConnConfig {
            max_record: 4 * 1024 * 1024 + 64 * 1024,
            max_in_flight: 1024,
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
}

static NEXT_CONN_ID: AtomicU64 = AtomicU64::new(1);

pub struct Connection {
    id: u64,
    peer: SocketAddr,
    local: SocketAddr,
    tx: mpsc::UnboundedSender<Vec<Bytes>>,
    pending: Mutex<HashMap<u32, oneshot::Sender<Bytes>>>,
    next_xid: AtomicU32,
    closed: AtomicBool,
    closed_tx: watch::Sender<bool>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Connection#{}({})", self.id, self.peer)
    }
}

impl Connection {
    pub fn id(&self) -> u64 {
        self.id
    }
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }
    pub fn local(&self) -> SocketAddr {
        self.local
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
        self.closed.store(true, Ordering::Release);
        self.closed_tx.send_replace(true);
        if let Ok(mut p) = self.pending.lock() {
            p.clear();
        }
    }

    fn send(&self, chunks: Vec<Bytes>) -> bool {
        !self.is_closed() && self.tx.send(chunks).is_ok()
    }

    fn send_message(&self, header: Encoder, body: Vec<Bytes>) -> bool {
        let head = header.finish();
        let len: usize = head.iter().chain(body.iter()).map(Bytes::len).sum();
        let mut chunks = Vec::with_capacity(1 + head.len() + body.len());
        chunks.push(record_header(len));
        chunks.extend(head);
        chunks.extend(body);
        self.send(chunks)
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
        if !self.send_message(h, args) {
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

    fn reply(&self, xid: u32, reply: Reply) {
        let mut h = Encoder::with_capacity(32);
        h.u32(xid);
        h.u32(REPLY);
        let body = match reply {
            Reply::Drop => return,
            Reply::Success(body) => {
                h.u32(MSG_ACCEPTED);
                OpaqueAuth::none().pack(&mut h);
                AcceptStat::Success.pack(&mut h);
                body
            }
            Reply::Error(err) => {
                encode_error(&mut h, &err);
                Vec::new()
            }
        };
        self.send_message(h, body);
    }
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
fn parse_reply(reply: Bytes) -> Result<Decoder, CallError> {
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

/// Decodes a call's header and credential. `Err` carries the rejection to
/// send back.
fn parse_call(d: &mut Decoder) -> Result<(u32, u32, u32, Auth), ReplyError> {
    let h = CallHeader::unpack(d).map_err(|_| ReplyError::GarbageArgs)?;
    if h.rpcvers != RPC_VERSION {
        return Err(ReplyError::RpcMismatch {
            low: RPC_VERSION,
            high: RPC_VERSION,
        });
    }
    let auth = match h.cred.flavor {
        AUTH_NONE => Auth::None,
        AUTH_SYS => Auth::Sys(
            xdr::from_bytes(h.cred.body).map_err(|_| ReplyError::Auth(AuthStat::BadCred))?,
        ),
        _ => return Err(ReplyError::Auth(AuthStat::RejectedCred)),
    };
    Ok((h.prog, h.vers, h.proc_, auth))
}

/// Starts serving a connection: a reader task dispatching calls and replies
/// and a writer task sending records in order of completion.
pub fn start(
    stream: TcpStream,
    service: Option<Arc<dyn Service>>,
    cfg: ConnConfig,
) -> std::io::Result<Arc<Connection>> {
    let peer = stream.peer_addr()?;
    let local = stream.local_addr()?;
    let _ = stream.set_nodelay(true);
    let (rd, mut wr) = stream.into_split();
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<Bytes>>();
    let (closed_tx, _) = watch::channel(false);
    let conn = Arc::new(Connection {
        id: NEXT_CONN_ID.fetch_add(1, Ordering::Relaxed),
        peer,
        local,
        tx,
        pending: Mutex::new(HashMap::new()),
        next_xid: AtomicU32::new(rand_xid()),
        closed: AtomicBool::new(false),
        closed_tx,
    });

    let wconn = conn.clone();
    tokio::spawn(async move {
        let mut closed = wconn.closed_tx.subscribe();
        loop {
            let first = tokio::select! {
                m = rx.recv() => match m { Some(m) => m, None => break },
                _ = closed.wait_for(|c| *c) => break,
            };
            let mut batch = first;
            while batch.len() < 256 {
                match rx.try_recv() {
                    Ok(more) => batch.extend(more),
                    Err(_) => break,
                }
            }
            if let Err(e) = write_all_vectored(&mut wr, &mut batch).await {
                debug!(conn = wconn.id, "write failed: {e}");
                wconn.close();
                break;
            }
        }
        let _ = tokio::io::AsyncWriteExt::shutdown(&mut wr).await;
    });

    let rconn = conn.clone();
    let in_flight = Arc::new(Semaphore::new(cfg.max_in_flight.max(1)));
    tokio::spawn(async move {
        let mut reader = RecordReader::new(rd, cfg.max_record);
        let mut closed = rconn.closed_tx.subscribe();
        loop {
            let rec = tokio::select! {
                r = reader.next() => r,
                _ = closed.wait_for(|c| *c) => break,
            };
            let rec = match rec {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(e) => {
                    warn!(peer = %rconn.peer, "closing connection: {e}");
                    break;
                }
            };
            let mut d = Decoder::new(rec);
            let (xid, mtype) = match (d.u32(), d.u32()) {
                (Ok(x), Ok(t)) => (x, t),
                _ => {
                    warn!(peer = %rconn.peer, "record too short for an RPC header; ignored");
                    continue;
                }
            };
            match mtype {
                REPLY => {
                    let waiter = rconn.pending.lock().ok().and_then(|mut p| p.remove(&xid));
                    match waiter {
                        Some(w) => {
                            let _ = w.send(d.take_rest());
                        }
                        None => debug!(xid, "reply to no pending call; ignored"),
                    }
                }
                CALL => {
                    let (prog, vers, proc_, auth) = match parse_call(&mut d) {
                        Ok(v) => v,
                        Err(e) => {
                            warn!(peer = %rconn.peer, xid, "rejecting call: {e:?}");
                            rconn.reply(xid, Reply::Error(e));
                            continue;
                        }
                    };
                    let Some(svc) = service.clone() else {
                        rconn.reply(xid, Reply::Error(ReplyError::ProgUnavail));
                        continue;
                    };
                    let Ok(permit) = in_flight.clone().acquire_owned().await else {
                        break;
                    };
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
                    let conn = rconn.clone();
                    tokio::spawn(
                        async move {
                            let reply = svc.call(call).await;
                            conn.reply(xid, reply);
                            drop(permit);
                        }
                        .instrument(span),
                    );
                }
                other => warn!(peer = %rconn.peer, xid, other, "unknown message type; ignored"),
            }
        }
        rconn.close();
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
