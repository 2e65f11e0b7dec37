//! The file-system interface the protocol layers (NFSv4, NFSv3) call.
//!
//! Calls are synchronous and may block: callers run them on a blocking
//! thread pool, never on the async reactor. Every call that acts for a
//! client carries that client's [`Creds`]; a backend running as root
//! performs the call with those credentials so the kernel decides
//! permissions exactly as it would for a local process.
//!
//! Backends: [`local::LocalFs`] exports a local directory; [`mem::MemFs`]
//! keeps a bounded file system in memory for in-process tests.

use bytes::Bytes;

pub mod acl;
pub mod durable;
pub mod lease;
pub mod local;
pub mod mem;
pub mod wal;
pub mod watch;

/// A backend's handle for an object: opaque, stable across server restarts,
/// at most [`MAX_HANDLE`] bytes. Protocol layers wrap it in their own
/// authenticated filehandle format.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Handle(pub Bytes);

/// Largest backend handle.
pub const MAX_HANDLE: usize = 80;

/// The largest file size and the largest offset a byte of a file can have
/// (the kernel's signed `loff_t`); NFSv4 `maxfilesize`.
pub const MAX_FILE_SIZE: u64 = i64::MAX as u64;

/// Whether the byte range `[offset, offset + len)` ends within
/// [`MAX_FILE_SIZE`] (otherwise EFBIG, NFS4ERR_FBIG).
pub fn range_fits(offset: u64, len: u64) -> bool {
    offset
        .checked_add(len)
        .is_some_and(|end| end <= MAX_FILE_SIZE)
}

/// The checks [`Vfs::copy`] and [`Vfs::clone_range`] make on their ranges
/// (RFC 7862 §15.2.3): `count` 0 means through the end of a source of
/// `size` bytes; the source range must lie within the source (EINVAL), the
/// destination range within [`MAX_FILE_SIZE`] (EFBIG), and ranges of one
/// file (`same`) must not overlap (EINVAL). Returns the count and the end
/// of the source range.
pub fn copy_ranges(
    size: u64,
    src_off: u64,
    dst_off: u64,
    count: u64,
    same: bool,
) -> Result<(u64, u64)> {
    if src_off > size {
        return Err(Errno(libc::EINVAL));
    }
    let count = if count == 0 { size - src_off } else { count };
    let src_end = src_off.checked_add(count).ok_or(Errno(libc::EINVAL))?;
    if src_end > size {
        return Err(Errno(libc::EINVAL));
    }
    if !range_fits(dst_off, count) {
        return Err(Errno(libc::EFBIG));
    }
    if same && count > 0 && src_off < dst_off + count && dst_off < src_end {
        return Err(Errno(libc::EINVAL));
    }
    Ok((count, src_end))
}

/// The identity a call is made with (AUTH_SYS uid, gid and groups).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Creds {
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
}

impl Creds {
    pub fn root() -> Creds {
        Creds {
            uid: 0,
            gid: 0,
            groups: Vec::new(),
        }
    }
}

/// An errno from the backend; protocol layers map it to their status codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{}", std::io::Error::from_raw_os_error(self.0))]
pub struct Errno(pub i32);

impl From<std::io::Error> for Errno {
    fn from(e: std::io::Error) -> Self {
        Errno(e.raw_os_error().unwrap_or(libc::EIO))
    }
}

pub type Result<T> = std::result::Result<T, Errno>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileType {
    Regular,
    Directory,
    Symlink,
    Block,
    Char,
    Socket,
    Fifo,
}

/// A byte-range lock held in the kernel by someone else (a local
/// process, or another description), as `fcntl(2)` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelLock {
    pub start: u64,
    /// Exclusive; `u64::MAX` to the end of the file.
    pub end: u64,
    pub write: bool,
    /// The holding process (0 when the kernel does not name one).
    pub pid: u32,
}

/// What [`Vfs::share_lock`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareLock {
    /// Held in the kernel too (or this range, this file, or this backend
    /// is not shared with local processes: the server's table alone
    /// holds it).
    Taken,
    /// Someone else holds a conflicting lock.
    Held(KernelLock),
    /// No descriptor for it now (a budget, the descriptor limit, a lease
    /// being broken): try again later.
    Busy,
    /// The owner's description was opened for reading and the lock is
    /// exclusive: [`Vfs::share_reopen`] first.
    Reopen,
}

/// A lock owner as the backend knows it: a group (its client) and a name.
#[derive(Debug, Clone, Copy)]
pub struct LockOwner<'a> {
    pub group: u64,
    pub name: &'a [u8],
}

/// Seconds and nanoseconds since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timespec {
    pub sec: i64,
    pub nsec: u32,
}

impl Timespec {
    /// The wall clock now.
    pub fn now() -> Timespec {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Timespec {
            sec: d.as_secs() as i64,
            nsec: d.subsec_nanos(),
        }
    }

    /// Nanoseconds since the epoch (0 before it).
    pub fn nanos(&self) -> u64 {
        (self.sec.max(0) as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::from(self.nsec))
    }
}

/// An object's attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attr {
    pub ftype: FileType,
    /// Permission bits including setuid, setgid and sticky (07777).
    pub mode: u32,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    /// Bytes of storage allocated.
    pub used: u64,
    /// Device numbers of block and character special files.
    pub rdev: (u32, u32),
    /// Inode number, unique within the export.
    pub fileid: u64,
    pub atime: Timespec,
    pub mtime: Timespec,
    pub ctime: Timespec,
    /// Changes on every modification of the object (data or metadata), even
    /// several within one timestamp tick.
    pub change: u64,
}

/// A time to set: the server's clock or a given value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetTime {
    ServerNow,
    Client(Timespec),
}

/// Metadata changes made durable before they were answered and the
/// syncs that made them so ([`Vfs::sync_counts`]): where changes share
/// syncs, fewer syncs than changes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncCounts {
    /// Changes (objects to make durable).
    pub changes: u64,
    /// Syncs run for them.
    pub syncs: u64,
}

/// Attributes to change; `None` leaves one alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SetAttr {
    pub mode: Option<u32>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub size: Option<u64>,
    pub atime: Option<SetTime>,
    pub mtime: Option<SetTime>,
    /// POSIX ACLs to set after the mode (as the Linux server does):
    /// backends without ACLs ([`Vfs::acls`]) refuse it.
    pub acl: Option<acl::AclSet>,
}

impl SetAttr {
    pub fn is_empty(&self) -> bool {
        *self == SetAttr::default()
    }
}

/// How durable a write must be before it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stability {
    Unstable,
    DataSync,
    FileSync,
}

/// How [`Vfs::setxattr`] treats an existing attribute (RFC 8276 §8.4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XattrHow {
    /// Create or replace.
    Either,
    /// Fail with EEXIST if it exists.
    Create,
    /// Fail with ENODATA if it does not.
    Replace,
}

/// What to create with [`Vfs::create`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateKind {
    Directory,
    Symlink(Bytes),
    Block(u32, u32),
    Char(u32, u32),
    Socket,
    Fifo,
}

/// How [`Vfs::create_file`] treats an existing file (RFC 8881 §18.16.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateMode {
    /// Open it if it exists (attributes other than size are not applied).
    Unchecked,
    /// Fail with EEXIST if it exists.
    Guarded,
    /// Exclusive create with a verifier stored with the file: a retry with
    /// the same verifier finds the file it created; another verifier fails
    /// with EEXIST.
    Exclusive([u8; 8]),
}

/// What [`Vfs::seek`] looks for (RFC 7862 §15.11, lseek(2) SEEK_DATA/SEEK_HOLE).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeekWhat {
    Data,
    Hole,
}

/// File-system wide figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FsStat {
    pub total_bytes: u64,
    pub free_bytes: u64,
    pub avail_bytes: u64,
    pub total_files: u64,
    pub free_files: u64,
    pub avail_files: u64,
    pub max_name: u32,
}

/// One directory entry. `cookie` resumes the listing after this entry and
/// stays valid across server restarts; it is never 0, 1 or 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    pub name: Bytes,
    pub cookie: u64,
    pub fileid: u64,
    /// The entry's type where the listing itself says (a directory entry's
    /// `d_type`), so that no lookup is needed for it.
    pub ftype: Option<FileType>,
    /// Present when the caller asked for attributes.
    pub obj: Option<(Handle, Attr)>,
}

/// What [`Vfs::list_dir_nowait`] says of the directory besides its
/// entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirListed {
    /// The listing reached its end.
    pub eof: bool,
    /// The directory's attributes, as they were when it was listed.
    pub attr: Attr,
    /// The file id of its parent (its own for the export's root), for
    /// an NFSv3 listing's "..".
    pub parent_fileid: u64,
}

/// The backend interface. Names are byte strings of one path component
/// (never empty, never containing '/' or NUL, never "." or ".."; callers
/// check). Calls that do not take [`Creds`] act with the server's own
/// authority.
pub trait Vfs: Send + Sync + 'static {
    /// The export's root.
    fn root(&self) -> Handle;
    /// What the export's root is: the same across restarts for the same
    /// directory, different for any other. Protocol layers bind their
    /// filehandles to it, so a handle made while the export was another
    /// directory is stale (RFC 8881 §4.2.2).
    fn root_identity(&self) -> Bytes;
    /// What is exported, for people (`ferrite exports`): a directory's
    /// path, with "(async)" if changes are answered before they are
    /// durable.
    fn describe(&self) -> String {
        "(not a local directory)".to_string()
    }
    /// Tells the backend that the non-directory `h` was reached as an
    /// entry of the directory `parent`: a hint protocol layers carry in
    /// their filehandles. A backend that can find an object detached from
    /// the tree (a kernel handle opened after its dentry was evicted) uses
    /// it to check that the object lies inside the export before serving
    /// it; the hint itself is never trusted. Cheap and non-blocking.
    fn note_parent(&self, h: &Handle, parent: &Handle) {
        let _ = (h, parent);
    }
    /// Whether [`Vfs::note_parent`] hints are of use to this backend:
    /// protocol layers put them in filehandles only then, so that
    /// elsewhere a file has one filehandle whatever directory it was
    /// reached in.
    fn wants_parent_hints(&self) -> bool {
        false
    }
    /// Checks a handle still names an object (ESTALE otherwise).
    fn getattr(&self, h: &Handle) -> Result<Attr>;
    /// [`Vfs::getattr`] if it can be answered without blocking (an object
    /// the backend holds open), for an async reactor thread; `None` where
    /// only [`Vfs::getattr`] can answer.
    fn getattr_nowait(&self, h: &Handle) -> Option<Result<Attr>> {
        let _ = h;
        None
    }
    fn lookup(&self, c: &Creds, dir: &Handle, name: &[u8]) -> Result<(Handle, Attr)>;
    /// [`Vfs::lookup`] if it can be answered without blocking (names the
    /// backend's caches hold, in a directory), for an async reactor
    /// thread; `None` where only [`Vfs::lookup`] can answer, and where
    /// `dir` is not a directory.
    fn lookup_nowait(
        &self,
        c: &Creds,
        dir: &Handle,
        name: &[u8],
    ) -> Option<Result<(Handle, Attr)>> {
        let _ = (c, dir, name);
        None
    }
    /// The parent directory; at the export root, ENOENT.
    fn lookup_parent(&self, c: &Creds, dir: &Handle) -> Result<(Handle, Attr)>;
    /// [`Vfs::lookup_parent`] if it can be answered without blocking, for
    /// an async reactor thread; `None` where only [`Vfs::lookup_parent`]
    /// can answer.
    fn lookup_parent_nowait(&self, c: &Creds, dir: &Handle) -> Option<Result<(Handle, Attr)>> {
        let _ = (c, dir);
        None
    }
    /// Checks `mask` (a combination of libc::R_OK, W_OK, X_OK) as the kernel
    /// would for these credentials.
    fn access(&self, c: &Creds, h: &Handle, mask: i32) -> Result<bool>;
    /// [`Vfs::access`] if it can be answered without blocking or a
    /// permission system call; `None` where only [`Vfs::access`] can.
    fn access_nowait(&self, c: &Creds, h: &Handle, mask: i32) -> Option<Result<bool>> {
        let _ = (c, h, mask);
        None
    }
    fn setattr(&self, c: &Creds, h: &Handle, set: &SetAttr) -> Result<Attr>;
    /// Reads up to `count` bytes; returns the data and whether it reached the
    /// end of the file.
    fn read(&self, c: &Creds, h: &Handle, offset: u64, count: u32) -> Result<(Bytes, bool)>;
    /// [`Vfs::read`] if it can be answered without blocking (never waiting
    /// for a disk or a lock held long), so that it may run on an async
    /// reactor thread; `None` where only [`Vfs::read`] can answer, which
    /// callers then run on the blocking pool. A backend may answer with
    /// fewer bytes than [`Vfs::read`] would (a short read, `eof` false).
    fn read_nowait(
        &self,
        c: &Creds,
        h: &Handle,
        offset: u64,
        count: u32,
    ) -> Option<Result<(Bytes, bool)>> {
        let _ = (c, h, offset, count);
        None
    }
    /// [`Vfs::read_nowait`] with the data left where it is: a range of the
    /// file, open, every page of it in the page cache now, for the
    /// connection to send from there (`sendfile`) instead of copying it
    /// into memory and again into the socket; with whether it reaches the
    /// end of the file. `None` where [`Vfs::read_nowait`] or [`Vfs::read`]
    /// must answer, and where the range would be shorter than `min_len`
    /// (the file ends sooner), which is cheaper to copy.
    fn read_slice_nowait(
        &self,
        c: &Creds,
        h: &Handle,
        offset: u64,
        count: u32,
        min_len: usize,
    ) -> Option<Result<(xdr::FileSlice, bool)>> {
        let _ = (c, h, offset, count, min_len);
        None
    }
    /// Writes all of `data`; returns how durable it is.
    fn write(
        &self,
        c: &Creds,
        h: &Handle,
        offset: u64,
        data: &[u8],
        stable: Stability,
    ) -> Result<Stability>;
    /// An unstable [`Vfs::write`] with the file's attributes just before
    /// and just after it (NFSv3's weak cache consistency data, RFC 1813
    /// §2.6): a `getattr` either side, unless the backend has them anyway.
    fn write_wcc(&self, c: &Creds, h: &Handle, offset: u64, data: &[u8]) -> Result<(Attr, Attr)> {
        let before = self.getattr(h)?;
        self.write(c, h, offset, data, Stability::Unstable)?;
        Ok((before, self.getattr(h)?))
    }
    /// Makes earlier unstable writes durable.
    fn commit(&self, h: &Handle) -> Result<()>;
    /// Creates or opens a regular file; returns it and whether it was created.
    fn create_file(
        &self,
        c: &Creds,
        dir: &Handle,
        name: &[u8],
        how: CreateMode,
        set: &SetAttr,
    ) -> Result<(Handle, Attr, bool)>;
    /// Creates a directory, symlink, device, socket or fifo.
    fn create(
        &self,
        c: &Creds,
        dir: &Handle,
        name: &[u8],
        kind: &CreateKind,
        set: &SetAttr,
    ) -> Result<(Handle, Attr)>;
    /// Removes a non-directory or an empty directory.
    fn remove(&self, c: &Creds, dir: &Handle, name: &[u8]) -> Result<()>;
    fn rename(
        &self,
        c: &Creds,
        from: &Handle,
        from_name: &[u8],
        to: &Handle,
        to_name: &[u8],
    ) -> Result<()>;
    /// Whether [`Vfs::remove_keeping`] and [`Vfs::rename_keeping`] can
    /// keep a removed file reachable through its handle (what NFSv4's
    /// OPEN4_RESULT_PRESERVE_UNLINKED promises, RFC 8881 §18.16.3).
    fn keeps_unlinked(&self) -> bool {
        false
    }
    /// [`Vfs::remove`]; when it removes the last name of a regular file
    /// for which `keep` says yes (one the server holds state on), the file
    /// stays reachable through its handle, with nlink 0, until
    /// [`Vfs::release_unlinked`], as an open file does on a local file
    /// system. The default keeps nothing.
    fn remove_keeping(
        &self,
        c: &Creds,
        dir: &Handle,
        name: &[u8],
        _keep: &dyn Fn(&Handle) -> bool,
    ) -> Result<()> {
        self.remove(c, dir, name)
    }
    /// [`Vfs::rename`], keeping a replaced target as [`Vfs::remove_keeping`]
    /// keeps a removed file.
    fn rename_keeping(
        &self,
        c: &Creds,
        from: (&Handle, &[u8]),
        to: (&Handle, &[u8]),
        _keep: &dyn Fn(&Handle) -> bool,
    ) -> Result<()> {
        self.rename(c, from.0, from.1, to.0, to.1)
    }
    /// The files kept with no name left ([`Vfs::remove_keeping`], or
    /// removed by a local process while watched for a delegation): the
    /// server lets each go with [`Vfs::release_unlinked`] once no client
    /// holds state on it. Cheap when none is.
    fn kept_unlinked(&self) -> Vec<Handle> {
        Vec::new()
    }
    /// Lets a file kept by [`Vfs::remove_keeping`] go (its space is freed
    /// once nothing else has it open).
    fn release_unlinked(&self, _h: &Handle) {}
    fn link(&self, c: &Creds, file: &Handle, dir: &Handle, name: &[u8]) -> Result<()>;
    fn readlink(&self, c: &Creds, h: &Handle) -> Result<Bytes>;
    /// Lists `dir` after `cookie` (0 = from the start), calling `each` per
    /// entry ("." and ".." excluded) until it returns false or the listing
    /// ends; returns true if the end of the directory was reached.
    fn readdir(
        &self,
        c: &Creds,
        dir: &Handle,
        cookie: u64,
        with_attrs: bool,
        each: &mut dyn FnMut(DirEntry) -> bool,
    ) -> Result<bool>;
    /// [`Vfs::readdir`] without attributes, if it can be answered without
    /// blocking (from a listing the backend keeps and knows to be
    /// current), so that it may run on an async reactor thread; `None`
    /// where only [`Vfs::readdir`] can answer. Entries come as
    /// [`Vfs::readdir`] would give them, `ftype` included.
    fn readdir_nowait(
        &self,
        c: &Creds,
        dir: &Handle,
        cookie: u64,
        each: &mut dyn FnMut(DirEntry) -> bool,
    ) -> Option<Result<bool>> {
        let _ = (c, dir, cookie, each);
        None
    }
    /// [`Vfs::readdir_nowait`] with the directory's attributes and its
    /// parent's file id ([`DirListed`]), which an NFSv3 READDIR needs for
    /// "." and ".."; `None` where any of them needs [`Vfs::readdir`],
    /// [`Vfs::getattr`] or [`Vfs::lookup_parent`]. An `Ok` means `dir`
    /// is a directory.
    fn list_dir_nowait(
        &self,
        c: &Creds,
        dir: &Handle,
        cookie: u64,
        each: &mut dyn FnMut(DirEntry) -> bool,
    ) -> Option<Result<DirListed>> {
        let attr = match self.getattr_nowait(dir)? {
            Ok(a) if a.ftype == FileType::Directory => a,
            Ok(_) => return Some(Err(Errno(libc::ENOTDIR))),
            Err(e) => return Some(Err(e)),
        };
        let parent_fileid = if *dir == self.root() {
            attr.fileid
        } else {
            match self.lookup_parent_nowait(c, dir)? {
                Ok((_, p)) => p.fileid,
                Err(e) => return Some(Err(e)),
            }
        };
        let eof = match self.readdir_nowait(c, dir, cookie, each)? {
            Ok(eof) => eof,
            Err(e) => return Some(Err(e)),
        };
        Some(Ok(DirListed {
            eof,
            attr,
            parent_fileid,
        }))
    }
    fn fsstat(&self, h: &Handle) -> Result<FsStat>;
    /// Asks to be told (`on_break`, from another thread) before anything
    /// other than this server opens the regular file `h` for writing or
    /// truncates it, and to have that wait until
    /// [`Vfs::unguard_local_writes`] (for NFS read delegations, RFC 8881
    /// §10.4.6). `Ok(false)`: it cannot be guarded now (it is open for
    /// writing, or the backend cannot tell). Guards are counted: one
    /// `unguard` for each `true`. The default guards nothing.
    fn guard_local_writes(&self, _h: &Handle, _on_break: lease::OnBreak) -> Result<bool> {
        Ok(false)
    }
    /// Ends one guard of [`Vfs::guard_local_writes`].
    fn unguard_local_writes(&self, _h: &Handle) {}
    /// Asks to be told (`on_change`, from another thread) when anything
    /// other than this server changes `h`: a file's data, size,
    /// attributes, extended attributes or links, a directory's entries or
    /// attributes, its name, its removal (for NFS delegations, RFC 8881
    /// §10.4.6, §10.9). These are told after the fact, the kernel holding
    /// none of them back; with `hold_opens` (a regular file under a write
    /// delegation), an open of it by another process is also told, and
    /// held until the watch ends or the kernel's lease-break time passes,
    /// where the backend can hold it. `Ok(false)`: it cannot be watched.
    /// Watches are counted: one [`Vfs::unwatch_local_changes`] for each
    /// `true`. The default watches nothing.
    fn watch_local_changes(
        &self,
        _h: &Handle,
        _hold_opens: bool,
        _on_change: watch::OnChange,
    ) -> Result<bool> {
        Ok(false)
    }
    /// Ends one watch of [`Vfs::watch_local_changes`].
    fn unwatch_local_changes(&self, _h: &Handle) {}
    /// Whether byte-range locks on this backend's files are shared with
    /// local processes ([`Vfs::share_lock`]).
    fn shares_locks(&self) -> bool {
        false
    }
    /// Takes `[start, end)` (exclusive when `write`) for `owner` on `h`
    /// in the kernel's lock list, where local processes' `fcntl(2)` locks
    /// are, unless one of theirs conflicts (`writable`: the owner may
    /// write, so its description may be open for writing). Returns at
    /// once. A refused lock leaves nothing taken.
    fn share_lock(
        &self,
        _h: &Handle,
        _owner: LockOwner,
        _range: (u64, u64),
        _write: bool,
        _writable: bool,
    ) -> ShareLock {
        ShareLock::Taken
    }
    /// Moves `owner`'s locks on `h` (`held`: start, end, exclusive; all
    /// shared) to a description open for writing. False if it cannot.
    fn share_reopen(&self, _h: &Handle, _owner: LockOwner, _held: &[(u64, u64, bool)]) -> bool {
        true
    }
    /// Releases `[start, end)` of `owner`'s locks on `h`.
    fn share_unlock(&self, _h: &Handle, _owner: LockOwner, _range: (u64, u64)) {}
    /// Releases everything `owner` holds on `h`.
    fn share_release(&self, _h: &Handle, _owner: LockOwner) {}
    /// Releases every lock taken through [`Vfs::share_lock`] (the server
    /// stops: its locks go as with its process).
    fn share_release_all(&self) {}
    /// The lock someone else holds that conflicts with `[start, end)`
    /// (exclusive when `write`) for `owner`, if any.
    fn share_test(
        &self,
        _h: &Handle,
        _owner: LockOwner,
        _range: (u64, u64),
        _write: bool,
    ) -> Option<KernelLock> {
        None
    }
    /// The local directory the backend serves, if it is one (the load
    /// model finds the disk under it).
    fn local_dir(&self) -> Option<std::path::PathBuf> {
        None
    }
    /// Answers metadata changes before they are durable (`on`), or only
    /// once they are, from now on; `false` if the backend has no such
    /// choice. The LocalFs backend's `async` export option, changed by a
    /// reload.
    fn set_metadata_async(&self, _on: bool) -> bool {
        false
    }
    /// Whether the backend keeps extended attributes (RFC 8276; the
    /// `xattr_support` attribute). The four calls below act on the user
    /// namespace only: `name` is the NFS key, stored as `user.<name>`.
    fn xattrs(&self) -> bool {
        false
    }
    /// The value of extended attribute `name` (ENODATA: none).
    fn getxattr(&self, _c: &Creds, _h: &Handle, _name: &[u8]) -> Result<Bytes> {
        Err(Errno(libc::EOPNOTSUPP))
    }
    /// Sets extended attribute `name`: created or replaced (`how`).
    fn setxattr(
        &self,
        _c: &Creds,
        _h: &Handle,
        _name: &[u8],
        _value: &[u8],
        _how: XattrHow,
    ) -> Result<()> {
        Err(Errno(libc::EOPNOTSUPP))
    }
    /// The names of the object's extended attributes (keys, without the
    /// `user.` prefix), sorted.
    fn listxattrs(&self, _c: &Creds, _h: &Handle) -> Result<Vec<Bytes>> {
        Err(Errno(libc::EOPNOTSUPP))
    }
    /// Removes extended attribute `name` (ENODATA: none).
    fn removexattr(&self, _c: &Creds, _h: &Handle, _name: &[u8]) -> Result<()> {
        Err(Errno(libc::EOPNOTSUPP))
    }
    /// Metadata changes made durable before they were answered, and the
    /// syncs that did it (None: the backend syncs nothing of its own).
    fn sync_counts(&self) -> Option<SyncCounts> {
        None
    }
    /// Whether the backend keeps POSIX ACLs (the NFSv4 `acl` attribute is
    /// mapped to and from them).
    fn acls(&self) -> bool {
        false
    }
    /// The object's access ACL (`default`: a directory's default ACL);
    /// None when it has none (its mode says everything).
    fn get_acl(&self, _c: &Creds, _h: &Handle, _default: bool) -> Result<Option<acl::PosixAcl>> {
        Err(Errno(libc::EOPNOTSUPP))
    }
    /// [`Vfs::get_acl`] without blocking, for the object whose attributes
    /// `a` were just read: its ACL when the backend knows it is still the
    /// one last read (`Some(None)`: none), `None` when it must be read.
    fn get_acl_nowait(
        &self,
        _h: &Handle,
        _default: bool,
        _a: &Attr,
    ) -> Option<Option<acl::PosixAcl>> {
        None
    }
    /// Sets the object's access ACL (which sets the mode's bits too) or a
    /// directory's default ACL; None removes it.
    fn set_acl(
        &self,
        _c: &Creds,
        _h: &Handle,
        _default: bool,
        _acl: Option<&acl::PosixAcl>,
    ) -> Result<()> {
        Err(Errno(libc::EOPNOTSUPP))
    }
    /// Reserves space for `[offset, offset + len)` without changing the
    /// data, extending the size if needed (fallocate(2) mode 0; RFC 7862
    /// §15.1 ALLOCATE).
    fn allocate(&self, _c: &Creds, _h: &Handle, _offset: u64, _len: u64) -> Result<()> {
        Err(Errno(libc::EOPNOTSUPP))
    }
    /// Punches a hole in `[offset, offset + len)`, keeping the size
    /// (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE; RFC 7862 §15.4 DEALLOCATE).
    fn deallocate(&self, _c: &Creds, _h: &Handle, _offset: u64, _len: u64) -> Result<()> {
        Err(Errno(libc::EOPNOTSUPP))
    }
    /// The first offset at or after `offset` where data (or a hole) starts;
    /// `None` when there is none (lseek(2) ENXIO: at or past the end of the
    /// file, or no data after `offset`). RFC 7862 §15.11 SEEK.
    fn seek(&self, _c: &Creds, _h: &Handle, _offset: u64, _what: SeekWhat) -> Result<Option<u64>> {
        Err(Errno(libc::EOPNOTSUPP))
    }
    /// Copies `count` bytes (0: through the end of the source) from `src`
    /// at `src_off` to `dst` at `dst_off` (RFC 7862 §15.2 COPY); returns
    /// the bytes copied, which may be fewer than asked. EINVAL when the
    /// source range runs past the end of the source or the ranges of one
    /// file overlap.
    #[allow(clippy::too_many_arguments)]
    fn copy(
        &self,
        _c: &Creds,
        _src: &Handle,
        _src_off: u64,
        _dst: &Handle,
        _dst_off: u64,
        _count: u64,
    ) -> Result<u64> {
        Err(Errno(libc::EOPNOTSUPP))
    }
    /// Makes `dst`'s range share `src`'s blocks (RFC 7862 §15.13 CLONE,
    /// FICLONERANGE): EOPNOTSUPP or EXDEV when the file system cannot,
    /// EINVAL for unaligned ranges; ranges are checked as by [`Vfs::copy`].
    #[allow(clippy::too_many_arguments)]
    fn clone_range(
        &self,
        _c: &Creds,
        _src: &Handle,
        _src_off: u64,
        _dst: &Handle,
        _dst_off: u64,
        _count: u64,
    ) -> Result<()> {
        Err(Errno(libc::EOPNOTSUPP))
    }
}

#[cfg(test)]
mod range_tests {
    use super::*;

    #[test]
    fn ranges_end_at_the_largest_file_size() {
        assert!(range_fits(0, 0));
        assert!(range_fits(MAX_FILE_SIZE - 1, 1));
        assert!(range_fits(MAX_FILE_SIZE, 0));
        assert!(!range_fits(MAX_FILE_SIZE, 1));
        assert!(!range_fits(1, MAX_FILE_SIZE));
        assert!(!range_fits(u64::MAX, 1));
    }
}
