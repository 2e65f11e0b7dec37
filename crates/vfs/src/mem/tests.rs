//! What only `MemFs` has: limits, handles with generations, a manual
//! clock, cookies of its own. Semantics shared with `LocalFs` are in
//! tests/conformance.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use super::data::CHUNK;
use super::*;
use crate::{Errno, FileType, SetTime};

fn rootc() -> Creds {
    Creds::root()
}

/// A clock reading whole seconds from a shared counter.
fn manual(start: i64) -> (Clock, Arc<AtomicI64>) {
    let now = Arc::new(AtomicI64::new(start));
    let n = now.clone();
    let clock: Clock = Arc::new(move || Timespec {
        sec: n.load(Ordering::SeqCst),
        nsec: 0,
    });
    (clock, now)
}

fn ts(sec: i64) -> Timespec {
    Timespec { sec, nsec: 0 }
}

fn small(limits: Limits) -> MemFs {
    MemFs::new(limits, system_clock())
}

fn file(fs: &MemFs, dir: &Handle, name: &str) -> Handle {
    fs.create_file(
        &rootc(),
        dir,
        name.as_bytes(),
        CreateMode::Guarded,
        &SetAttr::default(),
    )
    .unwrap()
    .0
}

fn mkdir(fs: &MemFs, dir: &Handle, name: &str) -> Handle {
    fs.create(
        &rootc(),
        dir,
        name.as_bytes(),
        &CreateKind::Directory,
        &SetAttr::default(),
    )
    .unwrap()
    .0
}

const ENOSPC: Result<()> = Err(Errno(libc::ENOSPC));

#[test]
fn the_root_and_its_handle() {
    let fs = MemFs::default();
    let r = fs.root();
    assert_eq!(r.0.len(), 16);
    let a = fs.getattr(&r).unwrap();
    assert_eq!(
        (a.ftype, a.mode, a.uid, a.gid, a.nlink),
        (FileType::Directory, 0o755, 0, 0, 2)
    );
    assert_eq!(a.fileid, 1);
    let mut wrong_gen = r.0.to_vec();
    wrong_gen[15] ^= 1;
    assert_eq!(
        fs.getattr(&Handle(wrong_gen.into())),
        Err(Errno(libc::ESTALE))
    );
    assert_eq!(fs.getattr(&Handle(Bytes::new())), Err(Errno(libc::ESTALE)));
}

#[test]
fn reused_inode_numbers_never_revive_old_handles() {
    let fs = MemFs::default();
    let r = fs.root();
    let old = file(&fs, &r, "a");
    let fileid = fs.getattr(&old).unwrap().fileid;
    fs.remove(&rootc(), &r, b"a").unwrap();
    let new = mkdir(&fs, &r, "b");
    assert_eq!(fs.getattr(&new).unwrap().fileid, fileid, "number reused");
    assert_ne!(new, old);
    assert_eq!(fs.getattr(&old), Err(Errno(libc::ESTALE)));
    assert_eq!(
        fs.lookup(&rootc(), &old, b"x").map(drop),
        Err(Errno(libc::ESTALE))
    );
}

#[test]
fn the_byte_budget_is_enforced_and_refunded() {
    let fs = small(Limits {
        max_bytes: 16 * CHUNK,
        ..Limits::default()
    });
    let c = rootc();
    let r = fs.root();
    let f = file(&fs, &r, "f");
    let free = |fs: &MemFs| fs.fsstat(&r).unwrap().free_bytes;
    assert_eq!(free(&fs), 16 * CHUNK - ENTRY_BYTES - 1, "an entry costs");
    // 15 chunks fit beside the entry; a 16th does not.
    let big = vec![1u8; 15 * CHUNK as usize];
    fs.write(&c, &f, 0, &big, Stability::Unstable).unwrap();
    let w = |off, data: &[u8]| fs.write(&c, &f, off, data, Stability::Unstable).map(drop);
    assert_eq!(w(15 * CHUNK, b"x"), ENOSPC);
    assert_eq!(fs.getattr(&f).unwrap().size, 15 * CHUNK, "nothing written");
    // a hole far away would need a chunk too
    assert_eq!(w(1 << 50, b"x"), ENOSPC);
    assert_eq!(fs.allocate(&c, &f, 0, 1 << 62), ENOSPC);
    // rewriting allocated bytes needs nothing
    w(100, b"again").unwrap();
    // freeing: punch, truncate, remove
    fs.deallocate(&c, &f, 0, 2 * CHUNK).unwrap();
    assert_eq!(fs.getattr(&f).unwrap().used, 13 * CHUNK);
    w(15 * CHUNK, b"x").unwrap();
    fs.setattr(
        &c,
        &f,
        &SetAttr {
            size: Some(CHUNK),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        fs.getattr(&f).unwrap().used,
        0,
        "the first chunk was a hole"
    );
    fs.remove(&c, &r, b"f").unwrap();
    assert_eq!(free(&fs), 16 * CHUNK);
    // Symlink targets and names count.
    let long = Bytes::from(vec![b't'; 4000]);
    for i in 0..20 {
        let name = format!("s{i}");
        let made = fs.create(
            &c,
            &r,
            name.as_bytes(),
            &CreateKind::Symlink(long.clone()),
            &SetAttr::default(),
        );
        if made.is_err() {
            assert_eq!(made.map(drop), ENOSPC);
            assert!(i > 10, "{i} symlinks");
            return;
        }
    }
    panic!("symlink targets cost nothing");
}

#[test]
fn the_inode_and_link_limits_are_enforced() {
    let fs = small(Limits {
        max_inodes: 4,
        max_links: 3,
        ..Limits::default()
    });
    let c = rootc();
    let r = fs.root();
    let f = file(&fs, &r, "f");
    fs.link(&c, &f, &r, b"l1").unwrap();
    fs.link(&c, &f, &r, b"l2").unwrap();
    assert_eq!(fs.link(&c, &f, &r, b"l3"), Err(Errno(libc::EMLINK)));
    let d = mkdir(&fs, &r, "d");
    assert_eq!(
        fs.create(&c, &r, b"d2", &CreateKind::Directory, &SetAttr::default())
            .map(drop),
        Err(Errno(libc::EMLINK)),
        "the root has 3 links"
    );
    mkdir(&fs, &d, "sub");
    assert_eq!(fs.fsstat(&r).unwrap().free_files, 0);
    assert_eq!(
        fs.create(&c, &d, b"p", &CreateKind::Fifo, &SetAttr::default())
            .map(drop),
        Err(Errno(libc::ENOSPC))
    );
    assert_eq!(
        fs.create_file(&c, &d, b"x", CreateMode::Unchecked, &SetAttr::default())
            .map(drop),
        Err(Errno(libc::ENOSPC))
    );
    // moving a directory into a full directory
    fs.remove(&c, &r, b"l2").unwrap();
    assert_eq!(
        fs.rename(&c, &d, b"sub", &r, b"sub"),
        Err(Errno(libc::EMLINK))
    );
    fs.rename(&c, &d, b"sub", &d, b"sub2").unwrap();
}

#[test]
fn times_follow_the_clock() {
    let (clock, now) = manual(100);
    let fs = MemFs::new(Limits::default(), clock);
    let c = rootc();
    let r = fs.root();
    now.store(200, Ordering::SeqCst);
    let f = file(&fs, &r, "f");
    let a = fs.getattr(&f).unwrap();
    assert_eq!((a.atime, a.mtime, a.ctime), (ts(200), ts(200), ts(200)));
    assert_eq!(fs.getattr(&r).unwrap().mtime, ts(200));
    now.store(300, Ordering::SeqCst);
    fs.write(&c, &f, 0, b"abc", Stability::FileSync).unwrap();
    let b = fs.getattr(&f).unwrap();
    assert_eq!((b.atime, b.mtime, b.ctime), (ts(200), ts(300), ts(300)));
    assert!(b.change > a.change);
    // relatime: a read moves atime past mtime once, then not for a day
    now.store(400, Ordering::SeqCst);
    fs.read(&c, &f, 0, 10).unwrap();
    now.store(500, Ordering::SeqCst);
    fs.read(&c, &f, 0, 10).unwrap();
    let d = fs.getattr(&f).unwrap();
    assert_eq!(d.atime, ts(400));
    assert_eq!(d.change, b.change, "reads do not change the object");
    now.store(400 + 86_400, Ordering::SeqCst);
    fs.read(&c, &f, 0, 10).unwrap();
    assert_eq!(fs.getattr(&f).unwrap().atime, ts(400 + 86_400));
    // chmod: ctime only; setting times: as given, ctime now
    now.store(600_000, Ordering::SeqCst);
    let e = fs
        .setattr(
            &c,
            &f,
            &SetAttr {
                mode: Some(0o600),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!((e.mtime, e.ctime), (ts(300), ts(600_000)));
    now.store(700_000, Ordering::SeqCst);
    let set = SetAttr {
        atime: Some(SetTime::Client(ts(5))),
        mtime: Some(SetTime::ServerNow),
        ..Default::default()
    };
    let g = fs.setattr(&c, &f, &set).unwrap();
    assert_eq!(
        (g.atime, g.mtime, g.ctime),
        (ts(5), ts(700_000), ts(700_000))
    );
    // rename: both directories and the object's ctime
    let d = mkdir(&fs, &r, "d");
    now.store(800_000, Ordering::SeqCst);
    fs.rename(&c, &r, b"f", &d, b"g").unwrap();
    for h in [&r, &d] {
        let a = fs.getattr(h).unwrap();
        assert_eq!((a.mtime, a.ctime), (ts(800_000), ts(800_000)));
    }
    let h = fs.getattr(&f).unwrap();
    assert_eq!((h.mtime, h.ctime), (ts(700_000), ts(800_000)));
}

#[test]
fn extreme_times_are_kept() {
    let (clock, _now) = manual(-10);
    let fs = MemFs::new(Limits::default(), clock);
    let c = rootc();
    let f = file(&fs, &fs.root(), "f");
    fs.write(&c, &f, 0, b"x", Stability::Unstable).unwrap();
    for sec in [i64::MAX, i64::MIN] {
        let set = SetAttr {
            atime: Some(SetTime::Client(ts(sec))),
            ..Default::default()
        };
        fs.setattr(&c, &f, &set).unwrap();
        fs.read(&c, &f, 0, 1).unwrap();
    }
    assert_eq!(
        fs.getattr(&f).unwrap().atime,
        ts(-10),
        "read after an old atime"
    );
}

#[test]
fn cookies_are_entry_serials() {
    let fs = MemFs::default();
    let r = fs.root();
    for n in ["a", "b", "c"] {
        file(&fs, &r, n);
    }
    let list = |cookie| {
        let mut got = Vec::new();
        fs.readdir(&rootc(), &r, cookie, false, &mut |e| {
            got.push((e.name, e.cookie));
            true
        })
        .unwrap();
        got
    };
    let names = |v: Vec<(Bytes, u64)>| v.into_iter().map(|(n, _)| n).collect::<Vec<_>>();
    assert_eq!(
        list(0),
        vec![("a".into(), 3), ("b".into(), 4), ("c".into(), 5)]
    );
    // a renamed entry gets a new serial; removed ones leave their gap
    fs.rename(&rootc(), &r, b"a", &r, b"z").unwrap();
    fs.remove(&rootc(), &r, b"b").unwrap();
    file(&fs, &r, "d");
    assert_eq!(
        list(0),
        vec![("c".into(), 5), ("z".into(), 6), ("d".into(), 7)]
    );
    assert_eq!(names(list(4)), vec!["c", "z", "d"]);
    assert_eq!(names(list(6)), vec!["d"]);
    assert_eq!(list(7), vec![]);
    assert_eq!(list(1 << 40), vec![]);
    assert_eq!(
        names(list(2)),
        vec!["c", "z", "d"],
        "cookies 1 and 2 start over"
    );
}

#[test]
fn readdir_callbacks_may_call_back() {
    let fs = MemFs::default();
    let r = fs.root();
    for i in 0..300 {
        file(&fs, &r, &format!("f{i}"));
    }
    let mut n = 0;
    let eof = fs
        .readdir(&rootc(), &r, 0, true, &mut |e| {
            let (h, a) = e.obj.unwrap();
            assert_eq!(fs.getattr(&h).unwrap().fileid, a.fileid);
            if n == 200 {
                // one ahead removed, one added: the first is not listed, the second is
                fs.remove(&rootc(), &r, b"f299").unwrap();
                file(&fs, &r, "late");
            }
            n += 1;
            true
        })
        .unwrap();
    assert!(eof);
    assert_eq!(n, 300, "299 old entries and the late one");
}

#[test]
fn deep_trees_need_no_recursion() {
    let fs = MemFs::default();
    let c = rootc();
    let r = fs.root();
    let top = mkdir(&fs, &r, "top");
    let mut d = top.clone();
    for _ in 0..20_000 {
        d = mkdir(&fs, &d, "d");
    }
    assert_eq!(
        fs.rename(&c, &r, b"top", &d, b"x"),
        Err(Errno(libc::EINVAL))
    );
    let other = mkdir(&fs, &r, "other");
    assert_eq!(fs.lookup_parent(&c, &d).unwrap().1.nlink, 3);
    fs.rename(&c, &r, b"other", &d, b"o").unwrap();
    assert_eq!(fs.lookup_parent(&c, &other).unwrap().0, d);
}

#[test]
fn copies_stop_short_when_space_runs_out() {
    let fs = small(Limits {
        max_bytes: 8 * CHUNK,
        ..Limits::default()
    });
    let c = rootc();
    let r = fs.root();
    let s = file(&fs, &r, "s");
    let d = file(&fs, &r, "d");
    fs.write(&c, &s, 0, &[3u8; 4 * CHUNK as usize], Stability::Unstable)
        .unwrap();
    // 8 chunks less two entries: three more chunks fit
    let n = fs.copy(&c, &s, 0, &d, 0, 0).unwrap();
    assert_eq!(n, 3 * CHUNK);
    assert_eq!(fs.getattr(&d).unwrap().size, 3 * CHUNK);
    assert_eq!(
        fs.copy(&c, &s, 3 * CHUNK, &d, 8 * CHUNK, 0),
        Err(Errno(libc::ENOSPC))
    );
    assert_eq!(fs.getattr(&d).unwrap().size, 3 * CHUNK);
}

#[test]
fn clones_are_aligned_copies() {
    let fs = small(Limits {
        max_bytes: 16 * CHUNK,
        ..Limits::default()
    });
    let c = rootc();
    let r = fs.root();
    let s = file(&fs, &r, "s");
    let d = file(&fs, &r, "d");
    let data: Vec<u8> = (0..2 * CHUNK + 10).map(|i| i as u8).collect();
    fs.write(&c, &s, 0, &data, Stability::Unstable).unwrap();
    let einval = Err(Errno(libc::EINVAL));
    assert_eq!(fs.clone_range(&c, &s, 1, &d, 0, CHUNK), einval);
    assert_eq!(fs.clone_range(&c, &s, 0, &d, 1, CHUNK), einval);
    assert_eq!(fs.clone_range(&c, &s, 0, &d, 0, 10), einval);
    // to the end of the source, unaligned length allowed
    fs.clone_range(&c, &s, CHUNK, &d, 4 * CHUNK, 0).unwrap();
    let (got, _) = fs.read(&c, &d, 4 * CHUNK, 1 << 20).unwrap();
    assert_eq!(&got[..], &data[CHUNK as usize..]);
    assert_eq!(fs.getattr(&d).unwrap().size, 5 * CHUNK + 10);
    // all or nothing
    let big = file(&fs, &r, "big");
    fs.write(
        &c,
        &big,
        0,
        &vec![1u8; 8 * CHUNK as usize],
        Stability::Unstable,
    )
    .unwrap();
    assert_eq!(
        fs.clone_range(&c, &big, 0, &d, 0, 0),
        Err(Errno(libc::ENOSPC))
    );
    assert_eq!(fs.getattr(&d).unwrap().used, 2 * CHUNK);
}

#[test]
fn concurrent_callers() {
    let fs = Arc::new(MemFs::default());
    let r = fs.root();
    let threads: Vec<_> = (0..4u32)
        .map(|t| {
            let (fs, r) = (fs.clone(), r.clone());
            std::thread::spawn(move || {
                let c = Creds {
                    uid: 0,
                    gid: 0,
                    groups: vec![],
                };
                for i in 0..100u64 {
                    let name = format!("t{t}-{i}");
                    let (h, _, _) = fs
                        .create_file(
                            &c,
                            &r,
                            name.as_bytes(),
                            CreateMode::Guarded,
                            &SetAttr::default(),
                        )
                        .unwrap();
                    fs.write(&c, &h, i * 10, b"x", Stability::Unstable).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut n = 0;
    fs.readdir(&rootc(), &r, 0, false, &mut |_| {
        n += 1;
        true
    })
    .unwrap();
    assert_eq!(n, 400);
}
