//! Handles stay inside their export when exports are narrowed or share a
//! file system, even once the kernel has forgotten where objects are
//! (issue 9; RFC 8881 §4.2.2).

use std::path::Path;

use tempfile::TempDir;

use super::*;

fn rootc() -> Creds {
    Creds::root()
}

/// Makes the kernel forget unused dentries, so that handles are opened
/// disconnected (as after memory pressure or a reboot).
fn forget_dentries() {
    assert!(
        sys::geteuid() == 0,
        "this test needs root: run as root (CI does)"
    );
    // Recently used dentries survive one pass of the shrinker.
    for _ in 0..3 {
        std::fs::write("/proc/sys/vm/drop_caches", "2").expect("drop the dentry cache");
    }
}

/// A kernel-mode export of `dir`.
fn kernel_fs(dir: &Path) -> LocalFs {
    let fs = LocalFs::new(dir).unwrap();
    assert_eq!(fs.mode, Mode::Kernel, "open_by_handle_at needs root");
    fs
}

fn look(fs: &LocalFs, path: &str) -> Handle {
    let mut h = fs.root();
    for name in path.split('/') {
        h = fs.lookup(&rootc(), &h, name.as_bytes()).unwrap().0;
    }
    h
}

/// `h` with its root tag replaced by `fs`'s: what a forger holding the
/// protocol layer's key could present.
fn retag(fs: &LocalFs, h: &Handle) -> Handle {
    bind(&h.0[..h.0.len() - ROOT_TAG_LEN], &fs.root_tag)
}

/// A/B exported after A was: the tree of these tests.
fn tree() -> TempDir {
    let a = TempDir::new().unwrap();
    for d in ["B/d", "od"] {
        std::fs::create_dir_all(a.path().join(d)).unwrap();
    }
    for (f, data) in [
        ("outside", "secret"),
        ("od/f", "secret too"),
        ("B/in", "inside"),
        ("B/d/deep", "deep"),
    ] {
        std::fs::write(a.path().join(f), data).unwrap();
    }
    a
}

#[test]
fn the_root_identity_names_the_directory() {
    let a = tree();
    let b = a.path().join("B");
    let (wide, narrow) = (LocalFs::new(a.path()).unwrap(), LocalFs::new(&b).unwrap());
    assert_ne!(wide.root_identity(), narrow.root_identity());
    assert_ne!(wide.root_tag, narrow.root_tag);
    // Stable across instances, and in both resolution modes.
    let again = LocalFs::with_mode(&b, Some(Mode::PathMap)).unwrap();
    assert_eq!(again.root_identity(), narrow.root_identity());
    assert_eq!(again.root(), narrow.root());
    // A directory replaced by another of the same name is another root.
    std::fs::remove_dir_all(&b).unwrap();
    std::fs::create_dir(&b).unwrap();
    let replaced = LocalFs::new(&b).unwrap();
    assert_ne!(replaced.root_identity(), narrow.root_identity());
    assert_eq!(replaced.getattr(&narrow.root()), Err(Errno(libc::ESTALE)));
}

#[test]
fn a_narrowed_export_refuses_the_wider_ones_handles() {
    let a = tree();
    let b = a.path().join("B");
    let wide = kernel_fs(a.path());
    let old: Vec<_> = ["outside", "od", "od/f", "B/in", "B/d"]
        .into_iter()
        .map(|p| (p, look(&wide, p)))
        .collect();
    let narrow = kernel_fs(&b);
    let new: Vec<_> = ["in", "d", "d/deep"]
        .into_iter()
        .map(|p| (p, look(&narrow, p)))
        .collect();
    // Their cached descriptors would keep dentries connected.
    drop((wide, narrow));
    forget_dentries();

    let narrow = kernel_fs(&b);
    for (p, h) in &old {
        // Made under A: refused even for objects inside B.
        assert_eq!(narrow.getattr(h), Err(Errno(libc::ESTALE)), "{p}");
        assert_eq!(
            narrow.read(&rootc(), h, 0, 100).map(|_| ()),
            Err(Errno(libc::ESTALE)),
            "{p}"
        );
    }
    let pm = LocalFs::with_mode(&b, Some(Mode::PathMap)).unwrap();
    for (p, h) in &old {
        assert_eq!(pm.getattr(h), Err(Errno(libc::ESTALE)), "path map: {p}");
    }
    // B's own handles resolve, disconnected or not: files through the
    // parent their filehandle names.
    let root = narrow.root();
    narrow.note_parent(&new[0].1, &root);
    narrow.note_parent(&new[2].1, &new[1].1);
    for (p, h) in &new {
        assert!(narrow.getattr(h).is_ok(), "{p}");
    }
    let (data, _) = narrow.read(&rootc(), &new[0].1, 0, 100).unwrap();
    assert_eq!(&data[..], b"inside");
    let (data, _) = narrow.read(&rootc(), &new[2].1, 0, 100).unwrap();
    assert_eq!(&data[..], b"deep");
}

#[test]
fn objects_outside_are_refused_even_with_the_exports_tag() {
    let a = tree();
    let b = a.path().join("B");
    let wide = kernel_fs(a.path());
    let od = look(&wide, "od");
    let out = look(&wide, "outside");
    drop(wide);
    forget_dentries();
    let narrow = kernel_fs(&b);
    // A directory is placed by climbing "..", connected or not.
    assert_eq!(
        narrow.getattr(&retag(&narrow, &od)),
        Err(Errno(libc::ESTALE))
    );
    // A file whose only name the kernel knows to be outside (held open so
    // that a concurrent test dropping the caches leaves it connected).
    let _pin = std::fs::File::open(a.path().join("outside")).unwrap();
    assert_eq!(
        narrow.getattr(&retag(&narrow, &out)),
        Err(Errno(libc::ESTALE))
    );
    // Once linked inside too, it is the export's: through the directory
    // it was found in, although the kernel knows it by its outside name.
    std::fs::hard_link(a.path().join("outside"), b.join("linked")).unwrap();
    let linked = look(&narrow, "linked");
    assert_eq!(linked, retag(&narrow, &out));
    assert!(narrow.getattr(&linked).is_ok());
    drop(narrow);
    forget_dentries(); // the inside name's dentry; the pin keeps the other
    let narrow = kernel_fs(&b);
    assert_eq!(narrow.getattr(&linked), Err(Errno(libc::ESTALE)));
    narrow.note_parent(&linked, &narrow.root());
    assert!(narrow.getattr(&linked).is_ok());
    // A parent hint is a hint: one that does not hold the object, or is
    // outside, or is not a directory, places nothing.
    drop(narrow);
    forget_dentries();
    let narrow = kernel_fs(&b);
    let bd = look(&narrow, "d");
    narrow.note_parent(&linked, &bd);
    assert_eq!(narrow.getattr(&linked), Err(Errno(libc::ESTALE)));
    narrow.note_parent(&linked, &retag(&narrow, &od));
    assert_eq!(narrow.getattr(&linked), Err(Errno(libc::ESTALE)));
    let inside = look(&narrow, "in");
    narrow.note_parent(&linked, &inside);
    assert_eq!(narrow.getattr(&linked), Err(Errno(libc::ESTALE)));
}

/// Handles made inside the export for files since moved out of it, or
/// moved within it, after the kernel has forgotten where they are.
#[test]
fn a_disconnected_file_is_served_only_through_a_parent_inside() {
    let a = tree();
    let b = a.path().join("B");
    std::fs::write(b.join("d/leaves"), "moved out later").unwrap();
    std::fs::write(b.join("d/moves"), "moved within").unwrap();
    let narrow = kernel_fs(&b);
    let d = look(&narrow, "d");
    let deep = look(&narrow, "d/deep");
    let leaves = look(&narrow, "d/leaves");
    let moves = look(&narrow, "d/moves");
    drop(narrow);
    std::fs::rename(b.join("d/leaves"), a.path().join("od/left")).unwrap();
    std::fs::rename(b.join("d/moves"), b.join("moved")).unwrap();
    forget_dentries();

    let narrow = kernel_fs(&b);
    assert!(
        !narrow.whole_fs,
        "a temporary directory is not a file system's root"
    );
    // No parent named: a disconnected file cannot be placed.
    assert_eq!(narrow.getattr(&deep), Err(Errno(libc::ESTALE)));
    for h in [&deep, &leaves, &moves] {
        narrow.note_parent(h, &d);
    }
    let (data, _) = narrow.read(&rootc(), &deep, 0, 100).unwrap();
    assert_eq!(&data[..], b"deep");
    // Moved out: its handle, made inside, no longer reads it.
    assert_eq!(narrow.getattr(&leaves), Err(Errno(libc::ESTALE)));
    assert_eq!(
        narrow.read(&rootc(), &leaves, 0, 100).map(|_| ()),
        Err(Errno(libc::ESTALE))
    );
    // Moved within the export: the parent its handle names no longer
    // holds it, so until a lookup places it again it is stale too (the
    // cost of checking); the lookup's handle is the same object's.
    assert_eq!(narrow.getattr(&moves), Err(Errno(libc::ESTALE)));
    assert_eq!(look(&narrow, "moved"), moves);
    assert!(narrow.getattr(&moves).is_ok());
}

#[test]
fn a_file_systems_root_is_found_in_mountinfo() {
    let info = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
23 22 8:2 / /srv/with\\040space rw - ext4 /dev/sda2 rw
24 22 8:1 /home/x /mnt/bind rw - ext4 /dev/sda1 rw
25 22 0:45 / /proc rw - proc proc rw
";
    let on = |dev| top_mounts(info, dev).collect::<Vec<_>>();
    assert_eq!(on((8, 1)), vec![b"/".to_vec()]);
    assert_eq!(on((8, 2)), vec![b"/srv/with space".to_vec()]);
    assert!(on((8, 3)).is_empty());
    assert_eq!(unescape_mountinfo("a\\134b\\011"), b"a\\b\t".to_vec());
    assert_eq!(unescape_mountinfo("tail\\04"), b"tail\\04".to_vec());
    // The directories of this machine.
    let dir = TempDir::new().unwrap();
    assert!(!is_fs_root(
        &sys::fstat(File::open(dir.path()).unwrap().as_raw_fd()).unwrap()
    ));
    let proc_root = sys::fstat(File::open("/proc").unwrap().as_raw_fd()).unwrap();
    assert!(
        is_fs_root(&proc_root),
        "/proc is the root of a proc file system"
    );
}
