//! Locks shared with local processes, in the tables (`crate::shared`):
//! what the kernel is told as ranges enter and leave the table, the
//! ranges it holds for NFSv4 waiters told to retry, and the waiters a
//! local lock blocks, looked at again by polling.

use super::*;
use crate::shared::Shared;

impl Tables {
    /// Asks the kernel for `[start, end)` of `kind` for `owner` on `file`
    /// (moving a description opened for reading to one open for writing
    /// when an exclusive lock needs it). `Taken` when locks are not shared.
    pub(crate) fn share_take(
        &self,
        owner: &OwnerKey,
        file: &FileKey,
        range: (u64, u64),
        kind: LockKind,
        writable: bool,
    ) -> Shared {
        let Some(port) = &self.shared else {
            return Shared::Taken;
        };
        match port.0.lock(owner, file, range, kind, writable) {
            Shared::Reopen => {
                let held = self
                    .files
                    .get(file)
                    .map(|f| f.locks.held_by(owner))
                    .unwrap_or_default();
                if !port.0.reopen(owner, file, &held) {
                    return Shared::Busy;
                }
                match port.0.lock(owner, file, range, kind, true) {
                    Shared::Reopen => Shared::Busy,
                    r => r,
                }
            }
            r => r,
        }
    }

    /// Tells the kernel `owner` let go of `[start, end)` on `file` (the
    /// table has already), and lets go of its description once it holds
    /// nothing there.
    pub(crate) fn share_unlock(&mut self, owner: &OwnerKey, file: &FileKey, range: (u64, u64)) {
        let Some(port) = self.shared.clone() else {
            return;
        };
        let reserved = self.reserved.contains_key(&(file.clone(), owner.clone()));
        let holds = self
            .files
            .get(file)
            .is_some_and(|f| f.locks.holds_any(owner));
        if holds || reserved {
            port.0.unlock(owner, file, range);
        } else {
            port.0.release(owner, file);
        }
    }

    /// Lets go of everything `owner` holds on `file` in the kernel (its
    /// lock state or its client went), a range held for it as a waiter
    /// too.
    pub(crate) fn release_shared(&mut self, owner: &OwnerKey, file: &FileKey) {
        if let Some(port) = &self.shared {
            self.reserved.remove(&(file.clone(), owner.clone()));
            port.0.release(owner, file);
        }
    }

    /// Ends the range held in the kernel for the waiter `owner` of
    /// `file`: the parts the table does not give it are unlocked.
    pub(crate) fn unreserve(&mut self, owner: &OwnerKey, file: &FileKey) {
        let Some((start, end, _)) = self.reserved.remove(&(file.clone(), owner.clone())) else {
            return;
        };
        let Some(port) = self.shared.clone() else {
            return;
        };
        let Some(f) = self.files.get(file) else {
            port.0.release(owner, file);
            return;
        };
        if !f.locks.holds_any(owner) {
            port.0.release(owner, file);
            return;
        }
        for gap in f.locks.gaps(owner, start, end) {
            port.0.unlock(owner, file, gap);
        }
    }

    /// Ends the ranges held on `file` for waiters no longer queued (they
    /// stopped retrying, or were removed), but `owner`'s: the kernel
    /// would otherwise refuse others for them until their lease is over.
    pub(crate) fn drop_stale_reservations(&mut self, file: &FileKey, owner: &OwnerKey) {
        if self.reserved.is_empty() {
            return;
        }
        let f = self.files.get(file);
        let stale: Vec<OwnerKey> = self
            .reserved
            .keys()
            .filter(|(rf, o)| {
                rf == file
                    && o != owner
                    && !f.is_some_and(|f| f.waiters.iter().any(|w| &w.owner == o))
            })
            .map(|(_, o)| o.clone())
            .collect();
        for o in stale {
            self.unreserve(&o, file);
        }
    }

    /// Whether client `c` holds a byte-range lock (not merely a lock
    /// stateid) while locks are shared: its lease's end then ends its
    /// state, so a dead client stops blocking local processes.
    pub(crate) fn holds_shared_locks(&self, c: &Client) -> bool {
        self.shared.is_some()
            && c.locks_by_owner.keys().any(|(owner, file)| {
                self.files
                    .get(file)
                    .is_some_and(|f| f.locks.holds_any(&(c.id, owner.clone())))
            })
    }

    /// Looks again at the waiters local locks may block (a local unlock
    /// is silent): grants NLM ones now free, holds the range for NFSv4
    /// ones and returns them to be told; ends ranges held for waiters
    /// that did not come back within a lease.
    pub fn poll_shared(&mut self, now: Duration) -> Vec<(FileKey, Vec<Waiter<OwnerKey>>)> {
        let stale: Vec<(FileKey, OwnerKey)> = self
            .reserved
            .iter()
            .filter(|(_, (_, _, until))| *until < now)
            .map(|(k, _)| k.clone())
            .collect();
        for (file, owner) in stale {
            self.unreserve(&owner, &file);
            self.drop_if_empty(&file);
        }
        let files: Vec<FileKey> = self.shared_waits.iter().cloned().collect();
        let mut out = Vec::new();
        for file in files {
            let waits = self.files.get(&file).is_some_and(|f| !f.waiters.is_empty());
            if !waits {
                self.shared_waits.remove(&file);
                continue;
            }
            let ready = self.wake_waiters(&file, now);
            if self.files.get(&file).is_none_or(|f| f.waiters.is_empty()) {
                self.shared_waits.remove(&file);
            }
            self.drop_if_empty(&file);
            if !ready.is_empty() {
                out.push((file, ready));
            }
        }
        out
    }

    /// How many files and held ranges [`Tables::poll_shared`] has to look
    /// at.
    pub fn shared_pending(&self) -> usize {
        self.shared_waits.len() + self.reserved.len()
    }
}
