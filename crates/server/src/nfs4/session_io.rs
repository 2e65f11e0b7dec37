//! What the server keeps beside each session of the state machine
//! (RFC 8881 §2.10): the lock on its back channel's slot 0 and the file
//! of a persistent session's replies ([`SessionIo`], the state's opaque
//! [`state::Session::io`]), and the connections bound to its back channel
//! as the state sees them ([`CbConn`], a [`state::BackConn`]).

use std::any::Any;
use std::sync::{Arc, OnceLock, Weak};

use rpc::Connection;
use state::{BackConn, Session};

use crate::stable::sessions::SessionFile;

/// The server's side of a session.
#[derive(Default)]
pub struct SessionIo {
    /// Held while a callback uses back-channel slot 0 (one at a time).
    pub cb_slot: tokio::sync::Mutex<()>,
    /// Its file, if it persists (CREATE_SESSION4_FLAG_PERSIST granted).
    pub persist: OnceLock<Arc<SessionFile>>,
}

impl SessionIo {
    /// A new one, as [`state::NewSession::io`] takes it.
    pub fn boxed() -> Box<dyn Any + Send + Sync> {
        Box::new(SessionIo::default())
    }
}

/// What a session made without one has (none is: every session the
/// server creates gets a [`SessionIo`]).
static NONE: SessionIo = SessionIo {
    cb_slot: tokio::sync::Mutex::const_new(()),
    persist: OnceLock::new(),
};

/// The server's side of `s`.
pub fn io(s: &Session) -> &SessionIo {
    s.io.downcast_ref().unwrap_or(&NONE)
}

/// A connection bound to a back channel: a weak reference, so that a
/// session never keeps a closed connection alive.
/// An NFSv4.0 client's callback path is a connection the server opened
/// itself ([`CbConn::owned`]): held by it, and closed when it goes.
#[derive(Debug)]
pub struct CbConn {
    id: u64,
    conn: Weak<Connection>,
    _owned: Option<Owned>,
}

/// A connection the server opened to a client's callback address, and
/// its place under the cap on such connections.
#[derive(Debug)]
struct Owned {
    conn: Arc<Connection>,
    _permit: crate::nfs4::callback::Dialed,
}

impl Drop for Owned {
    fn drop(&mut self) {
        self.conn.close();
    }
}

impl CbConn {
    pub fn of(conn: &Arc<Connection>) -> Arc<dyn BackConn> {
        Arc::new(CbConn {
            id: conn.id(),
            conn: Arc::downgrade(conn),
            _owned: None,
        })
    }

    /// A connection the server opened to an NFSv4.0 client's callback
    /// address, held (and closed) by the back channel it is bound to.
    pub fn owned(
        conn: Arc<Connection>,
        permit: crate::nfs4::callback::Dialed,
    ) -> Arc<dyn BackConn> {
        Arc::new(CbConn {
            id: conn.id(),
            conn: Arc::downgrade(&conn),
            _owned: Some(Owned {
                conn,
                _permit: permit,
            }),
        })
    }
}

impl BackConn for CbConn {
    fn id(&self) -> u64 {
        self.id
    }

    fn is_closed(&self) -> bool {
        self.conn.upgrade().is_none_or(|c| c.is_closed())
    }
}

/// The RPC connection behind a back-channel connection the state gave.
pub fn rpc_conn(c: &Arc<dyn BackConn>) -> Option<Arc<Connection>> {
    let any: &dyn Any = &**c;
    any.downcast_ref::<CbConn>()?.conn.upgrade()
}
