//! [`LocalFs`]: a [`Vfs`] backend exporting a directory of a local file
//! system.
//!
//! # Handles
//! A backend handle is the kernel's file handle (`name_to_handle_at`)
//! serialized as `[handle_type: u32 BE][f_handle]`, then the export's
//! 8-byte root tag. The kernel handle embeds the inode number and
//! generation, so it survives server restarts and a deleted object's handle
//! fails with ESTALE. The root tag hashes the export root's identity
//! ([`Vfs::root_identity`]): a handle made under another root (a wider
//! export since narrowed, a sibling export on the same file system) fails
//! with ESTALE before anything is opened. An object has one handle per
//! export, whatever name it was reached by (RFC 8881 §4.2.1), and keeps it
//! across renames.
//!
//! Handles are resolved to `O_PATH` descriptors, kept in a bounded cache
//! (16,384 entries at most, evicted by the CLOCK rule, its hit rate logged).
//! Two resolution modes are chosen at construction by probing
//! `open_by_handle_at` on the root:
//! * **kernel**: `open_by_handle_at(root_fd, fh, O_PATH)` (needs
//!   CAP_DAC_READ_SEARCH), then checked to lie inside the export (see
//!   `LocalFs::check_inside`).
//! * **path map** (unprivileged): handle → path relative to the root,
//!   filled whenever a handle is produced; on a miss the tree is walked
//!   breadth-first. Opening a path walks it component by component with
//!   `O_NOFOLLOW` and checks the handle of the result (rescanning on a
//!   mismatch), so renames and removals are caught even if the map is stale.
//!
//! # Credentials
//! When the server runs as root, each call taking [`Creds`] resolves its
//! handles as root, then switches the calling thread's fsuid, fsgid and
//! groups to the caller's for the operation itself (see `ident`), so the
//! kernel decides permissions. Reads and writes use cached descriptors the
//! server opened itself, after checking the caller's permission through
//! `faccessat2`, with NFS's owner override (the owner may read and write
//! his file whatever its mode). Unprivileged, credentials are ignored.
//!
//! # Directory cookies
//! A cookie is the `d_off` of the entry (the position after it). Offsets
//! 0, 1 and 2 (which some file systems produce) are sent as
//! `COOKIE_TAG | d_off` (bit 63 set) and translated back on resume; real
//! offsets are non-negative `off_t`s so they never have bit 63 set.

mod cache;
#[cfg(test)]
mod confinement_tests;
mod copy;
mod fsgroup;
mod ident;
mod locks;
mod space;
mod sync;
mod sys;
#[cfg(test)]
mod tests;
mod xattr;

use std::collections::{HashMap, VecDeque};
use std::ffi::{CStr, CString, OsStr};
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};

use self::cache::{lock, Bounded, ChangeTracker};
use self::ident::AsCaller;
use self::sync::OpenFile;
use self::sys::EMPTY;
use crate::{
    Attr, CreateKind, CreateMode, Creds, DirEntry, DirListed, Errno, FileType, FsStat, Handle,
    Result, SeekWhat, SetAttr, SetTime, Stability, Timespec, Vfs,
};

/// Bytes of the root tag ending every backend handle.
const ROOT_TAG_LEN: usize = 8;
/// Marks a remapped directory offset of 0, 1 or 2.
const COOKIE_TAG: u64 = 1 << 63;
/// Largest read served at once (a short read is legal).
const READ_CAP: u64 = 16 << 20;
const MAX_NAME: usize = 255;
const MAX_PATH_MAP: usize = 1 << 20;
/// Parent hints kept ([`Vfs::note_parent`]): one per non-directory
/// recently named by a client, about 100 bytes each.
const MAX_PARENT_HINTS: usize = 1 << 16;
const CHANGE_CAP: usize = 1 << 16;
/// Directory listings kept ([`LocalFs::listings`]), and the most entries
/// one may have: at worst about a million entries, some 64 MiB.
const LISTINGS: usize = 16384;
const LISTING_MAX: usize = 64;
/// POSIX ACLs remembered for GETATTRs answered without a thread hand-off
/// ([`Vfs::get_acl_nowait`]).
const KNOWN_ACLS: usize = 16384;
/// A directory is listed into the cache only if it has not changed for
/// this long: its ctime then moves on any later change, even within one
/// tick of the file system's coarse clock.
const SETTLED_NS: i128 = 50_000_000;

/// READs answered with a range of a file ([`Vfs::read_slice_nowait`]),
/// in this process.
static READ_SLICES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many READs this process's local exports answered with a range of
/// a file, sent from the page cache.
pub fn read_slices() -> u64 {
    READ_SLICES.load(std::sync::atomic::Ordering::Relaxed)
}

/// Whether this kernel says which pages of a file are in memory
/// (`cachestat(2)`, Linux 6.5), without which no READ is answered with a
/// range of a file.
pub fn page_cache_visible() -> bool {
    std::fs::File::open("/proc/self/exe")
        .map(|f| sys::cached_in_full(f.as_raw_fd(), 0, 1).is_some())
        .unwrap_or(false)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Kernel,
    PathMap,
    /// Handles are inode numbers, resolved through the path map: for file
    /// systems whose kernel handles do not survive a remount (FUSE, such
    /// as GlusterFS's and CephFS's clients, and network file systems),
    /// where inode numbers do (GlusterFS derives them from each file's
    /// GFID). See [`Identity`].
    Stable,
}

/// Where an export's identity comes from (what its filehandles are bound
/// to, [`Vfs::root_identity`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    /// The file system's id and the root's kernel handle.
    FileSystem,
    /// The configuration (`fsid`, as exports(5)'s).
    Configured(String),
    /// A marker kept on the export's root directory (the extended
    /// attribute [`MARKER_XATTR`]), made the first time.
    Marker(String),
}

/// The extended attribute on an export's root that keeps its identity on
/// a file system without a stable one (`trusted.` when the server runs as
/// root, else `user.`).
pub const MARKER_XATTR: &str = "ferrite.export-id";

/// How to open a local export.
#[derive(Debug, Clone, Default)]
pub struct LocalOptions {
    /// The export's identity as configured (exports(5)'s `fsid`): its
    /// filehandles survive a remount, a move to another mount point or
    /// another server mounting the same file system.
    pub fsid: Option<String>,
}

/// File systems whose kernel handles name objects only for as long as
/// they stay mounted (FUSE hands out node ids per mount; network file
/// systems' handles are the client's): their exports take a marker or
/// configured identity and inode-number handles ([`Mode::Stable`]).
fn handles_unstable(fstype: &str) -> bool {
    fstype.starts_with("fuse") || matches!(fstype, "nfs" | "nfs4" | "cifs" | "smb3" | "9p" | "afs")
}

/// A directory's entries as read, with what identifies that state of it.
struct Listing {
    /// (inode, ctime, mtime) of the directory when it was read.
    key: (u64, i128, i128),
    /// Name, `d_off`, `d_ino`, `d_type`, in `getdents` order.
    entries: Vec<(Bytes, i64, u64, u8)>,
    /// The `d_ino` of "..", 0 if the listing had none. A directory moved
    /// to another parent has a new ctime, so a listing whose key still
    /// matches names the parent it has now.
    dotdot: u64,
    /// Where the directory was, relative to the export root, when it was
    /// read (`None` for the root itself or where the kernel could not
    /// say): lets a READDIR find it again without a cached descriptor.
    rel: Option<CString>,
}

/// A directory's (inode, ctime, mtime), in nanoseconds.
fn listing_key(st: &libc::stat) -> (u64, i128, i128) {
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    (
        st.st_ino,
        ns(st.st_ctime, st.st_ctime_nsec),
        ns(st.st_mtime, st.st_mtime_nsec),
    )
}

/// A resolved object: an `O_PATH` descriptor and fresh attributes.
struct Obj {
    fd: Arc<OwnedFd>,
    st: libc::stat,
}

impl Obj {
    fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn fmt(&self) -> u32 {
        self.st.st_mode & libc::S_IFMT
    }

    fn is_dir(&self) -> bool {
        self.fmt() == libc::S_IFDIR
    }

    /// Regular files only: EISDIR for directories, EINVAL otherwise.
    fn want_regular(&self) -> Result<()> {
        match self.fmt() {
            libc::S_IFREG => Ok(()),
            libc::S_IFDIR => Err(Errno(libc::EISDIR)),
            _ => Err(Errno(libc::EINVAL)),
        }
    }
}

/// A backend exporting a local directory.
pub struct LocalFs {
    root_fd: Arc<OwnedFd>,
    root_handle: Handle,
    /// What handles are bound to: the file system's id and the root's
    /// kernel handle, or the configured or marked identity.
    root_ident: Bytes,
    identity: Identity,
    /// Ends every handle of this export: a hash of `root_ident`.
    root_tag: [u8; ROOT_TAG_LEN],
    root_dev: u64,
    root_ino: u64,
    mode: Mode,
    /// Switch to the callers' credentials (the server runs as root).
    switch_creds: bool,
    /// The server's (euid, egid), restored after each call.
    base_ids: (u32, u32),
    /// handle → O_PATH descriptor.
    fds: Mutex<Bounded<Handle, Arc<OwnedFd>>>,
    /// handle → descriptor for I/O, and whether it is writable.
    files: Mutex<Bounded<Handle, Arc<OpenFile>>>,
    /// Path-map mode: handle → path relative to the root.
    paths: Mutex<Bounded<Handle, PathBuf>>,
    /// The export root is the root of its file system: every object on
    /// the device lies inside.
    whole_fs: bool,
    /// Directory → its entries, for READDIRs without attributes answered
    /// on the async thread ([`Vfs::readdir_nowait`]). An entry is used only
    /// while the directory's inode, ctime and mtime are those it was read
    /// with, and directories are listed into it only once settled
    /// ([`SETTLED_NS`]), so any change since shows.
    listings: Mutex<Bounded<Handle, Arc<Listing>>>,
    /// (object, default ACL?) → its POSIX ACL as last read, with the inode
    /// number and ctime it was read at: used only while both are unchanged,
    /// and kept only when the ctime had settled ([`SETTLED_NS`]) before the
    /// read, so any change since shows as a new ctime (every ACL change sets
    /// it).
    known_acls: Mutex<Bounded<(Handle, bool), xattr::KnownAcl>>,
    /// Kernel mode: non-directory → the directory its filehandle says it
    /// was reached in ([`Vfs::note_parent`]), to place it when the kernel
    /// cannot.
    parents: Mutex<Bounded<Handle, Handle>>,
    change: ChangeTracker,
    /// Metadata changes (names, attributes, sizes) reach stable storage
    /// before they are answered; off for an `async` export.
    durable: std::sync::atomic::AtomicBool,
    /// The exported directory as given.
    root_path: PathBuf,
    /// Objects synced for that ([`LocalFs::metadata_syncs`]).
    metadata_syncs: std::sync::atomic::AtomicU64,
    /// Where a sync of the whole file system makes every change before it
    /// durable ([`syncfs_covers_changes`]): the group commit of those
    /// changes, and a descriptor of the root to sync and flush through.
    fs_group: Option<(fsgroup::FsGroup, OwnedFd)>,
    /// On this file system, syncing a new file or directory also makes
    /// its name durable, so its directory needs no sync of its own
    /// ([`file_sync_keeps_new_name`]).
    sync_keeps_new_name: bool,
    /// Regular files guarded against local writers
    /// ([`Vfs::guard_local_writes`]): their kernel read lease, and how many
    /// guards hold it.
    leases: Mutex<HashMap<Handle, (crate::lease::Lease, usize)>>,
    /// NFS lock owners' open file descriptions, their locks the kernel's
    /// ([`Vfs::share_lock`]).
    lock_descs: locks::Descriptions,
    /// Regular files removed while the server held state on them
    /// ([`Vfs::remove_keeping`]): an O_PATH descriptor each, which keeps
    /// the inode (and its data) alive with nlink 0 until released. At
    /// most [`KEPT_MAX`]; `kept_any` says whether any is, so that
    /// resolving skips the lock when none is.
    kept: Mutex<HashMap<Handle, Arc<OwnedFd>>>,
    kept_any: std::sync::atomic::AtomicBool,
    /// Objects watched for changes by other processes
    /// ([`Vfs::watch_local_changes`]): their fanotify watch, and how many
    /// watches hold it.
    watches: Mutex<HashMap<Handle, (crate::watch::Watch, usize)>>,
}

/// At most this many removed files are kept open for their holders; past
/// it a removed file goes at once, as it did before (its holders then get
/// NFS4ERR_STALE).
const KEPT_MAX: usize = 4096;

impl std::fmt::Debug for LocalFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalFs")
            .field("mode", &self.mode)
            .field("switch_creds", &self.switch_creds)
            .finish_non_exhaustive()
    }
}

fn io_err(e: Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(e.0)
}

/// Checks a protocol-supplied name and makes it a C string.
fn cname(name: &[u8]) -> Result<CString> {
    if name.is_empty() || name.contains(&0) || name.contains(&b'/') || name == b"." || name == b".."
    {
        return Err(Errno(libc::EINVAL));
    }
    if name.len() > MAX_NAME {
        return Err(Errno(libc::ENAMETOOLONG));
    }
    CString::new(name).map_err(|_| Errno(libc::EINVAL))
}

/// Whether a status change at `ctime_ns` (nanoseconds since the epoch)
/// lies at least [`SETTLED_NS`] in the past: a change after now gets a
/// later ctime even where the file system's clock is coarse.
fn settled(ctime_ns: impl Into<i128>) -> bool {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    now - ctime_ns.into() >= SETTLED_NS
}

fn ctime_ns(st: &libc::stat) -> u64 {
    (st.st_ctime.max(0) as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(st.st_ctime_nsec.max(0) as u64)
}

fn timespec(sec: i64, nsec: i64) -> Timespec {
    Timespec {
        sec,
        nsec: nsec.clamp(0, 999_999_999) as u32,
    }
}

fn ftype(mode: u32) -> FileType {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => FileType::Directory,
        libc::S_IFLNK => FileType::Symlink,
        libc::S_IFBLK => FileType::Block,
        libc::S_IFCHR => FileType::Char,
        libc::S_IFSOCK => FileType::Socket,
        libc::S_IFIFO => FileType::Fifo,
        _ => FileType::Regular,
    }
}

/// Feeds `each` the entries of `l` after `cookie` (from the start for 0);
/// `None` if no entry of `l` has that cookie.
fn serve_listing(l: &Listing, cookie: u64, each: &mut dyn FnMut(DirEntry) -> bool) -> Option<bool> {
    let start = if cookie == 0 {
        0
    } else {
        1 + l
            .entries
            .iter()
            .position(|e| encode_cookie(e.1) == cookie)?
    };
    for (name, off, ino, dtype) in &l.entries[start..] {
        let entry = DirEntry {
            name: name.clone(),
            cookie: encode_cookie(*off),
            fileid: *ino,
            ftype: dirent_type(*dtype),
            obj: None,
        };
        if !each(entry) {
            return Some(false);
        }
    }
    Some(true)
}

/// A directory entry's `d_type`, where the file system fills it in.
fn dirent_type(d: u8) -> Option<FileType> {
    match d {
        libc::DT_REG => Some(FileType::Regular),
        libc::DT_DIR => Some(FileType::Directory),
        libc::DT_LNK => Some(FileType::Symlink),
        libc::DT_BLK => Some(FileType::Block),
        libc::DT_CHR => Some(FileType::Char),
        libc::DT_SOCK => Some(FileType::Socket),
        libc::DT_FIFO => Some(FileType::Fifo),
        _ => None,
    }
}

fn set_time(t: Option<SetTime>) -> Option<Option<(i64, u32)>> {
    t.map(|t| match t {
        SetTime::ServerNow => None,
        SetTime::Client(ts) => Some((ts.sec, ts.nsec)),
    })
}

/// The exclusive-create verifier as stored in (atime, mtime) seconds. Like
/// knfsd, the top bit of each half is dropped so the values fit every
/// file system's timestamp range.
pub(crate) fn verifier_times(v: &[u8; 8]) -> (i64, i64) {
    let a = u32::from_be_bytes([v[0], v[1], v[2], v[3]]) & 0x7fff_ffff;
    let m = u32::from_be_bytes([v[4], v[5], v[6], v[7]]) & 0x7fff_ffff;
    (a as i64, m as i64)
}

/// Errors from `open_by_handle_at` that mean "no such object" become ESTALE.
fn stale(e: Errno) -> Errno {
    match e.0 {
        libc::EMFILE | libc::ENFILE | libc::ENOMEM | libc::EINTR => e,
        _ => Errno(libc::ESTALE),
    }
}

/// The tag of the export root with identity `ident`.
fn root_tag(ident: &[u8]) -> [u8; ROOT_TAG_LEN] {
    let mut h = blake3::Hasher::new_derive_key("ferrite LocalFs export root tag");
    h.update(ident);
    let mut tag = [0u8; ROOT_TAG_LEN];
    tag.copy_from_slice(&h.finalize().as_bytes()[..ROOT_TAG_LEN]);
    tag
}

/// A backend handle: the serialized kernel handle, then the root tag.
fn bind(kernel: &[u8], tag: &[u8; ROOT_TAG_LEN]) -> Handle {
    let mut b = BytesMut::with_capacity(kernel.len() + ROOT_TAG_LEN);
    b.extend_from_slice(kernel);
    b.extend_from_slice(tag);
    Handle(b.freeze())
}

/// Whether a file system of this type (as /proc/self/mountinfo names it)
/// makes a newly created file's or directory's name durable when the new
/// object itself is synced, so that its directory needs no sync of its
/// own. Only where that is the file system's documented behaviour:
///
/// * ext4: adding an entry marks the new inode `EXT4_STATE_NEWENTRY`
///   (fs/ext4/namei.c, `ext4_add_entry`). With a journal, the sync
///   commits the transaction that holds the entry; without one,
///   `ext4_sync_parent` (fs/ext4/fsync.c) writes the parent's blocks and
///   inode, for that very reason ("a crash may lose the file").
/// * XFS: the create is one logged transaction of the inode and its
///   directory, and a sync forces the log through it.
///
/// Anything else (btrfs, tmpfs, FUSE file systems such as crashfs, NFS)
/// gets the strict POSIX pair: the object, then its directory.
pub fn file_sync_keeps_new_name(fstype: &str) -> bool {
    matches!(fstype, "ext4" | "xfs")
}

/// Whether `syncfs` on a file system of this type makes every metadata
/// change made before it durable, so that concurrent changes can share
/// one ([`fsgroup`]): ext4 (with a journal, the commit of the running
/// transaction; without one, every dirty inode and the block device's
/// buffers: directory blocks, inode tables, bitmaps) and XFS (a
/// synchronous log force). Each such sync is followed by an `fsync` of
/// the root directory, whose cache flush comes after every write the
/// `syncfs` made. Anything else (FUSE file systems such as crashfs, whose
/// `syncfs` may do nothing) syncs each object.
pub fn syncfs_covers_changes(fstype: &str) -> bool {
    matches!(fstype, "ext4" | "xfs")
}

/// Whether the directory `st` describes is the root of its file system:
/// a mount of the file system's top directory (the fourth field of
/// /proc/self/mountinfo is "/") is on it. Only mounts of the same device
/// are looked at, so no other file system's mount point is touched.
fn is_fs_root(st: &libc::stat) -> bool {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let dev = (libc::major(st.st_dev), libc::minor(st.st_dev));
    let found = top_mounts(&info, dev).any(|mp| {
        CString::new(mp).is_ok_and(|c| {
            sys::fstatat(libc::AT_FDCWD, &c, 0)
                .is_ok_and(|m| m.st_dev == st.st_dev && m.st_ino == st.st_ino)
        })
    });
    found
}

/// The mount points, in a /proc/self/mountinfo text, of mounts showing
/// device `dev`'s file system from its top directory.
fn top_mounts(info: &str, dev: (u32, u32)) -> impl Iterator<Item = Vec<u8>> + '_ {
    let want = format!("{}:{}", dev.0, dev.1);
    info.lines().filter_map(move |line| {
        let f: Vec<&str> = line.split(' ').collect();
        (f.len() > 4 && f[2] == want && f[3] == "/").then(|| unescape_mountinfo(f[4]))
    })
}

/// Undoes mountinfo's octal escapes (`\040` for a space, and so on).
fn unescape_mountinfo(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match oct {
            Some(d) if b[i] == b'\\' => {
                let v = d.iter().fold(0u32, |a, c| a * 8 + u32::from(c - b'0'));
                out.push(v as u8);
                i += 4;
            }
            _ => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    out
}

fn encode_cookie(off: i64) -> u64 {
    let off = off as u64;
    if off <= 2 {
        COOKIE_TAG | off
    } else {
        off
    }
}

fn decode_cookie(c: u64) -> i64 {
    if c & COOKIE_TAG != 0 && c & !COOKIE_TAG <= 2 {
        (c & !COOKIE_TAG) as i64
    } else {
        c as i64
    }
}

/// The identity kept on the export root `root` (open as `fd`) of a file
/// system without a stable one: the marker attribute's value, made (a
/// random id) the first time. An error says what to do where the file
/// system keeps no extended attributes.
fn marker(root: &Path, fd: RawFd, fstype: Option<&str>) -> std::io::Result<String> {
    let ns = if sys::geteuid() == 0 {
        "trusted"
    } else {
        "user"
    };
    let name = CString::new(format!("{ns}.{MARKER_XATTR}")).map_err(std::io::Error::other)?;
    let why = |e: Errno| {
        std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            format!(
                "{} is on {}, whose file handles do not survive a remount, and its identity \
                 cannot be kept on it ({name:?}: {}): give the export an fsid",
                root.display(),
                fstype.unwrap_or("a file system without a stable identity"),
                std::io::Error::from_raw_os_error(e.0)
            ),
        )
    };
    match sys::fgetxattr(fd, &name) {
        Ok(v) if !v.is_empty() => return Ok(String::from_utf8_lossy(&v).into_owned()),
        Ok(_) | Err(Errno(libc::ENODATA)) => {}
        Err(e) => return Err(why(e)),
    }
    let mut id = [0u8; 16];
    getrandom::getrandom(&mut id).map_err(|e| std::io::Error::other(e.to_string()))?;
    let id: String = id.iter().map(|b| format!("{b:02x}")).collect();
    // XATTR_CREATE: a marker another server made meanwhile wins.
    match sys::fsetxattr_create(fd, &name, id.as_bytes()) {
        Ok(()) => Ok(id),
        Err(Errno(libc::EEXIST)) => sys::fgetxattr(fd, &name)
            .map(|v| String::from_utf8_lossy(&v).into_owned())
            .map_err(why),
        Err(e) => Err(why(e)),
    }
}

impl LocalFs {
    /// Exports the directory `root`.
    pub fn new(root: &Path) -> std::io::Result<LocalFs> {
        Self::with_options(root, &LocalOptions::default())
    }

    /// Exports the directory `root` as `opts` say.
    pub fn with_options(root: &Path, opts: &LocalOptions) -> std::io::Result<LocalFs> {
        Self::open_as(root, None, opts)
    }

    #[cfg(test)]
    fn with_mode(root: &Path, force: Option<Mode>) -> std::io::Result<LocalFs> {
        Self::open_as(root, force, &LocalOptions::default())
    }

    fn open_as(root: &Path, force: Option<Mode>, opts: &LocalOptions) -> std::io::Result<LocalFs> {
        let p = CString::new(root.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        // open_by_handle_at wants a real (not O_PATH) descriptor on the file
        // system; without read permission only the path map can work.
        let root_fd = sys::openat(libc::AT_FDCWD, &p, libc::O_RDONLY | libc::O_DIRECTORY, 0)
            .or_else(|_| sys::openat(libc::AT_FDCWD, &p, libc::O_PATH | libc::O_DIRECTORY, 0))
            .map_err(io_err)?;
        let st = sys::fstat(root_fd.as_raw_fd()).map_err(io_err)?;
        let raw_root =
            sys::name_to_handle(root_fd.as_raw_fd(), EMPTY, libc::AT_EMPTY_PATH).map_err(io_err)?;
        // The file system's id where it has one (ext4 and btrfs derive it
        // from their UUID, stable across reboots), else the device.
        let fs_id = match sys::fsid(root_fd.as_raw_fd()).map_err(io_err)? {
            0 => st.st_dev,
            id => id,
        };
        let fstype = sys::mount_fstype(root_fd.as_raw_fd());
        let unstable = fstype.as_deref().is_some_and(handles_unstable);
        let identity = match (&opts.fsid, unstable) {
            (Some(f), _) => Identity::Configured(f.clone()),
            (None, true) => Identity::Marker(marker(root, root_fd.as_raw_fd(), fstype.as_deref())?),
            (None, false) => Identity::FileSystem,
        };
        let ident = match &identity {
            Identity::FileSystem => {
                let mut ident = Vec::with_capacity(8 + raw_root.0.len());
                ident.extend_from_slice(&fs_id.to_be_bytes());
                ident.extend_from_slice(&raw_root.0);
                ident
            }
            Identity::Configured(f) => format!("fsid:{f}").into_bytes(),
            Identity::Marker(m) => format!("marker:{m}").into_bytes(),
        };
        let tag = root_tag(&ident);
        let mode = match force {
            Some(m) => m,
            None if unstable => Mode::Stable,
            None => match sys::open_by_handle(root_fd.as_raw_fd(), &raw_root.0, libc::O_PATH) {
                Ok(_) => Mode::Kernel,
                Err(Errno(libc::EPERM | libc::EBADF)) => Mode::PathMap,
                Err(e) => return Err(io_err(e)),
            },
        };
        let raw_root = if mode == Mode::Stable {
            sys::ino_handle(root_fd.as_raw_fd(), EMPTY, libc::AT_EMPTY_PATH).map_err(io_err)?
        } else {
            raw_root
        };
        let euid = sys::geteuid();
        let nofile = sys::nofile_limit();
        // Directory and file descriptors a READDIR or LOOKUP reuses: a
        // miss costs open_by_handle_at and the check that the object is
        // inside. Each pins an inode and a dentry (about 1 KiB of kernel
        // memory).
        let fd_cap = (nofile / 4).clamp(64, 16384) as usize;
        let file_cap = (nofile / 8).clamp(16, 1024) as usize;
        let sync_keeps_new_name = fstype.as_deref().is_some_and(file_sync_keeps_new_name);
        let fs_group = match fstype.as_deref().is_some_and(syncfs_covers_changes) {
            // syncfs and fsync take no O_PATH descriptor.
            true => sys::openat(
                root_fd.as_raw_fd(),
                c".",
                libc::O_RDONLY | libc::O_DIRECTORY,
                0,
            )
            .ok()
            .map(|fd| (fsgroup::FsGroup::default(), fd)),
            false => None,
        };
        tracing::debug!(?mode, ?identity, root = %root.display(), sync_keeps_new_name, "local export");
        Ok(LocalFs {
            root_fd: Arc::new(root_fd),
            root_handle: bind(&raw_root.0, &tag),
            root_ident: Bytes::from(ident),
            identity,
            root_tag: tag,
            root_dev: st.st_dev,
            root_ino: st.st_ino,
            mode,
            switch_creds: euid == 0,
            base_ids: (euid, sys::getegid()),
            fds: Mutex::new(Bounded::new("descriptor", fd_cap)),
            files: Mutex::new(Bounded::new("open file", file_cap)),
            paths: Mutex::new(Bounded::new("path map", MAX_PATH_MAP)),
            whole_fs: is_fs_root(&st),
            parents: Mutex::new(Bounded::new("parent hint", MAX_PARENT_HINTS)),
            listings: Mutex::new(Bounded::new("directory listing", LISTINGS)),
            known_acls: Mutex::new(Bounded::new("POSIX ACL", KNOWN_ACLS)),
            change: ChangeTracker::new(CHANGE_CAP),
            durable: std::sync::atomic::AtomicBool::new(true),
            metadata_syncs: Default::default(),
            fs_group,
            sync_keeps_new_name,
            root_path: root.to_path_buf(),
            leases: Mutex::new(HashMap::new()),
            lock_descs: locks::Descriptions::new((nofile / 8).clamp(16, 65536) as usize),
            kept: Mutex::new(HashMap::new()),
            kept_any: Default::default(),
            watches: Mutex::new(HashMap::new()),
        })
    }

    /// Answers metadata changes before they are on stable storage (an
    /// `async` export): faster, and a power loss may undo acknowledged
    /// creates, removes, renames and attribute changes.
    pub fn set_async(&self, on: bool) {
        self.durable
            .store(!on, std::sync::atomic::Ordering::Relaxed);
    }

    fn is_durable(&self) -> bool {
        self.durable.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether syncing a new file or directory here makes its name
    /// durable too (the file system's rule, [`file_sync_keeps_new_name`]);
    /// `false` makes every create sync its directory as well, as strict
    /// POSIX asks.
    pub fn set_sync_keeps_new_name(&mut self, on: bool) {
        self.sync_keeps_new_name = on;
    }

    pub fn sync_keeps_new_name(&self) -> bool {
        self.sync_keeps_new_name
    }

    /// How many objects were synced to make metadata changes durable
    /// (each change's own, whether its sync ran or a shared one covered
    /// it).
    pub fn metadata_syncs(&self) -> u64 {
        self.metadata_syncs
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Makes an object's metadata durable (for a directory, its entries),
    /// as NFS requires of a change before it is answered (RFC 1813 §3.3,
    /// RFC 8881 §18: "stable storage"). `fd` is an `O_PATH` descriptor
    /// (as every resolved object's is) of an object of type `fmt`
    /// (`S_IFMT` bits): a regular file or directory is opened again to
    /// sync it; other kinds are made durable by their directory's sync.
    fn make_durable(&self, fd: RawFd, fmt: u32) -> Result<()> {
        let flags = match fmt {
            libc::S_IFDIR => libc::O_RDONLY | libc::O_DIRECTORY,
            libc::S_IFREG => libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOATIME,
            _ => return Ok(()),
        };
        self.durable_sync(|| {
            let again =
                sys::openat(libc::AT_FDCWD, &sys::proc_path(fd), flags, 0).or_else(|_| {
                    let flags = flags & !libc::O_NOATIME;
                    sys::openat(libc::AT_FDCWD, &sys::proc_path(fd), flags, 0)
                })?;
            sys::fsync(again.as_raw_fd())
        })
    }

    /// Runs `sync`, which makes a metadata change durable, unless the
    /// export is `async`; counted in [`LocalFs::metadata_syncs`].
    ///
    /// Where the file system allows, concurrent changes share one sync of
    /// the whole file system ([`fsgroup`]); a change alone, or one whose
    /// shared sync failed, runs its own `sync`.
    pub(super) fn durable_sync(&self, sync: impl FnOnce() -> Result<()>) -> Result<()> {
        if !self.is_durable() {
            return Ok(());
        }
        self.metadata_syncs
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let Some((group, fd)) = &self.fs_group else {
            return sync();
        };
        let mut own = Some(sync);
        let out = group.sync(fsgroup::Syncs {
            own: || own.take().map_or(Ok(()), |s| s()),
            whole: || {
                sys::syncfs(fd.as_raw_fd())?;
                sys::fsync(fd.as_raw_fd())
            },
        });
        match out {
            fsgroup::GroupOutcome::Done => Ok(()),
            fsgroup::GroupOutcome::Failed(e) => Err(e),
            fsgroup::GroupOutcome::Retry => {
                group.count_own();
                own.take().map_or(Ok(()), |s| s())
            }
        }
    }

    /// Metadata changes made durable through the group commit, and the
    /// syncs that did it: of one change's own objects, of the whole file
    /// system (None where changes are not grouped).
    pub fn group_sync_counts(&self) -> Option<(u64, u64, u64)> {
        self.fs_group.as_ref().map(|(g, _)| g.counts())
    }

    fn root_raw(&self) -> RawFd {
        self.root_fd.as_raw_fd()
    }

    /// This export's handle of `dir`/`name` (`dir` itself with an empty
    /// name and `AT_EMPTY_PATH`).
    fn handle_at(&self, dir: RawFd, name: &CStr, flags: i32) -> Result<Handle> {
        let raw = if self.mode == Mode::Stable {
            sys::ino_handle(dir, name, flags)?
        } else {
            sys::name_to_handle(dir, name, flags)?
        };
        Ok(bind(&raw.0, &self.root_tag))
    }

    /// Whether handles are resolved through the path map.
    fn mapped(&self) -> bool {
        self.mode != Mode::Kernel
    }

    /// Where this export's identity comes from.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// This export's handle of the object `fd` is open on.
    fn handle_of(&self, fd: RawFd) -> Result<Handle> {
        self.handle_at(fd, EMPTY, libc::AT_EMPTY_PATH)
    }

    /// The kernel handle inside `h`: ESTALE unless `h` ends with this
    /// export's root tag.
    fn unbind<'a>(&self, h: &'a Handle) -> Result<&'a [u8]> {
        match h.0.len().checked_sub(ROOT_TAG_LEN) {
            Some(n) if h.0[n..] == self.root_tag => Ok(&h.0[..n]),
            _ => Err(Errno(libc::ESTALE)),
        }
    }

    fn as_caller(&self, c: &Creds) -> Result<AsCaller> {
        if self.switch_creds {
            AsCaller::switch(c, self.base_ids)
        } else {
            Ok(AsCaller::noop())
        }
    }

    fn attr(&self, st: &libc::stat) -> Attr {
        Attr {
            ftype: ftype(st.st_mode),
            mode: st.st_mode & 0o7777,
            nlink: st.st_nlink.min(u32::MAX as u64) as u32,
            uid: st.st_uid,
            gid: st.st_gid,
            size: st.st_size.max(0) as u64,
            used: (st.st_blocks.max(0) as u64).saturating_mul(512),
            rdev: (libc::major(st.st_rdev), libc::minor(st.st_rdev)),
            fileid: st.st_ino,
            atime: timespec(st.st_atime, st.st_atime_nsec),
            mtime: timespec(st.st_mtime, st.st_mtime_nsec),
            ctime: timespec(st.st_ctime, st.st_ctime_nsec),
            change: self.change.observe(st.st_ino, ctime_ns(st)),
        }
    }

    /// Records a modification of the object `st` describes (fresh stat).
    fn touched(&self, st: &libc::stat) {
        self.change.modified(st.st_ino, ctime_ns(st));
    }

    fn touched_fd(&self, fd: RawFd) {
        if let Ok(st) = sys::fstat(fd) {
            self.touched(&st);
        }
    }

    fn is_root(&self, st: &libc::stat) -> bool {
        st.st_dev == self.root_dev && st.st_ino == self.root_ino
    }

    /// The removed file `h` kept for its holders
    /// ([`Vfs::remove_keeping`]), if it is.
    fn kept_obj(&self, h: &Handle) -> Option<Obj> {
        if !self.kept_any.load(Ordering::Acquire) {
            return None;
        }
        let fd = lock(&self.kept).get(h).cloned()?;
        let st = sys::fstat(fd.as_raw_fd()).ok()?;
        Some(Obj { fd, st })
    }

    /// Before the name `cn` in `d` goes: if it is the last name of a
    /// regular file `keep` says yes to, a descriptor that keeps the file
    /// alive once the name is gone (checked to be the object the handle
    /// `victim` names), to be kept with [`Self::keep_removed`].
    fn hold_victim(
        &self,
        d: RawFd,
        cn: &CStr,
        victim: Option<&Handle>,
        keep: &dyn Fn(&Handle) -> bool,
    ) -> Option<(Handle, OwnedFd)> {
        let v = victim?;
        if !keep(v) {
            return None;
        }
        let fd = sys::openat(d, cn, libc::O_PATH | libc::O_NOFOLLOW, 0).ok()?;
        let st = sys::fstat(fd.as_raw_fd()).ok()?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG || st.st_nlink != 1 {
            return None;
        }
        (self.handle_of(fd.as_raw_fd()).ok().as_ref() == Some(v)).then(|| (v.clone(), fd))
    }

    /// Whether `h` is watched or guarded for a delegation.
    fn watched(&self, h: &Handle) -> bool {
        let watched = lock(&self.watches).contains_key(h);
        watched || lock(&self.leases).contains_key(h)
    }

    /// Keeps `h`, open as `fd`, as a file removed while held (at most
    /// [`KEPT_MAX`]).
    fn keep_arc(&self, h: &Handle, fd: Arc<OwnedFd>) {
        let mut kept = lock(&self.kept);
        if kept.len() < KEPT_MAX || kept.contains_key(h) {
            kept.insert(h.clone(), fd);
            self.kept_any.store(true, Ordering::Release);
        } else {
            tracing::warn!(
                "{} removed files are kept open for their NFS holders; one more goes at once",
                KEPT_MAX
            );
        }
    }

    /// Keeps a file whose last name went ([`Self::hold_victim`]).
    fn keep_removed(&self, held: Option<(Handle, OwnedFd)>) {
        if let Some((h, fd)) = held {
            self.keep_arc(&h, Arc::new(fd));
        }
    }

    /// `h`, open as `fd` (status `st`), found with no link left: the file
    /// kept for it, or, a regular file removed by a local process while
    /// watched or leased for a delegation, kept now for the delegation's
    /// holder (whose opens must go on); else ESTALE.
    fn unlinked_obj(&self, h: &Handle, fd: Arc<OwnedFd>, st: libc::stat) -> Result<Obj> {
        if let Some(o) = self.kept_obj(h) {
            return Ok(o);
        }
        if st.st_mode & libc::S_IFMT == libc::S_IFREG && self.watched(h) {
            self.keep_arc(h, fd.clone());
            return Ok(Obj { fd, st });
        }
        Err(Errno(libc::ESTALE))
    }

    /// Drops every cached descriptor of `h`.
    fn forget(&self, h: &Handle) {
        lock(&self.fds).remove(h);
        lock(&self.files).remove(h);
    }

    /// Resolves a handle to an O_PATH descriptor and fresh attributes.
    /// Must run with the server's identity (before switching).
    fn resolve(&self, h: &Handle) -> Result<Obj> {
        self.resolve_as(h, false)
    }

    /// [`Self::resolve`]; with `dir_only`, anything but a directory is
    /// ESTALE (parent hints name directories; this keeps checking one
    /// hint from following another).
    fn resolve_as(&self, h: &Handle, dir_only: bool) -> Result<Obj> {
        if *h == self.root_handle {
            let st = sys::fstat(self.root_raw())?;
            return Ok(Obj {
                fd: self.root_fd.clone(),
                st,
            });
        }
        let kernel = self.unbind(h)?;
        let cached = lock(&self.fds).get(h);
        if let Some(fd) = cached {
            match sys::fstat(fd.as_raw_fd()) {
                Ok(st) if st.st_nlink > 0 => {
                    if dir_only && st.st_mode & libc::S_IFMT != libc::S_IFDIR {
                        return Err(Errno(libc::ESTALE));
                    }
                    return Ok(Obj { fd, st });
                }
                Ok(st) => {
                    self.forget(h);
                    return self.unlinked_obj(h, fd, st);
                }
                Err(_) => self.forget(h),
            }
        }
        let opened = match self.mode {
            Mode::Kernel => self.open_by_handle(kernel),
            Mode::PathMap | Mode::Stable => self.open_mapped(h),
        };
        let fd = match opened {
            Ok(fd) => fd,
            Err(e) => return self.kept_obj(h).ok_or(e),
        };
        let st = sys::fstat(fd.as_raw_fd())?;
        if st.st_nlink == 0 {
            return self.unlinked_obj(h, Arc::new(fd), st);
        }
        if st.st_dev != self.root_dev {
            return Err(Errno(libc::ESTALE));
        }
        if dir_only && st.st_mode & libc::S_IFMT != libc::S_IFDIR {
            return Err(Errno(libc::ESTALE));
        }
        let fd = match self.mode {
            Mode::Kernel => self.check_inside(h, fd, &st).map_err(stale)?,
            Mode::PathMap | Mode::Stable => fd,
        };
        let fd = Arc::new(fd);
        lock(&self.fds).insert(h.clone(), fd.clone());
        Ok(Obj { fd, st })
    }

    /// The whole of the directory open as `rd` (stat `st`), if it has not
    /// changed for [`SETTLED_NS`] and holds at most [`LISTING_MAX`]
    /// entries; `None` otherwise, with `rd` back at its start.
    fn list_settled(&self, rd: RawFd, st: &libc::stat) -> Result<Option<Arc<Listing>>> {
        let key = listing_key(st);
        if !settled(key.1.max(key.2)) {
            return Ok(None);
        }
        let mut entries = Vec::new();
        let mut dotdot = 0;
        let mut buf = sys::DentBuf::new(16 << 10);
        while buf.fill(rd)? {
            while let Some(e) = buf.next_entry() {
                if e.name == b".." {
                    dotdot = e.ino;
                }
                if e.name == b"." || e.name == b".." {
                    continue;
                }
                if entries.len() == LISTING_MAX {
                    sys::lseek_set(rd, 0)?;
                    return Ok(None);
                }
                entries.push((Bytes::copy_from_slice(e.name), e.off, e.ino, e.dtype));
            }
        }
        Ok(Some(Arc::new(Listing {
            key,
            entries,
            dotdot,
            rel: self.rel_path(rd),
        })))
    }

    /// The descriptor kept for `h` (the root's always), if any.
    /// The cached descriptor and status of the directory `dir`, when this
    /// caller may search it without a permission system call (kernel
    /// mode; root with credentials switched, the directory's owner with
    /// search permission, or credentials off); `None` otherwise, and for
    /// anything but a live directory.
    fn searchable_dir_nowait(&self, c: &Creds, dir: &Handle) -> Option<(Arc<OwnedFd>, libc::stat)> {
        if self.mode != Mode::Kernel {
            return None;
        }
        let dfd = self.cached_fd(dir)?;
        let st = sys::fstat(dfd.as_raw_fd()).ok()?;
        let may_search =
            !self.switch_creds || c.uid == 0 || (c.uid == st.st_uid && st.st_mode & 0o100 != 0);
        if st.st_nlink == 0 || st.st_mode & libc::S_IFMT != libc::S_IFDIR || !may_search {
            return None;
        }
        Some((dfd, st))
    }

    /// The regular file `h`, if already open for I/O and `c` is its owner
    /// (or credentials are not switched), with its size: what reads
    /// without a permission system call need.
    fn open_for_owner(&self, c: &Creds, h: &Handle) -> Option<(Arc<OpenFile>, u64)> {
        let f = lock(&self.files).get(h)?;
        let st = sys::fstat(f.as_raw_fd()).ok()?;
        if st.st_nlink == 0
            || st.st_mode & libc::S_IFMT != libc::S_IFREG
            || (self.switch_creds && c.uid != st.st_uid)
        {
            return None;
        }
        Some((f, st.st_size.max(0) as u64))
    }

    /// The regular file `h`, resolved (its status read), and a descriptor
    /// of it open for writing, for `len` bytes at `offset`.
    fn writable(&self, h: &Handle, offset: u64, len: usize) -> Result<(Obj, Arc<OpenFile>)> {
        let o = self.resolve(h)?;
        o.want_regular()?;
        if !crate::range_fits(offset, len as u64) {
            return Err(Errno(libc::EFBIG));
        }
        let f = self.file_for(h, &o, true)?;
        Ok((o, f))
    }

    /// Writes `data` at `offset` through `f` (of `o`), unstably, with the
    /// caller's identity so that the kernel clears set-id bits as it
    /// would for a local write.
    fn write_as(&self, c: &Creds, o: &Obj, f: &OpenFile, offset: u64, data: &[u8]) -> Result<()> {
        let _g = self.as_caller(c)?;
        self.may_io(c, o, true)?;
        f.write_all_at(data, offset)?;
        Ok(())
    }

    fn cached_fd(&self, h: &Handle) -> Option<Arc<OwnedFd>> {
        if *h == self.root_handle {
            Some(self.root_fd.clone())
        } else {
            lock(&self.fds).get(h)
        }
    }

    /// The kernel's path for `fd` relative to the export root, both read
    /// now, if it lies strictly below the root.
    fn rel_path(&self, fd: RawFd) -> Option<CString> {
        let root = std::fs::read_link(format!("/proc/self/fd/{}", self.root_raw())).ok()?;
        let path = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?;
        let rel = path.strip_prefix(&root).ok()?;
        if !path.is_absolute() || rel.as_os_str().is_empty() {
            return None;
        }
        CString::new(rel.as_os_str().as_bytes()).ok()
    }

    /// The cached listing of the directory `dir` and its status, found
    /// without blocking ([`Self::dir_nowait`]), if the directory is as it
    /// was when listed and the caller may read it without a permission
    /// system call (root with credentials switched, or its owner with
    /// read permission, or credentials off).
    fn current_listing(&self, c: &Creds, dir: &Handle) -> Option<(Arc<Listing>, libc::stat)> {
        let l = lock(&self.listings).get(dir)?;
        let fd = self.dir_nowait(dir, &l)?;
        let st = sys::fstat(fd.as_raw_fd()).ok()?;
        if st.st_nlink == 0 || st.st_mode & libc::S_IFMT != libc::S_IFDIR {
            return None;
        }
        let may_read =
            !self.switch_creds || c.uid == 0 || (c.uid == st.st_uid && st.st_mode & 0o400 != 0);
        if !may_read || l.key != listing_key(&st) {
            return None;
        }
        Some((l, st))
    }

    /// A directory's descriptor without blocking: the cached one, or else
    /// one opened (to close after use) by the path it had when `l` was
    /// read, only from the dentry cache, never leaving the export's mount
    /// or following a link.
    ///
    /// The caller ([`Self::current_listing`]) takes the descriptor for the
    /// directory `l` lists only if its status still has `l`'s key (inode
    /// number, ctime and mtime): another directory at that path has
    /// another inode number, or, if it reuses the number of one deleted
    /// since `l` was read, a ctime at least [`SETTLED_NS`] later (made
    /// after the deletion, which came after `l`), as ctime cannot be set
    /// by anyone. So no `name_to_handle_at` is needed to tell it from the
    /// object `dir` names.
    fn dir_nowait(&self, dir: &Handle, l: &Listing) -> Option<Arc<OwnedFd>> {
        if let Some(fd) = self.cached_fd(dir) {
            return Some(fd);
        }
        let rel = l.rel.as_ref()?;
        let fd = sys::openat_cached(
            self.root_raw(),
            rel,
            libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW,
            libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_XDEV,
        )
        .ok()?;
        Some(Arc::new(fd))
    }

    /// Kernel mode: an `O_PATH` descriptor for the kernel handle `kernel`,
    /// ESTALE if it names no object. The kernel answers ENOMEM, not ESTALE,
    /// for some handles of deleted directories it must reconnect (seen on
    /// ext4 when the dentry cache is dropped meanwhile): ENOMEM twice in a
    /// row is taken for a stale handle, as a real shortage would show
    /// elsewhere too.
    fn open_by_handle(&self, kernel: &[u8]) -> Result<OwnedFd> {
        match sys::open_by_handle(self.root_raw(), kernel, libc::O_PATH) {
            Err(Errno(libc::ENOMEM)) => sys::open_by_handle(self.root_raw(), kernel, libc::O_PATH)
                .map_err(|e| match e.0 {
                    libc::ENOMEM => Errno(libc::ESTALE),
                    _ => stale(e),
                }),
            r => r.map_err(stale),
        }
    }

    /// Kernel mode: the descriptor to keep for `h`, opened by handle as
    /// `fd`, or ESTALE if the object lies outside the export (same device,
    /// other subtree): RFC 8881 §4.2.2 leaves it to the server to keep a
    /// filehandle inside what it exports.
    ///
    /// A directory must reach the export root by climbing `..` (the kernel
    /// returns directories connected). A non-directory is inside when the
    /// export is the root of its file system (everything on the device is
    /// then below it), or when the kernel's path for it lies below the
    /// export root. Otherwise its path is outside (its only name, or the
    /// name the kernel happens to know, is elsewhere) or it came back
    /// disconnected (its dentry evicted under memory pressure or by a
    /// reboot): it is accepted only through the parent directory its
    /// filehandle names ([`Vfs::note_parent`]), which must itself climb to
    /// the export root and hold an entry for this object. That entry is
    /// opened in its place, so the descriptor kept is connected.
    ///
    /// A file moved to another directory since its handle was made, then
    /// evicted, is stale through that handle: the price of checking
    /// (knfsd's `subtree_check` pays it for every file; here only files
    /// the kernel no longer places).
    fn check_inside(&self, h: &Handle, fd: OwnedFd, st: &libc::stat) -> Result<OwnedFd> {
        if self.is_root(st) {
            return Ok(fd);
        }
        if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
            self.climbs_to_root(&fd)?;
            return Ok(fd);
        }
        if self.whole_fs || self.path_below_root(&fd)? {
            return Ok(fd);
        }
        let parent = lock(&self.parents).get(h).ok_or(Errno(libc::ESTALE))?;
        self.reconnect(&parent, st)
    }

    /// Whether the kernel's path for `fd` (`/proc/self/fd`) lies strictly
    /// below the export root's, both read now (either may have been
    /// renamed). A disconnected object's path is "/" or relative, which
    /// never counts.
    fn path_below_root(&self, fd: &OwnedFd) -> Result<bool> {
        let root_path = std::fs::read_link(format!("/proc/self/fd/{}", self.root_raw()))?;
        let path = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))?;
        Ok(path.is_absolute()
            && path != Path::new("/")
            && path != root_path
            && path.starts_with(&root_path))
    }

    /// Whether the directory `fd` lies below the export root. The kernel
    /// keeps directories connected, so its path for one is where it is: a
    /// path below the root's (both read now: either may have been renamed)
    /// settles it in two system calls. Otherwise, climb `..` to the root,
    /// which also places a directory whose path the kernel cannot show
    /// from here (one reached through another mount).
    fn climbs_to_root(&self, fd: &OwnedFd) -> Result<()> {
        if self.path_below_root(fd)? {
            return Ok(());
        }
        let mut cur = sys::openat(fd.as_raw_fd(), c"..", libc::O_PATH | libc::O_DIRECTORY, 0)?;
        let mut cst = sys::fstat(cur.as_raw_fd())?;
        for _ in 0..4096 {
            if cst.st_dev != self.root_dev {
                break;
            }
            if cst.st_ino == self.root_ino {
                return Ok(());
            }
            let up = sys::openat(cur.as_raw_fd(), c"..", libc::O_PATH | libc::O_DIRECTORY, 0)?;
            let ust = sys::fstat(up.as_raw_fd())?;
            if ust.st_dev == cst.st_dev && ust.st_ino == cst.st_ino {
                break; // the top of the file system
            }
            cur = up;
            cst = ust;
        }
        Err(Errno(libc::ESTALE))
    }

    /// The object `st` describes, opened by its name in the directory
    /// `parent` (checked to lie inside the export), or ESTALE if `parent`
    /// has no entry for it. Reads the whole directory at worst; runs only
    /// for objects the kernel returned without a place inside.
    fn reconnect(&self, parent: &Handle, st: &libc::stat) -> Result<OwnedFd> {
        let p = self.resolve_as(parent, true)?;
        let rd = sys::openat(p.raw(), c".", libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
        let mut buf = sys::DentBuf::new(32 << 10);
        while buf.fill(rd.as_raw_fd())? {
            while let Some(e) = buf.next_entry() {
                if e.ino != st.st_ino || e.name == b"." || e.name == b".." {
                    continue;
                }
                let Ok(name) = CString::new(e.name) else {
                    continue;
                };
                let Ok(fd) = sys::openat(p.raw(), &name, libc::O_PATH | libc::O_NOFOLLOW, 0) else {
                    continue;
                };
                let found = sys::fstat(fd.as_raw_fd())?;
                if found.st_dev == st.st_dev && found.st_ino == st.st_ino {
                    return Ok(fd);
                }
            }
        }
        Err(Errno(libc::ESTALE))
    }

    // ---- path-map mode ----

    /// The path of `h` relative to the root, if known.
    fn rel_of(&self, h: &Handle) -> Option<PathBuf> {
        if *h == self.root_handle {
            Some(PathBuf::new())
        } else {
            lock(&self.paths).get(h)
        }
    }

    /// Path-map mode: records that `child` is `name` in `dir`.
    fn note_child(&self, dir: &Handle, name: &CStr, child: &Handle) {
        if !self.mapped() {
            return;
        }
        if let Some(r) = self.rel_of(dir) {
            let p = r.join(OsStr::from_bytes(name.to_bytes()));
            lock(&self.paths).insert(child.clone(), p);
        }
    }

    /// Opens a path relative to the root without following symlinks.
    fn open_rel(&self, rel: &Path) -> Result<OwnedFd> {
        let comps = rel
            .components()
            .map(|c| match c {
                Component::Normal(s) => CString::new(s.as_bytes()).map_err(|_| Errno(libc::ESTALE)),
                _ => Err(Errno(libc::ESTALE)),
            })
            .collect::<Result<Vec<_>>>()?;
        let mut cur: Option<OwnedFd> = None;
        for (i, comp) in comps.iter().enumerate() {
            let dir = cur.as_ref().map_or(self.root_raw(), |f| f.as_raw_fd());
            let mut flags = libc::O_PATH | libc::O_NOFOLLOW;
            if i + 1 < comps.len() {
                flags |= libc::O_DIRECTORY;
            }
            cur = Some(sys::openat(dir, comp, flags, 0)?);
        }
        match cur {
            Some(fd) => Ok(fd),
            None => sys::openat(self.root_raw(), c".", libc::O_PATH | libc::O_DIRECTORY, 0),
        }
    }

    /// Path-map mode: opens `h` by its mapped path, rescanning the tree if
    /// the path is unknown or now names something else.
    fn open_mapped(&self, h: &Handle) -> Result<OwnedFd> {
        let known = lock(&self.paths).get(h);
        if let Some(rel) = known {
            if let Ok(fd) = self.open_rel(&rel) {
                if self.handle_of(fd.as_raw_fd()).ok().as_ref() == Some(h) {
                    return Ok(fd);
                }
            }
            lock(&self.paths).remove(h);
        }
        if let Some(rel) = self.scan_for(h) {
            let fd = self.open_rel(&rel)?;
            if self.handle_of(fd.as_raw_fd()).ok().as_ref() == Some(h) {
                return Ok(fd);
            }
        }
        Err(Errno(libc::ESTALE))
    }

    /// Walks the export breadth-first looking for `target`, recording
    /// every handle seen.
    fn scan_for(&self, target: &Handle) -> Option<PathBuf> {
        let mut queue = VecDeque::from([PathBuf::new()]);
        let mut buf = sys::DentBuf::new(32 << 10);
        while let Some(rel) = queue.pop_front() {
            let Ok(dfd) = self.open_rel(&rel) else {
                continue;
            };
            let Ok(rd) = sys::openat(dfd.as_raw_fd(), c".", libc::O_RDONLY | libc::O_DIRECTORY, 0)
            else {
                continue;
            };
            while let Ok(true) = buf.fill(rd.as_raw_fd()) {
                while let Some(e) = buf.next_entry() {
                    if e.name == b"." || e.name == b".." {
                        continue;
                    }
                    let Ok(cn) = CString::new(e.name) else {
                        continue;
                    };
                    let child = rel.join(OsStr::from_bytes(e.name));
                    if let Ok(h) = self.handle_at(rd.as_raw_fd(), &cn, 0) {
                        let hit = h == *target;
                        lock(&self.paths).insert(h, child.clone());
                        if hit {
                            return Some(child);
                        }
                    }
                    if e.dtype == libc::DT_DIR || e.dtype == libc::DT_UNKNOWN {
                        if let Ok(st) = sys::fstatat(rd.as_raw_fd(), &cn, libc::AT_SYMLINK_NOFOLLOW)
                        {
                            if st.st_mode & libc::S_IFMT == libc::S_IFDIR
                                && st.st_dev == self.root_dev
                            {
                                queue.push_back(child);
                            }
                        }
                    }
                }
            }
        }
        None
    }

    // ---- helpers shared by operations ----

    /// Takes ownership of a freshly opened O_PATH descriptor of an object
    /// in the export: caches it and returns its handle and attributes.
    fn adopt(&self, fd: OwnedFd) -> Result<(Handle, Attr, Obj)> {
        let st = sys::fstat(fd.as_raw_fd())?;
        if st.st_dev != self.root_dev {
            // A mount point: the mounted file system is not exported.
            return Err(Errno(libc::EACCES));
        }
        let h = self.handle_of(fd.as_raw_fd())?;
        let fd = Arc::new(fd);
        lock(&self.fds).insert(h.clone(), fd.clone());
        let a = self.attr(&st);
        Ok((h, a, Obj { fd, st }))
    }

    /// A cached descriptor for I/O on the regular file `o`, opened with the
    /// server's authority (call before switching identity): read-only
    /// until a write needs it writable (a writable descriptor would break,
    /// or forbid, the file's read lease: [`Vfs::guard_local_writes`]).
    fn file_for(&self, h: &Handle, o: &Obj, write: bool) -> Result<Arc<OpenFile>> {
        let cached = lock(&self.files).get(h);
        if let Some(f) = cached {
            if f.write || !write {
                return Ok(f);
            }
        }
        let p = sys::proc_path(o.raw());
        let (fd, w) = if write {
            (sys::openat(libc::AT_FDCWD, &p, libc::O_RDWR, 0)?, true)
        } else {
            (sys::openat(libc::AT_FDCWD, &p, libc::O_RDONLY, 0)?, false)
        };
        let f = Arc::new(OpenFile::new(File::from(fd), w));
        lock(&self.files).insert(h.clone(), f.clone());
        Ok(f)
    }

    /// Whether the caller may read (or write) `o` through a descriptor the
    /// server opened: the kernel's answer, except that the owner always may
    /// (NFS owner override); reading is also allowed with execute
    /// permission, as knfsd does. Call with the caller's identity in force.
    fn may_io(&self, c: &Creds, o: &Obj, write: bool) -> Result<()> {
        if !self.switch_creds || c.uid == o.st.st_uid {
            return Ok(());
        }
        if write {
            sys::faccess(o.raw(), libc::W_OK)
        } else {
            sys::faccess(o.raw(), libc::R_OK).or_else(|e| {
                if e.0 == libc::EACCES {
                    sys::faccess(o.raw(), libc::X_OK).map_err(|_| e)
                } else {
                    Err(e)
                }
            })
        }
    }

    /// Truncates (or extends) the regular file `o` for the caller.
    fn truncate(&self, c: &Creds, h: &Handle, o: &Obj, size: u64) -> Result<()> {
        o.want_regular()?;
        if size > crate::MAX_FILE_SIZE {
            return Err(Errno(libc::EFBIG));
        }
        let f = self.file_for(h, o, true)?;
        let _g = self.as_caller(c)?;
        self.may_io(c, o, true)?;
        f.set_len(size).map_err(Errno::from)
    }

    /// Applies owner, mode and times to a newly created object (`fd` is any
    /// descriptor of it). Runs with the caller's identity in force.
    fn apply_new(
        &self,
        fd: RawFd,
        is_link: bool,
        mode: u32,
        set: &SetAttr,
        times: bool,
    ) -> Result<()> {
        if set.uid.is_some() || set.gid.is_some() {
            sys::fchownat(fd, set.uid, set.gid)?;
        }
        // The exact mode, whatever the umask (and after chown, which may
        // clear set-id bits). Symlinks have no mode of their own.
        if !is_link {
            sys::chmod_fd(fd, mode)?;
            if let Some(acl) = &set.acl {
                let st = sys::fstat(fd)?;
                xattr::write_acl_set(fd, st.st_mode & libc::S_IFMT == libc::S_IFDIR, acl)?;
            }
        }
        if times && (set.atime.is_some() || set.mtime.is_some()) {
            sys::utimes_fd(fd, set_time(set.atime), set_time(set.mtime))?;
        }
        Ok(())
    }

    /// The second half of `create_file` once `O_CREAT|O_EXCL` succeeded.
    #[allow(clippy::too_many_arguments)]
    fn finish_new_file(
        &self,
        c: &Creds,
        dir: &Handle,
        d: &Obj,
        name: &CStr,
        fd: OwnedFd,
        how: CreateMode,
        set: &SetAttr,
        mode: u32,
    ) -> Result<(Handle, Attr, bool)> {
        let file = File::from(fd);
        let raw = file.as_raw_fd();
        let applied = (|| -> Result<Handle> {
            let h = self.handle_of(raw)?;
            let _g = self.as_caller(c)?;
            let exclusive = matches!(how, CreateMode::Exclusive(_));
            self.apply_new(raw, false, mode, set, !exclusive)?;
            if let Some(size) = set.size.filter(|&s| s > 0) {
                if size > crate::MAX_FILE_SIZE {
                    return Err(Errno(libc::EFBIG));
                }
                file.set_len(size).map_err(Errno::from)?;
            }
            if let CreateMode::Exclusive(v) = how {
                let (a, m) = verifier_times(&v);
                sys::utimes_fd(raw, Some(Some((a, 0))), Some(Some((m, 0))))?;
            }
            Ok(h)
        })();
        let h = match applied {
            Ok(h) => h,
            Err(e) => {
                if let Ok(_g) = self.as_caller(c) {
                    let _ = sys::unlinkat(d.raw(), name, 0);
                }
                return Err(e);
            }
        };
        // The new file, then its name (with the file's own sync where the
        // file system keeps the two together).
        self.durable_sync(|| file.sync_all().map_err(Errno::from))?;
        if !self.sync_keeps_new_name {
            self.make_durable(d.raw(), libc::S_IFDIR)?;
        }
        let st = sys::fstat(raw)?;
        if let Ok(pfd) = sys::openat(libc::AT_FDCWD, &sys::proc_path(raw), libc::O_PATH, 0) {
            lock(&self.fds).insert(h.clone(), Arc::new(pfd));
        }
        lock(&self.files).insert(h.clone(), Arc::new(OpenFile::new(file, true)));
        self.note_child(dir, name, &h);
        self.touched_fd(d.raw());
        Ok((h, self.attr(&st), true))
    }

    /// Attributes of a directory entry for readdir: `Err(ENOENT)` if it
    /// vanished (skip it), `Ok(None)` if it cannot be described.
    fn entry_obj(&self, dir: RawFd, name: &[u8]) -> Result<Option<(Handle, Attr)>> {
        let Ok(cn) = CString::new(name) else {
            return Ok(None);
        };
        let st = match sys::fstatat(dir, &cn, libc::AT_SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno(libc::ENOENT)) => return Err(Errno(libc::ENOENT)),
            Err(_) => return Ok(None),
        };
        if st.st_dev != self.root_dev {
            return Ok(None);
        }
        match self.handle_at(dir, &cn, 0) {
            Ok(h) => Ok(Some((h, self.attr(&st)))),
            Err(Errno(libc::ENOENT)) => Err(Errno(libc::ENOENT)),
            Err(_) => Ok(None),
        }
    }
}

impl Vfs for LocalFs {
    fn root(&self) -> Handle {
        self.root_handle.clone()
    }

    fn root_identity(&self) -> Bytes {
        self.root_ident.clone()
    }

    fn local_dir(&self) -> Option<std::path::PathBuf> {
        Some(self.root_path.clone())
    }

    fn set_metadata_async(&self, on: bool) -> bool {
        self.set_async(on);
        true
    }

    fn describe(&self) -> String {
        let dir = self.root_path.display();
        if self.is_durable() {
            dir.to_string()
        } else {
            format!("{dir} (async)")
        }
    }

    fn note_parent(&self, h: &Handle, parent: &Handle) {
        if self.wants_parent_hints() && *parent != *h {
            lock(&self.parents).insert(h.clone(), parent.clone());
        }
    }

    fn wants_parent_hints(&self) -> bool {
        // Only kernel mode opens objects it cannot place; where the export
        // is the whole file system, every object is inside.
        self.mode == Mode::Kernel && !self.whole_fs
    }

    fn getattr(&self, h: &Handle) -> Result<Attr> {
        let o = self.resolve(h)?;
        Ok(self.attr(&o.st))
    }

    /// An object whose descriptor is cached: one fstat of it (no I/O: its
    /// inode is in memory while the descriptor is open).
    fn getattr_nowait(&self, h: &Handle) -> Option<Result<Attr>> {
        let fd = self.cached_fd(h)?;
        let st = sys::fstat(fd.as_raw_fd()).ok()?;
        if st.st_nlink == 0 {
            return None;
        }
        Some(Ok(self.attr(&st)))
    }

    fn lookup(&self, c: &Creds, dir: &Handle, name: &[u8]) -> Result<(Handle, Attr)> {
        let cn = cname(name)?;
        let d = self.resolve(dir)?;
        let fd = {
            let _g = self.as_caller(c)?;
            sys::openat(d.raw(), &cn, libc::O_PATH | libc::O_NOFOLLOW, 0)?
        };
        let (h, a, _) = self.adopt(fd)?;
        self.note_child(dir, &cn, &h);
        Ok((h, a))
    }

    /// Kernel mode, a directory whose descriptor is cached, a caller
    /// needing no permission system call (root with credentials switched,
    /// the directory's owner with search permission, or credentials off),
    /// and a name in the kernel's dentry cache (`RESOLVE_CACHED`).
    fn lookup_nowait(
        &self,
        c: &Creds,
        dir: &Handle,
        name: &[u8],
    ) -> Option<Result<(Handle, Attr)>> {
        // Not a directory: `lookup`'s caller says which error.
        let (dfd, _) = self.searchable_dir_nowait(c, dir)?;
        let cn = match cname(name) {
            Ok(n) => n,
            Err(e) => return Some(Err(e)),
        };
        match sys::openat_cached(dfd.as_raw_fd(), &cn, libc::O_PATH | libc::O_NOFOLLOW, 0) {
            Ok(fd) => Some(self.adopt(fd).map(|(h, a, _)| (h, a))),
            Err(Errno(libc::ENOENT)) => Some(Err(Errno(libc::ENOENT))),
            Err(_) => None,
        }
    }

    /// As [`Vfs::lookup_nowait`]: kernel mode, the directory's descriptor
    /// cached, a caller needing no permission system call, and ".." in
    /// the kernel's dentry cache.
    fn lookup_parent_nowait(&self, c: &Creds, dir: &Handle) -> Option<Result<(Handle, Attr)>> {
        let (dfd, st) = self.searchable_dir_nowait(c, dir)?;
        if self.is_root(&st) {
            return Some(Err(Errno(libc::ENOENT)));
        }
        let fd =
            sys::openat_cached(dfd.as_raw_fd(), c"..", libc::O_PATH | libc::O_DIRECTORY, 0).ok()?;
        Some(self.adopt(fd).map(|(h, a, _)| (h, a)))
    }

    fn lookup_parent(&self, c: &Creds, dir: &Handle) -> Result<(Handle, Attr)> {
        let d = self.resolve(dir)?;
        if !d.is_dir() {
            return Err(Errno(libc::ENOTDIR));
        }
        if self.is_root(&d.st) {
            return Err(Errno(libc::ENOENT));
        }
        let fd = {
            let _g = self.as_caller(c)?;
            sys::openat(d.raw(), c"..", libc::O_PATH | libc::O_DIRECTORY, 0)?
        };
        let (h, a, _) = self.adopt(fd)?;
        if self.mapped() && h != self.root_handle {
            if let Some(p) = self.rel_of(dir).as_deref().and_then(Path::parent) {
                lock(&self.paths).insert(h.clone(), p.to_path_buf());
            }
        }
        Ok((h, a))
    }

    /// Read permission only, on an object whose descriptor is cached, for
    /// root with credentials switched (which may read anything) or the
    /// object's owner (whose permission is the mode's owner bits, ACLs or
    /// not).
    fn access_nowait(&self, c: &Creds, h: &Handle, mask: i32) -> Option<Result<bool>> {
        if mask != libc::R_OK || !self.switch_creds {
            return None;
        }
        let fd = lock(&self.fds).get(h)?;
        let st = sys::fstat(fd.as_raw_fd()).ok()?;
        if st.st_nlink == 0 {
            return None;
        }
        if c.uid == 0 {
            Some(Ok(true))
        } else if c.uid == st.st_uid {
            Some(Ok(st.st_mode & 0o400 != 0))
        } else {
            None
        }
    }

    fn access(&self, c: &Creds, h: &Handle, mask: i32) -> Result<bool> {
        if mask & !(libc::R_OK | libc::W_OK | libc::X_OK) != 0 {
            return Err(Errno(libc::EINVAL));
        }
        let o = self.resolve(h)?;
        let _g = self.as_caller(c)?;
        match sys::faccess(o.raw(), mask) {
            Ok(()) => Ok(true),
            Err(Errno(libc::EACCES | libc::EPERM | libc::EROFS | libc::ETXTBSY)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn setattr(&self, c: &Creds, h: &Handle, set: &SetAttr) -> Result<Attr> {
        let o = self.resolve(h)?;
        if set.is_empty() {
            return Ok(self.attr(&o.st));
        }
        if let Some(size) = set.size {
            self.truncate(c, h, &o, size)?;
        }
        {
            let _g = self.as_caller(c)?;
            if set.uid.is_some() || set.gid.is_some() {
                sys::fchownat(o.raw(), set.uid, set.gid)?;
            }
            if let Some(mode) = set.mode {
                if o.fmt() == libc::S_IFLNK {
                    return Err(Errno(libc::EOPNOTSUPP));
                }
                sys::chmod_fd(o.raw(), mode & 0o7777)?;
            }
            if let Some(acl) = &set.acl {
                if o.fmt() == libc::S_IFLNK {
                    return Err(Errno(libc::EINVAL));
                }
                xattr::write_acl_set(o.raw(), o.fmt() == libc::S_IFDIR, acl)?;
            }
            if set.atime.is_some() || set.mtime.is_some() {
                sys::utimes_fd(o.raw(), set_time(set.atime), set_time(set.mtime))?;
            }
        }
        self.make_durable(o.raw(), o.fmt())?;
        let st = sys::fstat(o.raw())?;
        self.touched(&st);
        Ok(self.attr(&st))
    }

    fn read(&self, c: &Creds, h: &Handle, offset: u64, count: u32) -> Result<(Bytes, bool)> {
        let o = self.resolve(h)?;
        o.want_regular()?;
        let f = self.file_for(h, &o, false)?;
        {
            let _g = self.as_caller(c)?;
            self.may_io(c, &o, false)?;
        }
        let size = o.st.st_size.max(0) as u64;
        if offset >= size || count == 0 {
            return Ok((Bytes::new(), offset >= size));
        }
        let len = (count as u64).min(size - offset).min(READ_CAP) as usize;
        let buf = sys::pread_full(f.as_raw_fd(), len, offset)?;
        let end = offset + buf.len() as u64;
        Ok((buf.freeze(), end >= size))
    }

    /// A file already open for I/O, read by its owner (or with credential
    /// switching off), from the page cache: no identity switch, no
    /// permission system call, one fstat and one `preadv2(RWF_NOWAIT)`.
    /// Anything else, or a page not in memory, is left to [`Vfs::read`].
    fn read_nowait(
        &self,
        c: &Creds,
        h: &Handle,
        offset: u64,
        count: u32,
    ) -> Option<Result<(Bytes, bool)>> {
        let (f, size) = self.open_for_owner(c, h)?;
        if offset >= size || count == 0 {
            return Some(Ok((Bytes::new(), offset >= size)));
        }
        let len = (count as u64).min(size - offset).min(READ_CAP) as usize;
        match sys::pread_nowait(f.as_raw_fd(), len, offset) {
            Ok(buf) if !buf.is_empty() => {
                let end = offset + buf.len() as u64;
                Some(Ok((buf.freeze(), end >= size)))
            }
            _ => None,
        }
    }

    /// As [`Self::read_nowait`] (a file open for I/O, read by its owner),
    /// when `cachestat(2)` says every page of the range is in memory. A
    /// page evicted between this check and the send is read from the disk
    /// by `sendfile` on the connection's thread: the window is the time
    /// the reply waits in its connection's queue.
    fn read_slice_nowait(
        &self,
        c: &Creds,
        h: &Handle,
        offset: u64,
        count: u32,
        min_len: usize,
    ) -> Option<Result<(xdr::FileSlice, bool)>> {
        let (f, size) = self.open_for_owner(c, h)?;
        if offset >= size || count == 0 {
            return None;
        }
        let len = (count as u64).min(size - offset).min(READ_CAP) as usize;
        if len < min_len.max(1) || sys::cached_in_full(f.as_raw_fd(), offset, len) != Some(true) {
            return None;
        }
        let slice = xdr::FileSlice {
            file: f.shared(),
            offset,
            len,
        };
        READ_SLICES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(Ok((slice, offset + len as u64 >= size)))
    }

    fn write(
        &self,
        c: &Creds,
        h: &Handle,
        offset: u64,
        data: &[u8],
        stable: Stability,
    ) -> Result<Stability> {
        let (o, f) = self.writable(h, offset, data.len())?;
        self.write_as(c, &o, &f, offset, data)?;
        // Concurrent stable writes to the file share one sync.
        match stable {
            Stability::FileSync => f.sync_all()?,
            Stability::DataSync => f.sync_data()?,
            Stability::Unstable => {}
        }
        // The ctime from before the write serves: if the write moved it,
        // the next status read sees a new ctime and the change attribute
        // moves with it; if not (within one tick), the bump moves it.
        self.touched(&o.st);
        Ok(stable)
    }

    /// The attributes from the status the write resolves anyway (taken
    /// before writing, as `getattr` would have given them then), and
    /// from the one it must read after: two `fstat`s, not four.
    fn write_wcc(&self, c: &Creds, h: &Handle, offset: u64, data: &[u8]) -> Result<(Attr, Attr)> {
        let (o, f) = self.writable(h, offset, data.len())?;
        let before = self.attr(&o.st);
        self.write_as(c, &o, &f, offset, data)?;
        let after = sys::fstat(f.as_raw_fd())?;
        self.touched(&after);
        Ok((before, self.attr(&after)))
    }

    fn commit(&self, h: &Handle) -> Result<()> {
        let o = self.resolve(h)?;
        o.want_regular()?;
        let f = self.file_for(h, &o, false)?;
        f.sync_all()?;
        Ok(())
    }

    fn create_file(
        &self,
        c: &Creds,
        dir: &Handle,
        name: &[u8],
        how: CreateMode,
        set: &SetAttr,
    ) -> Result<(Handle, Attr, bool)> {
        let cn = cname(name)?;
        let d = self.resolve(dir)?;
        if !d.is_dir() {
            return Err(Errno(libc::ENOTDIR));
        }
        let mode = set.mode.unwrap_or(0o644) & 0o7777;
        // A few attempts in case the name vanishes between EEXIST and the
        // lookup of the existing file.
        for _ in 0..4 {
            let created = {
                let _g = self.as_caller(c)?;
                sys::openat(
                    d.raw(),
                    &cn,
                    libc::O_CREAT | libc::O_EXCL | libc::O_RDWR | libc::O_NOFOLLOW,
                    mode,
                )
            };
            match created {
                Ok(fd) => return self.finish_new_file(c, dir, &d, &cn, fd, how, set, mode),
                Err(Errno(libc::EEXIST)) if how != CreateMode::Guarded => {}
                Err(e) => return Err(e),
            }
            let existing = {
                let _g = self.as_caller(c)?;
                sys::openat(d.raw(), &cn, libc::O_PATH | libc::O_NOFOLLOW, 0)
            };
            let fd = match existing {
                Ok(fd) => fd,
                Err(Errno(libc::ENOENT)) => continue,
                Err(e) => return Err(e),
            };
            let (h, a, o) = self.adopt(fd)?;
            self.note_child(dir, &cn, &h);
            match o.fmt() {
                libc::S_IFREG => {}
                libc::S_IFDIR => return Err(Errno(libc::EISDIR)),
                libc::S_IFLNK => return Err(Errno(libc::ELOOP)),
                _ => return Err(Errno(libc::EEXIST)),
            }
            return match how {
                CreateMode::Exclusive(v) => {
                    let (at, mt) = verifier_times(&v);
                    if o.st.st_atime == at && o.st.st_mtime == mt {
                        Ok((h, a, false))
                    } else {
                        Err(Errno(libc::EEXIST))
                    }
                }
                _ => match set.size {
                    Some(size) => {
                        self.truncate(c, &h, &o, size)?;
                        self.make_durable(o.raw(), o.fmt())?;
                        let st = sys::fstat(o.raw())?;
                        self.touched(&st);
                        Ok((h, self.attr(&st), false))
                    }
                    None => Ok((h, a, false)),
                },
            };
        }
        Err(Errno(libc::EEXIST))
    }

    fn create(
        &self,
        c: &Creds,
        dir: &Handle,
        name: &[u8],
        kind: &CreateKind,
        set: &SetAttr,
    ) -> Result<(Handle, Attr)> {
        let cn = cname(name)?;
        let d = self.resolve(dir)?;
        if !d.is_dir() {
            return Err(Errno(libc::ENOTDIR));
        }
        let mode = |default: u32| set.mode.unwrap_or(default) & 0o7777;
        let (perm, is_dir, is_link) = match kind {
            CreateKind::Directory => (mode(0o755), true, false),
            CreateKind::Symlink(_) => (0o777, false, true),
            _ => (mode(0o644), false, false),
        };
        {
            let _g = self.as_caller(c)?;
            match kind {
                CreateKind::Directory => sys::mkdirat(d.raw(), &cn, perm)?,
                CreateKind::Symlink(target) => {
                    let t = CString::new(target.as_ref()).map_err(|_| Errno(libc::EINVAL))?;
                    sys::symlinkat(&t, d.raw(), &cn)?
                }
                CreateKind::Block(ma, mi) => {
                    sys::mknodat(d.raw(), &cn, libc::S_IFBLK | perm, libc::makedev(*ma, *mi))?
                }
                CreateKind::Char(ma, mi) => {
                    sys::mknodat(d.raw(), &cn, libc::S_IFCHR | perm, libc::makedev(*ma, *mi))?
                }
                CreateKind::Socket => sys::mknodat(d.raw(), &cn, libc::S_IFSOCK | perm, 0)?,
                CreateKind::Fifo => sys::mknodat(d.raw(), &cn, libc::S_IFIFO | perm, 0)?,
            }
        }
        let made = (|| -> Result<(Handle, Attr)> {
            let fd = {
                let _g = self.as_caller(c)?;
                sys::openat(d.raw(), &cn, libc::O_PATH | libc::O_NOFOLLOW, 0)?
            };
            {
                let _g = self.as_caller(c)?;
                self.apply_new(fd.as_raw_fd(), is_link, perm, set, true)?;
            }
            // The new object (a directory's own entries), then its name.
            if is_dir {
                self.make_durable(fd.as_raw_fd(), libc::S_IFDIR)?;
            }
            if !(is_dir && self.sync_keeps_new_name) {
                self.make_durable(d.raw(), libc::S_IFDIR)?;
            }
            let (h, a, _) = self.adopt(fd)?;
            Ok((h, a))
        })();
        match made {
            Ok((h, a)) => {
                self.note_child(dir, &cn, &h);
                self.touched_fd(d.raw());
                Ok((h, a))
            }
            Err(e) => {
                if let Ok(_g) = self.as_caller(c) {
                    let flags = if is_dir { libc::AT_REMOVEDIR } else { 0 };
                    let _ = sys::unlinkat(d.raw(), &cn, flags);
                }
                Err(e)
            }
        }
    }

    fn remove(&self, c: &Creds, dir: &Handle, name: &[u8]) -> Result<()> {
        self.remove_keeping(c, dir, name, &|_| false)
    }

    fn keeps_unlinked(&self) -> bool {
        true
    }

    fn remove_keeping(
        &self,
        c: &Creds,
        dir: &Handle,
        name: &[u8],
        keep: &dyn Fn(&Handle) -> bool,
    ) -> Result<()> {
        let cn = cname(name)?;
        let d = self.resolve(dir)?;
        let victim = self.handle_at(d.raw(), &cn, 0).ok();
        let held = self.hold_victim(d.raw(), &cn, victim.as_ref(), keep);
        {
            let _g = self.as_caller(c)?;
            match sys::unlinkat(d.raw(), &cn, 0) {
                Err(Errno(libc::EISDIR)) => sys::unlinkat(d.raw(), &cn, libc::AT_REMOVEDIR)?,
                r => r?,
            }
        }
        self.keep_removed(held);
        if let Some(v) = victim {
            self.forget(&v);
            if self.mapped() {
                lock(&self.paths).remove(&v);
            }
        }
        self.touched_fd(d.raw());
        self.make_durable(d.raw(), libc::S_IFDIR)
    }

    fn rename(
        &self,
        c: &Creds,
        from: &Handle,
        from_name: &[u8],
        to: &Handle,
        to_name: &[u8],
    ) -> Result<()> {
        self.rename_keeping(c, (from, from_name), (to, to_name), &|_| false)
    }

    fn rename_keeping(
        &self,
        c: &Creds,
        (from, from_name): (&Handle, &[u8]),
        (to, to_name): (&Handle, &[u8]),
        keep: &dyn Fn(&Handle) -> bool,
    ) -> Result<()> {
        let cf = cname(from_name)?;
        let ct = cname(to_name)?;
        let fd = self.resolve(from)?;
        let td = self.resolve(to)?;
        let moved = self.handle_at(fd.raw(), &cf, 0).ok();
        let victim = self.handle_at(td.raw(), &ct, 0).ok();
        let held = match (&moved, &victim) {
            (Some(m), Some(v)) if m == v => None,
            _ => self.hold_victim(td.raw(), &ct, victim.as_ref(), keep),
        };
        {
            let _g = self.as_caller(c)?;
            sys::renameat(fd.raw(), &cf, td.raw(), &ct)?;
        }
        self.keep_removed(held);
        if let Some(v) = victim.filter(|v| Some(v) != moved.as_ref()) {
            self.forget(&v);
            if self.mapped() {
                lock(&self.paths).remove(&v);
            }
        }
        let moved_st = sys::fstatat(td.raw(), &ct, libc::AT_SYMLINK_NOFOLLOW).ok();
        if self.mapped() {
            if let (Some(m), Some(fr), Some(tr)) = (&moved, self.rel_of(from), self.rel_of(to)) {
                let old = fr.join(OsStr::from_bytes(cf.to_bytes()));
                let new = tr.join(OsStr::from_bytes(ct.to_bytes()));
                let mut paths = lock(&self.paths);
                paths.insert(m.clone(), new.clone());
                let is_dir = moved_st
                    .as_ref()
                    .is_some_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR);
                if is_dir {
                    for (_, p) in paths.iter_mut() {
                        if let Ok(rest) = p.strip_prefix(&old) {
                            if !rest.as_os_str().is_empty() {
                                *p = new.join(rest);
                            }
                        }
                    }
                }
            }
        }
        self.touched_fd(fd.raw());
        if from != to {
            self.touched_fd(td.raw());
        }
        if let Some(st) = moved_st {
            self.touched(&st);
        }
        // Both names: the new one first, so that a crash between leaves
        // the object under its new name at least.
        self.make_durable(td.raw(), libc::S_IFDIR)?;
        if from != to {
            self.make_durable(fd.raw(), libc::S_IFDIR)?;
        }
        Ok(())
    }

    fn link(&self, c: &Creds, file: &Handle, dir: &Handle, name: &[u8]) -> Result<()> {
        let cn = cname(name)?;
        let f = self.resolve(file)?;
        let d = self.resolve(dir)?;
        if f.is_dir() {
            return Err(Errno(libc::EISDIR));
        }
        {
            let _g = self.as_caller(c)?;
            let p = sys::proc_path(f.raw());
            sys::linkat(libc::AT_FDCWD, &p, d.raw(), &cn, libc::AT_SYMLINK_FOLLOW)?;
        }
        self.note_child(dir, &cn, file);
        self.touched_fd(d.raw());
        self.touched_fd(f.raw());
        // The new name, and the file's link count.
        self.make_durable(d.raw(), libc::S_IFDIR)?;
        self.make_durable(f.raw(), f.fmt())
    }

    fn readlink(&self, _c: &Creds, h: &Handle) -> Result<Bytes> {
        let o = self.resolve(h)?;
        if o.fmt() != libc::S_IFLNK {
            return Err(Errno(libc::EINVAL));
        }
        Ok(Bytes::from(sys::readlinkat(o.raw(), EMPTY)?))
    }

    fn readdir(
        &self,
        c: &Creds,
        dir: &Handle,
        cookie: u64,
        with_attrs: bool,
        each: &mut dyn FnMut(DirEntry) -> bool,
    ) -> Result<bool> {
        let d = self.resolve(dir)?;
        if !d.is_dir() {
            return Err(Errno(libc::ENOTDIR));
        }
        let rel = if with_attrs && self.mapped() {
            self.rel_of(dir)
        } else {
            None
        };
        let (rd, searchable) = {
            let _g = self.as_caller(c)?;
            // Reopen through /proc: only read permission on the directory
            // is checked, as for READDIR.
            let rd = sys::openat(
                libc::AT_FDCWD,
                &sys::proc_path(d.raw()),
                libc::O_RDONLY | libc::O_DIRECTORY,
                0,
            )?;
            // Describing entries takes search permission: check it once,
            // then stat as the server (the outcome is the same) so the
            // callback never runs with the caller's identity.
            (rd, !with_attrs || sys::faccess(d.raw(), libc::X_OK).is_ok())
        };
        if cookie == 0 && !with_attrs {
            if let Some(l) = self.list_settled(rd.as_raw_fd(), &d.st)? {
                lock(&self.listings).insert(dir.clone(), l.clone());
                return Ok(serve_listing(&l, 0, each).unwrap_or(true));
            }
        }
        if cookie != 0 {
            sys::lseek_set(rd.as_raw_fd(), decode_cookie(cookie))?;
        }
        let mut buf = sys::DentBuf::new(32 << 10);
        loop {
            if !buf.fill(rd.as_raw_fd())? {
                return Ok(true);
            }
            while let Some(e) = buf.next_entry() {
                if e.name == b"." || e.name == b".." {
                    continue;
                }
                let obj = if with_attrs && searchable {
                    match self.entry_obj(rd.as_raw_fd(), e.name) {
                        Ok(o) => o,
                        Err(_) => continue,
                    }
                } else {
                    None
                };
                if let (Some(r), Some((h, _))) = (&rel, &obj) {
                    lock(&self.paths).insert(h.clone(), r.join(OsStr::from_bytes(e.name)));
                }
                let entry = DirEntry {
                    name: Bytes::copy_from_slice(e.name),
                    cookie: encode_cookie(e.off),
                    fileid: e.ino,
                    ftype: dirent_type(e.dtype),
                    obj,
                };
                if !each(entry) {
                    return Ok(false);
                }
            }
        }
    }

    /// From the cached listing of a directory found without blocking
    /// ([`Self::dir_nowait`]), if the directory is as it was when listed
    /// and the caller may read it without a permission system call (root
    /// with credentials switched, or its owner with read permission, or
    /// credentials off).
    fn readdir_nowait(
        &self,
        c: &Creds,
        dir: &Handle,
        cookie: u64,
        each: &mut dyn FnMut(DirEntry) -> bool,
    ) -> Option<Result<bool>> {
        let (l, _) = self.current_listing(c, dir)?;
        serve_listing(&l, cookie, each).map(Ok)
    }

    /// As [`Self::readdir_nowait`], the directory's status read once for
    /// its attributes too, and its parent from the listing's "..".
    fn list_dir_nowait(
        &self,
        c: &Creds,
        dir: &Handle,
        cookie: u64,
        each: &mut dyn FnMut(DirEntry) -> bool,
    ) -> Option<Result<DirListed>> {
        let (l, st) = self.current_listing(c, dir)?;
        let parent_fileid = if self.is_root(&st) {
            st.st_ino
        } else if l.dotdot != 0 {
            l.dotdot
        } else {
            return None;
        };
        let eof = serve_listing(&l, cookie, each)?;
        Some(Ok(DirListed {
            eof,
            attr: self.attr(&st),
            parent_fileid,
        }))
    }

    fn allocate(&self, c: &Creds, h: &Handle, offset: u64, len: u64) -> Result<()> {
        self.fallocate_range(c, h, offset, len, 0)
    }

    fn deallocate(&self, c: &Creds, h: &Handle, offset: u64, len: u64) -> Result<()> {
        let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        self.fallocate_range(c, h, offset, len, mode)
    }

    fn seek(&self, c: &Creds, h: &Handle, offset: u64, what: SeekWhat) -> Result<Option<u64>> {
        self.seek_content(c, h, offset, what)
    }

    fn copy(&self, c: &Creds, s: &Handle, so: u64, d: &Handle, dof: u64, n: u64) -> Result<u64> {
        self.copy_range(c, s, so, d, dof, n)
    }

    fn clone_range(
        &self,
        c: &Creds,
        s: &Handle,
        so: u64,
        d: &Handle,
        dof: u64,
        n: u64,
    ) -> Result<()> {
        self.clone_file_range(c, s, so, d, dof, n)
    }

    fn shares_locks(&self) -> bool {
        true
    }

    fn share_lock(
        &self,
        h: &Handle,
        owner: crate::LockOwner,
        range: (u64, u64),
        write: bool,
        writable: bool,
    ) -> crate::ShareLock {
        let ask = locks::Ask {
            group: owner.group,
            owner: owner.name,
            range,
            write,
            writable,
        };
        self.lock_descs.lock(h, &|| self.resolve(h), ask)
    }

    fn share_reopen(&self, h: &Handle, owner: crate::LockOwner, held: &[(u64, u64, bool)]) -> bool {
        self.lock_descs
            .reopen(h, &|| self.resolve(h), owner.name, held)
    }

    fn share_unlock(&self, h: &Handle, owner: crate::LockOwner, range: (u64, u64)) {
        self.lock_descs.unlock(h, owner.name, range);
    }

    fn share_release(&self, h: &Handle, owner: crate::LockOwner) {
        self.lock_descs.release(h, owner.name);
    }

    fn share_release_all(&self) {
        self.lock_descs.release_all();
    }

    fn share_test(
        &self,
        h: &Handle,
        owner: crate::LockOwner,
        range: (u64, u64),
        write: bool,
    ) -> Option<crate::KernelLock> {
        self.lock_descs
            .test(h, &|| self.resolve(h), owner.name, range, write)
    }

    fn guard_local_writes(&self, h: &Handle, on_break: crate::lease::OnBreak) -> Result<bool> {
        let o = self.resolve(h)?;
        if o.fmt() != libc::S_IFREG {
            return Ok(false);
        }
        let mut leases = lock(&self.leases);
        if let Some((_, n)) = leases.get_mut(h) {
            *n += 1;
            return Ok(true);
        }
        // The server's own writable descriptor of the file would forbid
        // the lease: let it go (one in use now still does).
        let mut files = lock(&self.files);
        if files.get(h).is_some_and(|f| f.write) {
            files.remove(h);
        }
        drop(files);
        match crate::lease::take(&sys::proc_path(o.raw()), on_break)? {
            Some(l) => {
                leases.insert(h.clone(), (l, 1));
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn xattrs(&self) -> bool {
        true
    }

    fn getxattr(&self, c: &Creds, h: &Handle, name: &[u8]) -> Result<Bytes> {
        self.get_xattr(c, h, name)
    }

    fn setxattr(
        &self,
        c: &Creds,
        h: &Handle,
        name: &[u8],
        value: &[u8],
        how: crate::XattrHow,
    ) -> Result<()> {
        self.set_xattr(c, h, name, value, how)
    }

    fn listxattrs(&self, c: &Creds, h: &Handle) -> Result<Vec<Bytes>> {
        self.list_xattrs(c, h)
    }

    fn removexattr(&self, c: &Creds, h: &Handle, name: &[u8]) -> Result<()> {
        self.remove_xattr(c, h, name)
    }

    fn acls(&self) -> bool {
        true
    }

    fn get_acl(
        &self,
        c: &Creds,
        h: &Handle,
        default: bool,
    ) -> Result<Option<crate::acl::PosixAcl>> {
        self.get_posix_acl(c, h, default)
    }

    fn sync_counts(&self) -> Option<crate::SyncCounts> {
        let changes = self.metadata_syncs();
        let syncs = match self.group_sync_counts() {
            Some((_, own, whole)) => own + whole,
            None => changes,
        };
        Some(crate::SyncCounts { changes, syncs })
    }

    fn get_acl_nowait(
        &self,
        h: &Handle,
        default: bool,
        a: &Attr,
    ) -> Option<Option<crate::acl::PosixAcl>> {
        self.known_posix_acl(h, default, a)
    }

    fn set_acl(
        &self,
        c: &Creds,
        h: &Handle,
        default: bool,
        acl: Option<&crate::acl::PosixAcl>,
    ) -> Result<()> {
        self.set_posix_acl(c, h, default, acl)
    }

    fn watch_local_changes(
        &self,
        h: &Handle,
        hold_opens: bool,
        on_change: crate::watch::OnChange,
    ) -> Result<bool> {
        let o = self.resolve(h)?;
        let mut watches = lock(&self.watches);
        if let Some((w, n)) = watches.get_mut(h) {
            if hold_opens && !w.hold_opens() {
                return Ok(false);
            }
            *n += 1;
            return Ok(true);
        }
        match crate::watch::watch(&o.fd, o.is_dir(), hold_opens, on_change) {
            Ok(Some(w)) => {
                watches.insert(h.clone(), (w, 1));
                Ok(true)
            }
            Ok(None) => Ok(false),
            Err(e) => {
                static SAID: std::sync::Once = std::sync::Once::new();
                SAID.call_once(|| {
                    tracing::warn!(
                        "local changes cannot be watched ({e}): no delegations of what cannot be"
                    )
                });
                Ok(false)
            }
        }
    }

    fn unwatch_local_changes(&self, h: &Handle) {
        let mut watches = lock(&self.watches);
        if let Some((_, n)) = watches.get_mut(h) {
            *n -= 1;
            if *n == 0 {
                watches.remove(h);
            }
        }
    }

    fn kept_unlinked(&self) -> Vec<Handle> {
        if !self.kept_any.load(Ordering::Acquire) {
            return Vec::new();
        }
        lock(&self.kept).keys().cloned().collect()
    }

    fn release_unlinked(&self, h: &Handle) {
        let mut kept = lock(&self.kept);
        let fd = kept.remove(h);
        self.kept_any.store(!kept.is_empty(), Ordering::Release);
        drop(kept);
        // Its cached descriptors too, so that the inode can go now.
        if fd.is_some() {
            self.forget(h);
        }
    }

    fn unguard_local_writes(&self, h: &Handle) {
        let mut leases = lock(&self.leases);
        if let Some((_, n)) = leases.get_mut(h) {
            *n -= 1;
            if *n == 0 {
                leases.remove(h);
            }
        }
    }

    fn fsstat(&self, h: &Handle) -> Result<FsStat> {
        let o = self.resolve(h)?;
        let s = sys::fstatfs(o.raw())?;
        let bsize = if s.f_frsize > 0 {
            s.f_frsize
        } else {
            s.f_bsize
        }
        .max(0) as u64;
        Ok(FsStat {
            total_bytes: (s.f_blocks as u64).saturating_mul(bsize),
            free_bytes: (s.f_bfree as u64).saturating_mul(bsize),
            avail_bytes: (s.f_bavail as u64).saturating_mul(bsize),
            total_files: s.f_files as u64,
            free_files: s.f_ffree as u64,
            avail_files: s.f_ffree as u64,
            max_name: s.f_namelen.clamp(0, u32::MAX as i64) as u32,
        })
    }
}
