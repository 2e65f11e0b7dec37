//! One server per state directory at a time, and the standby that takes
//! over (fail-over over shared storage, issue 31).
//!
//! The state directory holds what two servers must never use at once:
//! client records, sessions, the grace period's previous clients. A
//! server takes an exclusive POSIX lock on `serving.lock` in it before
//! anything else, and holds it while it runs; the kernel (and, on a
//! shared file system such as GlusterFS, its lock server) releases it
//! when the process ends, however it ends. A second server on the same
//! state directory is refused, or with `--standby` waits: when the active
//! one dies it takes the lock, starts, and, finding the dead server's
//! client records, opens a grace period for them to reclaim in (RFC 8881
//! §8.4.2.1), exactly as a restart does.

use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The lock file in the state directory.
pub const FILE: &str = "serving.lock";

/// The lock, held while this value lives.
#[derive(Debug)]
pub struct Serving {
    _file: std::fs::File,
}

/// Takes an exclusive lock on the whole of `f`: at once or not at all
/// (false), or, with `wait`, once its holder lets go (F_SETLKW: the
/// kernel, or the file system's lock server, wakes the waiter when the
/// holder's lock goes, so a standby takes over at once).
fn lock(f: &std::fs::File, wait: bool) -> std::io::Result<bool> {
    // SAFETY: an all-zero flock is a valid value to fill in.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_WRLCK as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    let cmd = if wait { libc::F_SETLKW } else { libc::F_SETLK };
    loop {
        // SAFETY: `f` is an open descriptor and `fl` a valid flock.
        let r = unsafe { libc::fcntl(f.as_raw_fd(), cmd, &fl) };
        if r == 0 {
            return Ok(true);
        }
        match std::io::Error::last_os_error() {
            e if e.raw_os_error() == Some(libc::EINTR) => continue,
            e if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EACCES)) => return Ok(false),
            e => return Err(e),
        }
    }
}

/// Who holds the lock, as it wrote (pid and host).
fn holder(f: &mut std::fs::File) -> String {
    let mut s = String::new();
    let _ = f.rewind();
    let _ = f.take(256).read_to_string(&mut s);
    match s.trim() {
        "" => "unknown".to_string(),
        t => t.to_string(),
    }
}

/// Takes the state directory `dir` for this server: at once, or (as a
/// `standby`) once whoever holds it stops. Blocking; run off the reactor.
pub fn take(dir: &Path, standby: bool) -> std::io::Result<Serving> {
    let path = dir.join(FILE);
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)?;
    if !lock(&f, false)? {
        let who = holder(&mut f);
        if !standby {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AddrInUse,
                format!(
                    "the state directory {} is in use by another Ferrite ({who}): stop it, or \
                     start this one with --standby to take over when it stops",
                    dir.display()
                ),
            ));
        }
        tracing::info!(state = %dir.display(), active = %who, "standby: waiting for the active server to stop");
        while !lock(&f, true)? {}
        tracing::info!(state = %dir.display(), "standby: the active server stopped; taking over");
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    f.set_len(0)?;
    f.rewind()?;
    writeln!(f, "pid {} on {}", std::process::id(), host.trim())?;
    Ok(Serving { _file: f })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether another process could lock `path` now: a forked child
    /// tries (only async-signal-safe calls between fork and exit).
    fn another_process_could_lock(path: &Path) -> bool {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: an all-zero flock is a valid value to fill in.
        let mut fl: libc::flock = unsafe { std::mem::zeroed() };
        fl.l_type = libc::F_WRLCK as libc::c_short;
        // SAFETY: the child calls only open, fcntl and _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: as above.
            unsafe {
                let fd = libc::open(c.as_ptr(), libc::O_RDWR);
                let ok = fd >= 0 && libc::fcntl(fd, libc::F_SETLK, &fl) == 0;
                libc::_exit(if ok { 0 } else { 1 });
            }
        }
        let mut status = 0;
        // SAFETY: `pid` is our child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
    }

    #[test]
    fn the_state_directory_is_one_servers_until_it_stops() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join(FILE);
        let held = take(dir.path(), false).unwrap();
        assert!(!another_process_could_lock(&lock));
        assert!(std::fs::read_to_string(&lock)
            .unwrap()
            .starts_with(&format!("pid {} on ", std::process::id())));
        drop(held);
        assert!(another_process_could_lock(&lock));
    }
}
