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
    std::fs::write("/proc/sys/vm/drop_caches", "2").expect("drop the dentry cache");
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
    // B's own handles resolve, disconnected or not.
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
    // Once linked inside too, it is the export's.
    std::fs::hard_link(a.path().join("outside"), b.join("linked")).unwrap();
    let linked = look(&narrow, "linked");
    assert_eq!(linked, retag(&narrow, &out));
    assert!(narrow.getattr(&linked).is_ok());
}
