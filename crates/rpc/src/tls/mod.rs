//! RPC-over-TLS (RFC 9289).
//!
//! A client asks with a NULL call whose credential is AUTH_TLS (§4.1);
//! a server that offers TLS answers with the verifier "STARTTLS", and the
//! TLS 1.3 handshake (§5.1) follows on the same connection, after which
//! the record-marked RPC stream runs inside TLS. The handshake is rustls
//! with its ring provider; certificates and keys come from PEM files.
//!
//! - `config`: the server's and the client's TLS settings, from PEM.
//! - `link`: a socket's two sides, plain until upgraded, then through TLS.
//! - `handshake`: driving a handshake to its end.
//! - `probe`: the AUTH_TLS probe, both sides, and the client's connect.

mod config;
mod handshake;
pub(crate) mod link;
mod probe;

pub use config::{TlsClient, TlsCounts, TlsServer};
pub(crate) use handshake::drive;
pub use link::{take_output, Input, Tls};
pub use probe::{connect, parse_probe_reply, probe_call, read_probe_reply, starttls_verifier};

/// RFC 9289 §4.1: the auth_flavor of the probe.
pub const AUTH_TLS: u32 = 7;

/// RFC 9289 §4.1: the body of the verifier that accepts the probe.
pub const STARTTLS: &[u8; 8] = b"STARTTLS";

/// RFC 9289 §5.1 / §7.2: the ALPN identifier of RPC-with-TLS.
pub const ALPN: &[u8] = b"sunrpc";

/// The transport security a connection has, in the Linux server's
/// names (`xprtsec=`): plain, TLS, or TLS with a client certificate the
/// server verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Xprt {
    None = 0,
    Tls = 1,
    Mtls = 2,
}

impl Xprt {
    pub fn name(self) -> &'static str {
        match self {
            Xprt::None => "none",
            Xprt::Tls => "tls",
            Xprt::Mtls => "mtls",
        }
    }

    pub fn parse(s: &str) -> Option<Xprt> {
        match s {
            "none" => Some(Xprt::None),
            "tls" => Some(Xprt::Tls),
            "mtls" => Some(Xprt::Mtls),
            _ => None,
        }
    }

    pub(crate) fn from_u8(v: u8) -> Xprt {
        match v {
            1 => Xprt::Tls,
            2 => Xprt::Mtls,
            _ => Xprt::None,
        }
    }
}

impl std::fmt::Display for Xprt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests;
