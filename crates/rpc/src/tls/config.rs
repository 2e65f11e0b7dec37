//! TLS settings from PEM files: the server's certificate chain and key,
//! and optionally the authorities whose client certificates it accepts
//! (mutual TLS); the client's trusted authorities, the name it expects
//! the server's certificate to carry, and optionally its own certificate.
//! Only TLS 1.3 is offered (RFC 9289 §5.1), with the ALPN "sunrpc".

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig};

/// How long a handshake may take, probe to Finished, unless configured.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A server's TLS settings, and what came of its handshakes.
#[derive(Clone)]
pub struct TlsServer {
    pub(crate) config: Arc<ServerConfig>,
    /// Whether client certificates are asked for (and verified).
    pub mutual: bool,
    pub handshake_timeout: Duration,
    pub counts: Arc<TlsCounts>,
}

/// Handshakes since the start.
#[derive(Debug, Default)]
pub struct TlsCounts {
    /// Probes answered with STARTTLS.
    pub probes: std::sync::atomic::AtomicU64,
    /// Handshakes completed (TLS and mutual TLS).
    pub established: std::sync::atomic::AtomicU64,
    /// Of those, with a client certificate the server verified.
    pub mutual: std::sync::atomic::AtomicU64,
    /// Handshakes that failed: garbage, a refused certificate, a stall
    /// past the timeout, a client that went away.
    pub failed: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for TlsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsServer")
            .field("mutual", &self.mutual)
            .field("handshake_timeout", &self.handshake_timeout)
            .finish()
    }
}

/// A client's TLS settings.
#[derive(Clone)]
pub struct TlsClient {
    pub(crate) config: Arc<ClientConfig>,
    pub(crate) name: ServerName<'static>,
    pub handshake_timeout: Duration,
}

impl std::fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsClient")
            .field("name", &self.name)
            .finish()
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The certificates of a PEM file, in order; an error naming the file if
/// it cannot be read or holds none.
pub fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let what = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| what(&e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| what(&e))?;
    if certs.is_empty() {
        return Err(format!("{}: no certificate in the file", path.display()));
    }
    Ok(certs)
}

/// The private key of a PEM file (PKCS#8, PKCS#1 or SEC1).
pub fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn roots(certs: Vec<CertificateDer<'static>>) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    for c in certs {
        store
            .add(c)
            .map_err(|e| format!("a trusted certificate: {e}"))?;
    }
    Ok(store)
}

impl TlsServer {
    /// From PEM files: `certificate` (the chain, leaf first), `key`, and,
    /// for mutual TLS, `client_ca` (the authorities of client
    /// certificates). With `client_ca`, a client may still come without a
    /// certificate: its connection is then "tls", not "mtls", and exports
    /// decide (`xprtsec`).
    pub fn from_pem(
        certificate: &Path,
        key: &Path,
        client_ca: Option<&Path>,
    ) -> Result<Self, String> {
        let ca = client_ca.map(certificates).transpose()?;
        Self::from_der(certificates(certificate)?, private_key(key)?, ca)
    }

    pub fn from_der(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
        client_ca: Option<Vec<CertificateDer<'static>>>,
    ) -> Result<Self, String> {
        let builder = ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| e.to_string())?;
        let mutual = client_ca.is_some();
        let builder = match client_ca {
            Some(ca) => {
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots(ca)?),
                    provider(),
                )
                .allow_unauthenticated()
                .build()
                .map_err(|e| format!("client authorities: {e}"))?;
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let mut config = builder
            .with_single_cert(chain, key)
            .map_err(|e| format!("certificate and key: {e}"))?;
        config.alpn_protocols = vec![super::ALPN.to_vec()];
        // No session tickets: an RPC connection lives long and is not
        // resumed, and a client that hands the socket to the kernel's TLS
        // after its handshake (Linux's tlshd) cannot take a handshake
        // message arriving after it.
        config.send_tls13_tickets = 0;
        Ok(TlsServer {
            config: Arc::new(config),
            mutual,
            handshake_timeout: HANDSHAKE_TIMEOUT,
            counts: Arc::default(),
        })
    }
}

impl TlsServer {
    /// The server's TLS state for one new connection.
    pub fn state(&self) -> Result<super::Tls, String> {
        let c = rustls::ServerConnection::new(self.config.clone()).map_err(|e| e.to_string())?;
        Ok(Arc::new(std::sync::Mutex::new(rustls::Connection::Server(
            c,
        ))))
    }
}

impl TlsClient {
    /// The client's TLS state for one new connection (its first flight,
    /// the ClientHello, waiting to be sent).
    pub fn state(&self) -> Result<super::Tls, String> {
        let c = rustls::ClientConnection::new(self.config.clone(), self.name.clone())
            .map_err(|e| e.to_string())?;
        Ok(Arc::new(std::sync::Mutex::new(rustls::Connection::Client(
            c,
        ))))
    }

    /// From PEM files: `ca` (the authorities trusted to sign the server's
    /// certificate), the server's name as its certificate carries it, and
    /// for mutual TLS the client's own certificate chain and key.
    pub fn from_pem(
        ca: &Path,
        server_name: &str,
        identity: Option<(&Path, &Path)>,
    ) -> Result<Self, String> {
        let identity = match identity {
            Some((c, k)) => Some((certificates(c)?, private_key(k)?)),
            None => None,
        };
        Self::from_der(certificates(ca)?, server_name, identity)
    }

    pub fn from_der(
        ca: Vec<CertificateDer<'static>>,
        server_name: &str,
        identity: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
    ) -> Result<Self, String> {
        let name = ServerName::try_from(server_name.to_string())
            .map_err(|e| format!("server name {server_name:?}: {e}"))?;
        let builder = ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots(ca)?);
        let mut config = match identity {
            Some((chain, key)) => builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("client certificate and key: {e}"))?,
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = vec![super::ALPN.to_vec()];
        Ok(TlsClient {
            config: Arc::new(config),
            name,
            handshake_timeout: HANDSHAKE_TIMEOUT,
        })
    }
}
