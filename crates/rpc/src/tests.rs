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
/// procedure 2 answers with the caller's uid.
struct Echo;

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
                },
                _ => Reply::Error(ReplyError::ProcUnavail),
            }
        })
    }
}

async fn server() -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let svc: Arc<dyn Service> = Arc::new(Programs::new().add(PROG, 1, 2, Arc::new(Echo)));
    let (_tx, rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        let _keep = _tx;
        serve(l, svc, ConnConfig::default(), rx).await
    });
    addr
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
