//! crashfs: a FUSE file system held in memory that can lose power.
//!
//! It is the layer under an export that issue 11's crash harness needs:
//! every write and every name change reaches the kernel's callers at once
//! (so the server above it works as on any file system), but only what
//! was made durable by `fsync`/`fdatasync` of the file, or of the
//! directory for names, survives [`Mounted::power_loss`]
//! ([`model::Model`] has the rules). The mount stays up across a power
//! loss, so file handles the kernel gave out before it (by
//! `name_to_handle_at`) still open what survived.
//!
//! Nothing is cached by the kernel: entries and attributes are given with
//! a time to live of zero, and files are opened for direct I/O, so after a
//! power loss the next call sees what is left.
//!
//! Mounting needs root (the `mount(2)` of a `fuse` file system) and
//! `/dev/fuse`.

pub mod model;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use fuser::{
    FileAttr, FileType, Filesystem, KernelConfig, MountOption, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow,
};

use model::{Ino, Model, Node};

/// Entries and attributes are not cached by the kernel.
const TTL: Duration = Duration::ZERO;

/// What the FUSE session and the harness share.
#[derive(Clone, Default)]
pub struct Shared(Arc<Mutex<Model>>);

impl Shared {
    pub fn lock(&self) -> MutexGuard<'_, Model> {
        // Every model call checks before it changes anything.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A mounted crashfs; unmounted when dropped.
pub struct Mounted {
    shared: Shared,
    path: PathBuf,
    _session: fuser::BackgroundSession,
}

impl Mounted {
    /// Mounts an empty crashfs on the directory `path`.
    pub fn mount(path: &Path) -> std::io::Result<Mounted> {
        Self::mount_with(path, Duration::ZERO)
    }

    /// [`Mounted::mount`] on a slow disk: each fsync or fdatasync is
    /// answered `sync_delay` after the one before it finished (the syncs
    /// queue for one disk arm, as on the Legato paper's server), while
    /// everything else is answered at once. What a sync makes durable is
    /// durable from the call on; only its answer waits.
    pub fn mount_with(path: &Path, sync_delay: Duration) -> std::io::Result<Mounted> {
        let shared = Shared::default();
        let disk = (!sync_delay.is_zero()).then(|| Disk::start(sync_delay));
        let fs = CrashFs {
            m: shared.clone(),
            disk,
        };
        let opts = [
            MountOption::FSName("crashfs".into()),
            MountOption::AllowOther,
            MountOption::DefaultPermissions,
            MountOption::RW,
            MountOption::Dev,
            MountOption::Suid,
        ];
        let session = fuser::spawn_mount2(fs, path, &opts)?;
        Ok(Mounted {
            shared,
            path: path.to_path_buf(),
            _session: session,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Drops everything not made durable. Stop the programs using the
    /// file system first: a descriptor open across the loss reads what
    /// survived, or ENOENT.
    pub fn power_loss(&self) {
        self.shared.lock().power_loss();
    }

    pub fn stats(&self) -> model::Stats {
        self.shared.lock().stats
    }
}

struct CrashFs {
    m: Shared,
    /// Where syncs are answered after their delay (None: at once).
    disk: Option<Disk>,
}

/// The slow disk's queue: one thread answers each sync in turn, after
/// the delay (the FUSE session goes on meanwhile).
struct Disk {
    queue: std::sync::mpsc::Sender<(model::Result<()>, ReplyEmpty)>,
}

impl Disk {
    fn start(delay: Duration) -> Disk {
        let (queue, rx) = std::sync::mpsc::channel::<(model::Result<()>, ReplyEmpty)>();
        std::thread::spawn(move || {
            for (r, reply) in rx {
                std::thread::sleep(delay);
                CrashFs::empty(r, reply);
            }
        });
        Disk { queue }
    }
}

fn kind_of(n: &Node) -> FileType {
    match n.mode & libc::S_IFMT {
        libc::S_IFDIR => FileType::Directory,
        libc::S_IFLNK => FileType::Symlink,
        libc::S_IFIFO => FileType::NamedPipe,
        libc::S_IFSOCK => FileType::Socket,
        libc::S_IFCHR => FileType::CharDevice,
        libc::S_IFBLK => FileType::BlockDevice,
        _ => FileType::RegularFile,
    }
}

fn attr_of(ino: Ino, n: &Node) -> FileAttr {
    let size = n.size();
    FileAttr {
        ino,
        size,
        blocks: size.div_ceil(512),
        atime: n.atime,
        mtime: n.mtime,
        ctime: n.ctime,
        crtime: n.ctime,
        kind: kind_of(n),
        perm: (n.mode & 0o7777) as u16,
        nlink: n.nlink,
        uid: n.uid,
        gid: n.gid,
        rdev: n.rdev,
        blksize: 4096,
        flags: 0,
    }
}

fn time(t: TimeOrNow) -> SystemTime {
    match t {
        TimeOrNow::SpecificTime(t) => t,
        TimeOrNow::Now => SystemTime::now(),
    }
}

impl CrashFs {
    fn entry(&self, r: model::Result<Ino>, reply: ReplyEntry) {
        let m = self.m.lock();
        match r.and_then(|ino| m.get(ino).map(|n| attr_of(ino, n))) {
            Ok(a) => reply.entry(&TTL, &a, 0),
            Err(e) => reply.error(e),
        }
    }

    /// Answers a sync: at once, or through the slow disk's queue.
    fn synced(&self, r: model::Result<()>, reply: ReplyEmpty) {
        match &self.disk {
            Some(d) => {
                if let Err(std::sync::mpsc::SendError((r, reply))) = d.queue.send((r, reply)) {
                    Self::empty(r, reply);
                }
            }
            None => Self::empty(r, reply),
        }
    }

    fn empty(r: model::Result<()>, reply: ReplyEmpty) {
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn make(
        &self,
        req: &Request<'_>,
        parent: Ino,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        target: Option<&[u8]>,
    ) -> model::Result<Ino> {
        let mut m = self.m.lock();
        // New files take the directory's group when it is set-group-ID.
        let d = m.get(parent)?;
        let gid = if d.mode & libc::S_ISGID != 0 {
            d.gid
        } else {
            req.gid()
        };
        let perm = if mode & libc::S_IFMT == libc::S_IFLNK {
            0o777
        } else {
            mode & 0o7777 & !umask
        };
        m.make(
            parent,
            name.as_bytes(),
            (mode & libc::S_IFMT) | perm,
            req.uid(),
            gid,
            rdev,
            target,
        )
    }
}

impl Filesystem for CrashFs {
    fn init(&mut self, _req: &Request<'_>, config: &mut KernelConfig) -> Result<(), libc::c_int> {
        // Lookups of "." and "..": open_by_handle_at of an inode the
        // kernel no longer caches (a server restarted over this mount).
        let _ = config.add_capabilities(fuser::consts::FUSE_EXPORT_SUPPORT);
        Ok(())
    }

    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        let r = self.m.lock().lookup(parent, name.as_bytes());
        self.entry(r, reply);
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        match self.m.lock().get(ino) {
            Ok(n) => reply.attr(&TTL, &attr_of(ino, n)),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<u64>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        let mut m = self.m.lock();
        let r = m
            .setattr(ino, mode, uid, gid, size, atime.map(time), mtime.map(time))
            .and_then(|()| m.get(ino).map(|n| attr_of(ino, n)));
        match r {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&mut self, _req: &Request<'_>, ino: u64, reply: ReplyData) {
        match self.m.lock().readlink(ino) {
            Ok(t) => reply.data(t),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let r = self.make(req, parent, name, mode, umask, rdev, None);
        self.entry(r, reply);
    }

    fn mkdir(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let r = self.make(req, parent, name, libc::S_IFDIR | mode, umask, 0, None);
        self.entry(r, reply);
    }

    fn unlink(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        Self::empty(self.m.lock().remove(parent, name.as_bytes(), false), reply);
    }

    fn rmdir(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        Self::empty(self.m.lock().remove(parent, name.as_bytes(), true), reply);
    }

    fn symlink(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let t = target.as_os_str().as_bytes();
        let r = self.make(req, parent, link_name, libc::S_IFLNK, 0, 0, Some(t));
        self.entry(r, reply);
    }

    fn rename(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
        reply: ReplyEmpty,
    ) {
        if flags != 0 {
            // RENAME_NOREPLACE, RENAME_EXCHANGE, RENAME_WHITEOUT.
            return reply.error(libc::EINVAL);
        }
        let r = self
            .m
            .lock()
            .rename(parent, name.as_bytes(), newparent, newname.as_bytes());
        Self::empty(r, reply);
    }

    fn link(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        newparent: u64,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let r = self
            .m
            .lock()
            .link(ino, newparent, newname.as_bytes())
            .map(|()| ino);
        self.entry(r, reply);
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        let mut m = self.m.lock();
        match m.get(ino) {
            Ok(_) => {
                m.opened(ino);
                reply.opened(0, fuser::consts::FOPEN_DIRECT_IO);
            }
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &mut self,
        req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        let r = self.make(req, parent, name, libc::S_IFREG | mode, umask, 0, None);
        let mut m = self.m.lock();
        match r.and_then(|ino| m.get(ino).map(|n| attr_of(ino, n))) {
            Ok(a) => {
                m.opened(a.ino);
                reply.created(&TTL, &a, 0, 0, fuser::consts::FOPEN_DIRECT_IO);
            }
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyData,
    ) {
        match self.m.lock().read(ino, offset.max(0) as u64, size) {
            Ok(d) => reply.data(d),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        data: &[u8],
        _write_flags: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyWrite,
    ) {
        match self.m.lock().write(ino, offset.max(0) as u64, data) {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(e),
        }
    }

    fn flush(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _lo: u64, reply: ReplyEmpty) {
        reply.ok();
    }

    fn release(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        _flags: i32,
        _lock_owner: Option<u64>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.m.lock().closed(ino);
        reply.ok();
    }

    fn fsync(&mut self, _req: &Request<'_>, ino: u64, _fh: u64, _ds: bool, reply: ReplyEmpty) {
        let r = self.m.lock().sync(ino);
        self.synced(r, reply);
    }

    fn opendir(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        match self.m.lock().list(ino) {
            Ok(_) => reply.opened(0, 0),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        mut reply: ReplyDirectory,
    ) {
        let m = self.m.lock();
        let list = match m.list(ino) {
            Ok(l) => l,
            Err(e) => return reply.error(e),
        };
        // The offset of an entry is its index + 1 in name order: a
        // listing resumed after a change may skip or repeat a name, as on
        // any file system without stable cookies.
        for (i, (name, child)) in list.iter().enumerate().skip(offset.max(0) as usize) {
            let kind = m.get(*child).map_or(FileType::RegularFile, kind_of);
            if reply.add(*child, i as i64 + 1, kind, OsStr::from_bytes(name)) {
                break;
            }
        }
        reply.ok();
    }

    fn fsyncdir(&mut self, _req: &Request<'_>, ino: u64, _fh: u64, _ds: bool, reply: ReplyEmpty) {
        let r = self.m.lock().sync(ino);
        self.synced(r, reply);
    }

    fn statfs(&mut self, _req: &Request<'_>, _ino: u64, reply: ReplyStatfs) {
        let files = self.m.lock().inodes() as u64;
        let blocks = Model::MAX_FILE / 4096 * 16;
        reply.statfs(
            blocks,
            blocks / 2,
            blocks / 2,
            files + 1_000_000,
            1_000_000,
            4096,
            255,
            4096,
        );
    }

    fn fallocate(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        length: i64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        if offset < 0 || length <= 0 {
            return reply.error(libc::EINVAL);
        }
        let r = self
            .m
            .lock()
            .fallocate(ino, offset as u64, length as u64, mode);
        Self::empty(r, reply);
    }
}
