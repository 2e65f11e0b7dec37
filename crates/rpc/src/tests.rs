//! Calls over real loopback connections.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use xdr::{Encoder, Pack, Unpack};

use crate::*;

const PROG: u32 = 400_000;

/// Procedure 1 echoes a u32 after sleeping that many milliseconds;
/// procedure 2 answers with the caller's uid; procedure 3 answers 1 MiB.
struct Echo;

static BIG_CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Service for Echo {
    fn call(&self, mut call: Call) -> ReplyFuture {
        Box::pin(async move {
            match call.proc_ {
                1 => match u32::unpack(&mut call.args) {
                    Ok(ms) => {
                        tokio::time::sleep(Duration::from_millis(ms as u64)).await;
                        Reply::success(&ms)
                    }
                    Err(_) => Reply::Error(ReplyError::GarbageArgs),
                },
                2 => match call.auth {
                    Auth::Sys(p) => Reply::success(&p.uid),
                    Auth::None => Reply::success(&u32::MAX),
                    Auth::Gss(g) => {
                        Reply::success(&g.principal.ids.as_ref().map_or(u32::MAX - 1, |i| i.uid))
                    }
                },
                3 => {
                    BIG_CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    Reply::Success(vec![Bytes::from(vec![0u8; 1 << 20])])
                }
                _ => Reply::Error(ReplyError::ProcUnavail),
            }
        })
    }
}

async fn server() -> std::net::SocketAddr {
    server_with(ConnConfig::default(), Arc::new(Echo)).await
}

async fn server_with(cfg: ConnConfig, svc: Arc<dyn Service>) -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let svc: Arc<dyn Service> = Arc::new(Programs::new().add(PROG, 1, 2, svc));
    let (_tx, rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        let _keep = _tx;
        serve(l, svc, cfg, rx).await
    });
    addr
}

/// Echo, counting disconnections.
struct Counted(std::sync::atomic::AtomicUsize);

impl Service for Counted {
    fn call(&self, call: Call) -> ReplyFuture {
        Echo.call(call)
    }
    fn disconnected(&self, _conn: &Arc<Connection>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// One CALL record with a chosen credential and verifier, raw.
fn call_record(xid: u32, proc_: u32, cred: &OpaqueAuth, verf: &OpaqueAuth) -> Vec<u8> {
    let mut e = Encoder::new();
    e.u32(xid);
    e.u32(CALL);
    CallHeader {
        rpcvers: RPC_VERSION,
        prog: PROG,
        vers: 1,
        proc_,
        cred: cred.clone(),
        verf: verf.clone(),
    }
    .pack(&mut e);
    let body = e.to_bytes();
    let mut rec = (0x8000_0000u32 | body.len() as u32).to_be_bytes().to_vec();
    rec.extend_from_slice(&body);
    rec
}

/// Reads one reply record and returns its words after the record mark.
async fn reply_words(s: &mut TcpStream) -> Vec<u32> {
    let mut mark = [0u8; 4];
    s.read_exact(&mut mark).await.unwrap();
    let mut body = vec![0u8; (u32::from_be_bytes(mark) & 0x7fff_ffff) as usize];
    s.read_exact(&mut body).await.unwrap();
    body.chunks(4)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

async fn client(addr: std::net::SocketAddr) -> Arc<Connection> {
    connect(addr, None, ConnConfig::default()).await.unwrap()
}

#[tokio::test]
async fn null_and_rejections() {
    let addr = server().await;
    let c = client(addr).await;
    let none = OpaqueAuth::none();
    let d = c.call(PROG, 1, 0, &none, vec![]).await.unwrap();
    assert_eq!(d.remaining(), 0);
    assert_eq!(
        c.call(PROG + 1, 1, 0, &none, vec![]).await.unwrap_err(),
        CallError::Rejected(ReplyError::ProgUnavail)
    );
    assert_eq!(
        c.call(PROG, 3, 0, &none, vec![]).await.unwrap_err(),
        CallError::Rejected(ReplyError::ProgMismatch { low: 1, high: 2 })
    );
    assert_eq!(
        c.call(PROG, 1, 9, &none, vec![]).await.unwrap_err(),
        CallError::Rejected(ReplyError::ProcUnavail)
    );
    assert_eq!(
        c.call(PROG, 1, 1, &none, vec![]).await.unwrap_err(),
        CallError::Rejected(ReplyError::GarbageArgs)
    );
    let gss = OpaqueAuth {
        flavor: RPCSEC_GSS,
        body: Bytes::new(),
    };
    assert_eq!(
        c.call(PROG, 1, 0, &gss, vec![]).await.unwrap_err(),
        CallError::Rejected(ReplyError::Auth(AuthStat::RejectedCred))
    );
    let bad_sys = OpaqueAuth {
        flavor: AUTH_SYS,
        body: Bytes::from_static(&[0, 0, 0, 1]),
    };
    assert_eq!(
        c.call(PROG, 1, 0, &bad_sys, vec![]).await.unwrap_err(),
        CallError::Rejected(ReplyError::Auth(AuthStat::BadCred))
    );
    let sys = Auth::sys(1234, 5, vec![5, 6], "host").to_opaque();
    let mut d = c.call_with(PROG, 1, 2, &sys, &()).await.unwrap();
    assert_eq!(u32::unpack(&mut d).unwrap(), 1234);
}

#[tokio::test]
async fn rpc_version_mismatch() {
    let addr = server().await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut e = Encoder::new();
    e.u32(77); // xid
    e.u32(CALL);
    CallHeader {
        rpcvers: 3,
        prog: PROG,
        vers: 1,
        proc_: 0,
        cred: OpaqueAuth::none(),
        verf: OpaqueAuth::none(),
    }
    .pack(&mut e);
    let body = e.to_bytes();
    s.write_all(&(0x8000_0000u32 | body.len() as u32).to_be_bytes())
        .await
        .unwrap();
    s.write_all(&body).await.unwrap();
    let mut reply = [0u8; 28];
    s.read_exact(&mut reply).await.unwrap();
    let words: Vec<u32> = reply
        .chunks(4)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    assert_eq!(
        words,
        vec![0x8000_0018, 77, REPLY, MSG_DENIED, RPC_MISMATCH, 2, 2]
    );
}

#[tokio::test]
async fn concurrent_calls_complete_out_of_order() {
    let addr = server().await;
    let c = client(addr).await;
    let none = OpaqueAuth::none();
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for ms in [300u32, 10, 150] {
        let (c, none, order) = (c.clone(), none.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            let mut d = c.call_with(PROG, 1, 1, &none, &ms).await.unwrap();
            assert_eq!(u32::unpack(&mut d).unwrap(), ms);
            order.lock().unwrap().push(ms);
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), vec![10, 150, 300]);
}

#[tokio::test]
async fn many_connections_and_garbage_does_not_kill_server() {
    let addr = server().await;
    // a connection sending garbage records is answered or dropped...
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&[0x80, 0, 0, 2, 1, 2]).await.unwrap();
    s.write_all(&[0xff, 0xff, 0xff, 0xff]).await.unwrap();
    drop(s);
    // ...and everyone else keeps being served.
    let mut conns = Vec::new();
    for _ in 0..20 {
        conns.push(client(addr).await);
    }
    for c in &conns {
        c.call(PROG, 1, 0, &OpaqueAuth::none(), vec![])
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn backchannel_call_over_the_same_connection() {
    // The "client" serves PROG on its side; the "server" calls it.
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let accept = tokio::spawn(async move {
        let (s, _) = l.accept().await.unwrap();
        start(s, None, ConnConfig::default()).unwrap()
    });
    let cb: Arc<dyn Service> = Arc::new(Programs::new().add(PROG, 1, 1, Arc::new(Echo)));
    let _client = connect(addr, Some(cb), ConnConfig::default())
        .await
        .unwrap();
    let server_side = accept.await.unwrap();
    let mut d = server_side
        .call_with(PROG, 1, 1, &OpaqueAuth::none(), &5u32)
        .await
        .unwrap();
    assert_eq!(u32::unpack(&mut d).unwrap(), 5);
}

#[tokio::test]
async fn large_payload_roundtrip() {
    let addr = server().await;
    let c = client(addr).await;
    // PROC 1 with trailing data: the service ignores what follows the u32.
    let mut e = Encoder::new();
    e.u32(0);
    Bytes::from(vec![7u8; 1 << 20]).pack(&mut e);
    let mut d = c
        .call(PROG, 1, 1, &OpaqueAuth::none(), e.finish())
        .await
        .unwrap();
    assert_eq!(u32::unpack(&mut d).unwrap(), 0);
}

#[tokio::test]
async fn bad_credentials_are_auth_errors() {
    let addr = server().await;
    let c = client(addr).await;
    let sys = |body: Bytes| OpaqueAuth {
        flavor: AUTH_SYS,
        body,
    };
    let auth_sys_body = |name_len: u32, name: &[u8], gids: u32| {
        let mut e = Encoder::new();
        e.u32(0); // stamp
        e.u32(name_len);
        e.raw(name);
        e.u32(0); // uid
        e.u32(0); // gid
        e.u32(gids);
        for _ in 0..gids {
            e.u32(0);
        }
        e.to_bytes()
    };
    let cases = [
        // RFC 5531 §8.2: opaque_auth bodies are at most 400 bytes.
        sys(Bytes::from(vec![0u8; 404])),
        OpaqueAuth {
            flavor: AUTH_NONE,
            body: Bytes::from(vec![0u8; 1000]),
        },
        // A machine name far beyond its limit of 255 (App. A).
        sys(auth_sys_body(100_000, &[b'm'; 300], 0)),
        // Within 400 bytes but over the limits of authsys_parms.
        sys(auth_sys_body(256, &[b'm'; 256], 0)),
        sys(auth_sys_body(4, b"host", 17)),
        // A name longer than the body holds.
        sys(auth_sys_body(200, b"host", 0)),
    ];
    for cred in cases {
        assert_eq!(
            c.call(PROG, 1, 0, &cred, vec![]).await.unwrap_err(),
            CallError::Rejected(ReplyError::Auth(AuthStat::BadCred)),
            "cred of {} bytes",
            cred.body.len()
        );
    }
    // A verifier over 400 bytes.
    let mut s = TcpStream::connect(addr).await.unwrap();
    let verf = OpaqueAuth {
        flavor: AUTH_NONE,
        body: Bytes::from(vec![0u8; 800]),
    };
    s.write_all(&call_record(5, 0, &OpaqueAuth::none(), &verf))
        .await
        .unwrap();
    assert_eq!(
        reply_words(&mut s).await,
        vec![5, REPLY, MSG_DENIED, AUTH_ERROR, AuthStat::BadVerf as u32]
    );
    // A header cut short before the credential is garbage.
    let mut e = Encoder::new();
    for w in [6, CALL, RPC_VERSION, PROG, 1] {
        e.u32(w);
    }
    let body = e.to_bytes();
    let mut rec = (0x8000_0000u32 | body.len() as u32).to_be_bytes().to_vec();
    rec.extend_from_slice(&body);
    s.write_all(&rec).await.unwrap();
    assert_eq!(
        reply_words(&mut s).await,
        vec![
            6,
            REPLY,
            MSG_ACCEPTED,
            AUTH_NONE,
            0,
            AcceptStat::GarbageArgs as u32
        ]
    );
    // The connection is still good.
    let good = Auth::sys(7, 7, vec![1; 16], &"m".repeat(255)).to_opaque();
    let mut d = c.call_with(PROG, 1, 2, &good, &()).await.unwrap();
    assert_eq!(u32::unpack(&mut d).unwrap(), 7);
}

/// A peer that sends calls and never reads their replies: the connection
/// stops being read once it holds its budget, and is closed when the
/// writer makes no progress.
#[tokio::test]
async fn slow_reader_gets_back_pressure_then_is_closed() {
    let svc = Arc::new(Counted(Default::default()));
    let cfg = ConnConfig {
        max_pending_bytes: 2 << 20,
        reply_reserve: 256 << 10,
        write_timeout: Some(Duration::from_secs(1)),
        ..ConnConfig::default()
    };
    let addr = server_with(cfg, svc.clone()).await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    let before = BIG_CALLS.load(std::sync::atomic::Ordering::SeqCst);
    let mut calls = Vec::new();
    for xid in 0..200 {
        calls.extend(call_record(
            xid,
            3,
            &OpaqueAuth::none(),
            &OpaqueAuth::none(),
        ));
    }
    // All 200 calls fit in the socket buffers: only the budget stops them.
    s.write_all(&calls).await.unwrap();
    // No progress writing for 1 s: the connection is closed.
    until("a connection whose peer reads nothing is closed", || {
        svc.0.load(std::sync::atomic::Ordering::SeqCst) > 0
    })
    .await;
    // Counted once the connection is gone, so every call it ever ran is
    // in, however fast this machine ran them.
    let answered = BIG_CALLS.load(std::sync::atomic::Ordering::SeqCst) - before;
    eprintln!("{answered} of 200 calls run");
    // 2 MiB of reservations, then replies as the socket buffers take them.
    assert!(
        answered < 40,
        "{answered} calls of 1 MiB run for a peer that reads nothing"
    );
    // Others are served throughout.
    let c = client(addr).await;
    c.call(PROG, 1, 0, &OpaqueAuth::none(), vec![])
        .await
        .unwrap();
}

#[tokio::test]
async fn stalled_records_and_idle_connections_are_closed() {
    let svc = Arc::new(Counted(Default::default()));
    let read_timeout = Some(Duration::from_millis(300));
    // Waiting for the server to close a connection: generous, since when
    // it closes is told apart below without timing the close.
    let eof = |mut s: TcpStream| async move {
        let mut b = [0u8; 16];
        let r = tokio::time::timeout(Duration::from_secs(30), s.read(&mut b)).await;
        assert!(
            matches!(r, Ok(Ok(0)) | Ok(Err(_))),
            "connection left open: {r:?}"
        );
    };
    // Half a record, then nothing: closed by the read timeout, on a server
    // without an idle timeout, so nothing else could have closed it.
    let cfg = ConnConfig {
        read_timeout,
        idle_timeout: None,
        ..ConnConfig::default()
    };
    let stalling = server_with(cfg, svc.clone()).await;
    let mut s = TcpStream::connect(stalling).await.unwrap();
    s.write_all(&(0x8000_0000u32 | 1000).to_be_bytes())
        .await
        .unwrap();
    s.write_all(&[0; 10]).await.unwrap();
    eof(s).await;
    let cfg = ConnConfig {
        read_timeout,
        idle_timeout: Some(Duration::from_millis(600)),
        ..ConnConfig::default()
    };
    let addr = server_with(cfg, svc.clone()).await;
    // Nothing at all: closed by the idle timeout, not the read timeout.
    // Timed from before the connection exists, so a slow machine only
    // makes `took` longer; 500 ms tells 600 from 300 with room for the
    // server's millisecond rounding.
    let started = std::time::Instant::now();
    let s = TcpStream::connect(addr).await.unwrap();
    eof(s).await;
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(500), "{took:?}");
    // A slow call is not idleness.
    let c = client(addr).await;
    let mut d = c
        .call_with(PROG, 1, 1, &OpaqueAuth::none(), &1000u32)
        .await
        .unwrap();
    assert_eq!(u32::unpack(&mut d).unwrap(), 1000);
    until("every connection reported closed", || {
        svc.0.load(std::sync::atomic::Ordering::SeqCst) >= 3
    })
    .await;
}

/// Procedure 1 waits until released, counting the calls that started.
struct Holding {
    started: std::sync::atomic::AtomicUsize,
    release: tokio::sync::Semaphore,
}

impl Service for Holding {
    fn call(&self, call: Call) -> ReplyFuture {
        if call.proc_ != 1 {
            return Echo.call(call);
        }
        self.started
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let svc = HOLDING.get().cloned();
        Box::pin(async move {
            if let Some(svc) = svc {
                if let Ok(p) = svc.release.acquire().await {
                    p.forget();
                }
            }
            Reply::success(&1u32)
        })
    }
}

static HOLDING: std::sync::OnceLock<Arc<Holding>> = std::sync::OnceLock::new();

/// Waits (up to a generous deadline) for `f` to hold.
async fn until(what: &str, f: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn null_ok(c: &Connection) -> bool {
    c.call(PROG, 1, 0, &OpaqueAuth::none(), vec![])
        .await
        .is_ok()
}

/// At the cap a new connection is served and an idle one closed for it:
/// first one that never sent a call, then the one idle longest; one with
/// a call in flight never. When every connection is busy the new one is
/// closed instead.
#[tokio::test]
async fn at_the_cap_the_idle_longest_makes_room() {
    let svc = HOLDING
        .get_or_init(|| {
            Arc::new(Holding {
                started: Default::default(),
                release: tokio::sync::Semaphore::new(0),
            })
        })
        .clone();
    let started = || svc.started.load(std::sync::atomic::Ordering::SeqCst);
    let cfg = ConnConfig {
        max_connections: 3,
        ..ConnConfig::default()
    };
    let addr = server_with(cfg, svc.clone()).await;
    let hold = |c: Arc<Connection>| {
        tokio::spawn(async move {
            c.call_with(PROG, 1, 1, &OpaqueAuth::none(), &0u32)
                .await
                .map(|_| ())
        })
    };
    // The oldest, with a call in flight.
    let busy = client(addr).await;
    let busy_call = hold(busy.clone());
    until("the held call started", || started() == 1).await;
    // Then one that never sends, and one that called and went quiet.
    let mut quiet = TcpStream::connect(addr).await.unwrap();
    let idle = client(addr).await;
    assert!(null_ok(&idle).await);

    // Over the cap: the connection that never sent a call goes.
    let first = client(addr).await;
    assert!(
        null_ok(&first).await,
        "a new connection at the cap is served"
    );
    let mut b = [0u8; 4];
    let eof = tokio::time::timeout(Duration::from_secs(30), quiet.read(&mut b)).await;
    assert!(
        matches!(eof, Ok(Ok(0)) | Ok(Err(_))),
        "the silent connection was closed"
    );
    // Again: now the idle one goes, not the busy one, though older.
    let second = client(addr).await;
    assert!(null_ok(&second).await);
    until("the idle connection was closed", || idle.is_closed()).await;
    assert!(!busy.is_closed() && !first.is_closed());

    // All three busy: a fourth is closed at once.
    let held: Vec<_> = [first.clone(), second.clone()]
        .into_iter()
        .map(hold)
        .collect();
    until("three calls in flight", || started() == 3).await;
    let refused = client(addr).await;
    assert!(
        !null_ok(&refused).await,
        "no room when every connection is busy"
    );
    svc.release.add_permits(3);
    assert!(
        busy_call.await.unwrap().is_ok(),
        "the busy connection was kept"
    );
    for h in held {
        assert!(h.await.unwrap().is_ok());
    }
    // Quiet again, so the next connection is served by closing one.
    let again = client(addr).await;
    assert!(null_ok(&again).await);
}

/// Over its source address's cap a new connection takes the place of
/// that address's connection idle longest.
#[tokio::test]
async fn one_address_displaces_only_its_own() {
    let cfg = ConnConfig {
        max_connections: 10,
        max_connections_per_source: Some(2),
        ..ConnConfig::default()
    };
    let addr = server_with(cfg, Arc::new(Echo)).await;
    let from = |ip: &str| {
        let ip: std::net::IpAddr = ip.parse().unwrap();
        async move {
            let s = tokio::net::TcpSocket::new_v4().unwrap();
            s.bind(std::net::SocketAddr::new(ip, 0)).unwrap();
            let stream = s.connect(addr).await.unwrap();
            start(stream, None, ConnConfig::default()).unwrap()
        }
    };
    let other = from("127.0.0.3").await;
    assert!(null_ok(&other).await);
    let a = from("127.0.0.2").await;
    assert!(null_ok(&a).await);
    let b = from("127.0.0.2").await;
    assert!(null_ok(&b).await);
    let c = from("127.0.0.2").await;
    assert!(null_ok(&c).await, "served over its address's cap");
    until("its oldest was closed", || a.is_closed()).await;
    assert!(!b.is_closed() && !other.is_closed());
    assert!(null_ok(&other).await);
}

#[tokio::test]
async fn in_process_connection_carries_back_channel_calls() {
    let (conn, mut rx) = Connection::in_process(
        "192.0.2.1:700".parse().unwrap(),
        "192.0.2.2:2049".parse().unwrap(),
    );
    assert_eq!(conn.peer().port(), 700);
    let caller = conn.clone();
    let call = tokio::spawn(async move {
        let mut d = caller
            .call_with(PROG, 1, 1, &OpaqueAuth::none(), &42u32)
            .await
            .unwrap();
        u32::unpack(&mut d).unwrap()
    });
    let record: Vec<u8> = rx.recv().await.unwrap().concat();
    let len = u32::from_be_bytes([record[0], record[1], record[2], record[3]]);
    assert_eq!(len, 0x8000_0000 | (record.len() as u32 - 4));
    let mut d = xdr::Decoder::new(Bytes::copy_from_slice(&record[4..]));
    let xid = d.u32().unwrap();
    assert_eq!(d.u32().unwrap(), CALL);
    let h = CallHeader::unpack(&mut d).unwrap();
    assert_eq!((h.prog, h.vers, h.proc_), (PROG, 1, 1));
    assert_eq!(u32::unpack(&mut d).unwrap(), 42);
    // The reply, as the peer would send it.
    let mut e = Encoder::new();
    for w in [xid, REPLY, MSG_ACCEPTED, AUTH_NONE, 0, 0, 43] {
        e.u32(w);
    }
    assert!(!conn.deliver(Bytes::from_static(&[0, 0, 0, 1])));
    assert!(conn.deliver(e.to_bytes()));
    assert_eq!(call.await.unwrap(), 43);
    assert!(!conn.deliver_reply(xid, Bytes::new()), "answered once");
    conn.close();
    assert!(conn.is_closed());
    assert_eq!(
        conn.call(PROG, 1, 0, &OpaqueAuth::none(), vec![])
            .await
            .unwrap_err(),
        CallError::Closed
    );
}

/// Procedure 1 panics before returning its future, procedure 2 on the
/// future's first poll, procedure 3 after waiting; anything else is Echo.
struct Panicky;

impl Service for Panicky {
    fn call(&self, call: Call) -> ReplyFuture {
        match call.proc_ {
            1 => panic!("panicky: in call"),
            2 => Box::pin(async { panic!("panicky: first poll") }),
            3 => Box::pin(async {
                tokio::time::sleep(Duration::from_millis(5)).await;
                panic!("panicky: after waiting")
            }),
            _ => Echo.call(Call { proc_: 2, ..call }),
        }
    }
}

/// A call that panics, whenever it does, fails alone (SYSTEM_ERR, or no
/// reply once it runs in its own task) and the connection goes on serving.
#[tokio::test]
async fn a_panicking_call_fails_alone() {
    let addr = server_with(ConnConfig::default(), Arc::new(Panicky)).await;
    let c = client(addr).await;
    let none = OpaqueAuth::none();
    for p in [1, 2] {
        assert_eq!(
            c.call(PROG, 1, p, &none, vec![]).await.unwrap_err(),
            CallError::Rejected(ReplyError::SystemErr),
            "procedure {p}"
        );
    }
    // No reply ever comes; 300 ms is how long one is given to show. A slow
    // machine can only make this miss a wrong reply, never fail a right
    // server.
    let late = c.call(PROG, 1, 3, &none, vec![]);
    assert!(tokio::time::timeout(Duration::from_millis(300), late)
        .await
        .is_err());
    let mut d = c.call(PROG, 1, 4, &none, vec![]).await.unwrap();
    assert_eq!(u32::unpack(&mut d).unwrap(), u32::MAX);
    assert!(!c.is_closed());
}

/// Calls over UDP: one datagram each way; a reply too large for a
/// datagram is SYSTEM_ERR; garbage and replies get no answer, and the
/// server goes on.
#[tokio::test]
async fn udp_calls() {
    let sock = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let addr = sock.local_addr().unwrap();
    let svc: Arc<dyn Service> = Arc::new(Programs::new().add(PROG, 1, 2, Arc::new(Echo)));
    let (tx, rx) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(serve_udp(sock, svc, 4, rx));
    let c = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    c.connect(addr).await.unwrap();
    let mut buf = vec![0u8; 70_000];
    let ask = |rec: Vec<u8>| {
        let c = &c;
        async move {
            c.send(&rec[4..]).await.unwrap();
        }
    };
    let words = |b: &[u8]| -> Vec<u32> {
        b.chunks(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    };
    // Garbage first: no answer, then a real call is answered.
    c.send(&[1, 2, 3]).await.unwrap();
    c.send(&[0, 0, 0, 9, 0, 0, 0, 1, 0, 0]).await.unwrap();
    let none = OpaqueAuth::none();
    ask(call_record(7, 2, &none, &none)).await;
    let n = tokio::time::timeout(Duration::from_secs(30), c.recv(&mut buf))
        .await
        .unwrap()
        .unwrap();
    // xid, REPLY, MSG_ACCEPTED, verf (2 words), SUCCESS, uid (AUTH_NONE).
    assert_eq!(
        words(&buf[..n]),
        vec![7, REPLY, MSG_ACCEPTED, 0, 0, 0, u32::MAX]
    );
    // 1 MiB does not fit a datagram.
    ask(call_record(8, 3, &none, &none)).await;
    let n = c.recv(&mut buf).await.unwrap();
    assert_eq!(words(&buf[..n]), vec![8, REPLY, MSG_ACCEPTED, 0, 0, 5]);
    // An unknown procedure.
    ask(call_record(9, 77, &none, &none)).await;
    let n = c.recv(&mut buf).await.unwrap();
    assert_eq!(words(&buf[..n]), vec![9, REPLY, MSG_ACCEPTED, 0, 0, 3]);
    let _ = tx.send(true);
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .unwrap()
        .unwrap();
}
