//! A TCP connection's tasks: the reader (records in, calls dispatched to
//! the service, replies to its own calls delivered) and the writer
//! (replies out as the peer takes them), with the timeouts of both.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tracing::{debug, warn, Instrument};
use xdr::Decoder;

use super::connection::{Connection, Sink};
use super::limits::{Charge, ConnConfig, Live, Shared};
use super::message::{parse_head, simple_auth, Reply};
use super::service::{Call, Service};
use crate::admit;
use crate::gss::{Seal, Verdict};
use crate::msg::*;
use crate::out::{Flushed, Out};
use crate::ratelimit::RateLimit;
use crate::record::{RecordError, RecordReader};
use crate::tls::link::{lock, Input, Wire};
use crate::tls::{starttls_verifier, TlsServer, Xprt, AUTH_TLS};

static GARBAGE_LOG: RateLimit = RateLimit::per_secs(10);
static REJECT_LOG: RateLimit = RateLimit::per_secs(10);
static CLOSE_LOG: RateLimit = RateLimit::per_secs(10);
static GSS_LOG: RateLimit = RateLimit::per_secs(10);
static TLS_LOG: RateLimit = RateLimit::per_secs(10);

/// Rejects call `xid` with `e`, logging at most one line per interval.
fn reject(conn: &Connection, xid: u32, e: ReplyError) {
    if let Some(n) = REJECT_LOG.allow() {
        warn!(
            peer = %conn.peer,
            xid,
            "rejecting call: {e:?} ({n} more rejections not logged)"
        );
    }
    conn.reply(
        xid,
        Reply::Error(e),
        &Seal::None,
        conn.flow.charge(0, None),
        true,
    );
}

/// An RPCSEC_GSS call refused, dropped or noted, logged at most once per
/// interval.
fn gss_log(conn: &Connection, xid: u32, why: &str) {
    if let Some(n) = GSS_LOG.allow() {
        warn!(peer = %conn.peer, xid, "RPCSEC_GSS: {why} ({n} more not logged)");
    }
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

/// A place among the calls in flight, waiting (replies flushed first) if
/// there is none; None if the connection closes meanwhile.
async fn permit(
    in_flight: &Arc<Semaphore>,
    conn: &Connection,
    closed: &mut tokio::sync::watch::Receiver<bool>,
) -> Option<tokio::sync::OwnedSemaphorePermit> {
    if let Ok(p) = in_flight.clone().try_acquire_owned() {
        return Some(p);
    }
    conn.flush();
    tokio::select! {
        p = in_flight.clone().acquire_owned() => p.ok(),
        _ = closed.wait_for(|c| *c) => None,
    }
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

/// Answers the AUTH_TLS probe `xid` with STARTTLS and runs the server's
/// side of the handshake (RFC 9289 §4.1, §5.1), within the handshake
/// timeout: the transport security the connection then has.
async fn starttls(
    conn: &Arc<Connection>,
    out: &Out<Option<Charge>>,
    reader: &mut RecordReader<Input>,
    server: &TlsServer,
    xid: u32,
) -> Result<Xprt, String> {
    let verf = crate::gss::Seal::Verf(starttls_verifier());
    conn.reply(
        xid,
        Reply::Success(Vec::new()),
        &verf,
        conn.flow.charge(0, None),
        true,
    );
    let wire = out.socket().ok_or("closed")?;
    let handshake = async {
        // The STARTTLS reply all on the wire before TLS begins.
        loop {
            match out.flush() {
                Flushed::All => break,
                Flushed::Closed => return Err(std::io::Error::other("closed")),
                Flushed::Blocked => wire.writable().await?,
            }
        }
        let tls = server.state().map_err(std::io::Error::other)?;
        wire.upgrade(tls.clone());
        reader.inner_mut().upgrade(tls.clone());
        crate::tls::drive(reader.inner_mut(), &wire).await?;
        let certified = lock(&tls)?
            .peer_certificates()
            .is_some_and(|c| !c.is_empty());
        Ok(if certified { Xprt::Mtls } else { Xprt::Tls })
    };
    let mut closed = conn.closed_tx.subscribe();
    tokio::select! {
        r = tokio::time::timeout(server.handshake_timeout, handshake) => match r {
            Ok(Ok(x)) => Ok(x),
            Ok(Err(e)) => Err(format!("TLS handshake failed: {e}")),
            Err(_) => Err(format!(
                "TLS handshake not done within {:?}",
                server.handshake_timeout
            )),
        },
        _ = closed.wait_for(|c| *c) => Err("closed during the TLS handshake".into()),
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
    let socket = Socket {
        input: Input::new(rd),
        wire: Wire::new(wr),
        peer,
        local,
        xprt: Xprt::None,
    };
    Ok(run(socket, service, cfg, shared))
}

/// A connected socket's two sides, its addresses, and its transport
/// security.
pub(crate) struct Socket {
    pub(crate) input: Input,
    pub(crate) wire: Wire,
    pub(crate) peer: std::net::SocketAddr,
    pub(crate) local: std::net::SocketAddr,
    pub(crate) xprt: Xprt,
}

/// [`start`] for a socket already set up (a client's, after its TLS
/// handshake), with budgets of its own.
pub(crate) fn start_parts(
    socket: Socket,
    service: Option<Arc<dyn Service>>,
    cfg: ConnConfig,
) -> std::io::Result<Arc<Connection>> {
    let shared = Shared::new(&cfg);
    Ok(run(socket, service, cfg, shared))
}

fn run(
    socket: Socket,
    service: Option<Arc<dyn Service>>,
    cfg: ConnConfig,
    shared: Arc<Shared>,
) -> Arc<Connection> {
    let Socket {
        input,
        wire,
        peer,
        local,
        xprt,
    } = socket;
    let out = Arc::new(Out::new(wire));
    let rout = out.clone();
    let conn = Connection::new(
        peer,
        local,
        Sink::Socket(out.clone()),
        cfg.max_pending_bytes,
        Some(shared.clone()),
    );
    conn.set_xprt(xprt);
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
    let gate = service.as_ref().and_then(|s| s.gss());
    let tls = service.as_ref().and_then(|s| s.tls());
    let in_flight = Arc::new(Semaphore::new(cfg.max_in_flight.max(1)));
    tokio::spawn(async move {
        let _live = live;
        let rout = rout;
        let mut reader = RecordReader::with_budget(input, cfg.max_record, shared.buffered.clone());
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
            let d_all = rec.clone();
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
                    let head = match parse_head(&mut d) {
                        Ok(v) => v,
                        Err(e) => {
                            reject(&rconn, xid, e);
                            continue;
                        }
                    };
                    let (prog, vers, proc_) = (head.prog, head.vers, head.proc_);
                    if head.cred.flavor == AUTH_TLS {
                        // RFC 9289 §4.1: the probe, as the first call of a
                        // plain connection to a server that offers TLS.
                        let offered = tls.as_ref().filter(|_| {
                            proc_ == 0
                                && head.cred.body.is_empty()
                                && rconn.xprt() == Xprt::None
                                && !rconn.proven()
                                && reader.buffered() == 0
                        });
                        let Some(server) = offered else {
                            reject(&rconn, xid, ReplyError::Auth(AuthStat::BadCred));
                            continue;
                        };
                        let counts = &server.counts;
                        counts.probes.fetch_add(1, Ordering::Relaxed);
                        match starttls(&rconn, &rout, &mut reader, server, xid).await {
                            Ok(x) => {
                                counts.established.fetch_add(1, Ordering::Relaxed);
                                if x == Xprt::Mtls {
                                    counts.mutual.fetch_add(1, Ordering::Relaxed);
                                }
                                rconn.set_xprt(x);
                                rconn.proven.store(true, Ordering::Relaxed);
                                rconn.touch();
                                continue;
                            }
                            Err(why) => {
                                counts.failed.fetch_add(1, Ordering::Relaxed);
                                if let Some(n) = TLS_LOG.allow() {
                                    warn!(peer = %rconn.peer, "{why}; closing ({n} more not logged)");
                                }
                                break;
                            }
                        }
                    }
                    let mut seal = Seal::None;
                    let gss = gate.as_ref().filter(|_| head.cred.flavor == RPCSEC_GSS);
                    let auth = if let Some(gate) = gss {
                        // What the verifier checksums: xid through credential.
                        let n = head.cred.body.len();
                        let header_len = 8 + 16 + 8 + n + xdr::pad_len(n);
                        let header = d_all.slice(..header_len.min(d_all.len()));
                        match gate.check(
                            &header,
                            head.cred.body.clone(),
                            &head.verf,
                            proc_,
                            d,
                            Instant::now().into_std(),
                        ) {
                            Verdict::Call {
                                auth,
                                args,
                                seal: s,
                            } => {
                                d = args;
                                seal = s;
                                auth
                            }
                            Verdict::Init { cred, token } => {
                                rconn.proven.store(true, Ordering::Relaxed);
                                // Bounded like calls: at most max_in_flight per connection.
                                let Some(permit) = permit(&in_flight, &rconn, &mut closed).await
                                else {
                                    break;
                                };
                                let charge =
                                    rconn.flow.charge(rec_len + cfg.reply_reserve, Some(permit));
                                rconn.running.fetch_add(1, Ordering::AcqRel);
                                let (conn, gate) = (rconn.clone(), gate.clone());
                                tokio::spawn(async move {
                                    let now = Instant::now().into_std();
                                    let done = tokio::task::spawn_blocking(move || {
                                        gate.init(&cred, &token, now)
                                    })
                                    .await;
                                    let (reply, seal) = match done {
                                        Ok((reply, seal, note)) => {
                                            if let Some(note) = note {
                                                gss_log(&conn, xid, &note);
                                            }
                                            (reply, seal)
                                        }
                                        Err(_) => (Reply::Error(ReplyError::SystemErr), Seal::None),
                                    };
                                    conn.finish(xid, reply, &seal, charge, false);
                                });
                                continue;
                            }
                            Verdict::Answer(reply, seal) => {
                                rconn.reply(xid, reply, &seal, rconn.flow.charge(0, None), true);
                                continue;
                            }
                            Verdict::Deny(stat, why) => {
                                gss_log(&rconn, xid, why);
                                reject(&rconn, xid, ReplyError::Auth(stat));
                                continue;
                            }
                            Verdict::Drop(why) => {
                                gss_log(&rconn, xid, why);
                                continue;
                            }
                        }
                    } else {
                        match simple_auth(&head.cred) {
                            Ok(a) => a,
                            Err(e) => {
                                reject(&rconn, xid, e);
                                continue;
                            }
                        }
                    };
                    rconn.proven.store(true, Ordering::Relaxed);
                    let Some(svc) = service.clone() else {
                        let charge = rconn.flow.charge(0, None);
                        rconn.reply(
                            xid,
                            Reply::Error(ReplyError::ProgUnavail),
                            &seal,
                            charge,
                            true,
                        );
                        continue;
                    };
                    let Some(permit) = permit(&in_flight, &rconn, &mut closed).await else {
                        break;
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
                        rconn.finish(
                            xid,
                            Reply::Error(ReplyError::SystemErr),
                            &seal,
                            charge,
                            true,
                        );
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
                            rconn.finish(
                                xid,
                                Reply::Error(ReplyError::SystemErr),
                                &seal,
                                charge,
                                true,
                            );
                        }
                        Ok(std::task::Poll::Ready(reply)) => {
                            rconn.finish(xid, reply, &seal, charge, true)
                        }
                        Ok(std::task::Poll::Pending) => {
                            let conn = rconn.clone();
                            tokio::spawn(
                                async move {
                                    let reply = fut.await;
                                    conn.finish(xid, reply, &seal, charge, false);
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
    conn
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
