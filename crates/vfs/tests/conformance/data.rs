//! File contents: read, write, truncate, ALLOCATE, DEALLOCATE, SEEK, COPY.

use bytes::Bytes;
use vfs::{CreateKind, SeekWhat, SetAttr, Stability, MAX_FILE_SIZE};

use crate::fixture::{each, err, mode, root};

fn size(s: u64) -> SetAttr {
    SetAttr {
        size: Some(s),
        ..Default::default()
    }
}

#[test]
fn reads_and_writes() {
    each(|fx| {
        let (fs, r, c) = (&fx.fs, &fx.root, &root());
        let f = fx.file(r, "f");
        for i in 0..4u64 {
            let st = fs
                .write(c, &f, i * 4096, &[i as u8; 4096], Stability::DataSync)
                .unwrap();
            assert_eq!(st, Stability::DataSync);
        }
        fs.commit(&f).unwrap();
        assert_eq!(
            fs.read(c, &f, 0, 4096).unwrap(),
            (Bytes::from(vec![0; 4096]), false)
        );
        let (data, eof) = fs.read(c, &f, 3 * 4096 + 100, 8192).unwrap();
        assert_eq!((data.len(), eof), (3996, true));
        assert!(data.iter().all(|&b| b == 3));
        assert_eq!(fs.read(c, &f, 1 << 20, 10).unwrap(), (Bytes::new(), true));
        assert_eq!(fs.read(c, &f, 0, 0).unwrap(), (Bytes::new(), false));
        assert_eq!(fs.read(c, &f, 4 * 4096, 0).unwrap(), (Bytes::new(), true));
        // sparse far away, without using the space in between
        fx.write(c, &f, 1 << 40, b"far").unwrap();
        let a = fx.attr(&f);
        assert_eq!(a.size, (1 << 40) + 3);
        assert!(a.used < 1 << 20, "used {}", a.used);
        assert_eq!(fs.read(c, &f, (1 << 40) - 1, 10).unwrap().0, &b"\0far"[..]);
        // the largest size
        assert_eq!(fx.write(c, &f, MAX_FILE_SIZE, b"x"), Err(err(libc::EFBIG)));
        assert_eq!(fx.write(c, &f, u64::MAX, b"x"), Err(err(libc::EFBIG)));
        // not regular files
        assert_eq!(fs.read(c, r, 0, 1), Err(err(libc::EISDIR)));
        assert_eq!(fx.write(c, r, 0, b"x"), Err(err(libc::EISDIR)));
        assert_eq!(fs.commit(r), Err(err(libc::EISDIR)));
        let (p, _) = fs
            .create(c, r, b"p", &CreateKind::Fifo, &mode(0o644))
            .unwrap();
        assert_eq!(fs.read(c, &p, 0, 1), Err(err(libc::EINVAL)));
        assert_eq!(fx.write(c, &p, 0, b"x"), Err(err(libc::EINVAL)));
    })
}

#[test]
fn truncation() {
    each(|fx| {
        let (fs, r, c) = (&fx.fs, &fx.root, &root());
        let f = fx.file(r, "f");
        fx.write(c, &f, 0, &[9u8; 10000]).unwrap();
        let before = fx.attr(&f);
        let a = fx.set(c, &f, size(5000)).unwrap();
        assert_eq!(a.size, 5000);
        assert!(a.change > before.change);
        let a = fx.set(c, &f, size(9000)).unwrap();
        assert_eq!(a.size, 9000);
        let data = fx.read_all(&f);
        assert!(data[..5000].iter().all(|&b| b == 9));
        assert!(data[5000..].iter().all(|&b| b == 0));
        assert_eq!(
            fx.set(c, &f, size(MAX_FILE_SIZE + 1)),
            Err(err(libc::EFBIG))
        );
        assert_eq!(fx.set(c, r, size(0)), Err(err(libc::EISDIR)));
        let (s, _) = fs
            .create(
                c,
                r,
                b"s",
                &CreateKind::Symlink(Bytes::from_static(b"f")),
                &mode(0),
            )
            .unwrap();
        assert_eq!(fx.set(c, &s, size(0)), Err(err(libc::EINVAL)));
        assert_eq!(fx.set(c, &f, SetAttr::default()).unwrap(), fx.attr(&f));
    })
}

#[test]
fn allocate_deallocate_and_seek() {
    each(|fx| {
        let (fs, c) = (&fx.fs, &root());
        let f = fx.file(&fx.root, "sparse");
        fx.write(c, &f, 1 << 20, b"tail").unwrap();
        assert_eq!(fs.seek(c, &f, 0, SeekWhat::Hole).unwrap(), Some(0));
        assert_eq!(fs.seek(c, &f, 0, SeekWhat::Data).unwrap(), Some(1 << 20));
        assert_eq!(
            fs.seek(c, &f, (1 << 20) + 2, SeekWhat::Data).unwrap(),
            Some((1 << 20) + 2)
        );
        assert_eq!(
            fs.seek(c, &f, 1 << 20, SeekWhat::Hole).unwrap(),
            Some((1 << 20) + 4)
        );
        assert_eq!(fs.seek(c, &f, 2 << 20, SeekWhat::Data).unwrap(), None);
        assert_eq!(fs.seek(c, &f, 2 << 20, SeekWhat::Hole).unwrap(), None);
        assert_eq!(fs.seek(c, &f, u64::MAX, SeekWhat::Data).unwrap(), None);
        fs.allocate(c, &f, 0, 8192).unwrap();
        assert!(fx.attr(&f).used >= 8192);
        fs.allocate(c, &f, 0, 4 << 20).unwrap();
        assert_eq!(fx.attr(&f).size, 4 << 20);
        assert_eq!(fs.read(c, &f, 1 << 20, 4).unwrap().0, &b"tail"[..]);
        fx.write(c, &f, 0, &[1u8; 8192]).unwrap();
        fs.deallocate(c, &f, 0, 8192).unwrap();
        assert_eq!(fs.read(c, &f, 0, 8192).unwrap().0, vec![0u8; 8192]);
        assert_eq!(fx.attr(&f).size, 4 << 20);
        fs.deallocate(c, &f, 100, 1 << 30).unwrap();
        assert_eq!(fx.attr(&f).size, 4 << 20, "the size stays");
        assert_eq!(fs.allocate(c, &f, 0, 0), Err(err(libc::EINVAL)));
        assert_eq!(fs.deallocate(c, &f, 0, 0), Err(err(libc::EINVAL)));
        assert_eq!(fs.allocate(c, &f, MAX_FILE_SIZE, 1), Err(err(libc::EFBIG)));
        assert_eq!(fs.allocate(c, &fx.root, 0, 1), Err(err(libc::EISDIR)));
        assert_eq!(
            fs.seek(c, &fx.root, 0, SeekWhat::Data),
            Err(err(libc::EISDIR))
        );
    })
}

#[test]
fn copies() {
    each(|fx| {
        let (fs, r, c) = (&fx.fs, &fx.root, &root());
        let a = fx.file(r, "a");
        fx.write(c, &a, 0, b"0123456789").unwrap();
        let b = fx.file(r, "b");
        assert_eq!(fs.copy(c, &a, 2, &b, 0, 3).unwrap(), 3);
        assert_eq!(fx.read_all(&b), b"234");
        // count 0: to the end of the source; a gap in the destination
        assert_eq!(fs.copy(c, &a, 7, &b, 5, 0).unwrap(), 3);
        assert_eq!(fx.read_all(&b), b"234\x00\x00789");
        // within one file, ranges apart
        assert_eq!(fs.copy(c, &a, 0, &a, 5, 5).unwrap(), 5);
        assert_eq!(fx.read_all(&a), b"0123401234");
        assert_eq!(fs.copy(c, &a, 0, &a, 3, 5), Err(err(libc::EINVAL)));
        assert_eq!(fs.copy(c, &a, 11, &b, 0, 0), Err(err(libc::EINVAL)));
        assert_eq!(fs.copy(c, &a, 5, &b, 0, 6), Err(err(libc::EINVAL)));
        assert_eq!(fs.copy(c, &a, 10, &b, 0, 0), Ok(0));
        assert_eq!(
            fs.copy(c, &a, 0, &b, MAX_FILE_SIZE, 2),
            Err(err(libc::EFBIG))
        );
        assert_eq!(fs.copy(c, r, 0, &b, 0, 1), Err(err(libc::EISDIR)));
        assert_eq!(fs.copy(c, &a, 0, r, 0, 1), Err(err(libc::EISDIR)));
        // holes of the source become holes (or zeros) of the destination
        let s = fx.file(r, "sparse");
        fx.write(c, &s, 3 * 4096, b"end").unwrap();
        let d = fx.file(r, "d");
        fx.write(c, &d, 0, &[5u8; 8192]).unwrap();
        assert_eq!(fs.copy(c, &s, 0, &d, 0, 0).unwrap(), 3 * 4096 + 3);
        let got = fx.read_all(&d);
        assert_eq!(got.len(), 3 * 4096 + 3);
        assert!(got[..3 * 4096].iter().all(|&b| b == 0));
        assert_eq!(&got[3 * 4096..], b"end");
    })
}

#[test]
fn file_system_figures() {
    each(|fx| {
        let st = fx.fs.fsstat(&fx.root).unwrap();
        assert_eq!(st.max_name, 255);
        assert!(st.total_bytes > 0 && st.free_bytes <= st.total_bytes);
        assert!(st.total_files > 0 && st.free_files <= st.total_files);
    })
}
