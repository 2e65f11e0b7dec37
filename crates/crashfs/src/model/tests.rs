use super::*;

const FILE: u32 = libc::S_IFREG | 0o644;
const DIR: u32 = libc::S_IFDIR | 0o755;

fn file(m: &mut Model, dir: Ino, name: &str) -> Ino {
    m.make(dir, name.as_bytes(), FILE, 0, 0, 0, None).unwrap()
}

fn data(m: &Model, ino: Ino) -> Vec<u8> {
    m.read(ino, 0, u32::MAX).unwrap().to_vec()
}

#[test]
fn unsynced_writes_and_names_are_lost() {
    let mut m = Model::new();
    let f = file(&mut m, ROOT, "f");
    m.write(f, 0, b"hello").unwrap();
    m.power_loss();
    assert_eq!(m.lookup(ROOT, b"f"), Err(libc::ENOENT), "name never synced");
    assert_eq!(m.inodes(), 1);
}

#[test]
fn a_durable_name_without_a_synced_file_is_an_empty_file() {
    let mut m = Model::new();
    let f = file(&mut m, ROOT, "f");
    m.write(f, 0, b"hello").unwrap();
    m.sync(ROOT).unwrap();
    m.power_loss();
    let f2 = m.lookup(ROOT, b"f").unwrap();
    assert_eq!(f2, f);
    assert_eq!(data(&m, f), b"");
    assert_eq!(m.get(f).unwrap().nlink, 1);
}

#[test]
fn synced_data_survives_and_later_writes_do_not() {
    let mut m = Model::new();
    let f = file(&mut m, ROOT, "f");
    m.write(f, 0, b"hello").unwrap();
    m.sync(f).unwrap();
    m.sync(ROOT).unwrap();
    m.write(f, 0, b"J").unwrap();
    m.setattr(f, None, None, None, Some(2), None, None).unwrap();
    m.power_loss();
    assert_eq!(data(&m, f), b"hello");
    m.write(f, 5, b"!").unwrap();
    m.sync(f).unwrap();
    m.power_loss();
    assert_eq!(data(&m, f), b"hello!");
}

#[test]
fn a_synced_file_without_a_durable_name_is_gone() {
    let mut m = Model::new();
    let f = file(&mut m, ROOT, "f");
    m.write(f, 0, b"x").unwrap();
    m.sync(f).unwrap();
    m.power_loss();
    assert_eq!(m.lookup(ROOT, b"f"), Err(libc::ENOENT));
    assert_eq!(m.get(f), Err(libc::ENOENT));
}

#[test]
fn removes_and_renames_need_their_directories_synced() {
    let mut m = Model::new();
    let d = m.make(ROOT, b"d", DIR, 0, 0, 0, None).unwrap();
    let f = file(&mut m, ROOT, "f");
    let g = file(&mut m, ROOT, "g");
    m.sync(ROOT).unwrap();
    m.sync(d).unwrap();
    m.remove(ROOT, b"g", false).unwrap();
    m.rename(ROOT, b"f", d, b"f2").unwrap();
    assert_eq!(m.get(g), Err(libc::ENOENT), "no name, not open: dropped");
    // Only the target directory synced: the file has both names.
    m.sync(d).unwrap();
    m.power_loss();
    assert_eq!(
        m.lookup(ROOT, b"g").unwrap(),
        g,
        "the remove was not durable"
    );
    assert_eq!(m.lookup(ROOT, b"f").unwrap(), f);
    assert_eq!(m.lookup(d, b"f2").unwrap(), f);
    assert_eq!(m.get(f).unwrap().nlink, 2);
    // Two names of one file: rename(2) does nothing; remove one instead.
    m.rename(ROOT, b"f", d, b"f2").unwrap();
    assert_eq!(m.lookup(ROOT, b"f").unwrap(), f);
    m.remove(ROOT, b"f", false).unwrap();
    m.remove(ROOT, b"g", false).unwrap();
    m.sync(ROOT).unwrap();
    m.power_loss();
    assert_eq!(m.lookup(ROOT, b"f"), Err(libc::ENOENT));
    assert_eq!(m.lookup(ROOT, b"g"), Err(libc::ENOENT));
    assert_eq!(m.get(f).unwrap().nlink, 1);
}

#[test]
fn an_open_unlinked_file_lives_until_closed() {
    let mut m = Model::new();
    let f = file(&mut m, ROOT, "f");
    m.opened(f);
    m.remove(ROOT, b"f", false).unwrap();
    m.write(f, 0, b"still").unwrap();
    assert_eq!(data(&m, f), b"still");
    m.closed(f);
    assert_eq!(m.get(f), Err(libc::ENOENT));
}

#[test]
fn directories_keep_posix_rules() {
    let mut m = Model::new();
    let d = m.make(ROOT, b"d", DIR, 0, 0, 0, None).unwrap();
    let e = m.make(d, b"e", DIR, 0, 0, 0, None).unwrap();
    assert_eq!(m.get(ROOT).unwrap().nlink, 3);
    assert_eq!(m.remove(ROOT, b"d", true), Err(libc::ENOTEMPTY));
    assert_eq!(m.remove(ROOT, b"d", false), Err(libc::EISDIR));
    assert_eq!(
        m.rename(ROOT, b"d", e, b"x"),
        Err(libc::EINVAL),
        "into itself"
    );
    assert_eq!(m.make(d, b"e", FILE, 0, 0, 0, None), Err(libc::EEXIST));
    assert_eq!(m.lookup(e, b"..").unwrap(), d);
    m.rename(d, b"e", ROOT, b"e").unwrap();
    assert_eq!(m.lookup(e, b"..").unwrap(), ROOT);
    assert_eq!(m.get(ROOT).unwrap().nlink, 4);
    m.remove(ROOT, b"e", true).unwrap();
    m.remove(ROOT, b"d", true).unwrap();
    assert_eq!(m.get(ROOT).unwrap().nlink, 2);
    assert_eq!(m.inodes(), 1);
    let long = vec![b'a'; NAME_MAX + 1];
    assert_eq!(
        m.make(ROOT, &long, FILE, 0, 0, 0, None),
        Err(libc::ENAMETOOLONG)
    );
}

#[test]
fn holes_and_punches() {
    let mut m = Model::new();
    let f = file(&mut m, ROOT, "f");
    m.write(f, 4, b"ab").unwrap();
    assert_eq!(data(&m, f), b"\0\0\0\0ab");
    m.fallocate(f, 0, 10, 0).unwrap();
    assert_eq!(m.get(f).unwrap().size(), 10);
    m.fallocate(
        f,
        4,
        1,
        libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
    )
    .unwrap();
    assert_eq!(&data(&m, f)[..6], b"\0\0\0\0\0b");
    assert_eq!(m.write(f, Model::MAX_FILE, b"x"), Err(libc::EFBIG));
}
