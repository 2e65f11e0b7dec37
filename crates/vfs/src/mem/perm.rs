//! Permission checks as Linux makes them for a caller's fsuid, fsgid and
//! groups: uid 0 has every file capability, anyone else none.

use super::node::{Inode, S_ISGID, S_ISUID, S_ISVTX};
use crate::{Creds, Errno, Result};

pub(super) const R: u32 = 4;
pub(super) const W: u32 = 2;
pub(super) const X: u32 = 1;

pub(super) fn is_root(c: &Creds) -> bool {
    c.uid == 0
}

pub(super) fn in_group(c: &Creds, gid: u32) -> bool {
    c.gid == gid || c.groups.contains(&gid)
}

/// generic_permission: the owner's, group's or others' bits; root may do
/// anything but execute a file with no execute bit.
pub(super) fn permits(c: &Creds, n: &Inode, mask: u32) -> bool {
    if is_root(c) {
        return mask & X == 0 || n.is_dir() || n.mode & 0o111 != 0;
    }
    let bits = if c.uid == n.uid {
        n.mode >> 6
    } else if in_group(c, n.gid) {
        n.mode >> 3
    } else {
        n.mode
    } & 7;
    bits & mask == mask
}

/// [`permits`] or EACCES.
pub(super) fn check(c: &Creds, n: &Inode, mask: u32) -> Result<()> {
    if permits(c, n, mask) {
        Ok(())
    } else {
        Err(Errno(libc::EACCES))
    }
}

pub(super) fn owner_or_root(c: &Creds, n: &Inode) -> bool {
    is_root(c) || c.uid == n.uid
}

/// Reads and writes through the server's own descriptor: the owner always
/// may (NFS owner override), reading also with execute permission.
pub(super) fn may_io(c: &Creds, n: &Inode, write: bool) -> Result<()> {
    if owner_or_root(c, n) {
        return Ok(());
    }
    let ok = if write {
        permits(c, n, W)
    } else {
        permits(c, n, R) || permits(c, n, X)
    };
    if ok {
        Ok(())
    } else {
        Err(Errno(libc::EACCES))
    }
}

/// may_delete: write and search permission on the directory, and the
/// sticky bit's rule (EPERM unless owner of the victim or directory).
pub(super) fn may_delete(c: &Creds, dir: &Inode, victim: &Inode) -> Result<()> {
    check(c, dir, W | X)?;
    if dir.mode & S_ISVTX != 0 && !is_root(c) && c.uid != victim.uid && c.uid != dir.uid {
        return Err(Errno(libc::EPERM));
    }
    Ok(())
}

/// Whether setgid is dropped by a write or chown (setattr_should_drop_sgid):
/// with group execute always, otherwise unless the caller is in the group
/// or root.
fn drops_sgid(c: &Creds, n: &Inode) -> bool {
    n.mode & S_ISGID != 0 && (n.mode & 0o010 != 0 || !(is_root(c) || in_group(c, n.gid)))
}

/// The mode after a write by `c` (file_remove_privs): set-id bits are
/// dropped unless the writer is root.
pub(super) fn after_write(c: &Creds, n: &Inode) -> u32 {
    if is_root(c) || !n.is_file() {
        return n.mode;
    }
    let mut m = n.mode & !S_ISUID;
    if drops_sgid(c, n) {
        m &= !S_ISGID;
    }
    m
}

/// The mode after a chown of a non-directory, by anyone (chown_common).
pub(super) fn after_chown(c: &Creds, n: &Inode) -> u32 {
    if n.is_dir() {
        return n.mode;
    }
    let mut m = n.mode & !S_ISUID;
    if drops_sgid(c, n) {
        m &= !S_ISGID;
    }
    m
}

/// chown_ok and chgrp_ok for an object owned by `owner:group`: root may
/// give anything away; the owner may only change the group to one of his;
/// else EPERM.
pub(super) fn may_chown(
    c: &Creds,
    (owner, group): (u32, u32),
    uid: Option<u32>,
    gid: Option<u32>,
) -> Result<()> {
    if is_root(c) {
        return Ok(());
    }
    let is_owner = c.uid == owner;
    let uid_ok = uid.is_none_or(|u| is_owner && u == owner);
    let gid_ok = gid.is_none_or(|g| is_owner && (g == group || in_group(c, g)));
    if uid_ok && gid_ok {
        Ok(())
    } else {
        Err(Errno(libc::EPERM))
    }
}

/// The mode chmod stores: setgid is dropped when the caller is neither
/// root nor in the file's group.
pub(super) fn chmod_mode(c: &Creds, gid: u32, mode: u32) -> u32 {
    let mode = mode & 0o7777;
    if is_root(c) || in_group(c, gid) {
        mode
    } else {
        mode & !S_ISGID
    }
}

/// may_linkat with fs.protected_hardlinks = 1: someone other than the
/// owner may link only a plain regular file he can read and write.
pub(super) fn may_link(c: &Creds, n: &Inode) -> Result<()> {
    if owner_or_root(c, n) {
        return Ok(());
    }
    let setid = n.mode & S_ISUID != 0 || n.mode & (S_ISGID | 0o010) == (S_ISGID | 0o010);
    if n.is_file() && !setid && permits(c, n, R | W) {
        Ok(())
    } else {
        Err(Errno(libc::EPERM))
    }
}
