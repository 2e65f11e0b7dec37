//! Byte-range locks in the tables (RFC 8881 §9.4, §9.6, §18.10 to §18.12):
//! lock stateids, conflicts (a courtesy client's locks yield), blocking
//! waiters, and the stateid checks of I/O (§8.2.3, §9.1.2).

use super::*;
use crate::shared::Shared;

impl Tables {
    /// LOCK (RFC 8881 §18.10); returns the lock stateid.
    pub fn lock(&mut self, r: &LockRequest, now: Duration) -> Result<StateId4, LockError> {
        let client = r.client;
        let file = &r.file;
        self.thawed(file)?;
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
        let writable =
            if let Some(StateKind::Open { access, .. }) = c.states.get(&open).map(|o| &o.kind) {
                let need = match r.kind {
                    LockKind::Read => OPEN4_SHARE_ACCESS_READ,
                    LockKind::Write => OPEN4_SHARE_ACCESS_WRITE,
                };
                if access & need == 0 {
                    return Err(NfsStat4::Nfs4errOpenmode.into());
                }
                access & OPEN4_SHARE_ACCESS_WRITE != 0
            } else {
                return Err(NfsStat4::Nfs4errBadStateid.into());
            };
        let okey: OwnerKey = (client, owner.clone());
        match self.take_lock(
            &okey,
            file,
            (r.start, r.end),
            r.kind,
            r.blocking,
            writable,
            now,
        ) {
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
            Err(LockError::Denied(denied)) => {
                if r.blocking {
                    if let Some(c) = self.clients.get_mut(&client) {
                        c.waiting_on.insert(file.clone(), r.fh.clone());
                    }
                }
                return Err(LockError::Denied(denied));
            }
            Err(e) => return Err(e),
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
        self.thawed(file)?;
        let e = self.check_stateid(client, sid, file)?;
        let StateKind::Lock { owner, .. } = &e.kind else {
            return Err(NfsStat4::Nfs4errBadStateid);
        };
        let okey = (client, owner.clone());
        if let Some(f) = self.files.get_mut(file) {
            f.locks.unlock(&okey, start, end);
        }
        self.share_unlock(&okey, file, (start, end));
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
                .get(file)
                .and_then(|f| f.locks.test(owner, range.0, range.1, kind));
            let Some(h) = h else {
                // A local process's lock (`crate::shared`).
                let port = self.shared.as_ref()?;
                return port.0.test(owner, file, range, kind).map(|l| l.held());
            };
            if h.owner.0 != owner.0 && self.client_expired(h.owner.0, now) {
                self.purge_client(h.owner.0);
                continue;
            }
            return Some(h);
        }
    }

    /// See [`crate::State::check_io`].
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
            // Not for I/O through the metadata server (RFC 8881 §12.5.3).
            StateKind::Layout(_) => return Err(NfsStat4::Nfs4errBadStateid),
        };
        if access == OPEN4_SHARE_ACCESS_WRITE && open & OPEN4_SHARE_ACCESS_WRITE == 0 {
            return Err(NfsStat4::Nfs4errOpenmode);
        }
        Ok(false)
    }

    /// Takes `[start, end)` of `kind` on `file` for `owner` (NFSv4 LOCK and
    /// NLM LOCK alike) unless another owner's lock is in the way, or a
    /// waiter queued ahead of it (RFC 8881 §9.6; not when the owner holds
    /// the whole range already), or, when locks are shared with local
    /// processes, a local lock (`crate::shared`; `writable`: the owner's
    /// open may write). Expired NFSv4 clients in the way yield. When
    /// denied, the owner is queued if it `block`s, and the lock in the way
    /// (else the waiter's request) is returned; NFS4ERR_DELAY when the
    /// kernel's lock cannot be asked for now.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn take_lock(
        &mut self,
        owner: &OwnerKey,
        file: &FileKey,
        (start, end): (u64, u64),
        kind: LockKind,
        block: bool,
        writable: bool,
        now: Duration,
    ) -> Result<(), LockError> {
        let lease = self.lease;
        loop {
            let fs = self.files.entry(file.clone()).or_default();
            fs.waiters.expire(now, |o| crate::nlm::wait_limit(o, lease));
            // Ranges held for waiters gone from the queue go too.
            self.drop_stale_reservations(file, owner);
            let fs = self.files.entry(file.clone()).or_default();
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
                None => match fs.locks.test(owner, start, end, kind) {
                    Some(h) if h.owner.0 != owner.0 && self.client_expired(h.owner.0, now) => {
                        self.purge_client(h.owner.0);
                        continue;
                    }
                    Some(h) => h,
                    None => match self.share_take(owner, file, (start, end), kind, writable) {
                        Shared::Taken => {
                            let fs = self.files.entry(file.clone()).or_default();
                            // No other owner conflicts (tested above).
                            let _ = fs.locks.lock(owner, start, end, kind);
                            fs.waiters.remove(owner);
                            if fs.waiters.is_empty() {
                                self.shared_waits.remove(file);
                            }
                            if self.reserved.contains_key(&(file.clone(), owner.clone())) {
                                self.unreserve(owner, file);
                            }
                            return Ok(());
                        }
                        Shared::Local(l) => {
                            if block {
                                self.shared_waits.insert(file.clone());
                            }
                            l.held()
                        }
                        Shared::Busy | Shared::Reopen => {
                            return Err(NfsStat4::Nfs4errDelay.into());
                        }
                    },
                },
            };
            if block {
                if let Some(fs) = self.files.get_mut(file) {
                    fs.waiters.wait(owner, start, end, kind, now);
                }
            }
            return Err(LockError::Denied(denied));
        }
    }
}
