//! Byte-range locks shared with local processes, whichever protocol takes
//! them (NFSv4 LOCK, NLM): the lock table's port to the kernel
//! (`state::shared::SharedLocks`) over each export's backend
//! (`vfs::Vfs::share_lock`: on a local directory, an open file
//! description per lock owner and file, its ranges the kernel's locks),
//! and the task that looks again at waiters a local lock blocks, since a
//! local unlock tells no one.
//!
//! An export with `shared_locks = false` keeps its locks to the server
//! (the port answers as if the kernel had taken them); unlocks and
//! releases always reach the backend, so a reload that turns sharing off
//! leaves no description behind.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use state::locks::LockKind;
use state::shared::{LocalLock, Shared, SharedLocks};
use state::{FileKey, OwnerKey};
use tokio::sync::watch;

use crate::instance::Server;

/// How often waiters a local lock blocks are looked at again.
pub const POLL_EVERY: Duration = Duration::from_millis(100);

/// The port, over the server's exports.
pub struct KernelLocks {
    srv: Weak<Server>,
}

impl KernelLocks {
    pub fn new(srv: &Arc<Server>) -> KernelLocks {
        KernelLocks {
            srv: Arc::downgrade(srv),
        }
    }

    /// The backend of `file`'s export, if it shares locks (`any`: or not).
    fn vfs(&self, file: &FileKey, any: bool) -> Option<(Arc<Server>, Arc<dyn vfs::Vfs>)> {
        let srv = self.srv.upgrade()?;
        let e = srv.export(file.0)?;
        let shares = e.shared_locks && e.vfs.shares_locks();
        if !(any || shares) {
            return None;
        }
        let v = e.vfs.clone();
        Some((srv, v))
    }
}

/// Calls `f` with `owner` as the backend knows it: its client as the
/// group, its name the client id then its own name (unique on the server).
fn as_backend<R>(owner: &OwnerKey, f: impl FnOnce(vfs::LockOwner) -> R) -> R {
    let mut n = Vec::with_capacity(8 + owner.1.len());
    n.extend_from_slice(&owner.0.to_be_bytes());
    n.extend_from_slice(&owner.1);
    f(vfs::LockOwner {
        group: owner.0,
        name: &n,
    })
}

fn local(l: vfs::KernelLock) -> LocalLock {
    LocalLock {
        start: l.start,
        end: l.end,
        kind: if l.write {
            LockKind::Write
        } else {
            LockKind::Read
        },
        pid: l.pid,
    }
}

impl SharedLocks for KernelLocks {
    fn lock(
        &self,
        owner: &OwnerKey,
        file: &FileKey,
        range: (u64, u64),
        kind: LockKind,
        writable: bool,
    ) -> Shared {
        let Some((srv, v)) = self.vfs(file, false) else {
            return Shared::Taken;
        };
        let h = vfs::Handle(file.1.clone());
        let write = kind == LockKind::Write;
        match as_backend(owner, |who| v.share_lock(&h, who, range, write, writable)) {
            vfs::ShareLock::Taken => Shared::Taken,
            vfs::ShareLock::Held(l) => {
                // Polled from now on if it waits.
                srv.shared_wake.notify_one();
                Shared::Local(local(l))
            }
            vfs::ShareLock::Busy => {
                // At most one line a minute: a client looping on it
                // cannot flood the log.
                // (Seconds since the start, plus one: 0 is "never said".)
                static LAST: AtomicU64 = AtomicU64::new(0);
                let now = srv.now().as_secs() + 1;
                let then = LAST.load(Ordering::Relaxed);
                let due = then == 0 || now >= then + 60;
                if due
                    && LAST
                        .compare_exchange(then, now, Ordering::Relaxed, Ordering::Relaxed)
                        .is_ok()
                {
                    tracing::warn!(
                        client = owner.0,
                        "no descriptor for a lock owner's lock (its client's budget, the \
                         export's, or the process's limit): NFS4ERR_DELAY"
                    );
                }
                Shared::Busy
            }
            vfs::ShareLock::Reopen => Shared::Reopen,
        }
    }

    fn reopen(&self, owner: &OwnerKey, file: &FileKey, held: &[(u64, u64, LockKind)]) -> bool {
        let Some((_, v)) = self.vfs(file, true) else {
            return true;
        };
        let held: Vec<(u64, u64, bool)> = held
            .iter()
            .map(|&(s, e, k)| (s, e, k == LockKind::Write))
            .collect();
        let h = vfs::Handle(file.1.clone());
        as_backend(owner, |who| v.share_reopen(&h, who, &held))
    }

    fn unlock(&self, owner: &OwnerKey, file: &FileKey, range: (u64, u64)) {
        if let Some((_, v)) = self.vfs(file, true) {
            let h = vfs::Handle(file.1.clone());
            as_backend(owner, |who| v.share_unlock(&h, who, range));
        }
    }

    fn release(&self, owner: &OwnerKey, file: &FileKey) {
        if let Some((_, v)) = self.vfs(file, true) {
            let h = vfs::Handle(file.1.clone());
            as_backend(owner, |who| v.share_release(&h, who));
        }
    }

    fn test(
        &self,
        owner: &OwnerKey,
        file: &FileKey,
        range: (u64, u64),
        kind: LockKind,
    ) -> Option<LocalLock> {
        let (_, v) = self.vfs(file, false)?;
        let h = vfs::Handle(file.1.clone());
        let write = kind == LockKind::Write;
        as_backend(owner, |who| v.share_test(&h, who, range, write)).map(local)
    }
}

/// Shares byte-range locks with local processes once an export wants it
/// and its backend can: at start, and after a reload.
pub fn install(srv: &Arc<Server>) {
    if srv.first_to_share_locks() {
        srv.state().share_locks(Arc::new(KernelLocks::new(srv)));
    }
}

/// Looks again at waiters local locks may block, every [`POLL_EVERY`]
/// while there are some (else asleep until a local lock refuses one):
/// NFSv4 ones now free are told (CB_NOTIFY_LOCK, the range held for
/// them), NLM ones granted (NLM_GRANTED, through the state's hook). Ends
/// at `shutdown` or when the server is gone.
pub fn spawn_poll(srv: &Arc<Server>, mut shutdown: watch::Receiver<bool>) {
    let weak = Arc::downgrade(srv);
    let wake = srv.shared_wake.clone();
    tokio::spawn(async move {
        loop {
            let Some(srv) = weak.upgrade() else { return };
            if !srv.state().shared_waiters() {
                drop(srv);
                tokio::select! {
                    _ = wake.notified() => {}
                    _ = shutdown.wait_for(|s| *s) => return,
                }
                continue;
            }
            let notes = srv.state().poll_shared();
            if !notes.is_empty() {
                if let Some(cb) = srv.callbacks() {
                    cb.notify_locks(notes);
                }
            }
            drop(srv);
            tokio::select! {
                _ = tokio::time::sleep(POLL_EVERY) => {}
                _ = shutdown.wait_for(|s| *s) => return,
            }
        }
    });
}
