//! RPC-over-TLS (RFC 9289) settings: the server's certificate chain and
//! key, and for mutual TLS the authorities whose client certificates it
//! verifies. The probe, the handshake and the records inside TLS are
//! `rpc::tls`; which exports demand TLS is each export's `xprtsec`
//! (`exports::export`).

use std::path::PathBuf;
use std::time::Duration;

/// `[tls]` in the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsConfig {
    /// PEM: the server's certificate, then any intermediates.
    pub certificate: PathBuf,
    /// PEM: its private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// PEM: the authorities of client certificates; with it, a client
    /// that presents a certificate they signed has an "mtls" connection.
    pub client_ca: Option<PathBuf>,
    /// How long a client may take from the probe to the handshake's end.
    pub handshake_timeout: Duration,
}

impl TlsConfig {
    pub fn new(certificate: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        TlsConfig {
            certificate: certificate.into(),
            key: key.into(),
            client_ca: None,
            handshake_timeout: Duration::from_secs(10),
        }
    }

    /// The TLS settings the NFS port serves with; an error naming the file
    /// that could not be used. Reads files: call it off the async threads.
    pub fn load(&self) -> Result<rpc::tls::TlsServer, String> {
        let mut s =
            rpc::tls::TlsServer::from_pem(&self.certificate, &self.key, self.client_ca.as_deref())?;
        s.handshake_timeout = self.handshake_timeout;
        Ok(s)
    }
}
