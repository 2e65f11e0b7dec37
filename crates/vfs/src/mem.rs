//! [`MemFs`]: a [`Vfs`] backend keeping a whole file system in memory,
//! for in-process tests of the protocol layers.
//!
//! It answers like [`LocalFs`](crate::local::LocalFs) running as root on
//! Linux (ext4 mounted `relatime`) for everything the protocol layers rely
//! on: POSIX permissions with the caller's [`Creds`] (uid 0 is root, the
//! owner may always read and write his files as NFS servers allow), the
//! kernel's errnos and their order, set-id bits dropped by writes and
//! chown, sticky directories, protected hard links, and times, `nlink` and
//! the change attribute as the kernel keeps them.
//!
//! # Handles
//! 16 bytes: the inode number and a generation, both big-endian. Inode
//! numbers are reused; the generation is not, so the handle of a removed
//! object stays ESTALE. Any other length is ESTALE too.
//!
//! # Limits
//! Everything is bounded by [`Limits`]: bytes (file data in 4 KiB chunks,
//! holes cost nothing; each directory entry costs [`ENTRY_BYTES`] plus its
//! name; a symlink its target), inodes, and links per inode. Running out is
//! ENOSPC (EMLINK for links).
//!
//! # Differences from `LocalFs`
//! * Writes, COPY and ALLOCATE that run out of space fail whole (COPY stops
//!   short after copying something); the kernel may write part.
//! * Allocated but unwritten ranges read as zeros and count as data for
//!   SEEK (as on tmpfs; ext4 reports them as holes).
//! * CLONE copies the data (ranges must be 4 KiB aligned, as the kernel
//!   asks of block-sharing file systems); `LocalFs` on ext4 has no CLONE.
//! * Directory cookies are entry serials: a listing resumes after the
//!   entry with that cookie even if it was removed.
//! * An empty write changes nothing (`LocalFs` moves the change attribute).

mod create;
mod data;
mod io;
mod names;
mod node;
mod perm;
#[cfg(test)]
mod tests;
mod tree;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;

use self::tree::Tree;
use crate::{
    Attr, CreateKind, CreateMode, Creds, DirEntry, FsStat, Handle, Result, SeekWhat, SetAttr,
    Stability, Timespec, Vfs,
};

pub use self::node::ENTRY_BYTES;

/// The time source: returns the current time since the epoch.
pub type Clock = Arc<dyn Fn() -> Timespec + Send + Sync>;

/// The real time of day.
pub fn system_clock() -> Clock {
    Arc::new(|| {
        let d = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Timespec {
            sec: d.as_secs() as i64,
            nsec: d.subsec_nanos(),
        }
    })
}

/// How much a [`MemFs`] may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of file data, directory entries and symlink targets.
    pub max_bytes: u64,
    /// Objects, the root included.
    pub max_inodes: u64,
    /// Hard links of a file, and subdirectories + 2 of a directory.
    pub max_links: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 256 << 20,
            max_inodes: 100_000,
            max_links: 65_000,
        }
    }
}

/// An in-memory file system. Its root is a directory owned by 0:0 with
/// mode 0755.
pub struct MemFs {
    tree: Mutex<Tree>,
    /// Distinguishes this file system from every other of the process.
    identity: u64,
    /// How long a create takes to return after the file exists, as one on
    /// disk does while its directory is synced (for tests of the window).
    create_delay: std::time::Duration,
}

impl std::fmt::Debug for MemFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemFs").finish_non_exhaustive()
    }
}

impl Default for MemFs {
    fn default() -> Self {
        MemFs::new(Limits::default(), system_clock())
    }
}

impl MemFs {
    /// An empty file system with these limits and clock.
    pub fn new(limits: Limits, clock: Clock) -> MemFs {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        MemFs {
            tree: Mutex::new(Tree::new(limits, clock)),
            identity: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            create_delay: std::time::Duration::ZERO,
        }
    }

    /// This file system, its creates returning `delay` after the file
    /// exists (the file is visible to others meanwhile).
    pub fn with_create_delay(mut self, delay: std::time::Duration) -> MemFs {
        self.create_delay = delay;
        self
    }

    fn tree(&self) -> MutexGuard<'_, Tree> {
        // Calls check before they change anything and do not panic once
        // checked, so a poisoned lock still guards a consistent tree.
        self.tree.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Entries handed to a readdir callback per lock hold.
const READDIR_BATCH: usize = 128;

impl Vfs for MemFs {
    fn root(&self) -> Handle {
        self.tree().root_handle()
    }

    /// Lives as long as the process: another `MemFs` is another root.
    fn root_identity(&self) -> Bytes {
        let mut id = b"mem:".to_vec();
        id.extend_from_slice(&self.identity.to_be_bytes());
        Bytes::from(id)
    }

    /// Memory never blocks: every lookup in a directory is answered here.
    fn lookup_nowait(
        &self,
        c: &Creds,
        dir: &Handle,
        name: &[u8],
    ) -> Option<Result<(Handle, Attr)>> {
        match self.getattr(dir) {
            Ok(a) if a.ftype == crate::FileType::Directory => Some(self.lookup(c, dir, name)),
            _ => None,
        }
    }

    /// Memory never blocks.
    fn access_nowait(&self, c: &Creds, h: &Handle, mask: i32) -> Option<Result<bool>> {
        Some(self.access(c, h, mask))
    }

    /// Memory never blocks.
    fn getattr_nowait(&self, h: &Handle) -> Option<Result<Attr>> {
        Some(self.getattr(h))
    }

    fn getattr(&self, h: &Handle) -> Result<Attr> {
        let t = self.tree();
        let ino = t.resolve(h)?;
        Ok(t.attr(ino))
    }

    fn lookup(&self, c: &Creds, dir: &Handle, name: &[u8]) -> Result<(Handle, Attr)> {
        self.tree().lookup(c, dir, name)
    }

    fn lookup_parent(&self, c: &Creds, dir: &Handle) -> Result<(Handle, Attr)> {
        self.tree().lookup_parent(c, dir)
    }

    fn access(&self, c: &Creds, h: &Handle, mask: i32) -> Result<bool> {
        self.tree().access(c, h, mask)
    }

    fn setattr(&self, c: &Creds, h: &Handle, set: &SetAttr) -> Result<Attr> {
        if set.acl.is_some() {
            // No ACLs kept here (`acls` is false).
            return Err(crate::Errno(libc::EOPNOTSUPP));
        }
        self.tree().setattr(c, h, set)
    }

    fn read(&self, c: &Creds, h: &Handle, offset: u64, count: u32) -> Result<(Bytes, bool)> {
        self.tree().read(c, h, offset, count)
    }

    /// Memory never blocks: every read is answered here.
    fn read_nowait(
        &self,
        c: &Creds,
        h: &Handle,
        offset: u64,
        count: u32,
    ) -> Option<Result<(Bytes, bool)>> {
        Some(self.read(c, h, offset, count))
    }

    fn write(
        &self,
        c: &Creds,
        h: &Handle,
        offset: u64,
        data: &[u8],
        stable: Stability,
    ) -> Result<Stability> {
        self.tree().write(c, h, offset, data)?;
        Ok(stable)
    }

    fn commit(&self, h: &Handle) -> Result<()> {
        self.tree().commit(h)
    }

    fn create_file(
        &self,
        c: &Creds,
        dir: &Handle,
        name: &[u8],
        how: CreateMode,
        set: &SetAttr,
    ) -> Result<(Handle, Attr, bool)> {
        let made = self.tree().create_file(c, dir, name, how, set)?;
        if made.2 && !self.create_delay.is_zero() {
            std::thread::sleep(self.create_delay);
        }
        Ok(made)
    }

    fn create(
        &self,
        c: &Creds,
        dir: &Handle,
        name: &[u8],
        kind: &CreateKind,
        set: &SetAttr,
    ) -> Result<(Handle, Attr)> {
        self.tree().create(c, dir, name, kind, set)
    }

    fn remove(&self, c: &Creds, dir: &Handle, name: &[u8]) -> Result<()> {
        self.tree().remove(c, dir, name)
    }

    fn rename(
        &self,
        c: &Creds,
        from: &Handle,
        from_name: &[u8],
        to: &Handle,
        to_name: &[u8],
    ) -> Result<()> {
        self.tree().rename(c, from, from_name, to, to_name)
    }

    fn link(&self, c: &Creds, file: &Handle, dir: &Handle, name: &[u8]) -> Result<()> {
        self.tree().link(c, file, dir, name)
    }

    fn readlink(&self, _c: &Creds, h: &Handle) -> Result<Bytes> {
        self.tree().readlink(h)
    }

    /// Hands entries to `each` in batches, without the lock held.
    fn readdir(
        &self,
        c: &Creds,
        dir: &Handle,
        cookie: u64,
        with_attrs: bool,
        each: &mut dyn FnMut(DirEntry) -> bool,
    ) -> Result<bool> {
        let mut cookie = cookie;
        let mut first = true;
        loop {
            let (batch, end) =
                self.tree()
                    .readdir_batch(c, dir, cookie, with_attrs, first, READDIR_BATCH)?;
            first = false;
            for e in batch {
                cookie = e.cookie;
                if !each(e) {
                    return Ok(false);
                }
            }
            if end {
                return Ok(true);
            }
        }
    }

    /// Memory never blocks: every listing is answered here.
    fn readdir_nowait(
        &self,
        c: &Creds,
        dir: &Handle,
        cookie: u64,
        each: &mut dyn FnMut(DirEntry) -> bool,
    ) -> Option<Result<bool>> {
        Some(self.readdir(c, dir, cookie, false, each))
    }

    /// Nothing but the server reaches an in-memory file system: a regular
    /// file is always guarded.
    fn guard_local_writes(&self, h: &Handle, _on_break: crate::lease::OnBreak) -> Result<bool> {
        Ok(self.getattr(h)?.ftype == crate::FileType::Regular)
    }

    /// Nothing but the server reaches an in-memory file system: nothing
    /// else changes it.
    fn watch_local_changes(
        &self,
        h: &Handle,
        _hold_opens: bool,
        _on_change: crate::watch::OnChange,
    ) -> Result<bool> {
        self.getattr(h).map(|_| true)
    }

    fn fsstat(&self, h: &Handle) -> Result<FsStat> {
        self.tree().fsstat(h)
    }

    fn allocate(&self, c: &Creds, h: &Handle, offset: u64, len: u64) -> Result<()> {
        self.tree().allocate(c, h, offset, len)
    }

    fn deallocate(&self, c: &Creds, h: &Handle, offset: u64, len: u64) -> Result<()> {
        self.tree().deallocate(c, h, offset, len)
    }

    fn seek(&self, c: &Creds, h: &Handle, offset: u64, what: SeekWhat) -> Result<Option<u64>> {
        self.tree().seek(c, h, offset, what)
    }

    fn copy(&self, c: &Creds, s: &Handle, so: u64, d: &Handle, dof: u64, n: u64) -> Result<u64> {
        self.tree().copy(c, s, so, d, dof, n)
    }

    fn clone_range(
        &self,
        c: &Creds,
        s: &Handle,
        so: u64,
        d: &Handle,
        dof: u64,
        n: u64,
    ) -> Result<()> {
        self.tree().clone_range(c, s, so, d, dof, n)
    }
}
