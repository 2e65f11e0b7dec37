//! File delegations in the tables (RFC 8881 §10.2, §10.4): grants and
//! refusals, conflicts and recalls, those kept across a client's restart
//! (§10.2.1), CB_GETATTR's bookkeeping (§10.4.3), CB_RECALL_ANY (§20.6),
//! revocation and DELEGRETURN.

use super::*;

impl Tables {
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
        (write, reclaim): (bool, bool),
        times: Option<DelegTimes>,
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
                    times,
                },
            },
        )
        .map_err(|_| WhyNoDelegation4::Wnd4Resource)
    }

    /// The delegated timestamps of `client`'s delegation `sid` of `file`
    /// (RFC 9754 §5): whether it is a write delegation, and the times it
    /// was granted at. NFS4ERR_BAD_STATEID for any other stateid, as the
    /// Linux server answers a SETATTR of delegated times without one.
    pub fn deleg_times(
        &self,
        client: ClientId4,
        sid: &StateId4,
        file: &FileKey,
    ) -> Result<(bool, DelegTimes), NfsStat4> {
        let e = self.check_stateid(client, sid, file)?;
        match &e.kind {
            StateKind::Deleg {
                write,
                times: Some(t),
                revoked: false,
                dir: None,
                ..
            } => Ok((*write, *t)),
            _ => Err(NfsStat4::Nfs4errBadStateid),
        }
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
        if self.no_grants.contains(&file.0) {
            return Some(WhyNoDelegation4::Wnd4Resource);
        }
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
            || f.locks.any_owner(|o| crate::nlm::is_nlm(o.0))
            || f.waiters.iter().any(|w| crate::nlm::is_nlm(w.owner.0))
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
    pub(crate) fn io_owner(&self, client: ClientId4, sid: &StateId4) -> Option<Bytes> {
        let (cid, e) = self.entry(&sid.other).ok()?;
        if cid != client {
            return None;
        }
        match &e.kind {
            StateKind::Open { owner, .. } | StateKind::Deleg { owner, .. } => Some(owner.clone()),
            StateKind::Lock { open, .. } => self.entry(open).ok()?.1.owner().cloned(),
            StateKind::Layout(_) => None,
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
            // Only the owner's own: another owner of the same client may
            // be another mount of it (nosharecache), with a cache of its
            // own that the delegation's holder does not see (it would
            // keep locking in its cache while the other locks at the
            // server).
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
    pub(crate) fn forget_prev(&mut self, file: &FileKey, reads: bool, spare: Option<&Bytes>) {
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
    pub(crate) fn recall_conflicting(
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
    pub(crate) fn mark_recalled(
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
    #[allow(clippy::type_complexity)]
    pub fn write_deleg(
        &self,
        file: &FileKey,
    ) -> Option<(ClientId4, StateId4, Bytes, Option<CbSeen>, bool)> {
        let o = self.files.get(file)?.wdeleg?;
        let (cid, e) = self.entry(&o).ok()?;
        match &e.kind {
            StateKind::Deleg {
                fh, seen, times, ..
            } => Some((cid, e.stateid(o), fh.clone(), *seen, times.is_some())),
            _ => None,
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

    /// Restarts the revocation clock of the delegation being recalled
    /// whose stateid's `other` is `other`: revoked a lease after `now`,
    /// not after the recall. Whether it was being recalled.
    pub fn recall_clock_restart(&mut self, other: &[u8; 12], now: Duration) -> bool {
        match self.recalls.get_mut(other) {
            Some(r) => {
                r.1 = now;
                true
            }
            None => false,
        }
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
    pub(crate) fn unlist_deleg(&mut self, file: &FileKey, other: &[u8; 12]) -> bool {
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
}
