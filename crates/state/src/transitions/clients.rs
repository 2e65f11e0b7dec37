//! [`State`]'s transitions of clients and sessions (RFC 8881 §18.35 to
//! §18.37, §18.50, §18.51, §2.10): EXCHANGE_ID's case analysis, CREATE_SESSION
//! and its reply cache, SEQUENCE's lease renewal, back-channel connections,
//! RECLAIM_COMPLETE, the reaper.

use super::*;

impl State {
    pub(crate) fn remove_sessions(&self, ids: &[SessionId4]) {
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
                        // The table is full (the driver logs it).
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
    pub fn create_session(&self, mut req: NewSession) -> Result<SessionCreated, NfsStat4> {
        let mut io = std::mem::replace(&mut req.io, Box::new(()));
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
                    ident: 0,
                }),
                lease,
                cb_down: AtomicBool::new(false),
                minorversion: AtomicU32::new(req.minorversion),
                owner_names: AtomicBool::new(false),
                io: std::mem::replace(&mut io, Box::new(())),
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

    /// The session `id` names, as a request may: not the session an
    /// NFSv4.0 client's callback path is kept in (`transitions::v40`).
    pub fn session(&self, id: &SessionId4) -> Option<Arc<Session>> {
        self.any_session(id)
            .filter(|s| s.minorversion.load(Ordering::Relaxed) != 0)
    }

    pub(crate) fn any_session(&self, id: &SessionId4) -> Option<Arc<Session>> {
        self.sessions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
    }

    /// Binds `conn` to `session`'s back channel (RFC 8881 §18.34).
    pub fn bind_back(&self, session: &Arc<Session>, conn: &Arc<dyn BackConn>) {
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
            if let Some(s) = self.any_session(&id) {
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

    /// Removes clients whose lease ran out more than a lease ago, and
    /// unconfirmed ones older than a lease; returns how many.
    /// Layouts whose recall went unanswered for a lease, and those of
    /// clients whose lease ran out, are lost then (to be fenced).
    pub fn reap(&self) -> usize {
        self.with(|t, now| {
            t.reap_layouts(now);
            t.reap(now)
        })
    }

    pub fn client_count(&self) -> usize {
        self.tables().clients.len()
    }

    pub fn session_count(&self) -> usize {
        self.sessions.read().map(|s| s.len()).unwrap_or(0)
    }
}
