//! [`State`]'s transitions of delegations, of files and directories (RFC
//! 8881 §10.2, §10.4, §10.9, §18.39, §18.6): grants, conflicts and the
//! recalls they make due, CB_GETATTR's bookkeeping, directory
//! notifications, CB_RECALL_ANY, revocation and DELEGRETURN.

use super::*;

impl State {
    /// Grants `client` (OPEN by its open owner `owner`) a read delegation
    /// of `file` (RFC 8881 §10.2), `fh`
    /// being the file's filehandle as the client has it; else why not.
    /// With `times`, the file's timestamps are delegated too (RFC 9754
    /// §5), these being the file's times now.
    pub fn offer_delegation(
        &self,
        asker: &OwnerKey,
        file: &FileKey,
        fh: Bytes,
        (write, reclaim): (bool, bool),
        times: Option<DelegTimes>,
    ) -> Result<StateId4, WhyNoDelegation4> {
        let (client, owner) = asker;
        self.with(|t, now| t.grant_deleg(*client, owner, file, fh, (write, reclaim), times, now))
    }

    /// The delegated timestamps of `client`'s delegation `sid` of `file`
    /// ([`Tables::deleg_times`]): whether it is a write delegation, and
    /// the times it was granted at.
    pub fn delegated_times(
        &self,
        client: ClientId4,
        sid: &StateId4,
        file: &FileKey,
    ) -> Result<(bool, DelegTimes), NfsStat4> {
        self.tables().deleg_times(client, sid, file)
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
        let (cid, stateid, fh, seen, timestamps) = t.write_deleg(file)?;
        let sessions = self.sessions.read().unwrap_or_else(|p| p.into_inner());
        Some(WriteDeleg {
            holder: cid,
            session: callable_session(&t, &sessions, cid),
            stateid,
            fh: NfsFh4(fh),
            seen,
            timestamps,
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
    pub(crate) fn breaking(
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
    pub(crate) fn recalls_of(
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

    /// An NFSv4.0 holder's callback path failed while `stateid` was
    /// being recalled (the CB_RECALL went unanswered or could not be
    /// sent): the holder learns it from RENEW (NFS4ERR_CB_PATH_DOWN, RFC
    /// 7530 §16.29) and may then return the delegation, so the lease
    /// before it is revoked counts from now, not from the recall.
    pub fn recall_unanswered40(&self, stateid: &StateId4) -> bool {
        self.with(|t, now| t.recall_clock_restart(&stateid.other, now))
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

    /// The file of `client`'s delegation `sid`, if it holds it.
    pub fn delegation_file(&self, client: ClientId4, sid: &StateId4) -> Option<FileKey> {
        let t = self.tables();
        match t.entry(&sid.other) {
            Ok((cid, e))
                if cid == client && matches!(e.kind, crate::stateid::StateKind::Deleg { .. }) =>
            {
                Some(e.file.clone())
            }
            _ => None,
        }
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
}
