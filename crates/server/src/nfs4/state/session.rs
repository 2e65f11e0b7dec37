//! Sessions (RFC 8881 §2.10): channel attributes, the fore channel's slot
//! table, the connections bound to it and its back channel.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};

use proto::nfs4::*;
use rpc::Connection;

use super::lease::Lease;
use super::slots::SlotTable;

/// The back channel of a session (RFC 8881 §2.10.3.1, §18.36).
#[derive(Debug)]
pub struct BackChannel {
    pub program: u32,
    pub sec: Vec<CallbackSecParms4>,
    pub attrs: ChannelAttrs4,
    /// Connections the client bound for callbacks, newest last.
    pub conns: Vec<Weak<Connection>>,
    /// Sequence id for the next CB_SEQUENCE on slot 0.
    pub seqid: u32,
}

impl BackChannel {
    /// A live connection to call the client back on.
    pub fn conn(&self) -> Option<Arc<Connection>> {
        self.conns
            .iter()
            .rev()
            .filter_map(Weak::upgrade)
            .find(|c| !c.is_closed())
    }
}

#[derive(Debug)]
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
    /// Held while a callback uses back-channel slot 0 (one at a time).
    pub cb_slot: tokio::sync::Mutex<()>,
    /// Its file, if it persists (CREATE_SESSION4_FLAG_PERSIST granted).
    pub persist: std::sync::OnceLock<Arc<crate::nfs4::persist::SessionFile>>,
}

impl Session {
    /// Binds `conn` to the back channel (RFC 8881 §18.34); use
    /// `State::bind_back`, which also indexes it by connection.
    pub(super) fn bind_back(&self, conn: &Arc<Connection>) {
        if let Ok(mut b) = self.back.lock() {
            b.conns
                .retain(|w| w.upgrade().is_some_and(|c| !c.is_closed()));
            if !b
                .conns
                .iter()
                .any(|w| w.upgrade().is_some_and(|c| c.id() == conn.id()))
            {
                b.conns.push(Arc::downgrade(conn));
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

    pub fn back_conn(&self) -> Option<Arc<Connection>> {
        self.back.lock().ok().and_then(|b| b.conn())
    }

    /// Forgets back-channel connections that have closed; the callback
    /// path is down once none is left (SEQ4_STATUS_CB_PATH_DOWN_SESSION).
    pub(super) fn prune_back(&self) {
        if let Ok(mut b) = self.back.lock() {
            b.conns
                .retain(|w| w.upgrade().is_some_and(|c| !c.is_closed()));
            if b.conns.is_empty() {
                self.cb_down.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Ids of the live connections of its back channel.
    pub(super) fn back_conn_ids(&self) -> Vec<u64> {
        self.back
            .lock()
            .map(|b| {
                b.conns
                    .iter()
                    .filter_map(Weak::upgrade)
                    .map(|c| c.id())
                    .collect()
            })
            .unwrap_or_default()
    }
}
