//! Opens in the tables: share reservations and their stateids (RFC 8881
//! §9.7, §18.16, §18.18, §18.2), FREE_STATEID and TEST_STATEID (§18.38,
//! §18.48).

use super::*;

impl Tables {
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
        self.thawed(file)?;
        let key = (owner.clone(), file.clone());
        let mine = self
            .clients
            .get(&client)
            .ok_or(NfsStat4::Nfs4errStaleClientid)?
            .opens_by_owner
            .get(&key)
            .copied();
        loop {
            let conflict = self.share_conflicts(file, access, deny).next();
            if conflict.is_none() && self.nlm_share_conflict(file, access, deny) {
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
                access: a,
                deny: d,
                modes,
                ..
            } = &mut e.kind
            {
                *a |= access;
                *d |= deny;
                modes.add(access, deny);
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
                    modes: crate::stateid::Modes::of(access, deny),
                    locks: Vec::new(),
                },
            },
        )
    }

    /// The clients of the opens on `file` whose share reservations
    /// conflict with `access` and `deny` (RFC 8881 §9.7). The asking
    /// owner's own open counts too: an upgrade may not break the deny it
    /// holds (RFC 7530 §9.9).
    fn share_conflicts<'a>(
        &'a self,
        file: &FileKey,
        access: u32,
        deny: u32,
    ) -> impl Iterator<Item = ClientId4> + 'a {
        self.files
            .get(file)
            .into_iter()
            .flat_map(|f| f.opens.iter())
            .filter_map(move |o| {
                let (cid, e) = self.entry(o).ok()?;
                match e.kind {
                    StateKind::Open {
                        access: a, deny: d, ..
                    } if (access & d) != 0 || (deny & a) != 0 => Some(cid),
                    _ => None,
                }
            })
    }

    /// Whether an NLM share (NLM4_SHARE) on `file` conflicts.
    fn nlm_share_conflict(&self, file: &FileKey, access: u32, deny: u32) -> bool {
        self.files.get(file).is_some_and(|f| {
            f.nlm_shares
                .iter()
                .any(|(_, a, d)| (access & d) != 0 || (deny & a) != 0)
        })
    }

    /// Whether an OPEN of `file` by `client` with `access` and `deny`
    /// would be NFS4ERR_SHARE_DENIED whatever delegations are recalled:
    /// a share reservation of a live client, or the client's own, or an
    /// NLM share conflicts (a courtesy client's would yield). Such an
    /// OPEN is refused without a recall (pynfs DELEG8).
    pub fn share_denied(
        &self,
        client: ClientId4,
        file: &FileKey,
        access: u32,
        deny: u32,
        now: Duration,
    ) -> bool {
        self.nlm_share_conflict(file, access, deny)
            || self
                .share_conflicts(file, access, deny)
                .any(|c| c == client || !self.client_expired(c, now))
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
        self.thawed(file)?;
        self.check_stateid(client, sid, file)?;
        let e = self.entry_mut(client, &sid.other)?;
        let StateKind::Open {
            access: a,
            deny: d,
            modes,
            ..
        } = &mut e.kind
        else {
            return Err(NfsStat4::Nfs4errBadStateid);
        };
        if access & !*a != 0 || deny & !*d != 0 || access == 0 || !modes.downgrade(access, deny) {
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
        self.thawed(file)?;
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
            // A layout stateid is freed by returning its layouts (§12.5.3).
            StateKind::Layout(l) if !l.segs.is_empty() => Err(NfsStat4::Nfs4errLocksHeld),
            StateKind::Layout(_) => {
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
        if crate::stateid::is_special(&sid.other) {
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
}
