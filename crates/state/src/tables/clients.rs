//! Clients in the tables (RFC 8881 §8.3, §8.4.2, §18.35, §18.36): records
//! added, confirmed and purged with everything they hold, leases and
//! courtesy, the reaper, and who may take state during the grace period.

use super::*;

impl Tables {
    /// How long a client may go without renewing before the reaper
    /// removes it: a lease if it never confirmed, else a lease and the
    /// courtesy period (RFC 8881 §8.4.3 lets a server keep an expired
    /// client's state until another client conflicts with it:
    /// `client_expired` there purges it). A client without state is kept
    /// too: its record on stable storage goes with it, and after a restart
    /// the grace period waits for every recorded client (a client that
    /// went quiet with nothing open is still one the others may be waiting
    /// on, as pynfs's reboot tests' "block" client is).
    pub(crate) fn allowance(&self, c: &Client) -> Duration {
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
            .filter(|c| c.confirmed && !crate::nlm::is_nlm(c.id) && c.expired(now, lease))
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
        principal: crate::Principal,
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
        for a in &c.aliases {
            self.aliases.remove(a);
        }
        self.lease_moved.remove(&id);
        self.dead_sessions.extend(c.sessions.iter().copied());
        if c.reclaim_complete || c.v40.as_ref().is_some_and(|v| v.recorded) {
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
                StateKind::Lock { owner, .. } => {
                    f.locks.remove_owner(&(id, owner.clone()));
                    if let Some(port) = &self.shared {
                        port.0.release(&(id, owner.clone()), &e.file);
                    }
                }
                StateKind::Deleg { revoked, .. } => {
                    if !revoked {
                        self.unlist_deleg(&e.file, other);
                    }
                    self.recalls.remove(other);
                }
                StateKind::Layout(l) => {
                    if f.layouts.remove(other) {
                        self.layouts -= 1;
                    }
                    self.layout_recalls.remove(other);
                    if !l.segs.is_empty() {
                        self.layouts_lost.push(crate::layouts::LayoutLost {
                            file: e.file.clone(),
                            client: id,
                            rw: l.has_rw(),
                        });
                    }
                }
            }
        }
        self.layout_clients.remove(&id);
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
        if !self.reserved.is_empty() {
            let held: Vec<(FileKey, OwnerKey)> = self
                .reserved
                .keys()
                .filter(|(_, o)| o.0 == id)
                .cloned()
                .collect();
            for (file, owner) in held {
                self.release_shared(&owner, &file);
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
            let lease_end = c.lease.last().saturating_add(lease);
            // A client holding locks shared with local processes has no
            // courtesy: once its lease ends they must stop blocking them
            // (`crate::shared`).
            let deadline = if self.holds_shared_locks(c) {
                lease_end
            } else {
                c.lease.last().saturating_add(self.allowance(c))
            };
            if deadline < now {
                // Taken off the queue already; purge_client's removal
                // of it is then a no-op.
                self.purge_client(id);
                n += 1;
            } else if let Some(c) = self.clients.get_mut(&id) {
                // While locks are shared, looked at every lease: it may
                // take some before its courtesy is over.
                let next = if self.shared.is_some() {
                    let look = if lease_end > now {
                        lease_end
                    } else {
                        now.saturating_add(lease)
                    };
                    deadline.min(look)
                } else {
                    deadline
                };
                c.deadline = next;
                self.expiry.insert(next, id);
            }
        }
        n
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
        if c.v40.is_some() {
            // NFSv4.0 has no RECLAIM_COMPLETE (RFC 7530 §9.6.2): a
            // recorded client reclaims while the grace period lasts, and
            // no client takes new state before it ends.
            return match (reclaim, self.grace.active()) {
                (true, true) if self.grace.recorded(&c.owner) => {
                    self.grace.note_progress(now);
                    Ok(())
                }
                (true, _) => Err(NfsStat4::Nfs4errNoGrace),
                (false, true) => Err(NfsStat4::Nfs4errGrace),
                (false, false) => Ok(()),
            };
        }
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
}
