//! [`State`]'s transitions for NFSv4.0 clients (RFC 7530 §9.1.7, §9.5,
//! §16.18, §16.29, §16.33, §16.34, §16.37): SETCLIENTID and its
//! confirmation, leases renewed by any request naming the client, open
//! and lock owners' sequence ids, OPEN_CONFIRM, RELEASE_LOCKOWNER.
//!
//! An NFSv4.0 client has no session; its callback path (a connection the
//! driver opens to the address it gave) is kept as the back channel of a
//! session made for it at confirmation, which no request can name
//! ([`State::session`] does not return it): recalls, lock notifications
//! and the reaper treat it as an NFSv4.1 client's back channel.

use super::*;
use crate::v40::SeqStart;
use crate::v40::{Callback40, OwnerName};
use crate::Confirmed40;

impl State {
    /// SETCLIENTID (RFC 7530 §16.33): the client id and the verifier to
    /// confirm it with; or `Err(Ok(address))` when another principal
    /// uses the id string (NFS4ERR_CLID_INUSE), `Err(Err(status))` for
    /// other errors (a full client table: NFS4ERR_RESOURCE).
    #[allow(clippy::type_complexity)]
    pub fn setclientid(
        &self,
        id: &NfsClientId4,
        callback: Callback40,
        principal: Principal,
    ) -> Result<(ClientId4, Verifier4), Result<String, NfsStat4>> {
        self.with(|t, now| t.setclientid(id, callback, principal, now))
    }

    /// SETCLIENTID_CONFIRM (RFC 7530 §16.34). `io` is what the driver
    /// keeps beside the callback session if one is made.
    pub fn setclientid_confirm(
        &self,
        id: ClientId4,
        verf: &Verifier4,
        principal: &Principal,
        io: Box<dyn std::any::Any + Send + Sync>,
    ) -> Result<Confirmed40, NfsStat4> {
        self.with(|t, now| {
            let (callback, new) = t.setclientid_confirm(id, verf, principal, now)?;
            let c = t
                .clients
                .get_mut(&id)
                .ok_or(NfsStat4::Nfs4errStaleClientid)?;
            c.minorversion = 0;
            let sec = match &c.principal {
                Principal::Sys { .. } => vec![CallbackSecParms4::AuthSys(AuthSysParms {
                    stamp: 0,
                    machinename: Bytes::from_static(b"ferrite"),
                    uid: 0,
                    gid: 0,
                    gids: Vec::new(),
                })],
                _ => vec![CallbackSecParms4::AuthNone],
            };
            let record = new.then(|| c.owner.clone());
            let sessions = self.sessions.read().unwrap_or_else(|p| p.into_inner());
            let existing = c.sessions.iter().find_map(|s| sessions.get(s)).cloned();
            drop(sessions);
            let session = match existing {
                Some(s) => s,
                None => {
                    let sid = t.new_sessionid(id);
                    let c = t.clients.get_mut(&id).ok_or(NfsStat4::Nfs4errServerfault)?;
                    let s = Arc::new(Session {
                        id: sid,
                        client: id,
                        fore: ChannelAttrs4::default(),
                        flags: 0,
                        slots: Mutex::new(SlotTable::new(1, crate::slots::CacheMemory::new(0))),
                        back: Mutex::new(BackChannel {
                            program: 0,
                            sec: Vec::new(),
                            attrs: ChannelAttrs4::default(),
                            conns: Vec::new(),
                            seqid: 1,
                            ident: 0,
                        }),
                        lease: c.lease.clone(),
                        // Down until a probe of the callback path answers.
                        cb_down: AtomicBool::new(true),
                        minorversion: AtomicU32::new(0),
                        owner_names: AtomicBool::new(false),
                        io,
                    });
                    c.sessions.insert(sid);
                    self.sessions
                        .write()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(sid, s.clone());
                    s
                }
            };
            if let Some(cb) = &callback {
                let mut b = session.back.lock().unwrap_or_else(|p| p.into_inner());
                b.program = cb.program;
                b.ident = cb.ident;
                b.sec = sec;
                b.conns.clear();
                session.cb_down.store(true, Ordering::Relaxed);
            }
            Ok(Confirmed40 {
                session,
                callback,
                record,
            })
        })
    }

    /// The record of NFSv4.0 client `id` is on stable storage: purging
    /// the client removes it.
    pub fn recorded40(&self, id: ClientId4) -> Result<(), NfsStat4> {
        self.with(|t, _| {
            let v = t
                .clients
                .get_mut(&id)
                .and_then(|c| c.v40.as_mut())
                .ok_or(NfsStat4::Nfs4errStaleClientid)?;
            v.recorded = true;
            Ok(())
        })
    }

    /// Renews the lease of NFSv4.0 client `id` (RFC 7530 §9.5: every
    /// request naming it does). NFS4ERR_STALE_CLIENTID for a client not
    /// known or not confirmed.
    pub fn renew40(&self, id: ClientId4) -> Result<(), NfsStat4> {
        let now = self.clock.now();
        self.tables().renew40(id, now).map(|_| ())
    }

    /// RENEW (RFC 7530 §16.29): the lease renewed; NFS4ERR_CB_PATH_DOWN
    /// when the client holds delegations its callback path cannot recall.
    pub fn renew_op(&self, id: ClientId4) -> Result<(), NfsStat4> {
        let now = self.clock.now();
        let t = self.tables();
        let c = t.renew40(id, now)?;
        if c.delegs_by_file.is_empty() {
            return Ok(());
        }
        if callable_session(
            &t,
            &self.sessions.read().unwrap_or_else(|p| p.into_inner()),
            id,
        )
        .is_none()
        {
            return Err(NfsStat4::Nfs4errCbPathDown);
        }
        Ok(())
    }

    /// The NFSv4.0 client a stateid belongs to, its lease renewed; `None`
    /// for special stateids and ones not known (the operation's own check
    /// then answers for them); NFS4ERR_EXPIRED for a client of this
    /// instance that is gone.
    pub fn client_of40(&self, sid: &StateId4) -> Result<Option<ClientId4>, NfsStat4> {
        let now = self.clock.now();
        let t = self.tables();
        let cid = t.stateid_client40(sid)?;
        if let Some(c) = cid.and_then(|c| t.clients.get(&c)) {
            c.lease.renew(now);
        }
        Ok(cid)
    }

    /// The owner a stateid of an NFSv4.0 client belongs to
    /// ([`Tables::owner_of`]).
    pub fn owner_of(&self, sid: &StateId4) -> Result<(ClientId4, OwnerName), NfsStat4> {
        self.tables().owner_of(sid)
    }

    /// Begins an owner's request (RFC 7530 §9.1.7): see
    /// [`Tables::seq_begin`].
    pub fn seq_begin(
        &self,
        client: ClientId4,
        name: &OwnerName,
        seqid: u32,
        opnum: u32,
        open: bool,
        confirming: bool,
    ) -> Result<SeqStart, NfsStat4> {
        self.with(|t, _| t.seq_begin(client, name, seqid, opnum, open, confirming))
    }

    /// Ends an owner's request: see [`Tables::seq_end`].
    #[allow(clippy::too_many_arguments)]
    pub fn seq_end(
        &self,
        client: ClientId4,
        name: &OwnerName,
        seqid: u32,
        opnum: u32,
        status: NfsStat4,
        reply: Bytes,
        other: Option<[u8; 12]>,
        new_lock: Option<(Bytes, u32)>,
    ) {
        self.with(|t, _| t.seq_end(client, name, seqid, opnum, status, reply, other, new_lock))
    }

    /// Frees an owner whose request never ended (a bug unwound it).
    pub fn seq_abandon(&self, client: ClientId4, name: &OwnerName) {
        self.with(|t, _| t.seq_abandon(client, name))
    }

    /// A reclaiming open owner is confirmed without OPEN_CONFIRM
    /// ([`Tables::confirm_owner`]).
    pub fn confirm_owner(&self, client: ClientId4, name: &OwnerName) {
        self.with(|t, _| t.confirm_owner(client, name))
    }

    /// OPEN_CONFIRM (RFC 7530 §16.18).
    pub fn open_confirm(
        &self,
        client: ClientId4,
        sid: &StateId4,
        file: &FileKey,
    ) -> Result<StateId4, NfsStat4> {
        self.with(|t, _| t.open_confirm(client, sid, file))
    }

    /// RELEASE_LOCKOWNER (RFC 7530 §16.37).
    pub fn release_lockowner(&self, client: ClientId4, owner: &Bytes) -> Result<(), NfsStat4> {
        self.with(|t, _| t.release_lockowner(client, owner))
    }

    /// The session carrying NFSv4.0 client `id`'s callback path.
    pub fn session40(&self, id: ClientId4) -> Option<Arc<Session>> {
        let t = self.tables();
        let c = t.clients.get(&id)?;
        c.v40.as_ref()?;
        let sessions = self.sessions.read().unwrap_or_else(|p| p.into_inner());
        c.sessions.iter().find_map(|s| sessions.get(s)).cloned()
    }
}
