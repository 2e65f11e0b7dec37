//! fanotify(7) watches: how the server learns that a process other than
//! itself changed a file or directory it has delegated to an NFS client
//! (RFC 8881 §10.4.6: such a change must recall the delegation, as a
//! conflicting NFS request does).
//!
//! Two fanotify groups, made once per process:
//!
//! * A notification group reporting file identifiers (`FAN_REPORT_FID`),
//!   with an inode mark per watched object: for a file its attribute
//!   changes (chmod, chown, utimes, extended attributes, its link count:
//!   a link, an unlink, a rename over it), writes and truncations, its
//!   rename and its deletion; for a directory, entries created, removed or
//!   renamed in it, its attributes, its rename and deletion. Each event
//!   names the object by its file handle and the acting process by its
//!   pid: the server's own changes (its pid) are not reported. These come
//!   after the fact: the kernel cannot hold a rename or a chmod back for a
//!   watcher, so the callback recalls at once.
//! * A permission group (`FAN_CLASS_CONTENT`, which needs CAP_SYS_ADMIN),
//!   marking the files whose watch holds opens (write delegations): a
//!   local `open` of such a file, for reading or writing, waits until the
//!   watch ends (the delegation is returned, with the holder's cached
//!   writes written) or the kernel's lease-break time passes
//!   (`/proc/sys/fs/lease-break-time`), as the Linux server holds a local
//!   opener on its write delegations. Without the capability, such opens
//!   are reported after the fact instead.
//!
//! One thread per group reads its events; callbacks run on it and must
//! not block (the server's spawn a task). A full event queue
//! (`FAN_Q_OVERFLOW`) calls every callback: a missed change must not keep
//! a stale delegation.

use std::collections::HashMap;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// What to call when a watched object changes (or is being opened).
pub type OnChange = Arc<dyn Fn() + Send + Sync>;

const FAN_MODIFY: u64 = 0x2;
const FAN_ATTRIB: u64 = 0x4;
const FAN_OPEN: u64 = 0x20;
const FAN_MOVED_FROM: u64 = 0x40;
const FAN_MOVED_TO: u64 = 0x80;
const FAN_CREATE: u64 = 0x100;
const FAN_DELETE: u64 = 0x200;
const FAN_DELETE_SELF: u64 = 0x400;
const FAN_MOVE_SELF: u64 = 0x800;
const FAN_Q_OVERFLOW: u64 = 0x4000;
const FAN_OPEN_PERM: u64 = 0x1_0000;
const FAN_ONDIR: u64 = 0x4000_0000;

const FAN_CLOEXEC: u32 = 0x1;
const FAN_CLASS_CONTENT: u32 = 0x4;
const FAN_REPORT_FID: u32 = 0x200;
const FAN_MARK_ADD: u32 = 0x1;
const FAN_MARK_REMOVE: u32 = 0x2;
const FAN_ALLOW: u32 = 0x1;
const FAN_EVENT_INFO_TYPE_FID: u8 = 1;
const FANOTIFY_METADATA_VERSION: u8 = 3;
/// `struct fanotify_event_metadata`: event_len, vers, reserved,
/// metadata_len, mask, fd, pid.
const METADATA_LEN: usize = 24;

/// What a file's mark reports.
const FILE_EVENTS: u64 = FAN_ATTRIB | FAN_MODIFY | FAN_MOVE_SELF | FAN_DELETE_SELF;
/// What a directory's mark reports.
const DIR_EVENTS: u64 = FAN_CREATE
    | FAN_DELETE
    | FAN_MOVED_FROM
    | FAN_MOVED_TO
    | FAN_ATTRIB
    | FAN_MOVE_SELF
    | FAN_DELETE_SELF
    | FAN_ONDIR;

/// How long the notification thread pauses between reads
/// ([`Watcher::read_notifications`]).
const COALESCE: Duration = Duration::from_millis(2);

/// An object's identity in events: its file system's id, then its file
/// handle's type and bytes.
type Key = Vec<u8>;

/// A watch of one object ([`watch`]); dropping it ends it.
pub struct Watch {
    key: Key,
    id: u64,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch").field("id", &self.id).finish()
    }
}

impl Watch {
    /// Makes this watch hold local opens too (see the module's
    /// documentation); false if it cannot.
    pub fn hold_opens(&self) -> bool {
        match watcher() {
            Ok(w) => w.set_hold(&self.key, self.id),
            Err(_) => false,
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Ok(w) = watcher() {
            w.unsubscribe(&self.key, self.id);
        }
    }
}

/// Watches the object open as `fd` (a directory when `dir`) for changes
/// by other processes, calling `on_change` for each; with `hold_opens`, a
/// local open of it is held (see the module's documentation). `fd` (an
/// `O_PATH` descriptor will do) is kept while the object is watched, to
/// name it when the mark goes. `Ok(None)`: it cannot be watched (its file
/// system has no file handles, or the kernel's mark limit is reached).
pub fn watch(
    fd: &Arc<OwnedFd>,
    dir: bool,
    hold_opens: bool,
    on_change: OnChange,
) -> io::Result<Option<Watch>> {
    let w = watcher()?;
    let Some((key, dev_ino)) = identify(fd.as_raw_fd()) else {
        return Ok(None);
    };
    let mut objs = w.lock();
    let id = objs.next_id;
    objs.next_id += 1;
    if !objs.by_key.contains_key(&key) {
        let path = fd.clone();
        let mask = if dir { DIR_EVENTS } else { FILE_EVENTS };
        if mark(&w.notif, FAN_MARK_ADD, mask, &path).is_err() {
            return Ok(None);
        }
        objs.by_ino.insert(dev_ino, key.clone());
        objs.by_key.insert(
            key.clone(),
            Obj {
                path,
                dir,
                dev_ino,
                subs: Vec::new(),
                held: Held::No,
                pending: Vec::new(),
            },
        );
    }
    let obj = objs.by_key.get_mut(&key).expect("inserted above");
    obj.subs.push(Sub {
        id,
        on_change,
        hold: false,
    });
    drop(objs);
    let watch = Watch { key, id };
    if hold_opens && !watch.hold_opens() {
        return Ok(None);
    }
    Ok(Some(watch))
}

/// How a watched object's opens are held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    No,
    /// Marked in the permission group: opens wait.
    Waiting,
    /// No permission group: opens are reported after the fact.
    Reported,
}

struct Sub {
    id: u64,
    on_change: OnChange,
    hold: bool,
}

struct Obj {
    path: Arc<OwnedFd>,
    dir: bool,
    dev_ino: (u64, u64),
    subs: Vec<Sub>,
    held: Held,
    /// Opens held (the permission event's descriptor) and until when.
    pending: Vec<(OwnedFd, Instant)>,
}

#[derive(Default)]
struct Objects {
    by_key: HashMap<Key, Obj>,
    /// (device, inode) → key, for permission events (which name the
    /// object by a descriptor, not a handle).
    by_ino: HashMap<(u64, u64), Key>,
    next_id: u64,
}

struct Watcher {
    notif: OwnedFd,
    perm: Option<OwnedFd>,
    me: i32,
    break_time: Duration,
    objs: Mutex<Objects>,
}

static WATCHER: OnceLock<Result<Watcher, i32>> = OnceLock::new();

fn watcher() -> io::Result<&'static Watcher> {
    let r = WATCHER.get_or_init(|| {
        let w = Watcher::new().map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
        Ok(w)
    });
    match r {
        Ok(w) => {
            start_threads(w);
            Ok(w)
        }
        Err(e) => Err(io::Error::from_raw_os_error(*e)),
    }
}

/// Starts the reading threads, once.
fn start_threads(w: &'static Watcher) {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let _ = std::thread::Builder::new()
            .name("fanotify".into())
            .spawn(move || w.read_notifications());
        if w.perm.is_some() {
            let _ = std::thread::Builder::new()
                .name("fanotify-perm".into())
                .spawn(move || w.read_permissions());
        }
    });
}

impl Watcher {
    fn new() -> io::Result<Watcher> {
        // SAFETY: plain system call; the result is checked.
        let n = unsafe {
            libc::fanotify_init(
                FAN_CLOEXEC | FAN_REPORT_FID,
                (libc::O_RDONLY | libc::O_CLOEXEC) as u32,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor we just made.
        let notif = unsafe { OwnedFd::from_raw_fd(n) };
        // SAFETY: as above.
        let p = unsafe {
            libc::fanotify_init(
                FAN_CLOEXEC | FAN_CLASS_CONTENT,
                (libc::O_RDONLY | libc::O_CLOEXEC | libc::O_LARGEFILE) as u32,
            )
        };
        // SAFETY: as above.
        let perm = (p >= 0).then(|| unsafe { OwnedFd::from_raw_fd(p) });
        let secs = std::fs::read_to_string("/proc/sys/fs/lease-break-time")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(45);
        Ok(Watcher {
            notif,
            perm,
            me: std::process::id() as i32,
            break_time: Duration::from_secs(secs.max(1)),
            objs: Mutex::new(Objects::default()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Objects> {
        self.objs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes subscription `id` of `key` hold opens.
    fn set_hold(&self, key: &Key, id: u64) -> bool {
        let mut objs = self.lock();
        let Some(obj) = objs.by_key.get_mut(key) else {
            return false;
        };
        if obj.dir {
            return false;
        }
        if obj.held == Held::No {
            let held = match &self.perm {
                Some(p) if mark(p, FAN_MARK_ADD, FAN_OPEN_PERM, &obj.path).is_ok() => Held::Waiting,
                _ if mark(&self.notif, FAN_MARK_ADD, FAN_OPEN, &obj.path).is_ok() => Held::Reported,
                _ => return false,
            };
            obj.held = held;
        }
        if let Some(s) = obj.subs.iter_mut().find(|s| s.id == id) {
            s.hold = true;
        }
        true
    }

    fn unsubscribe(&self, key: &Key, id: u64) {
        let mut objs = self.lock();
        let Some(obj) = objs.by_key.get_mut(key) else {
            return;
        };
        obj.subs.retain(|s| s.id != id);
        let still_held = obj.subs.iter().any(|s| s.hold);
        if !still_held {
            self.unhold(obj);
        }
        if obj.subs.is_empty() {
            let mask = if obj.dir { DIR_EVENTS } else { FILE_EVENTS };
            // Gone already if the object was deleted.
            let _ = mark(&self.notif, FAN_MARK_REMOVE, mask, &obj.path);
            let dev_ino = obj.dev_ino;
            objs.by_key.remove(key);
            if objs.by_ino.get(&dev_ino) == Some(key) {
                objs.by_ino.remove(&dev_ino);
            }
        }
    }

    /// Ends holding `obj`'s opens, letting those held go on.
    fn unhold(&self, obj: &mut Obj) {
        match obj.held {
            Held::No => {}
            Held::Waiting => {
                if let Some(p) = &self.perm {
                    let _ = mark(p, FAN_MARK_REMOVE, FAN_OPEN_PERM, &obj.path);
                }
            }
            Held::Reported => {
                let _ = mark(&self.notif, FAN_MARK_REMOVE, FAN_OPEN, &obj.path);
            }
        }
        obj.held = Held::No;
        for (fd, _) in obj.pending.drain(..) {
            self.allow(fd);
        }
    }

    /// Lets a held open go on.
    fn allow(&self, fd: OwnedFd) {
        let Some(p) = &self.perm else { return };
        let r = libc::fanotify_response {
            fd: fd.as_raw_fd(),
            response: FAN_ALLOW,
        };
        // SAFETY: writes the response struct from a live value.
        unsafe {
            libc::write(
                p.as_raw_fd(),
                (&r as *const libc::fanotify_response).cast(),
                std::mem::size_of::<libc::fanotify_response>(),
            )
        };
        drop(fd);
    }

    /// Every callback (after a lost event).
    fn everyone(&self) -> Vec<OnChange> {
        self.lock()
            .by_key
            .values()
            .flat_map(|o| o.subs.iter().map(|s| s.on_change.clone()))
            .collect()
    }

    fn read_notifications(&self) {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            // SAFETY: reads into a live buffer of its length.
            let n =
                unsafe { libc::read(self.notif.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                tracing::error!("fanotify: reading events: {e}; local changes are no longer seen");
                return;
            }
            let mut calls: Vec<OnChange> = Vec::new();
            for ev in Events::new(&buf[..n as usize]) {
                if ev.mask & FAN_Q_OVERFLOW != 0 {
                    tracing::warn!("fanotify: events lost; recalling every watched delegation");
                    calls.extend(self.everyone());
                    continue;
                }
                if ev.fd >= 0 {
                    // SAFETY: the kernel gave this event a descriptor of
                    // ours (not with FID reports; closed if ever).
                    drop(unsafe { OwnedFd::from_raw_fd(ev.fd) });
                }
                if ev.pid == self.me {
                    continue;
                }
                let Some(key) = ev.fid_key() else { continue };
                if let Some(o) = self.lock().by_key.get(&key) {
                    calls.extend(o.subs.iter().map(|s| s.on_change.clone()));
                }
            }
            for c in calls {
                c();
            }
            // Let events gather before the next read: the kernel merges
            // a queued event with a like one (the same object, actor and
            // kind), so the server's own writes to a file under a write
            // delegation, each reported, cost one event per pause rather
            // than a wake-up each. A local change waits this long more to
            // be recalled.
            std::thread::sleep(COALESCE);
        }
    }

    fn read_permissions(&self) {
        let Some(perm) = &self.perm else {
            return;
        };
        let mut buf = vec![0u8; 16 << 10];
        loop {
            let timeout = self.next_deadline().map_or(-1, |d| {
                d.saturating_duration_since(Instant::now())
                    .as_millis()
                    .clamp(1, i32::MAX as u128) as i32
            });
            // Only this thread adds held opens, so the nearest deadline
            // cannot come nearer while it waits.
            let mut fds = [libc::pollfd {
                fd: perm.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            }];
            // SAFETY: polls a live descriptor.
            let r = unsafe { libc::poll(fds.as_mut_ptr(), 1, timeout) };
            if r < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                tracing::error!("fanotify: polling: {}", io::Error::last_os_error());
                return;
            }
            if fds[0].revents != 0 {
                // SAFETY: reads into a live buffer of its length.
                let n = unsafe { libc::read(perm.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
                if n > 0 {
                    self.on_permissions(&buf[..n as usize]);
                }
            }
            self.expire();
        }
    }

    fn on_permissions(&self, events: &[u8]) {
        let mut calls: Vec<OnChange> = Vec::new();
        for ev in Events::new(events) {
            if ev.fd < 0 {
                continue;
            }
            // SAFETY: the kernel opened this descriptor for the event.
            let fd = unsafe { OwnedFd::from_raw_fd(ev.fd) };
            if ev.pid == self.me {
                self.allow(fd);
                continue;
            }
            let mut objs = self.lock();
            let key = fstat_dev_ino(fd.as_raw_fd()).and_then(|di| objs.by_ino.get(&di).cloned());
            let obj = key.and_then(|k| objs.by_key.get_mut(&k));
            match obj {
                Some(o) if o.held == Held::Waiting => {
                    calls.extend(o.subs.iter().map(|s| s.on_change.clone()));
                    o.pending.push((fd, Instant::now() + self.break_time));
                }
                _ => {
                    drop(objs);
                    self.allow(fd);
                }
            }
        }
        for c in calls {
            c();
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.lock()
            .by_key
            .values()
            .flat_map(|o| o.pending.iter().map(|(_, d)| *d))
            .min()
    }

    /// Lets opens held past the lease-break time go on.
    fn expire(&self) {
        let now = Instant::now();
        let mut due = Vec::new();
        for o in self.lock().by_key.values_mut() {
            let (gone, kept): (Vec<_>, Vec<_>) = o.pending.drain(..).partition(|(_, d)| *d <= now);
            o.pending = kept;
            due.extend(gone.into_iter().map(|(fd, _)| fd));
        }
        for fd in due {
            tracing::warn!("a local open waited the lease-break time for a delegation's return");
            self.allow(fd);
        }
    }
}

/// One event of a buffer read from a group.
struct Event<'a> {
    mask: u64,
    fd: i32,
    pid: i32,
    /// Its information records.
    info: &'a [u8],
}

impl Event<'_> {
    /// The key of the object a FID record names.
    fn fid_key(&self) -> Option<Key> {
        let mut rest = self.info;
        while rest.len() >= 4 {
            let (kind, len) = (rest[0], u16::from_ne_bytes([rest[2], rest[3]]) as usize);
            if len < 4 || len > rest.len() {
                return None;
            }
            let rec = &rest[4..len];
            if kind == FAN_EVENT_INFO_TYPE_FID && rec.len() >= 16 {
                // fsid (8), then struct file_handle: handle_bytes (4),
                // handle_type (4), f_handle.
                let bytes = u32::from_ne_bytes(rec[8..12].try_into().ok()?) as usize;
                let end = 16usize.checked_add(bytes)?;
                if end > rec.len() {
                    return None;
                }
                let mut key = Vec::with_capacity(12 + bytes);
                key.extend_from_slice(&rec[..8]);
                key.extend_from_slice(&rec[12..end]);
                return Some(key);
            }
            rest = &rest[len..];
        }
        None
    }
}

/// The events in a buffer read from a group (a malformed tail ends them).
struct Events<'a> {
    rest: &'a [u8],
}

impl<'a> Events<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Events { rest: buf }
    }
}

impl<'a> Iterator for Events<'a> {
    type Item = Event<'a>;
    fn next(&mut self) -> Option<Event<'a>> {
        let b = self.rest;
        if b.len() < METADATA_LEN {
            return None;
        }
        let len = u32::from_ne_bytes(b[0..4].try_into().ok()?) as usize;
        let meta = u16::from_ne_bytes(b[6..8].try_into().ok()?) as usize;
        if b[4] != FANOTIFY_METADATA_VERSION || len < METADATA_LEN || len > b.len() || meta > len {
            self.rest = &[];
            return None;
        }
        self.rest = &b[len..];
        Some(Event {
            mask: u64::from_ne_bytes(b[8..16].try_into().ok()?),
            fd: i32::from_ne_bytes(b[16..20].try_into().ok()?),
            pid: i32::from_ne_bytes(b[20..24].try_into().ok()?),
            info: &b[meta.max(METADATA_LEN)..len],
        })
    }
}

/// The key events name the object open as `fd` by, and its (device,
/// inode): its file system's id and its file handle, as fanotify reports
/// them.
fn identify(fd: RawFd) -> Option<(Key, (u64, u64))> {
    // SAFETY: fstatfs into a zeroed struct of the right type.
    let mut sfs: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstatfs(fd, &mut sfs) } != 0 {
        return None;
    }
    // SAFETY: __fsid_t is two ints; read as bytes.
    let fsid: [u8; 8] = unsafe { std::mem::transmute(sfs.f_fsid) };
    const MAX: usize = 128;
    let mut buf = [0u8; 8 + MAX];
    buf[..4].copy_from_slice(&(MAX as u32).to_ne_bytes());
    let mut mount_id: libc::c_int = 0;
    let empty = c"";
    // SAFETY: a file_handle header with room for MAX bytes after it.
    let r = unsafe {
        libc::syscall(
            libc::SYS_name_to_handle_at,
            fd,
            empty.as_ptr(),
            buf.as_mut_ptr(),
            &mut mount_id,
            libc::AT_EMPTY_PATH,
        )
    };
    if r != 0 {
        return None;
    }
    let bytes = (u32::from_ne_bytes(buf[..4].try_into().ok()?) as usize).min(MAX);
    let mut key = Vec::with_capacity(12 + bytes);
    key.extend_from_slice(&fsid);
    key.extend_from_slice(&buf[4..8 + bytes]);
    Some((key, fstat_dev_ino(fd)?))
}

fn fstat_dev_ino(fd: RawFd) -> Option<(u64, u64)> {
    // SAFETY: fstat into a zeroed struct of the right type.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    (unsafe { libc::fstat(fd, &mut st) } == 0).then_some((st.st_dev, st.st_ino))
}

/// This process's /proc/self/fd directory, opened once: a mark names its
/// object as the entry of its descriptor there, one path component to
/// walk instead of five (a sixth of a create's server time went to
/// fanotify_mark, two thirds of it walking "/proc/self/fd/N").
fn proc_fds() -> Option<RawFd> {
    static DIR: OnceLock<Option<OwnedFd>> = OnceLock::new();
    DIR.get_or_init(|| {
        // SAFETY: open with a NUL-terminated path.
        let n = unsafe {
            libc::open(
                c"/proc/self/fd".as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        // SAFETY: a descriptor just opened, owned from now on.
        (n >= 0).then(|| unsafe { OwnedFd::from_raw_fd(n) })
    })
    .as_ref()
    .map(|d| d.as_raw_fd())
}

/// fanotify_mark(2) of the object `path` (an O_PATH descriptor of it) in
/// `group`.
fn mark(group: &OwnedFd, flags: u32, mask: u64, path: &OwnedFd) -> io::Result<()> {
    let (dir, p) = match proc_fds() {
        Some(d) => (d, CString::new(path.as_raw_fd().to_string())),
        None => (
            libc::AT_FDCWD,
            CString::new(format!("/proc/self/fd/{}", path.as_raw_fd())),
        ),
    };
    let p = p.expect("no NUL");
    // SAFETY: plain system call with a NUL-terminated path.
    let r = unsafe { libc::fanotify_mark(group.as_raw_fd(), flags, mask, dir, p.as_ptr()) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests;
