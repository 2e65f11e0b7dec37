//! The file system crashfs serves, twice over: what programs see (`live`)
//! and what a power loss would leave (`durable`).
//!
//! The rules are POSIX's and no kinder: a file's data and attributes reach
//! `durable` only when the file itself is synced (`fsync` or `fdatasync`),
//! and a directory's entries only when that directory is synced. A name
//! made durable before its file was ever synced leaves, after a power
//! loss, the file as it was born: empty, with the attributes it has now.
//! A file synced but never named durably is gone after a power loss.
//! Journaling file systems are often kinder (ext4 commits a new name with
//! the file's first fsync); a server that is right here is right there.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::SystemTime;

pub type Ino = u64;
pub type Result<T> = std::result::Result<T, i32>;

/// The root directory's inode number (FUSE's).
pub const ROOT: Ino = 1;

/// Longest name.
pub const NAME_MAX: usize = 255;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    File(Vec<u8>),
    /// Entries, and the parent (for "..").
    Dir(BTreeMap<Vec<u8>, Ino>, Ino),
    Symlink(Vec<u8>),
    /// FIFO, socket or device: its type is in `mode`.
    Special,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub kind: Kind,
    /// Type and permission bits (`S_IF*` | perm).
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub nlink: u32,
    pub rdev: u32,
    pub atime: SystemTime,
    pub mtime: SystemTime,
    pub ctime: SystemTime,
}

impl Node {
    pub fn size(&self) -> u64 {
        match &self.kind {
            Kind::File(d) => d.len() as u64,
            Kind::Dir(e, _) => e.len() as u64,
            Kind::Symlink(t) => t.len() as u64,
            Kind::Special => 0,
        }
    }

    fn dir(&self) -> Result<(&BTreeMap<Vec<u8>, Ino>, Ino)> {
        match &self.kind {
            Kind::Dir(e, p) => Ok((e, *p)),
            _ => Err(libc::ENOTDIR),
        }
    }

    fn touch(&mut self) {
        let now = SystemTime::now();
        self.mtime = now;
        self.ctime = now;
    }

    /// This node as a power loss would find it if only its name was ever
    /// made durable: a file or directory empty, as just made.
    fn as_born(&self) -> Node {
        let mut n = self.clone();
        match &mut n.kind {
            Kind::File(d) => d.clear(),
            Kind::Dir(e, _) => e.clear(),
            Kind::Symlink(_) | Kind::Special => {}
        }
        n
    }
}

/// What happened, for the harness's report.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    pub syncs: u64,
    pub power_losses: u64,
    /// Inodes whose live state differed from their durable one at a power
    /// loss (their unsynced changes were dropped).
    pub dropped: u64,
}

#[derive(Debug)]
pub struct Model {
    live: HashMap<Ino, Node>,
    durable: HashMap<Ino, Node>,
    /// Open descriptors per inode: an unlinked file lives until the last
    /// is closed.
    open: HashMap<Ino, u32>,
    /// Never reused, not even after a power loss (the kernel may still
    /// hold an inode of a number the loss took back).
    next: Ino,
    pub stats: Stats,
}

impl Default for Model {
    fn default() -> Self {
        Model::new()
    }
}

fn ftype(mode: u32) -> u32 {
    mode & libc::S_IFMT
}

impl Model {
    /// An empty file system: the root, mode 0755, owned by root, durable.
    pub fn new() -> Model {
        let now = SystemTime::now();
        let root = Node {
            kind: Kind::Dir(BTreeMap::new(), ROOT),
            mode: libc::S_IFDIR | 0o755,
            uid: 0,
            gid: 0,
            nlink: 2,
            rdev: 0,
            atime: now,
            mtime: now,
            ctime: now,
        };
        Model {
            live: HashMap::from([(ROOT, root.clone())]),
            durable: HashMap::from([(ROOT, root)]),
            open: HashMap::new(),
            next: ROOT + 1,
            stats: Stats::default(),
        }
    }

    pub fn get(&self, ino: Ino) -> Result<&Node> {
        self.live.get(&ino).ok_or(libc::ENOENT)
    }

    fn get_mut(&mut self, ino: Ino) -> Result<&mut Node> {
        self.live.get_mut(&ino).ok_or(libc::ENOENT)
    }

    /// `name` in directory `dir` ("." and ".." included).
    pub fn lookup(&self, dir: Ino, name: &[u8]) -> Result<Ino> {
        let (entries, parent) = self.get(dir)?.dir()?;
        match name {
            b"." => Ok(dir),
            b".." => Ok(parent),
            _ => entries.get(name).copied().ok_or(libc::ENOENT),
        }
    }

    /// The entries of `dir` in order, "." and ".." first.
    pub fn list(&self, dir: Ino) -> Result<Vec<(Vec<u8>, Ino)>> {
        let (entries, parent) = self.get(dir)?.dir()?;
        let mut v = vec![(b".".to_vec(), dir), (b"..".to_vec(), parent)];
        v.extend(entries.iter().map(|(n, i)| (n.clone(), *i)));
        Ok(v)
    }

    fn check_name(name: &[u8]) -> Result<()> {
        if name.is_empty() || name == b"." || name == b".." || name.contains(&b'/') {
            return Err(libc::EINVAL);
        }
        if name.len() > NAME_MAX {
            return Err(libc::ENAMETOOLONG);
        }
        Ok(())
    }

    fn entries_mut(&mut self, dir: Ino) -> Result<&mut BTreeMap<Vec<u8>, Ino>> {
        match &mut self.get_mut(dir)?.kind {
            Kind::Dir(e, _) => Ok(e),
            _ => Err(libc::ENOTDIR),
        }
    }

    /// Makes `name` in `dir`: a file (S_IFREG), directory, symbolic link
    /// (with `target`) or special file, per `mode`'s type bits.
    #[allow(clippy::too_many_arguments)] // mknod(2)'s, plus the owner
    pub fn make(
        &mut self,
        dir: Ino,
        name: &[u8],
        mode: u32,
        uid: u32,
        gid: u32,
        rdev: u32,
        target: Option<&[u8]>,
    ) -> Result<Ino> {
        Self::check_name(name)?;
        if self.entries_mut(dir)?.contains_key(name) {
            return Err(libc::EEXIST);
        }
        let kind = match (ftype(mode), target) {
            (libc::S_IFREG, None) => Kind::File(Vec::new()),
            (libc::S_IFDIR, None) => Kind::Dir(BTreeMap::new(), dir),
            (libc::S_IFLNK, Some(t)) => Kind::Symlink(t.to_vec()),
            (libc::S_IFIFO | libc::S_IFSOCK | libc::S_IFCHR | libc::S_IFBLK, None) => Kind::Special,
            _ => return Err(libc::EINVAL),
        };
        let is_dir = matches!(kind, Kind::Dir(..));
        let now = SystemTime::now();
        let ino = self.next;
        self.next += 1;
        self.live.insert(
            ino,
            Node {
                kind,
                mode,
                uid,
                gid,
                nlink: if is_dir { 2 } else { 1 },
                rdev,
                atime: now,
                mtime: now,
                ctime: now,
            },
        );
        self.entries_mut(dir)?.insert(name.to_vec(), ino);
        let d = self.get_mut(dir)?;
        d.touch();
        if is_dir {
            d.nlink += 1;
        }
        Ok(ino)
    }

    /// A new name for file `ino`.
    pub fn link(&mut self, ino: Ino, dir: Ino, name: &[u8]) -> Result<()> {
        Self::check_name(name)?;
        if matches!(self.get(ino)?.kind, Kind::Dir(..)) {
            return Err(libc::EPERM);
        }
        if self.entries_mut(dir)?.contains_key(name) {
            return Err(libc::EEXIST);
        }
        self.entries_mut(dir)?.insert(name.to_vec(), ino);
        self.get_mut(dir)?.touch();
        let n = self.get_mut(ino)?;
        n.nlink += 1;
        n.ctime = SystemTime::now();
        Ok(())
    }

    /// Removes `name` from `dir`: a directory only if `rmdir` (and empty),
    /// anything else only if not.
    pub fn remove(&mut self, dir: Ino, name: &[u8], rmdir: bool) -> Result<()> {
        let ino = self.lookup(dir, name)?;
        if name == b"." || name == b".." {
            return Err(libc::EINVAL);
        }
        let is_dir = match &self.get(ino)?.kind {
            Kind::Dir(..) if !rmdir => return Err(libc::EISDIR),
            Kind::Dir(e, _) if !e.is_empty() => return Err(libc::ENOTEMPTY),
            Kind::Dir(..) => true,
            _ if rmdir => return Err(libc::ENOTDIR),
            _ => false,
        };
        self.entries_mut(dir)?.remove(name);
        let d = self.get_mut(dir)?;
        d.touch();
        if is_dir {
            d.nlink -= 1;
        }
        let n = self.get_mut(ino)?;
        n.nlink = if is_dir { 0 } else { n.nlink.saturating_sub(1) };
        n.ctime = SystemTime::now();
        self.collect(ino);
        Ok(())
    }

    /// rename(2) without flags: replaces a file by a file, or an empty
    /// directory by a directory.
    pub fn rename(&mut self, from: Ino, name: &[u8], to: Ino, newname: &[u8]) -> Result<()> {
        Self::check_name(newname)?;
        let ino = self.lookup(from, name)?;
        if name == b"." || name == b".." {
            return Err(libc::EINVAL);
        }
        self.get(to)?.dir()?;
        let is_dir = matches!(self.get(ino)?.kind, Kind::Dir(..));
        if is_dir {
            // Not into itself or below it.
            let mut d = to;
            loop {
                if d == ino {
                    return Err(libc::EINVAL);
                }
                if d == ROOT {
                    break;
                }
                d = self.lookup(d, b"..")?;
            }
        }
        match self.lookup(to, newname) {
            Ok(old) if old == ino => return Ok(()),
            Ok(old) => {
                let old_dir = match &self.get(old)?.kind {
                    Kind::Dir(e, _) if !e.is_empty() => return Err(libc::ENOTEMPTY),
                    Kind::Dir(..) => true,
                    _ => false,
                };
                match (is_dir, old_dir) {
                    (true, false) => return Err(libc::ENOTDIR),
                    (false, true) => return Err(libc::EISDIR),
                    _ => {}
                }
                self.remove(to, newname, old_dir)?;
            }
            Err(libc::ENOENT) => {}
            Err(e) => return Err(e),
        }
        self.entries_mut(from)?.remove(name);
        self.entries_mut(to)?.insert(newname.to_vec(), ino);
        self.get_mut(from)?.touch();
        self.get_mut(to)?.touch();
        if is_dir && from != to {
            self.get_mut(from)?.nlink -= 1;
            self.get_mut(to)?.nlink += 1;
            if let Kind::Dir(_, p) = &mut self.get_mut(ino)?.kind {
                *p = to;
            }
        }
        self.get_mut(ino)?.ctime = SystemTime::now();
        Ok(())
    }

    pub fn read(&self, ino: Ino, off: u64, len: u32) -> Result<&[u8]> {
        match &self.get(ino)?.kind {
            Kind::File(d) => {
                let a = (off as usize).min(d.len());
                let b = a.saturating_add(len as usize).min(d.len());
                Ok(&d[a..b])
            }
            Kind::Dir(..) => Err(libc::EISDIR),
            _ => Err(libc::EINVAL),
        }
    }

    pub fn readlink(&self, ino: Ino) -> Result<&[u8]> {
        match &self.get(ino)?.kind {
            Kind::Symlink(t) => Ok(t),
            _ => Err(libc::EINVAL),
        }
    }

    fn data_mut(&mut self, ino: Ino) -> Result<&mut Vec<u8>> {
        match &mut self.get_mut(ino)?.kind {
            Kind::File(d) => Ok(d),
            Kind::Dir(..) => Err(libc::EISDIR),
            _ => Err(libc::EINVAL),
        }
    }

    /// Files larger than this are refused (EFBIG): the model is in memory.
    pub const MAX_FILE: u64 = 1 << 30;

    fn end(off: u64, len: u64) -> Result<usize> {
        match off.checked_add(len) {
            Some(e) if e <= Self::MAX_FILE => Ok(e as usize),
            _ => Err(libc::EFBIG),
        }
    }

    pub fn write(&mut self, ino: Ino, off: u64, data: &[u8]) -> Result<u32> {
        let end = Self::end(off, data.len() as u64)?;
        let d = self.data_mut(ino)?;
        if d.len() < end {
            d.resize(end, 0);
        }
        d[off as usize..end].copy_from_slice(data);
        self.get_mut(ino)?.touch();
        Ok(data.len() as u32)
    }

    /// fallocate(2): mode 0 and KEEP_SIZE reserve (here: make the range
    /// exist), PUNCH_HOLE | KEEP_SIZE zeroes; others are not supported.
    pub fn fallocate(&mut self, ino: Ino, off: u64, len: u64, mode: i32) -> Result<()> {
        let end = Self::end(off, len)?;
        let d = self.data_mut(ino)?;
        match mode {
            0 => {
                if d.len() < end {
                    d.resize(end, 0);
                }
            }
            libc::FALLOC_FL_KEEP_SIZE => {}
            m if m == libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE => {
                let e = end.min(d.len());
                let a = (off as usize).min(e);
                d[a..e].fill(0);
            }
            _ => return Err(libc::EOPNOTSUPP),
        }
        self.get_mut(ino)?.touch();
        Ok(())
    }

    /// Sets what is given; the caller has checked permission.
    #[allow(clippy::too_many_arguments)]
    pub fn setattr(
        &mut self,
        ino: Ino,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<SystemTime>,
        mtime: Option<SystemTime>,
    ) -> Result<()> {
        if let Some(s) = size {
            let end = Self::end(s, 0)?;
            self.data_mut(ino)?.resize(end, 0);
            self.get_mut(ino)?.mtime = SystemTime::now();
        }
        let n = self.get_mut(ino)?;
        if let Some(m) = mode {
            n.mode = ftype(n.mode) | (m & 0o7777);
        }
        if let Some(u) = uid {
            n.uid = u;
        }
        if let Some(g) = gid {
            n.gid = g;
        }
        if let Some(t) = atime {
            n.atime = t;
        }
        if let Some(t) = mtime {
            n.mtime = t;
        }
        n.ctime = SystemTime::now();
        Ok(())
    }

    pub fn opened(&mut self, ino: Ino) {
        *self.open.entry(ino).or_default() += 1;
    }

    pub fn closed(&mut self, ino: Ino) {
        if let Some(n) = self.open.get_mut(&ino) {
            *n -= 1;
            if *n == 0 {
                self.open.remove(&ino);
                self.collect(ino);
            }
        }
    }

    /// Drops `ino` once it has no name and no open descriptor.
    fn collect(&mut self, ino: Ino) {
        let unused = self.live.get(&ino).is_some_and(|n| n.nlink == 0);
        if unused && !self.open.contains_key(&ino) && ino != ROOT {
            self.live.remove(&ino);
        }
    }

    /// fsync(2) or fdatasync(2) of `ino` (of a directory: its entries):
    /// what it is now survives a power loss. A new entry's file gets its
    /// birth state if it has none durable yet.
    pub fn sync(&mut self, ino: Ino) -> Result<()> {
        let node = self.get(ino)?.clone();
        if let Kind::Dir(entries, _) = &node.kind {
            for child in entries.values() {
                if !self.durable.contains_key(child) {
                    if let Some(c) = self.live.get(child) {
                        self.durable.insert(*child, c.as_born());
                    }
                }
            }
        }
        self.durable.insert(ino, node);
        self.stats.syncs += 1;
        Ok(())
    }

    /// A power loss: everything not synced is gone. Link counts are
    /// recounted from the durable directories and what no durable name
    /// reaches is dropped.
    pub fn power_loss(&mut self) {
        let mut next: HashMap<Ino, Node> = HashMap::new();
        let mut todo = vec![ROOT];
        let mut seen = HashSet::new();
        let mut links: HashMap<Ino, u32> = HashMap::new();
        while let Some(d) = todo.pop() {
            if !seen.insert(d) {
                continue;
            }
            let Some(mut node) = self.durable.get(&d).cloned() else {
                continue;
            };
            if let Kind::Dir(entries, _) = &mut node.kind {
                // A name whose file never became durable is not there.
                entries.retain(|_, c| self.durable.contains_key(c));
                for c in entries.values() {
                    *links.entry(*c).or_default() += 1;
                    todo.push(*c);
                }
            }
            next.insert(d, node);
        }
        // Directories: their parent is the one that names them now.
        let parents: Vec<(Ino, Ino)> = next
            .iter()
            .filter_map(|(d, n)| match &n.kind {
                Kind::Dir(e, _) => Some(e.values().map(|c| (*c, *d)).collect::<Vec<_>>()),
                _ => None,
            })
            .flatten()
            .collect();
        for (c, p) in parents {
            if let Some(Kind::Dir(_, parent)) = next.get_mut(&c).map(|n| &mut n.kind) {
                *parent = p;
            }
        }
        let subdirs: HashMap<Ino, u32> = next
            .iter()
            .map(|(d, n)| match &n.kind {
                Kind::Dir(e, _) => (
                    *d,
                    e.values()
                        .filter(|c| matches!(next.get(c).map(|n| &n.kind), Some(Kind::Dir(..))))
                        .count() as u32,
                ),
                _ => (*d, 0),
            })
            .collect();
        for (ino, n) in next.iter_mut() {
            n.nlink = match n.kind {
                Kind::Dir(..) => 2 + subdirs[ino],
                _ => links.get(ino).copied().unwrap_or(0),
            };
        }
        self.stats.dropped += next
            .iter()
            .filter(|(i, n)| self.live.get(i) != Some(n))
            .count() as u64
            + self.live.keys().filter(|i| !next.contains_key(i)).count() as u64;
        self.durable = next.clone();
        self.live = next;
        self.open.clear();
        self.stats.power_losses += 1;
    }

    /// Inodes live now.
    pub fn inodes(&self) -> usize {
        self.live.len()
    }
}

#[cfg(test)]
mod tests;
