//! systemd's readiness protocol (sd_notify(3)): a datagram of
//! `KEY=VALUE` lines to the socket named by `NOTIFY_SOCKET`, which
//! systemd sets for a `Type=notify` service. Without it, nothing is sent.

use std::os::unix::net::UnixDatagram;

/// Sends `state` (for example "READY=1") to systemd, if it listens; a
/// failure is logged, never fatal.
pub fn send(state: &str) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    if let Err(e) = send_to(&path, state) {
        tracing::warn!("could not notify systemd ({}): {e}", path.to_string_lossy());
    }
}

fn send_to(path: &std::ffi::OsStr, state: &str) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let sock = UnixDatagram::unbound()?;
    let bytes = path.as_bytes();
    // "@name" is a socket in the abstract namespace.
    if let Some(name) = bytes.strip_prefix(b"@") {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
        sock.send_to_addr(state.as_bytes(), &addr)?;
    } else {
        sock.send_to(state.as_bytes(), path)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_datagram_reaches_the_socket_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let listener = UnixDatagram::bind(&path).unwrap();
        send_to(path.as_os_str(), "READY=1\nSTATUS=x").unwrap();
        let mut buf = [0u8; 64];
        let n = listener.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1\nSTATUS=x");
    }
}
