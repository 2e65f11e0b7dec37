//! The tables behind [`crate::State`]'s lock: client records (each holding
//! its own stateids), an index of clients by owner, per-file state and the
//! lease expiry queue. Every lookup goes through an index: no transition
//! costs time in the number of clients or stateids on the server.

mod clients;
mod delegs;
mod dirdelegs;
mod layouts;
mod locking;
mod nlm;
mod opens;
mod shared;
mod v40;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use bytes::Bytes;
use proto::nfs4::*;

use crate::client::Client;
use crate::grace::Grace;
use crate::lease::ExpiryQueue;
use crate::locks::{FileLocks, Held, LockKind};
use crate::stateid::{
    check_seqid, client_of, make_other, next_seqid, CbSeen, DelegTimes, DirWatch, StateEntry,
    StateKind,
};
use crate::types::{Breaker, FileKey, LockError, LockRequest, OwnerKey};
use crate::waiters::{LockWaiters, Waiter};

/// The state attached to one file.
#[derive(Debug, Default)]
pub(super) struct FileState {
    /// Open stateids on the file (of any client).
    pub opens: HashSet<[u8; 12]>,
    pub locks: FileLocks<OwnerKey>,
    /// Lock owners waiting for a blocking lock (RFC 8881 §9.6).
    pub waiters: LockWaiters<OwnerKey>,
    /// Delegations of the file not revoked (of any client).
    pub delegs: HashSet<[u8; 12]>,
    /// The write delegation among them, if one is (it is then the only
    /// one, RFC 8881 §10.4).
    pub wdeleg: Option<[u8; 12]>,
    /// NLM share reservations: owner, access and deny (NFSv4's bits).
    pub nlm_shares: Vec<(OwnerKey, u32, u32)>,
    /// Layout stateids of the file (of any client).
    pub layouts: HashSet<[u8; 12]>,
}

impl FileState {
    pub fn is_empty(&self) -> bool {
        self.nlm_shares.is_empty()
            && self.opens.is_empty()
            && self.locks.is_empty()
            && self.waiters.is_empty()
            && self.delegs.is_empty()
            && self.layouts.is_empty()
    }
}

/// How long after a conflict over a file no delegation of it is granted
/// (RFC 8881 §10.2: a file in contention is a poor candidate).
pub(super) const CONFLICT_QUIET: Duration = Duration::from_secs(10);

/// How long, past its lease, a client that stopped renewing keeps its
/// opens, locks and delegations (and its record on stable storage, so it
/// may still reclaim them after a restart) while no other client
/// conflicts with them: a day, as the Linux server's courtesy clients
/// (fs/nfsd/nfs4state.c, NFSD_COURTESY_CLIENT_TIMEOUT). A client that
/// comes back within it finds its state; one that conflicts with it
/// purges it at once; a full client table purges the oldest first.
pub const DEFAULT_COURTESY: Duration = Duration::from_secs(24 * 60 * 60);

/// Notifications queued at most per directory delegation; past it a
/// change notifies that holder of nothing more (its sender catches up).
pub(super) const MAX_QUEUED_NOTES: usize = 1024;

/// Layout stateids the server holds at most unless configured (one per
/// client and file).
pub const DEFAULT_MAX_LAYOUTS: usize = 1 << 20;

/// How often CB_RECALL_ANY goes out while delegations are scarce.
pub(super) const RECALL_ANY_EVERY: Duration = Duration::from_secs(10);

/// What [`Tables::dir_notify`] did.
#[derive(Debug, Default)]
pub(super) struct DirNotified {
    /// Directory delegations whose CB_NOTIFY sender must start.
    pub start: Vec<(ClientId4, [u8; 12])>,
    /// Recalls to send (client, stateid, filehandle).
    pub recalls: Vec<(ClientId4, StateId4, Bytes)>,
}

/// An owner's client records: at most one confirmed and one unconfirmed
/// (RFC 8881 §18.35.4).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct OwnerRecords {
    pub confirmed: Option<ClientId4>,
    pub unconfirmed: Option<ClientId4>,
}

#[derive(Debug)]
pub(super) struct Tables {
    pub epoch: u32,
    pub lease: Duration,
    last_client: u32,
    last_session: u32,
    /// Serial of the last SETCLIENTID confirm verifier (NFSv4.0).
    last_verifier: u32,
    pub clients: HashMap<ClientId4, Client>,
    pub owners: HashMap<Bytes, OwnerRecords>,
    pub files: HashMap<FileKey, FileState>,
    expiry: ExpiryQueue,
    /// Sessions of purged clients, for the caller to drop from the
    /// session map.
    pub dead_sessions: Vec<SessionId4>,
    /// Purged clients that had a record on stable storage, for the caller
    /// to have removed ([`crate::records::RecordQueue::dead`]).
    pub dead_records: Vec<ClientId4>,
    /// The grace period after a restart (RFC 8881 §8.4.2.1).
    pub grace: Grace,
    /// Client records held at most (EXCHANGE_ID beyond it: NFS4ERR_DELAY).
    pub max_clients: usize,
    /// How long a client whose lease ran out keeps its opens, locks and
    /// delegations while nobody conflicts with them ([`DEFAULT_COURTESY`]).
    pub courtesy: Duration,
    /// Delegations held and not revoked, and the most there may be.
    pub delegs: usize,
    pub max_delegs: usize,
    /// Write delegations among them.
    pub wdelegs: usize,
    /// Delegations being recalled: their client and when CB_RECALL was
    /// decided (revoked a lease later if still held, §10.4.6).
    recalls: HashMap<[u8; 12], (ClientId4, Duration)>,
    /// Files that were the subject of a conflict, and when (no delegation
    /// of them for [`CONFLICT_QUIET`]).
    recent_conflicts: HashMap<FileKey, Duration>,
    /// The file of each delegation no longer in force since the caller
    /// last looked (returned, revoked, gone with its client): one entry
    /// per delegation, for the caller to end its guard against local
    /// writers ([`crate::State`]).
    pub delegs_ended: Vec<FileKey>,
    /// When CB_RECALL_ANY last went out.
    last_recall_any: Option<Duration>,
    /// The delegations of client instances replaced by a restart of their
    /// client (a new EXCHANGE_ID verifier), kept a lease for the new
    /// instance to reclaim (CLAIM_DELEGATE_PREV, CLAIM_DELEG_PREV_FH; RFC
    /// 8881 §10.2.1, §18.16.3), by file; forgotten at a conflict.
    prev_delegs: HashMap<FileKey, Vec<PrevDeleg>>,
    /// How many `prev_delegs` holds.
    pub prev_count: usize,
    /// The files each NLM host holds or waits for something on
    /// (`crate::nlm`).
    pub nlm_files: HashMap<ClientId4, HashSet<FileKey>>,
    /// Blocked NLM requests granted since the caller last looked, for
    /// their hosts to be told.
    pub nlm_granted: Vec<crate::nlm::NlmGrant>,
    /// Layout stateids held, and the most there may be (LAYOUTGET beyond
    /// it: NFS4ERR_LAYOUTTRYLATER).
    pub layouts: usize,
    pub max_layouts: usize,
    /// Layouts being recalled, and their client.
    layout_recalls: HashMap<[u8; 12], ClientId4>,
    /// Clients holding a layout.
    layout_clients: HashSet<ClientId4>,
    /// Layouts ended without being returned since the caller last looked
    /// (to fence, [`crate::layouts::LayoutLost`]).
    pub layouts_lost: Vec<crate::layouts::LayoutLost>,
    /// When CB_RECALL_ANY for layouts last went out.
    last_layout_recall_any: Option<Duration>,
    /// Client ids of the servers exports migrated from, to the client
    /// here each became: their stateids name them (`crate::migration`).
    pub aliases: HashMap<ClientId4, ClientId4>,
    /// Clients whose state moved away with these exports, until each is
    /// told NFS4ERR_MOVED for it (SEQ4_STATUS_LEASE_MOVED).
    pub lease_moved: HashMap<ClientId4, HashSet<u16>>,
    /// Exports being migrated away: no state changes on their files
    /// (NFS4ERR_DELAY) until the move is over (`crate::migration`).
    pub frozen: HashSet<u16>,
    /// Exports about to be migrated away: no delegations or layouts
    /// granted on their files (those held are being recalled).
    pub no_grants: HashSet<u16>,
    /// The file systems' own lock manager, when locks are shared with
    /// local processes (`crate::shared`).
    pub shared: Option<SharedPort>,
    /// Ranges the kernel holds for NFSv4 waiters told they may retry
    /// (CB_NOTIFY_LOCK) while a local process could take them first: by
    /// file and owner, the range and until when.
    pub reserved: HashMap<(FileKey, OwnerKey), (u64, u64, Duration)>,
    /// Files with waiters a local lock may be blocking, looked at again
    /// by [`Tables::poll_shared`].
    pub shared_waits: HashSet<FileKey>,
    /// The time of the transition under way (for those called without
    /// one).
    pub now: Duration,
}

/// The port to the kernel's locks (a newtype for `Debug`).
#[derive(Clone)]
pub(crate) struct SharedPort(pub std::sync::Arc<dyn crate::shared::SharedLocks>);

impl std::fmt::Debug for SharedPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedPort")
    }
}

/// A delegation kept for its client's next instance.
#[derive(Debug, Clone)]
struct PrevDeleg {
    /// The client owner (`co_ownerid`).
    owner: Bytes,
    write: bool,
    /// Kept until then.
    until: Duration,
}

impl Tables {
    pub fn new(epoch: u32, lease: Duration) -> Self {
        Tables {
            epoch,
            lease,
            last_client: 0,
            last_session: 0,
            last_verifier: 0,
            clients: HashMap::new(),
            owners: HashMap::new(),
            files: HashMap::new(),
            expiry: ExpiryQueue::default(),
            dead_sessions: Vec::new(),
            dead_records: Vec::new(),
            grace: Grace::none(),
            max_clients: usize::MAX,
            courtesy: DEFAULT_COURTESY,
            delegs: 0,
            max_delegs: 0,
            wdelegs: 0,
            recalls: HashMap::new(),
            recent_conflicts: HashMap::new(),
            delegs_ended: Vec::new(),
            last_recall_any: None,
            prev_delegs: HashMap::new(),
            prev_count: 0,
            nlm_files: HashMap::new(),
            nlm_granted: Vec::new(),
            layouts: 0,
            max_layouts: DEFAULT_MAX_LAYOUTS,
            layout_recalls: HashMap::new(),
            layout_clients: HashSet::new(),
            layouts_lost: Vec::new(),
            last_layout_recall_any: None,
            aliases: HashMap::new(),
            lease_moved: HashMap::new(),
            frozen: HashSet::new(),
            no_grants: HashSet::new(),
            shared: None,
            reserved: HashMap::new(),
            shared_waits: HashSet::new(),
            now: Duration::ZERO,
        }
    }

    /// `now`, or the transition's time when `now` is [`Duration::MAX`]
    /// ("do not expire").
    pub(crate) fn clock_or(&self, now: Duration) -> Duration {
        if now == Duration::MAX {
            self.now
        } else {
            now
        }
    }

    pub(crate) fn client_expired(&self, id: ClientId4, now: Duration) -> bool {
        // An NLM host has no lease: its locks last until it lets go.
        if crate::nlm::is_nlm(id) {
            return false;
        }
        self.clients
            .get(&id)
            .is_none_or(|c| c.expired(now, self.lease))
    }

    /// NFS4ERR_DELAY while `file`'s export is frozen for a migration.
    pub(crate) fn thawed(&self, file: &FileKey) -> Result<(), NfsStat4> {
        if !self.frozen.is_empty() && self.frozen.contains(&file.0) {
            return Err(NfsStat4::Nfs4errDelay);
        }
        Ok(())
    }

    /// The record of a stateid: its client and entry.
    pub fn entry(&self, other: &[u8; 12]) -> Result<(ClientId4, &StateEntry), NfsStat4> {
        let issuer = crate::stateid::issuer_client(other);
        let cid = match client_of(self.epoch, other) {
            Some(cid) if self.clients.contains_key(&cid) => cid,
            // Issued by a server the export migrated from (this one
            // earlier, perhaps, to a client record gone since).
            mine => match (self.aliases.get(&issuer), mine) {
                (Some(local), _) => *local,
                (None, Some(cid)) => cid,
                (None, None) => return Err(NfsStat4::Nfs4errStaleStateid),
            },
        };
        self.clients
            .get(&cid)
            .and_then(|c| c.states.get(other))
            .map(|e| (cid, e))
            .ok_or(NfsStat4::Nfs4errBadStateid)
    }

    /// Looks up a stateid of `client` for use on `file` (RFC 8881 §8.2.2,
    /// §9.1.3): another client's stateid is as good as unknown.
    pub fn check_stateid(
        &self,
        client: ClientId4,
        sid: &StateId4,
        file: &FileKey,
    ) -> Result<&StateEntry, NfsStat4> {
        let (cid, e) = self.entry(&sid.other)?;
        if cid != client || &e.file != file {
            return Err(NfsStat4::Nfs4errBadStateid);
        }
        check_seqid(sid.seqid, e.seqid)?;
        Ok(e)
    }

    pub(crate) fn entry_mut(
        &mut self,
        client: ClientId4,
        other: &[u8; 12],
    ) -> Result<&mut StateEntry, NfsStat4> {
        self.clients
            .get_mut(&client)
            .and_then(|c| c.states.get_mut(other))
            .ok_or(NfsStat4::Nfs4errBadStateid)
    }

    /// Records a new stateid for `client`.
    pub(crate) fn insert_state(
        &mut self,
        client: ClientId4,
        e: StateEntry,
    ) -> Result<StateId4, NfsStat4> {
        let epoch = self.epoch;
        let c = self
            .clients
            .get_mut(&client)
            .ok_or(NfsStat4::Nfs4errStaleClientid)?;
        let other = loop {
            c.last_serial = c.last_serial.wrapping_add(1);
            let o = make_other(epoch, client, c.last_serial);
            if !c.states.contains_key(&o) {
                break o;
            }
        };
        let sid = e.stateid(other);
        self.place_state(client, other, e);
        Ok(sid)
    }

    /// Records stateid `other` of `client` (which exists) with its
    /// indexes: a new one ([`Tables::insert_state`]) or one taken in
    /// from another server (`crate::migration`).
    pub(crate) fn place_state(&mut self, client: ClientId4, other: [u8; 12], e: StateEntry) {
        let Some(c) = self.clients.get_mut(&client) else {
            return;
        };
        let file = e.file.clone();
        match &e.kind {
            StateKind::Open { owner, .. } => {
                c.opens_by_owner
                    .insert((owner.clone(), file.clone()), other);
                self.files.entry(file).or_default().opens.insert(other);
            }
            StateKind::Lock { owner, open, .. } => {
                c.locks_by_owner.insert((owner.clone(), file), other);
                if let Some(StateKind::Open { locks, .. }) =
                    c.states.get_mut(open).map(|o| &mut o.kind)
                {
                    locks.push(other);
                }
            }
            StateKind::Deleg { write, .. } => {
                c.delegs_by_file.insert(file.clone(), other);
                let f = self.files.entry(file).or_default();
                f.delegs.insert(other);
                self.delegs += 1;
                if *write {
                    f.wdeleg = Some(other);
                    self.wdelegs += 1;
                }
            }
            StateKind::Layout(_) => {
                c.layouts_by_file.insert(file.clone(), other);
                self.layout_clients.insert(client);
                self.files.entry(file).or_default().layouts.insert(other);
                self.layouts += 1;
            }
        }
        c.states.insert(other, e);
    }

    /// Drops one stateid of `client` and what hangs off it.
    pub(crate) fn drop_state(&mut self, client: ClientId4, other: &[u8; 12]) {
        let Some(c) = self.clients.get_mut(&client) else {
            return;
        };
        let Some(e) = c.states.remove(other) else {
            return;
        };
        match e.kind {
            StateKind::Open { owner, .. } => {
                c.opens_by_owner.remove(&(owner, e.file.clone()));
                if let Some(f) = self.files.get_mut(&e.file) {
                    f.opens.remove(other);
                }
            }
            StateKind::Lock { owner, open } => {
                c.locks_by_owner.remove(&(owner.clone(), e.file.clone()));
                if let Some(StateKind::Open { locks, .. }) =
                    c.states.get_mut(&open).map(|o| &mut o.kind)
                {
                    locks.retain(|l| l != other);
                }
                if let Some(f) = self.files.get_mut(&e.file) {
                    f.locks.remove_owner(&(client, owner.clone()));
                }
                self.release_shared(&(client, owner), &e.file);
            }
            StateKind::Deleg { revoked, .. } => {
                if c.delegs_by_file.get(&e.file) == Some(other) {
                    c.delegs_by_file.remove(&e.file);
                }
                if revoked {
                    c.lease.add_revoked(-1);
                } else {
                    self.unlist_deleg(&e.file, other);
                }
                self.recalls.remove(other);
            }
            StateKind::Layout(_) => self.unlist_layout(client, &e.file, other),
        }
        if self.files.get(&e.file).is_some_and(FileState::is_empty) {
            self.files.remove(&e.file);
        }
    }

    /// Whether an I/O without an open (anonymous stateid) would break a
    /// share reservation: `access` is OPEN4_SHARE_ACCESS_READ or _WRITE.
    pub(crate) fn denied_by_share(&self, file: &FileKey, access: u32) -> bool {
        self.files.get(file).is_some_and(|f| {
            f.nlm_shares.iter().any(|(_, _, d)| d & access != 0)
                || f.opens.iter().any(|o| {
                    self.entry(o).is_ok_and(
                    |(_, e)| matches!(e.kind, StateKind::Open { deny, .. } if deny & access != 0),
                )
                })
        })
    }
}
