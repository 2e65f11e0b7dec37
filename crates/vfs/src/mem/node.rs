//! Inodes and directories.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;

use super::data::Data;
use crate::{Attr, Errno, FileType, Result, Timespec};

/// What a directory entry costs of the byte budget besides its name.
pub const ENTRY_BYTES: u64 = 64;

/// The size a directory reports.
const DIR_SIZE: u64 = 4096;

pub(super) const S_ISUID: u32 = 0o4000;
pub(super) const S_ISGID: u32 = 0o2000;
pub(super) const S_ISVTX: u32 = 0o1000;

#[derive(Debug)]
pub(super) enum Kind {
    File(Data),
    Dir(Dir),
    Symlink(Bytes),
    Block(u32, u32),
    Char(u32, u32),
    Socket,
    Fifo,
}

#[derive(Debug)]
pub(super) struct Inode {
    pub(super) generation: u64,
    pub(super) kind: Kind,
    /// 07777 bits.
    pub(super) mode: u32,
    pub(super) nlink: u32,
    pub(super) uid: u32,
    pub(super) gid: u32,
    /// Regular files only; others derive theirs.
    pub(super) size: u64,
    pub(super) atime: Timespec,
    pub(super) mtime: Timespec,
    pub(super) ctime: Timespec,
    pub(super) change: u64,
}

impl Inode {
    pub(super) fn is_dir(&self) -> bool {
        matches!(self.kind, Kind::Dir(_))
    }

    pub(super) fn is_file(&self) -> bool {
        matches!(self.kind, Kind::File(_))
    }

    pub(super) fn dir(&self) -> Option<&Dir> {
        match &self.kind {
            Kind::Dir(d) => Some(d),
            _ => None,
        }
    }

    pub(super) fn dir_mut(&mut self) -> Option<&mut Dir> {
        match &mut self.kind {
            Kind::Dir(d) => Some(d),
            _ => None,
        }
    }

    pub(super) fn data(&self) -> Option<&Data> {
        match &self.kind {
            Kind::File(d) => Some(d),
            _ => None,
        }
    }

    pub(super) fn data_mut(&mut self) -> Option<&mut Data> {
        match &mut self.kind {
            Kind::File(d) => Some(d),
            _ => None,
        }
    }

    /// Regular files only: EISDIR for directories, EINVAL otherwise.
    pub(super) fn want_regular(&self) -> Result<()> {
        match self.kind {
            Kind::File(_) => Ok(()),
            Kind::Dir(_) => Err(Errno(libc::EISDIR)),
            _ => Err(Errno(libc::EINVAL)),
        }
    }

    pub(super) fn attr(&self, ino: u64) -> Attr {
        let (ftype, size, used, rdev) = match &self.kind {
            Kind::File(d) => (FileType::Regular, self.size, d.used(), (0, 0)),
            Kind::Dir(_) => (FileType::Directory, DIR_SIZE, 0, (0, 0)),
            Kind::Symlink(t) => (FileType::Symlink, t.len() as u64, 0, (0, 0)),
            Kind::Block(ma, mi) => (FileType::Block, 0, 0, (*ma, *mi)),
            Kind::Char(ma, mi) => (FileType::Char, 0, 0, (*ma, *mi)),
            Kind::Socket => (FileType::Socket, 0, 0, (0, 0)),
            Kind::Fifo => (FileType::Fifo, 0, 0, (0, 0)),
        };
        Attr {
            ftype,
            mode: self.mode,
            nlink: self.nlink,
            uid: self.uid,
            gid: self.gid,
            size,
            used,
            rdev,
            fileid: ino,
            atime: self.atime,
            mtime: self.mtime,
            ctime: self.ctime,
            change: self.change,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Entry {
    pub(super) ino: u64,
    pub(super) serial: u64,
}

/// A directory: its entries by name and in creation order (by serial,
/// which readdir cookies are made of).
#[derive(Debug)]
pub(super) struct Dir {
    pub(super) parent: u64,
    by_name: HashMap<Bytes, Entry>,
    by_serial: BTreeMap<u64, Bytes>,
    next_serial: u64,
}

impl Dir {
    pub(super) fn new(parent: u64) -> Dir {
        Dir {
            parent,
            by_name: HashMap::new(),
            by_serial: BTreeMap::new(),
            next_serial: 0,
        }
    }

    pub(super) fn get(&self, name: &[u8]) -> Option<u64> {
        self.by_name.get(name).map(|e| e.ino)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Adds (or replaces) an entry, with a serial after every earlier one.
    pub(super) fn insert(&mut self, name: &[u8], ino: u64) {
        self.remove(name);
        let name = Bytes::copy_from_slice(name);
        let serial = self.next_serial;
        self.next_serial += 1;
        self.by_serial.insert(serial, name.clone());
        self.by_name.insert(name, Entry { ino, serial });
    }

    pub(super) fn remove(&mut self, name: &[u8]) -> Option<u64> {
        let e = self.by_name.remove(name)?;
        self.by_serial.remove(&e.serial);
        Some(e.ino)
    }

    /// Up to `max` entries with serials at or after `from`: (name,
    /// serial, inode).
    pub(super) fn list(&self, from: u64, max: usize) -> Vec<(Bytes, u64, u64)> {
        self.by_serial
            .range(from..)
            .take(max)
            .filter_map(|(&s, n)| self.by_name.get(n).map(|e| (n.clone(), s, e.ino)))
            .collect()
    }

    /// Whether entries with serials at or after `from` exist.
    pub(super) fn has_from(&self, from: u64) -> bool {
        self.by_serial.range(from..).next().is_some()
    }
}

/// What an entry named `name` costs of the byte budget.
pub(super) fn entry_cost(name: &[u8]) -> u64 {
    ENTRY_BYTES + name.len() as u64
}
