//! Permission checks with other users' credentials.

use bytes::Bytes;
use vfs::{CreateKind, CreateMode, Creds, SetAttr, SetTime, Timespec};

use crate::fixture::{each, err, mode, root, user};

const R: i32 = libc::R_OK;
const W: i32 = libc::W_OK;
const X: i32 = libc::X_OK;

#[test]
fn access_answers_like_access2() {
    each(|fx| {
        let (fs, r) = (&fx.fs, &fx.root);
        let f = fx.file(r, "f");
        fx.own(&f, 1000, 2000, 0o640);
        let d = fx.dir(r, "d");
        fx.own(&d, 1000, 1000, 0o700);
        let ok = |c: &Creds, h, mask| fs.access(c, h, mask).unwrap();
        let (owner, other) = (user(1000), user(1001));
        let member = Creds {
            uid: 1002,
            gid: 1002,
            groups: vec![7, 2000],
        };
        assert!(ok(&owner, &f, R | W) && !ok(&owner, &f, X));
        assert!(ok(&member, &f, R) && !ok(&member, &f, W));
        assert!(!ok(&other, &f, R) && ok(&other, &f, 0));
        assert!(ok(&root(), &f, R | W) && !ok(&root(), &f, X));
        fx.own(&f, 1000, 2000, 0o001);
        assert!(ok(&root(), &f, X), "root may execute when anyone may");
        assert!(!ok(&owner, &f, X), "the owner's bits are the owner's");
        assert!(ok(&root(), &d, R | W | X) && ok(&owner, &d, R | W | X));
        assert!(!ok(&other, &d, X));
        assert_eq!(fs.access(&owner, &f, 8), Err(err(libc::EINVAL)));
    })
}

#[test]
fn reading_and_writing_files() {
    each(|fx| {
        let (fs, r) = (&fx.fs, &fx.root);
        let u = user(1000);
        let rf = fx.file(r, "rootfile");
        fx.write(&root(), &rf, 0, b"root data").unwrap();
        assert_eq!(fx.write(&u, &rf, 0, b"x"), Err(err(libc::EACCES)));
        assert_eq!(fs.read(&u, &rf, 0, 100).unwrap().0, &b"root data"[..]);
        let size0 = SetAttr {
            size: Some(0),
            ..Default::default()
        };
        assert_eq!(fx.set(&u, &rf, size0.clone()), Err(err(libc::EACCES)));
        assert_eq!(fx.set(&u, &rf, mode(0o777)), Err(err(libc::EPERM)));
        assert_eq!(fs.allocate(&u, &rf, 0, 10), Err(err(libc::EACCES)));
        // Execute permission is enough to read (as knfsd allows).
        fx.own(&rf, 0, 0, 0o711);
        assert!(fs.read(&u, &rf, 0, 4).is_ok());
        fx.own(&rf, 0, 0, 0o700);
        assert_eq!(fs.read(&u, &rf, 0, 4), Err(err(libc::EACCES)));
        assert_eq!(
            fs.seek(&u, &rf, 0, vfs::SeekWhat::Data),
            Err(err(libc::EACCES))
        );
        // The owner reads and writes his file whatever its mode.
        let f = fx.file_as(&u, r, "mine", 0o000);
        fx.write(&u, &f, 0, b"owner").unwrap();
        assert_eq!(fs.read(&u, &f, 0, 10).unwrap().0, &b"owner"[..]);
        fx.set(&u, &f, size0).unwrap();
        assert!(!fs.access(&u, &f, W).unwrap());
        // Group members through supplementary groups.
        let g = fx.file(r, "groupfile");
        fx.own(&g, 0, 4242, 0o660);
        let ug = Creds {
            uid: 1000,
            gid: 1000,
            groups: vec![4242],
        };
        fx.write(&ug, &g, 0, b"group").unwrap();
        assert_eq!(fs.read(&u, &g, 0, 10), Err(err(libc::EACCES)));
        // copy needs reading the source and writing the destination
        assert_eq!(fs.copy(&u, &g, 0, &f, 0, 1), Err(err(libc::EACCES)));
        assert_eq!(fs.copy(&ug, &g, 0, &rf, 0, 1), Err(err(libc::EACCES)));
        assert_eq!(fs.copy(&ug, &g, 0, &g, 10, 5), Ok(5));
    })
}

#[test]
fn directories_guard_their_entries() {
    each(|fx| {
        let (fs, r) = (&fx.fs, &fx.root);
        let u = user(1000);
        let none = SetAttr::default();
        let locked = fx.dir(r, "locked");
        let inside = fx.file(&locked, "inside");
        fx.file(r, "outside");
        // 0755 root's: no creating, removing, renaming or linking in it
        let create = |name: &[u8]| {
            fs.create_file(&u, &locked, name, CreateMode::Guarded, &none)
                .map(drop)
        };
        assert_eq!(create(b"x"), Err(err(libc::EACCES)));
        assert_eq!(create(b"inside"), Err(err(libc::EEXIST)));
        assert_eq!(
            fs.create(&u, &locked, b"x", &CreateKind::Directory, &none)
                .map(drop),
            Err(err(libc::EACCES))
        );
        assert_eq!(
            fs.create(&u, &locked, b"inside", &CreateKind::Fifo, &none)
                .map(drop),
            Err(err(libc::EEXIST))
        );
        assert_eq!(fs.remove(&u, &locked, b"inside"), Err(err(libc::EACCES)));
        assert_eq!(fs.remove(&u, &locked, b"none"), Err(err(libc::ENOENT)));
        assert_eq!(
            fs.rename(&u, r, b"outside", &locked, b"o"),
            Err(err(libc::EACCES))
        );
        assert_eq!(
            fs.rename(&u, &locked, b"inside", r, b"i"),
            Err(err(libc::EACCES))
        );
        let mine = fx.file_as(&u, r, "mine", 0o644);
        assert_eq!(fs.link(&u, &mine, &locked, b"l"), Err(err(libc::EACCES)));
        // Special files need CAP_MKNOD for devices only.
        assert_eq!(
            fs.create(&u, r, b"dev", &CreateKind::Char(1, 3), &none)
                .map(drop),
            Err(err(libc::EPERM))
        );
        fs.create(&u, r, b"fifo", &CreateKind::Fifo, &none).unwrap();
        // 0711: searchable, not listable
        fx.own(&locked, 0, 0, 0o711);
        assert_eq!(
            fs.readdir(&u, &locked, 0, false, &mut |_| true),
            Err(err(libc::EACCES))
        );
        assert_eq!(fs.lookup(&u, &locked, b"inside").unwrap().0, inside);
        // 0744: listable without attributes, not searchable
        fx.own(&locked, 0, 0, 0o744);
        let mut got = Vec::new();
        for c in [&u, &root()] {
            fs.readdir(c, &locked, 0, true, &mut |e| {
                got.push((e.name.clone(), e.obj.is_some()));
                true
            })
            .unwrap();
        }
        let name = Bytes::from_static(b"inside");
        assert_eq!(got, vec![(name.clone(), false), (name, true)]);
        assert_eq!(
            fs.lookup(&u, &locked, b"inside").map(drop),
            Err(err(libc::EACCES))
        );
        assert_eq!(
            fs.lookup(&u, &locked, b"none").map(drop),
            Err(err(libc::EACCES))
        );
        assert_eq!(
            fs.lookup_parent(&u, &locked).map(drop),
            Err(err(libc::EACCES))
        );
        assert_eq!(
            fs.create_file(&u, &locked, b"inside", CreateMode::Unchecked, &none)
                .map(drop),
            Err(err(libc::EACCES))
        );
    })
}

#[test]
fn sticky_directories_protect_others_files() {
    each(|fx| {
        let (fs, r) = (&fx.fs, &fx.root);
        let (a, b, o) = (user(1000), user(1001), user(1002));
        let t = fx.dir(r, "tmp");
        fx.own(&t, 1002, 1002, 0o1777);
        fx.file_as(&a, &t, "a1", 0o666);
        fx.file_as(&a, &t, "a2", 0o666);
        fx.file_as(&a, &t, "a3", 0o666);
        fx.file_as(&b, &t, "b1", 0o666);
        assert_eq!(fs.remove(&b, &t, b"a1"), Err(err(libc::EPERM)));
        assert_eq!(fs.rename(&b, &t, b"a1", &t, b"x"), Err(err(libc::EPERM)));
        assert_eq!(fs.rename(&b, &t, b"b1", &t, b"a1"), Err(err(libc::EPERM)));
        fs.rename(&a, &t, b"a1", &t, b"x").unwrap();
        fs.remove(&a, &t, b"x").unwrap();
        fs.remove(&o, &t, b"a2").unwrap();
        fs.remove(&root(), &t, b"a3").unwrap();
        fs.remove(&b, &t, b"b1").unwrap();
    })
}

#[test]
fn owners_and_groups() {
    each(|fx| {
        let (fs, r) = (&fx.fs, &fx.root);
        let u = Creds {
            uid: 1000,
            gid: 1000,
            groups: vec![50],
        };
        let f = fx.file_as(&u, r, "f", 0o644);
        let a = fx.attr(&f);
        assert_eq!((a.uid, a.gid), (1000, 1000));
        let chown = |c: &Creds, uid, gid| {
            fx.set(
                c,
                &f,
                SetAttr {
                    uid,
                    gid,
                    ..Default::default()
                },
            )
            .map(|a| (a.uid, a.gid))
        };
        assert_eq!(chown(&u, None, Some(50)), Ok((1000, 50)));
        assert_eq!(chown(&u, None, Some(51)), Err(err(libc::EPERM)));
        assert_eq!(chown(&u, Some(1000), None), Ok((1000, 50)));
        assert_eq!(chown(&u, Some(1001), None), Err(err(libc::EPERM)));
        assert_eq!(chown(&user(1001), Some(1000), None), Err(err(libc::EPERM)));
        assert_eq!(chown(&user(1001), None, Some(50)), Err(err(libc::EPERM)));
        assert_eq!(chown(&root(), Some(7), Some(8)), Ok((7, 8)));
        // chmod: the owner or root; setgid only for a group one is in
        assert_eq!(fx.set(&u, &f, mode(0o600)), Err(err(libc::EPERM)));
        fx.own(&f, 1000, 60, 0o644);
        assert_eq!(fx.set(&u, &f, mode(0o2755)).unwrap().mode, 0o755);
        fx.own(&f, 1000, 50, 0o644);
        assert_eq!(fx.set(&u, &f, mode(0o2755)).unwrap().mode, 0o2755);
        assert_eq!(fx.set(&u, &f, mode(0o4700)).unwrap().mode, 0o4700);
        fx.own(&f, 1000, 60, 0o644);
        assert_eq!(fx.set(&root(), &f, mode(0o2755)).unwrap().mode, 0o2755);
        // Creating with another owner is giving away: refused, not created.
        let give = SetAttr {
            uid: Some(0),
            ..Default::default()
        };
        assert_eq!(
            fs.create_file(&u, r, b"given", CreateMode::Guarded, &give)
                .map(drop),
            Err(err(libc::EPERM))
        );
        assert_eq!(fx.lookup(r, "given"), Err(err(libc::ENOENT)));
        let group50 = SetAttr {
            gid: Some(50),
            mode: Some(0o2770),
            ..Default::default()
        };
        let (_, a, _) = fs
            .create_file(&u, r, b"g50", CreateMode::Guarded, &group50)
            .unwrap();
        assert_eq!((a.uid, a.gid, a.mode), (1000, 50, 0o2770));
        // A setgid directory gives its group to what is created in it; a
        // non-member's setgid request is dropped.
        let sg = fx.dir(r, "sg");
        fx.own(&sg, 0, 77, 0o2777);
        let (_, a, _) = fs
            .create_file(&u, &sg, b"f", CreateMode::Guarded, &mode(0o2755))
            .unwrap();
        assert_eq!((a.uid, a.gid, a.mode), (1000, 77, 0o755));
        let (_, a) = fs
            .create(&u, &sg, b"d", &CreateKind::Directory, &mode(0o755))
            .unwrap();
        assert_eq!((a.gid, a.mode), (77, 0o755));
        let (_, a) = fs
            .create(&root(), &sg, b"d2", &CreateKind::Directory, &mode(0o2755))
            .unwrap();
        assert_eq!((a.gid, a.mode), (77, 0o2755));
        let (_, a) = fs
            .create(
                &u,
                &sg,
                b"s",
                &CreateKind::Symlink(Bytes::from_static(b"t")),
                &mode(0),
            )
            .unwrap();
        assert_eq!((a.uid, a.gid), (1000, 77));
    })
}

#[test]
fn set_id_bits_are_dropped_by_changes() {
    each(|fx| {
        let (fs, r) = (&fx.fs, &fx.root);
        let u = Creds {
            uid: 1000,
            gid: 1000,
            groups: vec![50],
        };
        let f = fx.file(r, "f");
        let mode_after = |owner: (u32, u32), m: u32, act: &dyn Fn()| {
            fx.own(&f, owner.0, owner.1, m);
            act();
            fx.attr(&f).mode
        };
        let write = |c: &Creds| fx.write(c, &f, 0, b"x").unwrap();
        let truncate = |c: &Creds| {
            fx.set(
                c,
                &f,
                SetAttr {
                    size: Some(0),
                    ..Default::default()
                },
            )
            .unwrap();
        };
        let chgrp = |c: &Creds| {
            fx.set(
                c,
                &f,
                SetAttr {
                    gid: Some(50),
                    ..Default::default()
                },
            )
            .unwrap();
        };
        // writes and truncates by anyone but root
        assert_eq!(mode_after((1000, 1000), 0o6755, &|| write(&u)), 0o755);
        assert_eq!(mode_after((1000, 1000), 0o6745, &|| write(&u)), 0o2745);
        assert_eq!(mode_after((1000, 60), 0o6745, &|| write(&u)), 0o745);
        assert_eq!(mode_after((1000, 1000), 0o6755, &|| write(&root())), 0o6755);
        assert_eq!(mode_after((1000, 1000), 0o4755, &|| truncate(&u)), 0o755);
        assert_eq!(
            mode_after((1000, 1000), 0o4755, &|| truncate(&root())),
            0o4755
        );
        // chown and chgrp by anyone, root included
        assert_eq!(mode_after((1000, 1000), 0o6755, &|| chgrp(&u)), 0o755);
        assert_eq!(mode_after((1000, 1000), 0o6745, &|| chgrp(&u)), 0o2745);
        assert_eq!(mode_after((1000, 1000), 0o6755, &|| chgrp(&root())), 0o755);
        assert_eq!(mode_after((1000, 1000), 0o6745, &|| chgrp(&root())), 0o2745);
        // copy into it
        let src = fx.file(r, "src");
        fx.write(&root(), &src, 0, b"abc").unwrap();
        fx.own(&src, 0, 0, 0o644);
        let copy = |c: &Creds| assert_eq!(fs.copy(c, &src, 0, &f, 0, 3), Ok(3));
        assert_eq!(mode_after((1000, 1000), 0o4755, &|| copy(&u)), 0o755);
        // Directories keep theirs.
        let d = fx.dir(r, "d");
        fx.own(&d, 1000, 1000, 0o2755);
        fx.set(
            &u,
            &d,
            SetAttr {
                gid: Some(50),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(fx.attr(&d).mode, 0o2755);
    })
}

#[test]
fn setting_times() {
    each(|fx| {
        let r = &fx.root;
        let f = fx.file(r, "f");
        fx.own(&f, 1000, 1000, 0o666);
        let t = Timespec { sec: 5000, nsec: 1 };
        let times = |a, m| SetAttr {
            atime: a,
            mtime: m,
            ..Default::default()
        };
        let (now, given) = (Some(SetTime::ServerNow), Some(SetTime::Client(t)));
        let other = user(1001);
        // Anyone who may write may touch; only the owner may set.
        fx.set(&other, &f, times(now, now)).unwrap();
        assert_eq!(
            fx.set(&other, &f, times(given, None)),
            Err(err(libc::EPERM))
        );
        assert_eq!(fx.set(&other, &f, times(now, None)), Err(err(libc::EPERM)));
        assert_eq!(fx.set(&other, &f, times(now, given)), Err(err(libc::EPERM)));
        let a = fx.set(&user(1000), &f, times(given, None)).unwrap();
        assert_eq!(a.atime, t);
        assert!(a.mtime > t);
        let a = fx.set(&root(), &f, times(None, given)).unwrap();
        assert_eq!(a.mtime, t);
        fx.own(&f, 1000, 1000, 0o644);
        assert_eq!(fx.set(&other, &f, times(now, now)), Err(err(libc::EACCES)));
    })
}

#[test]
fn hard_links_need_ownership_or_access() {
    each(|fx| {
        let (fs, r) = (&fx.fs, &fx.root);
        let u = user(1000);
        let f = fx.file(r, "f");
        let link = |name: &[u8]| fs.link(&u, &f, r, name);
        fx.own(&f, 0, 0, 0o644);
        assert_eq!(link(b"l1"), Err(err(libc::EPERM)));
        fx.own(&f, 0, 0, 0o666);
        link(b"l2").unwrap();
        fx.own(&f, 0, 0, 0o4666);
        assert_eq!(link(b"l3"), Err(err(libc::EPERM)));
        fx.own(&f, 1000, 0, 0o000);
        link(b"l4").unwrap();
        let (p, _) = fs
            .create(&root(), r, b"p", &CreateKind::Fifo, &mode(0o666))
            .unwrap();
        assert_eq!(fs.link(&u, &p, r, b"l5"), Err(err(libc::EPERM)));
    })
}

#[test]
fn moving_a_directory_needs_write_on_it() {
    each(|fx| {
        let (fs, r) = (&fx.fs, &fx.root);
        let u = user(1000);
        let home = fx.dir_as(&u, r, "home", 0o755);
        let other = fx.dir_as(&u, r, "other", 0o755);
        fx.dir(&home, "rootdir");
        fx.dir_as(&u, &home, "mine", 0o755);
        let locked = fx.dir(&home, "lockeddir");
        fx.own(&locked, 0, 0, 0o555);
        fs.rename(&u, &home, b"rootdir", &home, b"renamed").unwrap();
        assert_eq!(
            fs.rename(&u, &home, b"renamed", &other, b"x"),
            Err(err(libc::EACCES))
        );
        fs.rename(&u, &home, b"mine", &other, b"mine").unwrap();
        // The target directory must be writable too.
        assert_eq!(
            fs.rename(&u, &other, b"mine", &locked, b"m"),
            Err(err(libc::EACCES))
        );
    })
}
