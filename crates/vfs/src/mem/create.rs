//! Creating objects: regular files (with OPEN's create modes) and
//! CREATE's directories, symlinks and special files.

use super::data::Data;
use super::node::{Inode, Kind, S_ISGID};
use super::perm::{self, W, X};
use super::tree::{check_name, Tree};
use crate::local::verifier_times;
use crate::{
    Attr, CreateKind, CreateMode, Creds, Errno, Handle, Result, SetAttr, SetTime, Timespec,
};

/// Longest symlink target (PATH_MAX less the NUL).
const MAX_TARGET: usize = 4095;

impl Tree {
    /// Owner, group and mode of a new object in `dir`, as the kernel makes
    /// it and `LocalFs` then adjusts it: the caller's ids (the directory's
    /// group if it is setgid), `set`'s chown (EPERM when not allowed) and
    /// then exactly `mode` (`None` for symlinks).
    fn new_ids(
        &self,
        c: &Creds,
        dir: u64,
        set: &SetAttr,
        mode: Option<u32>,
    ) -> Result<(u32, u32, u32)> {
        let d = self.node(dir);
        let mut gid = if d.mode & S_ISGID != 0 { d.gid } else { c.gid };
        let mut uid = c.uid;
        if set.uid.is_some() || set.gid.is_some() {
            perm::may_chown(c, (uid, gid), set.uid, set.gid)?;
            uid = set.uid.unwrap_or(uid);
            gid = set.gid.unwrap_or(gid);
        }
        let mode = match mode {
            Some(m) => perm::chmod_mode(c, gid, m),
            None => 0o777,
        };
        Ok((uid, gid, mode))
    }

    /// Applies `set`'s times to an object the caller owns.
    pub(super) fn set_times(&self, n: &mut Inode, set: &SetAttr) {
        let now = self.now();
        let pick = |t: SetTime| match t {
            SetTime::ServerNow => now,
            SetTime::Client(ts) => ts,
        };
        if let Some(t) = set.atime {
            n.atime = pick(t);
        }
        if let Some(t) = set.mtime {
            n.mtime = pick(t);
        }
    }

    pub(super) fn create_file(
        &mut self,
        c: &Creds,
        dir: &Handle,
        name: &[u8],
        how: CreateMode,
        set: &SetAttr,
    ) -> Result<(Handle, Attr, bool)> {
        check_name(name)?;
        let d = self.resolve(dir)?;
        if let Some(ino) = self.searchable(c, d)?.get(name) {
            if how == CreateMode::Guarded {
                return Err(Errno(libc::EEXIST));
            }
            return self.open_existing(c, ino, how, set);
        }
        perm::check(c, self.node(d), W | X)?;
        self.room_for(name, 0)?;
        let mode = set.mode.unwrap_or(0o644) & 0o7777;
        let (uid, gid, mode) = self.new_ids(c, d, set, Some(mode))?;
        let size = set.size.filter(|&s| s > 0);
        if size.is_some_and(|s| s > crate::MAX_FILE_SIZE) {
            return Err(Errno(libc::EFBIG));
        }
        let mut n = self.new_inode(Kind::File(Data::default()), mode, uid, gid);
        match how {
            CreateMode::Exclusive(v) => {
                let (a, m) = verifier_times(&v);
                n.atime = Timespec { sec: a, nsec: 0 };
                n.mtime = Timespec { sec: m, nsec: 0 };
            }
            _ => self.set_times(&mut n, set),
        }
        if let Some(size) = size {
            // Truncated after the times were set, as LocalFs does.
            n.size = size;
            n.mtime = self.now();
            n.mode = perm::after_write(c, &n);
        }
        let ino = self.add(d, name, n, 0);
        let (h, a) = self.obj(ino);
        Ok((h, a, true))
    }

    /// `create_file` on an existing name: a regular file is opened
    /// (truncated if `set` says so), or matched with the exclusive
    /// verifier kept in its atime and mtime seconds.
    fn open_existing(
        &mut self,
        c: &Creds,
        ino: u64,
        how: CreateMode,
        set: &SetAttr,
    ) -> Result<(Handle, Attr, bool)> {
        let n = self.node(ino);
        match n.kind {
            Kind::File(_) => {}
            Kind::Dir(_) => return Err(Errno(libc::EISDIR)),
            Kind::Symlink(_) => return Err(Errno(libc::ELOOP)),
            _ => return Err(Errno(libc::EEXIST)),
        }
        if let CreateMode::Exclusive(v) = how {
            let (a, m) = verifier_times(&v);
            if n.atime.sec != a || n.mtime.sec != m {
                return Err(Errno(libc::EEXIST));
            }
        } else if let Some(size) = set.size {
            self.truncate(c, ino, size)?;
        }
        let (h, a) = self.obj(ino);
        Ok((h, a, false))
    }

    pub(super) fn create(
        &mut self,
        c: &Creds,
        dir: &Handle,
        name: &[u8],
        kind: &CreateKind,
        set: &SetAttr,
    ) -> Result<(Handle, Attr)> {
        check_name(name)?;
        let d = self.resolve(dir)?;
        if !self.node(d).is_dir() {
            return Err(Errno(libc::ENOTDIR));
        }
        let mode = |default: u32| Some(set.mode.unwrap_or(default) & 0o7777);
        let (mode, extra) = match kind {
            CreateKind::Directory => (mode(0o755), 0),
            CreateKind::Symlink(t) => {
                if t.contains(&0) {
                    return Err(Errno(libc::EINVAL));
                }
                if t.is_empty() {
                    return Err(Errno(libc::ENOENT));
                }
                if t.len() > MAX_TARGET {
                    return Err(Errno(libc::ENAMETOOLONG));
                }
                (None, t.len() as u64)
            }
            _ => (mode(0o644), 0),
        };
        if self.searchable(c, d)?.get(name).is_some() {
            return Err(Errno(libc::EEXIST));
        }
        let dn = self.node(d);
        perm::check(c, dn, W | X)?;
        match kind {
            CreateKind::Block(..) | CreateKind::Char(..) if !perm::is_root(c) => {
                return Err(Errno(libc::EPERM));
            }
            CreateKind::Directory if dn.nlink >= self.limits.max_links => {
                return Err(Errno(libc::EMLINK));
            }
            _ => {}
        }
        self.room_for(name, extra)?;
        let (uid, gid, mode) = self.new_ids(c, d, set, mode)?;
        let kind = match kind {
            CreateKind::Directory => Kind::Dir(super::node::Dir::new(d)),
            CreateKind::Symlink(t) => Kind::Symlink(t.clone()),
            CreateKind::Block(ma, mi) => Kind::Block(*ma, *mi),
            CreateKind::Char(ma, mi) => Kind::Char(*ma, *mi),
            CreateKind::Socket => Kind::Socket,
            CreateKind::Fifo => Kind::Fifo,
        };
        let mut n = self.new_inode(kind, mode, uid, gid);
        self.set_times(&mut n, set);
        let ino = self.add(d, name, n, extra);
        Ok(self.obj(ino))
    }
}
