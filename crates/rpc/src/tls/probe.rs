//! The AUTH_TLS probe (RFC 9289 §4.1): a NULL call whose credential is
//! AUTH_TLS with an empty body and whose verifier is AUTH_NONE; a server
//! that offers TLS accepts it with an AUTH_NONE verifier holding
//! "STARTTLS" and a NULL result, and the client then begins the TLS
//! handshake on the same connection.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use xdr::{Decoder, Encoder, Unpack};

use super::link::{Input, Wire};
use super::{TlsClient, Xprt, AUTH_TLS, STARTTLS};
use crate::conn::{start_parts, ConnConfig, Connection, Service, Socket};
use crate::msg::*;

/// The largest probe reply read: a reply with a 400-byte verifier.
const MAX_PROBE_REPLY: usize = 512;

/// The verifier of the reply that accepts a probe.
pub fn starttls_verifier() -> OpaqueAuth {
    OpaqueAuth {
        flavor: AUTH_NONE,
        body: bytes::Bytes::from_static(STARTTLS),
    }
}

/// The probe for program `prog` version `vers`, record-marked.
pub fn probe_call(xid: u32, prog: u32, vers: u32) -> Vec<u8> {
    let mut e = Encoder::with_capacity(44);
    e.u32(0x8000_0000 | 40);
    for w in [
        xid,
        CALL,
        RPC_VERSION,
        prog,
        vers,
        0,
        AUTH_TLS,
        0,
        AUTH_NONE,
        0,
    ] {
        e.u32(w);
    }
    e.finish().concat()
}

/// Checks the reply `body` (without its record mark) to probe `xid`:
/// Ok if the server said STARTTLS, else why not.
pub fn parse_probe_reply(xid: u32, body: bytes::Bytes) -> Result<(), String> {
    let mut d = Decoder::new(body);
    let mut word = |what: &str| {
        d.u32()
            .map_err(|_| format!("probe reply cut short at {what}"))
    };
    if word("xid")? != xid {
        return Err("probe reply to another call".into());
    }
    if word("msg_type")? != REPLY {
        return Err("probe answered with a call".into());
    }
    match word("reply_stat")? {
        MSG_ACCEPTED => {}
        MSG_DENIED => {
            return Err(
                "the server refused the AUTH_TLS probe: it does not offer RPC-over-TLS".into(),
            )
        }
        s => return Err(format!("probe reply with reply_stat {s}")),
    }
    let verf =
        OpaqueAuth::unpack(&mut d).map_err(|_| "probe reply's verifier malformed".to_string())?;
    let stat = d
        .u32()
        .map_err(|_| "probe reply cut short at accept_stat".to_string())?;
    if stat != 0 {
        return Err(format!("probe refused with accept_stat {stat}"));
    }
    if verf.flavor != AUTH_NONE || &verf.body[..] != STARTTLS {
        return Err("the server answered the probe without STARTTLS: no RPC-over-TLS".into());
    }
    Ok(())
}

/// Reads the one-fragment reply to probe `xid` and checks it.
pub async fn read_probe_reply<R: AsyncRead + Unpin>(rd: &mut R, xid: u32) -> io::Result<()> {
    let mark = rd.read_u32().await?;
    let len = (mark & 0x7fff_ffff) as usize;
    if mark & 0x8000_0000 == 0 || len > MAX_PROBE_REPLY {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "probe reply not a single small record",
        ));
    }
    let mut body = vec![0u8; len];
    rd.read_exact(&mut body).await?;
    parse_probe_reply(xid, body.into())
        .map_err(|e| io::Error::new(io::ErrorKind::ConnectionRefused, e))
}

fn probe_xid() -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() ^ (d.as_secs() as u32))
        .unwrap_or(1);
    t | 1
}

/// Opens a connection to `addr` under TLS: the probe for `prog`/`vers`,
/// the handshake (both within the client's handshake timeout), then RPC
/// inside TLS, optionally serving callbacks on it.
pub async fn connect(
    addr: SocketAddr,
    prog: u32,
    vers: u32,
    tls: &TlsClient,
    service: Option<Arc<dyn Service>>,
    cfg: ConnConfig,
) -> io::Result<Arc<Connection>> {
    let stream = TcpStream::connect(addr).await?;
    let _ = stream.set_nodelay(true);
    let (peer, local) = (stream.peer_addr()?, stream.local_addr()?);
    let (mut rd, mut wr) = stream.into_split();
    let started = async {
        let xid = probe_xid();
        wr.write_all(&probe_call(xid, prog, vers)).await?;
        read_probe_reply(&mut rd, xid).await?;
        let state = tls
            .state()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let mut input = Input::new(rd);
        input.upgrade(state.clone());
        let wire = Wire::new(wr);
        wire.upgrade(state);
        super::drive(&mut input, &wire).await?;
        Ok::<_, io::Error>((input, wire))
    };
    let (input, wire) = tokio::time::timeout(tls.handshake_timeout, started)
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out"))??;
    let socket = Socket {
        input,
        wire,
        peer,
        local,
        xprt: Xprt::Tls,
    };
    start_parts(socket, service, cfg)
}
