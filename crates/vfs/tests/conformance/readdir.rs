//! Directory listings: cookies, paging, attributes.

use std::collections::HashSet;

use vfs::{DirEntry, FileType, Handle};

use crate::fixture::{each, err, root, Fx};

/// All entries after `cookie`, `page` at a time.
fn list(fx: &Fx, dir: &Handle, mut cookie: u64, page: usize, attrs: bool) -> Vec<DirEntry> {
    let mut all = Vec::new();
    loop {
        let mut got = Vec::new();
        let eof = fx
            .fs
            .readdir(&root(), dir, cookie, attrs, &mut |e| {
                if got.len() == page {
                    return false;
                }
                got.push(e);
                true
            })
            .unwrap();
        if let Some(last) = got.last() {
            cookie = last.cookie;
        }
        all.extend(got);
        if eof {
            return all;
        }
    }
}

fn names(es: &[DirEntry]) -> Vec<String> {
    es.iter()
        .map(|e| String::from_utf8(e.name.to_vec()).unwrap())
        .collect()
}

#[test]
fn pages_resume_after_their_cookie() {
    each(|fx| {
        let d = fx.dir(&fx.root, "big");
        for i in 0..300 {
            fx.file(&d, &format!("entry-{i:03}"));
        }
        fx.dir(&d, "sub");
        let all = list(fx, &d, 0, 1000, true);
        assert_eq!(all.len(), 301);
        assert_eq!(names(&all).iter().collect::<HashSet<_>>().len(), 301);
        let cookies: HashSet<u64> = all.iter().map(|e| e.cookie).collect();
        assert_eq!(cookies.len(), 301);
        for e in &all {
            assert!(e.cookie > 2, "cookie {}", e.cookie);
            let (h, a) = e.obj.clone().unwrap();
            assert_eq!(a.fileid, e.fileid);
            assert_eq!(fx.fs.getattr(&h).unwrap(), a);
            let kind = if e.name == "sub" {
                FileType::Directory
            } else {
                FileType::Regular
            };
            assert_eq!(a.ftype, kind);
        }
        // Small pages give the same listing; without attributes, no objects.
        let paged = list(fx, &d, 0, 7, false);
        assert_eq!(names(&paged), names(&all));
        assert!(paged.iter().all(|e| e.obj.is_none()));
        // Resuming from any entry's cookie gives what followed it.
        let rest = list(fx, &d, all[136].cookie, 50, false);
        assert_eq!(names(&rest), names(&all[137..]));
        assert!(list(fx, &d, all[300].cookie, 50, false).is_empty());
        // ...even when that entry and others were removed meanwhile.
        for i in [130, 136, 137, 200] {
            fx.fs.remove(&root(), &d, &all[i].name).unwrap();
        }
        let rest = list(fx, &d, all[136].cookie, 50, false);
        let mut want = names(&all[138..]);
        want.retain(|n| n.as_bytes() != all[200].name);
        assert_eq!(names(&rest), want);
        let rest = list(fx, &d, all[135].cookie, 50, false);
        assert_eq!(names(&rest), want);
    })
}

#[test]
fn listing_needs_a_directory() {
    each(|fx| {
        let f = fx.file(&fx.root, "f");
        let mut n = 0;
        assert_eq!(
            fx.fs.readdir(&root(), &f, 0, false, &mut |_| {
                n += 1;
                true
            }),
            Err(err(libc::ENOTDIR))
        );
        let e = fx.dir(&fx.root, "empty");
        assert!(fx.fs.readdir(&root(), &e, 0, true, &mut |_| false).unwrap());
        fx.fs.remove(&root(), &fx.root, b"empty").unwrap();
        assert_eq!(
            fx.fs.readdir(&root(), &e, 0, true, &mut |_| true),
            Err(err(libc::ESTALE))
        );
        assert_eq!(n, 0);
    })
}
