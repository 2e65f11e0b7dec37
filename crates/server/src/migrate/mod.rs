//! Migration of an export, with its clients' state, to another Ferrite
//! (transparent state migration, RFC 8881 §11.14): `ferrite migrate`.
//!
//! Two servers that see the same files (one directory on one machine, or
//! a shared file system) and share the filehandle key (`fh.key` in the
//! state directory: the destination must honour the source's
//! filehandles) form a pair. The source ([`outgoing`]) drives the move
//! through the phases of `state::migration::phases` over the peer
//! program (`proto::migrate`) on the destination's NFS port; the
//! destination ([`service`]) checks, stages and commits. Every call is
//! authenticated with a key derived from the filehandle key
//! ([`channel`]): a server outside the pair can neither send state nor
//! fake an answer.

pub mod channel;
pub mod outgoing;
pub mod service;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use state::migration::phases::Incoming;

use crate::exports::away::Away;
use crate::instance::{Migrator, Server};

/// The context the peer key is derived under.
const KEY_CONTEXT: &str = "ferrite 2026 migration peer channel v1";
/// Peer sessions a destination keeps (the oldest goes first).
const MAX_SESSIONS: usize = 16;
/// A peer session unused this long is forgotten.
const SESSION_IDLE: Duration = Duration::from_secs(300);

/// One peer session (opened by HELLO): the last counter seen, and when.
#[derive(Debug)]
struct PeerSession {
    counter: u64,
    used: Duration,
}

/// Both sides of migrations for one server.
pub struct Peer {
    srv: Arc<Server>,
    key: [u8; 32],
    sessions: Mutex<HashMap<[u8; 16], PeerSession>>,
    /// Migrations arriving here.
    incoming: Mutex<Incoming>,
    /// What each arriving export was before (to go back to if the
    /// migration does not commit).
    before: Mutex<HashMap<u16, Option<Away>>>,
    /// Exports being moved away from here.
    outgoing: Mutex<HashSet<u16>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Lowercase hex of a migration id (kept in the `away` file).
pub fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

impl Peer {
    pub fn new(srv: Arc<Server>) -> Arc<Peer> {
        let key = srv.fh.derive(KEY_CONTEXT);
        Arc::new(Peer {
            srv,
            key,
            sessions: Mutex::new(HashMap::new()),
            incoming: Mutex::new(Incoming::default()),
            before: Mutex::new(HashMap::new()),
            outgoing: Mutex::new(HashSet::new()),
        })
    }

    fn now(&self) -> Duration {
        self.srv.clock.now()
    }
}

impl Migrator for Peer {
    fn migrate(
        self: Arc<Self>,
        export: String,
        to: String,
        location: Option<String>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, String>> + Send>> {
        Box::pin(async move {
            let r = outgoing::migrate(&self, &export, &to, location.as_deref()).await?;
            serde_json::to_string(&r).map_err(|e| e.to_string())
        })
    }
}
