//! Driving a TLS handshake on a connection's two sides until it is done
//! (RFC 9289 §5.1): what TLS has to send goes out, what the peer sends
//! comes in, until the handshake ends and its last messages are sent.

use std::io;

use super::link::{lock, Input, Wire};

/// Runs the handshake `wire` and `input` were upgraded with. The caller
/// bounds it in time.
pub(crate) async fn drive(input: &mut Input, wire: &Wire) -> io::Result<()> {
    let Some(tls) = wire.tls().cloned() else {
        return Err(io::Error::other("no TLS on this connection"));
    };
    loop {
        match wire.drain() {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                wire.writable().await?;
                continue;
            }
            Err(e) => return Err(e),
        }
        if !lock(&tls)?.is_handshaking() {
            return Ok(());
        }
        let pumped = input.pump().await;
        if pumped.is_err() {
            // The alert TLS queued for the failure, if the socket takes it.
            let _ = wire.drain();
        }
        if !pumped? {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the peer closed the connection during the handshake",
            ));
        }
    }
}
