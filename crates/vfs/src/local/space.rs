//! Space management for [`LocalFs`]: ALLOCATE, DEALLOCATE and SEEK of
//! NFSv4.2 (RFC 7862 §15.1, §15.4, §15.11) over fallocate(2) and lseek(2).
//!
//! Wired into `impl Vfs for LocalFs` by three forwarding methods:
//! `allocate` → `fallocate_range(.., 0)`, `deallocate` →
//! `fallocate_range(.., FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)`,
//! `seek` → `seek_content`.

use std::os::fd::AsRawFd;

use super::{sys, LocalFs};
use crate::{Creds, Errno, Handle, Result, SeekWhat};

impl LocalFs {
    /// fallocate(2) with `mode` on `[offset, offset + len)` of a regular
    /// file, with the caller's identity and the owner override of writes.
    pub(super) fn fallocate_range(
        &self,
        c: &Creds,
        h: &Handle,
        offset: u64,
        len: u64,
        mode: i32,
    ) -> Result<()> {
        let o = self.resolve(h)?;
        o.want_regular()?;
        if len == 0 {
            return Err(Errno(libc::EINVAL));
        }
        if !crate::range_fits(offset, len) {
            return Err(Errno(libc::EFBIG));
        }
        let f = self.file_for(h, &o, true)?;
        {
            let _g = self.as_caller(c)?;
            self.may_io(c, &o, true)?;
            // SAFETY: plain syscall on a descriptor we own.
            let r = unsafe { libc::fallocate(f.as_raw_fd(), mode, offset as i64, len as i64) };
            if r != 0 {
                return Err(sys::errno());
            }
        }
        self.touched_fd(f.as_raw_fd());
        // Space reserved past the end is a size change: stable before it
        // is answered, as SETATTR's is.
        if mode & libc::FALLOC_FL_KEEP_SIZE == 0 {
            self.durable_sync(|| f.sync_all().map_err(Errno::from))?;
        }
        Ok(())
    }

    /// lseek(2) SEEK_DATA / SEEK_HOLE from `offset`; `None` for ENXIO (at
    /// or past the end of the file, or no data after `offset`).
    pub(super) fn seek_content(
        &self,
        c: &Creds,
        h: &Handle,
        offset: u64,
        what: SeekWhat,
    ) -> Result<Option<u64>> {
        let o = self.resolve(h)?;
        o.want_regular()?;
        if offset > crate::MAX_FILE_SIZE {
            return Ok(None);
        }
        let f = self.file_for(h, &o, false)?;
        {
            let _g = self.as_caller(c)?;
            self.may_io(c, &o, false)?;
        }
        let whence = match what {
            SeekWhat::Data => libc::SEEK_DATA,
            SeekWhat::Hole => libc::SEEK_HOLE,
        };
        // The shared descriptor's offset is never used for I/O (reads and
        // writes are positional), so moving it is harmless.
        // SAFETY: plain syscall on a descriptor we own.
        let r = unsafe { libc::lseek(f.as_raw_fd(), offset as i64, whence) };
        if r < 0 {
            let e = sys::errno();
            return if e.0 == libc::ENXIO { Ok(None) } else { Err(e) };
        }
        Ok(Some(r as u64))
    }
}
