//! Ferrite's NFS state machine: clients, sessions and slots, stateids,
//! opens and share reservations, byte-range locks of NFSv4 and NLM,
//! delegations of files and directories, leases, courtesy and the grace
//! period, behind a closed API (RFC 8881 §8, §9, §10, §2.10). See
//! docs/state.md.
//!
//! No I/O and no async runtime: no sockets, no file-system calls, no
//! tasks. [`State`] has one method per transition; a driver (Ferrite's
//! server crate) calls these and gets back the results and what it must
//! carry out as data: recalls and lock notifications to send, a session
//! whose back channel to probe, client records to remove from stable
//! storage ([`records::RecordQueue`]). Effects no caller asked for (a
//! delegation that ended as its client's lease ran out, a blocked NLM
//! lock granted by another owner's unlock) are handed to the driver's
//! hooks ([`State::on_delegation_ended`], [`State::on_nlm_granted`]) at
//! the end of the transition, outside the lock. Connections and per-session
//! I/O are the driver's, opaque here ([`session::BackConn`],
//! [`Session::io`]). Time comes from an injected [`clock::Clock`], so the
//! rules are unit-tested on a manual clock without a server (`tests/`).
//!
//! Partitioning: sessions are in their own map behind a read-write lock,
//! and a client's lease is renewed with an atomic store, so SEQUENCE never
//! waits for the tables' lock that OPEN, CLOSE and LOCK take. Behind that
//! lock every lookup is indexed (see `tables/`). Where things are: the
//! transitions by concern in `transitions/`, what is behind the lock in
//! `tables/`, the values they take and return in [`types`].

pub mod client;
pub mod clock;
pub mod grace;
pub mod layouts;
pub mod lease;
pub mod locks;
pub mod migration;
pub mod nlm;
pub mod records;
pub mod session;
pub mod shared;
pub mod slots;
pub mod stateid;
pub mod summary;
mod tables;
mod transitions;
pub mod types;
pub mod v40;
pub use tables::DEFAULT_COURTESY;
pub mod waiters;

#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use bytes::Bytes;
use proto::nfs4::*;

use crate::grace::Grace;
use crate::locks::{Held, LockKind};
use crate::records::RecordQueue;
use client::{exchange_decision, ExchangeDecision};
pub use client::{Client, Principal};
use clock::Clock;
use session::BackChannel;
pub use session::{BackConn, Session};
use slots::SlotTable;
pub use stateid::{next_seqid, CbSeen, DelegTimes, DirWatch};
use tables::Tables;
pub use types::*;
pub use v40::SeqStart;
pub use waiters::{LockWaiters, Waiter};

/// A session of `client` that can be called back now, if any.
fn callable_session(
    t: &Tables,
    sessions: &HashMap<SessionId4, Arc<Session>>,
    client: ClientId4,
) -> Option<Arc<Session>> {
    t.clients
        .get(&client)?
        .sessions
        .iter()
        .filter_map(|id| sessions.get(id))
        .find(|s| s.callable())
        .cloned()
}

/// All NFSv4 state of a server instance.
pub struct State {
    epoch: u32,
    lease: Duration,
    clock: Arc<dyn Clock>,
    tables: Mutex<Tables>,
    sessions: RwLock<HashMap<SessionId4, Arc<Session>>>,
    /// Sessions with a back channel on each connection, by connection id.
    back_conns: Mutex<HashMap<u64, HashSet<SessionId4>>>,
    /// Client records to remove from stable storage (RFC 8881
    /// §8.4.2.1), for the driver to take.
    records: Arc<RecordQueue>,
    /// Delegations in force (a copy of the tables' count, read without
    /// their lock: no conflict to look for when there are none).
    delegs_live: AtomicUsize,
    /// Write delegations among them (READ and GETATTR look for one only
    /// when some are).
    wdelegs_live: AtomicUsize,
    /// Called with the files of the delegations that went (returned,
    /// revoked, freed with their client) in a transition: the driver ends
    /// its guard against local writers, and wakes requests waiting for a
    /// recall to look again.
    deleg_ended: std::sync::OnceLock<DelegEnded>,
    /// Called with the blocked NLM requests the server granted (their
    /// hosts must be told, `crate::nlm`).
    nlm_granted: std::sync::OnceLock<NlmGranted>,
    /// A share reservation with a deny mode was granted (set once).
    deny_seen: AtomicBool,
    /// Layouts held (a copy of the tables' count, read without their
    /// lock).
    layouts_live: AtomicUsize,
    /// Called with the layouts that ended without being returned: the
    /// driver fences them.
    layouts_lost: std::sync::OnceLock<LayoutsLost>,
    /// Clients to tell SEQ4_STATUS_LEASE_MOVED (a copy of the tables'
    /// count, read without their lock by every SEQUENCE).
    moved_live: AtomicUsize,
    /// What [`State::poll_shared`] has to look at (a copy of the tables'
    /// count).
    shared_live: AtomicUsize,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "State(epoch {})", self.epoch)
    }
}

impl State {
    /// `epoch` distinguishes this server instance's client ids, session
    /// ids and stateids from an earlier one's.
    pub fn new(epoch: u32, lease: Duration, clock: Arc<dyn Clock>) -> State {
        let records = Arc::new(RecordQueue::new(false));
        Self::recovering(epoch, lease, clock, records, HashSet::new(), lease)
    }

    /// A state that notes purged clients' records in `records`, in a grace period of
    /// `grace` for the clients of `previous` (recorded before a restart;
    /// none if empty).
    pub fn recovering(
        epoch: u32,
        lease: Duration,
        clock: Arc<dyn Clock>,
        records: Arc<RecordQueue>,
        previous: HashSet<Bytes>,
        grace: Duration,
    ) -> State {
        let mut tables = Tables::new(epoch, lease);
        tables.grace = Grace::start(previous, clock.now(), grace, lease);
        State {
            epoch,
            lease,
            clock,
            tables: Mutex::new(tables),
            sessions: RwLock::new(HashMap::new()),
            back_conns: Mutex::new(HashMap::new()),
            records,
            delegs_live: AtomicUsize::new(0),
            wdelegs_live: AtomicUsize::new(0),
            deleg_ended: std::sync::OnceLock::new(),
            nlm_granted: std::sync::OnceLock::new(),
            deny_seen: AtomicBool::new(false),
            layouts_live: AtomicUsize::new(0),
            layouts_lost: std::sync::OnceLock::new(),
            moved_live: AtomicUsize::new(0),
            shared_live: AtomicUsize::new(0),
        }
    }

    /// Sets what to call with the files of the delegations that go (once).
    pub fn on_delegation_ended(&self, f: DelegEnded) {
        let _ = self.deleg_ended.set(f);
    }

    /// Holds at most `n` delegations at once (none if 0).
    pub fn with_max_delegations(self, n: usize) -> State {
        self.tables().max_delegs = n;
        self
    }

    /// Keeps the state of a client whose lease ran out for `d` more while
    /// nobody conflicts with it ([`DEFAULT_COURTESY`]).
    pub fn with_courtesy(self, d: Duration) -> State {
        self.tables().courtesy = d;
        self
    }

    /// Holds at most `n` client records: EXCHANGE_ID for a new client
    /// beyond them, once expired clients are reaped, is NFS4ERR_DELAY.
    pub fn with_max_clients(self, n: usize) -> State {
        self.tables().max_clients = n.max(1);
        self
    }

    /// The client records to remove from stable storage.
    pub fn records(&self) -> &RecordQueue {
        &self.records
    }

    /// Whether the server is in its grace period (RFC 8881 §8.4.2.1).
    pub fn in_grace(&self) -> bool {
        self.tables().grace.active()
    }

    /// Whether the grace period may end now (every recorded client has
    /// reclaimed, or its time is up): the caller removes the earlier
    /// instances' records, then calls [`State::end_grace`].
    pub fn grace_due(&self) -> bool {
        let now = self.clock.now();
        self.tables().grace.due(now)
    }

    pub fn end_grace(&self) {
        self.tables().grace.end();
    }

    /// Whether `client` may take state now, by reclaim or new
    /// ([`Tables::may_take_state`]).
    pub fn may_take_state(&self, client: ClientId4, reclaim: bool) -> Result<(), NfsStat4> {
        let now = self.clock.now();
        self.tables().may_take_state(client, reclaim, now)
    }

    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// The tables. A poisoned lock means a bug panicked while holding
    /// it; every transition leaves them consistent before it can panic,
    /// so go on.
    pub(crate) fn tables(&self) -> MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs a transition on the tables, then drops the sessions of any
    /// client it purged.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut Tables, Duration) -> R) -> R {
        let now = self.clock.now();
        let mut t = self.tables();
        t.now = now;
        let r = f(&mut t, now);
        // Kept delegations count: a conflict must forget them.
        self.delegs_live
            .store(t.delegs + t.prev_count, Ordering::Relaxed);
        // Kept ones too: a read must forget kept write delegations.
        self.wdelegs_live
            .store(t.wdelegs + t.prev_count, Ordering::Relaxed);
        self.layouts_live.store(t.layouts, Ordering::Relaxed);
        self.moved_live
            .store(t.lease_moved.len(), Ordering::Relaxed);
        self.shared_live
            .store(t.shared_pending(), Ordering::Relaxed);
        let lost = std::mem::take(&mut t.layouts_lost);
        let ended = std::mem::take(&mut t.delegs_ended);
        let granted = std::mem::take(&mut t.nlm_granted);
        if !t.dead_records.is_empty() {
            self.records.dead(std::mem::take(&mut t.dead_records));
        }
        let dead = std::mem::take(&mut t.dead_sessions);
        drop(t);
        if !dead.is_empty() {
            self.remove_sessions(&dead);
        }
        if !granted.is_empty() {
            match self.nlm_granted.get() {
                Some(hook) => hook(granted),
                None => tracing::warn!("NLM requests granted with no lock manager to tell"),
            }
        }
        if !ended.is_empty() {
            if let Some(hook) = self.deleg_ended.get() {
                hook(&ended);
            }
        }
        if !lost.is_empty() {
            match self.layouts_lost.get() {
                Some(hook) => hook(lost),
                None => tracing::warn!("layouts lost with no driver to fence them"),
            }
        }
        r
    }

    /// Holds the tables' lock (tests of what does not wait for it).
    #[cfg(test)]
    pub(crate) fn lock_tables(&self) -> MutexGuard<'_, Tables> {
        self.tables()
    }
}
