//! crashfs mounted, through the kernel's system calls: what fsync and a
//! directory's fsync make durable survives a power loss, nothing else
//! does, and handles taken before the loss still open what survived.
//! Needs root and /dev/fuse (tests/crash-power.sh runs it).

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;

fn fsync_dir(p: &std::path::Path) {
    File::open(p).unwrap().sync_all().unwrap();
}

#[test]
#[ignore = "needs root and /dev/fuse: run by tests/crash-power.sh"]
fn what_was_synced_survives_a_power_loss_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let fs = crashfs::Mounted::mount(dir.path()).expect("mount crashfs (root, /dev/fuse)");
    let root = fs.path();
    // a: written, synced, named durably. b: written, not synced, named
    // durably. c: synced, never named durably (made after the directory's
    // sync). d: removed after the directory's sync, the removal unsynced.
    let mut a = File::create(root.join("a")).unwrap();
    a.write_all(b"alpha").unwrap();
    a.sync_all().unwrap();
    let mut b = File::create(root.join("b")).unwrap();
    b.write_all(b"beta").unwrap();
    File::create(root.join("d")).unwrap();
    fs::create_dir(root.join("sub")).unwrap();
    fsync_dir(root);
    let mut c = File::create(root.join("c")).unwrap();
    c.write_all(b"gamma").unwrap();
    c.sync_all().unwrap();
    fs::remove_file(root.join("d")).unwrap();
    a.write_at(b"ALPHA-and-more", 0).unwrap();
    fs::write(root.join("sub/inner"), b"x").unwrap();
    drop((a, b, c));
    fs.power_loss();
    let mut names: Vec<_> = fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["a", "b", "d", "sub"]);
    assert_eq!(fs::read(root.join("a")).unwrap(), b"alpha");
    assert_eq!(
        fs::read(root.join("b")).unwrap(),
        b"",
        "its data was never synced"
    );
    assert_eq!(fs::read_dir(root.join("sub")).unwrap().count(), 0);
    // Synced now: it stays.
    let mut f = OpenOptions::new()
        .append(true)
        .open(root.join("b"))
        .unwrap();
    f.write_all(b"BETA").unwrap();
    f.sync_data().unwrap();
    fs.power_loss();
    let mut got = String::new();
    File::open(root.join("b"))
        .unwrap()
        .read_to_string(&mut got)
        .unwrap();
    assert_eq!(got, "BETA");
    assert!(fs.stats().power_losses == 2 && fs.stats().syncs >= 4);
}

/// On the slow disk, syncs queue for the one arm: four concurrent syncs
/// take at least four delays in all (a slower machine only stretches
/// that), and what they synced is durable as on the fast one.
#[test]
#[ignore = "needs root and /dev/fuse: run by tests/crash-power.sh"]
fn the_slow_disk_answers_syncs_one_delay_after_another() {
    let dir = tempfile::tempdir().unwrap();
    let delay = std::time::Duration::from_millis(50);
    let fs = crashfs::Mounted::mount_with(dir.path(), delay).expect("mount crashfs");
    let root = fs.path().to_path_buf();
    fsync_dir(&root);
    let began = std::time::Instant::now();
    let hs: Vec<_> = (0..4)
        .map(|i| {
            let p = root.join(format!("f{i}"));
            std::thread::spawn(move || {
                let mut f = File::create(&p).unwrap();
                f.write_all(b"data").unwrap();
                f.sync_all().unwrap();
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert!(began.elapsed() >= delay * 4, "{:?}", began.elapsed());
    fsync_dir(&root);
    fs.power_loss();
    for i in 0..4 {
        assert_eq!(fs::read(root.join(format!("f{i}"))).unwrap(), b"data");
    }
}
