//! NLM's locks and shares in the tables (XNFS ch. 10): owners that are
//! hosts, blocked requests granted by any unlock, shares beside NFSv4's
//! opens.

use super::*;
use crate::nlm::*;
use crate::shared::Shared;

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
        match self.take_lock(owner, file, (start, end), kind, block, true, now) {
            Ok(()) => {
                self.note_nlm_file(owner.0, file);
                Ok(())
            }
            // No descriptor for the kernel's lock now.
            Err(LockError::Status(_)) => {
                self.drop_if_empty(file);
                Err(NlmRefusal::NoLocks)
            }
            Err(_) if block => {
                self.note_nlm_file(owner.0, file);
                Err(NlmRefusal::Blocked)
            }
            Err(LockError::Denied(held)) => {
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
        self.share_unlock(owner, file, (start, end));
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
                let gone: Vec<OwnerKey> = f
                    .locks
                    .owners()
                    .filter(|o| o.0 == client)
                    .cloned()
                    .collect();
                f.locks.retain_owners(|o| o.0 != client);
                for o in &gone {
                    self.release_shared(o, &file);
                }
            }
            if let Some(f) = self.files.get_mut(&file) {
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
                        crate::stateid::StateKind::Open {
                            access: a, deny: d, ..
                        } => clash(a, d),
                        _ => false,
                    })
            })
    }

    /// Grants the waiters of `file` an unlock made grantable: NLM ones
    /// get the lock now (queued in `nlm_granted` for their hosts to be
    /// told); NFSv4 ones are returned, for CB_NOTIFY_LOCK (they retry).
    /// When locks are shared with local processes the kernel is asked
    /// too: a waiter a local lock still blocks waits on (and is polled,
    /// [`Tables::poll_shared`]); for an NFSv4 one the kernel holds the
    /// range until it comes back, so that no local process takes it
    /// first. `now` ([`Duration::MAX`]: do not expire) drops stale
    /// waiters first.
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
        while let Some(f) = self.files.get_mut(file) {
            let ready = f.waiters.grantable(&f.locks);
            if ready.is_empty() {
                break;
            }
            let mut granted_any = false;
            for w in ready {
                let nlm = is_nlm(w.owner.0);
                let range = (w.start, w.end);
                let writable = nlm || w.kind == LockKind::Write;
                let reserved = self.reserved.contains_key(&(file.clone(), w.owner.clone()));
                if !reserved {
                    let r = self.share_take(&w.owner, file, range, w.kind, writable);
                    if r != Shared::Taken {
                        // A local lock (or no descriptor): wait on.
                        if let Some(f) = self.files.get_mut(file) {
                            f.waiters.unnotify(&w.owner);
                        }
                        self.shared_waits.insert(file.clone());
                        continue;
                    }
                }
                if !nlm {
                    if self.shared.is_some() {
                        // Held for it for a lease (it retries).
                        let until = self.clock_or(now).saturating_add(lease);
                        self.reserved
                            .insert((file.clone(), w.owner.clone()), (w.start, w.end, until));
                    }
                    v4.push(w);
                    continue;
                }
                let Some(f) = self.files.get_mut(file) else {
                    break;
                };
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
    pub(crate) fn drop_if_empty(&mut self, file: &FileKey) {
        if self.files.get(file).is_some_and(FileState::is_empty) {
            self.files.remove(file);
        }
    }
}
