//! Thin, safe wrappers over the raw Linux syscalls [`super::LocalFs`] uses.
//!
//! Every wrapper returns the raw errno on failure and retries on EINTR where
//! the call may be interrupted. File descriptors are passed as `RawFd`: an
//! invalid descriptor only makes the kernel answer EBADF, it cannot cause
//! memory unsafety.

use std::ffi::{CStr, CString};
use std::mem::MaybeUninit;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use bytes::{Bytes, BytesMut};

use crate::{Errno, Handle, Result, MAX_HANDLE};

/// The kernel's own limit on `f_handle` (MAX_HANDLE_SZ).
const MAX_FH: usize = 128;

/// Largest serialized kernel handle: a backend handle also carries the
/// export's root tag and must fit in [`MAX_HANDLE`].
const MAX_KERNEL_HANDLE: usize = MAX_HANDLE - super::ROOT_TAG_LEN;

/// The empty path used with `AT_EMPTY_PATH`.
pub(crate) const EMPTY: &CStr = c"";

pub(crate) fn errno() -> Errno {
    Errno(
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO),
    )
}

fn cvt(r: libc::c_int) -> Result<libc::c_int> {
    if r < 0 {
        Err(errno())
    } else {
        Ok(r)
    }
}

fn cvt_long(r: libc::c_long) -> Result<libc::c_long> {
    if r < 0 {
        Err(errno())
    } else {
        Ok(r)
    }
}

/// Retries `f` while it fails with EINTR.
fn retry<T>(mut f: impl FnMut() -> Result<T>) -> Result<T> {
    loop {
        match f() {
            Err(Errno(libc::EINTR)) => continue,
            r => return r,
        }
    }
}

/// `/proc/self/fd/N`, the magic link naming an open descriptor.
pub(crate) fn proc_path(fd: RawFd) -> CString {
    // A formatted integer never contains NUL.
    CString::new(format!("/proc/self/fd/{fd}")).unwrap_or_default()
}

pub(crate) fn openat(dir: RawFd, path: &CStr, flags: i32, mode: u32) -> Result<OwnedFd> {
    retry(|| {
        // SAFETY: `path` is a valid NUL-terminated string that outlives the
        // call; openat does not retain it.
        let fd = unsafe {
            libc::openat(
                dir,
                path.as_ptr(),
                flags | libc::O_CLOEXEC,
                mode as libc::c_uint,
            )
        };
        let fd = cvt(fd)?;
        // SAFETY: the kernel just returned this descriptor to us; nothing
        // else owns it.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    })
}

pub(crate) fn fsync(fd: RawFd) -> Result<()> {
    // SAFETY: fsync takes any descriptor number.
    cvt(unsafe { libc::fsync(fd) })?;
    Ok(())
}

/// Writes back the whole file system `fd` is on and waits for it
/// (syncfs(2): every dirty inode, its data, and the file system's own
/// blocks).
pub(crate) fn syncfs(fd: RawFd) -> Result<()> {
    // SAFETY: syncfs takes any descriptor number.
    cvt(unsafe { libc::syncfs(fd) })?;
    Ok(())
}

pub(crate) fn fstat(fd: RawFd) -> Result<libc::stat> {
    let mut st = MaybeUninit::<libc::stat>::zeroed();
    // SAFETY: `st` points to writable memory the size of a `struct stat`.
    cvt(unsafe { libc::fstat(fd, st.as_mut_ptr()) })?;
    // SAFETY: fstat succeeded and filled the structure (it was zeroed
    // beforehand anyway, and every bit pattern is a valid `stat`).
    Ok(unsafe { st.assume_init() })
}

pub(crate) fn fstatat(dir: RawFd, name: &CStr, flags: i32) -> Result<libc::stat> {
    let mut st = MaybeUninit::<libc::stat>::zeroed();
    // SAFETY: `name` is NUL-terminated; `st` points to writable memory the
    // size of a `struct stat`.
    cvt(unsafe { libc::fstatat(dir, name.as_ptr(), st.as_mut_ptr(), flags) })?;
    // SAFETY: as in `fstat`.
    Ok(unsafe { st.assume_init() })
}

/// `struct file_handle` with room for the largest handle the kernel makes.
#[repr(C)]
struct FileHandle {
    handle_bytes: u32,
    handle_type: i32,
    f_handle: [u8; MAX_FH],
}

/// The kernel file handle of `dir`/`name` (or of `dir` itself with an empty
/// name and `AT_EMPTY_PATH`), serialized as `[handle_type: u32 BE][f_handle]`.
/// Symlinks are not followed unless `flags` has `AT_SYMLINK_FOLLOW`.
pub(crate) fn name_to_handle(dir: RawFd, name: &CStr, flags: i32) -> Result<Handle> {
    let mut fh = FileHandle {
        handle_bytes: MAX_FH as u32,
        handle_type: 0,
        f_handle: [0; MAX_FH],
    };
    let mut mount_id: libc::c_int = 0;
    // SAFETY: `fh` is a correctly laid out `struct file_handle` whose
    // `handle_bytes` announces the size of its `f_handle` array; `name` is
    // NUL-terminated; `mount_id` is a writable int.
    cvt_long(unsafe {
        libc::syscall(
            libc::SYS_name_to_handle_at,
            dir,
            name.as_ptr(),
            &mut fh as *mut FileHandle,
            &mut mount_id as *mut libc::c_int,
            flags,
        )
    })?;
    let n = fh.handle_bytes as usize;
    if n > MAX_FH || 4 + n > MAX_KERNEL_HANDLE {
        return Err(Errno(libc::EOVERFLOW));
    }
    let mut out = Vec::with_capacity(4 + n);
    out.extend_from_slice(&(fh.handle_type as u32).to_be_bytes());
    out.extend_from_slice(&fh.f_handle[..n]);
    Ok(Handle(Bytes::from(out)))
}

/// A handle naming `dir`/`name` by its inode number (`[0xfffffffe]
/// [st_ino: u64 BE]`), for file systems whose kernel handles do not
/// survive a remount (`Mode::Stable`); flags as `name_to_handle`'s.
pub(crate) fn ino_handle(dir: RawFd, name: &CStr, flags: i32) -> Result<Handle> {
    let mut at = flags & libc::AT_EMPTY_PATH;
    if flags & libc::AT_SYMLINK_FOLLOW == 0 {
        at |= libc::AT_SYMLINK_NOFOLLOW;
    }
    let st = fstatat(dir, name, at)?;
    let mut out = Vec::with_capacity(12);
    out.extend_from_slice(&0xffff_fffeu32.to_be_bytes());
    out.extend_from_slice(&st.st_ino.to_be_bytes());
    Ok(Handle(Bytes::from(out)))
}

/// The value of the extended attribute `name` of the object `fd` is
/// open on (`fgetxattr(2)`; an `O_PATH` descriptor through /proc).
pub(crate) fn fgetxattr(fd: RawFd, name: &CStr) -> Result<Vec<u8>> {
    let path = proc_path(fd);
    let mut buf = vec![0u8; 256];
    // SAFETY: `path` and `name` are NUL-terminated; `buf` is writable for
    // its length.
    let n = cvt_long(unsafe {
        libc::getxattr(
            path.as_ptr(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        ) as libc::c_long
    })?;
    buf.truncate(n as usize);
    Ok(buf)
}

/// Sets the extended attribute `name` of the object `fd` is open on to
/// `value`, only if it does not exist yet (EEXIST otherwise).
pub(crate) fn fsetxattr_create(fd: RawFd, name: &CStr, value: &[u8]) -> Result<()> {
    let path = proc_path(fd);
    // SAFETY: `path` and `name` are NUL-terminated; `value` is readable
    // for its length.
    cvt(unsafe {
        libc::setxattr(
            path.as_ptr(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            libc::XATTR_CREATE,
        )
    })?;
    Ok(())
}

/// `openat` that only looks in the dentry cache (`openat2` with
/// `RESOLVE_CACHED`, and the `RESOLVE_*` flags in `resolve`): EAGAIN
/// where the lookup would have to read the disk; ENOENT for a name known
/// not to exist.
pub(crate) fn openat_cached(dir: RawFd, name: &CStr, flags: i32, resolve: u64) -> Result<OwnedFd> {
    // struct open_how (openat2(2)), laid out as the kernel has it.
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let how = OpenHow {
        flags: (flags | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: libc::RESOLVE_CACHED | resolve,
    };
    retry(|| {
        // SAFETY: `name` is NUL-terminated and `how` a valid open_how of
        // the size passed.
        let fd = cvt_long(unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir,
                name.as_ptr(),
                &how as *const OpenHow,
                std::mem::size_of::<OpenHow>(),
            )
        })?;
        // SAFETY: a fresh descriptor from the kernel, owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
    })
}

/// Reads up to `len` bytes at `offset`, only what is already in the page
/// cache (`preadv2(RWF_NOWAIT)`), into a new buffer: EAGAIN where it
/// would have to wait for the disk, EOPNOTSUPP where the file system
/// cannot say. The buffer is not zeroed first: the kernel writes it, and
/// only what it wrote is kept.
pub(crate) fn pread_nowait(fd: RawFd, len: usize, offset: u64) -> Result<BytesMut> {
    let mut buf = BytesMut::with_capacity(len);
    pread_spare(fd, &mut buf, len, offset, libc::RWF_NOWAIT)?;
    Ok(buf)
}

/// `cachestat(2)` (Linux 6.5): 451 on every architecture.
const SYS_CACHESTAT: libc::c_long = 451;

/// Whether every page of `len` bytes at `offset` of the file open as `fd`
/// is in the page cache now (`cachestat(2)`); `None` where the kernel
/// cannot say (before Linux 6.5, or refused by a seccomp filter), and
/// from then on without asking again.
pub(crate) fn cached_in_full(fd: RawFd, offset: u64, len: usize) -> Option<bool> {
    use std::sync::atomic::{AtomicBool, Ordering};
    static UNSUPPORTED: AtomicBool = AtomicBool::new(false);
    if UNSUPPORTED.load(Ordering::Relaxed) {
        return None;
    }
    #[repr(C)]
    struct Range {
        off: u64,
        len: u64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct CacheStat {
        nr_cache: u64,
        nr_dirty: u64,
        nr_writeback: u64,
        nr_evicted: u64,
        nr_recently_evicted: u64,
    }
    let page = 4096u64;
    let first = offset / page;
    let last = (offset + len.max(1) as u64 - 1) / page;
    let pages = last - first + 1;
    let range = Range {
        off: first * page,
        len: pages * page,
    };
    let mut cs = CacheStat::default();
    // SAFETY: the kernel reads `range` and writes `cs`, both live and of
    // the layout cachestat(2) defines.
    let r = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            fd,
            &range as *const Range,
            &mut cs as *mut CacheStat,
            0u32,
        )
    };
    if r != 0 {
        let e = std::io::Error::last_os_error().raw_os_error();
        if matches!(e, Some(libc::ENOSYS) | Some(libc::EPERM)) {
            UNSUPPORTED.store(true, Ordering::Relaxed);
        }
        return None;
    }
    Some(cs.nr_cache >= pages)
}

/// Reads `len` bytes at `offset`, or up to the end of the file, into a
/// new buffer (`pread`, no flags; not zeroed first).
pub(crate) fn pread_full(fd: RawFd, len: usize, offset: u64) -> Result<BytesMut> {
    let mut buf = BytesMut::with_capacity(len);
    while buf.len() < len {
        let at = offset + buf.len() as u64;
        if pread_spare(fd, &mut buf, len, at, 0)? == 0 {
            break;
        }
    }
    Ok(buf)
}

/// One `preadv2(flags)` into the spare capacity of `buf`, `buf` growing
/// by what was read but never past `len` bytes.
fn pread_spare(
    fd: RawFd,
    buf: &mut BytesMut,
    len: usize,
    offset: u64,
    flags: i32,
) -> Result<usize> {
    let want = len.saturating_sub(buf.len());
    let spare = buf.spare_capacity_mut();
    let iov = libc::iovec {
        iov_base: spare.as_mut_ptr().cast(),
        iov_len: want.min(spare.len()),
    };
    let n = retry(|| {
        // SAFETY: one iovec within the spare capacity, writable for its
        // length; the kernel only writes into it.
        let n = unsafe { libc::preadv2(fd, &iov, 1, offset as libc::off_t, flags) };
        cvt_long(n as libc::c_long).map(|n| n as usize)
    })?;
    let n = n.min(iov.iov_len);
    // SAFETY: the kernel initialized the first `n` bytes of the spare
    // capacity, which directly follows the initialized part.
    unsafe { buf.set_len(buf.len() + n) };
    Ok(n)
}

/// Opens a serialized kernel handle relative to the file system of
/// `mount_fd`. Malformed handles fail with ESTALE.
pub(crate) fn open_by_handle(mount_fd: RawFd, h: &[u8], flags: i32) -> Result<OwnedFd> {
    if h.len() < 5 || h.len() > MAX_KERNEL_HANDLE {
        return Err(Errno(libc::ESTALE));
    }
    let mut fh = FileHandle {
        handle_bytes: (h.len() - 4) as u32,
        handle_type: i32::from_be_bytes([h[0], h[1], h[2], h[3]]),
        f_handle: [0; MAX_FH],
    };
    fh.f_handle[..h.len() - 4].copy_from_slice(&h[4..]);
    retry(|| {
        // SAFETY: `fh` is a correctly laid out `struct file_handle` whose
        // `handle_bytes` does not exceed its array.
        let fd = cvt_long(unsafe {
            libc::syscall(
                libc::SYS_open_by_handle_at,
                mount_fd,
                &mut fh as *mut FileHandle,
                flags | libc::O_CLOEXEC,
            )
        })?;
        // SAFETY: a fresh descriptor from the kernel, owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
    })
}

pub(crate) fn mkdirat(dir: RawFd, name: &CStr, mode: u32) -> Result<()> {
    // SAFETY: `name` is NUL-terminated.
    cvt(unsafe { libc::mkdirat(dir, name.as_ptr(), mode as libc::mode_t) }).map(drop)
}

pub(crate) fn mknodat(dir: RawFd, name: &CStr, mode: u32, dev: libc::dev_t) -> Result<()> {
    // SAFETY: `name` is NUL-terminated.
    cvt(unsafe { libc::mknodat(dir, name.as_ptr(), mode as libc::mode_t, dev) }).map(drop)
}

pub(crate) fn symlinkat(target: &CStr, dir: RawFd, name: &CStr) -> Result<()> {
    // SAFETY: both strings are NUL-terminated.
    cvt(unsafe { libc::symlinkat(target.as_ptr(), dir, name.as_ptr()) }).map(drop)
}

pub(crate) fn unlinkat(dir: RawFd, name: &CStr, flags: i32) -> Result<()> {
    // SAFETY: `name` is NUL-terminated.
    cvt(unsafe { libc::unlinkat(dir, name.as_ptr(), flags) }).map(drop)
}

pub(crate) fn renameat(from: RawFd, from_name: &CStr, to: RawFd, to_name: &CStr) -> Result<()> {
    // SAFETY: both names are NUL-terminated.
    cvt(unsafe { libc::renameat(from, from_name.as_ptr(), to, to_name.as_ptr()) }).map(drop)
}

pub(crate) fn linkat(
    from: RawFd,
    from_name: &CStr,
    to: RawFd,
    to_name: &CStr,
    flags: i32,
) -> Result<()> {
    // SAFETY: both names are NUL-terminated.
    cvt(unsafe { libc::linkat(from, from_name.as_ptr(), to, to_name.as_ptr(), flags) }).map(drop)
}

/// The target of a symlink opened with `O_PATH|O_NOFOLLOW` (or of
/// `dir`/`name`).
pub(crate) fn readlinkat(dir: RawFd, name: &CStr) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; 4096];
    loop {
        // SAFETY: `buf` is writable for `buf.len()` bytes; `name` is
        // NUL-terminated.
        let n = unsafe {
            libc::readlinkat(
                dir,
                name.as_ptr(),
                buf.as_mut_ptr() as *mut libc::c_char,
                buf.len(),
            )
        };
        if n < 0 {
            return Err(errno());
        }
        let n = n as usize;
        if n < buf.len() {
            buf.truncate(n);
            return Ok(buf);
        }
        if buf.len() >= 1 << 20 {
            return Err(Errno(libc::ENAMETOOLONG));
        }
        buf.resize(buf.len() * 2, 0);
    }
}

pub(crate) fn fchownat(fd: RawFd, uid: Option<u32>, gid: Option<u32>) -> Result<()> {
    let uid = uid.unwrap_or(u32::MAX) as libc::uid_t;
    let gid = gid.unwrap_or(u32::MAX) as libc::gid_t;
    // SAFETY: the empty path is NUL-terminated.
    cvt(unsafe {
        libc::fchownat(
            fd,
            EMPTY.as_ptr(),
            uid,
            gid,
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
        )
    })
    .map(drop)
}

/// chmod of whatever `fd` refers to (any kind of descriptor, O_PATH
/// included), through its /proc magic link.
pub(crate) fn chmod_fd(fd: RawFd, mode: u32) -> Result<()> {
    let p = proc_path(fd);
    // SAFETY: `p` is NUL-terminated.
    cvt(unsafe { libc::fchmodat(libc::AT_FDCWD, p.as_ptr(), mode as libc::mode_t, 0) }).map(drop)
}

/// Sets the times of the object `fd` refers to (without following a
/// symlink). `None` leaves a time alone; `Some(None)` means the current time.
pub(crate) fn utimes_fd(
    fd: RawFd,
    atime: Option<Option<(i64, u32)>>,
    mtime: Option<Option<(i64, u32)>>,
) -> Result<()> {
    fn ts(t: Option<Option<(i64, u32)>>) -> libc::timespec {
        match t {
            None => libc::timespec {
                tv_sec: 0,
                tv_nsec: libc::UTIME_OMIT,
            },
            Some(None) => libc::timespec {
                tv_sec: 0,
                tv_nsec: libc::UTIME_NOW,
            },
            Some(Some((s, ns))) => libc::timespec {
                tv_sec: s as libc::time_t,
                tv_nsec: ns as libc::c_long,
            },
        }
    }
    let times = [ts(atime), ts(mtime)];
    // SAFETY: `times` is an array of two timespecs; the path is
    // NUL-terminated.
    cvt(unsafe {
        libc::utimensat(
            fd,
            EMPTY.as_ptr(),
            times.as_ptr(),
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
        )
    })
    .map(drop)
}

/// faccessat2(fd, "", mask, AT_EACCESS|AT_EMPTY_PATH): the kernel's
/// permission check with the thread's current fsuid/fsgid/groups.
pub(crate) fn faccess(fd: RawFd, mask: i32) -> Result<()> {
    // SAFETY: the empty path is NUL-terminated.
    cvt_long(unsafe {
        libc::syscall(
            libc::SYS_faccessat2,
            fd,
            EMPTY.as_ptr(),
            mask,
            libc::AT_EACCESS | libc::AT_EMPTY_PATH,
        )
    })
    .map(drop)
}

pub(crate) fn fstatfs(fd: RawFd) -> Result<libc::statfs> {
    let mut st = MaybeUninit::<libc::statfs>::zeroed();
    // SAFETY: `st` points to writable memory the size of a `struct statfs`.
    cvt(unsafe { libc::fstatfs(fd, st.as_mut_ptr()) })?;
    // SAFETY: fstatfs succeeded; the struct was zeroed beforehand.
    Ok(unsafe { st.assume_init() })
}

/// The type of the file system mounted where `fd` lies, as the kernel
/// names it in /proc/self/mountinfo ("ext4", "xfs", "fuse.crashfs"...):
/// the mount is the one /proc/self/fdinfo gives for `fd` (`mnt_id`).
pub(crate) fn mount_fstype(fd: RawFd) -> Option<String> {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).ok()?;
    let id = info
        .lines()
        .find_map(|l| l.strip_prefix("mnt_id:"))?
        .trim()
        .to_string();
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    fstype_in_mountinfo(&mounts, &id)
}

/// The file system type of mount `id` in a mountinfo text (proc(5): the
/// mount id first, the type right after the " - " separator).
pub(crate) fn fstype_in_mountinfo(mounts: &str, id: &str) -> Option<String> {
    mounts.lines().find_map(|l| {
        let mut fields = l.split(' ');
        if fields.next()? != id {
            return None;
        }
        let (_, after) = l.split_once(" - ")?;
        after.split(' ').next().map(str::to_string)
    })
}

/// The file system's id (`f_fsid` of statfs(2), as fstatvfs(3) folds it
/// into one number); 0 when the file system has none.
#[allow(clippy::unnecessary_cast)] // c_ulong is 32 bits on some targets
pub(crate) fn fsid(fd: RawFd) -> Result<u64> {
    let mut st = MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: `st` points to writable memory the size of a `struct statvfs`.
    cvt(unsafe { libc::fstatvfs(fd, st.as_mut_ptr()) })?;
    // SAFETY: fstatvfs succeeded; the struct was zeroed beforehand.
    Ok(unsafe { st.assume_init() }.f_fsid as u64)
}

pub(crate) fn lseek_set(fd: RawFd, off: i64) -> Result<()> {
    // SAFETY: plain syscall on an integer descriptor.
    let r = unsafe { libc::lseek(fd, off as libc::off_t, libc::SEEK_SET) };
    if r < 0 {
        Err(errno())
    } else {
        Ok(())
    }
}

/// A buffer for getdents64, 8-byte aligned as `struct linux_dirent64` is.
pub(crate) struct DentBuf {
    words: Vec<u64>,
    len: usize,
    pos: usize,
}

/// One raw directory entry.
pub(crate) struct RawDent<'a> {
    pub ino: u64,
    pub off: i64,
    pub dtype: u8,
    pub name: &'a [u8],
}

impl DentBuf {
    pub(crate) fn new(bytes: usize) -> DentBuf {
        DentBuf {
            words: vec![0u64; bytes.div_ceil(8)],
            len: 0,
            pos: 0,
        }
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: the Vec<u64> owns `words.len() * 8` initialized bytes;
        // u8 has no alignment requirement and any bit pattern is valid.
        unsafe {
            std::slice::from_raw_parts(self.words.as_ptr() as *const u8, self.words.len() * 8)
        }
    }

    /// Refills the buffer from `fd`; returns false at the end of the
    /// directory.
    pub(crate) fn fill(&mut self, fd: RawFd) -> Result<bool> {
        let cap = self.words.len() * 8;
        let n = retry(|| {
            // SAFETY: the buffer is writable for `cap` bytes and suitably
            // aligned for linux_dirent64.
            cvt_long(unsafe {
                libc::syscall(libc::SYS_getdents64, fd, self.words.as_mut_ptr(), cap)
            })
        })?;
        self.len = (n as usize).min(cap);
        self.pos = 0;
        Ok(self.len > 0)
    }

    /// The next entry in the buffer, if any.
    pub(crate) fn next_entry(&mut self) -> Option<RawDent<'_>> {
        let (pos, len) = (self.pos, self.len);
        let b = &self.bytes()[..len];
        if pos + 19 > len {
            return None;
        }
        let rec = &b[pos..];
        let ino = u64::from_ne_bytes(rec[0..8].try_into().ok()?);
        let off = i64::from_ne_bytes(rec[8..16].try_into().ok()?);
        let reclen = u16::from_ne_bytes(rec[16..18].try_into().ok()?) as usize;
        let dtype = rec[18];
        if reclen < 19 || reclen > rec.len() {
            return None;
        }
        let raw = &rec[19..reclen];
        let nlen = raw.iter().position(|&c| c == 0).unwrap_or(raw.len());
        self.pos = pos + reclen;
        let name = &self.bytes()[pos + 19..pos + 19 + nlen];
        Some(RawDent {
            ino,
            off,
            dtype,
            name,
        })
    }
}

/// Per-thread credential syscalls (never the glibc wrappers, which
/// broadcast to every thread of the process).
pub(crate) fn setgroups_thread(groups: &[u32]) -> Result<()> {
    // SAFETY: `groups` is a valid array of `groups.len()` gid_t (u32).
    cvt_long(unsafe {
        libc::syscall(
            libc::SYS_setgroups,
            groups.len() as libc::size_t,
            groups.as_ptr(),
        )
    })
    .map(drop)
}

/// setfsuid; returns the fsuid in force afterwards.
pub(crate) fn setfsuid_thread(uid: u32) -> u32 {
    // SAFETY: plain syscall with integer arguments.
    unsafe { libc::syscall(libc::SYS_setfsuid, uid as libc::uid_t) };
    // A second call with an invalid id changes nothing and returns the
    // current fsuid.
    // SAFETY: as above.
    (unsafe { libc::syscall(libc::SYS_setfsuid, u32::MAX as libc::uid_t) }) as u32
}

/// setfsgid; returns the fsgid in force afterwards.
pub(crate) fn setfsgid_thread(gid: u32) -> u32 {
    // SAFETY: plain syscall with integer arguments.
    unsafe { libc::syscall(libc::SYS_setfsgid, gid as libc::gid_t) };
    // SAFETY: as above; an invalid id only queries.
    (unsafe { libc::syscall(libc::SYS_setfsgid, u32::MAX as libc::gid_t) }) as u32
}

pub(crate) fn geteuid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

pub(crate) fn getegid() -> u32 {
    // SAFETY: getegid cannot fail.
    unsafe { libc::getegid() }
}

/// The soft RLIMIT_NOFILE.
pub(crate) fn nofile_limit() -> u64 {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `rl` is a writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } == 0 {
        rl.rlim_cur
    } else {
        1024
    }
}
