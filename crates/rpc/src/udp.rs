//! ONC RPC over UDP: one call per datagram, its reply one datagram back
//! (RFC 5531 §3: the transport's message boundaries delimit messages, no
//! record marking). For the small programs a client asks once and
//! retransmits itself (port mapper, MOUNT, NLM, NSM), never for NFS.
//!
//! Every call runs as a task of its own, at most `max_in_flight` at once;
//! a datagram past that is dropped (its sender retransmits). Nothing is
//! remembered between datagrams: there is no duplicate request cache, so
//! the programs served here must tolerate a call made twice.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use tokio::net::UdpSocket;
use tokio::sync::{watch, Semaphore};
use tracing::{debug, info, warn};
use xdr::Decoder;

use crate::conn::{parse_call, reply_message, Call, Connection, Reply, Service};
use crate::msg::{ReplyError, CALL};
use crate::ratelimit::RateLimit;

/// The largest UDP payload over IPv4 (65,535 less the IP and UDP headers).
pub const MAX_DATAGRAM: usize = 65_507;

static UDP_LOG: RateLimit = RateLimit::per_secs(10);

/// The reply datagram to `xid`, or none ([`Reply::Drop`]). A reply too
/// large for one datagram becomes SYSTEM_ERR.
fn datagram(xid: u32, reply: Reply) -> Option<Vec<u8>> {
    let (h, body) = reply_message(xid, reply)?;
    let chunks: Vec<Bytes> = h.finish().into_iter().chain(body).collect();
    let len: usize = chunks.iter().map(Bytes::len).sum();
    if len > MAX_DATAGRAM {
        return datagram(xid, Reply::Error(ReplyError::SystemErr));
    }
    let mut out = Vec::with_capacity(len);
    for c in &chunks {
        out.extend_from_slice(c);
    }
    Some(out)
}

/// Serves calls arriving on `socket` until `shutdown` turns true.
pub async fn serve_udp(
    socket: UdpSocket,
    service: Arc<dyn Service>,
    max_in_flight: usize,
    mut shutdown: watch::Receiver<bool>,
) {
    let socket = Arc::new(socket);
    let local = match socket.local_addr() {
        Ok(a) => a,
        Err(e) => {
            warn!("UDP socket has no address: {e}");
            return;
        }
    };
    let slots = Arc::new(Semaphore::new(max_in_flight.max(1)));
    let mut buf = vec![0u8; MAX_DATAGRAM + 1];
    loop {
        let got = tokio::select! {
            r = socket.recv_from(&mut buf) => r,
            _ = shutdown.wait_for(|s| *s) => break,
        };
        let (n, peer) = match got {
            Ok(v) => v,
            Err(e) => {
                // ICMP errors of earlier sends surface here on Linux.
                debug!("UDP receive failed: {e}");
                continue;
            }
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            if let Some(k) = UDP_LOG.allow() {
                warn!(%peer, "{max_in_flight} UDP calls running: dropping a datagram ({k} more not logged)");
            }
            continue;
        };
        let msg = Bytes::copy_from_slice(&buf[..n]);
        let socket = socket.clone();
        let service = service.clone();
        tokio::spawn(async move {
            if let Some(reply) = answer(msg, peer, local, &*service).await {
                if let Err(e) = socket.send_to(&reply, peer).await {
                    debug!(%peer, "UDP send failed: {e}");
                }
            }
            drop(permit);
        });
    }
    info!(%local, "UDP listener stopped");
}

/// The reply datagram to one received datagram, if it is a call.
async fn answer(
    msg: Bytes,
    peer: SocketAddr,
    local: SocketAddr,
    service: &dyn Service,
) -> Option<Vec<u8>> {
    let mut d = Decoder::new(msg);
    let (Ok(xid), Ok(mtype)) = (d.u32(), d.u32()) else {
        return None;
    };
    if mtype != CALL {
        return None;
    }
    let (prog, vers, proc_, auth) = match parse_call(&mut d) {
        Ok(v) => v,
        Err(e) => {
            if let Some(k) = UDP_LOG.allow() {
                warn!(%peer, xid, "rejecting UDP call: {e:?} ({k} more not logged)");
            }
            return datagram(xid, Reply::Error(e));
        }
    };
    let call = Call {
        xid,
        prog,
        vers,
        proc_,
        auth,
        args: d,
        conn: Connection::datagram(peer, local),
    };
    let reply = service.call(call).await;
    datagram(xid, reply)
}
