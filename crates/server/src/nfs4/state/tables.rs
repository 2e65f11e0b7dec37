//! The tables behind [`super::State`]'s lock: client records (each holding
//! its own stateids), an index of clients by owner, per-file state and the
//! lease expiry queue. Every lookup goes through an index: no transition
//! costs time in the number of clients or stateids on the server.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use bytes::Bytes;
use proto::nfs4::*;

use super::client::Client;
use super::lease::ExpiryQueue;
use super::stateid::{
    check_seqid, client_of, make_other, next_seqid, CbSeen, DirWatch, StateEntry, StateKind,
};
use super::{Breaker, FileKey, LockError, LockRequest, OwnerKey};
use crate::locks::{FileLocks, Held, LockKind};
use crate::nfs4::recovery::Grace;
use crate::nfs4::state::waiters::{LockWaiters, Waiter};

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
}

impl FileState {
    pub fn is_empty(&self) -> bool {
        self.nlm_shares.is_empty()
            && self.opens.is_empty()
            && self.locks.is_empty()
            && self.waiters.is_empty()
            && self.delegs.is_empty()
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
    pub clients: HashMap<ClientId4, Client>,
    pub owners: HashMap<Bytes, OwnerRecords>,
    pub files: HashMap<FileKey, FileState>,
    expiry: ExpiryQueue,
    /// Sessions of purged clients, for the caller to drop from the
    /// session map.
    pub dead_sessions: Vec<SessionId4>,
    /// Purged clients that had a record on stable storage, for the caller
    /// to have removed ([`crate::nfs4::recovery::Records::dead`]).
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
    /// writers ([`super::State`]).
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
    /// (`super::nlm`).
    pub nlm_files: HashMap<ClientId4, HashSet<FileKey>>,
    /// Blocked NLM requests granted since the caller last looked, for
    /// their hosts to be told.
    pub nlm_granted: Vec<super::nlm::NlmGrant>,
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
        }
    }

    /// How long a client may go without renewing before the reaper
    /// removes it: a lease if it never confirmed, else a lease and the
    /// courtesy period (RFC 8881 §8.4.3 lets a server keep an expired
    /// client's state until another client conflicts with it:
    /// `client_expired` there purges it). A client without state is kept
    /// too: its record on stable storage goes with it, and after a restart
    /// the grace period waits for every recorded client (a client that
    /// went quiet with nothing open is still one the others may be waiting
    /// on, as pynfs's reboot tests' "block" client is).
    fn allowance(&self, c: &Client) -> Duration {
        if c.confirmed {
            self.lease.saturating_add(self.courtesy)
        } else {
            self.lease
        }
    }

    /// The client table is full: purges a courtesy client (lease run out,
    /// state kept), one holding nothing before one holding state, each the
    /// one that renewed longest ago. False if there is none.
    pub fn reap_courtesy(&mut self, now: Duration) -> bool {
        let lease = self.lease;
        let oldest = self
            .clients
            .values()
            .filter(|c| c.confirmed && !super::nlm::is_nlm(c.id) && c.expired(now, lease))
            .min_by_key(|c| {
                let holds = !c.states.is_empty() || !c.delegs_by_file.is_empty();
                (holds, c.lease.last())
            })
            .map(|c| c.id);
        match oldest {
            Some(id) => {
                self.purge_client(id);
                true
            }
            None => false,
        }
    }

    /// Adds a new unconfirmed client record for `owner`.
    pub fn add_client(
        &mut self,
        owner: &ClientOwner4,
        principal: super::Principal,
        now: Duration,
    ) -> ClientId4 {
        let id = loop {
            self.last_client = self.last_client.wrapping_add(1);
            let id = (self.epoch as u64) << 32 | self.last_client as u64;
            if self.last_client != 0 && !self.clients.contains_key(&id) {
                break id;
            }
        };
        let mut c = Client::new(id, owner, principal, now);
        c.deadline = now + self.lease;
        self.expiry.insert(c.deadline, id);
        self.owners
            .entry(owner.ownerid.clone())
            .or_default()
            .unconfirmed = Some(id);
        self.clients.insert(id, c);
        id
    }

    /// Marks `id` confirmed in its owner's records.
    pub fn confirm(&mut self, id: ClientId4) {
        let Some(c) = self.clients.get_mut(&id) else {
            return;
        };
        c.confirmed = true;
        let rec = self.owners.entry(c.owner.clone()).or_default();
        if rec.unconfirmed == Some(id) {
            rec.unconfirmed = None;
        }
        rec.confirmed = Some(id);
    }

    pub fn new_sessionid(&mut self, client: ClientId4) -> SessionId4 {
        self.last_session = self.last_session.wrapping_add(1);
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&client.to_be_bytes());
        id[8..12].copy_from_slice(&self.last_session.to_be_bytes());
        id[12..].copy_from_slice(&self.epoch.to_be_bytes());
        id
    }

    /// Forgets a client and everything it holds.
    pub fn purge_client(&mut self, id: ClientId4) {
        let Some(c) = self.clients.remove(&id) else {
            return;
        };
        self.expiry.remove(c.deadline, id);
        if let Some(rec) = self.owners.get_mut(&c.owner) {
            if rec.confirmed == Some(id) {
                rec.confirmed = None;
            }
            if rec.unconfirmed == Some(id) {
                rec.unconfirmed = None;
            }
            if rec.confirmed.is_none() && rec.unconfirmed.is_none() {
                self.owners.remove(&c.owner);
            }
        }
        self.dead_sessions.extend(c.sessions.iter().copied());
        if c.reclaim_complete {
            self.dead_records.push(id);
        }
        for (other, e) in &c.states {
            let Some(f) = self.files.get_mut(&e.file) else {
                continue;
            };
            match &e.kind {
                StateKind::Open { .. } => {
                    f.opens.remove(other);
                }
                StateKind::Lock { owner, .. } => f.locks.remove_owner(&(id, owner.clone())),
                StateKind::Deleg { revoked, .. } => {
                    if !revoked {
                        self.unlist_deleg(&e.file, other);
                    }
                    self.recalls.remove(other);
                }
            }
        }
        let touched = c
            .states
            .values()
            .map(|e| &e.file)
            .chain(c.waiting_on.keys());
        for file in touched {
            if let Some(f) = self.files.get_mut(file) {
                if !f.waiters.is_empty() {
                    f.waiters.retain_owners(|o| o.0 != id);
                }
                if f.is_empty() {
                    self.files.remove(file);
                }
            }
        }
    }

    /// Removes clients whose allowance has run out, and revokes
    /// delegations recalled more than a lease ago (RFC 8881 §10.4.6);
    /// returns how many clients went.
    pub fn reap(&mut self, now: Duration) -> usize {
        let lease = self.lease;
        let overdue: Vec<[u8; 12]> = self
            .recalls
            .iter()
            .filter(|(_, (_, since))| now > *since + lease)
            .map(|(o, _)| *o)
            .collect();
        for o in overdue {
            if self.revoke(&o) {
                tracing::info!(stateid = ?o, "delegation not returned within a lease of its recall: revoked");
            }
        }
        self.recent_conflicts
            .retain(|_, at| now < *at + CONFLICT_QUIET);
        if self.prev_count > 0 {
            self.prev_delegs.retain(|_, v| {
                v.retain(|p| now < p.until);
                !v.is_empty()
            });
            self.prev_count = self.prev_delegs.values().map(Vec::len).sum();
        }
        let mut n = 0;
        while let Some((_, id)) = self.expiry.pop_due(now) {
            let Some(c) = self.clients.get(&id) else {
                continue;
            };
            let deadline = c.lease.last().saturating_add(self.allowance(c));
            if deadline < now {
                // Taken off the queue already; purge_client's removal
                // of it is then a no-op.
                self.purge_client(id);
                n += 1;
            } else if let Some(c) = self.clients.get_mut(&id) {
                c.deadline = deadline;
                self.expiry.insert(deadline, id);
            }
        }
        n
    }

    pub(super) fn client_expired(&self, id: ClientId4, now: Duration) -> bool {
        // An NLM host has no lease: its locks last until it lets go.
        if super::nlm::is_nlm(id) {
            return false;
        }
        self.clients
            .get(&id)
            .is_none_or(|c| c.expired(now, self.lease))
    }

    /// The record of a stateid: its client and entry.
    pub fn entry(&self, other: &[u8; 12]) -> Result<(ClientId4, &StateEntry), NfsStat4> {
        let cid = client_of(self.epoch, other).ok_or(NfsStat4::Nfs4errStaleStateid)?;
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

    fn entry_mut(
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
    fn insert_state(&mut self, client: ClientId4, e: StateEntry) -> Result<StateId4, NfsStat4> {
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
        }
        c.states.insert(other, e);
        Ok(sid)
    }

    /// Drops one stateid of `client` and what hangs off it.
    fn drop_state(&mut self, client: ClientId4, other: &[u8; 12]) {
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
                    f.locks.remove_owner(&(client, owner));
                }
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
        }
        if self.files.get(&e.file).is_some_and(FileState::is_empty) {
            self.files.remove(&e.file);
        }
    }

    /// OPEN's share reservations (RFC 8881 §9.7): the open stateid, new or
    /// upgraded.
    pub fn open(
        &mut self,
        client: ClientId4,
        owner: &Bytes,
        file: &FileKey,
        access: u32,
        deny: u32,
        now: Duration,
    ) -> Result<StateId4, NfsStat4> {
        let key = (owner.clone(), file.clone());
        let mine = self
            .clients
            .get(&client)
            .ok_or(NfsStat4::Nfs4errStaleClientid)?
            .opens_by_owner
            .get(&key)
            .copied();
        loop {
            let conflict = self.files.get(file).and_then(|f| {
                f.opens.iter().find_map(|o| {
                    if Some(*o) == mine {
                        return None;
                    }
                    let (cid, e) = self.entry(o).ok()?;
                    match e.kind {
                        StateKind::Open {
                            access: a, deny: d, ..
                        } if (access & d) != 0 || (deny & a) != 0 => Some(cid),
                        _ => None,
                    }
                })
            });
            let nlm = || {
                self.files.get(file).is_some_and(|f| {
                    f.nlm_shares
                        .iter()
                        .any(|(_, a, d)| (access & d) != 0 || (deny & a) != 0)
                })
            };
            if conflict.is_none() && nlm() {
                return Err(NfsStat4::Nfs4errShareDenied);
            }
            match conflict {
                None => break,
                // A courtesy client's share reservation yields (§8.4.3).
                Some(c) if c != client && self.client_expired(c, now) => self.purge_client(c),
                Some(_) => return Err(NfsStat4::Nfs4errShareDenied),
            }
        }
        if let Some(other) = mine {
            let e = self.entry_mut(client, &other)?;
            if let StateKind::Open {
                access: a, deny: d, ..
            } = &mut e.kind
            {
                *a |= access;
                *d |= deny;
            }
            e.seqid = next_seqid(e.seqid);
            return Ok(e.stateid(other));
        }
        self.insert_state(
            client,
            StateEntry {
                seqid: 1,
                file: file.clone(),
                kind: StateKind::Open {
                    owner: owner.clone(),
                    access,
                    deny,
                    locks: Vec::new(),
                },
            },
        )
    }

    /// OPEN_DOWNGRADE (RFC 8881 §18.18).
    pub fn downgrade(
        &mut self,
        client: ClientId4,
        sid: &StateId4,
        file: &FileKey,
        access: u32,
        deny: u32,
    ) -> Result<StateId4, NfsStat4> {
        self.check_stateid(client, sid, file)?;
        let e = self.entry_mut(client, &sid.other)?;
        let StateKind::Open {
            access: a, deny: d, ..
        } = &mut e.kind
        else {
            return Err(NfsStat4::Nfs4errBadStateid);
        };
        if access & !*a != 0 || deny & !*d != 0 || access == 0 {
            return Err(NfsStat4::Nfs4errInval);
        }
        *a = access;
        *d = deny;
        e.seqid = next_seqid(e.seqid);
        Ok(e.stateid(sid.other))
    }

    /// CLOSE (RFC 8881 §18.2): NFS4ERR_LOCKS_HELD while a lock owner of
    /// this open still holds locks on the file.
    pub fn close(
        &mut self,
        client: ClientId4,
        sid: &StateId4,
        file: &FileKey,
    ) -> Result<(), NfsStat4> {
        let e = self.check_stateid(client, sid, file)?;
        let StateKind::Open { locks, .. } = &e.kind else {
            return Err(NfsStat4::Nfs4errBadStateid);
        };
        let locks = locks.clone();
        let c = self
            .clients
            .get(&client)
            .ok_or(NfsStat4::Nfs4errBadStateid)?;
        let f = self.files.get(file);
        let held = locks.iter().any(|l| {
            c.states
                .get(l)
                .and_then(|le| le.owner())
                .is_some_and(|o| f.is_some_and(|f| f.locks.holds_any(&(client, o.clone()))))
        });
        if held {
            return Err(NfsStat4::Nfs4errLocksHeld);
        }
        for l in &locks {
            self.drop_state(client, l);
        }
        self.drop_state(client, &sid.other);
        Ok(())
    }

    /// FREE_STATEID (RFC 8881 §18.38): an open stateid, or a lock stateid
    /// whose owner still holds locks, is NFS4ERR_LOCKS_HELD; the seqid is
    /// checked first (§8.2.2), so an out-of-date request frees nothing.
    pub fn free_stateid(&mut self, client: ClientId4, sid: &StateId4) -> Result<(), NfsStat4> {
        let (cid, e) = self.entry(&sid.other).map_err(|s| match s {
            NfsStat4::Nfs4errStaleStateid => s,
            _ => NfsStat4::Nfs4errBadStateid,
        })?;
        if cid != client {
            return Err(NfsStat4::Nfs4errBadStateid);
        }
        check_seqid(sid.seqid, e.seqid)?;
        match &e.kind {
            // A delegation in force is state still held (§18.38.3); a
            // revoked one is what FREE_STATEID is for (§8.2.4).
            StateKind::Open { .. } | StateKind::Deleg { revoked: false, .. } => {
                Err(NfsStat4::Nfs4errLocksHeld)
            }
            StateKind::Deleg { revoked: true, .. } => {
                self.drop_state(client, &sid.other);
                Ok(())
            }
            StateKind::Lock { owner, .. } => {
                let key = (cid, owner.clone());
                if self
                    .files
                    .get(&e.file)
                    .is_some_and(|f| f.locks.holds_any(&key))
                {
                    return Err(NfsStat4::Nfs4errLocksHeld);
                }
                self.drop_state(client, &sid.other);
                Ok(())
            }
        }
    }

    /// TEST_STATEID's verdict on one stateid of `client` (RFC 8881 §18.48):
    /// special stateids are not tested and other clients' are not revealed.
    pub fn test_stateid(&self, client: ClientId4, sid: &StateId4) -> NfsStat4 {
        if super::stateid::is_special(&sid.other) {
            return NfsStat4::Nfs4errBadStateid;
        }
        match self.entry(&sid.other) {
            Err(s) => s,
            Ok((cid, _)) if cid != client => NfsStat4::Nfs4errBadStateid,
            Ok((_, e)) if matches!(e.kind, StateKind::Deleg { revoked: true, .. }) => {
                NfsStat4::Nfs4errDelegRevoked
            }
            Ok((_, e)) => match check_seqid(sid.seqid, e.seqid) {
                Ok(()) => NfsStat4::Nfs4Ok,
                Err(s) => s,
            },
        }
    }

    /// The owner of `client`, which has not sent RECLAIM_COMPLETE yet
    /// (else NFS4ERR_COMPLETE_ALREADY, RFC 8881 §18.51.3).
    pub fn reclaiming_owner(&self, client: ClientId4) -> Result<Bytes, NfsStat4> {
        let c = self
            .clients
            .get(&client)
            .ok_or(NfsStat4::Nfs4errStaleClientid)?;
        if c.reclaim_complete {
            return Err(NfsStat4::Nfs4errCompleteAlready);
        }
        Ok(c.owner.clone())
    }

    /// Whether `client` may take state now: by reclaim (`reclaim`) or new
    /// (RFC 8881 §8.4.2.1, §8.4.3, §18.51.3). A reclaim needs the grace
    /// period, a record of the client from before the restart and no
    /// RECLAIM_COMPLETE yet (else NFS4ERR_NO_GRACE); new state needs the
    /// client's RECLAIM_COMPLETE and the grace period over (else
    /// NFS4ERR_GRACE).
    pub fn may_take_state(
        &mut self,
        client: ClientId4,
        reclaim: bool,
        now: Duration,
    ) -> Result<(), NfsStat4> {
        let c = self
            .clients
            .get(&client)
            .ok_or(NfsStat4::Nfs4errStaleClientid)?;
        if reclaim {
            // A new incarnation of a client that has already completed
            // its reclaims in this grace period reclaims nothing more:
            // what it held may since have been reclaimed by its first.
            if c.reclaim_complete
                || !self.grace.active()
                || !self.grace.recorded(&c.owner)
                || self.grace.completed(&c.owner)
            {
                return Err(NfsStat4::Nfs4errNoGrace);
            }
            self.grace.note_progress(now);
        } else if !c.reclaim_complete || self.grace.active() {
            return Err(NfsStat4::Nfs4errGrace);
        }
        Ok(())
    }

    /// LOCK (RFC 8881 §18.10); returns the lock stateid.
    pub fn lock(&mut self, r: &LockRequest, now: Duration) -> Result<StateId4, LockError> {
        let client = r.client;
        let file = &r.file;
        self.may_take_state(client, r.reclaim, now)?;
        let e = self.check_stateid(client, &r.presented, file)?;
        let (open, owner) = match (&e.kind, &r.new_owner) {
            (StateKind::Open { .. }, Some(owner)) => (r.presented.other, owner.clone()),
            (StateKind::Lock { owner, open }, None) => (*open, owner.clone()),
            _ => return Err(NfsStat4::Nfs4errBadStateid.into()),
        };
        // §18.10.3: the open must allow the kind of lock.
        let c = self
            .clients
            .get(&client)
            .ok_or(NfsStat4::Nfs4errBadStateid)?;
        if let Some(StateKind::Open { access, .. }) = c.states.get(&open).map(|o| &o.kind) {
            let need = match r.kind {
                LockKind::Read => OPEN4_SHARE_ACCESS_READ,
                LockKind::Write => OPEN4_SHARE_ACCESS_WRITE,
            };
            if access & need == 0 {
                return Err(NfsStat4::Nfs4errOpenmode.into());
            }
        } else {
            return Err(NfsStat4::Nfs4errBadStateid.into());
        }
        let okey: OwnerKey = (client, owner.clone());
        match self.take_lock(&okey, file, (r.start, r.end), r.kind, r.blocking, now) {
            Ok(()) => {
                let still_waits = self
                    .files
                    .get(file)
                    .is_some_and(|f| f.waiters.iter().any(|w| w.owner.0 == client));
                if !still_waits {
                    if let Some(c) = self.clients.get_mut(&client) {
                        c.waiting_on.remove(file);
                    }
                }
            }
            Err(denied) => {
                if r.blocking {
                    if let Some(c) = self.clients.get_mut(&client) {
                        c.waiting_on.insert(file.clone(), r.fh.clone());
                    }
                }
                return Err(LockError::Denied(denied));
            }
        }
        let existing = self
            .clients
            .get(&client)
            .and_then(|c| c.locks_by_owner.get(&(owner.clone(), file.clone())))
            .copied();
        if let Some(other) = existing {
            let le = self.entry_mut(client, &other)?;
            le.seqid = next_seqid(le.seqid);
            return Ok(le.stateid(other));
        }
        Ok(self.insert_state(
            client,
            StateEntry {
                seqid: 1,
                file: file.clone(),
                kind: StateKind::Lock { owner, open },
            },
        )?)
    }

    /// Takes `[start, end)` of `kind` on `file` for `owner` (NFSv4 LOCK and
    /// NLM LOCK alike) unless another owner's lock is in the way, or a
    /// waiter queued ahead of it (RFC 8881 §9.6; not when the owner holds
    /// the whole range already). Expired NFSv4 clients in the way yield.
    /// When denied, the owner is queued if it `block`s, and the lock in
    /// the way (else the waiter's request) is returned.
    pub(super) fn take_lock(
        &mut self,
        owner: &OwnerKey,
        file: &FileKey,
        (start, end): (u64, u64),
        kind: LockKind,
        block: bool,
        now: Duration,
    ) -> Result<(), Held<OwnerKey>> {
        let lease = self.lease;
        loop {
            let fs = self.files.entry(file.clone()).or_default();
            fs.waiters.expire(now, |o| super::nlm::wait_limit(o, lease));
            let ahead = fs
                .waiters
                .ahead(owner, start, end, kind)
                .filter(|_| !fs.locks.covers(owner, start, end))
                .cloned();
            let denied = match ahead {
                Some(w) => {
                    if self.client_expired(w.owner.0, now) {
                        if let Some(fs) = self.files.get_mut(file) {
                            fs.waiters.remove(&w.owner);
                        }
                        continue;
                    }
                    // Report a held lock in the way if there is one.
                    let held = self
                        .files
                        .get(file)
                        .and_then(|f| f.locks.test(owner, start, end, kind));
                    held.unwrap_or(Held {
                        owner: w.owner,
                        start: w.start,
                        end: w.end,
                        kind: w.kind,
                    })
                }
                None => match fs.locks.lock(owner, start, end, kind) {
                    Ok(()) => {
                        fs.waiters.remove(owner);
                        return Ok(());
                    }
                    Err(h) if h.owner.0 != owner.0 && self.client_expired(h.owner.0, now) => {
                        self.purge_client(h.owner.0);
                        continue;
                    }
                    Err(h) => h,
                },
            };
            if block {
                if let Some(fs) = self.files.get_mut(file) {
                    fs.waiters.wait(owner, start, end, kind, now);
                }
            }
            return Err(denied);
        }
    }

    /// LOCKU (RFC 8881 §18.12): the new lock stateid, and the waiters the
    /// unlock made grantable.
    pub fn unlock(
        &mut self,
        client: ClientId4,
        sid: &StateId4,
        file: &FileKey,
        start: u64,
        end: u64,
        now: Duration,
    ) -> Result<(StateId4, Vec<Waiter<OwnerKey>>), NfsStat4> {
        let e = self.check_stateid(client, sid, file)?;
        let StateKind::Lock { owner, .. } = &e.kind else {
            return Err(NfsStat4::Nfs4errBadStateid);
        };
        let okey = (client, owner.clone());
        if let Some(f) = self.files.get_mut(file) {
            f.locks.unlock(&okey, start, end);
        }
        let ready = self.wake_waiters(file, now);
        let e = self.entry_mut(client, &sid.other)?;
        e.seqid = next_seqid(e.seqid);
        Ok((e.stateid(sid.other), ready))
    }

    /// LOCKT (RFC 8881 §18.11).
    pub fn test_lock(
        &mut self,
        owner: &OwnerKey,
        file: &FileKey,
        range: (u64, u64),
        kind: LockKind,
        now: Duration,
    ) -> Option<Held<OwnerKey>> {
        loop {
            let h = self
                .files
                .get(file)?
                .locks
                .test(owner, range.0, range.1, kind)?;
            if h.owner.0 != owner.0 && self.client_expired(h.owner.0, now) {
                self.purge_client(h.owner.0);
                continue;
            }
            return Some(h);
        }
    }

    /// See [`super::State::check_io`].
    pub fn check_io(
        &self,
        client: ClientId4,
        sid: &StateId4,
        file: &FileKey,
        access: u32,
    ) -> Result<bool, NfsStat4> {
        let anon = sid.other == [0; 12];
        let bypass = sid.other == [0xff; 12];
        if anon || bypass {
            if (anon && sid.seqid != 0) || (bypass && sid.seqid != u32::MAX) {
                return Err(NfsStat4::Nfs4errBadStateid);
            }
            // A share reservation being reclaimed may forbid this I/O
            // (RFC 8881 §8.4.2.1).
            if self.grace.active() {
                return Err(NfsStat4::Nfs4errGrace);
            }
            let read_bypass = bypass && access == OPEN4_SHARE_ACCESS_READ;
            if !read_bypass && self.denied_by_share(file, access) {
                return Err(NfsStat4::Nfs4errLocked);
            }
            return Ok(true);
        }
        let e = self.check_stateid(client, sid, file)?;
        let open = match &e.kind {
            StateKind::Open { access, .. } => *access,
            StateKind::Lock { open, .. } => match self.entry(open)?.1.kind {
                StateKind::Open { access, .. } => access,
                _ => return Err(NfsStat4::Nfs4errBadStateid),
            },
            // A read delegation's stateid reads (§10.2), a write
            // delegation's reads and writes (§10.4).
            StateKind::Deleg { revoked: true, .. } => return Err(NfsStat4::Nfs4errDelegRevoked),
            StateKind::Deleg { write: true, .. } => OPEN4_SHARE_ACCESS_BOTH,
            StateKind::Deleg { .. } => OPEN4_SHARE_ACCESS_READ,
        };
        if access == OPEN4_SHARE_ACCESS_WRITE && open & OPEN4_SHARE_ACCESS_WRITE == 0 {
            return Err(NfsStat4::Nfs4errOpenmode);
        }
        Ok(false)
    }

    /// Grants `client` a read or `write` delegation of `file` (RFC 8881
    /// §10.2, §10.4), whose filehandle as the client knows it is `fh`,
    /// unless [`Tables::deleg_refusal`] says why not.
    #[allow(clippy::too_many_arguments)]
    pub fn grant_deleg(
        &mut self,
        client: ClientId4,
        owner: &Bytes,
        file: &FileKey,
        fh: Bytes,
        write: bool,
        reclaim: bool,
        now: Duration,
    ) -> Result<StateId4, WhyNoDelegation4> {
        let asker = (client, owner.clone());
        if let Some(why) = self.deleg_refusal(&asker, file, write, reclaim, now) {
            return Err(why);
        }
        self.insert_state(
            client,
            StateEntry {
                seqid: 1,
                file: file.clone(),
                kind: StateKind::Deleg {
                    write,
                    seen: None,
                    asking: false,
                    dir: None,
                    owner: owner.clone(),
                    fh,
                    recalled: None,
                    revoked: false,
                },
            },
        )
        .map_err(|_| WhyNoDelegation4::Wnd4Resource)
    }

    /// Why [`Tables::grant_deleg`] would refuse `asker` (an OPEN's client
    /// and open owner), if it would: the grace period runs, the client
    /// holds a delegation of the file already, the server holds its most,
    /// the file was in a conflict lately or a recall of it is under way;
    /// for a read delegation, the file is open for writing (by anyone) or
    /// under a write delegation; for a write delegation, anyone else has
    /// it open or holds a delegation of it (§10.4: the holder may write
    /// from its cache, so no one else may be looking). A `reclaim` (the
    /// delegation a CLAIM_PREVIOUS open says its client held before the
    /// restart, §10.2.1) may be granted in the grace period.
    pub fn deleg_refusal(
        &self,
        asker: &OwnerKey,
        file: &FileKey,
        write: bool,
        reclaim: bool,
        now: Duration,
    ) -> Option<WhyNoDelegation4> {
        let (client, owner) = asker;
        if self.grace.active() && !reclaim {
            return Some(WhyNoDelegation4::Wnd4Contention);
        }
        let Some(c) = self.clients.get(client) else {
            return Some(WhyNoDelegation4::Wnd4Resource);
        };
        let holds = c
            .delegs_by_file
            .get(file)
            .and_then(|o| c.states.get(o))
            .is_some_and(|e| matches!(e.kind, StateKind::Deleg { revoked: false, .. }));
        if holds {
            return Some(WhyNoDelegation4::Wnd4NotSuppUpgrade);
        }
        if self.delegs >= self.max_delegs || self.recent_conflicts.len() >= self.max_delegs {
            return Some(WhyNoDelegation4::Wnd4Resource);
        }
        if self
            .recent_conflicts
            .get(file)
            .is_some_and(|at| now < *at + CONFLICT_QUIET)
        {
            return Some(WhyNoDelegation4::Wnd4Contention);
        }
        let f = self.files.get(file)?;
        // An NFSv3 client's locks and shares (NLM) come with no open: a
        // delegation's holder would take locks in its cache that those
        // never see.
        if !f.nlm_shares.is_empty()
            || f.locks.any_owner(|o| super::nlm::is_nlm(o.0))
            || f.waiters.iter().any(|w| super::nlm::is_nlm(w.owner.0))
        {
            return Some(WhyNoDelegation4::Wnd4Contention);
        }
        let contended = if write {
            !f.delegs.is_empty()
                || f.opens.iter().any(|o| {
                    self.entry(o).is_ok_and(|(cid, e)| {
                        cid != *client || e.owner().is_some_and(|eo| eo != owner)
                    })
                })
        } else {
            // Any writer, the client itself included (as the Linux server,
            // whose lease needs a file no one has open for writing): a
            // read delegation is for a file that is not changing.
            f.wdeleg.is_some()
                || f.opens.iter().any(|o| {
                    self.entry(o).is_ok_and(|(_, e)| {
                        matches!(e.kind, StateKind::Open { access, .. } if access & OPEN4_SHARE_ACCESS_WRITE != 0)
                    })
                })
                || f.delegs.iter().any(|o| self.recalls.contains_key(o))
        };
        contended.then_some(WhyNoDelegation4::Wnd4Contention)
    }

    /// The open owner behind a stateid `client` presented for I/O: an
    /// open's, a lock's open's, or the one a delegation was granted to.
    fn io_owner(&self, client: ClientId4, sid: &StateId4) -> Option<Bytes> {
        let (cid, e) = self.entry(&sid.other).ok()?;
        if cid != client {
            return None;
        }
        match &e.kind {
            StateKind::Open { owner, .. } | StateKind::Deleg { owner, .. } => Some(owner.clone()),
            StateKind::Lock { open, .. } => self.entry(open).ok()?.1.owner().cloned(),
        }
    }

    /// The delegations of `file` that a change by `breaker` conflicts with
    /// (§10.4.6; `reads`: the change only reads the file, and only a write
    /// delegation conflicts). Those of expired clients go with their
    /// client (§8.4.3); the others are marked recalled. Returns the ones
    /// to send CB_RECALL for now (their client, stateid and filehandle),
    /// and whether any conflicting delegation remains.
    pub fn deleg_conflicts(
        &mut self,
        file: &FileKey,
        breaker: &Breaker,
        reads: bool,
        now: Duration,
    ) -> (Vec<(ClientId4, StateId4, Bytes)>, bool) {
        if self.prev_count > 0 {
            // Not those of the opener's own client owner: it may be
            // reclaiming them.
            let spare = match breaker {
                Breaker::Opener((c, _)) => self.clients.get(c).map(|c| c.owner.clone()),
                _ => None,
            };
            self.forget_prev(file, reads, spare.as_ref());
        }
        let Some(f) = self.files.get(file) else {
            return (Vec::new(), false);
        };
        let ids: Vec<[u8; 12]> = match (reads, f.wdeleg) {
            (true, None) => return (Vec::new(), false),
            (true, Some(w)) => vec![w],
            (false, _) => f.delegs.iter().copied().collect(),
        };
        // Whose delegations do not conflict: an opener's own (read or
        // write); a writer's own write delegation.
        let (spared, writes_only) = match breaker {
            Breaker::Anyone => (None, false),
            Breaker::Opener(o) => (Some(o.clone()), false),
            Breaker::Io(cid, sid) => (self.io_owner(*cid, sid).map(|o| (*cid, o)), true),
        };
        let breaker_client = match breaker {
            Breaker::Anyone => None,
            Breaker::Opener((c, _)) | Breaker::Io(c, _) => Some(*c),
        };
        self.recall_conflicting(file, ids, now, |cid, e| {
            // A directory delegation: its own client's changes, and
            // changes of the directory's attributes (`dir_conflicts`
            // decides), are no conflict.
            let is_dir = matches!(&e.kind, StateKind::Deleg { dir: Some(_), .. });
            if is_dir && (writes_only || breaker_client == Some(cid)) {
                return false;
            }
            let own = spared.as_ref().is_some_and(|(bc, bo)| {
                *bc == cid
                    && matches!(&e.kind, StateKind::Deleg { owner, write, .. }
                        if owner == bo && (*write || !writes_only))
            });
            !own
        })
    }

    /// Forgets the kept delegations of `file` a change conflicts with (a
    /// read: the write ones), but those of the client owner `spare`: they
    /// cannot be reclaimed after it.
    fn forget_prev(&mut self, file: &FileKey, reads: bool, spare: Option<&Bytes>) {
        let Some(v) = self.prev_delegs.get_mut(file) else {
            return;
        };
        let before = v.len();
        v.retain(|p| (reads && !p.write) || spare == Some(&p.owner));
        self.prev_count -= before - v.len();
        if v.is_empty() {
            self.prev_delegs.remove(file);
        }
    }

    /// Keeps the file delegations in force of `old`, a client record its
    /// client's restart replaces, for the new instance to reclaim within a
    /// lease (within the most delegations the server holds).
    pub fn keep_prev_delegs(&mut self, old: ClientId4, now: Duration) {
        let Some(c) = self.clients.get(&old) else {
            return;
        };
        let until = now + self.lease;
        for e in c.states.values() {
            if self.prev_count >= self.max_delegs {
                break;
            }
            if let StateKind::Deleg {
                write,
                dir: None,
                revoked: false,
                ..
            } = &e.kind
            {
                self.prev_delegs
                    .entry(e.file.clone())
                    .or_default()
                    .push(PrevDeleg {
                        owner: c.owner.clone(),
                        write: *write,
                        until,
                    });
                self.prev_count += 1;
            }
        }
    }

    /// Takes the delegation of `file` kept for `client`'s owner, if one is
    /// (CLAIM_DELEGATE_PREV, CLAIM_DELEG_PREV_FH): whether it was a write
    /// delegation; NFS4ERR_RECLAIM_BAD if none is (any more).
    pub fn take_prev_deleg(
        &mut self,
        client: ClientId4,
        file: &FileKey,
        now: Duration,
    ) -> Result<bool, NfsStat4> {
        let i = self.find_prev_deleg(client, file, now)?;
        let Some(v) = self.prev_delegs.get_mut(file) else {
            return Err(NfsStat4::Nfs4errReclaimBad);
        };
        let write = v.swap_remove(i).write;
        self.prev_count -= 1;
        if v.is_empty() {
            self.prev_delegs.remove(file);
        }
        Ok(write)
    }

    /// Where in `prev_delegs[file]` the delegation kept for `client`'s
    /// owner is (see [`Tables::take_prev_deleg`] for the errors).
    pub fn find_prev_deleg(
        &self,
        client: ClientId4,
        file: &FileKey,
        now: Duration,
    ) -> Result<usize, NfsStat4> {
        let c = self
            .clients
            .get(&client)
            .ok_or(NfsStat4::Nfs4errStaleClientid)?;
        // Reclaims come before the client's RECLAIM_COMPLETE (§18.51.3).
        if c.reclaim_complete {
            return Err(NfsStat4::Nfs4errNoGrace);
        }
        self.prev_delegs
            .get(file)
            .and_then(|v| v.iter().position(|p| p.owner == c.owner && now < p.until))
            .ok_or(NfsStat4::Nfs4errReclaimBad)
    }

    /// DELEGPURGE: forgets every delegation kept for `client`'s owner.
    pub fn purge_prev(&mut self, client: ClientId4) -> Result<(), NfsStat4> {
        let owner = self
            .clients
            .get(&client)
            .ok_or(NfsStat4::Nfs4errStaleClientid)?
            .owner
            .clone();
        if self.prev_count > 0 {
            self.prev_delegs.retain(|_, v| {
                v.retain(|p| p.owner != owner);
                !v.is_empty()
            });
            self.prev_count = self.prev_delegs.values().map(Vec::len).sum();
        }
        Ok(())
    }

    /// Of the delegations `ids` of `file`, those `conflicts` says are in
    /// the way: an expired client's go with it (§8.4.3); the others are
    /// marked recalled, once. Returns those to send CB_RECALL for now
    /// (client, stateid, filehandle), and whether any remains in the way;
    /// a conflict makes the file one not delegated for a while.
    fn recall_conflicting(
        &mut self,
        file: &FileKey,
        ids: Vec<[u8; 12]>,
        now: Duration,
        conflicts: impl Fn(ClientId4, &StateEntry) -> bool,
    ) -> (Vec<(ClientId4, StateId4, Bytes)>, bool) {
        let mut recall = Vec::new();
        let mut pending = false;
        for o in ids {
            let Ok((cid, e)) = self.entry(&o) else {
                continue;
            };
            if !conflicts(cid, e) {
                continue;
            }
            if self.client_expired(cid, now) {
                self.purge_client(cid);
                continue;
            }
            pending = true;
            if let Some(r) = self.mark_recalled(cid, o, now) {
                recall.push(r);
            }
        }
        if pending {
            self.recent_conflicts.insert(file.clone(), now);
        }
        (recall, pending)
    }

    /// Marks the delegation `o` of `cid` recalled, unless it was: then the
    /// recall to send (client, stateid, filehandle).
    fn mark_recalled(
        &mut self,
        cid: ClientId4,
        o: [u8; 12],
        now: Duration,
    ) -> Option<(ClientId4, StateId4, Bytes)> {
        let e = self.entry_mut(cid, &o).ok()?;
        let seqid = e.seqid;
        let StateKind::Deleg {
            fh,
            recalled: recalled @ None,
            ..
        } = &mut e.kind
        else {
            return None;
        };
        *recalled = Some(now);
        let fh = fh.clone();
        self.recalls.insert(o, (cid, now));
        Some((cid, StateId4 { seqid, other: o }, fh))
    }

    /// The write delegation of `file` in force, if one is: its client,
    /// stateid, filehandle as the client knows it and what CB_GETATTR
    /// last learnt (§10.4.3).
    pub fn write_deleg(
        &self,
        file: &FileKey,
    ) -> Option<(ClientId4, StateId4, Bytes, Option<CbSeen>)> {
        let o = self.files.get(file)?.wdeleg?;
        let (cid, e) = self.entry(&o).ok()?;
        match &e.kind {
            StateKind::Deleg { fh, seen, .. } => Some((cid, e.stateid(o), fh.clone(), *seen)),
            _ => None,
        }
    }

    /// Grants `client` a delegation of the directory `dir` (RFC 8881
    /// §10.9, GET_DIR_DELEGATION), whose filehandle as the client knows it
    /// is `fh`, with the notifications `watch` says; refused (with why) in
    /// the grace period, when it holds one of it already, the server holds
    /// its most, or the directory was in a conflict lately.
    pub fn grant_dir_deleg(
        &mut self,
        client: ClientId4,
        dir: &FileKey,
        fh: Bytes,
        watch: DirWatch,
        now: Duration,
    ) -> Result<StateId4, WhyNoDelegation4> {
        let asker = (client, Bytes::new());
        if let Some(why) = self.deleg_refusal(&asker, dir, false, false, now) {
            return Err(why);
        }
        self.insert_state(
            client,
            StateEntry {
                seqid: 1,
                file: dir.clone(),
                kind: StateKind::Deleg {
                    write: false,
                    seen: None,
                    asking: false,
                    dir: Some(Box::new(watch)),
                    owner: Bytes::new(),
                    fh,
                    recalled: None,
                    revoked: false,
                },
            },
        )
        .map_err(|_| WhyNoDelegation4::Wnd4Resource)
    }

    /// The directory delegations of `dir` a change of `kind` by `client`
    /// conflicts with (§10.9.1): those of other clients that did not ask to
    /// be notified of it. They are recalled like file delegations
    /// ([`Tables::deleg_conflicts`]); returns the recalls to send and
    /// whether any remains.
    pub fn dir_conflicts(
        &mut self,
        dir: &FileKey,
        client: ClientId4,
        kind: NotifyType4,
        now: Duration,
    ) -> (Vec<(ClientId4, StateId4, Bytes)>, bool) {
        let Some(f) = self.files.get(dir) else {
            return (Vec::new(), false);
        };
        let ids: Vec<[u8; 12]> = f.delegs.iter().copied().collect();
        self.recall_conflicting(dir, ids, now, |cid, e| {
            // One being recalled is told nothing more: it conflicts.
            matches!(&e.kind, StateKind::Deleg { dir: Some(w), recalled, .. }
                if cid != client && (!w.wants(kind) || recalled.is_some()))
        })
    }

    /// Queues a notification of `kind` (made by `note` for each holder's
    /// watch) for the directory delegations of `dir` held by clients other
    /// than `client` that asked for it (§20.4). Returns those whose sender
    /// must be started (their client and stateid's `other`), and the
    /// recalls to send of those whose queue is full.
    pub fn dir_notify(
        &mut self,
        dir: &FileKey,
        client: ClientId4,
        kind: NotifyType4,
        note: &dyn Fn(&DirWatch) -> Notify4,
        now: Duration,
    ) -> DirNotified {
        let mut out = DirNotified::default();
        let Some(f) = self.files.get(dir) else {
            return out;
        };
        let ids: Vec<[u8; 12]> = f.delegs.iter().copied().collect();
        for o in ids {
            let Some(cid) = client_of(self.epoch, &o).filter(|c| *c != client) else {
                continue;
            };
            let Ok(e) = self.entry_mut(cid, &o) else {
                continue;
            };
            let StateKind::Deleg {
                dir: Some(w),
                recalled: None,
                ..
            } = &mut e.kind
            else {
                continue;
            };
            if !w.wants(kind) {
                continue;
            }
            // Bounded: a holder whose notifications pile up has its
            // delegation recalled instead.
            if w.queue.len() >= MAX_QUEUED_NOTES {
                out.recalls.extend(self.mark_recalled(cid, o, now));
                continue;
            }
            w.queue.push(note(w));
            if !w.sending {
                w.sending = true;
                out.start.push((cid, o));
            }
        }
        out
    }

    /// The notifications queued for the directory delegation `other`, for
    /// its sender, oldest first and as many as `budget` bytes of XDR hold
    /// (one at least), with the delegation's stateid and filehandle; none
    /// (and the sender stops) once the queue is empty or the delegation
    /// gone.
    pub fn take_dir_notes(
        &mut self,
        other: &[u8; 12],
        budget: usize,
    ) -> Option<(StateId4, Bytes, Vec<Notify4>)> {
        let cid = client_of(self.epoch, other)?;
        let e = self.entry_mut(cid, other).ok()?;
        let seqid = e.seqid;
        let StateKind::Deleg {
            dir: Some(w),
            fh,
            revoked,
            ..
        } = &mut e.kind
        else {
            return None;
        };
        if w.queue.is_empty() || *revoked {
            w.sending = false;
            w.queue.clear();
            return None;
        }
        let mut used = 0;
        let n = w
            .queue
            .iter()
            .take_while(|n| {
                // bitmap4, then the opaque values.
                used += 4 + 4 * n.mask.0.len() + 4 + n.values.len().next_multiple_of(4);
                used <= budget
            })
            .count()
            .max(1);
        let notes: Vec<Notify4> = w.queue.drain(..n).collect();
        Some((
            StateId4 {
                seqid,
                other: *other,
            },
            fh.clone(),
            notes,
        ))
    }

    /// [`super::State::dir_delegated`].
    pub fn dir_delegated(&self, dir: &FileKey) -> bool {
        self.files.get(dir).is_some_and(|f| {
            f.delegs.iter().any(|o| {
                self.entry(o)
                    .is_ok_and(|(_, e)| matches!(&e.kind, StateKind::Deleg { dir: Some(_), .. }))
            })
        })
    }

    /// [`super::State::dir_watched`].
    pub fn dir_watched(&self, dir: &FileKey, client: ClientId4, kind: NotifyType4) -> bool {
        self.files.get(dir).is_some_and(|f| {
            f.delegs.iter().any(|o| {
                self.entry(o).is_ok_and(|(cid, e)| {
                    cid != client
                        && matches!(&e.kind, StateKind::Deleg { dir: Some(w), .. } if w.wants(kind))
                })
            })
        })
    }

    /// The attribute-change delay of the directory delegation `other`.
    pub fn dir_attr_delay(&self, other: &[u8; 12]) -> Duration {
        match self.entry(other) {
            Ok((_, e)) => match &e.kind {
                StateKind::Deleg { dir: Some(w), .. } => w.attr_delay,
                _ => Duration::ZERO,
            },
            Err(_) => Duration::ZERO,
        }
    }

    /// Starts a CB_GETATTR to the holder of the write delegation `other`:
    /// false if one is under way or the delegation is being recalled (the
    /// caller then waits for its return instead).
    pub fn begin_cb_getattr(&mut self, other: &[u8; 12]) -> bool {
        let Ok((cid, _)) = self.entry(other) else {
            return false;
        };
        match self.entry_mut(cid, other).map(|e| &mut e.kind) {
            Ok(StateKind::Deleg {
                asking: asking @ false,
                recalled: None,
                revoked: false,
                ..
            }) => {
                *asking = true;
                true
            }
            _ => false,
        }
    }

    /// The CB_GETATTR [`Tables::begin_cb_getattr`] started is over.
    pub fn end_cb_getattr(&mut self, other: &[u8; 12]) {
        let Ok((cid, _)) = self.entry(other) else {
            return;
        };
        if let Ok(StateKind::Deleg { asking, .. }) = self.entry_mut(cid, other).map(|e| &mut e.kind)
        {
            *asking = false;
        }
    }

    /// Records what a CB_GETATTR learnt of the write delegation `other`.
    pub fn set_cb_seen(&mut self, other: &[u8; 12], seen: CbSeen) {
        let Ok((cid, _)) = self.entry(other) else {
            return;
        };
        if let Ok(e) = self.entry_mut(cid, other) {
            if let StateKind::Deleg { seen: s, .. } = &mut e.kind {
                *s = Some(seen);
            }
        }
    }

    /// Under pressure (90% or more of the most delegations held), at most
    /// every [`RECALL_ANY_EVERY`]: each client holding delegations, and how
    /// many of them it is asked to keep (half) with CB_RECALL_ANY
    /// (RFC 8881 §20.6).
    pub fn recall_any(&mut self, now: Duration) -> Vec<(ClientId4, u32)> {
        if self.max_delegs == 0 || self.delegs * 10 < self.max_delegs * 9 {
            return Vec::new();
        }
        if self
            .last_recall_any
            .is_some_and(|t| now < t + RECALL_ANY_EVERY)
        {
            return Vec::new();
        }
        self.last_recall_any = Some(now);
        self.clients
            .values()
            .filter(|c| !c.delegs_by_file.is_empty())
            .map(|c| (c.id, (c.delegs_by_file.len() / 2) as u32))
            .collect()
    }

    /// Revokes a delegation (§10.2.1): it no longer conflicts; its client
    /// sees SEQ4_STATUS_RECALLABLE_STATE_REVOKED until it frees it.
    /// Returns whether it was in force.
    pub fn revoke(&mut self, other: &[u8; 12]) -> bool {
        let Ok((cid, _)) = self.entry(other) else {
            return false;
        };
        let Some(c) = self.clients.get_mut(&cid) else {
            return false;
        };
        let Some(e) = c.states.get_mut(other) else {
            return false;
        };
        let StateKind::Deleg { revoked, .. } = &mut e.kind else {
            return false;
        };
        if *revoked {
            return false;
        }
        *revoked = true;
        c.lease.add_revoked(1);
        let file = e.file.clone();
        self.recalls.remove(other);
        self.unlist_deleg(&file, other);
        if self.files.get(&file).is_some_and(FileState::is_empty) {
            self.files.remove(&file);
        }
        true
    }

    /// Takes the delegation `other` off `file`'s state (returned, revoked,
    /// gone with its client): it no longer conflicts. Whether it was on.
    fn unlist_deleg(&mut self, file: &FileKey, other: &[u8; 12]) -> bool {
        let Some(f) = self.files.get_mut(file) else {
            return false;
        };
        if !f.delegs.remove(other) {
            return false;
        }
        self.delegs -= 1;
        if f.wdeleg == Some(*other) {
            f.wdeleg = None;
            self.wdelegs -= 1;
        }
        self.delegs_ended.push(file.clone());
        true
    }

    /// A delegation stateid of `client` for `file`, in force (for
    /// DELEGRETURN and the CLAIM_DELEG_CUR opens, §18.6, §18.16).
    pub fn check_deleg(
        &self,
        client: ClientId4,
        sid: &StateId4,
        file: &FileKey,
    ) -> Result<(), NfsStat4> {
        match self.check_stateid(client, sid, file)?.kind {
            StateKind::Deleg { revoked: false, .. } => Ok(()),
            StateKind::Deleg { revoked: true, .. } => Err(NfsStat4::Nfs4errDelegRevoked),
            _ => Err(NfsStat4::Nfs4errBadStateid),
        }
    }

    /// DELEGRETURN (§18.6).
    pub fn delegreturn(
        &mut self,
        client: ClientId4,
        sid: &StateId4,
        file: &FileKey,
    ) -> Result<(), NfsStat4> {
        self.check_deleg(client, sid, file)?;
        self.drop_state(client, &sid.other);
        Ok(())
    }

    /// Whether an I/O without an open (anonymous stateid) would break a
    /// share reservation: `access` is OPEN4_SHARE_ACCESS_READ or _WRITE.
    pub(super) fn denied_by_share(&self, file: &FileKey, access: u32) -> bool {
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
