//! NFSv4 state: clients, sessions, opens and byte-range locks, with an
//! injected clock. See docs/state.md for how delegations, layouts and
//! reboot recovery hang off these tables.

pub mod client;
pub mod clock;
pub mod session;
pub mod slots;
pub mod waiters;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use proto::nfs4::*;

use crate::locks::{FileLocks, Held, LockKind};
pub use client::{Client, Principal};
pub use session::Session;
pub use waiters::{LockWaiters, Waiter};

/// An object that state attaches to: export id and backend handle.
pub type FileKey = (u16, vfs::Handle);

/// A lock owner on the server: its client and its opaque name.
pub type OwnerKey = (ClientId4, Bytes);

#[derive(Debug, Clone)]
pub enum StateKind {
    Open {
        owner: Bytes,
        access: u32,
        deny: u32,
    },
    Lock {
        owner: Bytes,
        open: [u8; 12],
    },
}

/// One stateid's record (RFC 8881 §8.2).
#[derive(Debug, Clone)]
pub struct StateEntry {
    pub client: ClientId4,
    pub seqid: u32,
    pub file: FileKey,
    pub kind: StateKind,
}

impl StateEntry {
    pub fn is_open(&self) -> bool {
        matches!(self.kind, StateKind::Open { .. })
    }
    /// The share access of the open this state belongs to.
    pub fn stateid(&self, other: [u8; 12]) -> StateId4 {
        StateId4 {
            seqid: self.seqid,
            other,
        }
    }
}

#[derive(Debug, Default)]
pub struct FileState {
    pub opens: Vec<[u8; 12]>,
    pub locks: FileLocks<OwnerKey>,
    /// Lock owners waiting for a blocking lock (RFC 8881 §9.6).
    pub waiters: LockWaiters<OwnerKey>,
}

/// A CB_NOTIFY_LOCK to send (RFC 8881 §20.11): the waiter's lock owner,
/// and a session of its client to call back on.
#[derive(Debug, Clone)]
pub struct LockNotify {
    pub session: Arc<Session>,
    pub owner: LockOwner4,
}

/// All state tables, behind one lock.
#[derive(Debug, Default)]
pub struct Tables {
    pub clients: HashMap<ClientId4, Client>,
    pub sessions: HashMap<SessionId4, Arc<Session>>,
    pub stateids: HashMap<[u8; 12], StateEntry>,
    pub opens_by_owner: HashMap<(OwnerKey, FileKey), [u8; 12]>,
    pub locks_by_owner: HashMap<(OwnerKey, FileKey), [u8; 12]>,
    pub files: HashMap<FileKey, FileState>,
    counter: u64,
    /// Distinguishes this server instance's ids from an earlier one's.
    pub epoch: u32,
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

impl Tables {
    pub fn new(epoch: u32) -> Self {
        Tables {
            epoch,
            ..Default::default()
        }
    }

    fn next(&mut self) -> u64 {
        self.counter += 1;
        self.counter
    }

    pub fn new_clientid(&mut self) -> ClientId4 {
        (self.epoch as u64) << 32 | (self.next() & 0xffff_ffff)
    }

    pub fn new_sessionid(&mut self, client: ClientId4) -> SessionId4 {
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&client.to_be_bytes());
        id[8..12].copy_from_slice(&(self.next() as u32).to_be_bytes());
        id[12..].copy_from_slice(&self.epoch.to_be_bytes());
        id
    }

    fn new_other(&mut self) -> [u8; 12] {
        let mut o = [0u8; 12];
        o[..4].copy_from_slice(&self.epoch.to_be_bytes());
        o[4..].copy_from_slice(&self.next().to_be_bytes());
        o
    }

    /// Forgets a client and everything it holds.
    pub fn purge_client(&mut self, id: ClientId4) {
        let Some(c) = self.clients.remove(&id) else {
            return;
        };
        for s in &c.sessions {
            if let Some(sess) = self.sessions.remove(s) {
                if let Ok(b) = sess.back.lock() {
                    drop(b);
                }
            }
        }
        for other in c.stateids {
            self.drop_stateid(&other);
        }
        for f in self.files.values_mut() {
            if !f.waiters.is_empty() {
                f.waiters.retain_owners(|o| o.0 != id);
            }
        }
    }

    fn drop_stateid(&mut self, other: &[u8; 12]) {
        let Some(e) = self.stateids.remove(other) else {
            return;
        };
        let owner_key = |owner: &Bytes| ((e.client, owner.clone()), e.file.clone());
        match &e.kind {
            StateKind::Open { owner, .. } => {
                self.opens_by_owner.remove(&owner_key(owner));
                if let Some(f) = self.files.get_mut(&e.file) {
                    f.opens.retain(|o| o != other);
                }
            }
            StateKind::Lock { owner, .. } => {
                self.locks_by_owner.remove(&owner_key(owner));
                if let Some(f) = self.files.get_mut(&e.file) {
                    f.locks.remove_owner(&(e.client, owner.clone()));
                }
            }
        }
        if let Some(c) = self.clients.get_mut(&e.client) {
            c.stateids.remove(other);
        }
        if self
            .files
            .get(&e.file)
            .is_some_and(|f| f.opens.is_empty() && f.locks.is_empty())
        {
            self.files.remove(&e.file);
        }
    }

    /// Removes clients whose lease ran out more than `keep` ago, and
    /// unconfirmed ones older than a lease.
    pub fn reap(&mut self, now: Duration, lease: Duration, keep: Duration) -> usize {
        let dead: Vec<ClientId4> = self
            .clients
            .values()
            .filter(|c| {
                if c.confirmed {
                    c.expired(now, lease + keep)
                } else {
                    c.expired(now, lease)
                }
            })
            .map(|c| c.id)
            .collect();
        for id in &dead {
            self.purge_client(*id);
        }
        dead.len()
    }

    fn client_expired(&self, id: ClientId4, now: Duration, lease: Duration) -> bool {
        self.clients.get(&id).is_none_or(|c| c.expired(now, lease))
    }

    /// Looks up a stateid for use on `file` (RFC 8881 §8.2.2 and §9.1.3).
    /// Special stateids are the caller's business.
    pub fn check_stateid(&self, sid: &StateId4, file: &FileKey) -> Result<&StateEntry, NfsStat4> {
        let e = self.stateids.get(&sid.other).ok_or_else(|| {
            if sid.other[..4] != self.epoch.to_be_bytes() {
                NfsStat4::Nfs4errStaleStateid
            } else {
                NfsStat4::Nfs4errBadStateid
            }
        })?;
        if &e.file != file {
            return Err(NfsStat4::Nfs4errBadStateid);
        }
        check_seqid(sid.seqid, e.seqid)?;
        Ok(e)
    }

    /// The open state a stateid (open or lock) belongs to.
    pub fn open_of<'a>(&'a self, e: &'a StateEntry) -> Option<&'a StateEntry> {
        match &e.kind {
            StateKind::Open { .. } => Some(e),
            StateKind::Lock { open, .. } => self.stateids.get(open),
        }
    }

    /// OPEN's share reservation logic (RFC 8881 §9.7): returns the open
    /// stateid, new or upgraded.
    #[allow(clippy::too_many_arguments)]
    pub fn open(
        &mut self,
        client: ClientId4,
        owner: &Bytes,
        file: &FileKey,
        access: u32,
        deny: u32,
        now: Duration,
        lease: Duration,
    ) -> Result<StateId4, NfsStat4> {
        let key = ((client, owner.clone()), file.clone());
        let mine = self.opens_by_owner.get(&key).copied();
        loop {
            let conflict = self.files.get(file).and_then(|f| {
                f.opens.iter().find_map(|o| {
                    if Some(*o) == mine {
                        return None;
                    }
                    let e = self.stateids.get(o)?;
                    match e.kind {
                        StateKind::Open {
                            access: a, deny: d, ..
                        } if (access & d) != 0 || (deny & a) != 0 => Some(e.client),
                        _ => None,
                    }
                })
            });
            match conflict {
                None => break,
                Some(c) if c != client && self.client_expired(c, now, lease) => {
                    // A courtesy client's share reservation yields (§8.4.3).
                    self.purge_client(c)
                }
                Some(_) => return Err(NfsStat4::Nfs4errShareDenied),
            }
        }
        if let Some(other) = mine {
            if let Some(e) = self.stateids.get_mut(&other) {
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
        }
        let other = self.new_other();
        let e = StateEntry {
            client,
            seqid: 1,
            file: file.clone(),
            kind: StateKind::Open {
                owner: owner.clone(),
                access,
                deny,
            },
        };
        let sid = self.insert_state(other, e);
        self.opens_by_owner.insert(key, other);
        self.files
            .entry(file.clone())
            .or_default()
            .opens
            .push(other);
        Ok(sid)
    }

    /// Records a new stateid and lists it under its client.
    fn insert_state(&mut self, other: [u8; 12], e: StateEntry) -> StateId4 {
        let sid = e.stateid(other);
        if let Some(c) = self.clients.get_mut(&e.client) {
            c.stateids.insert(other);
        }
        self.stateids.insert(other, e);
        sid
    }

    /// OPEN_DOWNGRADE (RFC 8881 §18.18).
    pub fn downgrade(
        &mut self,
        sid: &StateId4,
        file: &FileKey,
        access: u32,
        deny: u32,
    ) -> Result<StateId4, NfsStat4> {
        self.check_stateid(sid, file)?;
        let e = self
            .stateids
            .get_mut(&sid.other)
            .ok_or(NfsStat4::Nfs4errBadStateid)?;
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

    /// CLOSE (RFC 8881 §18.2): fails with LOCKS_HELD while a lock owner of
    /// this open still holds locks.
    pub fn close(&mut self, sid: &StateId4, file: &FileKey) -> Result<(), NfsStat4> {
        let e = self.check_stateid(sid, file)?;
        let StateKind::Open { .. } = e.kind else {
            return Err(NfsStat4::Nfs4errBadStateid);
        };
        let locks: Vec<[u8; 12]> = self.lock_states_of(&sid.other);
        let held = locks.iter().any(|l| {
            self.stateids.get(l).is_some_and(|le| match &le.kind {
                StateKind::Lock { owner, .. } => self
                    .files
                    .get(&le.file)
                    .is_some_and(|f| f.locks.holds_any(&(le.client, owner.clone()))),
                _ => false,
            })
        });
        if held {
            return Err(NfsStat4::Nfs4errLocksHeld);
        }
        for l in locks {
            self.drop_stateid(&l);
        }
        self.drop_stateid(&sid.other);
        Ok(())
    }

    fn lock_states_of(&self, open: &[u8; 12]) -> Vec<[u8; 12]> {
        self.stateids
            .iter()
            .filter(|(_, e)| matches!(&e.kind, StateKind::Lock { open: o, .. } if o == open))
            .map(|(k, _)| *k)
            .collect()
    }

    /// FREE_STATEID (RFC 8881 §18.38).
    pub fn free_stateid(&mut self, sid: &StateId4) -> Result<(), NfsStat4> {
        let e = self
            .stateids
            .get(&sid.other)
            .ok_or(NfsStat4::Nfs4errBadStateid)?;
        match &e.kind {
            StateKind::Open { .. } => Err(NfsStat4::Nfs4errLocksHeld),
            StateKind::Lock { owner, .. } => {
                let key = (e.client, owner.clone());
                if self
                    .files
                    .get(&e.file)
                    .is_some_and(|f| f.locks.holds_any(&key))
                {
                    return Err(NfsStat4::Nfs4errLocksHeld);
                }
                self.drop_stateid(&sid.other);
                Ok(())
            }
        }
    }

    /// TEST_STATEID's verdict on one stateid (RFC 8881 §18.48).
    pub fn test_stateid(&self, sid: &StateId4) -> NfsStat4 {
        match self.stateids.get(&sid.other) {
            None if sid.other[..4] != self.epoch.to_be_bytes() => NfsStat4::Nfs4errStaleStateid,
            None => NfsStat4::Nfs4errBadStateid,
            Some(e) => match check_seqid(sid.seqid, e.seqid) {
                Ok(()) => NfsStat4::Nfs4Ok,
                Err(s) => s,
            },
        }
    }

    /// LOCK (RFC 8881 §18.10) for a lock owner, given the open or lock
    /// stateid it presented. Returns the lock stateid.
    #[allow(clippy::too_many_arguments)]
    pub fn lock(
        &mut self,
        client: ClientId4,
        owner: Option<&Bytes>,
        presented: &StateId4,
        file: &FileKey,
        start: u64,
        end: u64,
        kind: LockKind,
        blocking: bool,
        now: Duration,
        lease: Duration,
    ) -> Result<StateId4, LockError> {
        let e = self.check_stateid(presented, file)?.clone();
        let (open, owner) = match (&e.kind, owner) {
            (StateKind::Open { .. }, Some(owner)) => (presented.other, owner.clone()),
            (StateKind::Lock { owner, open }, None) => (*open, owner.clone()),
            _ => return Err(LockError::Status(NfsStat4::Nfs4errBadStateid)),
        };
        if e.client != client {
            return Err(LockError::Status(NfsStat4::Nfs4errBadStateid));
        }
        let okey: OwnerKey = (client, owner.clone());
        loop {
            let fs = self.files.entry(file.clone()).or_default();
            fs.waiters.expire(now, lease);
            // §9.6: a queued blocking request goes first, unless the owner
            // only re-locks what it already holds.
            let ahead = fs
                .waiters
                .ahead(&okey, start, end, kind)
                .filter(|_| !fs.locks.covers(&okey, start, end))
                .cloned();
            let denied = match ahead {
                Some(w) => {
                    if self.client_expired(w.owner.0, now, lease) {
                        if let Some(fs) = self.files.get_mut(file) {
                            fs.waiters.remove(&w.owner);
                        }
                        continue;
                    }
                    // Report a held lock in the way if there is one.
                    let held = self
                        .files
                        .get(file)
                        .and_then(|f| f.locks.test(&okey, start, end, kind));
                    held.unwrap_or(Held {
                        owner: w.owner,
                        start: w.start,
                        end: w.end,
                        kind: w.kind,
                    })
                }
                None => match fs.locks.lock(&okey, start, end, kind) {
                    Ok(()) => {
                        fs.waiters.remove(&okey);
                        break;
                    }
                    Err(h) if h.owner.0 != client && self.client_expired(h.owner.0, now, lease) => {
                        self.purge_client(h.owner.0);
                        continue;
                    }
                    Err(h) => h,
                },
            };
            if blocking {
                if let Some(fs) = self.files.get_mut(file) {
                    fs.waiters.wait(&okey, start, end, kind, now);
                }
            }
            return Err(LockError::Denied(denied));
        }
        let key = (okey, file.clone());
        if let Some(other) = self.locks_by_owner.get(&key).copied() {
            if let Some(le) = self.stateids.get_mut(&other) {
                le.seqid = next_seqid(le.seqid);
                return Ok(le.stateid(other));
            }
        }
        let other = self.new_other();
        let le = StateEntry {
            client,
            seqid: 1,
            file: file.clone(),
            kind: StateKind::Lock { owner, open },
        };
        let sid = self.insert_state(other, le);
        self.locks_by_owner.insert(key, other);
        Ok(sid)
    }

    /// LOCKU (RFC 8881 §18.12).
    pub fn unlock(
        &mut self,
        sid: &StateId4,
        file: &FileKey,
        start: u64,
        end: u64,
    ) -> Result<StateId4, NfsStat4> {
        let e = self.check_stateid(sid, file)?;
        let StateKind::Lock { owner, .. } = &e.kind else {
            return Err(NfsStat4::Nfs4errBadStateid);
        };
        let okey = (e.client, owner.clone());
        if let Some(f) = self.files.get_mut(file) {
            f.locks.unlock(&okey, start, end);
        }
        let e = self
            .stateids
            .get_mut(&sid.other)
            .ok_or(NfsStat4::Nfs4errBadStateid)?;
        e.seqid = next_seqid(e.seqid);
        Ok(e.stateid(sid.other))
    }

    /// The waiters on `file` an unlock made grantable, each with a session
    /// of its client to send CB_NOTIFY_LOCK on (RFC 8881 §20.11); each is
    /// returned once until it asks again.
    pub fn lock_notifications(
        &mut self,
        file: &FileKey,
        now: Duration,
        lease: Duration,
    ) -> Vec<LockNotify> {
        let Some(fs) = self.files.get_mut(file) else {
            return Vec::new();
        };
        if fs.waiters.is_empty() {
            return Vec::new();
        }
        fs.waiters.expire(now, lease);
        let ready = fs.waiters.grantable(&fs.locks);
        ready
            .into_iter()
            .filter_map(|w| {
                let c = self.clients.get(&w.owner.0)?;
                let session = c
                    .sessions
                    .iter()
                    .filter_map(|id| self.sessions.get(id))
                    .find(|s| !s.cb_down.load(std::sync::atomic::Ordering::Relaxed))?
                    .clone();
                Some(LockNotify {
                    session,
                    owner: LockOwner4 {
                        clientid: w.owner.0,
                        owner: w.owner.1,
                    },
                })
            })
            .collect()
    }

    /// LOCKT (RFC 8881 §18.11).
    #[allow(clippy::too_many_arguments)]
    pub fn test_lock(
        &mut self,
        owner: &OwnerKey,
        file: &FileKey,
        start: u64,
        end: u64,
        kind: LockKind,
        now: Duration,
        lease: Duration,
    ) -> Option<Held<OwnerKey>> {
        loop {
            let h = self.files.get(file)?.locks.test(owner, start, end, kind)?;
            if h.owner.0 != owner.0 && self.client_expired(h.owner.0, now, lease) {
                self.purge_client(h.owner.0);
                continue;
            }
            return Some(h);
        }
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
        let anon = sid.other == [0; 12];
        let bypass = sid.other == [0xff; 12];
        if anon || bypass {
            if (anon && sid.seqid != 0) || (bypass && sid.seqid != u32::MAX) {
                return Err(NfsStat4::Nfs4errBadStateid);
            }
            let read_bypass = bypass && access == OPEN4_SHARE_ACCESS_READ;
            if !read_bypass && self.denied_by_share(file, access) {
                return Err(NfsStat4::Nfs4errLocked);
            }
            return Ok(true);
        }
        let e = self.check_stateid(sid, file)?;
        if e.client != client {
            return Err(NfsStat4::Nfs4errBadStateid);
        }
        let open = self.open_of(e).ok_or(NfsStat4::Nfs4errBadStateid)?;
        if let StateKind::Open { access: a, .. } = open.kind {
            if access == OPEN4_SHARE_ACCESS_WRITE && a & OPEN4_SHARE_ACCESS_WRITE == 0 {
                return Err(NfsStat4::Nfs4errOpenmode);
            }
        }
        Ok(false)
    }

    /// Whether `client` has sent RECLAIM_COMPLETE (RFC 8881 §18.51).
    pub fn reclaim_complete(&self, client: ClientId4) -> Result<bool, NfsStat4> {
        self.clients
            .get(&client)
            .map(|c| c.reclaim_complete)
            .ok_or(NfsStat4::Nfs4errStaleClientid)
    }

    /// Whether an I/O without an open (anonymous stateid) would break a
    /// share reservation: `access` is OPEN4_SHARE_ACCESS_READ or _WRITE.
    pub fn denied_by_share(&self, file: &FileKey, access: u32) -> bool {
        self.files.get(file).is_some_and(|f| {
            f.opens.iter().any(|o| {
                self.stateids.get(o).is_some_and(
                    |e| matches!(e.kind, StateKind::Open { deny, .. } if deny & access != 0),
                )
            })
        })
    }
}

/// Stateid sequence numbers skip 0 when they wrap (RFC 8881 §8.2.2).
pub fn next_seqid(s: u32) -> u32 {
    match s.wrapping_add(1) {
        0 => 1,
        n => n,
    }
}

/// RFC 8881 §8.2.2: seqid 0 means "the current one".
fn check_seqid(presented: u32, current: u32) -> Result<(), NfsStat4> {
    if presented == 0 || presented == current {
        Ok(())
    } else if presented > current {
        Err(NfsStat4::Nfs4errBadStateid)
    } else {
        Err(NfsStat4::Nfs4errOldStateid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(n: u8) -> FileKey {
        (1, vfs::Handle(Bytes::copy_from_slice(&[n; 8])))
    }

    fn tables_with_clients() -> Tables {
        let mut t = Tables::new(7);
        for id in [1, 2] {
            let owner = ClientOwner4 {
                verifier: [0; 8],
                ownerid: Bytes::from(vec![id as u8]),
            };
            t.clients
                .insert(id, Client::new(id, &owner, Principal::None, Duration::ZERO));
        }
        t
    }

    const L: Duration = Duration::from_secs(10);

    #[test]
    fn share_reservations_and_upgrade() {
        let mut t = tables_with_clients();
        let o = Bytes::from_static(b"o");
        let s1 = t.open(1, &o, &file(1), 1, 2, Duration::ZERO, L).unwrap();
        assert_eq!(s1.seqid, 1);
        // deny write blocks a writer from another client
        assert_eq!(
            t.open(2, &o, &file(1), 2, 0, Duration::ZERO, L),
            Err(NfsStat4::Nfs4errShareDenied)
        );
        // and from another owner of the same client
        let o2 = Bytes::from_static(b"o2");
        assert_eq!(
            t.open(1, &o2, &file(1), 3, 0, Duration::ZERO, L),
            Err(NfsStat4::Nfs4errShareDenied)
        );
        // the same owner upgrades: same other, seqid 2
        let s2 = t.open(1, &o, &file(1), 2, 0, Duration::ZERO, L).unwrap();
        assert_eq!((s2.other, s2.seqid), (s1.other, 2));
        assert_eq!(
            t.check_stateid(&s1, &file(1)).unwrap_err(),
            NfsStat4::Nfs4errOldStateid
        );
        assert!(t
            .check_stateid(&StateId4 { seqid: 0, ..s1 }, &file(1))
            .is_ok());
        assert_eq!(
            t.check_stateid(&s2, &file(2)).unwrap_err(),
            NfsStat4::Nfs4errBadStateid
        );
        // an expired holder yields
        assert!(t
            .open(2, &o, &file(1), 2, 0, Duration::from_secs(11), L)
            .is_ok());
        assert!(!t.clients.contains_key(&1));
        assert_eq!(
            t.check_stateid(&s2, &file(1)).unwrap_err(),
            NfsStat4::Nfs4errBadStateid
        );
    }

    #[test]
    fn locks_and_close() {
        let mut t = tables_with_clients();
        let o = Bytes::from_static(b"o");
        let lo = Bytes::from_static(b"lo");
        let open = t.open(1, &o, &file(1), 3, 0, Duration::ZERO, L).unwrap();
        let ls = t
            .lock(
                1,
                Some(&lo),
                &open,
                &file(1),
                0,
                u64::MAX,
                LockKind::Write,
                false,
                Duration::ZERO,
                L,
            )
            .unwrap();
        assert_eq!(ls.seqid, 1);
        let open2 = t.open(2, &o, &file(1), 3, 0, Duration::ZERO, L).unwrap();
        match t.lock(
            2,
            Some(&lo),
            &open2,
            &file(1),
            10,
            20,
            LockKind::Read,
            false,
            Duration::ZERO,
            L,
        ) {
            Err(LockError::Denied(h)) => assert_eq!(h.owner, (1, lo.clone())),
            other => panic!("{other:?}"),
        }
        assert_eq!(t.close(&open, &file(1)), Err(NfsStat4::Nfs4errLocksHeld));
        assert_eq!(t.free_stateid(&ls), Err(NfsStat4::Nfs4errLocksHeld));
        let ls2 = t.unlock(&ls, &file(1), 0, u64::MAX).unwrap();
        assert_eq!(ls2.seqid, 2);
        assert!(t.close(&open, &file(1)).is_ok());
        assert_eq!(t.test_stateid(&ls2), NfsStat4::Nfs4errBadStateid);
        // client 2 can lock now; its lease has expired by t=11 but it is the requester
        assert!(t
            .lock(
                2,
                Some(&lo),
                &open2,
                &file(1),
                10,
                20,
                LockKind::Read,
                false,
                Duration::from_secs(11),
                L
            )
            .is_ok());
    }

    #[test]
    fn blocking_lock_waiters_go_first_until_stale() {
        let mut t = tables_with_clients();
        let owner = ClientOwner4 {
            verifier: [0; 8],
            ownerid: Bytes::from_static(b"3"),
        };
        t.clients
            .insert(3, Client::new(3, &owner, Principal::None, Duration::ZERO));
        let renew = |t: &mut Tables, now: Duration| {
            for c in t.clients.values_mut() {
                c.last_renew = now;
            }
        };
        let s = Duration::from_secs;
        let o = Bytes::from_static(b"o");
        let lo = Bytes::from_static(b"lo");
        let f = file(1);
        let opens: Vec<StateId4> = (1..=3)
            .map(|c| t.open(c, &o, &f, 3, 0, s(0), L).unwrap())
            .collect();
        let lock = |t: &mut Tables, c: u64, sid: &StateId4, start, end, blocking, now| {
            t.lock(
                c,
                Some(&lo),
                sid,
                &f,
                start,
                end,
                LockKind::Write,
                blocking,
                now,
                L,
            )
        };
        let denied_by = |r: Result<StateId4, LockError>| match r {
            Err(LockError::Denied(h)) => h.owner.0,
            other => panic!("{other:?}"),
        };
        let l1 = lock(&mut t, 1, &opens[0], 0, 100, false, s(0)).unwrap();
        // Client 2 blocks and is queued; client 3 (not blocking) is not.
        assert_eq!(denied_by(lock(&mut t, 2, &opens[1], 0, 100, true, s(1))), 1);
        assert_eq!(
            denied_by(lock(&mut t, 3, &opens[2], 50, 60, false, s(1))),
            1
        );
        assert_eq!(t.files[&f].waiters.len(), 1);
        // The holder may still re-lock (downgrade) what it holds.
        let l1 = t
            .lock(1, None, &l1, &f, 0, 100, LockKind::Read, false, s(1), L)
            .unwrap();
        // Client 1 unlocks: client 2 is told (once); client 3 may not jump
        // the queue, except outside the waiter's range.
        t.unlock(&l1, &f, 0, 100).unwrap();
        let _ = t.lock_notifications(&f, s(2), L);
        assert!(t.files[&f].waiters.iter().all(|w| w.notified));
        assert_eq!(
            denied_by(lock(&mut t, 3, &opens[2], 50, 60, false, s(2))),
            2
        );
        assert!(lock(&mut t, 3, &opens[2], 200, 300, false, s(2)).is_ok());
        // The waiter's retry is granted and leaves the queue.
        let l2 = lock(&mut t, 2, &opens[1], 0, 100, true, s(3)).unwrap();
        assert!(t.files[&f].waiters.is_empty());
        // Client 3 now waits (blocking) behind client 2's lock...
        assert_eq!(denied_by(lock(&mut t, 3, &opens[2], 0, 10, true, s(4))), 2);
        t.unlock(&l2, &f, 0, 100).unwrap();
        // ...so client 1 cannot take [0, 10) while 3's entry is fresh...
        renew(&mut t, s(13));
        assert_eq!(denied_by(lock(&mut t, 1, &opens[0], 5, 6, false, s(13))), 3);
        // ...but can once 3 has not retried for more than a lease.
        renew(&mut t, s(15));
        assert!(lock(&mut t, 1, &opens[0], 5, 6, false, s(15)).is_ok());
        assert!(t.files[&f].waiters.is_empty());
        // A waiter whose client is purged goes with it.
        assert_eq!(denied_by(lock(&mut t, 2, &opens[1], 0, 10, true, s(16))), 1);
        t.purge_client(2);
        assert!(t.files[&f].waiters.is_empty());
    }

    #[test]
    fn io_stateids() {
        let mut t = tables_with_clients();
        let o = Bytes::from_static(b"o");
        const R: u32 = OPEN4_SHARE_ACCESS_READ;
        const W: u32 = OPEN4_SHARE_ACCESS_WRITE;
        // anonymous I/O is fine until someone denies it
        assert_eq!(t.check_io(1, &StateId4::ANONYMOUS, &file(1), W), Ok(true));
        let ro = t
            .open(
                1,
                &o,
                &file(1),
                R,
                OPEN4_SHARE_DENY_WRITE,
                Duration::ZERO,
                L,
            )
            .unwrap();
        assert_eq!(
            t.check_io(2, &StateId4::ANONYMOUS, &file(1), W),
            Err(NfsStat4::Nfs4errLocked)
        );
        assert_eq!(t.check_io(2, &StateId4::ANONYMOUS, &file(1), R), Ok(true));
        assert_eq!(
            t.check_io(2, &StateId4::BYPASS, &file(1), W),
            Err(NfsStat4::Nfs4errLocked)
        );
        // malformed special stateids
        let bad = StateId4 {
            seqid: 5,
            ..StateId4::ANONYMOUS
        };
        assert_eq!(
            t.check_io(1, &bad, &file(1), R),
            Err(NfsStat4::Nfs4errBadStateid)
        );
        // a read-only open may read, not write; other clients may not use it
        assert_eq!(t.check_io(1, &ro, &file(1), R), Ok(false));
        assert_eq!(
            t.check_io(1, &ro, &file(1), W),
            Err(NfsStat4::Nfs4errOpenmode)
        );
        assert_eq!(
            t.check_io(2, &ro, &file(1), R),
            Err(NfsStat4::Nfs4errBadStateid)
        );
        assert_eq!(
            t.check_io(1, &ro, &file(2), R),
            Err(NfsStat4::Nfs4errBadStateid)
        );
        // a write-only open may read too (§18.22.3 allows it)
        let wo = t.open(2, &o, &file(2), W, 0, Duration::ZERO, L).unwrap();
        assert_eq!(t.check_io(2, &wo, &file(2), R), Ok(false));
        // a lock stateid carries its open's access
        let lo = Bytes::from_static(b"lo");
        let ls = t
            .lock(
                2,
                Some(&lo),
                &wo,
                &file(2),
                0,
                10,
                LockKind::Write,
                false,
                Duration::ZERO,
                L,
            )
            .unwrap();
        assert_eq!(t.check_io(2, &ls, &file(2), W), Ok(false));
    }

    #[test]
    fn reaper() {
        let mut t = tables_with_clients();
        t.clients.get_mut(&1).unwrap().confirmed = true;
        assert_eq!(t.reap(Duration::from_secs(11), L, L), 1); // unconfirmed 2
        assert_eq!(t.reap(Duration::from_secs(21), L, L), 1);
        assert!(t.clients.is_empty());
    }
}
