//! RPC-over-TLS over real loopback connections: the probe, the handshake
//! (with and without a client certificate), calls of every size inside
//! TLS (ranges of files too), and refusals: no TLS offered, an unknown
//! authority, garbage after STARTTLS, a handshake that stalls, a probe out
//! of place.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use xdr::{Encoder, FileSlice, Pack, Piece, Unpack};

use super::*;
use crate::{
    serve, Call, ConnConfig, Connection, OpaqueAuth, Programs, Reply, ReplyError, ReplyFuture,
    Service,
};

const PROG: u32 = 400_100;

/// Procedure 1 echoes its arguments; 2 answers the connection's transport
/// security; 3 answers, as an opaque, a range of a file (sent from the
/// file on a plain connection).
struct Svc {
    file: Arc<std::fs::File>,
    file_len: usize,
}

impl Service for Svc {
    fn call(&self, mut call: Call) -> ReplyFuture {
        let (file, len) = (self.file.clone(), self.file_len);
        Box::pin(async move {
            match call.proc_ {
                1 => Reply::Success(vec![call.args.take_rest()]),
                2 => Reply::success(&(call.conn.xprt() as u32)),
                3 => {
                    let mut e = Encoder::new();
                    e.u32(len as u32);
                    Reply::Pieces(vec![
                        Piece::Mem(e.finish().concat().into()),
                        Piece::File(FileSlice {
                            file,
                            offset: 0,
                            len,
                        }),
                    ])
                }
                _ => Reply::Error(ReplyError::ProcUnavail),
            }
        })
    }
}

/// A certificate authority, a server certificate for "localhost" and a
/// client certificate, all signed by it.
struct Pki {
    ca: CertificateDer<'static>,
    server: (CertificateDer<'static>, PrivateKeyDer<'static>),
    client: (CertificateDer<'static>, PrivateKeyDer<'static>),
}

fn pki() -> Pki {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = params.self_signed(&ca_key).unwrap();
    let leaf = |name: &str| {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec![name.to_string()])
            .unwrap()
            .signed_by(&key, &ca, &ca_key)
            .unwrap();
        let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        (cert.der().clone(), der)
    };
    Pki {
        server: leaf("localhost"),
        client: leaf("client.test"),
        ca: ca.der().clone(),
    }
}

const FILE_LEN: usize = 300 * 1024;

async fn server(tls: Option<TlsServer>) -> std::net::SocketAddr {
    let svc = Svc {
        file: crate::out::tests::numbered_file(FILE_LEN),
        file_len: FILE_LEN,
    };
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let programs = Programs::new()
        .add(PROG, 1, 1, Arc::new(svc))
        .with_tls(tls.map(Arc::new));
    let svc: Arc<dyn Service> = Arc::new(programs);
    let (tx, rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        let _keep = tx;
        serve(l, svc, ConnConfig::default(), rx).await
    });
    addr
}

fn tls_server(p: &Pki, mutual: bool) -> TlsServer {
    TlsServer::from_der(
        vec![p.server.0.clone()],
        p.server.1.clone_key(),
        mutual.then(|| vec![p.ca.clone()]),
    )
    .unwrap()
}

fn tls_client(p: &Pki, with_cert: bool) -> TlsClient {
    TlsClient::from_der(
        vec![p.ca.clone()],
        "localhost",
        with_cert.then(|| (vec![p.client.0.clone()], p.client.1.clone_key())),
    )
    .unwrap()
}

/// A connection to `addr` under TLS with `client`'s settings.
async fn tls_conn(
    addr: std::net::SocketAddr,
    client: &TlsClient,
) -> std::io::Result<Arc<Connection>> {
    super::connect(addr, PROG, 1, client, None, ConnConfig::default()).await
}

async fn echo(c: &Connection, data: Vec<u8>) -> Vec<u8> {
    let mut d = c
        .call(PROG, 1, 1, &OpaqueAuth::none(), vec![Bytes::from(data)])
        .await
        .unwrap();
    d.take_rest().to_vec()
}

async fn xprt_seen(c: &Connection) -> u32 {
    let mut d = c
        .call(PROG, 1, 2, &OpaqueAuth::none(), Vec::new())
        .await
        .unwrap();
    u32::unpack(&mut d).unwrap()
}

#[tokio::test]
async fn calls_of_every_size_run_inside_tls() {
    let p = pki();
    let addr = server(Some(tls_server(&p, false))).await;
    let c = tls_conn(addr, &tls_client(&p, false)).await.unwrap();
    assert_eq!(c.xprt(), Xprt::Tls);
    assert_eq!(xprt_seen(&c).await, Xprt::Tls as u32);
    // Sizes across TLS record (16 KiB) and buffer (64 KiB) bounds.
    for len in [
        0usize,
        1,
        3,
        4,
        4096,
        16 * 1024 - 3,
        16 * 1024 + 5,
        200_000,
        1 << 20,
    ] {
        let data: Vec<u8> = (0..len / 4 * 4).map(|i| (i * 7 % 256) as u8).collect();
        assert_eq!(echo(&c, data.clone()).await, data, "echo of {len} bytes");
    }
    // Concurrent calls, their replies interleaved inside TLS.
    let mut calls = Vec::new();
    for i in 0..64u32 {
        let c = c.clone();
        calls.push(tokio::spawn(async move {
            let data = vec![(i % 256) as u8; 4 * (1 + i as usize * 997 % 9000)];
            (echo(&c, data.clone()).await, data)
        }));
    }
    for t in calls {
        let (got, want) = t.await.unwrap();
        assert_eq!(got, want);
    }
    // A range of a file, read and encrypted rather than sent from the file.
    let mut d = c
        .call(PROG, 1, 3, &OpaqueAuth::none(), Vec::new())
        .await
        .unwrap();
    let body = Bytes::unpack(&mut d).unwrap();
    assert_eq!(body.len(), FILE_LEN);
    assert!(body.iter().enumerate().all(|(i, &b)| b == (i % 253) as u8));
}

#[tokio::test]
async fn a_client_certificate_makes_the_connection_mtls() {
    let p = pki();
    let addr = server(Some(tls_server(&p, true))).await;
    let with = tls_conn(addr, &tls_client(&p, true)).await.unwrap();
    assert_eq!(xprt_seen(&with).await, Xprt::Mtls as u32);
    // Without one, the same server still takes it, as plain TLS.
    let without = tls_conn(addr, &tls_client(&p, false)).await.unwrap();
    assert_eq!(xprt_seen(&without).await, Xprt::Tls as u32);
    // A certificate of another authority is refused.
    let other = pki();
    let forged = TlsClient::from_der(
        vec![p.ca.clone()],
        "localhost",
        Some((vec![other.client.0.clone()], other.client.1.clone_key())),
    )
    .unwrap();
    let refused = tls_conn(addr, &forged).await;
    // TLS 1.3: the client's handshake ends before the server judges its
    // certificate, so the refusal shows on the first call.
    if let Ok(c) = refused {
        let r = c.call(PROG, 1, 2, &OpaqueAuth::none(), Vec::new()).await;
        assert!(r.is_err(), "a call over a refused certificate: {r:?}");
    }
    // Plain connections are served as before.
    let plain = crate::conn::connect(addr, None, ConnConfig::default())
        .await
        .unwrap();
    assert_eq!(xprt_seen(&plain).await, Xprt::None as u32);
}

#[tokio::test]
async fn a_server_without_tls_refuses_the_probe() {
    let p = pki();
    let addr = server(None).await;
    let e = tls_conn(addr, &tls_client(&p, false)).await.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
    assert!(e.to_string().contains("does not offer"), "{e}");
}

#[tokio::test]
async fn an_untrusted_server_certificate_is_refused() {
    let p = pki();
    let other = pki();
    let addr = server(Some(tls_server(&p, false))).await;
    let e = tls_conn(addr, &tls_client(&other, false))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidData, "{e}");
    // The server goes on serving.
    let c = tls_conn(addr, &tls_client(&p, false)).await.unwrap();
    assert_eq!(echo(&c, vec![1, 2, 3, 4]).await, vec![1, 2, 3, 4]);
}

/// Sends the probe on a raw socket and reads the STARTTLS reply.
async fn probed(addr: std::net::SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&probe_call(77, PROG, 1)).await.unwrap();
    read_probe_reply(&mut s, 77).await.unwrap();
    s
}

/// Waits (generously) for the server to close `s`, discarding what it
/// sends first (an alert).
async fn closed_by_server(s: &mut TcpStream) {
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return,
            Ok(Ok(_)) => continue,
            Err(_) => panic!("the server did not close the connection"),
        }
    }
}

#[tokio::test]
async fn garbage_or_a_stall_after_starttls_closes_only_that_connection() {
    let p = pki();
    let mut srv = tls_server(&p, false);
    // Short, so that the stalls end soon; long enough that the handshake
    // of the client served at the end finishes in it on a busy machine.
    srv.handshake_timeout = Duration::from_secs(3);
    let addr = server(Some(srv)).await;
    // Garbage where a ClientHello belongs.
    let mut s = probed(addr).await;
    s.write_all(&[0x16, 3, 1, 0, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9])
        .await
        .unwrap();
    closed_by_server(&mut s).await;
    let mut s = probed(addr).await;
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    closed_by_server(&mut s).await;
    // Half a record header, then nothing: the handshake timeout closes it.
    let mut s = probed(addr).await;
    s.write_all(&[0x16, 3, 1]).await.unwrap();
    closed_by_server(&mut s).await;
    // Nothing at all after the probe.
    let mut s = probed(addr).await;
    closed_by_server(&mut s).await;
    // Others are served throughout.
    let c = tls_conn(addr, &tls_client(&p, false)).await.unwrap();
    assert_eq!(echo(&c, vec![9; 8]).await, vec![9; 8]);
}

fn words(b: &[u8]) -> Vec<u32> {
    b.chunks(4)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

async fn raw_reply(s: &mut TcpStream) -> Vec<u32> {
    let mark = s.read_u32().await.unwrap();
    let mut body = vec![0u8; (mark & 0x7fff_ffff) as usize];
    s.read_exact(&mut body).await.unwrap();
    words(&body)
}

#[tokio::test]
async fn a_probe_out_of_place_is_an_auth_error() {
    let p = pki();
    let addr = server(Some(tls_server(&p, false))).await;
    // AUTH_TLS on a procedure other than NULL.
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut call = probe_call(5, PROG, 1);
    call[4 * 6 + 3] = 1; // proc 1
    s.write_all(&call).await.unwrap();
    // xid, REPLY, MSG_DENIED, AUTH_ERROR, AUTH_BADCRED
    assert_eq!(raw_reply(&mut s).await, vec![5, 1, 1, 1, 1]);
    // After another call: the probe is for a connection's first call.
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut null = probe_call(6, PROG, 1);
    null[4 * 7 + 3] = 0; // AUTH_NONE
    s.write_all(&null).await.unwrap();
    assert_eq!(raw_reply(&mut s).await, vec![6, 1, 0, 0, 0, 0]);
    s.write_all(&probe_call(7, PROG, 1)).await.unwrap();
    assert_eq!(raw_reply(&mut s).await, vec![7, 1, 1, 1, 1]);
    // A credential body on the probe.
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut e = Encoder::new();
    e.u32(0x8000_0000 | 44);
    for w in [8, 0, 2, PROG, 1, 0, AUTH_TLS, 4, 0xdead, 0, 0] {
        e.u32(w);
    }
    s.write_all(&e.finish().concat()).await.unwrap();
    assert_eq!(raw_reply(&mut s).await, vec![8, 1, 1, 1, 1]);
}

#[test]
fn probe_replies_are_checked() {
    let ok = |xid: u32, verf: &[u8], stat: u32| {
        let mut e = Encoder::new();
        for w in [xid, 1, 0, 0] {
            e.u32(w);
        }
        Bytes::copy_from_slice(verf).pack(&mut e);
        e.u32(stat);
        Bytes::from(e.finish().concat())
    };
    assert!(parse_probe_reply(3, ok(3, STARTTLS, 0)).is_ok());
    assert!(parse_probe_reply(4, ok(3, STARTTLS, 0)).is_err());
    assert!(parse_probe_reply(3, ok(3, b"", 0)).is_err());
    assert!(parse_probe_reply(3, ok(3, STARTTLS, 1)).is_err());
    let full = ok(3, STARTTLS, 0);
    for cut in 0..full.len() {
        assert!(
            parse_probe_reply(3, full.slice(..cut)).is_err(),
            "cut at {cut}"
        );
    }
}

/// Copies `from` to `to`, keeping what passed in `seen`.
async fn relay_half(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    seen: Arc<std::sync::Mutex<Vec<u8>>>,
) {
    let mut b = vec![0u8; 65536];
    loop {
        let n = from.read(&mut b).await.unwrap_or(0);
        if n == 0 {
            break;
        }
        seen.lock().unwrap().extend_from_slice(&b[..n]);
        if to.write_all(&b[..n]).await.is_err() {
            break;
        }
    }
}

#[tokio::test]
async fn nothing_after_the_probe_travels_in_the_clear() {
    let p = pki();
    let addr = server(Some(tls_server(&p, false))).await;
    // A relay between client and server that keeps what passes each way.
    let relay = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let raddr = relay.local_addr().unwrap();
    let up = Arc::new(std::sync::Mutex::new(Vec::new()));
    let down = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (u, d) = (up.clone(), down.clone());
    tokio::spawn(async move {
        let (inbound, _) = relay.accept().await.unwrap();
        let outbound = TcpStream::connect(addr).await.unwrap();
        let (ir, iw) = inbound.into_split();
        let (or, ow) = outbound.into_split();
        tokio::join!(relay_half(ir, ow, u), relay_half(or, iw, d));
    });
    let c = tls_conn(raddr, &tls_client(&p, false)).await.unwrap();
    let marker = b"FERRITE-PLAINTEXT-MARKER-0123456789abcdef".repeat(100);
    assert_eq!(echo(&c, marker.clone()).await, marker);
    let mut d3 = c
        .call(PROG, 1, 3, &OpaqueAuth::none(), Vec::new())
        .await
        .unwrap();
    assert_eq!(Bytes::unpack(&mut d3).unwrap().len(), FILE_LEN);
    let file_run: Vec<u8> = (0..64u32).map(|i| (i % 253) as u8).collect();
    let has = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
    let (up, down) = (up.lock().unwrap().clone(), down.lock().unwrap().clone());
    // The relay saw the traffic (more than the data itself)...
    assert!(up.len() > marker.len() && down.len() > marker.len() + FILE_LEN);
    // ...the probe in the clear, as RFC 9289 has it...
    assert!(has(&up[..44], &AUTH_TLS.to_be_bytes()));
    assert!(has(&down, STARTTLS));
    // ...and none of the arguments or results.
    assert!(!has(&up, b"PLAINTEXT-MARKER"), "arguments in the clear");
    assert!(!has(&down, b"PLAINTEXT-MARKER"), "results in the clear");
    assert!(!has(&down, &file_run), "file bytes in the clear");
}
