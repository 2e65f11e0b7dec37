//! [`State`]'s transitions for NLM (XNFS ch. 10): locks, unlocks,
//! cancels, a host's locks freed, shares; blocked requests granted are
//! handed to the driver's hook.

use super::*;
use crate::nlm::*;

impl State {
    /// Sets what to call with blocked NLM requests the server granted
    /// (once).
    pub fn on_nlm_granted(&self, f: NlmGranted) {
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
    ) -> Vec<LockNotify> {
        self.with(|t, _| {
            let ready = t.nlm_unlock(owner, file, start, end);
            self.lock_notes(t, file, ready)
        })
    }

    /// NLM CANCEL ([`Tables::nlm_cancel`]): whether a request was queued,
    /// and the CB_NOTIFY_LOCKs to send.
    pub fn nlm_cancel(&self, owner: &OwnerKey, file: &FileKey) -> (bool, Vec<LockNotify>) {
        self.with(|t, _| {
            let (queued, ready) = t.nlm_cancel(owner, file);
            (queued, self.lock_notes(t, file, ready))
        })
    }

    /// Forgets everything of the NLM host `client`
    /// ([`Tables::nlm_free_host`]): the CB_NOTIFY_LOCKs to send.
    pub fn nlm_free_host(&self, client: ClientId4) -> Vec<LockNotify> {
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
