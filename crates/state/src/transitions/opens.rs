//! [`State`]'s transitions of opens and byte-range locks (RFC 8881 §9,
//! §18.2, §18.10 to §18.12, §18.16, §18.18, §18.38, §18.48): share
//! reservations, locks and the CB_NOTIFY_LOCKs an unlock makes due, the
//! stateid checks of I/O.

use super::*;

impl State {
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

    /// Whether OPEN would be NFS4ERR_SHARE_DENIED whatever delegations
    /// are recalled (the share reservations of live clients, RFC 8881
    /// §9.7): checked before a recall, which would gain nothing.
    pub fn share_denied(&self, client: ClientId4, file: &FileKey, access: u32, deny: u32) -> bool {
        self.with(|t, now| t.share_denied(client, file, access, deny, now))
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

    /// Whether any client holds state on `file`: an open, a lock, a
    /// waiter, a delegation, a layout or an NLM share. A file removed
    /// while held stays reachable for its holders (RFC 8881 §18.16.3,
    /// OPEN4_RESULT_PRESERVE_UNLINKED).
    pub fn file_held(&self, file: &FileKey) -> bool {
        self.with(|t, _| t.files.contains_key(file))
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
    pub(crate) fn lock_notes(
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

    /// Shares byte-range locks with local processes through `port`
    /// (`crate::shared`): every lock granted from now on is the kernel's
    /// too.
    pub fn share_locks(&self, port: Arc<dyn crate::shared::SharedLocks>) {
        self.tables().shared = Some(tables::SharedPort(port));
    }

    /// Whether waiters a local lock may block, or ranges held for
    /// waiters, are there for [`State::poll_shared`] to look at.
    pub fn shared_waiters(&self) -> bool {
        self.shared_live.load(Ordering::Relaxed) > 0
    }

    /// Looks again at the waiters local locks may block (a local unlock
    /// is silent, `crate::shared`): NLM ones now free are granted (the
    /// `on_nlm_granted` hook), NFSv4 ones get the range held for them and
    /// are returned to be told (CB_NOTIFY_LOCK).
    pub fn poll_shared(&self) -> Vec<LockNotify> {
        self.with(|t, now| {
            let ready = t.poll_shared(now);
            ready
                .into_iter()
                .flat_map(|(file, w)| self.lock_notes(t, &file, w))
                .collect()
        })
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

    /// FREE_STATEID (RFC 8881 §18.38).
    pub fn free_stateid(&self, client: ClientId4, sid: &StateId4) -> Result<(), NfsStat4> {
        self.with(|t, _| t.free_stateid(client, sid))
    }

    /// TEST_STATEID (RFC 8881 §18.48): one status per stateid.
    pub fn test_stateids(&self, client: ClientId4, sids: &[StateId4]) -> Vec<NfsStat4> {
        let t = self.tables();
        sids.iter().map(|s| t.test_stateid(client, s)).collect()
    }
}
