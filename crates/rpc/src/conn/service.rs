//! What serves the calls a connection receives: the [`Service`] and the
//! [`Call`] handed to it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use xdr::Decoder;

use super::connection::Connection;
use super::message::{Auth, Reply};

/// A call received from the peer, with its arguments not yet decoded.
pub struct Call {
    pub xid: u32,
    pub prog: u32,
    pub vers: u32,
    pub proc_: u32,
    pub auth: Auth,
    pub args: Decoder,
    pub conn: Arc<Connection>,
}

pub type ReplyFuture = Pin<Box<dyn Future<Output = Reply> + Send + 'static>>;

/// A program (or several) served on a connection.
pub trait Service: Send + Sync + 'static {
    fn call(&self, call: Call) -> ReplyFuture;
    /// The connection has closed.
    fn disconnected(&self, _conn: &Arc<Connection>) {}
    /// The RPCSEC_GSS gate of calls to this service, if it takes them.
    fn gss(&self) -> Option<Arc<crate::gss::Gate>> {
        None
    }
    /// The TLS settings with which it answers AUTH_TLS probes (RFC 9289),
    /// if it offers TLS.
    fn tls(&self) -> Option<Arc<crate::tls::TlsServer>> {
        None
    }
}
