//! NFS byte-range locks shared with local processes: each NFS lock owner
//! holding locks on a file has an open file description of its own, and
//! its ranges are open file description locks (`fcntl(2)` `F_OFD_SETLK`)
//! on it, so they conflict with local processes' `fcntl(2)` locks (and
//! theirs with its) in the kernel's one lock list of the file, both ways
//! ([`crate::Vfs::share_lock`]).
//!
//! Why these locks: a POSIX (`F_SETLK`) lock belongs to the process, so
//! every NFS owner would be one owner, and closing any descriptor of the
//! file would drop them all; an open file description lock belongs to its
//! description, one per NFS owner and file here.
//!
//! Bounds: descriptions held at once are capped for the export
//! (RLIMIT_NOFILE / 8) and for each client (a quarter of that); past
//! either a new owner's lock is [`ShareLock::Busy`] (NFS4ERR_DELAY), so a
//! client that makes lock owners without end cannot take the descriptors
//! other clients need.
//!
//! Offsets: the kernel's range ends at 2^63 - 1. An NFS range reaching
//! past it is held by the kernel to its end; one starting past it only
//! by the server's table (no local process can lock there either).

use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Mutex;

use bytes::Bytes;

use super::{sys, Obj};
use crate::{Errno, Handle, KernelLock, Result, ShareLock};

/// The last offset the kernel can lock (`OFFSET_MAX`).
const OFF_MAX: u64 = i64::MAX as u64;

/// fcntl(2) open file description locks (Linux 3.15).
const F_OFD_GETLK: libc::c_int = 36;
const F_OFD_SETLK: libc::c_int = 37;

struct Desc {
    fd: OwnedFd,
    writable: bool,
    group: u64,
}

#[derive(Default)]
struct Inner {
    descs: HashMap<(Handle, Bytes), Desc>,
    /// Descriptions held per group (client).
    groups: HashMap<u64, usize>,
}

/// The descriptions NFS lock owners hold their locks through.
pub(super) struct Descriptions {
    inner: Mutex<Inner>,
    budget: usize,
    per_group: usize,
}

/// What a lock request asks of [`Descriptions::lock`].
pub(super) struct Ask<'a> {
    pub group: u64,
    pub owner: &'a [u8],
    pub range: (u64, u64),
    pub write: bool,
    pub writable: bool,
}

impl Descriptions {
    /// At most `budget` descriptions, a quarter of them per group.
    pub fn new(budget: usize) -> Descriptions {
        Descriptions {
            inner: Mutex::new(Inner::default()),
            budget,
            per_group: (budget / 4).max(4),
        }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many descriptions are open.
    #[cfg(test)]
    pub fn open_count(&self) -> usize {
        self.inner().descs.len()
    }

    /// Takes `ask.range` for the owner on the file open as `path` (an
    /// `O_PATH` descriptor's /proc path, `h` its handle), opening the
    /// owner's description first if it has none.
    pub fn lock(&self, h: &Handle, path: &dyn Fn() -> Result<Obj>, ask: Ask) -> ShareLock {
        if ask.range.0 > OFF_MAX {
            return ShareLock::Taken;
        }
        let key = (h.clone(), Bytes::copy_from_slice(ask.owner));
        let mut inner = self.inner();
        let fresh = match inner.descs.get(&key) {
            Some(d) if ask.write && !d.writable => return ShareLock::Reopen,
            Some(_) => None,
            None => {
                let in_group = inner.groups.get(&ask.group).copied().unwrap_or(0);
                if inner.descs.len() >= self.budget || in_group >= self.per_group {
                    return ShareLock::Busy;
                }
                match open_description(path, ask.write, ask.writable) {
                    Ok(Some(d)) => Some(d),
                    Ok(None) => return ShareLock::Taken,
                    Err(_) => return ShareLock::Busy,
                }
            }
        };
        let fd = match (&fresh, inner.descs.get(&key)) {
            (Some((fd, _)), _) => fd.as_raw_fd(),
            (None, Some(d)) => d.fd.as_raw_fd(),
            (None, None) => return ShareLock::Busy,
        };
        let kind = if ask.write {
            libc::F_WRLCK
        } else {
            libc::F_RDLCK
        };
        match set(fd, kind, ask.range) {
            Ok(()) => {
                if let Some((fd, writable)) = fresh {
                    *inner.groups.entry(ask.group).or_default() += 1;
                    let group = ask.group;
                    inner.descs.insert(
                        key,
                        Desc {
                            fd,
                            writable,
                            group,
                        },
                    );
                }
                ShareLock::Taken
            }
            Err(Errno(libc::EAGAIN)) | Err(Errno(libc::EACCES)) => {
                // Who holds it (gone already: taken by the next try).
                match get(fd, kind, ask.range) {
                    Ok(Some(l)) => ShareLock::Held(l),
                    _ => ShareLock::Held(KernelLock {
                        start: ask.range.0,
                        end: ask.range.1,
                        write: true,
                        pid: 0,
                    }),
                }
            }
            Err(_) => ShareLock::Busy,
        }
    }

    /// Moves the owner's read-only description to one open for writing,
    /// with the same (shared) ranges `held`.
    pub fn reopen(
        &self,
        h: &Handle,
        path: &dyn Fn() -> Result<Obj>,
        owner: &[u8],
        held: &[(u64, u64, bool)],
    ) -> bool {
        let key = (h.clone(), Bytes::copy_from_slice(owner));
        let mut inner = self.inner();
        if !inner.descs.contains_key(&key) {
            return true;
        }
        let Ok(Some((fd, true))) = open_description(path, true, true) else {
            return false;
        };
        // Another description's shared locks beside this one's: a read
        // lock never conflicts with them, nor with anything else, since
        // the old description already holds it.
        for &(s, e, write) in held {
            if write || set(fd.as_raw_fd(), libc::F_RDLCK, (s, e)).is_err() {
                return false;
            }
        }
        if let Some(d) = inner.descs.get_mut(&key) {
            d.fd = fd;
            d.writable = true;
        }
        true
    }

    /// Releases `range` of the owner's locks.
    pub fn unlock(&self, h: &Handle, owner: &[u8], range: (u64, u64)) {
        if range.0 > OFF_MAX {
            return;
        }
        let key = (h.clone(), Bytes::copy_from_slice(owner));
        if let Some(d) = self.inner().descs.get(&key) {
            let _ = set(d.fd.as_raw_fd(), libc::F_UNLCK, range);
        }
    }

    /// Closes the owner's description: the kernel drops its locks.
    pub fn release(&self, h: &Handle, owner: &[u8]) {
        let key = (h.clone(), Bytes::copy_from_slice(owner));
        let mut inner = self.inner();
        if let Some(d) = inner.descs.remove(&key) {
            if let Some(n) = inner.groups.get_mut(&d.group) {
                *n -= 1;
                if *n == 0 {
                    inner.groups.remove(&d.group);
                }
            }
        }
    }

    /// Closes every description.
    pub fn release_all(&self) {
        let mut inner = self.inner();
        inner.descs.clear();
        inner.groups.clear();
    }

    /// The lock that would conflict with `range` for the owner (through
    /// its description, so its own locks do not; else through a new
    /// read-only one).
    pub fn test(
        &self,
        h: &Handle,
        path: &dyn Fn() -> Result<Obj>,
        owner: &[u8],
        range: (u64, u64),
        write: bool,
    ) -> Option<KernelLock> {
        if range.0 > OFF_MAX {
            return None;
        }
        let kind = if write { libc::F_WRLCK } else { libc::F_RDLCK };
        let key = (h.clone(), Bytes::copy_from_slice(owner));
        if let Some(d) = self.inner().descs.get(&key) {
            return get(d.fd.as_raw_fd(), kind, range).ok().flatten();
        }
        let (fd, _) = open_description(path, false, false).ok()??;
        get(fd.as_raw_fd(), kind, range).ok().flatten()
    }
}

/// Opens a description of the object `path` gives: for writing when the
/// lock is exclusive or the owner may write (`writable`), falling back to
/// reading for a shared lock (the object cannot be written, or opening it
/// for writing would break a lease). `None` for anything but a regular
/// file, or one this process may not open (its locks stay the server's).
fn open_description(
    path: &dyn Fn() -> Result<Obj>,
    write: bool,
    writable: bool,
) -> Result<Option<(OwnedFd, bool)>> {
    let o = path()?;
    if o.fmt() != libc::S_IFREG {
        return Ok(None);
    }
    let p = sys::proc_path(o.raw());
    // Never wait for a lease break (EWOULDBLOCK instead), and never
    // become a controlling terminal.
    let flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if write || writable {
        match sys::openat(libc::AT_FDCWD, &p, flags | libc::O_RDWR, 0) {
            Ok(fd) => return Ok(Some((fd, true))),
            Err(Errno(libc::EMFILE | libc::ENFILE | libc::ENOMEM)) => {
                return Err(Errno(libc::EMFILE))
            }
            Err(Errno(libc::EWOULDBLOCK)) if write => return Err(Errno(libc::EWOULDBLOCK)),
            Err(e) if write => {
                tracing::debug!("a description for writing to lock: {e:?}; the server's alone");
                return Ok(None);
            }
            Err(_) => {}
        }
    }
    match sys::openat(libc::AT_FDCWD, &p, flags | libc::O_RDONLY, 0) {
        Ok(fd) => Ok(Some((fd, false))),
        Err(Errno(libc::EMFILE | libc::ENFILE | libc::ENOMEM)) => Err(Errno(libc::EMFILE)),
        Err(_) => Ok(None),
    }
}

fn flock(kind: libc::c_int, (start, end): (u64, u64)) -> libc::flock {
    // SAFETY: flock is plain data; all zeroes is a valid value.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = kind as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = start as libc::off_t;
    // To the end of the file when the range reaches past what the
    // kernel can lock.
    fl.l_len = if end == u64::MAX || end > OFF_MAX {
        0
    } else {
        (end - start) as libc::off_t
    };
    fl
}

fn set(fd: std::os::fd::RawFd, kind: libc::c_int, range: (u64, u64)) -> Result<()> {
    let fl = flock(kind, range);
    // SAFETY: fcntl with a live descriptor and a flock it only reads.
    let r = unsafe { libc::fcntl(fd, F_OFD_SETLK, &fl) };
    if r < 0 {
        return Err(sys::errno());
    }
    Ok(())
}

/// The first lock conflicting with `kind` over `range` for the
/// description `fd`.
fn get(fd: std::os::fd::RawFd, kind: libc::c_int, range: (u64, u64)) -> Result<Option<KernelLock>> {
    let mut fl = flock(kind, range);
    // SAFETY: fcntl with a live descriptor and a flock it fills in.
    let r = unsafe { libc::fcntl(fd, F_OFD_GETLK, &mut fl) };
    if r < 0 {
        return Err(sys::errno());
    }
    if fl.l_type == libc::F_UNLCK as libc::c_short {
        return Ok(None);
    }
    let start = fl.l_start.max(0) as u64;
    Ok(Some(KernelLock {
        start,
        end: if fl.l_len <= 0 {
            u64::MAX
        } else {
            start.saturating_add(fl.l_len as u64)
        },
        write: fl.l_type == libc::F_WRLCK as libc::c_short,
        // -1 for another description's lock: no process to name.
        pid: u32::try_from(fl.l_pid).unwrap_or(0),
    }))
}
