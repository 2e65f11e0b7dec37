//! NLM's locks and share reservations in the one lock table (the NFSv3
//! lock manager, `crate::nlm`): an NLM lock owner is an [`OwnerKey`] whose
//! client id is its host's, in a range NFSv4 never issues
//! ([`nlm_client`]), so NLM and NFSv4 owners conflict, queue and wait for
//! each other in the same `FileLocks` and `LockWaiters`.
//!
//! What differs from NFSv4: an NLM host has no lease (its locks last until
//! it unlocks, its lock manager says it restarted, or FREE_ALL); a blocked
//! NLM request is granted by the server itself when it becomes grantable,
//! and its lock manager told with NLM_GRANTED ([`NlmGrant`]); and an NLM
//! waiter lasts while its client keeps asking (the Linux client retries a
//! blocked lock every 30 s), at most [`NLM_WAIT`] between retries.

use std::time::Duration;

use proto::nfs4::ClientId4;

use super::tables::{FileState, Tables};
use super::Waiter;
use super::{FileKey, OwnerKey};
use crate::locks::{Held, LockKind};

/// The client ids of NLM hosts: this prefix and the host's number.
/// NFSv4 client ids are `epoch << 32 | n`, and the epoch (one more at
/// every restart) never reaches `u32::MAX`.
const NLM_PREFIX: u64 = 0xFFFF_FFFF << 32;

/// The client id of NLM host `host`.
pub fn nlm_client(host: u32) -> ClientId4 {
    NLM_PREFIX | u64::from(host)
}

/// Whether `id` is an NLM host's (not an NFSv4 client's).
pub fn is_nlm(id: ClientId4) -> bool {
    id & NLM_PREFIX == NLM_PREFIX
}

/// How long an NLM waiter is kept without a retry of its request.
pub const NLM_WAIT: Duration = Duration::from_secs(120);

/// Share reservations (NLM SHARE) held at most per file.
pub const MAX_SHARES_PER_FILE: usize = 1024;

/// A blocked NLM request the server granted: its host must be told
/// (NLM_GRANTED).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NlmGrant {
    pub file: FileKey,
    pub owner: OwnerKey,
    pub start: u64,
    pub end: u64,
    pub kind: LockKind,
}

/// Why an NLM LOCK was not granted.
#[derive(Debug, PartialEq, Eq)]
pub enum NlmRefusal {
    /// The grace period after a restart: only reclaims.
    Grace,
    /// Another owner's lock (or an earlier waiter) is in the way.
    Denied(Held<OwnerKey>),
    /// Queued: NLM_GRANTED follows when it can be granted.
    Blocked,
    /// Past a bound (share reservations of one file).
    NoLocks,
}

/// How long a waiter of `owner` is kept without asking again.
pub fn wait_limit(owner: &OwnerKey, lease: Duration) -> Duration {
    if is_nlm(owner.0) {
        NLM_WAIT
    } else {
        lease
    }
}

impl Tables {
    /// NLM LOCK (XNFS ch. 10, RFC 1813 §6.2): like NFSv4's LOCK with an
    /// owner of its own, but with no open to check.
    #[allow(clippy::too_many_arguments)]
    pub fn nlm_lock(
        &mut self,
        owner: &OwnerKey,
        file: &FileKey,
        start: u64,
        end: u64,
        kind: LockKind,
        block: bool,
        reclaim: bool,
        now: Duration,
    ) -> Result<(), NlmRefusal> {
        if self.grace.active() {
            if !reclaim {
                return Err(NlmRefusal::Grace);
            }
            self.grace.note_progress(now);
        }
        match self.take_lock(owner, file, (start, end), kind, block, now) {
            Ok(()) => {
                self.note_nlm_file(owner.0, file);
                Ok(())
            }
            Err(_) if block => {
                self.note_nlm_file(owner.0, file);
                Err(NlmRefusal::Blocked)
            }
            Err(held) => {
                self.drop_if_empty(file);
                Err(NlmRefusal::Denied(held))
            }
        }
    }

    /// Notes that the NLM host `client` holds or waits for something on
    /// `file`.
    fn note_nlm_file(&mut self, client: ClientId4, file: &FileKey) {
        self.nlm_files
            .entry(client)
            .or_default()
            .insert(file.clone());
    }

    /// NLM UNLOCK: releases `[start, end)` of `owner`'s locks and grants
    /// what that made grantable; the NFSv4 waiters to tell.
    pub fn nlm_unlock(
        &mut self,
        owner: &OwnerKey,
        file: &FileKey,
        start: u64,
        end: u64,
    ) -> Vec<Waiter<OwnerKey>> {
        if let Some(f) = self.files.get_mut(file) {
            f.locks.unlock(owner, start, end);
        }
        let ready = self.wake_waiters(file, Duration::MAX);
        self.drop_if_empty(file);
        ready
    }

    /// NLM CANCEL: forgets `owner`'s queued request on `file`: whether
    /// one was queued (it may have been granted meanwhile), and the NFSv4
    /// waiters to tell.
    pub fn nlm_cancel(
        &mut self,
        owner: &OwnerKey,
        file: &FileKey,
    ) -> (bool, Vec<Waiter<OwnerKey>>) {
        let Some(f) = self.files.get_mut(file) else {
            return (false, Vec::new());
        };
        let queued = f.waiters.iter().any(|w| &w.owner == owner);
        f.waiters.remove(owner);
        // An earlier waiter gone may let later ones through.
        let ready = if queued {
            self.wake_waiters(file, Duration::MAX)
        } else {
            Vec::new()
        };
        self.drop_if_empty(file);
        (queued, ready)
    }

    /// Forgets every lock, waiter and share reservation of the NLM host
    /// `client` (it restarted, or FREE_ALL), granting what that frees;
    /// the NFSv4 waiters to tell, by file.
    pub fn nlm_free_host(&mut self, client: ClientId4) -> Vec<(FileKey, Vec<Waiter<OwnerKey>>)> {
        let Some(files) = self.nlm_files.remove(&client) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for file in files {
            if let Some(f) = self.files.get_mut(&file) {
                f.locks.retain_owners(|o| o.0 != client);
                f.waiters.retain_owners(|o| o.0 != client);
                f.nlm_shares.retain(|s| s.0 .0 != client);
            }
            let ready = self.wake_waiters(&file, Duration::MAX);
            self.drop_if_empty(&file);
            if !ready.is_empty() {
                out.push((file, ready));
            }
        }
        out
    }

    /// Whether the NLM host `client` holds or waits for anything.
    pub fn nlm_host_busy(&self, client: ClientId4) -> bool {
        self.nlm_files.get(&client).is_some_and(|f| !f.is_empty())
    }

    /// NLM SHARE (XNFS ch. 10): a DOS share reservation, `access` and
    /// `deny` in NFSv4's bits (read 1, write 2), checked against NFSv4
    /// opens and other NLM reservations of the file. False when it
    /// conflicts.
    pub fn nlm_share(
        &mut self,
        owner: &OwnerKey,
        file: &FileKey,
        access: u32,
        deny: u32,
        reclaim: bool,
    ) -> Result<bool, NlmRefusal> {
        if self.grace.active() && !reclaim {
            return Err(NlmRefusal::Grace);
        }
        if self.share_conflict(file, Some(owner), None, access, deny) {
            return Ok(false);
        }
        let f = self.files.entry(file.clone()).or_default();
        match f.nlm_shares.iter().position(|s| &s.0 == owner) {
            Some(i) => f.nlm_shares[i] = (owner.clone(), access, deny),
            None if f.nlm_shares.len() >= MAX_SHARES_PER_FILE => return Err(NlmRefusal::NoLocks),
            None => f.nlm_shares.push((owner.clone(), access, deny)),
        }
        self.note_nlm_file(owner.0, file);
        Ok(true)
    }

    /// NLM UNSHARE.
    pub fn nlm_unshare(&mut self, owner: &OwnerKey, file: &FileKey) {
        if let Some(f) = self.files.get_mut(file) {
            f.nlm_shares.retain(|s| &s.0 != owner);
        }
        self.drop_if_empty(file);
    }

    /// Whether `access`/`deny` (NFSv4 bits) conflicts with a share
    /// reservation of `file`: another NLM owner's (not `nlm_owner`), or
    /// another NFSv4 open's (not the open stateid `open`).
    pub fn share_conflict(
        &self,
        file: &FileKey,
        nlm_owner: Option<&OwnerKey>,
        open: Option<[u8; 12]>,
        access: u32,
        deny: u32,
    ) -> bool {
        let Some(f) = self.files.get(file) else {
            return false;
        };
        let clash = |a: u32, d: u32| (access & d) != 0 || (deny & a) != 0;
        f.nlm_shares
            .iter()
            .any(|(o, a, d)| Some(o) != nlm_owner && clash(*a, *d))
            || f.opens.iter().any(|o| {
                Some(*o) != open
                    && self.entry(o).is_ok_and(|(_, e)| match e.kind {
                        super::stateid::StateKind::Open {
                            access: a, deny: d, ..
                        } => clash(a, d),
                        _ => false,
                    })
            })
    }

    /// Grants the waiters of `file` an unlock made grantable: NLM ones
    /// get the lock now (queued in `nlm_granted` for their hosts to be
    /// told); NFSv4 ones are returned, for CB_NOTIFY_LOCK (they retry).
    /// `now` ([`Duration::MAX`]: do not expire) drops stale waiters first.
    pub fn wake_waiters(&mut self, file: &FileKey, now: Duration) -> Vec<Waiter<OwnerKey>> {
        let lease = self.lease;
        let Some(f) = self.files.get_mut(file) else {
            return Vec::new();
        };
        if f.waiters.is_empty() {
            return Vec::new();
        }
        if now != Duration::MAX {
            f.waiters.expire(now, |o| wait_limit(o, lease));
        }
        let mut v4 = Vec::new();
        // Granting one NLM waiter may block the next; grantable() only
        // returns waiters no earlier one conflicts with, so take them in
        // turn and look again after each NLM grant.
        loop {
            let ready = f.waiters.grantable(&f.locks);
            if ready.is_empty() {
                break;
            }
            let mut granted_any = false;
            for w in ready {
                if !is_nlm(w.owner.0) {
                    v4.push(w);
                    continue;
                }
                if f.locks.lock(&w.owner, w.start, w.end, w.kind).is_ok() {
                    f.waiters.remove(&w.owner);
                    granted_any = true;
                    self.nlm_granted.push(NlmGrant {
                        file: file.clone(),
                        owner: w.owner,
                        start: w.start,
                        end: w.end,
                        kind: w.kind,
                    });
                }
            }
            if !granted_any {
                break;
            }
        }
        v4
    }

    /// Removes `file`'s entry once nothing is left in it.
    fn drop_if_empty(&mut self, file: &FileKey) {
        if self.files.get(file).is_some_and(FileState::is_empty) {
            self.files.remove(file);
        }
    }
}

impl super::State {
    /// Sets what to call with blocked NLM requests the server granted
    /// (once).
    pub fn on_nlm_granted(&self, f: super::NlmGranted) {
        let _ = self.nlm_granted.set(f);
    }

    /// NLM LOCK ([`Tables::nlm_lock`]).
    #[allow(clippy::too_many_arguments)]
    pub fn nlm_lock(
        &self,
        owner: &OwnerKey,
        file: &FileKey,
        start: u64,
        end: u64,
        kind: LockKind,
        block: bool,
        reclaim: bool,
    ) -> Result<(), NlmRefusal> {
        self.with(|t, now| t.nlm_lock(owner, file, start, end, kind, block, reclaim, now))
    }

    /// NLM UNLOCK ([`Tables::nlm_unlock`]): the CB_NOTIFY_LOCKs to send.
    pub fn nlm_unlock(
        &self,
        owner: &OwnerKey,
        file: &FileKey,
        start: u64,
        end: u64,
    ) -> Vec<super::LockNotify> {
        self.with(|t, _| {
            let ready = t.nlm_unlock(owner, file, start, end);
            self.lock_notes(t, file, ready)
        })
    }

    /// NLM CANCEL ([`Tables::nlm_cancel`]): whether a request was queued,
    /// and the CB_NOTIFY_LOCKs to send.
    pub fn nlm_cancel(&self, owner: &OwnerKey, file: &FileKey) -> (bool, Vec<super::LockNotify>) {
        self.with(|t, _| {
            let (queued, ready) = t.nlm_cancel(owner, file);
            (queued, self.lock_notes(t, file, ready))
        })
    }

    /// Forgets everything of the NLM host `client`
    /// ([`Tables::nlm_free_host`]): the CB_NOTIFY_LOCKs to send.
    pub fn nlm_free_host(&self, client: ClientId4) -> Vec<super::LockNotify> {
        self.with(|t, _| {
            t.nlm_free_host(client)
                .into_iter()
                .flat_map(|(file, ready)| self.lock_notes(t, &file, ready))
                .collect()
        })
    }

    /// Whether the NLM host `client` holds or waits for anything.
    pub fn nlm_host_busy(&self, client: ClientId4) -> bool {
        self.tables().nlm_host_busy(client)
    }

    /// NLM SHARE ([`Tables::nlm_share`]).
    pub fn nlm_share(
        &self,
        owner: &OwnerKey,
        file: &FileKey,
        access: u32,
        deny: u32,
        reclaim: bool,
    ) -> Result<bool, NlmRefusal> {
        if deny != 0 {
            self.deny_seen
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        self.with(|t, _| t.nlm_share(owner, file, access, deny, reclaim))
    }

    /// NLM UNSHARE.
    pub fn nlm_unshare(&self, owner: &OwnerKey, file: &FileKey) {
        self.with(|t, _| t.nlm_unshare(owner, file))
    }

    /// Whether NFSv3 I/O of `access` (NFSv4's read 1, write 2) on `file`
    /// is denied by a share reservation (an NFSv4 open's deny, or an NLM
    /// share's).
    pub fn io_denied_by_share(&self, file: &FileKey, access: u32) -> bool {
        self.tables().denied_by_share(file, access)
    }

    /// Whether any share reservation with a deny mode was ever granted
    /// (NFSv3 I/O looks for one only then).
    pub fn deny_seen(&self) -> bool {
        self.deny_seen.load(std::sync::atomic::Ordering::Relaxed)
    }
}
