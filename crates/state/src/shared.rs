//! Byte-range locks shared with processes outside NFS: the port through
//! which the lock table asks the file system's own lock manager (the
//! kernel's, on an export of a local directory) for every lock it grants,
//! so that an NFS lock and a local `fcntl(2)` lock on the same range
//! conflict both ways.
//!
//! The kernel's answer is part of the decision (a local lock in the way
//! denies the request), so the tables ask it while they hold their lock:
//! a grant is atomic with the NFS conflicts checked beside it, and a
//! denial changes nothing (no stateid sequence to undo). The port's calls
//! are short non-blocking system calls; the driver implements it over its
//! file systems (Ferrite's server: open file description locks,
//! `vfs::Vfs::share_lock`), and the unit tests over an in-memory table on
//! the manual clock (`tests/shared_locks.rs`).
//!
//! What the port is told, so that the kernel holds exactly an owner's
//! locks on a file:
//! * [`SharedLocks::lock`] before a range goes into the table (the table
//!   has checked NFS owners and waiters first);
//! * [`SharedLocks::unlock`] after a range leaves it;
//! * [`SharedLocks::release`] when the owner holds nothing more there
//!   (its last unlock, its lock stateid freed, its client purged, its NLM
//!   host gone).
//!
//! A local process's unlock is silent: waiters it blocked are looked at
//! again by [`crate::State::poll_shared`], which the driver calls while
//! [`crate::State::shared_waiters`] says some wait.

use bytes::Bytes;

use crate::locks::{Held, LockKind};
use crate::types::{FileKey, OwnerKey};

/// The client id a lock held by a local process is reported under (in a
/// LOCK4denied, an NLM holder): NFSv4 client ids are `epoch << 32 | n`
/// with an epoch of at least one, NLM hosts' have all high bits set.
pub const LOCAL_CLIENT: u64 = 0;

/// A lock held by a process outside NFS, as the kernel reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalLock {
    pub start: u64,
    /// Exclusive; `u64::MAX` to the end of the file.
    pub end: u64,
    pub kind: LockKind,
    /// The holder's process id (0 when the kernel does not say: an open
    /// file description lock).
    pub pid: u32,
}

impl LocalLock {
    /// The lock as a holder in the way: owner `local pid N` of
    /// [`LOCAL_CLIENT`].
    pub fn held(&self) -> Held<OwnerKey> {
        let name = if self.pid == 0 {
            "local process".to_string()
        } else {
            format!("local pid {}", self.pid)
        };
        Held {
            owner: (LOCAL_CLIENT, Bytes::from(name)),
            start: self.start,
            end: self.end,
            kind: self.kind,
        }
    }
}

/// The kernel's answer to [`SharedLocks::lock`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shared {
    /// Taken (or not shared for this file: the table alone holds it).
    Taken,
    /// A local process holds a conflicting lock.
    Local(LocalLock),
    /// The owner's lock needs a descriptor it may not have now (the
    /// budget of descriptors for locks, or a lease being broken): try
    /// again later (NFS4ERR_DELAY, NLM4_DENIED_NOLOCKS).
    Busy,
    /// The owner's description was opened for reading and this lock is
    /// exclusive: call [`SharedLocks::reopen`] with what it holds, then
    /// again.
    Reopen,
}

/// The file system's own lock manager, as the lock table sees it. Every
/// call is made with the tables' lock held, and returns at once.
pub trait SharedLocks: Send + Sync {
    /// Takes `[start, end)` of `kind` for `owner` on `file` (`writable`:
    /// the owner's open may write, so its description may be opened for
    /// writing), unless a local process holds a conflicting lock. A
    /// refused lock leaves nothing taken (a description opened for it is
    /// closed again).
    fn lock(
        &self,
        owner: &OwnerKey,
        file: &FileKey,
        range: (u64, u64),
        kind: LockKind,
        writable: bool,
    ) -> Shared;
    /// Moves `owner`'s locks on `file` (`held`, all shared ones) to a
    /// description open for writing; false if it cannot now.
    fn reopen(&self, owner: &OwnerKey, file: &FileKey, held: &[(u64, u64, LockKind)]) -> bool;
    /// Releases `[start, end)` of `owner`'s locks on `file`.
    fn unlock(&self, owner: &OwnerKey, file: &FileKey, range: (u64, u64));
    /// Releases everything `owner` holds on `file`.
    fn release(&self, owner: &OwnerKey, file: &FileKey);
    /// The local lock that would conflict with `[start, end)` of `kind`
    /// for `owner` (whose own locks never conflict), if any.
    fn test(
        &self,
        owner: &OwnerKey,
        file: &FileKey,
        range: (u64, u64),
        kind: LockKind,
    ) -> Option<LocalLock>;
}
