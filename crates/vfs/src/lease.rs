//! Kernel read leases (fcntl(2) `F_SETLEASE`, `F_RDLCK`): how the server
//! learns that a local process (one that does not go through NFS) is about
//! to open a file for writing or truncate it, which must recall the NFS
//! read delegations of the file (RFC 8881 §10.4.6) as any conflicting NFS
//! request does.
//!
//! A lease is taken on a read-only descriptor of the file, and only while
//! no one has the file open for writing (else `EAGAIN`: the file is
//! changing, no delegation). When a process opens it for writing or
//! truncates it, the kernel holds that call (up to
//! `/proc/sys/fs/lease-break-time`, 45 s by default) and sends this process
//! a signal ([`signal`], set with `F_SETSIG`) whose `si_fd` names the
//! leased descriptor; the handler only writes that number into a pipe, and
//! a thread of this module reads it and calls the callback registered with
//! the lease. Dropping the [`Lease`] releases it, and the held call goes on.
//!
//! The signal has a handler in every thread (not a blocked signal read
//! through signalfd, which would need it blocked in every thread of the
//! process, tests and libraries included), so it can never terminate the
//! process, whichever thread it lands on.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// What to call when a lease is broken.
pub type OnBreak = Arc<dyn Fn() + Send + Sync>;

/// Offset of `si_fd` in `siginfo_t` (after `si_signo`, `si_errno`,
/// `si_code`, then `long si_band` of the `_sigpoll` member, Linux).
#[cfg(target_pointer_width = "64")]
const SI_FD_OFFSET: usize = 24;
#[cfg(target_pointer_width = "32")]
const SI_FD_OFFSET: usize = 16;

/// fcntl(2) F_SETSIG (Linux; not exported by the libc crate).
const F_SETSIG: libc::c_int = 10;

/// The write end of the notification pipe (-1 until set up).
static PIPE_W: AtomicI32 = AtomicI32::new(-1);

/// Leased descriptors and what to call when each is broken.
static REGISTRY: OnceLock<Result<Mutex<HashMap<RawFd, OnBreak>>, i32>> = OnceLock::new();

/// The signal lease breaks are announced with: a real-time one, queued
/// rather than merged, past those the C library keeps for itself.
pub fn signal() -> i32 {
    libc::SIGRTMIN() + 3
}

extern "C" fn on_signal(_sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    let w = PIPE_W.load(Ordering::Relaxed);
    if w < 0 || info.is_null() {
        return;
    }
    // SAFETY: the kernel passes a whole siginfo_t; for a lease break
    // (SA_SIGINFO with F_SETSIG) its si_fd is set. Only async-signal-safe
    // calls follow (write to a non-blocking pipe).
    let fd =
        unsafe { std::ptr::read_unaligned((info as *const u8).add(SI_FD_OFFSET) as *const i32) };
    let b = fd.to_ne_bytes();
    // SAFETY: writing 4 bytes from a live buffer; a full pipe drops it.
    unsafe { libc::write(w, b.as_ptr().cast(), b.len()) };
}

/// Sets up the pipe, the signal handler and the thread, once.
fn registry() -> io::Result<&'static Mutex<HashMap<RawFd, OnBreak>>> {
    let r = REGISTRY.get_or_init(|| {
        let mut p = [0i32; 2];
        // SAFETY: pipe2 fills the two descriptors.
        if unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO));
        }
        // SAFETY: p[0] and p[1] are ours from here.
        let (r, w) = unsafe { (OwnedFd::from_raw_fd(p[0]), OwnedFd::from_raw_fd(p[1])) };
        // SAFETY: fcntl on a descriptor we own.
        unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
        // SAFETY: a zeroed sigaction is valid; the handler is an extern "C"
        // fn of the SA_SIGINFO shape.
        let ok = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(signal(), &sa, std::ptr::null_mut()) == 0
        };
        if !ok {
            return Err(io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO));
        }
        PIPE_W.store(w.as_raw_fd(), Ordering::Relaxed);
        std::mem::forget(w);
        let spawned = std::thread::Builder::new()
            .name("lease-breaks".into())
            .spawn(move || read_breaks(r));
        if spawned.is_err() {
            return Err(libc::EAGAIN);
        }
        Ok(Mutex::new(HashMap::new()))
    });
    r.as_ref().map_err(|e| io::Error::from_raw_os_error(*e))
}

/// The thread: each descriptor number read names a broken lease.
fn read_breaks(r: OwnedFd) {
    let mut buf = [0u8; 4 * 256];
    loop {
        // SAFETY: reading into a live buffer from a descriptor we own.
        let n = unsafe { libc::read(r.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if n == 0 {
            return;
        }
        for c in buf[..n as usize].chunks_exact(4) {
            let fd = i32::from_ne_bytes([c[0], c[1], c[2], c[3]]);
            let cb = REGISTRY.get().and_then(|r| r.as_ref().ok()).and_then(|m| {
                m.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get(&fd)
                    .cloned()
            });
            if let Some(cb) = cb {
                cb();
            }
        }
    }
}

/// A read lease on a file; released when dropped.
pub struct Lease {
    fd: OwnedFd,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Lease(fd {})", self.fd.as_raw_fd())
    }
}

/// Takes a read lease on the file `path` names (opened read-only here),
/// calling `on_break` when a process opens it for writing or truncates it.
/// `Ok(None)`: no lease now (the file is open for writing somewhere, or
/// leases are disabled: `fs.leases-enable`).
pub fn take(path: &std::ffi::CStr, on_break: OnBreak) -> io::Result<Option<Lease>> {
    let reg = registry()?;
    // SAFETY: open with a NUL-terminated path.
    let raw = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOATIME,
        )
    };
    let raw = if raw < 0 {
        // O_NOATIME needs ownership of the file (or CAP_FOWNER).
        // SAFETY: as above.
        unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NONBLOCK,
            )
        }
    } else {
        raw
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: raw is a descriptor we just opened.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: fcntl on a descriptor we own.
    if unsafe { libc::fcntl(fd.as_raw_fd(), F_SETSIG, signal()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // Registered before the lease exists, so that no break is missed.
    reg.lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(fd.as_raw_fd(), on_break);
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETLEASE, libc::F_RDLCK) } != 0 {
        let e = io::Error::last_os_error();
        reg.lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&fd.as_raw_fd());
        return match e.raw_os_error() {
            Some(libc::EAGAIN | libc::EACCES | libc::EINVAL) => Ok(None),
            _ => Err(e),
        };
    }
    Ok(Some(Lease { fd }))
}

impl Drop for Lease {
    fn drop(&mut self) {
        // SAFETY: fcntl on a descriptor we own.
        unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_SETLEASE, libc::F_UNLCK) };
        // Forgotten before the descriptor closes, so that its number, once
        // reused, is not taken for this lease.
        if let Ok(reg) = registry() {
            reg.lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&self.fd.as_raw_fd());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::{Duration, Instant};

    fn cpath(p: &std::path::Path) -> std::ffi::CString {
        std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap()
    }

    /// A writer's open waits for the lease, which is told of it; after
    /// the lease is released the open goes on.
    #[test]
    fn a_local_writer_breaks_the_lease_and_waits_for_its_release() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, b"x").unwrap();
        let broken = Arc::new(AtomicUsize::new(0));
        let b = broken.clone();
        let lease = take(
            &cpath(&p),
            Arc::new(move || {
                b.fetch_add(1, Ordering::SeqCst);
            }),
        )
        .unwrap()
        .expect("a lease on a file no one writes");
        // A non-blocking writer is refused while the lease holds, and the
        // holder hears of it.
        let e = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&p)
            .unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EWOULDBLOCK));
        // The signal comes in microseconds; 30 s is for a busy machine.
        let t0 = Instant::now();
        while broken.load(Ordering::SeqCst) == 0 && t0.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(
            broken.load(Ordering::SeqCst) >= 1,
            "the break was not reported"
        );
        // A blocking writer waits until the lease is released: 300 ms after
        // it began, it has not opened the file. No event marks the open
        // under way, so that is a fixed time; a slow machine can only make
        // the check miss a writer that did not wait, never fail one that
        // did.
        let p2 = p.clone();
        let (began, opened) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (b, o) = (began.clone(), opened.clone());
        let writer = std::thread::spawn(move || {
            b.store(1, Ordering::SeqCst);
            std::fs::OpenOptions::new().write(true).open(&p2).unwrap();
            o.store(1, Ordering::SeqCst);
        });
        let t0 = Instant::now();
        while began.load(Ordering::SeqCst) == 0 && t0.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(began.load(Ordering::SeqCst), 1, "the writer never began");
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(
            opened.load(Ordering::SeqCst),
            0,
            "the writer did not wait for the lease"
        );
        drop(lease);
        writer.join().unwrap();
        // No lease while someone has the file open for writing.
        let w = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        assert!(take(&cpath(&p), Arc::new(|| {})).unwrap().is_none());
        drop(w);
        assert!(take(&cpath(&p), Arc::new(|| {})).unwrap().is_some());
    }

    use std::os::unix::fs::OpenOptionsExt;
}
