//! The authenticated peer channel: HELLO opens a peer session (each side
//! sends a nonce; the callee proves it holds the key), then every call
//! is sealed with a MAC (keyed BLAKE3) over the session, a counter that
//! only goes up, the procedure and the body, and every answer with one
//! over the session, the counter and the answer. Neither side takes
//! anything it cannot verify; a replayed call is refused.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use proto::migrate::*;
use xdr::{Pack, Unpack};

/// How long connecting and HELLO may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long any other call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);

fn mac(key: &[u8; 32], parts: &[&[u8]]) -> [u8; 32] {
    let mut h = blake3::Hasher::new_keyed(key);
    for p in parts {
        h.update(&(p.len() as u64).to_be_bytes());
        h.update(p);
    }
    *h.finalize().as_bytes()
}

/// The MAC of HELLO's answer.
pub fn hello_mac(key: &[u8; 32], caller: &[u8; 16], session: &[u8; 16]) -> [u8; 32] {
    mac(key, &[b"hello", caller, session])
}

/// The MAC of a sealed call.
pub fn call_mac(
    key: &[u8; 32],
    session: &[u8; 16],
    counter: u64,
    proc_: u32,
    body: &[u8],
) -> [u8; 32] {
    mac(
        key,
        &[
            b"call",
            session,
            &counter.to_be_bytes(),
            &proc_.to_be_bytes(),
            body,
        ],
    )
}

/// The MAC of a sealed answer.
pub fn reply_mac(
    key: &[u8; 32],
    session: &[u8; 16],
    counter: u64,
    status: PeerStatus,
    message: &[u8],
    body: &[u8],
) -> [u8; 32] {
    mac(
        key,
        &[
            b"reply",
            session,
            &counter.to_be_bytes(),
            &(status as u32).to_be_bytes(),
            message,
            body,
        ],
    )
}

/// Constant-time comparison of two MACs.
pub fn same_mac(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// An answer: its status, message and body.
pub type Answer = (PeerStatus, String, Bytes);

/// A peer session with a destination.
pub struct Channel {
    conn: Arc<rpc::Connection>,
    key: [u8; 32],
    session: [u8; 16],
    counter: u64,
    to: SocketAddr,
}

impl Channel {
    /// Connects to `to` and opens a peer session: fails with a clear
    /// reason when `to` is unreachable, is not a Ferrite, or does not hold
    /// the key.
    pub async fn open(to: SocketAddr, key: [u8; 32]) -> Result<Channel, String> {
        let mut nonce = [0u8; 16];
        getrandom::getrandom(&mut nonce).map_err(|e| format!("no randomness: {e}"))?;
        let hello = async {
            let conn = rpc::connect(to, None, rpc::ConnConfig::default())
                .await
                .map_err(|e| format!("cannot reach {to}: {e}"))?;
            let r = conn
                .call_with(
                    FERRITE_PEER_PROGRAM,
                    FERRITE_PEER_V1,
                    PEER_HELLO,
                    &rpc::OpaqueAuth::none(),
                    &HelloArgs { nonce },
                )
                .await;
            let mut d = r.map_err(|e| match e {
                rpc::CallError::Rejected(rpc::ReplyError::ProgUnavail) => format!(
                    "{to} is not a Ferrite that takes migrations (it does not serve the peer program)"
                ),
                rpc::CallError::Rejected(why) => format!("{to} refused the peer program: {why:?}"),
                other => format!("{to} is not a Ferrite that takes migrations ({other})"),
            })?;
            let res = HelloRes::unpack(&mut d)
                .map_err(|e| format!("{to} answered HELLO with garbage: {e}"))?;
            if !same_mac(&res.mac, &hello_mac(&key, &nonce, &res.session)) {
                conn.close();
                return Err(format!(
                    "{to} does not hold this server's filehandle key: the two servers of a \
                     migration pair must share STATE_DIR/fh.key"
                ));
            }
            Ok(Channel {
                conn,
                key,
                session: res.session,
                counter: 0,
                to,
            })
        };
        match tokio::time::timeout(CONNECT_TIMEOUT, hello).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "{to} did not answer HELLO within {CONNECT_TIMEOUT:?} (is it a Ferrite?)"
            )),
        }
    }

    /// Sends `args` to procedure `proc_`, sealed; returns the verified
    /// answer.
    pub async fn call<A: Pack>(&mut self, proc_: u32, args: &A) -> Result<Answer, String> {
        let body = xdr::to_bytes(args);
        if body.len() > PEER_MAX_BODY {
            return Err(format!(
                "the call is {} bytes, over the {PEER_MAX_BODY} one peer call carries",
                body.len()
            ));
        }
        self.counter += 1;
        let counter = self.counter;
        let sealed = Sealed {
            session: self.session,
            counter,
            mac: call_mac(&self.key, &self.session, counter, proc_, &body),
            body,
        };
        let to = self.to;
        let none = rpc::OpaqueAuth::none();
        let call =
            self.conn
                .call_with(FERRITE_PEER_PROGRAM, FERRITE_PEER_V1, proc_, &none, &sealed);
        let mut d = match tokio::time::timeout(CALL_TIMEOUT, call).await {
            Ok(Ok(d)) => d,
            Ok(Err(e)) => return Err(format!("{to}: {e}")),
            Err(_) => return Err(format!("{to} did not answer within {CALL_TIMEOUT:?}")),
        };
        let r = SealedRes::unpack(&mut d).map_err(|e| format!("{to} answered garbage: {e}"))?;
        let want = reply_mac(
            &self.key,
            &self.session,
            counter,
            r.status,
            &r.message,
            &r.body,
        );
        if !same_mac(&r.mac, &want) {
            return Err(format!("{to} sent an answer that is not authentic"));
        }
        Ok((
            r.status,
            String::from_utf8_lossy(&r.message).into_owned(),
            r.body,
        ))
    }

    pub fn close(&self) {
        self.conn.close();
    }
}
