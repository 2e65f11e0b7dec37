//! Lookup, creation, removal, rename and links.

use bytes::Bytes;
use vfs::{CreateKind, CreateMode, FileType, Handle, SetAttr, Timespec};

use crate::fixture::{each, err, mode, root, Fx};

#[test]
fn lookup_and_names() {
    each(|fx| {
        let (fs, r, c) = (&fx.fs, &fx.root, &root());
        let f = fx.file(r, "f");
        let d = fx.dir(r, "d");
        assert_eq!(fs.lookup(c, r, b"f").unwrap().0, f);
        assert_eq!(fs.lookup(c, r, b"nope"), Err(err(libc::ENOENT)));
        assert_eq!(fs.lookup(c, &f, b"x"), Err(err(libc::ENOTDIR)));
        for bad in [&b""[..], b".", b"..", b"a/b", b"a\0b"] {
            assert_eq!(fs.lookup(c, r, bad), Err(err(libc::EINVAL)));
        }
        let long = vec![b'x'; 256];
        assert_eq!(fs.lookup(c, r, &long), Err(err(libc::ENAMETOOLONG)));
        assert_eq!(fs.lookup(c, r, &long[..255]), Err(err(libc::ENOENT)));
        fx.file(r, std::str::from_utf8(&long[..255]).unwrap());
        assert!(fs.lookup(c, r, &long[..255]).is_ok());
        // parents
        assert_eq!(fs.lookup_parent(c, r), Err(err(libc::ENOENT)));
        assert_eq!(fs.lookup_parent(c, &d).unwrap().0, *r);
        assert_eq!(fs.lookup_parent(c, &f), Err(err(libc::ENOTDIR)));
        let sub = fx.dir(&d, "sub");
        assert_eq!(fs.lookup_parent(c, &sub).unwrap().0, d);
        // handles
        assert!(fs.root().0.len() <= vfs::MAX_HANDLE);
        fs.remove(c, r, b"f").unwrap();
        assert_eq!(fs.getattr(&f), Err(err(libc::ESTALE)));
        assert_eq!(fs.lookup(c, &f, b"x").map(drop), Err(err(libc::ESTALE)));
        for junk in [&b"\0"[..], &[0u8; 16], b"\0\0\0\x01junkjunk"] {
            let h = Handle(Bytes::copy_from_slice(junk));
            assert_eq!(fs.getattr(&h), Err(err(libc::ESTALE)), "{junk:?}");
        }
    })
}

#[test]
fn creation_kinds_and_modes() {
    each(|fx| {
        let (fs, r, c) = (&fx.fs, &fx.root, &root());
        let none = SetAttr::default();
        let (f, fa, created) = fs
            .create_file(c, r, b"f", CreateMode::Guarded, &none)
            .unwrap();
        assert!(created);
        assert_eq!(
            (fa.ftype, fa.mode, fa.nlink, fa.size),
            (FileType::Regular, 0o644, 1, 0)
        );
        assert_eq!((fa.uid, fa.gid), (0, 0));
        assert_eq!(fs.getattr(&f).unwrap().fileid, fa.fileid);
        let (_, da) = fs
            .create(c, r, b"d", &CreateKind::Directory, &none)
            .unwrap();
        assert_eq!(
            (da.ftype, da.mode, da.nlink),
            (FileType::Directory, 0o755, 2)
        );
        let (_, a) = fs
            .create(
                c,
                r,
                b"setid",
                &CreateKind::Directory,
                &mode(0o7777 | 0o40000),
            )
            .unwrap();
        assert_eq!(a.mode, 0o7777);
        let (s, sa) = fs
            .create(
                c,
                r,
                b"s",
                &CreateKind::Symlink(Bytes::from_static(b"f")),
                &mode(0o600),
            )
            .unwrap();
        assert_eq!((sa.ftype, sa.mode, sa.size), (FileType::Symlink, 0o777, 1));
        assert_eq!(fs.readlink(c, &s).unwrap(), &b"f"[..]);
        assert_eq!(fs.readlink(c, &f), Err(err(libc::EINVAL)));
        assert_eq!(fs.lookup(c, r, b"s").unwrap().0, s);
        assert_eq!(fs.setattr(c, &s, &mode(0o700)), Err(err(libc::EOPNOTSUPP)));
        let (_, pa) = fs.create(c, r, b"p", &CreateKind::Fifo, &none).unwrap();
        assert_eq!((pa.ftype, pa.mode), (FileType::Fifo, 0o644));
        let (_, ka) = fs
            .create(c, r, b"k", &CreateKind::Socket, &mode(0o600))
            .unwrap();
        assert_eq!((ka.ftype, ka.mode), (FileType::Socket, 0o600));
        let (_, na) = fs
            .create(c, r, b"null", &CreateKind::Char(1, 3), &none)
            .unwrap();
        assert_eq!((na.ftype, na.rdev), (FileType::Char, (1, 3)));
        let (_, ba) = fs
            .create(c, r, b"blk", &CreateKind::Block(7, 9), &none)
            .unwrap();
        assert_eq!((ba.ftype, ba.rdev), (FileType::Block, (7, 9)));
        for name in ["f", "d", "s", "p"] {
            for kind in [CreateKind::Directory, CreateKind::Fifo] {
                assert_eq!(
                    fs.create(c, r, name.as_bytes(), &kind, &none).map(drop),
                    Err(err(libc::EEXIST)),
                    "{name}"
                );
            }
        }
        assert_eq!(
            fs.create(c, &f, b"x", &CreateKind::Directory, &none)
                .map(drop),
            Err(err(libc::ENOTDIR))
        );
        assert_eq!(
            fs.create_file(c, &f, b"x", CreateMode::Guarded, &none)
                .map(drop),
            Err(err(libc::ENOTDIR))
        );
        // symlink targets: not empty, no NUL, under PATH_MAX
        let link = |t: &[u8]| {
            fs.create(
                c,
                r,
                b"t",
                &CreateKind::Symlink(Bytes::copy_from_slice(t)),
                &none,
            )
            .map(drop)
        };
        assert_eq!(link(b""), Err(err(libc::ENOENT)));
        assert_eq!(link(b"a\0b"), Err(err(libc::EINVAL)));
        assert_eq!(link(&[b'a'; 4096]), Err(err(libc::ENAMETOOLONG)));
        link(&[b'a'; 4095]).unwrap();
        // given times and size
        let t = Timespec { sec: 1000, nsec: 7 };
        let (_, ta, _) = fs
            .create_file(
                c,
                r,
                b"timed",
                CreateMode::Unchecked,
                &SetAttr {
                    atime: Some(vfs::SetTime::Client(t)),
                    mtime: Some(vfs::SetTime::Client(t)),
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!((ta.atime, ta.mtime), (t, t));
        let (g, ga, _) = fs
            .create_file(
                c,
                r,
                b"sized",
                CreateMode::Guarded,
                &SetAttr {
                    size: Some(10),
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(ga.size, 10);
        assert_eq!(fx.read_all(&g), vec![0; 10]);
    })
}

#[test]
fn exclusive_and_unchecked_create() {
    each(|fx| {
        let (fs, r, c) = (&fx.fs, &fx.root, &root());
        let v1 = *b"\xde\xad\xbe\xef\x01\x02\x03\x04";
        let v2 = *b"abcdefgh";
        let set = mode(0o600);
        let (h, a, created) = fs
            .create_file(c, r, b"x", CreateMode::Exclusive(v1), &set)
            .unwrap();
        assert!(created);
        assert_eq!(a.mode, 0o600);
        assert_eq!((a.atime.sec, a.mtime.sec), (0x5ead_beef, 0x0102_0304));
        let (h2, _, again) = fs
            .create_file(c, r, b"x", CreateMode::Exclusive(v1), &set)
            .unwrap();
        assert_eq!((h2, again), (h.clone(), false));
        let ex = |how| fs.create_file(c, r, b"x", how, &set).map(drop);
        assert_eq!(ex(CreateMode::Exclusive(v2)), Err(err(libc::EEXIST)));
        assert_eq!(ex(CreateMode::Guarded), Err(err(libc::EEXIST)));
        // Unchecked opens it, applying only the size.
        fx.write(c, &h, 0, b"abc").unwrap();
        let (h3, a3, created3) = fs
            .create_file(
                c,
                r,
                b"x",
                CreateMode::Unchecked,
                &SetAttr {
                    mode: Some(0o666),
                    size: Some(1),
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!((h3, a3.mode, a3.size, created3), (h, 0o600, 1, false));
        // Other kinds in the way.
        fx.dir(r, "d");
        fs.create(
            c,
            r,
            b"s",
            &CreateKind::Symlink(Bytes::from_static(b"x")),
            &set,
        )
        .unwrap();
        fs.create(c, r, b"p", &CreateKind::Fifo, &set).unwrap();
        for (name, e) in [("d", libc::EISDIR), ("s", libc::ELOOP), ("p", libc::EEXIST)] {
            for how in [CreateMode::Unchecked, CreateMode::Exclusive(v1)] {
                assert_eq!(
                    fs.create_file(c, r, name.as_bytes(), how, &set).map(drop),
                    Err(err(e)),
                    "{name} {how:?}"
                );
            }
        }
    })
}

#[test]
fn nlink_and_removal() {
    each(|fx| {
        let (fs, r, c) = (&fx.fs, &fx.root, &root());
        assert_eq!(fx.attr(r).nlink, 2);
        let a = fx.dir(r, "a");
        let b = fx.dir(&a, "b");
        fx.dir(&a, "b2");
        assert_eq!(
            (fx.attr(r).nlink, fx.attr(&a).nlink, fx.attr(&b).nlink),
            (3, 4, 2)
        );
        let f = fx.file(&b, "f");
        fs.link(c, &f, &a, b"f2").unwrap();
        fs.link(c, &f, r, b"f3").unwrap();
        assert_eq!(fx.attr(&f).nlink, 3);
        assert_eq!(fs.link(c, &f, &a, b"f2"), Err(err(libc::EEXIST)));
        assert_eq!(fs.link(c, &a, r, b"dl"), Err(err(libc::EISDIR)));
        assert_eq!(fs.link(c, &f, &f, b"x"), Err(err(libc::ENOTDIR)));
        // a symlink is linked itself
        let (s, _) = fs
            .create(
                c,
                r,
                b"s",
                &CreateKind::Symlink(Bytes::from_static(b"a")),
                &mode(0),
            )
            .unwrap();
        fs.link(c, &s, &a, b"s2").unwrap();
        let (s2, s2a) = fs.lookup(c, &a, b"s2").unwrap();
        assert_eq!(
            (s2, s2a.ftype, s2a.nlink),
            (s.clone(), FileType::Symlink, 2)
        );
        // removal
        assert_eq!(fs.remove(c, r, b"a"), Err(err(libc::ENOTEMPTY)));
        assert_eq!(fs.remove(c, r, b"none"), Err(err(libc::ENOENT)));
        assert_eq!(fs.remove(c, &f, b"x"), Err(err(libc::ENOTDIR)));
        fs.remove(c, &a, b"f2").unwrap();
        assert_eq!(fx.attr(&f).nlink, 2);
        fs.remove(c, r, b"f3").unwrap();
        fs.remove(c, &b, b"f").unwrap();
        assert_eq!(fs.getattr(&f), Err(err(libc::ESTALE)));
        fs.remove(c, &a, b"b").unwrap();
        assert_eq!(fs.getattr(&b), Err(err(libc::ESTALE)));
        assert_eq!(fx.attr(&a).nlink, 3);
        fs.remove(c, r, b"s").unwrap();
        assert_eq!(fx.attr(&s).nlink, 1);
        fs.remove(c, &a, b"s2").unwrap();
        fs.remove(c, &a, b"b2").unwrap();
        fs.remove(c, r, b"a").unwrap();
        assert_eq!(fx.attr(r).nlink, 2);
    })
}

/// `a/b/c`, `a/f`, `e` (empty dir), `g` (file) under the root.
fn tree(fx: &Fx) -> (Handle, Handle, Handle) {
    let a = fx.dir(&fx.root, "a");
    let b = fx.dir(&a, "b");
    let c = fx.dir(&b, "c");
    fx.file(&a, "f");
    fx.dir(&fx.root, "e");
    fx.file(&fx.root, "g");
    (a, b, c)
}

#[test]
fn rename_rules() {
    each(|fx| {
        let (fs, r, cr) = (&fx.fs, &fx.root, &root());
        let (a, b, c) = tree(fx);
        let mv = |f: &Handle, fname: &str, t: &Handle, tname: &str| {
            fs.rename(cr, f, fname.as_bytes(), t, tname.as_bytes())
        };
        assert_eq!(mv(r, "none", r, "x"), Err(err(libc::ENOENT)));
        let g = fx.lookup(r, "g").unwrap();
        assert_eq!(mv(&g, "x", r, "y"), Err(err(libc::ENOTDIR)));
        assert_eq!(mv(r, "g", &g, "y"), Err(err(libc::ENOTDIR)));
        // a directory into itself or its subtree
        assert_eq!(mv(r, "a", &a, "x"), Err(err(libc::EINVAL)));
        assert_eq!(mv(r, "a", &c, "x"), Err(err(libc::EINVAL)));
        // over an ancestor of the source
        fx.dir(&c, "d");
        assert_eq!(mv(&c, "d", r, "a"), Err(err(libc::ENOTEMPTY)));
        // types of the victim
        assert_eq!(mv(r, "g", r, "e"), Err(err(libc::EISDIR)));
        assert_eq!(mv(r, "e", r, "g"), Err(err(libc::ENOTDIR)));
        assert_eq!(mv(r, "e", &a, "b"), Err(err(libc::ENOTEMPTY)));
        // to itself, and between two links of one file: nothing happens
        mv(r, "g", r, "g").unwrap();
        fs.link(cr, &g, &a, b"g2").unwrap();
        mv(r, "g", &a, "g2").unwrap();
        assert_eq!(fx.lookup(r, "g").unwrap(), g);
        assert_eq!(fx.attr(&g).nlink, 2);
        // over a file: the victim goes stale
        let f = fx.lookup(&a, "f").unwrap();
        mv(r, "g", &a, "f").unwrap();
        assert_eq!(fs.getattr(&f), Err(err(libc::ESTALE)));
        assert_eq!(fx.lookup(&a, "f").unwrap(), g);
        assert_eq!(fx.lookup(r, "g"), Err(err(libc::ENOENT)));
        // a directory over an empty one, across parents
        let e = fx.lookup(r, "e").unwrap();
        let before = (fx.attr(r).nlink, fx.attr(&b).nlink);
        mv(&b, "c", r, "e").unwrap();
        assert_eq!(fs.getattr(&e), Err(err(libc::ESTALE)));
        assert_eq!(fx.lookup(r, "e").unwrap(), c);
        assert_eq!(fs.lookup_parent(cr, &c).unwrap().0, *r);
        assert_eq!(
            (fx.attr(r).nlink, fx.attr(&b).nlink),
            (before.0, before.1 - 1)
        );
        // and to a new name in another directory
        mv(r, "e", &b, "back").unwrap();
        assert_eq!(
            (fx.attr(r).nlink, fx.attr(&b).nlink),
            (before.0 - 1, before.1)
        );
        assert_eq!(fs.lookup_parent(cr, &c).unwrap().0, b);
        let long = "n".repeat(256);
        assert_eq!(mv(&b, "back", &b, &long), Err(err(libc::ENAMETOOLONG)));
    })
}

#[test]
fn change_attribute_and_times() {
    each(|fx| {
        let (fs, r, c) = (&fx.fs, &fx.root, &root());
        let d = fx.dir(r, "d");
        let f = fx.file(r, "f");
        let mut last = fx.attr(&f);
        let mut dlast = fx.attr(r);
        let moved = |old: &vfs::Attr, new: &vfs::Attr| new.change > old.change;
        for i in 0..3u8 {
            fx.write(c, &f, 0, &[i]).unwrap();
            let now = fx.attr(&f);
            assert!(moved(&last, &now));
            assert!(now.mtime >= last.mtime && now.ctime >= last.ctime);
            assert_eq!(fx.attr(&f).change, now.change, "stable between changes");
            last = now;
        }
        let a = fx.set(c, &f, mode(0o640)).unwrap();
        assert!(moved(&last, &a));
        assert_eq!(a.mtime, last.mtime, "chmod leaves mtime");
        fx.file(r, "n");
        let dnow = fx.attr(r);
        assert!(moved(&dlast, &dnow) && dnow.mtime >= dlast.mtime);
        dlast = dnow;
        fs.remove(c, r, b"n").unwrap();
        let dnow = fx.attr(r);
        assert!(moved(&dlast, &dnow));
        dlast = dnow;
        // rename changes both directories and the moved object's ctime
        let (fb, db) = (fx.attr(&f), fx.attr(&d));
        fs.rename(c, r, b"f", &d, b"f").unwrap();
        assert!(moved(&dlast, &fx.attr(r)));
        assert!(moved(&db, &fx.attr(&d)));
        let fa = fx.attr(&f);
        assert!(moved(&fb, &fa));
        assert_eq!(fa.mtime, fb.mtime);
        // a link changes the file and the directory
        fs.link(c, &f, r, b"l").unwrap();
        assert!(moved(&fa, &fx.attr(&f)));
    })
}
