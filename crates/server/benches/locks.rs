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
use std::time::Duration;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use proto::nfs4::*;
use server::locks::{FileLocks, LockKind};
use server::nfs4::state::{Client, Principal, Tables};

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

fn tables(n: u64) -> Tables {
    let mut t = Tables::new(1);
    let owner = ClientOwner4 {
        verifier: [0; 8],
        ownerid: Bytes::from_static(b"bench"),
    };
    t.clients
        .insert(1, Client::new(1, &owner, Principal::None, Duration::ZERO));
    if let Some(c) = t.clients.get_mut(&1) {
        c.reclaim_complete = true;
    }
    let file = (1, vfs::Handle(Bytes::from_static(b"file")));
    let lease = Duration::from_secs(90);
    let o = Bytes::from_static(b"o");
    let Ok(open) = t.open(1, &o, &file, 3, 0, Duration::ZERO, lease) else {
        return t;
    };
    let Ok(mut ls) = t.lock(
        1,
        Some(&o),
        &open,
        &file,
        0,
        u64::MAX,
        LockKind::Write,
        false,
        Duration::ZERO,
        lease,
    ) else {
        return t;
    };
    for i in 0..n {
        let (s, e) = hole(i);
        if let Ok(next) = t.unlock(&ls, &file, s, e) {
            ls = next;
        }
        let _ = t.lock_notifications(&file, Duration::ZERO, lease);
    }
    t
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
