use std::collections::HashSet;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use tempfile::TempDir;

use super::*;

fn rootc() -> Creds {
    Creds::root()
}

fn user(uid: u32) -> Creds {
    Creds {
        uid,
        gid: uid,
        groups: vec![],
    }
}

fn is_root() -> bool {
    sys::geteuid() == 0
}

/// Fails a test that needs root (to switch identities or make devices)
/// when not run as root, rather than letting it pass untested.
fn require_root() {
    assert!(
        is_root(),
        "this test needs root: run it as root (CI and ./test.sh do)"
    );
}

/// Every resolution mode: whatever the probe picks, the path map, and
/// inode-number handles through the path map (what FUSE exports use).
const MODES: [Option<Mode>; 3] = [None, Some(Mode::PathMap), Some(Mode::Stable)];

fn open(dir: &TempDir, mode: Option<Mode>) -> LocalFs {
    LocalFs::with_mode(dir.path(), mode).unwrap()
}

fn setup(mode: Option<Mode>) -> (TempDir, LocalFs) {
    let dir = TempDir::new().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let fs = open(&dir, mode);
    (dir, fs)
}

fn mkfile(fs: &LocalFs, dir: &Handle, name: &str) -> Handle {
    fs.create_file(
        &rootc(),
        dir,
        name.as_bytes(),
        CreateMode::Unchecked,
        &SetAttr::default(),
    )
    .unwrap()
    .0
}

fn mkdir(fs: &LocalFs, dir: &Handle, name: &str) -> Handle {
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

fn list(fs: &LocalFs, dir: &Handle) -> Vec<String> {
    let mut names = Vec::new();
    let eof = fs
        .readdir(&rootc(), dir, 0, false, &mut |e| {
            names.push(String::from_utf8_lossy(&e.name).into_owned());
            true
        })
        .unwrap();
    assert!(eof);
    names.sort();
    names
}

#[test]
fn mode_probe_picks_kernel_handles_as_root() {
    let (_d, fs) = setup(None);
    if is_root() {
        assert_eq!(fs.mode, Mode::Kernel);
    } else {
        assert_eq!(fs.mode, Mode::PathMap);
    }
    assert!(fs.root().0.len() <= crate::MAX_HANDLE);
    assert!(fs.getattr(&fs.root()).unwrap().ftype == FileType::Directory);
}

#[test]
fn handles_survive_restart() {
    for mode in MODES {
        let (dir, fs) = setup(mode);
        let r = fs.root();
        let a = mkdir(&fs, &r, "a");
        let b = mkdir(&fs, &a, "b");
        let f = mkfile(&fs, &b, "f");
        fs.write(&rootc(), &f, 0, b"hello", Stability::FileSync)
            .unwrap();
        let fid = fs.getattr(&f).unwrap().fileid;
        drop(fs);
        let fs = open(&dir, mode);
        assert_eq!(fs.root(), r);
        assert_eq!(fs.getattr(&f).unwrap().fileid, fid);
        assert_eq!(fs.read(&rootc(), &f, 0, 100).unwrap().0, &b"hello"[..]);
        let (h, _) = fs.lookup(&rootc(), &b, b"f").unwrap();
        assert_eq!(h, f);
        assert_eq!(fs.lookup_parent(&rootc(), &b).unwrap().0, a);
        assert_eq!(fs.lookup_parent(&rootc(), &a).unwrap().0, r);
    }
}

#[test]
fn deleted_handle_is_stale() {
    for mode in MODES {
        let (dir, fs) = setup(mode);
        let r = fs.root();
        let f = mkfile(&fs, &r, "f");
        let d = mkdir(&fs, &r, "d");
        fs.write(&rootc(), &f, 0, b"x", Stability::Unstable)
            .unwrap();
        fs.remove(&rootc(), &r, b"f").unwrap();
        fs.remove(&rootc(), &r, b"d").unwrap();
        assert_eq!(fs.getattr(&f), Err(Errno(libc::ESTALE)));
        assert_eq!(fs.getattr(&d), Err(Errno(libc::ESTALE)));
        let fs2 = open(&dir, mode);
        assert_eq!(fs2.getattr(&f), Err(Errno(libc::ESTALE)));
        assert_eq!(fs2.getattr(&d), Err(Errno(libc::ESTALE)));
        // Garbage handles are stale too.
        assert_eq!(
            fs2.getattr(&Handle(Bytes::from_static(b"\0\0\0\x01junkjunk"))),
            Err(Errno(libc::ESTALE))
        );
        assert_eq!(
            fs2.getattr(&Handle(Bytes::from_static(b"\0"))),
            Err(Errno(libc::ESTALE))
        );
    }
}

#[test]
fn namespace_operations() {
    for mode in MODES {
        let (_dir, fs) = setup(mode);
        let c = rootc();
        let r = fs.root();
        let f = mkfile(&fs, &r, "file");
        fs.write(&c, &f, 0, b"data", Stability::Unstable).unwrap();
        let d = mkdir(&fs, &r, "dir");
        assert_eq!(fs.getattr(&d).unwrap().mode, 0o755);
        assert_eq!(fs.getattr(&f).unwrap().mode, 0o644);

        // lookup
        let (h, a) = fs.lookup(&c, &r, b"file").unwrap();
        assert_eq!(h, f);
        assert_eq!(a.size, 4);
        assert_eq!(fs.lookup(&c, &r, b"nope"), Err(Errno(libc::ENOENT)));
        assert_eq!(fs.lookup(&c, &f, b"x"), Err(Errno(libc::ENOTDIR)));

        // symlink + readlink
        let (s, sa) = fs
            .create(
                &c,
                &r,
                b"sym",
                &CreateKind::Symlink(Bytes::from_static(b"file")),
                &SetAttr {
                    mode: Some(0o777),
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(sa.ftype, FileType::Symlink);
        assert_eq!(fs.readlink(&c, &s).unwrap(), &b"file"[..]);
        assert_eq!(fs.readlink(&c, &f), Err(Errno(libc::EINVAL)));
        assert_eq!(fs.lookup(&c, &r, b"sym").unwrap().0, s);
        assert_eq!(
            fs.setattr(
                &c,
                &s,
                &SetAttr {
                    mode: Some(0o700),
                    ..Default::default()
                }
            ),
            Err(Errno(libc::EOPNOTSUPP))
        );

        // link (a file, and a symlink itself)
        fs.link(&c, &f, &d, b"hard").unwrap();
        assert_eq!(fs.getattr(&f).unwrap().nlink, 2);
        assert_eq!(fs.lookup(&c, &d, b"hard").unwrap().0, f);
        fs.link(&c, &s, &d, b"hardsym").unwrap();
        let (hs, hsa) = fs.lookup(&c, &d, b"hardsym").unwrap();
        assert_eq!(hs, s);
        assert_eq!(hsa.ftype, FileType::Symlink);
        assert_eq!(fs.link(&c, &d, &r, b"dirlink"), Err(Errno(libc::EISDIR)));
        assert_eq!(fs.link(&c, &f, &d, b"hard"), Err(Errno(libc::EEXIST)));

        // rename
        fs.rename(&c, &r, b"file", &d, b"moved").unwrap();
        assert_eq!(fs.lookup(&c, &r, b"file"), Err(Errno(libc::ENOENT)));
        assert_eq!(fs.lookup(&c, &d, b"moved").unwrap().0, f);
        assert_eq!(fs.getattr(&f).unwrap().size, 4);
        // rename over an existing file: the victim's handle goes stale
        let v = mkfile(&fs, &r, "victim");
        fs.rename(&c, &d, b"moved", &r, b"victim").unwrap();
        assert_eq!(fs.getattr(&v), Err(Errno(libc::ESTALE)));
        assert_eq!(fs.lookup(&c, &r, b"victim").unwrap().0, f);

        // special files
        let (fifo, fa) = fs
            .create(&c, &d, b"fifo", &CreateKind::Fifo, &SetAttr::default())
            .unwrap();
        assert_eq!(fa.ftype, FileType::Fifo);
        assert_eq!(fa.mode, 0o644);
        assert_eq!(fs.read(&c, &fifo, 0, 10), Err(Errno(libc::EINVAL)));
        let (_, sk) = fs
            .create(&c, &d, b"sock", &CreateKind::Socket, &SetAttr::default())
            .unwrap();
        assert_eq!(sk.ftype, FileType::Socket);
        assert_eq!(fs.read(&c, &d, 0, 10), Err(Errno(libc::EISDIR)));

        // remove: non-empty dir fails, files and empty dirs succeed
        assert_eq!(fs.remove(&c, &r, b"dir"), Err(Errno(libc::ENOTEMPTY)));
        for n in ["hard", "hardsym", "fifo", "sock"] {
            fs.remove(&c, &d, n.as_bytes()).unwrap();
        }
        fs.remove(&c, &r, b"dir").unwrap();
        assert_eq!(fs.remove(&c, &r, b"dir"), Err(Errno(libc::ENOENT)));
        assert_eq!(list(&fs, &r), vec!["sym".to_string(), "victim".to_string()]);

        // name checks
        for bad in [&b""[..], b".", b"..", b"a/b", b"a\0b"] {
            assert_eq!(fs.lookup(&c, &r, bad), Err(Errno(libc::EINVAL)));
            assert_eq!(
                fs.create_file(&c, &r, bad, CreateMode::Guarded, &SetAttr::default())
                    .map(|_| ()),
                Err(Errno(libc::EINVAL))
            );
        }
        let long = vec![b'x'; 256];
        assert_eq!(fs.lookup(&c, &r, &long), Err(Errno(libc::ENAMETOOLONG)));
        assert!(fs.lookup(&c, &r, &long[..255]).is_err());
    }
}

#[test]
fn device_nodes() {
    require_root();
    for mode in MODES {
        let (_dir, fs) = setup(mode);
        let (c, r) = (rootc(), fs.root());
        let (h, a) = fs
            .create(
                &c,
                &r,
                b"null",
                &CreateKind::Char(1, 3),
                &SetAttr::default(),
            )
            .unwrap();
        assert_eq!((a.ftype, a.rdev), (FileType::Char, (1, 3)));
        assert_eq!(fs.read(&c, &h, 0, 1), Err(Errno(libc::EINVAL)));
        fs.remove(&c, &r, b"null").unwrap();
    }
}

#[test]
fn path_map_follows_renamed_directories() {
    let (dir, fs) = setup(Some(Mode::PathMap));
    let c = rootc();
    let r = fs.root();
    let a = mkdir(&fs, &r, "a");
    let b = mkdir(&fs, &a, "b");
    let f = mkfile(&fs, &b, "f");
    fs.rename(&c, &r, b"a", &r, b"z").unwrap();
    lock(&fs.fds).clear();
    assert_eq!(fs.lookup(&c, &b, b"f").unwrap().0, f);
    assert!(fs.getattr(&f).is_ok());
    // A rename behind the backend's back is found by a rescan.
    std::fs::rename(dir.path().join("z"), dir.path().join("y")).unwrap();
    lock(&fs.fds).clear();
    assert!(fs.getattr(&f).is_ok());
    assert_eq!(lock(&fs.paths).get(&f).unwrap(), PathBuf::from("y/b/f"));
}

#[test]
fn readdir_pages_and_restart() {
    for mode in MODES {
        let (dir, fs) = setup(mode);
        let r = fs.root();
        let d = mkdir(&fs, &r, "big");
        for i in 0..1000 {
            std::fs::File::create(dir.path().join(format!("big/entry-{i:04}"))).unwrap();
        }
        let mut seen = Vec::new();
        let mut cookies = Vec::new();
        let mut cookie = 0;
        loop {
            let mut page = Vec::new();
            let eof = fs
                .readdir(&rootc(), &d, cookie, true, &mut |e| {
                    if page.len() == 100 {
                        return false;
                    }
                    page.push(e);
                    true
                })
                .unwrap();
            for e in &page {
                assert!(e.cookie > 2, "bad cookie {}", e.cookie);
                let (h, a) = e.obj.clone().unwrap();
                assert_eq!(a.fileid, e.fileid);
                assert_eq!(a.ftype, FileType::Regular);
                assert_eq!(fs.getattr(&h).unwrap().fileid, e.fileid);
                seen.push(String::from_utf8(e.name.to_vec()).unwrap());
                cookies.push(e.cookie);
            }
            if eof {
                break;
            }
            cookie = page.last().map(|e| e.cookie).unwrap();
            assert!(page.len() == 100);
        }
        assert_eq!(seen.len(), 1000);
        let uniq: HashSet<_> = seen.iter().cloned().collect();
        assert_eq!(uniq.len(), 1000);
        // Resume after a restart from the 437th entry's cookie.
        drop(fs);
        let fs = open(&dir, mode);
        let mut rest = Vec::new();
        let eof = fs
            .readdir(&rootc(), &d, cookies[436], false, &mut |e| {
                rest.push(String::from_utf8(e.name.to_vec()).unwrap());
                true
            })
            .unwrap();
        assert!(eof);
        assert_eq!(rest, seen[437..].to_vec());
        // The last cookie resumes at the end.
        let mut n = 0;
        let eof = fs
            .readdir(&rootc(), &d, *cookies.last().unwrap(), false, &mut |_| {
                n += 1;
                true
            })
            .unwrap();
        assert!(eof);
        assert_eq!(n, 0);
    }
}

#[test]
fn cookie_remapping() {
    for off in [0i64, 1, 2] {
        let c = encode_cookie(off);
        assert!(c > 2);
        assert_eq!(decode_cookie(c), off);
    }
    for off in [3i64, 12345, i64::MAX] {
        assert_eq!(encode_cookie(off), off as u64);
        assert_eq!(decode_cookie(off as u64), off);
    }
}

#[test]
fn exclusive_create() {
    let (_dir, fs) = setup(None);
    let c = rootc();
    let r = fs.root();
    let v1 = *b"\xde\xad\xbe\xef\x01\x02\x03\x04";
    let v2 = *b"abcdefgh";
    let set = SetAttr {
        mode: Some(0o600),
        ..Default::default()
    };
    let (h, a, created) = fs
        .create_file(&c, &r, b"x", CreateMode::Exclusive(v1), &set)
        .unwrap();
    assert!(created);
    assert_eq!(a.mode, 0o600);
    let (h2, _, created2) = fs
        .create_file(&c, &r, b"x", CreateMode::Exclusive(v1), &set)
        .unwrap();
    assert!(!created2);
    assert_eq!(h, h2);
    assert_eq!(
        fs.create_file(&c, &r, b"x", CreateMode::Exclusive(v2), &set)
            .map(|_| ()),
        Err(Errno(libc::EEXIST))
    );
    assert_eq!(
        fs.create_file(&c, &r, b"x", CreateMode::Guarded, &set)
            .map(|_| ()),
        Err(Errno(libc::EEXIST))
    );
    // Unchecked opens it, leaving attributes alone except the size.
    fs.write(&c, &h, 0, b"abc", Stability::Unstable).unwrap();
    let (h3, a3, created3) = fs
        .create_file(
            &c,
            &r,
            b"x",
            CreateMode::Unchecked,
            &SetAttr {
                mode: Some(0o666),
                size: Some(0),
                ..Default::default()
            },
        )
        .unwrap();
    assert!(!created3);
    assert_eq!(h3, h);
    assert_eq!(a3.mode, 0o600);
    assert_eq!(a3.size, 0);
    // Unchecked on a directory.
    mkdir(&fs, &r, "d");
    assert_eq!(
        fs.create_file(&c, &r, b"d", CreateMode::Unchecked, &SetAttr::default())
            .map(|_| ()),
        Err(Errno(libc::EISDIR))
    );
}

#[test]
fn change_attribute_moves_on_every_write() {
    let (_dir, fs) = setup(None);
    let c = rootc();
    let r = fs.root();
    let f = mkfile(&fs, &r, "f");
    let mut last = fs.getattr(&f).unwrap().change;
    let mut dir_last = fs.getattr(&r).unwrap().change;
    for i in 0..5u8 {
        fs.write(&c, &f, 0, &[i], Stability::Unstable).unwrap();
        let now = fs.getattr(&f).unwrap().change;
        assert_ne!(now, last);
        assert!(now > last);
        last = now;
        // Same value on repeated getattrs.
        assert_eq!(fs.getattr(&f).unwrap().change, now);
        let name = format!("n{i}");
        mkfile(&fs, &r, &name);
        let dnow = fs.getattr(&r).unwrap().change;
        assert!(dnow > dir_last);
        dir_last = dnow;
    }
    let a = fs
        .setattr(
            &c,
            &f,
            &SetAttr {
                mode: Some(0o640),
                ..Default::default()
            },
        )
        .unwrap();
    assert!(a.change > last);
    assert_eq!(a.mode, 0o640);
}

#[test]
fn read_write_setattr() {
    for mode in MODES {
        let (_dir, fs) = setup(mode);
        let c = rootc();
        let r = fs.root();
        let f = mkfile(&fs, &r, "f");
        for i in 0..8u64 {
            let st = fs
                .write(&c, &f, i * 4096, &[i as u8; 4096], Stability::DataSync)
                .unwrap();
            assert_eq!(st, Stability::DataSync);
        }
        fs.commit(&f).unwrap();
        let (data, eof) = fs.read(&c, &f, 0, 4096).unwrap();
        assert_eq!(data.len(), 4096);
        assert!(!eof);
        let (data, eof) = fs.read(&c, &f, 7 * 4096, 8192).unwrap();
        assert_eq!(data.len(), 4096);
        assert!(data.iter().all(|&b| b == 7));
        assert!(eof);
        let (data, eof) = fs.read(&c, &f, 1 << 20, 10).unwrap();
        assert!(data.is_empty() && eof);
        let a = fs
            .setattr(
                &c,
                &f,
                &SetAttr {
                    size: Some(10),
                    mode: Some(0o4755 | 0o170000),
                    atime: Some(SetTime::Client(Timespec { sec: 1000, nsec: 5 })),
                    mtime: Some(SetTime::Client(Timespec { sec: 2000, nsec: 0 })),
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(a.size, 10);
        assert_eq!(a.mode, 0o4755);
        assert_eq!(a.atime, Timespec { sec: 1000, nsec: 5 });
        assert_eq!(a.mtime, Timespec { sec: 2000, nsec: 0 });
        let a = fs
            .setattr(
                &c,
                &f,
                &SetAttr {
                    mtime: Some(SetTime::ServerNow),
                    ..Default::default()
                },
            )
            .unwrap();
        assert!(a.mtime.sec > 2000);
        assert_eq!(a.atime, Timespec { sec: 1000, nsec: 5 });
        let fsst = fs.fsstat(&r).unwrap();
        assert!(fsst.total_bytes > 0 && fsst.max_name == 255);
        assert_eq!(
            fs.setattr(
                &c,
                &r,
                &SetAttr {
                    size: Some(0),
                    ..Default::default()
                }
            ),
            Err(Errno(libc::EISDIR))
        );
    }
}

#[test]
fn lookup_parent_at_root_is_enoent() {
    for mode in MODES {
        let (_dir, fs) = setup(mode);
        let r = fs.root();
        assert_eq!(fs.lookup_parent(&rootc(), &r), Err(Errno(libc::ENOENT)));
        let d = mkdir(&fs, &r, "d");
        assert_eq!(fs.lookup_parent(&rootc(), &d).unwrap().0, r);
        let f = mkfile(&fs, &r, "f");
        assert_eq!(fs.lookup_parent(&rootc(), &f), Err(Errno(libc::ENOTDIR)));
    }
}

#[test]
fn handles_outside_the_export_are_refused() {
    let (dir, fs) = setup(None);
    let export_dev = std::fs::metadata(dir.path()).unwrap().dev();
    let mut checked = 0;
    for outside in ["/etc/passwd", "/etc", "/"] {
        let Ok(md) = std::fs::symlink_metadata(outside) else {
            continue;
        };
        if md.dev() != export_dev {
            continue;
        }
        let p = CString::new(outside).unwrap();
        let h = fs.handle_at(libc::AT_FDCWD, &p, 0).unwrap();
        assert_eq!(fs.getattr(&h), Err(Errno(libc::ESTALE)), "{outside}");
        assert_eq!(
            fs.lookup(&rootc(), &h, b"passwd").map(|_| ()),
            Err(Errno(libc::ESTALE))
        );
        checked += 1;
    }
    // A sibling of the export on the same file system.
    let sib = TempDir::new().unwrap();
    std::fs::write(sib.path().join("secret"), b"s").unwrap();
    let p = CString::new(sib.path().join("secret").as_os_str().as_bytes()).unwrap();
    let h = fs.handle_at(libc::AT_FDCWD, &p, 0).unwrap();
    let p = CString::new(sib.path().as_os_str().as_bytes()).unwrap();
    let hd = fs.handle_at(libc::AT_FDCWD, &p, 0).unwrap();
    if fs.mode == Mode::Kernel {
        assert_eq!(fs.getattr(&h), Err(Errno(libc::ESTALE)));
        assert_eq!(fs.getattr(&hd), Err(Errno(libc::ESTALE)));
    }
    let pm = open(&dir, Some(Mode::PathMap));
    assert_eq!(pm.getattr(&h), Err(Errno(libc::ESTALE)));
    assert_eq!(pm.getattr(&hd), Err(Errno(libc::ESTALE)));
    // ".." of a top-level directory is the root, never above it.
    let d = mkdir(&fs, &fs.root(), "d");
    assert_eq!(fs.lookup_parent(&rootc(), &d).unwrap().0, fs.root());
    eprintln!("checked {checked} outside objects");
}

/// The calling thread's fsuid, read without changing it.
fn current_fsuid() -> u32 {
    sys::setfsuid_thread(u32::MAX)
}

#[test]
fn credentials_are_switched_per_call() {
    require_root();
    let (dir, fs) = setup(None);
    let r = fs.root();
    let u = user(1000);
    let (f, a, _) = fs
        .create_file(&u, &r, b"mine", CreateMode::Guarded, &SetAttr::default())
        .unwrap();
    assert_eq!((a.uid, a.gid), (1000, 1000));
    let md = std::fs::metadata(dir.path().join("mine")).unwrap();
    assert_eq!((md.uid(), md.gid()), (1000, 1000));
    assert_eq!(current_fsuid(), 0, "identity restored after the call");
    let (sd, sda) = fs
        .create(
            &u,
            &r,
            b"subdir",
            &CreateKind::Directory,
            &SetAttr::default(),
        )
        .unwrap();
    assert_eq!((sda.uid, sda.gid), (1000, 1000));

    // A root-owned 0644 file: uid 1000 may read but not write it.
    let rf = mkfile(&fs, &r, "rootfile");
    fs.write(&rootc(), &rf, 0, b"root data", Stability::Unstable)
        .unwrap();
    assert_eq!(
        fs.write(&u, &rf, 0, b"x", Stability::Unstable),
        Err(Errno(libc::EACCES))
    );
    assert_eq!(fs.read(&u, &rf, 0, 100).unwrap().0, &b"root data"[..]);
    assert_eq!(
        fs.setattr(
            &u,
            &rf,
            &SetAttr {
                size: Some(0),
                ..Default::default()
            }
        ),
        Err(Errno(libc::EACCES))
    );
    assert_eq!(
        fs.setattr(
            &u,
            &rf,
            &SetAttr {
                mode: Some(0o777),
                ..Default::default()
            }
        ),
        Err(Errno(libc::EPERM))
    );
    assert_eq!(fs.remove(&u, &sd, b"x"), Err(Errno(libc::ENOENT)));
    assert_eq!(current_fsuid(), 0);

    // access() answers as the kernel would.
    assert!(fs.access(&u, &rf, libc::R_OK).unwrap());
    assert!(!fs.access(&u, &rf, libc::W_OK).unwrap());
    assert!(!fs.access(&u, &rf, libc::X_OK).unwrap());
    assert!(fs.access(&rootc(), &rf, libc::R_OK | libc::W_OK).unwrap());
    assert!(!fs.access(&rootc(), &rf, libc::X_OK).unwrap());
    assert!(fs.access(&u, &f, libc::R_OK | libc::W_OK).unwrap());
    assert!(fs.access(&u, &r, libc::X_OK | libc::W_OK).unwrap());
    // Group membership through supplementary groups.
    let g = mkfile(&fs, &r, "groupfile");
    fs.setattr(
        &rootc(),
        &g,
        &SetAttr {
            gid: Some(4242),
            mode: Some(0o660),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!fs.access(&u, &g, libc::W_OK).unwrap());
    let ug = Creds {
        uid: 1000,
        gid: 1000,
        groups: vec![4242],
    };
    assert!(fs.access(&ug, &g, libc::W_OK).unwrap());
    fs.write(&ug, &g, 0, b"group", Stability::Unstable).unwrap();
    assert!(!fs.access(&u, &g, libc::R_OK).unwrap());
    assert_eq!(fs.read(&u, &g, 0, 10), Err(Errno(libc::EACCES)));

    // Owner override: the owner writes his 0444 file.
    fs.setattr(
        &u,
        &f,
        &SetAttr {
            mode: Some(0o444),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!fs.access(&u, &f, libc::W_OK).unwrap());
    fs.write(&u, &f, 0, b"owner", Stability::Unstable).unwrap();
    assert_eq!(fs.read(&u, &f, 0, 10).unwrap().0, &b"owner"[..]);
    // ...but another user may not.
    assert_eq!(
        fs.write(&user(1001), &f, 0, b"x", Stability::Unstable),
        Err(Errno(libc::EACCES))
    );

    // Directory permissions are enforced for namespace operations.
    let (locked, _) = fs
        .create(
            &rootc(),
            &r,
            b"locked",
            &CreateKind::Directory,
            &SetAttr {
                mode: Some(0o755),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(
        fs.create_file(&u, &locked, b"x", CreateMode::Guarded, &SetAttr::default())
            .map(|_| ()),
        Err(Errno(libc::EACCES))
    );
    assert_eq!(
        fs.create(
            &u,
            &locked,
            b"x",
            &CreateKind::Directory,
            &SetAttr::default()
        )
        .map(|_| ()),
        Err(Errno(libc::EACCES))
    );
    assert_eq!(fs.remove(&u, &r, b"rootfile"), Ok(()));
    assert_eq!(
        fs.rename(&u, &r, b"groupfile", &locked, b"g"),
        Err(Errno(libc::EACCES))
    );
    // A device node needs CAP_MKNOD, which uid 1000 lacks.
    assert_eq!(
        fs.create(&u, &r, b"dev", &CreateKind::Char(1, 3), &SetAttr::default())
            .map(|_| ()),
        Err(Errno(libc::EPERM))
    );
    // Chown to someone else is refused and the new file is cleaned up.
    assert_eq!(
        fs.create_file(
            &u,
            &r,
            b"given",
            CreateMode::Guarded,
            &SetAttr {
                uid: Some(0),
                ..Default::default()
            }
        )
        .map(|_| ()),
        Err(Errno(libc::EPERM))
    );
    assert_eq!(fs.lookup(&rootc(), &r, b"given"), Err(Errno(libc::ENOENT)));
    // Unreadable directory.
    fs.setattr(
        &rootc(),
        &locked,
        &SetAttr {
            mode: Some(0o711),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        fs.readdir(&u, &locked, 0, false, &mut |_| true),
        Err(Errno(libc::EACCES))
    );
    assert!(fs
        .readdir(&rootc(), &locked, 0, false, &mut |_| true)
        .unwrap());
    // Readable but not searchable: names without attributes.
    fs.create_file(
        &rootc(),
        &locked,
        b"inside",
        CreateMode::Guarded,
        &SetAttr::default(),
    )
    .unwrap();
    fs.setattr(
        &rootc(),
        &locked,
        &SetAttr {
            mode: Some(0o744),
            ..Default::default()
        },
    )
    .unwrap();
    let mut got = Vec::new();
    assert!(fs
        .readdir(&u, &locked, 0, true, &mut |e| {
            got.push((e.name.clone(), e.obj.is_some()));
            true
        })
        .unwrap());
    assert_eq!(got, vec![(Bytes::from_static(b"inside"), false)]);
    assert_eq!(
        fs.lookup(&u, &locked, b"inside").map(|_| ()),
        Err(Errno(libc::EACCES))
    );
    got.clear();
    fs.readdir(&rootc(), &locked, 0, true, &mut |e| {
        got.push((e.name.clone(), e.obj.is_some()));
        true
    })
    .unwrap();
    assert_eq!(got, vec![(Bytes::from_static(b"inside"), true)]);
    // uid u32::MAX cannot be assumed: refused rather than run as root.
    assert_eq!(
        fs.create_file(
            &user(u32::MAX),
            &r,
            b"bad",
            CreateMode::Guarded,
            &SetAttr::default()
        )
        .map(|_| ()),
        Err(Errno(libc::EPERM))
    );
    assert_eq!(current_fsuid(), 0);
}

#[test]
fn credentials_do_not_leak_across_threads() {
    require_root();
    let (_dir, fs) = setup(None);
    let fs = Arc::new(fs);
    let r = fs.root();
    let mut threads = Vec::new();
    for t in 0..4u32 {
        let fs = fs.clone();
        let r = r.clone();
        threads.push(std::thread::spawn(move || {
            for i in 0..50 {
                let u = user(2000 + t);
                let name = format!("t{t}-{i}");
                let (_, a, _) = fs
                    .create_file(
                        &u,
                        &r,
                        name.as_bytes(),
                        CreateMode::Guarded,
                        &SetAttr::default(),
                    )
                    .unwrap();
                assert_eq!(a.uid, 2000 + t);
                assert_eq!(current_fsuid(), 0);
            }
        }));
    }
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
#[ignore = "drops the machine's dentry cache; run by hand"]
fn disconnected_dentries_resolve() {
    let dir = TempDir::new_in("/var/tmp").unwrap();
    let (f, d) = {
        let fs = open(&dir, None);
        let r = fs.root();
        let d = mkdir(&fs, &r, "d");
        let f = mkfile(&fs, &d, "f");
        (f, d)
    };
    std::fs::write("/proc/sys/vm/drop_caches", "2").unwrap();
    let fs = open(&dir, None);
    let o = fs.resolve(&f).unwrap();
    eprintln!(
        "path after drop: {:?}",
        std::fs::read_link(format!("/proc/self/fd/{}", o.raw()))
    );
    assert!(fs.getattr(&d).is_ok());
}

#[test]
fn allocate_deallocate_seek() {
    let (_dir, fs) = setup(None);
    let c = rootc();
    let f = mkfile(&fs, &fs.root(), "sparse");
    fs.write(&c, &f, 1 << 20, b"tail", Stability::Unstable)
        .unwrap();
    assert_eq!(fs.seek(&c, &f, 0, SeekWhat::Hole).unwrap(), Some(0));
    assert_eq!(fs.seek(&c, &f, 0, SeekWhat::Data).unwrap(), Some(1 << 20));
    assert_eq!(fs.seek(&c, &f, 2 << 20, SeekWhat::Data).unwrap(), None);
    fs.allocate(&c, &f, 0, 8192).unwrap();
    assert!(fs.getattr(&f).unwrap().used >= 8192);
    fs.allocate(&c, &f, 0, 4 << 20).unwrap();
    assert_eq!(fs.getattr(&f).unwrap().size, 4 << 20);
    fs.write(&c, &f, 0, &[1u8; 8192], Stability::Unstable)
        .unwrap();
    fs.deallocate(&c, &f, 0, 8192).unwrap();
    assert_eq!(fs.read(&c, &f, 0, 8192).unwrap().0, vec![0u8; 8192]);
    assert_eq!(fs.getattr(&f).unwrap().size, 4 << 20);
    assert_eq!(fs.allocate(&c, &fs.root(), 0, 1), Err(Errno(libc::EISDIR)));
}

#[test]
#[ignore = "timing only"]
fn bench_sequential_io() {
    let (_dir, fs) = setup(None);
    let u = user(1000);
    let (f, _, _) = fs
        .create_file(
            &u,
            &fs.root(),
            b"b",
            CreateMode::Guarded,
            &SetAttr::default(),
        )
        .unwrap();
    let block = vec![7u8; 4096];
    let t = std::time::Instant::now();
    for i in 0..20_000u64 {
        fs.write(&u, &f, i * 4096, &block, Stability::Unstable)
            .unwrap();
    }
    let w = t.elapsed();
    let t = std::time::Instant::now();
    for i in 0..20_000u64 {
        fs.read(&u, &f, i * 4096, 4096).unwrap();
    }
    eprintln!("20k 4KiB writes {:?}, reads {:?}", w, t.elapsed());
    let other = user(1001);
    let t = std::time::Instant::now();
    for i in 0..20_000u64 {
        fs.read(&other, &f, i * 4096, 4096).unwrap();
    }
    eprintln!("20k 4KiB reads by non-owner {:?}", t.elapsed());
}

/// `read_nowait` answers only from a file already open for I/O, for its
/// owner, and then as `read` does; otherwise it leaves the call to `read`.
#[test]
fn read_nowait_answers_cached_reads_and_leaves_the_rest() {
    require_root();
    let (_d, fs) = setup(None);
    let root = fs.root();
    let h = mkfile(&fs, &root, "f");
    fs.write(&rootc(), &h, 0, b"hello, world", Stability::FileSync)
        .unwrap();
    drop(lock(&fs.files).remove(&h));
    // Not open for I/O yet.
    assert_eq!(fs.read_nowait(&rootc(), &h, 0, 5), None);
    assert_eq!(fs.read(&rootc(), &h, 0, 5).unwrap().0, &b"hello"[..]);
    for (off, count) in [(0, 5), (7, 100), (0, 12), (12, 1), (100, 1), (3, 0)] {
        assert_eq!(
            fs.read_nowait(&rootc(), &h, off, count),
            Some(fs.read(&rootc(), &h, off, count)),
            "{off} {count}"
        );
    }
    // Another user's read needs a permission check as that user: left to
    // `read`, which decides.
    let mut p = std::fs::metadata(_d.path().join("f"))
        .unwrap()
        .permissions();
    p.set_mode(0o600);
    std::fs::set_permissions(_d.path().join("f"), p).unwrap();
    assert_eq!(fs.read_nowait(&user(1000), &h, 0, 5), None);
    assert_eq!(fs.read(&user(1000), &h, 0, 5), Err(Errno(libc::EACCES)));
    // Removed: left to `read`, which says it is stale.
    fs.remove(&rootc(), &root, b"f").unwrap();
    assert_eq!(fs.read_nowait(&rootc(), &h, 0, 5), None);
    assert_eq!(fs.read(&rootc(), &h, 0, 5), Err(Errno(libc::ESTALE)));
}

/// `read_slice_nowait` answers as `read` does, with a range of the open
/// file, where `read_nowait` would (a file open for I/O, its owner) and
/// every page of the range is in the page cache; otherwise it leaves the
/// call to the others.
#[test]
fn read_slice_nowait_gives_ranges_of_cached_open_files() {
    require_root();
    if !super::page_cache_visible() {
        eprintln!("cachestat(2) unsupported by this kernel: no range is ever given; checking that");
    }
    let (_d, fs) = setup(None);
    let root = fs.root();
    let h = mkfile(&fs, &root, "f");
    let data: Vec<u8> = (0..300_000u32).map(|k| (k % 251) as u8).collect();
    fs.write(&rootc(), &h, 0, &data, Stability::Unstable)
        .unwrap();
    drop(lock(&fs.files).remove(&h));
    // Not open for I/O yet.
    assert!(fs.read_slice_nowait(&rootc(), &h, 0, 5, 0).is_none());
    assert_eq!(fs.read(&rootc(), &h, 0, 5).unwrap().0, &data[..5]);
    if !super::page_cache_visible() {
        assert!(fs.read_slice_nowait(&rootc(), &h, 0, 65536, 0).is_none());
        return;
    }
    let before = super::read_slices();
    for (off, count) in [
        (0u64, 65536u32),
        (4097, 100_000),
        (250_000, 100_000),
        (1, 299_999),
    ] {
        let (slice, eof) = fs
            .read_slice_nowait(&rootc(), &h, off, count, 0)
            .expect("a cached range")
            .unwrap();
        let (want, want_eof) = fs.read(&rootc(), &h, off, count).unwrap();
        assert_eq!((slice.offset, slice.len, eof), (off, want.len(), want_eof));
        assert_eq!(slice.read().unwrap(), want, "{off} {count}");
    }
    assert_eq!(super::read_slices(), before + 4);
    // Shorter than asked for (the file ends sooner): left to the others.
    assert!(fs
        .read_slice_nowait(&rootc(), &h, 290_000, 65536, 65536)
        .is_none());
    assert!(fs
        .read_slice_nowait(&rootc(), &h, 0, 65536, 65536)
        .is_some());
    // Nothing to send: left to the others.
    assert!(fs.read_slice_nowait(&rootc(), &h, 300_000, 10, 0).is_none());
    assert!(fs.read_slice_nowait(&rootc(), &h, 0, 0, 0).is_none());
    // Not in the page cache: left to the others.
    let f = lock(&fs.files).get(&h).unwrap();
    f.sync_all().unwrap();
    // SAFETY: advice on an open descriptor.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if sys::cached_in_full(f.as_raw_fd(), 0, 300_000) == Some(false) {
        assert!(fs.read_slice_nowait(&rootc(), &h, 0, 300_000, 0).is_none());
    }
    // Another user: left to `read`, which checks permission as that user.
    assert!(fs.read_slice_nowait(&user(1000), &h, 0, 65536, 0).is_none());
}

/// `write_wcc` writes as `write` does and gives the attributes `getattr`
/// gives just before and just after; a directory is EISDIR, as for
/// `write`.
#[test]
fn write_wcc_gives_the_attributes_either_side() {
    require_root();
    let (_d, fs) = setup(None);
    let root = fs.root();
    let h = mkfile(&fs, &root, "f");
    fs.write(&rootc(), &h, 0, b"abc", Stability::Unstable)
        .unwrap();
    let first = fs.getattr(&h).unwrap();
    let (before, after) = fs.write_wcc(&rootc(), &h, 3, b"defg").unwrap();
    assert_eq!(before, first);
    assert_eq!(after, fs.getattr(&h).unwrap());
    assert_eq!((before.size, after.size), (3, 7));
    assert!(after.change > before.change, "the change attribute moves");
    assert_eq!(fs.read(&rootc(), &h, 0, 10).unwrap().0, &b"abcdefg"[..]);
    let dir = mkdir(&fs, &root, "d");
    assert_eq!(
        fs.write_wcc(&rootc(), &dir, 0, b"x"),
        Err(Errno(libc::EISDIR))
    );
}

/// `lookup_nowait` answers names the kernel's dentry cache holds, in a
/// directory whose descriptor is cached, for callers needing no
/// permission system call, and then as `lookup` does.
#[test]
fn lookup_nowait_answers_cached_names_as_lookup_does() {
    require_root();
    let (_d, fs) = setup(None);
    let root = fs.root();
    let sub = mkdir(&fs, &root, "sub");
    let f = mkfile(&fs, &sub, "f");
    // Warm: the names were just made.
    let got = fs
        .lookup_nowait(&rootc(), &sub, b"f")
        .expect("a cached name");
    assert_eq!(got, fs.lookup(&rootc(), &sub, b"f"));
    assert_eq!(got.unwrap().0, f);
    assert_eq!(
        fs.lookup_nowait(&rootc(), &root, b"sub")
            .map(|r| r.map(|(h, _)| h)),
        Some(Ok(sub.clone()))
    );
    // A name known not to exist, once looked up.
    assert_eq!(fs.lookup(&rootc(), &sub, b"nope"), Err(Errno(libc::ENOENT)));
    assert!(matches!(
        fs.lookup_nowait(&rootc(), &sub, b"nope"),
        None | Some(Err(Errno(libc::ENOENT)))
    ));
    // Bad names, as lookup says.
    assert_eq!(
        fs.lookup_nowait(&rootc(), &sub, b".."),
        Some(Err(Errno(libc::EINVAL)))
    );
    // Another user needs a permission check as that user: left to lookup.
    assert_eq!(fs.lookup_nowait(&user(1000), &sub, b"f"), None);
    // Not a directory: left to lookup, which says so.
    assert_eq!(fs.lookup_nowait(&rootc(), &f, b"x"), None);
}

/// `lookup_parent_nowait` answers as `lookup_parent` does (ENOENT at the
/// export's root), for directories whose descriptor is cached, and
/// leaves other callers and non-directories to it.
#[test]
fn lookup_parent_nowait_answers_as_lookup_parent_does() {
    require_root();
    let (_d, fs) = setup(None);
    let root = fs.root();
    let sub = mkdir(&fs, &root, "sub");
    let deeper = mkdir(&fs, &sub, "deeper");
    let f = mkfile(&fs, &deeper, "f");
    let got = fs
        .lookup_parent_nowait(&rootc(), &deeper)
        .expect("a cached directory");
    assert_eq!(got, fs.lookup_parent(&rootc(), &deeper));
    assert_eq!(got.unwrap().0, sub);
    assert_eq!(
        fs.lookup_parent_nowait(&rootc(), &root),
        Some(Err(Errno(libc::ENOENT)))
    );
    assert_eq!(fs.lookup_parent_nowait(&user(1000), &deeper), None);
    assert_eq!(fs.lookup_parent_nowait(&rootc(), &f), None);
}

/// `access_nowait` answers read permission for root and the owner, as
/// `access` does, and leaves everything else to `access`.
#[test]
fn access_nowait_answers_root_and_owner_reads() {
    require_root();
    let (d, fs) = setup(None);
    let root = fs.root();
    let f = mkfile(&fs, &root, "f");
    std::os::unix::fs::chown(d.path().join("f"), Some(1000), Some(1000)).unwrap();
    for mode in [0o644, 0o200, 0o000] {
        std::fs::set_permissions(d.path().join("f"), std::fs::Permissions::from_mode(mode))
            .unwrap();
        for c in [rootc(), user(1000)] {
            assert_eq!(
                fs.access_nowait(&c, &f, libc::R_OK),
                Some(fs.access(&c, &f, libc::R_OK)),
                "mode {mode:o} uid {}",
                c.uid
            );
        }
        // Someone else, or another permission: a system call decides.
        assert_eq!(fs.access_nowait(&user(1001), &f, libc::R_OK), None);
        assert_eq!(fs.access_nowait(&rootc(), &f, libc::W_OK), None);
    }
}

/// The names `readdir_nowait` gives for `dir`, if it answers.
fn list_nowait(fs: &LocalFs, dir: &Handle) -> Option<Vec<String>> {
    let mut names = Vec::new();
    let eof = fs.readdir_nowait(&rootc(), dir, 0, &mut |e| {
        names.push(String::from_utf8_lossy(&e.name).into_owned());
        true
    })?;
    assert!(eof.unwrap());
    names.sort();
    Some(names)
}

/// A settled listing is served without blocking even once the
/// directory's descriptor has left the cache (it is found again by its
/// path, from the dentry cache only), and never for another directory
/// that has since taken that path, nor after a local change.
#[test]
fn readdir_nowait_finds_uncached_directories_by_path_and_checks_them() {
    require_root();
    let (d, fs) = setup(None);
    let root = fs.root();
    let a = mkdir(&fs, &root, "a");
    let sub = mkdir(&fs, &a, "sub");
    mkfile(&fs, &sub, "f1");
    mkfile(&fs, &sub, "f2");
    std::thread::sleep(std::time::Duration::from_millis(60)); // settled
    assert_eq!(list(&fs, &sub), ["f1", "f2"]); // now listed and cached
    assert_eq!(
        list_nowait(&fs, &sub),
        Some(vec!["f1".to_string(), "f2".into()])
    );
    fs.forget(&sub); // the descriptor leaves the cache; the listing stays
    assert!(lock(&fs.fds).get(&sub).is_none());
    assert_eq!(
        list_nowait(&fs, &sub),
        Some(vec!["f1".to_string(), "f2".into()])
    );
    assert!(
        lock(&fs.fds).get(&sub).is_none(),
        "a found path is not cached"
    );

    // Another directory at the same path, with the same names: not it.
    let p = d.path().join("a/sub");
    std::fs::rename(&p, d.path().join("moved")).unwrap();
    std::fs::create_dir(&p).unwrap();
    std::fs::write(p.join("f1"), b"").unwrap();
    std::fs::write(p.join("f2"), b"").unwrap();
    assert_eq!(list_nowait(&fs, &sub), None);
    // The directory itself, moved back and changed by a local process:
    // its listing no longer describes it.
    std::fs::remove_dir_all(&p).unwrap();
    std::fs::rename(d.path().join("moved"), &p).unwrap();
    std::fs::write(p.join("f3"), b"").unwrap();
    assert_eq!(list_nowait(&fs, &sub), None);
    assert_eq!(list(&fs, &sub), ["f1", "f2", "f3"]);
}

/// Each metadata change syncs what it changed before it returns: the new
/// object and its directory (the new object alone where the file system
/// keeps its name with it), both directories of a rename, the file whose
/// attributes changed; an `async` export syncs nothing.
#[test]
fn metadata_changes_are_synced_unless_the_export_is_async() {
    for (async_, keeps) in [(false, false), (false, true), (true, false)] {
        let dir = tempfile::tempdir().unwrap();
        let mut fs = LocalFs::new(dir.path()).unwrap();
        fs.set_async(async_);
        fs.set_sync_keeps_new_name(keeps);
        let (c, root) = (rootc(), fs.root());
        let want = |n: u64| if async_ { 0 } else { n };
        let new = if keeps { 1 } else { 2 };
        let mut seen = fs.metadata_syncs();
        let mut step = |fs: &LocalFs, what: &str, n: u64| {
            let now = fs.metadata_syncs();
            assert_eq!(
                now - seen,
                want(n),
                "{what} (async {async_}, keeps {keeps})"
            );
            seen = now;
        };
        let f = mkfile(&fs, &root, "f");
        step(&fs, "create file: the file and the directory", new);
        let d = mkdir(&fs, &root, "d");
        step(&fs, "mkdir: the new directory and its parent", new);
        fs.create(
            &c,
            &d,
            b"s",
            &CreateKind::Symlink(Bytes::from_static(b"f")),
            &SetAttr::default(),
        )
        .unwrap();
        step(&fs, "symlink: its directory, whatever the file system", 1);
        fs.remove(&c, &d, b"s").unwrap();
        step(&fs, "remove the symlink", 1);
        fs.rename(&c, &root, b"f", &d, b"g").unwrap();
        step(&fs, "rename across directories: both", 2);
        fs.rename(&c, &d, b"g", &d, b"h").unwrap();
        step(&fs, "rename within a directory", 1);
        fs.link(&c, &f, &root, b"l").unwrap();
        step(&fs, "link: the directory and the file's link count", 2);
        let set = SetAttr {
            size: Some(10),
            mode: Some(0o600),
            ..Default::default()
        };
        fs.setattr(&c, &f, &set).unwrap();
        step(&fs, "setattr", 1);
        fs.remove(&c, &root, b"l").unwrap();
        step(&fs, "remove", 1);
        // Everything still reads back as changed.
        assert_eq!(fs.getattr(&f).unwrap().size, 10);
        assert_eq!(list(&fs, &d), vec!["h".to_string()]);
    }
}

/// `list_dir_nowait` gives the directory's attributes and its parent's
/// file id (the root's own for the root) with the listing, also for a
/// directory whose descriptor has left the cache; a directory moved to
/// another parent is listed again before it is served, and then names
/// its new parent.
#[test]
fn list_dir_nowait_names_the_parent_it_has_now() {
    require_root();
    let (d, fs) = setup(None);
    let root = fs.root();
    let a = mkdir(&fs, &root, "a");
    let b = mkdir(&fs, &root, "b");
    let sub = mkdir(&fs, &a, "sub");
    mkfile(&fs, &sub, "f1");
    std::thread::sleep(std::time::Duration::from_millis(60)); // settled
    let listed = |h: &Handle| {
        let mut names = Vec::new();
        let l = fs.list_dir_nowait(&rootc(), h, 0, &mut |e| {
            names.push(String::from_utf8_lossy(&e.name).into_owned());
            true
        })?;
        Some((l.unwrap(), names))
    };
    let fileid = |h: &Handle| fs.getattr(h).unwrap().fileid;
    assert!(listed(&sub).is_none(), "never listed: the blocking path");
    assert_eq!(list(&fs, &sub), ["f1"]);
    assert_eq!(list(&fs, &root), ["a", "b"]);
    let (l, names) = listed(&sub).expect("a current listing");
    assert_eq!(names, ["f1"]);
    assert!(l.eof);
    assert_eq!(l.attr, fs.getattr(&sub).unwrap());
    assert_eq!(l.parent_fileid, fileid(&a));
    let (l, _) = listed(&root).expect("the root's listing");
    assert_eq!(l.parent_fileid, fileid(&root));
    fs.forget(&sub);
    assert_eq!(
        listed(&sub).expect("found by its path").0.parent_fileid,
        fileid(&a)
    );

    // Moved under b by a local process: not served until listed again,
    // though its descriptor is cached (its ctime changed).
    fs.getattr(&sub).unwrap();
    assert!(lock(&fs.fds).get(&sub).is_some());
    std::fs::rename(d.path().join("a/sub"), d.path().join("b/sub")).unwrap();
    assert!(listed(&sub).is_none());
    std::thread::sleep(std::time::Duration::from_millis(60));
    assert_eq!(list(&fs, &sub), ["f1"]);
    assert_eq!(
        listed(&sub).expect("listed again").0.parent_fileid,
        fileid(&b)
    );
}

/// The unzeroed reads give exactly what the file holds: at most the
/// length asked for, less at its end, nothing past it.
#[test]
fn reads_into_unzeroed_buffers_stop_at_the_length_and_the_end() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("f");
    let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&p, &data).unwrap();
    let f = std::fs::File::open(&p).unwrap();
    let fd = f.as_raw_fd();
    for (len, off) in [
        (4096, 0u64),
        (100, 9_950),
        (1 << 20, 0),
        (10, 10_000),
        (1, 20_000),
    ] {
        let want = &data[(off as usize).min(data.len())..]
            [..len.min(data.len().saturating_sub(off as usize))];
        assert_eq!(
            &sys::pread_full(fd, len, off).unwrap()[..],
            want,
            "full {len} at {off}"
        );
        // Just written, so in the page cache.
        assert_eq!(
            &sys::pread_nowait(fd, len, off).unwrap()[..],
            want,
            "nowait {len} at {off}"
        );
    }
}

/// The file system type comes from the mount the descriptor is on; only
/// ext4 and XFS keep a new object's name with the object's own sync.
#[test]
fn the_file_system_type_decides_whether_a_create_syncs_its_directory() {
    let proc_ = std::fs::File::open("/proc/self").unwrap();
    assert_eq!(
        sys::mount_fstype(proc_.as_raw_fd()).as_deref(),
        Some("proc")
    );
    let info = "21 1 0:20 / /proc rw,nosuid shared:12 - proc proc rw\n\
                29 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n\
                40 29 0:35 / /mnt/a\\040b rw - fuse.crashfs crashfs rw\n";
    assert_eq!(
        sys::fstype_in_mountinfo(info, "29").as_deref(),
        Some("ext4")
    );
    assert_eq!(
        sys::fstype_in_mountinfo(info, "40").as_deref(),
        Some("fuse.crashfs")
    );
    assert_eq!(sys::fstype_in_mountinfo(info, "2"), None);
    for (t, keeps) in [
        ("ext4", true),
        ("xfs", true),
        ("btrfs", false),
        ("tmpfs", false),
        ("fuse.crashfs", false),
        ("ext2", false),
    ] {
        assert_eq!(super::file_sync_keeps_new_name(t), keeps, "{t}");
    }
    let dir = tempfile::tempdir().unwrap();
    let fs = LocalFs::new(dir.path()).unwrap();
    let t = sys::mount_fstype(std::fs::File::open(dir.path()).unwrap().as_raw_fd()).unwrap();
    assert_eq!(
        fs.sync_keeps_new_name(),
        super::file_sync_keeps_new_name(&t),
        "{t}"
    );
}

/// Inode-number handles (FUSE file systems, `Mode::Stable`) resolve in a
/// new instance that has seen none of them (as after a remount and a
/// restart), by walking the tree; renamed objects keep them; removed ones
/// are stale.
#[test]
fn inode_handles_resolve_in_a_fresh_instance() {
    let (dir, fs) = setup(Some(Mode::Stable));
    let root = fs.root();
    let d = mkdir(&fs, &root, "d");
    let f = mkfile(&fs, &d, "f");
    let gone = mkfile(&fs, &root, "gone");
    let again = LocalFs::open_as(dir.path(), Some(Mode::Stable), &LocalOptions::default()).unwrap();
    assert_eq!(again.root(), root, "the root's handle");
    assert!(again.getattr(&f).is_ok(), "a file two levels down");
    fs.rename(&rootc(), &d, b"f", &root, b"moved").unwrap();
    let third = LocalFs::open_as(dir.path(), Some(Mode::Stable), &LocalOptions::default()).unwrap();
    assert_eq!(third.lookup(&rootc(), &root, b"moved").unwrap().0, f);
    assert!(third.getattr(&f).is_ok());
    fs.remove(&rootc(), &root, b"gone").unwrap();
    assert_eq!(third.getattr(&gone).err(), Some(Errno(libc::ESTALE)));
}

/// A configured fsid is the export's identity: two instances over the
/// same directory agree, and one over another directory with the same
/// fsid does too (the same file system, mounted elsewhere).
#[test]
fn a_configured_fsid_is_the_identity() {
    let a = TempDir::new().unwrap();
    let b = TempDir::new().unwrap();
    let o = LocalOptions {
        fsid: Some("42".into()),
    };
    let x = LocalFs::with_options(a.path(), &o).unwrap();
    let y = LocalFs::with_options(b.path(), &o).unwrap();
    assert_eq!(x.root_identity(), y.root_identity());
    assert_eq!(x.identity(), &Identity::Configured("42".into()));
    let plain = LocalFs::new(a.path()).unwrap();
    assert_ne!(plain.root_identity(), x.root_identity());
    assert_eq!(plain.identity(), &Identity::FileSystem);
}

/// The marker made on a root is kept there and read back.
#[test]
fn the_marker_is_made_once_and_kept() {
    let a = TempDir::new().unwrap();
    let fd = sys::openat(
        libc::AT_FDCWD,
        &CString::new(a.path().as_os_str().as_bytes()).unwrap(),
        libc::O_RDONLY | libc::O_DIRECTORY,
        0,
    )
    .unwrap();
    let first = marker(a.path(), fd.as_raw_fd(), Some("fuse.test")).unwrap();
    assert_eq!(first.len(), 32);
    assert_eq!(
        marker(a.path(), fd.as_raw_fd(), Some("fuse.test")).unwrap(),
        first
    );
}

/// A file removed (or renamed over) while the server holds state on it
/// stays reachable through its handle with nlink 0, readable and
/// writable, until released; one nobody holds goes at once (ESTALE).
#[test]
fn removed_files_are_kept_for_their_holders_until_released() {
    for mode in MODES {
        let (_d, fs) = setup(mode);
        let root = fs.root();
        let kept = mkfile(&fs, &root, "kept");
        let gone = mkfile(&fs, &root, "gone");
        let over = mkfile(&fs, &root, "over");
        let moved = mkfile(&fs, &root, "moved");
        for h in [&kept, &gone, &over] {
            fs.write(&rootc(), h, 0, b"data", Stability::FileSync)
                .unwrap();
        }
        let holds = |h: &Handle| *h == kept || *h == over;
        fs.remove_keeping(&rootc(), &root, b"kept", &holds).unwrap();
        fs.remove_keeping(&rootc(), &root, b"gone", &holds).unwrap();
        fs.rename_keeping(&rootc(), (&root, b"moved"), (&root, b"over"), &holds)
            .unwrap();
        for h in [&kept, &over] {
            assert_eq!(fs.getattr(h).unwrap().nlink, 0, "{mode:?}");
            assert_eq!(fs.read(&rootc(), h, 0, 10).unwrap().0.as_ref(), b"data");
            fs.write(&rootc(), h, 4, b"more", Stability::FileSync)
                .unwrap();
            assert_eq!(fs.getattr(h).unwrap().size, 8);
        }
        assert_eq!(
            fs.getattr(&gone).unwrap_err(),
            Errno(libc::ESTALE),
            "{mode:?}"
        );
        // The renamed file is under its new name.
        assert_eq!(fs.lookup(&rootc(), &root, b"over").unwrap().0, moved);
        for h in [&kept, &over] {
            fs.release_unlinked(h);
            assert_eq!(fs.getattr(h).unwrap_err(), Errno(libc::ESTALE), "{mode:?}");
        }
    }
}

/// A local process's lock on `f`: whether it was granted. The test
/// process stands for the local process, locking through its own open
/// file description (`F_OFD_SETLK`: a POSIX lock would be dropped
/// whenever the backend, in the same process, closes a descriptor of the
/// file; e2e's shared_locks.rs runs a separate process for those).
fn local_lock(f: &std::fs::File, kind: libc::c_int, start: i64, len: i64) -> bool {
    // SAFETY: flock is plain data; fcntl reads it from a live descriptor.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = kind as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = start;
    fl.l_len = len;
    unsafe { libc::fcntl(f.as_raw_fd(), libc::F_OFD_SETLK, &fl) == 0 }
}

fn owner(group: u64, name: &[u8]) -> crate::LockOwner<'_> {
    crate::LockOwner { group, name }
}

/// NFS owners' locks are the kernel's: a local process's lock and theirs
/// refuse each other both ways, a refused lock leaves no description
/// open, the holder is named, and a released owner's locks go.
#[test]
fn shared_locks_conflict_with_local_processes_both_ways() {
    use crate::ShareLock;
    let (dir, fs) = setup(None);
    let root = fs.root();
    let h = mkfile(&fs, &root, "f");
    let local = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.path().join("f"))
        .unwrap();
    let a = owner(1, b"a");
    assert_eq!(fs.share_lock(&h, a, (0, 100), true, true), ShareLock::Taken);
    assert!(!local_lock(&local, libc::F_RDLCK, 50, 1));
    assert!(local_lock(&local, libc::F_WRLCK, 100, 10));
    // Another NFS owner is refused by the local lock, and told whose.
    let b = owner(2, b"b");
    match fs.share_lock(&h, b, (105, 106), false, true) {
        ShareLock::Held(l) => {
            assert_eq!((l.start, l.end, l.write), (100, 110, true));
            assert_eq!(l.pid, 0);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(fs.lock_descs.open_count(), 1);
    let t = fs.share_test(&h, b, (0, 1), false).unwrap();
    assert_eq!((t.start, t.end, t.pid), (0, 100, 0));
    assert_eq!(fs.share_test(&h, a, (0, 1), true), None);
    // Unlock part, then release: the local process gets it.
    fs.share_unlock(&h, a, (0, 50));
    assert!(local_lock(&local, libc::F_WRLCK, 0, 50));
    assert!(!local_lock(&local, libc::F_WRLCK, 50, 1));
    fs.share_release(&h, a);
    assert!(local_lock(&local, libc::F_WRLCK, 50, 1));
    assert_eq!(fs.lock_descs.open_count(), 0);
}

/// Whole-file and far ranges: a range to the end (or past 2^63 - 1) is
/// held to the kernel's end; one starting past it is the server's alone.
/// A shared lock's description opened for reading is reopened for an
/// exclusive one, keeping what it holds.
#[test]
fn shared_locks_far_ranges_and_reopening() {
    use crate::ShareLock;
    let (dir, fs) = setup(None);
    let root = fs.root();
    let h = mkfile(&fs, &root, "f");
    let local = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.path().join("f"))
        .unwrap();
    let a = owner(1, b"a");
    let far = 1u64 << 63;
    assert_eq!(
        fs.share_lock(&h, a, (far + 5, u64::MAX), true, true),
        ShareLock::Taken
    );
    assert_eq!(fs.lock_descs.open_count(), 0);
    assert_eq!(
        fs.share_lock(&h, a, (1 << 40, far + 10), true, true),
        ShareLock::Taken
    );
    assert!(!local_lock(&local, libc::F_RDLCK, 1 << 62, 1));
    fs.share_release(&h, a);
    // Shared through a read-only description, then exclusive.
    let b = owner(1, b"b");
    assert_eq!(
        fs.share_lock(&h, b, (0, 10), false, false),
        ShareLock::Taken
    );
    assert_eq!(
        fs.share_lock(&h, b, (20, 30), true, false),
        ShareLock::Reopen
    );
    assert!(fs.share_reopen(&h, b, &[(0, 10, false)]));
    assert_eq!(fs.share_lock(&h, b, (20, 30), true, true), ShareLock::Taken);
    assert!(!local_lock(&local, libc::F_WRLCK, 5, 1));
    assert!(!local_lock(&local, libc::F_RDLCK, 25, 1));
    assert!(local_lock(&local, libc::F_RDLCK, 5, 1));
    assert_eq!(fs.lock_descs.open_count(), 1);
}

/// Descriptions are bounded for the export and per group (client): past
/// either a new owner is Busy, and others go on.
#[test]
fn shared_lock_descriptions_are_bounded() {
    use crate::ShareLock;
    let (_dir, fs) = setup(None);
    let root = fs.root();
    let h = mkfile(&fs, &root, "f");
    let d = locks::Descriptions::new(8);
    let resolve = || fs.resolve(&h);
    let ask = |group, name: &'static [u8]| locks::Ask {
        group,
        owner: name,
        range: (0, 1),
        write: false,
        writable: false,
    };
    let names: [&'static [u8]; 9] = [b"0", b"1", b"2", b"3", b"4", b"5", b"6", b"7", b"8"];
    for n in &names[..4] {
        assert_eq!(d.lock(&h, &resolve, ask(1, n)), ShareLock::Taken);
    }
    assert_eq!(d.lock(&h, &resolve, ask(1, names[4])), ShareLock::Busy);
    // An owner that has one goes on.
    assert_eq!(d.lock(&h, &resolve, ask(1, names[0])), ShareLock::Taken);
    for n in &names[4..8] {
        assert_eq!(d.lock(&h, &resolve, ask(2, n)), ShareLock::Taken);
    }
    assert_eq!(d.lock(&h, &resolve, ask(3, names[8])), ShareLock::Busy);
    d.release(&h, names[0]);
    assert_eq!(d.lock(&h, &resolve, ask(3, names[8])), ShareLock::Taken);
    assert_eq!(d.open_count(), 8);
}

/// Waits until an object's status change at `ctime` has settled (the
/// known-ACL rule): sleeps in steps, no assertion on time.
fn until_settled(fs: &LocalFs, h: &Handle) -> Attr {
    loop {
        let a = fs.getattr(h).unwrap();
        if settled(a.ctime.nanos()) {
            return a;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A POSIX ACL read from an object whose ctime had settled is known,
/// without a system call, while the inode and ctime stay; an ACL change
/// (a new ctime) forgets it, and an ACL read before the ctime settled is
/// never known.
#[test]
fn an_acl_is_known_only_while_its_settled_ctime_stays() {
    let (_d, fs) = setup(None);
    let root = fs.root();
    let f = mkfile(&fs, &root, "f");
    // Read at once, before the create's ctime settled: not remembered.
    assert_eq!(fs.get_acl(&rootc(), &f, false).unwrap(), None);
    let a = fs.getattr(&f).unwrap();
    if !settled(a.ctime.nanos()) {
        assert_eq!(fs.get_acl_nowait(&f, false, &a), None);
    }
    let a = until_settled(&fs, &f);
    assert_eq!(fs.get_acl(&rootc(), &f, false).unwrap(), None);
    assert_eq!(fs.get_acl_nowait(&f, false, &a), Some(None));
    // A file has no default ACL, known without a read.
    assert_eq!(fs.get_acl_nowait(&f, true, &a), Some(None));

    let mut acl = crate::acl::PosixAcl::from_mode(0o640);
    acl.entries.push(crate::acl::AclEntry {
        tag: crate::acl::AclTag::User(4242),
        perm: crate::acl::ACL_READ,
    });
    acl.entries.push(crate::acl::AclEntry {
        tag: crate::acl::AclTag::Mask,
        perm: crate::acl::ACL_READ,
    });
    let acl = acl.normalize().unwrap();
    fs.set_acl(&rootc(), &f, false, Some(&acl)).unwrap();
    let changed = fs.getattr(&f).unwrap();
    assert_ne!(
        (changed.ctime.sec, changed.ctime.nsec),
        (a.ctime.sec, a.ctime.nsec)
    );
    assert_eq!(
        fs.get_acl_nowait(&f, false, &changed),
        None,
        "the old ACL was forgotten"
    );
    let a = until_settled(&fs, &f);
    assert_eq!(fs.get_acl(&rootc(), &f, false).unwrap(), Some(acl.clone()));
    assert_eq!(fs.get_acl_nowait(&f, false, &a), Some(Some(acl)));
}

/// Concurrent creates are each made durable before they return, and are
/// counted: where the file system's sync covers every change before it
/// (ext4, XFS) through the group commit, by no more syncs than changes;
/// elsewhere by one sync each.
#[test]
fn concurrent_creates_are_counted_and_share_syncs_where_the_file_system_allows() {
    let (d, fs) = setup(None);
    let fs = std::sync::Arc::new(fs);
    let root = fs.root();
    let before = fs.sync_counts().unwrap();
    let (threads, each) = (8, 16);
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let (fs, root) = (fs.clone(), root.clone());
            std::thread::spawn(move || {
                for i in 0..each {
                    mkfile(&fs, &root, &format!("t{t}-{i}"));
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let after = fs.sync_counts().unwrap();
    let changes = after.changes - before.changes;
    let syncs = after.syncs - before.syncs;
    assert_eq!(
        changes,
        (threads * each) as u64 * if fs.sync_keeps_new_name() { 1 } else { 2 }
    );
    let grouped = sys::mount_fstype(fs.root_raw()).is_some_and(|t| syncfs_covers_changes(&t));
    assert_eq!(fs.group_sync_counts().is_some(), grouped);
    if grouped {
        assert!(
            syncs >= 1 && syncs <= changes,
            "{syncs} syncs for {changes} changes"
        );
    } else {
        assert_eq!(syncs, changes);
    }
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), threads * each);
}
