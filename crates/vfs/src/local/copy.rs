//! Server-side copy for [`LocalFs`]: NFSv4.2 COPY and CLONE (RFC 7862
//! §15.2, §15.13).
//!
//! COPY shares blocks when the file system can (the FICLONERANGE ioctl on
//! block-aligned ranges: btrfs, XFS with reflink, bcachefs, ...), else
//! lets the kernel copy (copy_file_range(2), which may itself share
//! blocks or copy inside the storage), else reads and writes. CLONE is
//! FICLONERANGE only.
//!
//! Wired into `impl Vfs for LocalFs` by two forwarding methods: `copy` →
//! `copy_range`, `clone_range` → `clone_file_range`.

use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use super::{sync::OpenFile, sys, LocalFs};
use crate::{Creds, Handle, Result};

/// `_IOW(0x94, 13, struct file_clone_range)` (linux/fs.h).
const FICLONERANGE: libc::c_ulong = 0x4020_940d;

/// Most bytes one COPY moves when blocks cannot be shared: a synchronous
/// copy holds a blocking thread, and a short copy is legal (the client
/// continues from where it stopped, RFC 7862 §15.2.3).
pub(super) const MAX_COPY: u64 = 64 << 20;

/// `struct file_clone_range` (linux/fs.h).
#[repr(C)]
struct FileCloneRange {
    src_fd: i64,
    src_offset: u64,
    src_length: u64,
    dest_offset: u64,
}

/// The two open files of a copy and the checked range.
struct Plan {
    src: Arc<OpenFile>,
    dst: Arc<OpenFile>,
    src_off: u64,
    dst_off: u64,
    /// Bytes to copy (a count of 0 resolved to "to the end").
    count: u64,
    /// The source ends where the range ends.
    to_eof: bool,
    blksize: u64,
}

impl LocalFs {
    /// Resolves and checks both files and the ranges (RFC 7862 §15.2.3):
    /// the source range must lie within the source (EINVAL), a count of
    /// 0 means "to the end of the source", overlapping ranges of one file
    /// are EINVAL and a destination past the largest size EFBIG.
    fn plan(
        &self,
        c: &Creds,
        src: &Handle,
        src_off: u64,
        dst: &Handle,
        dst_off: u64,
        count: u64,
    ) -> Result<Plan> {
        let so = self.resolve(src)?;
        so.want_regular()?;
        let d = self.resolve(dst)?;
        d.want_regular()?;
        let fs = self.file_for(src, &so, false)?;
        let fd = self.file_for(dst, &d, true)?;
        {
            let _g = self.as_caller(c)?;
            self.may_io(c, &so, false)?;
            self.may_io(c, &d, true)?;
        }
        let sst = sys::fstat(fs.as_raw_fd())?;
        let dst_st = sys::fstat(fd.as_raw_fd())?;
        let size = sst.st_size.max(0) as u64;
        let same = sst.st_dev == dst_st.st_dev && sst.st_ino == dst_st.st_ino;
        let (count, src_end) = crate::copy_ranges(size, src_off, dst_off, count, same)?;
        Ok(Plan {
            src: fs,
            dst: fd,
            src_off,
            dst_off,
            count,
            to_eof: src_end == size,
            blksize: (dst_st.st_blksize.max(sst.st_blksize)).max(1) as u64,
        })
    }

    /// COPY: copies `count` bytes (0: to the end of the source) from
    /// `src` at `src_off` to `dst` at `dst_off`; returns the bytes
    /// copied, which may be fewer than asked (at most [`MAX_COPY`] unless
    /// blocks are shared).
    pub(super) fn copy_range(
        &self,
        c: &Creds,
        src: &Handle,
        src_off: u64,
        dst: &Handle,
        dst_off: u64,
        count: u64,
    ) -> Result<u64> {
        let p = self.plan(c, src, src_off, dst, dst_off, count)?;
        if p.count == 0 {
            return Ok(0);
        }
        let copied = {
            // With the caller's identity, as a local copy would run (the
            // kernel clears set-id bits of the destination).
            let _g = self.as_caller(c)?;
            let aligned = p.src_off.is_multiple_of(p.blksize)
                && p.dst_off.is_multiple_of(p.blksize)
                && (p.count.is_multiple_of(p.blksize) || p.to_eof);
            if aligned && ficlonerange(&p).is_ok() {
                p.count
            } else {
                kernel_copy(&p)?
            }
        };
        self.touched_fd(p.dst.as_raw_fd());
        Ok(copied)
    }

    /// CLONE: shares the blocks of the source range with the destination
    /// (FICLONERANGE). EOPNOTSUPP or EXDEV when the file system cannot,
    /// EINVAL for ranges not aligned to its block size.
    pub(super) fn clone_file_range(
        &self,
        c: &Creds,
        src: &Handle,
        src_off: u64,
        dst: &Handle,
        dst_off: u64,
        count: u64,
    ) -> Result<()> {
        let p = self.plan(c, src, src_off, dst, dst_off, count)?;
        if p.count == 0 {
            return Ok(());
        }
        {
            let _g = self.as_caller(c)?;
            ficlonerange(&p)?;
        }
        self.touched_fd(p.dst.as_raw_fd());
        Ok(())
    }
}

fn ficlonerange(p: &Plan) -> Result<()> {
    let arg = FileCloneRange {
        src_fd: p.src.as_raw_fd() as i64,
        src_offset: p.src_off,
        // 0 would mean "to the end of the source", which is what a
        // range ending at the end asks for anyway.
        src_length: p.count,
        dest_offset: p.dst_off,
    };
    // SAFETY: `arg` is a correctly laid out `struct file_clone_range` that
    // outlives the call; the kernel only reads it.
    let r = unsafe {
        libc::ioctl(
            p.dst.as_raw_fd(),
            FICLONERANGE as _,
            &arg as *const FileCloneRange,
        )
    };
    if r < 0 {
        Err(sys::errno())
    } else {
        Ok(())
    }
}

/// copy_file_range(2) in a loop, falling back to reads and writes when
/// the kernel refuses it for these files; stops early at [`MAX_COPY`] or
/// if the source shrank.
fn kernel_copy(p: &Plan) -> Result<u64> {
    let want = p.count.min(MAX_COPY);
    let mut off_in = p.src_off as libc::loff_t;
    let mut off_out = p.dst_off as libc::loff_t;
    let mut done = 0u64;
    while done < want {
        let chunk = (want - done).min(1 << 30) as usize;
        // SAFETY: both offsets point to live loff_t values; the
        // descriptors are ours.
        let n = unsafe {
            libc::copy_file_range(
                p.src.as_raw_fd(),
                &mut off_in,
                p.dst.as_raw_fd(),
                &mut off_out,
                chunk,
                0,
            )
        };
        if n < 0 {
            let e = sys::errno();
            match e.0 {
                libc::EINTR => continue,
                libc::EXDEV | libc::EOPNOTSUPP | libc::ENOSYS | libc::EINVAL | libc::EBADF
                    if done == 0 =>
                {
                    return read_write_copy(p, want)
                }
                _ if done > 0 => break,
                _ => return Err(e),
            }
        }
        if n == 0 {
            break;
        }
        done += n as u64;
    }
    Ok(done)
}

/// The last resort: positional reads and writes through a buffer.
fn read_write_copy(p: &Plan, want: u64) -> Result<u64> {
    let mut buf = vec![0u8; (want.min(1 << 20)) as usize];
    let mut done = 0u64;
    while done < want {
        let len = ((want - done) as usize).min(buf.len());
        let n = match p.src.read_at(&mut buf[..len], p.src_off + done) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if done > 0 => {
                tracing::debug!("copy stopped early: {e}");
                break;
            }
            Err(e) => return Err(e.into()),
        };
        p.dst.write_all_at(&buf[..n], p.dst_off + done)?;
        done += n as u64;
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::{CreateMode, Errno, SetAttr, Stability, Vfs};

    fn file(fs: &LocalFs, name: &str, data: &[u8]) -> Handle {
        let c = Creds::root();
        let (h, _, _) = fs
            .create_file(
                &c,
                &fs.root(),
                name.as_bytes(),
                CreateMode::Unchecked,
                &SetAttr::default(),
            )
            .unwrap();
        fs.write(&c, &h, 0, data, Stability::Unstable).unwrap();
        h
    }

    fn contents(fs: &LocalFs, h: &Handle) -> Vec<u8> {
        fs.read(&Creds::root(), h, 0, 1 << 20).unwrap().0.to_vec()
    }

    #[test]
    fn copy_within_and_across_files() {
        let dir = tempfile::TempDir::new().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let fs = LocalFs::new(dir.path()).unwrap();
        let c = Creds::root();
        let a = file(&fs, "a", b"0123456789");
        let b = file(&fs, "b", b"");
        assert_eq!(fs.copy(&c, &a, 2, &b, 0, 3).unwrap(), 3);
        assert_eq!(contents(&fs, &b), b"234");
        // count 0: to the end of the source; a gap in the destination
        assert_eq!(fs.copy(&c, &a, 7, &b, 5, 0).unwrap(), 3);
        assert_eq!(contents(&fs, &b), b"234\x00\x00789");
        // within one file, ranges apart
        assert_eq!(fs.copy(&c, &a, 0, &a, 5, 5).unwrap(), 5);
        assert_eq!(contents(&fs, &a), b"0123401234");
        // overlapping ranges of one file, source past the end
        assert_eq!(fs.copy(&c, &a, 0, &a, 3, 5), Err(Errno(libc::EINVAL)));
        assert_eq!(fs.copy(&c, &a, 11, &b, 0, 0), Err(Errno(libc::EINVAL)));
        assert_eq!(fs.copy(&c, &a, 5, &b, 0, 6), Err(Errno(libc::EINVAL)));
        assert_eq!(fs.copy(&c, &a, 10, &b, 0, 0), Ok(0));
        assert_eq!(
            fs.copy(&c, &a, 0, &b, i64::MAX as u64, 2),
            Err(Errno(libc::EFBIG))
        );
        // a directory is not a file to copy
        assert_eq!(
            fs.copy(&c, &fs.root(), 0, &b, 0, 1),
            Err(Errno(libc::EISDIR))
        );
        // block-aligned: shared where the file system can, copied otherwise
        let big: Vec<u8> = (0..3 * 4096u32).map(|i| (i % 251) as u8).collect();
        let s = file(&fs, "big", &big);
        let d = file(&fs, "bigcopy", b"");
        assert_eq!(fs.copy(&c, &s, 0, &d, 4096, 0).unwrap(), big.len() as u64);
        let got = contents(&fs, &d);
        assert_eq!(&got[4096..], &big[..]);
        match fs.clone_range(&c, &s, 0, &d, 0, 4096) {
            Ok(()) => assert_eq!(&contents(&fs, &d)[..4096], &big[..4096]),
            Err(e) => assert!(
                matches!(e.0, libc::EOPNOTSUPP | libc::EXDEV | libc::EINVAL),
                "{e}"
            ),
        }
    }
}
