//! The inode table: handles, allocation and freeing, times and the change
//! attribute, and the calls that need nothing more.

use std::collections::HashMap;

use bytes::Bytes;

use super::data::Space;
use super::node::{entry_cost, Dir, Inode, Kind};
use super::perm;
use super::{Clock, Limits};
use crate::{Attr, Creds, Errno, FsStat, Handle, Result, Timespec};

pub(super) const ROOT: u64 = 1;
const HANDLE_LEN: usize = 16;
const MAX_NAME: usize = 255;
/// Seconds after which relatime updates atime anyway.
const RELATIME_SECS: i64 = 24 * 60 * 60;

pub(super) struct Tree {
    pub(super) nodes: HashMap<u64, Inode>,
    free_inos: Vec<u64>,
    next_ino: u64,
    next_generation: u64,
    /// The last change attribute value handed out.
    change: u64,
    pub(super) space: Space,
    pub(super) limits: Limits,
    clock: Clock,
}

/// Checks a protocol-supplied name (EINVAL, ENAMETOOLONG past 255 bytes).
pub(super) fn check_name(name: &[u8]) -> Result<()> {
    if name.is_empty() || name.contains(&0) || name.contains(&b'/') || name == b"." || name == b".."
    {
        return Err(Errno(libc::EINVAL));
    }
    if name.len() > MAX_NAME {
        return Err(Errno(libc::ENAMETOOLONG));
    }
    Ok(())
}

impl Tree {
    pub(super) fn new(limits: Limits, clock: Clock) -> Tree {
        let now = clock();
        let root = Inode {
            generation: 1,
            kind: Kind::Dir(Dir::new(ROOT)),
            mode: 0o755,
            nlink: 2,
            uid: 0,
            gid: 0,
            size: 0,
            atime: now,
            mtime: now,
            ctime: now,
            change: 1,
        };
        Tree {
            nodes: HashMap::from([(ROOT, root)]),
            free_inos: Vec::new(),
            next_ino: ROOT + 1,
            next_generation: 2,
            change: 1,
            space: Space {
                used: 0,
                max: limits.max_bytes,
            },
            limits,
            clock,
        }
    }

    pub(super) fn now(&self) -> Timespec {
        (self.clock)()
    }

    pub(super) fn handle(&self, ino: u64) -> Handle {
        let mut b = Vec::with_capacity(HANDLE_LEN);
        b.extend_from_slice(&ino.to_be_bytes());
        b.extend_from_slice(&self.nodes[&ino].generation.to_be_bytes());
        Handle(Bytes::from(b))
    }

    pub(super) fn root_handle(&self) -> Handle {
        self.handle(ROOT)
    }

    /// The inode a handle names, or ESTALE.
    pub(super) fn resolve(&self, h: &Handle) -> Result<u64> {
        let stale = Errno(libc::ESTALE);
        let b: [u8; HANDLE_LEN] = h.0.as_ref().try_into().map_err(|_| stale)?;
        let ino = u64::from_be_bytes(b[..8].try_into().expect("8 bytes"));
        let generation = u64::from_be_bytes(b[8..].try_into().expect("8 bytes"));
        match self.nodes.get(&ino) {
            Some(n) if n.generation == generation => Ok(ino),
            _ => Err(stale),
        }
    }

    pub(super) fn node(&self, ino: u64) -> &Inode {
        &self.nodes[&ino]
    }

    pub(super) fn node_mut(&mut self, ino: u64) -> &mut Inode {
        self.nodes.get_mut(&ino).expect("live inode")
    }

    pub(super) fn attr(&self, ino: u64) -> Attr {
        self.node(ino).attr(ino)
    }

    pub(super) fn obj(&self, ino: u64) -> (Handle, Attr) {
        (self.handle(ino), self.attr(ino))
    }

    /// The directory `ino` if the caller may search it: ENOTDIR, EACCES.
    pub(super) fn searchable(&self, c: &Creds, ino: u64) -> Result<&Dir> {
        let n = self.node(ino);
        let d = n.dir().ok_or(Errno(libc::ENOTDIR))?;
        perm::check(c, n, perm::X)?;
        Ok(d)
    }

    /// Whether a new object named `name` fits the limits (ENOSPC).
    pub(super) fn room_for(&self, name: &[u8], extra: u64) -> Result<()> {
        if self.nodes.len() as u64 >= self.limits.max_inodes
            || !self.space.fits(entry_cost(name) + extra)
        {
            return Err(Errno(libc::ENOSPC));
        }
        Ok(())
    }

    /// Adds an inode (the caller checked [`Tree::room_for`]) and its entry
    /// `name` in `dir`, charging the entry and `extra` bytes; the
    /// directory's mtime and ctime move.
    pub(super) fn add(&mut self, dir: u64, name: &[u8], mut n: Inode, extra: u64) -> u64 {
        let ino = self.free_inos.pop().unwrap_or_else(|| {
            self.next_ino += 1;
            self.next_ino - 1
        });
        n.generation = self.next_generation;
        self.next_generation += 1;
        n.change = self.bump();
        let is_dir = n.is_dir();
        self.nodes.insert(ino, n);
        self.space.used += entry_cost(name) + extra;
        let d = self.node_mut(dir);
        if is_dir {
            d.nlink += 1;
        }
        d.dir_mut().expect("a directory").insert(name, ino);
        self.modified(dir, true);
        ino
    }

    /// A fresh inode, owned by the caller, timed now.
    pub(super) fn new_inode(&self, kind: Kind, mode: u32, uid: u32, gid: u32) -> Inode {
        let now = self.now();
        let nlink = if matches!(kind, Kind::Dir(_)) { 2 } else { 1 };
        Inode {
            generation: 0,
            kind,
            mode,
            nlink,
            uid,
            gid,
            size: 0,
            atime: now,
            mtime: now,
            ctime: now,
            change: 0,
        }
    }

    /// Removes the entry `name` of `dir` and drops the link it held; a
    /// directory or a file's last link frees the inode, else its ctime
    /// moves. The directory's own times are the caller's.
    pub(super) fn unlink(&mut self, dir: u64, name: &[u8]) {
        let Some(ino) = self.node_mut(dir).dir_mut().and_then(|d| d.remove(name)) else {
            return;
        };
        self.space.refund(entry_cost(name));
        let n = self.node_mut(ino);
        let gone = if n.is_dir() {
            true
        } else {
            n.nlink -= 1;
            n.nlink == 0
        };
        if gone {
            self.free(ino);
        } else {
            self.modified(ino, false);
        }
    }

    fn free(&mut self, ino: u64) {
        let Some(mut n) = self.nodes.remove(&ino) else {
            return;
        };
        match &mut n.kind {
            Kind::File(d) => d.clear(&mut self.space),
            Kind::Symlink(t) => self.space.refund(t.len() as u64),
            Kind::Dir(d) => {
                let parent = d.parent;
                if let Some(p) = self.nodes.get_mut(&parent) {
                    p.nlink -= 1;
                }
            }
            _ => {}
        }
        self.free_inos.push(ino);
    }

    /// The next change attribute value.
    pub(super) fn bump(&mut self) -> u64 {
        self.change += 1;
        self.change
    }

    /// Records a modification: ctime (and mtime) now, a new change value.
    pub(super) fn modified(&mut self, ino: u64, mtime: bool) {
        let now = self.now();
        let change = self.bump();
        let n = self.node_mut(ino);
        n.ctime = now;
        if mtime {
            n.mtime = now;
        }
        n.change = change;
    }

    /// Records a read (relatime: atime moves if it is not after mtime or
    /// ctime, or is a day old). The change attribute stays.
    pub(super) fn accessed(&mut self, ino: u64) {
        let now = self.now();
        let n = self.node_mut(ino);
        if n.atime <= n.mtime
            || n.atime <= n.ctime
            || now.sec.saturating_sub(n.atime.sec) >= RELATIME_SECS
        {
            n.atime = now;
        }
    }

    /// Whether `anc` is `ino` or one of its ancestors (walking up, never
    /// recursing).
    pub(super) fn is_ancestor(&self, anc: u64, mut ino: u64) -> bool {
        loop {
            if ino == anc {
                return true;
            }
            match self.node(ino).dir() {
                Some(d) if ino != ROOT => ino = d.parent,
                _ => return false,
            }
        }
    }

    pub(super) fn access(&self, c: &Creds, h: &Handle, mask: i32) -> Result<bool> {
        if mask & !(libc::R_OK | libc::W_OK | libc::X_OK) != 0 {
            return Err(Errno(libc::EINVAL));
        }
        let ino = self.resolve(h)?;
        Ok(perm::permits(c, self.node(ino), mask as u32))
    }

    pub(super) fn readlink(&mut self, h: &Handle) -> Result<Bytes> {
        let ino = self.resolve(h)?;
        let Kind::Symlink(t) = &self.node(ino).kind else {
            return Err(Errno(libc::EINVAL));
        };
        let t = t.clone();
        self.accessed(ino);
        Ok(t)
    }

    pub(super) fn commit(&self, h: &Handle) -> Result<()> {
        let ino = self.resolve(h)?;
        self.node(ino).want_regular()
    }

    pub(super) fn fsstat(&self, h: &Handle) -> Result<FsStat> {
        self.resolve(h)?;
        let free_bytes = self.space.max.saturating_sub(self.space.used);
        let free_files = self
            .limits
            .max_inodes
            .saturating_sub(self.nodes.len() as u64);
        Ok(FsStat {
            total_bytes: self.space.max,
            free_bytes,
            avail_bytes: free_bytes,
            total_files: self.limits.max_inodes,
            free_files,
            avail_files: free_files,
            max_name: MAX_NAME as u32,
        })
    }
}
