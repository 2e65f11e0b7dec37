use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::sync::mpsc;

use super::*;

/// A callback that sends on a channel, and its receiving end.
fn channel() -> (OnChange, mpsc::Receiver<()>) {
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let f: OnChange = Arc::new(move || {
        let _ = tx.lock().unwrap().send(());
    });
    (f, rx)
}

/// Generous: the event comes in microseconds, but a loaded machine may
/// not run the thread for a while.
const WAIT: Duration = Duration::from_secs(60);

fn open_path(p: &std::path::Path) -> OwnedFd {
    OwnedFd::from(std::fs::File::open(p).unwrap())
}

/// Runs `sh -c cmd` (another process) to its end.
fn sh(cmd: &str) {
    let st = Command::new("sh").arg("-c").arg(cmd).status().unwrap();
    assert!(st.success(), "{cmd}");
}

fn require_root() {
    // SAFETY: plain system call.
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "this test needs root (fanotify permission events): run it as root (CI and ./test.sh do)"
    );
}

/// A second watched file that another process changes: once its change
/// is reported, every event before it has been read (one thread reads
/// them in order).
struct Fence {
    path: std::path::PathBuf,
    rx: mpsc::Receiver<()>,
    _fd: std::sync::Arc<OwnedFd>,
    _w: Watch,
}

impl Fence {
    fn new(dir: &std::path::Path) -> Fence {
        let path = dir.join("fence");
        std::fs::write(&path, b"").unwrap();
        let (cb, rx) = channel();
        let fd = std::sync::Arc::new(open_path(&path));
        let w = watch(&fd, false, false, cb).unwrap().expect("watched");
        Fence {
            path,
            rx,
            _fd: fd,
            _w: w,
        }
    }

    fn pass(&self) {
        sh(&format!("touch {}", self.path.display()));
        self.rx
            .recv_timeout(WAIT)
            .expect("the fence's change reported");
        while self.rx.try_recv().is_ok() {}
    }
}

fn count(rx: &mpsc::Receiver<()>) -> usize {
    std::iter::from_fn(|| rx.try_recv().ok()).count()
}

#[test]
fn changes_by_other_processes_are_reported_and_this_ones_are_not() {
    let d = tempfile::TempDir::new().unwrap();
    let fence = Fence::new(d.path());
    let f = d.path().join("f");
    std::fs::write(&f, b"x").unwrap();
    let (cb, rx) = channel();
    let fd = std::sync::Arc::new(open_path(&f));
    let w = watch(&fd, false, false, cb).unwrap().expect("watched");
    // This process's own changes are never reported.
    for mode in [0o600, 0o640, 0o644] {
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    std::fs::write(&f, b"own write").unwrap();
    fence.pass();
    assert_eq!(count(&rx), 0, "this process's changes were reported");
    let q = f.display().to_string();
    for cmd in [
        format!("chmod 600 {q}"),
        format!("chown 1:1 {q}"),
        format!("touch -d 2001-01-01 {q}"),
        format!("setfattr -n user.k -v v {q} 2>/dev/null || python3 -c 'import os; os.setxattr(\"{q}\", \"user.k\", b\"v\")'"),
        format!("ln {q} {q}.link"),
        format!("rm {q}.link"),
        format!("echo more >> {q}"),
        format!("truncate -s 0 {q}"),
        format!("touch {q}.other; mv {q}.other {q}.x; mv {q} {q}.moved"),
        format!("rm {q}.moved"),
    ] {
        sh(&cmd);
        fence.pass();
        assert!(count(&rx) > 0, "{cmd}: not reported");
    }
    drop(w);
}

#[test]
fn changes_in_a_watched_directory_are_reported_until_it_is_unwatched() {
    let d = tempfile::TempDir::new().unwrap();
    let fence = Fence::new(d.path());
    let dir = d.path().join("dir");
    std::fs::create_dir(&dir).unwrap();
    let (cb, rx) = channel();
    let fd = std::sync::Arc::new(open_path(&dir));
    let w = watch(&fd, true, false, cb).unwrap().expect("watched");
    std::fs::write(dir.join("own"), b"").unwrap();
    fence.pass();
    assert_eq!(count(&rx), 0, "this process's create was reported");
    let q = dir.display().to_string();
    for cmd in [
        format!("touch {q}/a"),
        format!("mkdir {q}/sub"),
        format!("mv {q}/a {q}/b"),
        format!("mv {q}/b {}/out", d.path().display()),
        format!("rm {q}/own"),
        format!("rmdir {q}/sub"),
        format!("chmod 700 {q}"),
    ] {
        sh(&cmd);
        fence.pass();
        assert!(count(&rx) > 0, "{cmd}: not reported");
    }
    drop(w);
    sh(&format!("touch {q}/after"));
    fence.pass();
    assert_eq!(count(&rx), 0, "reported after the watch ended");
}

#[test]
fn a_watch_that_holds_opens_holds_another_processs_open_until_it_ends() {
    require_root();
    let d = tempfile::TempDir::new().unwrap();
    let f = d.path().join("f");
    std::fs::write(&f, b"data").unwrap();
    let (cb, rx) = channel();
    let fd = std::sync::Arc::new(open_path(&f));
    let w = watch(&fd, false, true, cb).unwrap().expect("watched");
    // This process's own opens go through.
    for _ in 0..3 {
        assert_eq!(std::fs::read(&f).unwrap(), b"data");
    }
    assert_eq!(count(&rx), 0);
    let mut child = Command::new("cat")
        .arg(&f)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    rx.recv_timeout(WAIT)
        .expect("the other process's open reported");
    // Its open is held until this process answers, which only the end of
    // the watch does: it cannot have finished.
    assert!(child.try_wait().unwrap().is_none(), "the open was not held");
    drop(w);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout, b"data");
}

#[test]
fn malformed_event_buffers_end_the_events() {
    // A header claiming more than the buffer, a wrong version, and an
    // information record longer than its event: nothing read past them.
    let mut b = vec![0u8; METADATA_LEN];
    b[..4].copy_from_slice(&1000u32.to_ne_bytes());
    b[4] = FANOTIFY_METADATA_VERSION;
    assert_eq!(Events::new(&b).count(), 0);
    b[..4].copy_from_slice(&(METADATA_LEN as u32).to_ne_bytes());
    b[4] = 2;
    assert_eq!(Events::new(&b).count(), 0);
    b[4] = FANOTIFY_METADATA_VERSION;
    b[6..8].copy_from_slice(&(METADATA_LEN as u16).to_ne_bytes());
    let mut ev = b.clone();
    ev[..4].copy_from_slice(&((METADATA_LEN + 8) as u32).to_ne_bytes());
    ev.extend_from_slice(&[FAN_EVENT_INFO_TYPE_FID, 0, 200, 0, 0, 0, 0, 0]);
    let evs: Vec<_> = Events::new(&ev).collect();
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0].fid_key(), None);
    // Two well-formed events in a row.
    let two = [b.clone(), b].concat();
    assert_eq!(Events::new(&two).count(), 2);
}
