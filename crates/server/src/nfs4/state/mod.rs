//! NFSv4 state: clients, sessions, opens and byte-range locks, behind a
//! closed API (RFC 8881 §8, §9, §2.10). See docs/state.md.
//!
//! [`State`] has one method per transition; operations call these and
//! nothing else, and get back what they must carry out (a session whose
//! back channel to probe, lock waiters to notify) as data. Time comes from
//! an injected [`clock::Clock`], so the rules are unit-tested on a manual
//! clock without sockets (`tests.rs`).
//!
//! Partitioning: sessions are in their own map behind a read-write lock,
//! and a client's lease is renewed with an atomic store, so SEQUENCE never
//! waits for the tables' lock that OPEN, CLOSE and LOCK take. Behind that
//! lock every lookup is indexed (see `tables.rs`).

pub mod client;
pub mod clock;
pub mod lease;
pub mod nlm;
pub mod session;
pub mod slots;
pub mod stateid;
pub mod summary;
mod tables;
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
use rpc::Connection;

use crate::locks::{Held, LockKind};
use crate::nfs4::recovery::{Grace, Records};
use client::{exchange_decision, ExchangeDecision};
pub use client::{Client, Principal};
use clock::Clock;
use session::BackChannel;
pub use session::Session;
use slots::{CacheMemory, SlotTable};
pub use stateid::{next_seqid, CbSeen, DirWatch};
use tables::Tables;
pub use waiters::{LockWaiters, Waiter};

/// EXCHANGE_IDs refused for a full client table, logged at most this often.
static FULL_LOG: rpc::RateLimit = rpc::RateLimit::per_secs(10);

/// An object that state attaches to: export id and backend handle.
pub type FileKey = (u16, vfs::Handle);

/// A lock owner on the server: its client and its opaque name.
pub type OwnerKey = (ClientId4, Bytes);

/// A CB_NOTIFY_LOCK to send (RFC 8881 §20.11): the waiter's lock owner,
/// and a session of its client to call back on.
#[derive(Debug, Clone)]
pub struct LockNotify {
    pub session: Arc<Session>,
    pub owner: LockOwner4,
    /// The file as the waiter named it in its LOCK.
    pub fh: NfsFh4,
}

/// A CB_RECALL to send (RFC 8881 §20.2): the delegation, its file as the
/// client knows it, and a session of its client to call back on.
#[derive(Debug, Clone)]
pub struct DelegRecall {
    pub session: Arc<Session>,
    pub stateid: StateId4,
    pub fh: NfsFh4,
}

/// A directory delegation's CB_NOTIFY sender to start: a session of its
/// holder and the delegation's stateid `other`.
pub type DirSender = (Arc<Session>, [u8; 12]);

/// A write delegation in force, for CB_GETATTR
/// ([`State::write_delegation`]).
#[derive(Debug, Clone)]
pub struct WriteDeleg {
    pub holder: ClientId4,
    pub session: Option<Arc<Session>>,
    pub stateid: StateId4,
    pub fh: NfsFh4,
    pub seen: Option<CbSeen>,
}

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

/// Who makes a change that may conflict with delegations (RFC 8881
/// §10.4.6; `nfs4::deleg` says who conflicts with whom).
#[derive(Debug, Clone)]
pub enum Breaker {
    /// Conflicts with every delegation of the file.
    Anyone,
    /// An OPEN by this client and open owner: its own delegations, read or
    /// write, do not conflict.
    Opener(OwnerKey),
    /// I/O by this client under this stateid: the write delegation of the
    /// stateid's open owner does not conflict (its holder writes through).
    Io(ClientId4, StateId4),
}

/// Called with the file of a delegation that went.
pub type DelegEnded = Box<dyn Fn(&FileKey) + Send + Sync>;

/// What a change to a file found of other clients' delegations.
#[derive(Debug, Default)]
pub struct Breaking {
    /// Recalls to send now (each delegation is recalled once).
    pub recalls: Vec<DelegRecall>,
    /// Conflicting delegations remain: the change waits for their return.
    pub pending: bool,
}

/// What a lock request ran into.
#[derive(Debug)]
pub enum LockError {
    Status(NfsStat4),
    Denied(Held<OwnerKey>),
}

impl From<NfsStat4> for LockError {
    fn from(s: NfsStat4) -> Self {
        LockError::Status(s)
    }
}

/// A LOCK request (RFC 8881 §18.10.1).
#[derive(Debug, Clone)]
pub struct LockRequest {
    pub client: ClientId4,
    /// The lock owner of `open_to_lock_owner4`; `None` when an existing
    /// lock stateid was presented.
    pub new_owner: Option<Bytes>,
    /// The open stateid (new lock owner) or lock stateid presented.
    pub presented: StateId4,
    pub file: FileKey,
    /// The range `[start, end)`.
    pub start: u64,
    pub end: u64,
    pub kind: LockKind,
    /// READW_LT or WRITEW_LT: queue the owner if denied (§9.6).
    pub blocking: bool,
    pub reclaim: bool,
    /// The file's filehandle as the client sent it (for CB_NOTIFY_LOCK).
    pub fh: Bytes,
}

/// What EXCHANGE_ID grants (RFC 8881 §18.35.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExchangeIdOk {
    pub clientid: ClientId4,
    pub sequenceid: u32,
    pub confirmed: bool,
}

/// A CREATE_SESSION request, its channel attributes already negotiated
/// (RFC 8881 §18.36).
pub struct NewSession {
    pub clientid: ClientId4,
    pub sequence: u32,
    pub principal: Principal,
    pub flags: u32,
    pub fore: ChannelAttrs4,
    pub back: ChannelAttrs4,
    pub cb_program: u32,
    pub sec_parms: Vec<CallbackSecParms4>,
    pub minorversion: u32,
    /// The connection it arrived on (bound to the back channel when
    /// CREATE_SESSION4_FLAG_CONN_BACK_CHAN is granted).
    pub conn: Option<Arc<Connection>>,
    pub drc: Arc<CacheMemory>,
}

/// What CREATE_SESSION did: its reply and, when a back channel was
/// bound, the session whose back channel the caller should probe.
pub struct SessionCreated {
    pub resok: CreateSession4ResOk,
    pub probe: Option<Arc<Session>>,
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
    /// Client records on stable storage (RFC 8881 §8.4.2.1).
    records: Records,
    /// Delegations in force (a copy of the tables' count, read without
    /// their lock: no conflict to look for when there are none).
    delegs_live: AtomicUsize,
    /// Write delegations among them (READ and GETATTR look for one only
    /// when some are).
    wdelegs_live: AtomicUsize,
    /// Woken when delegations go (returned, revoked, freed with their
    /// client): requests waiting for a recall look again.
    deleg_gone: tokio::sync::Notify,
    /// Called with the file of each delegation that goes, before those
    /// requests wake (the server ends its guard against local writers).
    deleg_ended: std::sync::OnceLock<DelegEnded>,
    /// Called with the blocked NLM requests the server granted (their
    /// hosts must be told, `crate::nlm`).
    nlm_granted: std::sync::OnceLock<NlmGranted>,
    /// A share reservation with a deny mode was granted (set once).
    deny_seen: AtomicBool,
}

/// Called with blocked NLM requests just granted.
pub type NlmGranted = Box<dyn Fn(Vec<nlm::NlmGrant>) + Send + Sync>;

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "State(epoch {})", self.epoch)
    }
}

impl State {
    /// `epoch` distinguishes this server instance's client ids, session
    /// ids and stateids from an earlier one's.
    pub fn new(epoch: u32, lease: Duration, clock: Arc<dyn Clock>) -> State {
        Self::recovering(epoch, lease, clock, Records::none(), HashSet::new(), lease)
    }

    /// A state whose client records are `records`, in a grace period of
    /// `grace` for the clients of `previous` (recorded before a restart;
    /// none if empty).
    pub fn recovering(
        epoch: u32,
        lease: Duration,
        clock: Arc<dyn Clock>,
        records: Records,
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
            deleg_gone: tokio::sync::Notify::new(),
            deleg_ended: std::sync::OnceLock::new(),
            nlm_granted: std::sync::OnceLock::new(),
            deny_seen: AtomicBool::new(false),
        }
    }

    /// Sets what to call with the file of each delegation that goes (once).
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

    /// The client records on stable storage.
    pub fn records(&self) -> &Records {
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
    fn tables(&self) -> MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs a transition on the tables, then drops the sessions of any
    /// client it purged.
    fn with<R>(&self, f: impl FnOnce(&mut Tables, Duration) -> R) -> R {
        let now = self.clock.now();
        let mut t = self.tables();
        let r = f(&mut t, now);
        // Kept delegations count: a conflict must forget them.
        self.delegs_live
            .store(t.delegs + t.prev_count, Ordering::Relaxed);
        // Kept ones too: a read must forget kept write delegations.
        self.wdelegs_live
            .store(t.wdelegs + t.prev_count, Ordering::Relaxed);
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
                for file in &ended {
                    hook(file);
                }
            }
            self.deleg_gone.notify_waiters();
        }
        r
    }

    fn remove_sessions(&self, ids: &[SessionId4]) {
        let removed: Vec<Arc<Session>> = {
            let mut s = self.sessions.write().unwrap_or_else(|p| p.into_inner());
            ids.iter().filter_map(|id| s.remove(id)).collect()
        };
        let mut bc = self.back_conns.lock().unwrap_or_else(|p| p.into_inner());
        for s in removed {
            for conn in s.back_conn_ids() {
                if let Some(set) = bc.get_mut(&conn) {
                    set.remove(&s.id);
                    if set.is_empty() {
                        bc.remove(&conn);
                    }
                }
            }
        }
    }

    /// EXCHANGE_ID (RFC 8881 §18.35): the case analysis of §18.35.4 on the
    /// owner's records, found by owner.
    pub fn exchange_id(
        &self,
        owner: &ClientOwner4,
        principal: Principal,
        update: bool,
    ) -> Result<ExchangeIdOk, NfsStat4> {
        self.with(|t, now| {
            let rec = t.owners.get(&owner.ownerid).copied().unwrap_or_default();
            let confirmed = rec.confirmed.and_then(|id| t.clients.get(&id));
            let unconfirmed = rec.unconfirmed.and_then(|id| t.clients.get(&id));
            let decision =
                exchange_decision(update, &owner.verifier, &principal, confirmed, unconfirmed);
            let id = match decision {
                ExchangeDecision::Err(e) => return Err(e),
                ExchangeDecision::Existing(id) => id,
                ExchangeDecision::New { remove } => {
                    for r in remove {
                        t.purge_client(r);
                    }
                    // Bounded whatever clients send: past the cap, the
                    // expired go first, then newcomers wait.
                    if t.clients.len() >= t.max_clients {
                        t.reap(now);
                    }
                    while t.clients.len() >= t.max_clients && t.reap_courtesy(now) {}
                    if t.clients.len() >= t.max_clients {
                        if let Some(n) = FULL_LOG.allow() {
                            tracing::warn!(
                                clients = t.clients.len(),
                                "client table full: EXCHANGE_ID answered NFS4ERR_DELAY ({n} more not logged)"
                            );
                        }
                        return Err(NfsStat4::Nfs4errDelay);
                    }
                    t.add_client(owner, principal, now)
                }
            };
            // A recorded client coming back is reclaiming (RFC 8881
            // §8.4.2.1): the grace period waits for it.
            t.grace.returned(&owner.ownerid, now);
            let c = t.clients.get_mut(&id).ok_or(NfsStat4::Nfs4errServerfault)?;
            c.lease.renew(now);
            Ok(ExchangeIdOk {
                clientid: id,
                sequenceid: c.cs_seq.wrapping_add(1),
                confirmed: c.confirmed,
            })
        })
    }

    /// CREATE_SESSION (RFC 8881 §18.36): the client's sequence and its
    /// one-entry reply cache (§18.36.4), confirmation of the record
    /// (replacing an earlier confirmed record of the owner, §18.35.4 case
    /// 5), the new session.
    pub fn create_session(&self, req: NewSession) -> Result<SessionCreated, NfsStat4> {
        let created = self.with(|t, now| {
            let id = req.clientid;
            let c = t.clients.get(&id).ok_or(NfsStat4::Nfs4errStaleClientid)?;
            if !c.confirmed && c.expired(now, self.lease) {
                t.purge_client(id);
                return Err(NfsStat4::Nfs4errStaleClientid);
            }
            if req.sequence == c.cs_seq {
                return match &c.cs_reply {
                    Some(r) => Ok(SessionCreated {
                        resok: *r,
                        probe: None,
                    }),
                    None => Err(NfsStat4::Nfs4errSeqMisordered),
                };
            }
            if req.sequence != c.cs_seq.wrapping_add(1) {
                return Err(NfsStat4::Nfs4errSeqMisordered);
            }
            if !c.confirmed && c.principal != req.principal {
                return Err(NfsStat4::Nfs4errClidInuse);
            }
            let lease = c.lease.clone();
            if !c.confirmed {
                let old = t.owners.get(&c.owner).and_then(|r| r.confirmed);
                if let Some(old) = old.filter(|o| *o != id) {
                    // The client restarted: its delegations are kept for
                    // it to reclaim (RFC 8881 §10.2.1).
                    t.keep_prev_delegs(old, now);
                    t.purge_client(old);
                }
                t.confirm(id);
            }
            let sid = t.new_sessionid(id);
            let session = Arc::new(Session {
                id: sid,
                client: id,
                fore: req.fore,
                flags: req.flags,
                slots: Mutex::new(SlotTable::new(req.fore.maxrequests, req.drc.clone())),
                back: Mutex::new(BackChannel {
                    program: req.cb_program,
                    sec: req.sec_parms.clone(),
                    attrs: req.back,
                    conns: Vec::new(),
                    seqid: 1,
                }),
                lease,
                cb_down: AtomicBool::new(false),
                minorversion: AtomicU32::new(req.minorversion),
                cb_slot: Default::default(),
                persist: Default::default(),
            });
            let resok = CreateSession4ResOk {
                sessionid: sid,
                sequence: req.sequence,
                flags: req.flags,
                fore_chan_attrs: req.fore,
                back_chan_attrs: req.back,
            };
            let c = t.clients.get_mut(&id).ok_or(NfsStat4::Nfs4errServerfault)?;
            c.cs_seq = req.sequence;
            c.cs_reply = Some(resok);
            c.lease.renew(now);
            c.sessions.insert(sid);
            self.sessions
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .insert(sid, session.clone());
            Ok(SessionCreated {
                resok,
                probe: Some(session),
            })
        })?;
        let Some(session) = created.probe else {
            return Ok(created);
        };
        let back = req.flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN != 0;
        if let Some(conn) = req.conn.as_ref().filter(|_| back) {
            self.bind_back(&session, conn);
        }
        Ok(SessionCreated {
            resok: created.resok,
            probe: back.then_some(session),
        })
    }

    /// The session SEQUENCE names, its client's lease renewed (RFC 8881
    /// §18.46.3, §8.3). Takes no lock but the session map's read lock.
    pub fn sequence(&self, id: &SessionId4) -> Result<Arc<Session>, NfsStat4> {
        let s = self.session(id).ok_or(NfsStat4::Nfs4errBadsession)?;
        self.renew(&s);
        Ok(s)
    }

    /// Renews the lease of `session`'s client (RFC 8881 §8.3): for a
    /// SEQUENCE that succeeded, never one that failed (§18.46.3).
    pub fn renew(&self, session: &Session) {
        session.lease.renew(self.clock.now());
    }

    pub fn session(&self, id: &SessionId4) -> Option<Arc<Session>> {
        self.sessions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
    }

    /// Binds `conn` to `session`'s back channel (RFC 8881 §18.34).
    pub fn bind_back(&self, session: &Arc<Session>, conn: &Arc<Connection>) {
        session.bind_back(conn);
        self.back_conns
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(conn.id())
            .or_default()
            .insert(session.id);
    }

    /// A connection closed: the sessions whose back channel it carried
    /// forget it, and their callback path is down if it was the last.
    pub fn disconnected(&self, conn: u64) {
        let Some(ids) = self
            .back_conns
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&conn)
        else {
            return;
        };
        for id in ids {
            if let Some(s) = self.session(&id) {
                s.prune_back();
            }
        }
    }

    /// DESTROY_SESSION (RFC 8881 §18.37).
    pub fn destroy_session(&self, id: &SessionId4) -> Result<(), NfsStat4> {
        let client = self.session(id).ok_or(NfsStat4::Nfs4errBadsession)?.client;
        self.with(|t, _| {
            if let Some(c) = t.clients.get_mut(&client) {
                c.sessions.remove(id);
            }
            t.dead_sessions.push(*id);
        });
        Ok(())
    }

    /// DESTROY_CLIENTID (RFC 8881 §18.50).
    pub fn destroy_clientid(&self, id: ClientId4) -> Result<(), NfsStat4> {
        self.with(|t, _| {
            let c = t.clients.get(&id).ok_or(NfsStat4::Nfs4errStaleClientid)?;
            if !c.sessions.is_empty() {
                return Err(NfsStat4::Nfs4errClientidBusy);
            }
            t.purge_client(id);
            Ok(())
        })
    }

    /// The owner of `client`, which may send RECLAIM_COMPLETE (RFC 8881
    /// §18.51): its record goes to stable storage before
    /// [`State::reclaim_complete`].
    pub fn reclaim_owner(&self, client: ClientId4) -> Result<Bytes, NfsStat4> {
        self.tables().reclaiming_owner(client)
    }

    /// RECLAIM_COMPLETE (RFC 8881 §18.51) for the whole client, its record
    /// on stable storage: it may take new state once the grace period is
    /// over, and reclaims no more.
    pub fn reclaim_complete(&self, client: ClientId4) -> Result<(), NfsStat4> {
        self.with(|t, now| {
            let owner = t.reclaiming_owner(client)?;
            if let Some(c) = t.clients.get_mut(&client) {
                c.reclaim_complete = true;
            }
            t.grace.reclaimed(&owner, now);
            Ok(())
        })
    }

    /// OPEN's share reservation (RFC 8881 §9.7, §18.16): the open
    /// stateid, new or upgraded.
    pub fn open(
        &self,
        client: ClientId4,
        owner: &Bytes,
        file: &FileKey,
        access: u32,
        deny: u32,
    ) -> Result<StateId4, NfsStat4> {
        if deny != 0 {
            self.deny_seen.store(true, Ordering::Relaxed);
        }
        self.with(|t, now| t.open(client, owner, file, access, deny, now))
    }

    /// OPEN_DOWNGRADE (RFC 8881 §18.18).
    pub fn downgrade(
        &self,
        client: ClientId4,
        sid: &StateId4,
        file: &FileKey,
        access: u32,
        deny: u32,
    ) -> Result<StateId4, NfsStat4> {
        self.with(|t, _| t.downgrade(client, sid, file, access, deny))
    }

    /// CLOSE (RFC 8881 §18.2).
    pub fn close(&self, client: ClientId4, sid: &StateId4, file: &FileKey) -> Result<(), NfsStat4> {
        self.with(|t, _| t.close(client, sid, file))
    }

    /// LOCK (RFC 8881 §18.10): grace and reclaim rules, the open's mode,
    /// waiters ahead, conflicts (a courtesy client's locks yield).
    pub fn lock(&self, req: &LockRequest) -> Result<StateId4, LockError> {
        match self.with(|t, now| t.lock(req, now)) {
            // Two clients reclaiming conflicting locks: one of them is
            // wrong, the server cannot tell which (RFC 8881 §15.1.9.5).
            Err(LockError::Denied(_)) if req.reclaim => {
                Err(NfsStat4::Nfs4errReclaimConflict.into())
            }
            r => r,
        }
    }

    /// LOCKU (RFC 8881 §18.12): the new lock stateid and the
    /// CB_NOTIFY_LOCKs to send (§20.11), each waiter told once until it
    /// asks again.
    pub fn unlock(
        &self,
        client: ClientId4,
        sid: &StateId4,
        file: &FileKey,
        start: u64,
        end: u64,
    ) -> Result<(StateId4, Vec<LockNotify>), NfsStat4> {
        self.with(|t, now| {
            let (sid, ready) = t.unlock(client, sid, file, start, end, now)?;
            Ok((sid, self.lock_notes(t, file, ready)))
        })
    }

    /// The CB_NOTIFY_LOCKs for NFSv4 waiters an unlock made grantable:
    /// a session of each waiter's client to call back on, and the file as
    /// the waiter named it.
    fn lock_notes(
        &self,
        t: &Tables,
        file: &FileKey,
        ready: Vec<Waiter<OwnerKey>>,
    ) -> Vec<LockNotify> {
        if ready.is_empty() {
            return Vec::new();
        }
        let sessions = self.sessions.read().unwrap_or_else(|p| p.into_inner());
        ready
            .into_iter()
            .filter_map(|w| {
                let c = t.clients.get(&w.owner.0)?;
                let fh = c.waiting_on.get(file)?.clone();
                let session = c
                    .sessions
                    .iter()
                    .filter_map(|id| sessions.get(id))
                    .find(|s| !s.cb_down.load(Ordering::Relaxed))?
                    .clone();
                Some(LockNotify {
                    session,
                    owner: LockOwner4 {
                        clientid: w.owner.0,
                        owner: w.owner.1,
                    },
                    fh: NfsFh4(fh),
                })
            })
            .collect()
    }

    /// LOCKT (RFC 8881 §18.11): the lock in the way, if any.
    pub fn test_lock(
        &self,
        owner: &OwnerKey,
        file: &FileKey,
        start: u64,
        end: u64,
        kind: LockKind,
    ) -> Option<Held<OwnerKey>> {
        self.with(|t, now| t.test_lock(owner, file, (start, end), kind, now))
    }

    /// Checks the stateid of an I/O operation (READ, WRITE, SETATTR of the
    /// size, ALLOCATE, ...) on `file` by `client` (RFC 8881 §8.2.3, §9.1.2):
    /// `access` is OPEN4_SHARE_ACCESS_READ or _WRITE. The anonymous stateid
    /// (and the bypass stateid for writes) is subject to share reservations
    /// (NFS4ERR_LOCKED); an open or lock stateid must belong to the client
    /// and, for writing, to an open with write access (NFS4ERR_OPENMODE).
    /// Returns true when a special stateid was used (the file was then not
    /// checked to be a regular file by an OPEN).
    pub fn check_io(
        &self,
        client: ClientId4,
        sid: &StateId4,
        file: &FileKey,
        access: u32,
    ) -> Result<bool, NfsStat4> {
        self.tables().check_io(client, sid, file, access)
    }

    /// Grants `client` (OPEN by its open owner `owner`) a read delegation
    /// of `file` (RFC 8881 §10.2), `fh`
    /// being the file's filehandle as the client has it; else why not.
    pub fn offer_delegation(
        &self,
        asker: &OwnerKey,
        file: &FileKey,
        fh: Bytes,
        write: bool,
        reclaim: bool,
    ) -> Result<StateId4, WhyNoDelegation4> {
        let (client, owner) = asker;
        self.with(|t, now| t.grant_deleg(*client, owner, file, fh, write, reclaim, now))
    }

    /// Whether a delegation of `file` is kept for `client` from before its
    /// restart ([`Tables::find_prev_deleg`]'s errors if not).
    pub fn has_prev_delegation(&self, client: ClientId4, file: &FileKey) -> Result<(), NfsStat4> {
        let now = self.clock.now();
        self.tables().find_prev_deleg(client, file, now).map(|_| ())
    }

    /// The delegation of `file` kept for `client` from before its restart
    /// ([`Tables::take_prev_deleg`]): whether it was a write delegation.
    pub fn take_prev_delegation(
        &self,
        client: ClientId4,
        file: &FileKey,
    ) -> Result<bool, NfsStat4> {
        self.with(|t, now| t.take_prev_deleg(client, file, now))
    }

    /// DELEGPURGE (RFC 8881 §18.5): forgets the delegations kept for
    /// `client` from before its restart.
    pub fn purge_prev_delegations(&self, client: ClientId4) -> Result<(), NfsStat4> {
        self.with(|t, _| t.purge_prev(client))
    }

    /// Why [`State::offer_delegation`] would refuse now, if it would.
    pub fn delegation_refusal(
        &self,
        asker: &OwnerKey,
        file: &FileKey,
        write: bool,
        reclaim: bool,
    ) -> Option<WhyNoDelegation4> {
        let now = self.clock.now();
        self.tables()
            .deleg_refusal(asker, file, write, reclaim, now)
    }

    /// Whether any write delegation is in force.
    pub fn write_delegations_outstanding(&self) -> bool {
        self.wdelegs_live.load(Ordering::Relaxed) > 0
    }

    /// The write delegation of `file`, if one is in force: a session of
    /// its holder to send CB_GETATTR on (none if it cannot be called
    /// back), its stateid, the file's filehandle as the holder knows it
    /// and what the last CB_GETATTR learnt (RFC 8881 §10.4.3).
    pub fn write_delegation(&self, file: &FileKey) -> Option<WriteDeleg> {
        if !self.write_delegations_outstanding() {
            return None;
        }
        let t = self.tables();
        let (cid, stateid, fh, seen) = t.write_deleg(file)?;
        let sessions = self.sessions.read().unwrap_or_else(|p| p.into_inner());
        Some(WriteDeleg {
            holder: cid,
            session: callable_session(&t, &sessions, cid),
            stateid,
            fh: NfsFh4(fh),
            seen,
        })
    }

    /// Starts a CB_GETATTR for the write delegation `stateid`
    /// ([`Tables::begin_cb_getattr`]): false if one is under way or it is
    /// being recalled.
    pub fn begin_cb_getattr(&self, stateid: &StateId4) -> bool {
        self.tables().begin_cb_getattr(&stateid.other)
    }

    /// The CB_GETATTR for `stateid` is over.
    pub fn end_cb_getattr(&self, stateid: &StateId4) {
        self.tables().end_cb_getattr(&stateid.other);
    }

    /// Records what a CB_GETATTR learnt of a write delegation's file.
    pub fn set_cb_seen(&self, stateid: &StateId4, seen: CbSeen) {
        self.tables().set_cb_seen(&stateid.other, seen);
    }

    /// Whether any delegation is in force (no conflict to look for if not).
    pub fn delegations_outstanding(&self) -> bool {
        self.delegs_live.load(Ordering::Relaxed) > 0
    }

    /// Woken when delegations go; register (`enable`) before
    /// [`State::break_delegations`] so that none is missed.
    pub fn deleg_gone(&self) -> &tokio::sync::Notify {
        &self.deleg_gone
    }

    /// The delegations of `file` a change by `breaker` conflicts with
    /// (RFC 8881 §10.4.6; `reads`: it only reads, and only a write
    /// delegation conflicts): recalls to send, and whether the change must
    /// wait. A holder with no session to call back on cannot be recalled:
    /// its delegation is revoked at once.
    pub fn break_delegations(&self, file: &FileKey, breaker: &Breaker, reads: bool) -> Breaking {
        self.breaking(|t, now| t.deleg_conflicts(file, breaker, reads, now))
    }

    /// The recalls of the delegations `find` says are in the way, and
    /// whether any still is once those that cannot be called back are
    /// revoked.
    fn breaking(
        &self,
        find: impl Fn(&mut Tables, Duration) -> (Vec<(ClientId4, StateId4, Bytes)>, bool),
    ) -> Breaking {
        self.with(|t, now| {
            let (found, mut pending) = find(t, now);
            if found.is_empty() {
                return Breaking {
                    recalls: Vec::new(),
                    pending,
                };
            }
            let (recalls, revoked) = self.recalls_of(t, found);
            if revoked {
                pending = find(t, now).1;
            }
            Breaking { recalls, pending }
        })
    }

    /// The CB_RECALLs of delegations found in conflict: a session of each
    /// holder to call back on; one with none is revoked at once (and the
    /// second value says some was).
    fn recalls_of(
        &self,
        t: &mut Tables,
        found: Vec<(ClientId4, StateId4, Bytes)>,
    ) -> (Vec<DelegRecall>, bool) {
        let sessions = self.sessions.read().unwrap_or_else(|p| p.into_inner());
        let mut recalls = Vec::new();
        let mut revoked = false;
        for (cid, stateid, fh) in found {
            match callable_session(t, &sessions, cid) {
                Some(session) => recalls.push(DelegRecall {
                    session,
                    stateid,
                    fh: NfsFh4(fh),
                }),
                None => revoked |= t.revoke(&stateid.other),
            }
        }
        (recalls, revoked)
    }

    /// Whether anyone holds a delegation of the directory `dir`.
    pub fn dir_delegated(&self, dir: &FileKey) -> bool {
        self.delegations_outstanding() && self.tables().dir_delegated(dir)
    }

    /// Whether a client other than `client` holds a delegation of the
    /// directory `dir` that asks to be told of changes of `kind`.
    pub fn dir_watched(&self, dir: &FileKey, client: ClientId4, kind: NotifyType4) -> bool {
        if !self.delegations_outstanding() {
            return false;
        }
        self.tables().dir_watched(dir, client, kind)
    }

    /// GET_DIR_DELEGATION (RFC 8881 §18.39): a delegation of the directory
    /// `dir` for `client`, notified of what `watch` says.
    pub fn offer_dir_delegation(
        &self,
        client: ClientId4,
        dir: &FileKey,
        fh: Bytes,
        watch: DirWatch,
    ) -> Result<StateId4, WhyNoDelegation4> {
        self.with(|t, now| t.grant_dir_deleg(client, dir, fh, watch, now))
    }

    /// The directory delegations of `dir` a change of `kind` by `client`
    /// conflicts with (§10.9.1, [`Tables::dir_conflicts`]): recalls to
    /// send, and whether the change must wait.
    pub fn break_dir_delegations(
        &self,
        dir: &FileKey,
        client: ClientId4,
        kind: NotifyType4,
    ) -> Breaking {
        self.breaking(|t, now| t.dir_conflicts(dir, client, kind, now))
    }

    /// Queues a notification of a change of `kind` by `client` to the
    /// directory delegations of `dir` that asked for it
    /// ([`Tables::dir_notify`]): the senders to start (a session of the
    /// holder and the delegation's `other`; none if it cannot be called
    /// back, and its delegation is revoked) and recalls to send.
    pub fn notify_dir(
        &self,
        dir: &FileKey,
        client: ClientId4,
        kind: NotifyType4,
        note: &dyn Fn(&DirWatch) -> Notify4,
    ) -> (Vec<DirSender>, Vec<DelegRecall>) {
        if !self.delegations_outstanding() {
            return (Vec::new(), Vec::new());
        }
        self.with(|t, now| {
            let out = t.dir_notify(dir, client, kind, note, now);
            let (recalls, _) = self.recalls_of(t, out.recalls);
            let sessions = self.sessions.read().unwrap_or_else(|p| p.into_inner());
            let mut senders = Vec::new();
            for (cid, other) in out.start {
                match callable_session(t, &sessions, cid) {
                    Some(s) => senders.push((s, other)),
                    None => {
                        t.revoke(&other);
                    }
                }
            }
            (senders, recalls)
        })
    }

    /// The notifications queued for the directory delegation `other`
    /// ([`Tables::take_dir_notes`]) with its stateid and filehandle.
    pub fn take_dir_notes(
        &self,
        other: &[u8; 12],
        budget: usize,
    ) -> Option<(StateId4, NfsFh4, Vec<Notify4>)> {
        self.with(|t, _| {
            t.take_dir_notes(other, budget)
                .map(|(sid, fh, notes)| (sid, NfsFh4(fh), notes))
        })
    }

    /// How long a change of the attributes of the directory of delegation
    /// `other` may wait to be sent with later ones.
    pub fn dir_attr_delay(&self, other: &[u8; 12]) -> Duration {
        self.tables().dir_attr_delay(other)
    }

    /// CB_RECALL_ANYs to send now ([`Tables::recall_any`]): a session of
    /// each client to call back on, and how many delegations it may keep.
    pub fn recall_any(&self) -> Vec<(Arc<Session>, u32)> {
        self.with(|t, now| {
            let targets = t.recall_any(now);
            if targets.is_empty() {
                return Vec::new();
            }
            let sessions = self.sessions.read().unwrap_or_else(|p| p.into_inner());
            targets
                .into_iter()
                .filter_map(|(cid, keep)| Some((callable_session(t, &sessions, cid)?, keep)))
                .collect()
        })
    }

    /// Revokes a delegation whose recall could not be delivered.
    pub fn revoke_delegation(&self, stateid: &StateId4) -> bool {
        self.with(|t, _| t.revoke(&stateid.other))
    }

    /// A delegation of `client` for `file` in force (CLAIM_DELEGATE_CUR,
    /// CLAIM_DELEG_CUR_FH, RFC 8881 §18.16.3).
    pub fn check_delegation(
        &self,
        client: ClientId4,
        sid: &StateId4,
        file: &FileKey,
    ) -> Result<(), NfsStat4> {
        self.tables().check_deleg(client, sid, file)
    }

    /// DELEGRETURN (RFC 8881 §18.6).
    pub fn delegreturn(
        &self,
        client: ClientId4,
        sid: &StateId4,
        file: &FileKey,
    ) -> Result<(), NfsStat4> {
        self.with(|t, _| t.delegreturn(client, sid, file))
    }

    /// FREE_STATEID (RFC 8881 §18.38).
    pub fn free_stateid(&self, client: ClientId4, sid: &StateId4) -> Result<(), NfsStat4> {
        self.with(|t, _| t.free_stateid(client, sid))
    }

    /// TEST_STATEID (RFC 8881 §18.48): one status per stateid.
    pub fn test_stateids(&self, client: ClientId4, sids: &[StateId4]) -> Vec<NfsStat4> {
        let t = self.tables();
        sids.iter().map(|s| t.test_stateid(client, s)).collect()
    }

    /// Removes clients whose lease ran out more than a lease ago, and
    /// unconfirmed ones older than a lease; returns how many.
    pub fn reap(&self) -> usize {
        self.with(|t, now| t.reap(now))
    }

    pub fn client_count(&self) -> usize {
        self.tables().clients.len()
    }

    pub fn session_count(&self) -> usize {
        self.sessions.read().map(|s| s.len()).unwrap_or(0)
    }

    /// Holds the tables' lock (tests of what does not wait for it).
    #[cfg(test)]
    fn lock_tables(&self) -> MutexGuard<'_, Tables> {
        self.tables()
    }
}
