//! Sessions (RFC 8881 §2.10): channel attributes, the fore channel's slot
//! table, the connections bound to it and its back channel.

use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use proto::nfs4::*;

use super::lease::Lease;
use super::slots::SlotTable;

/// A connection a client bound for callbacks, as the state sees it: the
/// driver's handle (Ferrite's server wraps a weak reference to its RPC
/// connection; the state never sends on it). `Any` lets the driver get its
/// own type back.
pub trait BackConn: Any + Send + Sync + std::fmt::Debug {
    /// The connection's id, unique among the driver's connections.
    fn id(&self) -> u64;
    /// Whether it has closed (a closed one is never called back on).
    fn is_closed(&self) -> bool;
}

/// The back channel of a session (RFC 8881 §2.10.3.1, §18.36).
#[derive(Debug)]
pub struct BackChannel {
    pub program: u32,
    pub sec: Vec<CallbackSecParms4>,
    pub attrs: ChannelAttrs4,
    /// Connections the client bound for callbacks, newest last.
    pub conns: Vec<Arc<dyn BackConn>>,
    /// Sequence id for the next CB_SEQUENCE on slot 0.
    pub seqid: u32,
    /// NFSv4.0: the `callback_ident` every CB_COMPOUND carries (RFC 7530
    /// §16.33.1); 0 for NFSv4.1, whose sessions name the client.
    pub ident: u32,
}

impl BackChannel {
    /// A live connection to call the client back on.
    pub fn conn(&self) -> Option<Arc<dyn BackConn>> {
        self.conns.iter().rev().find(|c| !c.is_closed()).cloned()
    }
}

pub struct Session {
    pub id: SessionId4,
    pub client: ClientId4,
    pub fore: ChannelAttrs4,
    pub flags: u32,
    pub slots: Mutex<SlotTable>,
    pub back: Mutex<BackChannel>,
    /// Its client's lease, renewed by each SEQUENCE (RFC 8881 §8.3).
    pub lease: Arc<Lease>,
    /// The back channel failed its probe or a callback (SEQ4_STATUS_CB_PATH_DOWN).
    pub cb_down: AtomicBool,
    /// The minor version the session was created with.
    pub minorversion: AtomicU32,
    /// Its client has sent owners as names (RFC 8881 §5.9): it gets
    /// names back where the server is configured with a domain.
    pub owner_names: AtomicBool,
    /// What the driver keeps beside the session, opaque here (Ferrite's
    /// server: the lock on back-channel slot 0, the file of a persistent
    /// session's replies).
    pub io: Box<dyn Any + Send + Sync>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("client", &self.client)
            .field("flags", &self.flags)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Binds `conn` to the back channel (RFC 8881 §18.34); use
    /// `State::bind_back`, which also indexes it by connection.
    pub(crate) fn bind_back(&self, conn: &Arc<dyn BackConn>) {
        if let Ok(mut b) = self.back.lock() {
            b.conns.retain(|c| !c.is_closed());
            if !b.conns.iter().any(|c| c.id() == conn.id()) {
                b.conns.push(conn.clone());
            }
        }
        self.cb_down.store(false, Ordering::Relaxed);
    }

    /// Whether the client can be called back now: its back channel has a
    /// live connection and has not failed (a delegation is only as good as
    /// its recall).
    pub fn callable(&self) -> bool {
        !self.cb_down.load(Ordering::Relaxed) && self.back_conn().is_some()
    }

    pub fn back_conn(&self) -> Option<Arc<dyn BackConn>> {
        self.back.lock().ok().and_then(|b| b.conn())
    }

    /// Forgets back-channel connections that have closed; the callback
    /// path is down once none is left (SEQ4_STATUS_CB_PATH_DOWN_SESSION).
    pub(crate) fn prune_back(&self) {
        if let Ok(mut b) = self.back.lock() {
            b.conns.retain(|c| !c.is_closed());
            if b.conns.is_empty() {
                self.cb_down.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Ids of the live connections of its back channel.
    pub(crate) fn back_conn_ids(&self) -> Vec<u64> {
        self.back
            .lock()
            .map(|b| b.conns.iter().map(|c| c.id()).collect())
            .unwrap_or_default()
    }
}
