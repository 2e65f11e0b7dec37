//! Migration of one export's state between two servers (transparent
//! state migration, RFC 8881 §11.14): what the source hands over, how
//! the destination takes it in, and the phases of a move on each side
//! ([`phases`]).
//!
//! The source takes a snapshot of every client's opens and locks on the
//! export ([`State::export_state`]) once the export is frozen (no state
//! changes on it) and its delegations and layouts are back. The
//! destination takes them in ([`State::import_state`]): each client
//! under a confirmed record of its own (a new client id there, or the
//! record the same client instance already has), and each stateid with
//! the very `other` and seqid the client holds. Those `other`s carry the
//! source's epoch and client id (`crate::stateid`), so the destination
//! keeps an alias from the source's client id to its own, and a stateid
//! of the source finds its client through it. Once the destination has
//! committed, the source forgets the export's state
//! ([`State::drop_export`]) and tells the clients that had some that
//! their lease moved (SEQ4_STATUS_LEASE_MOVED, §18.46.3) until each has
//! been told NFS4ERR_MOVED for it.
//!
//! Delegations are not carried: the source recalls them first, as a
//! conflict would. Nor are sessions: a client makes one at the
//! destination after its EXCHANGE_ID there finds its record confirmed
//! (§11.14.2, "the destination server ... will return ... with
//! EXCHGID4_FLAG_CONFIRMED_R").

pub mod phases;

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use proto::migrate::*;
use proto::nfs4::*;

use crate::client::Principal;
use crate::locks::LockKind;
use crate::stateid::{issuer_client, StateEntry, StateKind};
use crate::tables::Tables;
use crate::State;

/// Why a snapshot or an import was refused.
pub type Refusal = String;

/// What an import did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Imported {
    /// Each client's id here and its owner, for its stable record.
    pub clients: Vec<(ClientId4, Bytes)>,
    /// Stateids taken in.
    pub states: usize,
}

fn principal_of(c: &PeerClient) -> Result<Principal, Refusal> {
    match c.principal {
        0 => Ok(Principal::None),
        1 => Ok(Principal::Sys {
            uid: c.uid,
            gid: c.gid,
        }),
        n => Err(format!("client principal kind {n} unknown")),
    }
}

impl Tables {
    /// Every client's opens and locks on files of `export`, as the
    /// transfer carries them; refused while a delegation, a layout or an
    /// NLM lock or share is held there (recalled or refused first).
    fn export_state(&self, export: u16) -> Result<Vec<PeerClient>, Refusal> {
        for (file, f) in &self.files {
            if file.0 != export {
                continue;
            }
            if !f.delegs.is_empty() {
                return Err("delegations of the export are still held".into());
            }
            if !f.layouts.is_empty() {
                return Err("layouts of the export are still held".into());
            }
            if !f.nlm_shares.is_empty() || f.locks.any_owner(|o| crate::nlm::is_nlm(o.0)) {
                return Err(
                    "NFSv3 clients hold NLM locks or shares on the export (they cannot follow a move)"
                        .into(),
                );
            }
        }
        let mut out = Vec::new();
        for c in self.clients.values() {
            if crate::nlm::is_nlm(c.id) {
                continue;
            }
            let mut states = Vec::new();
            for (other, e) in &c.states {
                if e.file.0 != export {
                    continue;
                }
                let kind = match &e.kind {
                    StateKind::Open {
                        owner,
                        access,
                        deny,
                        ..
                    } => PeerStateKind::Open(PeerOpen {
                        owner: owner.clone(),
                        access: *access,
                        deny: *deny,
                    }),
                    StateKind::Lock { owner, open } => {
                        let ranges = self
                            .files
                            .get(&e.file)
                            .map(|f| f.locks.held_by(&(c.id, owner.clone())))
                            .unwrap_or_default()
                            .into_iter()
                            .map(|(start, end, k)| PeerRange {
                                start,
                                end,
                                write: k == LockKind::Write,
                            })
                            .collect();
                        PeerStateKind::Lock(PeerLock {
                            owner: owner.clone(),
                            open: *open,
                            ranges,
                        })
                    }
                    // A revoked delegation is only waiting for
                    // FREE_STATEID: nothing to carry.
                    StateKind::Deleg { revoked: true, .. } => continue,
                    StateKind::Deleg { .. } => {
                        return Err("delegations of the export are still held".into())
                    }
                    StateKind::Layout(_) => {
                        return Err("layouts of the export are still held".into())
                    }
                };
                states.push(PeerState {
                    other: *other,
                    seqid: e.seqid,
                    handle: e.file.1.clone(),
                    kind,
                });
            }
            if states.is_empty() {
                continue;
            }
            let (principal, uid, gid) = match &c.principal {
                Principal::None => (0, 0, 0),
                Principal::Sys { uid, gid } => (1, *uid, *gid),
                Principal::Gss(name) => {
                    return Err(format!(
                        "client {:#x} holds state as the Kerberos principal {name}, \
                         which the transfer cannot carry yet",
                        c.id
                    ))
                }
            };
            out.push(PeerClient {
                clientid: c.id,
                owner: c.owner.clone(),
                verifier: c.verifier,
                principal,
                uid,
                gid,
                flags: c.flags,
                minorversion: c.minorversion,
                // The most a transfer carries; a client that moved more
                // often than that loses the oldest (their stateids are
                // refused below).
                aliases: c.aliases.iter().rev().take(64).copied().collect(),
                states,
            });
        }
        Ok(out)
    }

    /// Checks a transfer for `export` before anything is taken in: every
    /// stateid new here, opens and locks consistent, no lock conflicting
    /// with one held here.
    fn check_import(&self, export: u16, clients: &[PeerClient]) -> Result<(), Refusal> {
        let mut others = HashSet::new();
        for c in clients {
            principal_of(c)?;
            if crate::nlm::is_nlm(c.clientid) {
                return Err("an NLM host's state in a transfer".into());
            }
            let opens: HashSet<[u8; 12]> = c
                .states
                .iter()
                .filter(|s| matches!(s.kind, PeerStateKind::Open(_)))
                .map(|s| s.other)
                .collect();
            for s in &c.states {
                let issuer = issuer_client(&s.other);
                if issuer != c.clientid && !c.aliases.contains(&issuer) {
                    return Err(format!(
                        "stateid {:02x?} does not belong to client {:#x}",
                        s.other, c.clientid
                    ));
                }
                if !others.insert(s.other) || self.entry(&s.other).is_ok() {
                    return Err(format!("stateid {:02x?} twice", s.other));
                }
                if let PeerStateKind::Lock(l) = &s.kind {
                    if !opens.contains(&l.open) {
                        return Err(format!("lock stateid {:02x?} without its open", s.other));
                    }
                    let file = (export, s.handle.clone());
                    if let Some(f) = self.files.get(&file) {
                        for r in &l.ranges {
                            let kind = if r.write {
                                LockKind::Write
                            } else {
                                LockKind::Read
                            };
                            // Nobody here is that owner yet: any overlap
                            // of another kind conflicts.
                            if r.start >= r.end
                                || f.locks
                                    .test(&(0, Bytes::new()), r.start, r.end, kind)
                                    .is_some()
                            {
                                return Err(
                                    "a transferred lock conflicts with one held here".into()
                                );
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Takes in a checked transfer ([`Tables::check_import`]).
    fn import_state(
        &mut self,
        export: u16,
        clients: Vec<PeerClient>,
        now: std::time::Duration,
    ) -> Imported {
        let mut done = Imported::default();
        for pc in clients {
            let Ok(principal) = principal_of(&pc) else {
                continue;
            };
            // The same client instance already known here (it mounted
            // something else from this server, or came early) keeps its
            // record; otherwise it gets a confirmed one of its own.
            let rec = self.owners.get(&pc.owner).copied().unwrap_or_default();
            let same = rec.confirmed.filter(|id| {
                self.clients
                    .get(id)
                    .is_some_and(|c| c.verifier == pc.verifier && c.principal == principal)
            });
            let local = match same {
                Some(id) => id,
                None => {
                    let owner = ClientOwner4 {
                        verifier: pc.verifier,
                        ownerid: pc.owner.clone(),
                    };
                    if let Some(old) = rec.confirmed {
                        // Another instance of the client (it restarted
                        // since): its state here is dead, as at a
                        // confirmation of the new one.
                        self.purge_client(old);
                    }
                    let id = self.add_client(&owner, principal, now);
                    self.confirm(id);
                    if let Some(c) = self.clients.get_mut(&id) {
                        c.flags = pc.flags;
                        c.minorversion = pc.minorversion;
                        c.reclaim_complete = true;
                    }
                    id
                }
            };
            let Some(c) = self.clients.get_mut(&local) else {
                continue;
            };
            for a in std::iter::once(pc.clientid).chain(pc.aliases.iter().copied()) {
                if a != local && !c.aliases.contains(&a) {
                    c.aliases.push(a);
                    self.aliases.insert(a, local);
                }
            }
            c.lease.renew(now);
            done.clients.push((local, pc.owner.clone()));
            // Opens first: a lock's open must be there.
            let (opens, locks): (Vec<PeerState>, Vec<PeerState>) = pc
                .states
                .into_iter()
                .partition(|s| matches!(s.kind, PeerStateKind::Open(_)));
            for s in opens.into_iter().chain(locks) {
                let file = (export, s.handle.clone());
                let kind = match s.kind {
                    PeerStateKind::Open(o) => StateKind::Open {
                        owner: o.owner,
                        access: o.access,
                        deny: o.deny,
                        modes: crate::stateid::Modes::of(o.access, o.deny),
                        locks: Vec::new(),
                    },
                    PeerStateKind::Lock(l) => {
                        let key = (local, l.owner.clone());
                        for r in &l.ranges {
                            let kind = if r.write {
                                LockKind::Write
                            } else {
                                LockKind::Read
                            };
                            let f = self.files.entry(file.clone()).or_default();
                            if f.locks.lock(&key, r.start, r.end, kind).is_err() {
                                continue;
                            }
                            // Here too local processes must see it.
                            let range = (r.start, r.end);
                            let taken = self.share_take(&key, &file, range, kind, true);
                            if taken != crate::shared::Shared::Taken {
                                tracing::warn!(
                                    ?range,
                                    "a migrated lock is held by a local process here too ({taken:?}); \
                                     kept for NFS clients only"
                                );
                            }
                        }
                        StateKind::Lock {
                            owner: l.owner,
                            open: l.open,
                        }
                    }
                };
                self.place_state(
                    local,
                    s.other,
                    StateEntry {
                        seqid: s.seqid,
                        file,
                        kind,
                    },
                );
                done.states += 1;
            }
        }
        done
    }

    /// Forgets every stateid on files of `export` (it moved), and notes
    /// for each client that had one that its lease moved.
    fn drop_export(&mut self, export: u16) -> usize {
        let mut gone = Vec::new();
        for c in self.clients.values() {
            for (other, e) in &c.states {
                if e.file.0 == export {
                    gone.push((c.id, *other, matches!(e.kind, StateKind::Lock { .. })));
                }
            }
        }
        // Locks before their opens.
        gone.sort_by_key(|g| !g.2);
        for (cid, other, _) in &gone {
            self.drop_state(*cid, other);
            self.lease_moved.entry(*cid).or_default().insert(export);
        }
        self.files.retain(|f, s| f.0 != export || !s.is_empty());
        gone.len()
    }
}

impl State {
    /// The state of every client on `export`, for a transfer; refused
    /// while delegations or layouts are held there, or NLM locks.
    pub fn export_state(&self, export: u16) -> Result<Vec<PeerClient>, Refusal> {
        self.tables().export_state(export)
    }

    /// Takes in the state of `export` that a source transferred, all of
    /// it or (refused) none.
    pub fn import_state(&self, export: u16, clients: Vec<PeerClient>) -> Result<Imported, Refusal> {
        let n: usize = clients.iter().map(|c| c.states.len()).sum();
        self.with(|t, now| {
            if t.clients.len() + clients.len() > t.max_clients {
                return Err(format!(
                    "{} clients would exceed this server's {} client records",
                    clients.len(),
                    t.max_clients
                ));
            }
            t.check_import(export, &clients)?;
            let done = t.import_state(export, clients, now);
            debug_assert_eq!(done.states, n);
            Ok(done)
        })
    }

    /// Grants no more delegations or layouts on `export` (it is about to
    /// move; those held are being recalled) until [`State::thaw_export`].
    pub fn stop_grants(&self, export: u16) {
        self.tables().no_grants.insert(export);
    }

    /// Freezes `export` for a migration: opens, closes, locks and unlocks
    /// on its files are NFS4ERR_DELAY, and no delegation or layout is
    /// granted, until [`State::thaw_export`].
    pub fn freeze_export(&self, export: u16) {
        let mut t = self.tables();
        t.frozen.insert(export);
        t.no_grants.insert(export);
    }

    pub fn thaw_export(&self, export: u16) {
        let mut t = self.tables();
        t.frozen.remove(&export);
        t.no_grants.remove(&export);
    }

    /// Checks a transfer as [`State::import_state`] would, taking nothing.
    pub fn check_import(&self, export: u16, clients: &[PeerClient]) -> Result<(), Refusal> {
        self.tables().check_import(export, clients)
    }

    /// Recalls every delegation of a file of `export` (it is about to
    /// move), as a conflict with anyone would (`Breaking`).
    pub fn break_export_delegations(&self, export: u16) -> crate::Breaking {
        self.breaking(|t, now| {
            let files: Vec<crate::FileKey> = t
                .files
                .iter()
                .filter(|(f, s)| f.0 == export && !s.delegs.is_empty())
                .map(|(f, _)| f.clone())
                .collect();
            let mut all = Vec::new();
            let mut pending = false;
            for f in files {
                let (found, p) = t.deleg_conflicts(&f, &crate::Breaker::Anyone, false, now);
                all.extend(found);
                pending |= p;
            }
            (all, pending)
        })
    }

    /// Delegations and layouts of files of `export` still held.
    pub fn held_on_export(&self, export: u16) -> usize {
        let t = self.tables();
        t.files
            .iter()
            .filter(|(f, _)| f.0 == export)
            .map(|(_, s)| s.delegs.len() + s.layouts.len())
            .sum()
    }

    /// Forgets the state of `export`, which moved; returns how many
    /// stateids went.
    pub fn drop_export(&self, export: u16) -> usize {
        self.with(|t, _| t.drop_export(export))
    }

    /// Whether `client` must be told SEQ4_STATUS_LEASE_MOVED (RFC 8881
    /// §18.46.3): state of it moved with an export it has not been told
    /// NFS4ERR_MOVED for yet.
    pub fn lease_moved(&self, client: ClientId4) -> bool {
        self.moved_live.load(Ordering::Relaxed) > 0
            && self.tables().lease_moved.contains_key(&client)
    }

    /// `client` was told NFS4ERR_MOVED for `export` (or read where it
    /// went): its lease there no longer needs telling (§18.46.3).
    pub fn moved_seen(&self, client: ClientId4, export: u16) {
        let mut t = self.tables();
        if let Some(s) = t.lease_moved.get_mut(&client) {
            s.remove(&export);
            if s.is_empty() {
                t.lease_moved.remove(&client);
            }
        }
        self.moved_live
            .store(t.lease_moved.len(), Ordering::Relaxed);
    }

    /// Stateids of clients whose id at their source is an alias here.
    pub fn aliases(&self) -> usize {
        self.tables().aliases.len()
    }
}
