//! File contents and attributes: read, write, setattr, ALLOCATE,
//! DEALLOCATE, SEEK, COPY and CLONE.

use bytes::Bytes;

use super::data::{Space, CHUNK};
use super::node::{Inode, Kind};
use super::perm::{self, W};
use super::tree::Tree;
use crate::{Attr, Creds, Errno, Handle, Result, SeekWhat, SetAttr, SetTime};

/// Largest read served at once (a short read is legal).
const READ_CAP: u64 = 16 << 20;
/// Most data bytes one COPY moves (a short copy is legal).
const MAX_COPY: u64 = 64 << 20;

/// A checked COPY or CLONE.
struct Plan {
    src: u64,
    dst: u64,
    src_off: u64,
    dst_off: u64,
    /// Bytes (a count of 0 resolved to "to the end").
    count: u64,
    src_size: u64,
}

impl Tree {
    /// A regular file's inode and the budget, borrowed together.
    fn file_mut(&mut self, ino: u64) -> (&mut Inode, &mut Space) {
        (
            self.nodes.get_mut(&ino).expect("live inode"),
            &mut self.space,
        )
    }

    /// A regular file the caller may read (or write) through the server.
    fn io_target(&self, c: &Creds, h: &Handle, write: bool) -> Result<u64> {
        let ino = self.resolve(h)?;
        let n = self.node(ino);
        n.want_regular()?;
        perm::may_io(c, n, write)?;
        Ok(ino)
    }

    /// Records a data change by `c`: mtime, ctime, change, set-id bits.
    fn written(&mut self, c: &Creds, ino: u64) {
        let n = self.node_mut(ino);
        n.mode = perm::after_write(c, n);
        self.modified(ino, true);
    }

    pub(super) fn read(
        &mut self,
        c: &Creds,
        h: &Handle,
        offset: u64,
        count: u32,
    ) -> Result<(Bytes, bool)> {
        let ino = self.io_target(c, h, false)?;
        let n = self.node(ino);
        let size = n.size;
        if offset >= size || count == 0 {
            return Ok((Bytes::new(), offset >= size));
        }
        let len = (count as u64).min(size - offset).min(READ_CAP);
        let data = n.data().expect("a file").read(offset, len as usize);
        self.accessed(ino);
        Ok((Bytes::from(data), offset + len >= size))
    }

    pub(super) fn write(&mut self, c: &Creds, h: &Handle, offset: u64, data: &[u8]) -> Result<()> {
        let ino = self.resolve(h)?;
        self.node(ino).want_regular()?;
        if !crate::range_fits(offset, data.len() as u64) {
            return Err(Errno(libc::EFBIG));
        }
        perm::may_io(c, self.node(ino), true)?;
        if data.is_empty() {
            return Ok(());
        }
        let (n, space) = self.file_mut(ino);
        n.data_mut().expect("a file").write(offset, data, space)?;
        n.size = n.size.max(offset + data.len() as u64);
        self.written(c, ino);
        Ok(())
    }

    /// Sets a regular file's size for `c` (owner override as for writes).
    pub(super) fn truncate(&mut self, c: &Creds, ino: u64, size: u64) -> Result<()> {
        let n = self.node(ino);
        n.want_regular()?;
        if size > crate::MAX_FILE_SIZE {
            return Err(Errno(libc::EFBIG));
        }
        perm::may_io(c, n, true)?;
        let (n, space) = self.file_mut(ino);
        n.data_mut().expect("a file").truncate(size, space);
        n.size = size;
        self.written(c, ino);
        Ok(())
    }

    /// Size, owner, mode and times in that order, each checked as the
    /// kernel checks it (earlier ones stay applied if a later one fails,
    /// as with `LocalFs`).
    pub(super) fn setattr(&mut self, c: &Creds, h: &Handle, set: &SetAttr) -> Result<Attr> {
        let ino = self.resolve(h)?;
        if set.is_empty() {
            return Ok(self.attr(ino));
        }
        if let Some(size) = set.size {
            self.truncate(c, ino, size)?;
        }
        if set.uid.is_some() || set.gid.is_some() {
            let n = self.node(ino);
            perm::may_chown(c, (n.uid, n.gid), set.uid, set.gid)?;
            let mode = perm::after_chown(c, n);
            let n = self.node_mut(ino);
            n.uid = set.uid.unwrap_or(n.uid);
            n.gid = set.gid.unwrap_or(n.gid);
            n.mode = mode;
            self.modified(ino, false);
        }
        if let Some(mode) = set.mode {
            let n = self.node(ino);
            if matches!(n.kind, Kind::Symlink(_)) {
                return Err(Errno(libc::EOPNOTSUPP));
            }
            if !perm::owner_or_root(c, n) {
                return Err(Errno(libc::EPERM));
            }
            let mode = perm::chmod_mode(c, n.gid, mode);
            self.node_mut(ino).mode = mode;
            self.modified(ino, false);
        }
        if set.atime.is_some() || set.mtime.is_some() {
            let n = self.node(ino);
            // Both "now" is a touch: write permission will do. Anything
            // else sets times: the owner's (or root's) right.
            let now = Some(SetTime::ServerNow);
            if !perm::owner_or_root(c, n) {
                if set.atime != now || set.mtime != now {
                    return Err(Errno(libc::EPERM));
                }
                perm::check(c, n, W)?;
            }
            let mut times = (n.atime, n.mtime);
            let t = self.now();
            let pick = |s: SetTime| match s {
                SetTime::ServerNow => t,
                SetTime::Client(ts) => ts,
            };
            if let Some(a) = set.atime {
                times.0 = pick(a);
            }
            if let Some(m) = set.mtime {
                times.1 = pick(m);
            }
            let n = self.node_mut(ino);
            (n.atime, n.mtime) = times;
            self.modified(ino, false);
        }
        Ok(self.attr(ino))
    }

    /// The common checks of ALLOCATE and DEALLOCATE.
    fn space_target(&self, c: &Creds, h: &Handle, offset: u64, len: u64) -> Result<u64> {
        let ino = self.resolve(h)?;
        self.node(ino).want_regular()?;
        if len == 0 {
            return Err(Errno(libc::EINVAL));
        }
        if !crate::range_fits(offset, len) {
            return Err(Errno(libc::EFBIG));
        }
        perm::may_io(c, self.node(ino), true)?;
        Ok(ino)
    }

    pub(super) fn allocate(&mut self, c: &Creds, h: &Handle, offset: u64, len: u64) -> Result<()> {
        let ino = self.space_target(c, h, offset, len)?;
        let (n, space) = self.file_mut(ino);
        n.data_mut()
            .expect("a file")
            .allocate(offset, offset + len, space)?;
        n.size = n.size.max(offset + len);
        self.written(c, ino);
        Ok(())
    }

    pub(super) fn deallocate(
        &mut self,
        c: &Creds,
        h: &Handle,
        offset: u64,
        len: u64,
    ) -> Result<()> {
        let ino = self.space_target(c, h, offset, len)?;
        let (n, space) = self.file_mut(ino);
        n.data_mut()
            .expect("a file")
            .punch(offset, offset + len, space);
        self.written(c, ino);
        Ok(())
    }

    pub(super) fn seek(
        &self,
        c: &Creds,
        h: &Handle,
        offset: u64,
        what: SeekWhat,
    ) -> Result<Option<u64>> {
        let ino = self.resolve(h)?;
        let n = self.node(ino);
        n.want_regular()?;
        if offset > crate::MAX_FILE_SIZE {
            return Ok(None);
        }
        perm::may_io(c, n, false)?;
        let d = n.data().expect("a file");
        Ok(match what {
            SeekWhat::Data => d.seek_data(offset, n.size),
            SeekWhat::Hole => d.seek_hole(offset, n.size),
        })
    }

    /// The checks of COPY and CLONE (RFC 7862 §15.2.3), as `LocalFs`
    /// makes them.
    fn plan(
        &self,
        c: &Creds,
        (src, src_off): (&Handle, u64),
        (dst, dst_off): (&Handle, u64),
        count: u64,
    ) -> Result<Plan> {
        let s = self.resolve(src)?;
        self.node(s).want_regular()?;
        let d = self.resolve(dst)?;
        self.node(d).want_regular()?;
        perm::may_io(c, self.node(s), false)?;
        perm::may_io(c, self.node(d), true)?;
        let size = self.node(s).size;
        let (count, _) = crate::copy_ranges(size, src_off, dst_off, count, s == d)?;
        Ok(Plan {
            src: s,
            dst: d,
            src_off,
            dst_off,
            count,
            src_size: size,
        })
    }

    /// Copies the plan's range a piece at a time: data up to a chunk per
    /// step, holes by punching. Stops after `cap` data bytes, or when out
    /// of space once something was copied; returns the bytes covered.
    fn copy_pieces(&mut self, p: &Plan, cap: u64) -> Result<u64> {
        let src_end = p.src_off + p.count;
        let (mut pos, mut moved) = (0u64, 0u64);
        while pos < p.count {
            let at = p.src_off + pos;
            let src = self.node(p.src).data().expect("a file");
            let next = src.data_from(at).filter(|&(start, _)| start < src_end);
            let (hole_end, bytes) = match next {
                None => (src_end, None),
                Some((start, _)) if start > at => (start, None),
                Some((start, end)) => {
                    let end = end.min(src_end);
                    (end, Some(src.read(start, (end - start) as usize)))
                }
            };
            let dst_at = p.dst_off + pos;
            let (n, space) = self.file_mut(p.dst);
            let dst = n.data_mut().expect("a file");
            match bytes {
                None => dst.punch(dst_at, p.dst_off + (hole_end - p.src_off), space),
                Some(b) => match dst.write(dst_at, &b, space) {
                    Ok(()) => moved += b.len() as u64,
                    Err(_) if pos > 0 => break,
                    Err(e) => return Err(e),
                },
            }
            pos = hole_end - p.src_off;
            if moved >= cap {
                break;
            }
        }
        Ok(pos)
    }

    /// Extends the destination over what was copied and records it.
    fn copied(&mut self, c: &Creds, p: &Plan, done: u64) {
        let n = self.node_mut(p.dst);
        n.size = n.size.max(p.dst_off + done);
        self.written(c, p.dst);
        self.accessed(p.src);
    }

    pub(super) fn copy(
        &mut self,
        c: &Creds,
        src: &Handle,
        src_off: u64,
        dst: &Handle,
        dst_off: u64,
        count: u64,
    ) -> Result<u64> {
        let p = self.plan(c, (src, src_off), (dst, dst_off), count)?;
        if p.count == 0 {
            return Ok(0);
        }
        let done = self.copy_pieces(&p, MAX_COPY)?;
        self.copied(c, &p, done);
        Ok(done)
    }

    /// CLONE: ranges aligned to chunks (the end may be the source's end),
    /// copied whole or not at all.
    pub(super) fn clone_range(
        &mut self,
        c: &Creds,
        src: &Handle,
        src_off: u64,
        dst: &Handle,
        dst_off: u64,
        count: u64,
    ) -> Result<()> {
        let p = self.plan(c, (src, src_off), (dst, dst_off), count)?;
        if p.count == 0 {
            return Ok(());
        }
        let to_eof = p.src_off + p.count == p.src_size;
        if !p.src_off.is_multiple_of(CHUNK)
            || !p.dst_off.is_multiple_of(CHUNK)
            || !(p.count.is_multiple_of(CHUNK) || to_eof)
        {
            return Err(Errno(libc::EINVAL));
        }
        // Aligned, each source chunk lands on one destination chunk: the
        // new ones are those the destination lacks.
        let src_data = self.node(p.src).data().expect("a file");
        let dst_data = self.node(p.dst).data().expect("a file");
        let shift = |i: u64| i - p.src_off / CHUNK + p.dst_off / CHUNK;
        let need = src_data
            .chunks_in(p.src_off, p.src_off + p.count)
            .into_iter()
            .filter(|&i| !dst_data.has_chunk(shift(i)))
            .count() as u64;
        if !self.space.fits(need * CHUNK) {
            return Err(Errno(libc::ENOSPC));
        }
        let done = self.copy_pieces(&p, u64::MAX)?;
        self.copied(c, &p, done);
        Ok(())
    }
}
