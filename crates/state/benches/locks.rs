//! The lock split/join benchmark: a whole-file lock, then `n` unlocks of
//! 1,000-byte ranges at a stride of 2,000 bytes (30,000 holes in the
//! issue's figure), done
//! * `filelocks`: on the server's lock table (`locks::FileLocks`) alone;
//! * `tables`: through the NFSv4 state tables (stateid checks, seqids,
//!   the per-file waiter queue), as LOCK and LOCKU do;
//! * `ofd`: on a local file with fcntl(F_OFD_SETLK), the same operations
//!   the local file system's lock manager performs for a local process.
//!
//! The over-the-wire version (LOCK + `n` LOCKU compounds against an
//! in-process server) is `cargo bench -p e2e --bench locks_wire`.
//! Results and ratios: docs/benchmarks.md.

use std::hint::black_box;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

use state::clock::ManualClock;
use state::locks::{FileLocks, LockKind};
use state::{LockRequest, State};

mod support;

const SIZES: [u64; 2] = [3_000, 30_000];

fn hole(i: u64) -> (u64, u64) {
    (i * 2000, i * 2000 + 1000)
}

fn filelocks(n: u64) -> FileLocks<u32> {
    let mut f = FileLocks::default();
    let _ = f.lock(&1, 0, u64::MAX, LockKind::Write);
    for i in 0..n {
        let (s, e) = hole(i);
        f.unlock(&1, s, e);
    }
    f
}

fn tables(n: u64) -> State {
    let st = State::new(1, Duration::from_secs(90), Arc::new(ManualClock::default()));
    let Some(client) = support::client(&st, b"bench") else {
        return st;
    };
    let file = (1, Bytes::from_static(b"file"));
    let o = Bytes::from_static(b"o");
    let Ok(open) = st.open(client, &o, &file, 3, 0) else {
        return st;
    };
    let Ok(mut ls) = st.lock(&LockRequest {
        client,
        new_owner: Some(o.clone()),
        presented: open,
        file: file.clone(),
        start: 0,
        end: u64::MAX,
        kind: LockKind::Write,
        blocking: false,
        reclaim: false,
        fh: Bytes::new(),
    }) else {
        return st;
    };
    for i in 0..n {
        let (s, e) = hole(i);
        if let Ok((next, _)) = st.unlock(client, &ls, &file, s, e) {
            ls = next;
        }
    }
    st
}

fn ofd_lock(fd: i32, ty: i32, start: u64, end: u64) {
    // SAFETY: a zeroed flock is valid; every field we rely on is set.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = ty as _;
    fl.l_whence = libc::SEEK_SET as _;
    fl.l_start = start as libc::off_t;
    fl.l_len = if end == u64::MAX {
        0
    } else {
        (end - start) as libc::off_t
    };
    // SAFETY: plain fcntl on a descriptor we own, with a valid flock.
    let r = unsafe { libc::fcntl(fd, libc::F_OFD_SETLK, &fl) };
    assert_eq!(r, 0, "F_OFD_SETLK: {}", std::io::Error::last_os_error());
}

fn ofd(dir: &tempfile::TempDir, n: u64) {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(dir.path().join("f"))
        .expect("open");
    let fd = f.as_raw_fd();
    ofd_lock(fd, libc::F_WRLCK, 0, u64::MAX);
    for i in 0..n {
        let (s, e) = hole(i);
        ofd_lock(fd, libc::F_UNLCK, s, e);
    }
    // Closing the description drops its locks.
    drop(f);
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("lock_split");
    g.sample_size(10);
    g.warm_up_time(Duration::from_millis(500));
    let dir = tempfile::tempdir().expect("tempdir");
    for n in SIZES {
        g.bench_with_input(BenchmarkId::new("filelocks", n), &n, |b, &n| {
            b.iter(|| black_box(filelocks(n)))
        });
        g.bench_with_input(BenchmarkId::new("tables", n), &n, |b, &n| {
            b.iter(|| black_box(tables(n)))
        });
        g.bench_with_input(BenchmarkId::new("ofd", n), &n, |b, &n| {
            b.iter(|| ofd(&dir, n))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
