//! NFSv4.0's clients and owners in the tables (RFC 7530 §9.1.7, §16.18,
//! §16.33, §16.34, §16.37): SETCLIENTID's records, their confirmation,
//! open and lock owners' sequence ids and replies, OPEN_CONFIRM,
//! RELEASE_LOCKOWNER. The rules themselves are in `crate::v40`.

use super::*;
use crate::v40::{
    setclientid_decision, Callback40, OwnerName, OwnerSeq, SeqStart, SeqVerdict,
    SetClientIdDecision, MAX_OWNERS, V40,
};

impl Tables {
    /// A verifier no earlier SETCLIENTID of this instance returned.
    fn confirm_verifier(&mut self) -> Verifier4 {
        self.last_verifier = self.last_verifier.wrapping_add(1);
        ((self.epoch as u64) << 32 | self.last_verifier as u64).to_be_bytes()
    }

    /// SETCLIENTID (RFC 7530 §16.33): the client id and confirm verifier,
    /// or the address of the record in use by another principal.
    pub fn setclientid(
        &mut self,
        id: &NfsClientId4,
        callback: Callback40,
        principal: crate::client::Principal,
        now: Duration,
    ) -> Result<(ClientId4, Verifier4), Result<String, NfsStat4>> {
        let rec = self.owners.get(&id.id).copied().unwrap_or_default();
        let confirmed = rec.confirmed.and_then(|i| self.clients.get(&i));
        let unconfirmed = rec.unconfirmed.and_then(|i| self.clients.get(&i));
        match setclientid_decision(&id.verifier, &principal, confirmed, unconfirmed) {
            SetClientIdDecision::InUse(addr) => Err(Ok(addr)),
            SetClientIdDecision::Update(cid) => {
                if let Some(u) = rec.unconfirmed {
                    self.purge_client(u);
                }
                let verf = self.confirm_verifier();
                let c = self
                    .clients
                    .get_mut(&cid)
                    .ok_or(Err(NfsStat4::Nfs4errServerfault))?;
                if let Some(v) = c.v40.as_mut() {
                    v.update = Some((verf, callback));
                }
                Ok((cid, verf))
            }
            SetClientIdDecision::New { remove } => {
                for r in remove {
                    self.purge_client(r);
                }
                // Bounded whatever clients send, as EXCHANGE_ID.
                if self.clients.len() >= self.max_clients {
                    self.reap(now);
                }
                while self.clients.len() >= self.max_clients && self.reap_courtesy(now) {}
                if self.clients.len() >= self.max_clients {
                    return Err(Err(NfsStat4::Nfs4errResource));
                }
                let owner = ClientOwner4 {
                    verifier: id.verifier,
                    ownerid: id.id.clone(),
                };
                let cid = self.add_client(&owner, principal, now);
                let confirm = self.confirm_verifier();
                if let Some(c) = self.clients.get_mut(&cid) {
                    c.v40 = Some(Box::new(V40 {
                        confirm,
                        callback,
                        ..V40::default()
                    }));
                }
                Ok((cid, confirm))
            }
        }
    }

    /// SETCLIENTID_CONFIRM (RFC 7530 §16.34): confirms a new record
    /// (purging the id string's earlier confirmed one: its client
    /// rebooted) or a callback update. Returns the new callback if there
    /// is one to use, and whether the record was new (to be written to
    /// stable storage).
    pub fn setclientid_confirm(
        &mut self,
        id: ClientId4,
        verf: &Verifier4,
        principal: &crate::client::Principal,
        now: Duration,
    ) -> Result<(Option<Callback40>, bool), NfsStat4> {
        let lease = self.lease;
        let c = self
            .clients
            .get_mut(&id)
            .ok_or(NfsStat4::Nfs4errStaleClientid)?;
        let expired = c.expired(now, lease);
        let same = c.principal == *principal;
        let Some(v) = c.v40.as_mut() else {
            return Err(NfsStat4::Nfs4errStaleClientid);
        };
        if c.confirmed {
            return match v.update.take() {
                Some((u, cb)) if u == *verf => {
                    if !same {
                        v.update = Some((u, cb));
                        return Err(NfsStat4::Nfs4errClidInuse);
                    }
                    v.confirm = u;
                    v.callback = cb.clone();
                    c.lease.renew(now);
                    Ok((Some(cb), false))
                }
                other => {
                    v.update = other;
                    if v.confirm == *verf {
                        // A retransmission of the confirmation.
                        c.lease.renew(now);
                        Ok((None, false))
                    } else {
                        Err(NfsStat4::Nfs4errStaleClientid)
                    }
                }
            };
        }
        if v.confirm != *verf {
            return Err(NfsStat4::Nfs4errStaleClientid);
        }
        if !same {
            return Err(NfsStat4::Nfs4errClidInuse);
        }
        if expired {
            self.purge_client(id);
            return Err(NfsStat4::Nfs4errStaleClientid);
        }
        let cb = v.callback.clone();
        let owner = c.owner.clone();
        c.lease.renew(now);
        if let Some(old) = self
            .owners
            .get(&owner)
            .and_then(|r| r.confirmed)
            .filter(|o| *o != id)
        {
            // The client rebooted: what its earlier instance held goes,
            // its delegations kept a while for it to reclaim.
            self.keep_prev_delegs(old, now);
            self.purge_client(old);
        }
        self.confirm(id);
        self.grace.returned(&owner, now);
        Ok((Some(cb), true))
    }

    /// A confirmed NFSv4.0 client named by a request (RENEW, OPEN, LOCK,
    /// a stateid): its lease renewed (RFC 7530 §9.5), else
    /// NFS4ERR_STALE_CLIENTID.
    pub fn renew40(&self, id: ClientId4, now: Duration) -> Result<&Client, NfsStat4> {
        match self.clients.get(&id) {
            Some(c) if c.confirmed && c.v40.is_some() => {
                c.lease.renew(now);
                Ok(c)
            }
            Some(_) => Err(NfsStat4::Nfs4errStaleClientid),
            // One of this instance's clients, gone since (its lease ran
            // out and another client's request purged it, or it
            // rebooted): its state expired (RFC 7530 §9.6.3).
            None if (id >> 32) as u32 == self.epoch => Err(NfsStat4::Nfs4errExpired),
            None => Err(NfsStat4::Nfs4errStaleClientid),
        }
    }

    /// The client of a stateid an NFSv4.0 request names: `None` for a
    /// special stateid or one the operation's own check answers for;
    /// NFS4ERR_EXPIRED for one of this instance's clients that is gone.
    pub fn stateid_client40(&self, sid: &StateId4) -> Result<Option<ClientId4>, NfsStat4> {
        if crate::stateid::is_special(&sid.other) {
            return Ok(None);
        }
        match self.entry(&sid.other) {
            Ok((cid, _)) => Ok(Some(cid)),
            Err(_) => match client_of(self.epoch, &sid.other) {
                Some(cid) if !self.clients.contains_key(&cid) => Err(NfsStat4::Nfs4errExpired),
                _ => Ok(None),
            },
        }
    }

    /// The owner a stateid of an NFSv4.0 client belongs to: its open or
    /// lock owner, or the owner whose last request named it (a CLOSE or
    /// LOCKU sent again after the stateid went).
    pub fn owner_of(&self, sid: &StateId4) -> Result<(ClientId4, OwnerName), NfsStat4> {
        self.stateid_client40(sid)?;
        match self.entry(&sid.other) {
            Ok((cid, e)) => match &e.kind {
                StateKind::Open { owner, .. } => Ok((cid, OwnerName::Open(owner.clone()))),
                StateKind::Lock { owner, .. } => Ok((cid, OwnerName::Lock(owner.clone()))),
                _ => Err(NfsStat4::Nfs4errBadStateid),
            },
            Err(s) => {
                let cid = client_of(self.epoch, &sid.other).ok_or(s)?;
                let v = self
                    .clients
                    .get(&cid)
                    .and_then(|c| c.v40.as_ref())
                    .ok_or(s)?;
                v.owners
                    .iter()
                    .find(|(_, o)| o.last_other == Some(sid.other))
                    .map(|(n, _)| (cid, n.clone()))
                    .ok_or(s)
            }
        }
    }

    /// Begins owner `name`'s request `opnum` with `seqid` (RFC 7530
    /// §9.1.7). An OPEN (`open`) of an owner not seen, or not confirmed
    /// and not a retransmission, starts it afresh (§16.18.5: an
    /// unconfirmed owner's earlier opens go); other requests need a
    /// confirmed owner (NFS4ERR_BAD_STATEID), but OPEN_CONFIRM
    /// (`confirming`) one that is not.
    pub fn seq_begin(
        &mut self,
        client: ClientId4,
        name: &OwnerName,
        seqid: u32,
        opnum: u32,
        open: bool,
        confirming: bool,
    ) -> Result<SeqStart, NfsStat4> {
        let c = self
            .clients
            .get(&client)
            .ok_or(NfsStat4::Nfs4errStaleClientid)?;
        let v = c.v40.as_ref().ok_or(NfsStat4::Nfs4errStaleClientid)?;
        let seen = v
            .owners
            .get(name)
            .map(|o| (o.check(seqid, opnum), o.confirmed, o.busy.is_some()));
        match seen {
            None => {}
            // A retransmission is answered whatever came of it.
            Some((SeqVerdict::Replay(r), _, _)) => return Ok(SeqStart::Replay(r)),
            Some((_, false, false)) if open => self.drop_owner_opens(client, name),
            Some((verdict, confirmed, _)) => {
                if !open && confirming == confirmed {
                    return Err(NfsStat4::Nfs4errBadStateid);
                }
                return match verdict {
                    SeqVerdict::Run => {
                        self.owner_mut(client, name)?.busy = Some(seqid);
                        Ok(SeqStart::Run {
                            confirm: open && !confirmed,
                        })
                    }
                    SeqVerdict::Busy => Err(NfsStat4::Nfs4errDelay),
                    _ => Err(NfsStat4::Nfs4errBadSeqid),
                };
            }
        }
        if !open {
            // An owner forgotten (it held nothing) or never seen by a
            // request other than OPEN: its sequence starts here.
            self.new_owner(client, name, seqid, true)?;
            return Ok(SeqStart::Run { confirm: false });
        }
        self.new_owner(client, name, seqid, false)?;
        Ok(SeqStart::Run { confirm: true })
    }

    /// Ends owner `name`'s request `seqid` with `status` and its encoded
    /// `reply`: unless the error is one that does not count (§9.1.7),
    /// the owner's sequence moves on and keeps the reply. `other`: the
    /// stateid the request named or returned. `new_lock`: a LOCK that
    /// made a lock owner (`open_to_lock_owner4`), whose sequence starts
    /// at its `lock_seqid` with the same reply.
    #[allow(clippy::too_many_arguments)]
    pub fn seq_end(
        &mut self,
        client: ClientId4,
        name: &OwnerName,
        seqid: u32,
        opnum: u32,
        status: NfsStat4,
        reply: Bytes,
        other: Option<[u8; 12]>,
        new_lock: Option<(Bytes, u32)>,
    ) {
        let Ok(o) = self.owner_mut(client, name) else {
            return;
        };
        o.busy = None;
        if !status.moves_seqid() {
            return;
        }
        o.seqid = seqid;
        o.reply = Some((opnum, reply.clone()));
        if other.is_some() {
            o.last_other = other;
        }
        if let (Some((lock, lock_seqid)), NfsStat4::Nfs4Ok) = (new_lock, status) {
            let lname = OwnerName::Lock(lock);
            if self.new_owner(client, &lname, lock_seqid, true).is_ok() {
                if let Ok(l) = self.owner_mut(client, &lname) {
                    l.busy = None;
                    l.seqid = lock_seqid;
                    l.reply = Some((opnum, reply));
                    l.last_other = other;
                }
            }
        }
    }

    /// Ends a request begun with [`Tables::seq_begin`] that never ran (a
    /// bug unwound it): the owner is free again, its sequence where it
    /// was.
    pub fn seq_abandon(&mut self, client: ClientId4, name: &OwnerName) {
        if let Ok(o) = self.owner_mut(client, name) {
            o.busy = None;
        }
    }

    fn owner_mut(
        &mut self,
        client: ClientId4,
        name: &OwnerName,
    ) -> Result<&mut OwnerSeq, NfsStat4> {
        self.clients
            .get_mut(&client)
            .and_then(|c| c.v40.as_mut())
            .and_then(|v| v.owners.get_mut(name))
            .ok_or(NfsStat4::Nfs4errBadStateid)
    }

    /// A new owner record, busy with `seqid`, making room if the client
    /// has [`MAX_OWNERS`]: an owner holding nothing goes, else
    /// NFS4ERR_RESOURCE.
    fn new_owner(
        &mut self,
        client: ClientId4,
        name: &OwnerName,
        seqid: u32,
        confirmed: bool,
    ) -> Result<(), NfsStat4> {
        let c = self
            .clients
            .get_mut(&client)
            .ok_or(NfsStat4::Nfs4errStaleClientid)?;
        let full = c
            .v40
            .as_ref()
            .is_some_and(|v| v.owners.len() >= MAX_OWNERS && !v.owners.contains_key(name));
        if full {
            // One pass over the client's state, one over its owners.
            let opens: HashSet<&Bytes> = c.opens_by_owner.keys().map(|(o, _)| o).collect();
            let locks: HashSet<&Bytes> = c.locks_by_owner.keys().map(|(o, _)| o).collect();
            let in_use = |n: &OwnerName| match n {
                OwnerName::Open(o) => opens.contains(o),
                OwnerName::Lock(o) => locks.contains(o),
            };
            let idle = c.v40.as_ref().and_then(|v| {
                v.owners
                    .iter()
                    .find(|(n, o)| o.busy.is_none() && !in_use(n))
                    .map(|(n, _)| n.clone())
            });
            match (idle, c.v40.as_mut()) {
                (Some(n), Some(v)) => {
                    v.owners.remove(&n);
                }
                _ => return Err(NfsStat4::Nfs4errResource),
            }
        }
        let v = c.v40.as_mut().ok_or(NfsStat4::Nfs4errStaleClientid)?;
        v.owners.insert(
            name.clone(),
            OwnerSeq {
                seqid: seqid.wrapping_sub(1),
                confirmed,
                busy: Some(seqid),
                ..OwnerSeq::default()
            },
        );
        Ok(())
    }

    /// Releases the opens of an open owner that was never confirmed.
    fn drop_owner_opens(&mut self, client: ClientId4, name: &OwnerName) {
        let OwnerName::Open(owner) = name else {
            return;
        };
        let Some(c) = self.clients.get(&client) else {
            return;
        };
        let opens: Vec<[u8; 12]> = c
            .opens_by_owner
            .iter()
            .filter(|((o, _), _)| o == owner)
            .map(|(_, other)| *other)
            .collect();
        for other in opens {
            self.drop_state(client, &other);
        }
    }

    /// An open owner whose first OPEN is a reclaim (CLAIM_PREVIOUS): it
    /// was confirmed before the restart, and is so now (as knfsd has it;
    /// the Linux client sends no OPEN_CONFIRM for a reclaim).
    pub fn confirm_owner(&mut self, client: ClientId4, name: &OwnerName) {
        if let Ok(o) = self.owner_mut(client, name) {
            o.confirmed = true;
        }
    }

    /// OPEN_CONFIRM (RFC 7530 §16.18): the open owner is confirmed, and
    /// the open stateid's sequence moves on.
    pub fn open_confirm(
        &mut self,
        client: ClientId4,
        sid: &StateId4,
        file: &FileKey,
    ) -> Result<StateId4, NfsStat4> {
        let e = self.check_stateid(client, sid, file)?;
        let StateKind::Open { owner, .. } = &e.kind else {
            return Err(NfsStat4::Nfs4errBadStateid);
        };
        let name = OwnerName::Open(owner.clone());
        self.owner_mut(client, &name)?.confirmed = true;
        let e = self.entry_mut(client, &sid.other)?;
        e.seqid = next_seqid(e.seqid);
        Ok(e.stateid(sid.other))
    }

    /// RELEASE_LOCKOWNER (RFC 7530 §16.37): NFS4ERR_LOCKS_HELD while the
    /// owner holds a lock; else its lock stateids and record go.
    pub fn release_lockowner(&mut self, client: ClientId4, owner: &Bytes) -> Result<(), NfsStat4> {
        let c = self
            .clients
            .get(&client)
            .ok_or(NfsStat4::Nfs4errStaleClientid)?;
        let key = (client, owner.clone());
        let states: Vec<([u8; 12], FileKey)> = c
            .locks_by_owner
            .iter()
            .filter(|((o, _), _)| o == owner)
            .map(|((_, f), other)| (*other, f.clone()))
            .collect();
        if states
            .iter()
            .any(|(_, f)| self.files.get(f).is_some_and(|f| f.locks.holds_any(&key)))
        {
            return Err(NfsStat4::Nfs4errLocksHeld);
        }
        for (other, _) in states {
            self.drop_state(client, &other);
        }
        if let Some(v) = self.clients.get_mut(&client).and_then(|c| c.v40.as_mut()) {
            v.owners.remove(&OwnerName::Lock(owner.clone()));
        }
        Ok(())
    }
}
