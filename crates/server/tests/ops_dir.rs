//! Directory operations in process (RFC 8881 §18.4, §18.9, §18.23–§18.26):
//! CREATE, REMOVE, RENAME, LINK, READDIR, READLINK.

mod common;

use common::*;

fn cinfo_changed(c: &ChangeInfo4) -> bool {
    c.before != c.after
}

/// The names READDIR lists in `dir`, in order.
async fn names_in(h: &InProcess, s: &Session, dir: &NfsFh4) -> Vec<Bytes> {
    let r = h.seq(s, &[putfh(dir), readdir(0, &[])]).await;
    ok(&r);
    let l = resok!(r, 2, ReadDir).reply;
    assert!(l.eof, "one reply holds it all");
    l.entries.into_iter().map(|e| e.name).collect()
}

/// The component names every operation taking one refuses (§14.2), and
/// the status for each.
fn bad_names() -> Vec<(Bytes, NfsStat4)> {
    vec![
        (Bytes::new(), NfsStat4::Nfs4errInval),
        (Bytes::from_static(b"\xc3\x28"), NfsStat4::Nfs4errInval),
        (b("."), NfsStat4::Nfs4errBadname),
        (b(".."), NfsStat4::Nfs4errBadname),
        (b("a/b"), NfsStat4::Nfs4errBadchar),
        (Bytes::from_static(b"a\0"), NfsStat4::Nfs4errBadchar),
        (Bytes::from(vec![b'n'; 256]), NfsStat4::Nfs4errNametoolong),
    ]
}

/// A directory "w" in the root that user 1000 may write, with its handle.
async fn writable_dir(h: &InProcess, s: &Session) -> NfsFh4 {
    let root = root_fh(h, s).await;
    new_dir(h, s, &root, "w", Some(0o777)).await
}

// ---------------------------------------------------------------------
// CREATE (§18.4)
// ---------------------------------------------------------------------

#[tokio::test]
async fn create_makes_a_directory_that_becomes_current() {
    let h = server();
    let s = h.client("c").await;
    let root = root_fh(&h, &s).await;
    let op = NfsArgOp4::Create(Create4Args {
        objtype: CreateType4::Dir,
        objname: b("d"),
        createattrs: mode_attr(0o750).encode(),
    });
    let r = h
        .seq(
            &s,
            &[putroot(), op, getattr(&[FATTR4_TYPE, FATTR4_MODE]), getfh()],
        )
        .await;
    ok(&r);
    let c = resok!(r, 2, Create);
    assert!(cinfo_changed(&c.cinfo), "{c:?}");
    assert!(c.attrset.contains(FATTR4_MODE), "{c:?}");
    let a = attrs_at(&r, 3);
    assert_eq!((a.type_, a.mode), (Some(NfsFtype4::Nf4Dir), Some(0o750)));
    assert_eq!(lookup_fh(&h, &s, &root, "d").await, fh_at(&r, 4));
}

#[tokio::test]
async fn create_makes_links_and_special_files() {
    let h = server();
    let s = h.client("c").await;
    let dev = SpecData4 {
        specdata1: 8,
        specdata2: 1,
    };
    let cases = [
        (CreateType4::Link(b("target")), NfsFtype4::Nf4Lnk),
        (CreateType4::Fifo, NfsFtype4::Nf4Fifo),
        (CreateType4::Sock, NfsFtype4::Nf4Sock),
        (CreateType4::Chr(dev), NfsFtype4::Nf4Chr),
        (CreateType4::Blk(dev), NfsFtype4::Nf4Blk),
    ];
    for (i, (kind, ftype)) in cases.into_iter().enumerate() {
        let name = format!("o{i}");
        let r = h
            .seq(
                &s,
                &[
                    putroot(),
                    create(&name, kind),
                    getattr(&[FATTR4_TYPE, FATTR4_RAWDEV]),
                ],
            )
            .await;
        ok(&r);
        let a = attrs_at(&r, 3);
        assert_eq!(a.type_, Some(ftype));
        if matches!(ftype, NfsFtype4::Nf4Chr | NfsFtype4::Nf4Blk) {
            assert_eq!(a.rawdev, Some(dev));
        }
    }
    let r = h
        .seq(&s, &[putroot(), lookup("o0"), NfsArgOp4::ReadLink])
        .await;
    ok(&r);
    assert_eq!(resok!(r, 3, ReadLink).link, b("target"));
}

#[tokio::test]
async fn create_of_an_existing_name_is_exist() {
    let h = server();
    let s = h.client("c").await;
    new_file(&h, &s, "f", 0o644, b"").await;
    ok(&h.seq(&s, &[putroot(), mkdir("d")]).await);
    for name in ["f", "d"] {
        let r = h.seq(&s, &[putroot(), mkdir(name)]).await;
        fails(&r, OpNum4::Create, NfsStat4::Nfs4errExist);
    }
}

#[tokio::test]
async fn create_refuses_bad_types_and_arguments() {
    let h = server();
    let s = h.client("c").await;
    // Regular files are made by OPEN (§18.4.3).
    let r = h
        .seq(
            &s,
            &[
                putroot(),
                create("f", CreateType4::Other(NfsFtype4::Nf4Reg as u32)),
            ],
        )
        .await;
    fails(&r, OpNum4::Create, NfsStat4::Nfs4errBadtype);
    let r = h.seq(&s, &[putroot(), symlink("l", "")]).await;
    fails(&r, OpNum4::Create, NfsStat4::Nfs4errInval);
    let sized = NfsArgOp4::Create(Create4Args {
        objtype: CreateType4::Dir,
        objname: b("d"),
        createattrs: size_attr(10).encode(),
    });
    let r = h.seq(&s, &[putroot(), sized]).await;
    fails(&r, OpNum4::Create, NfsStat4::Nfs4errInval);
    let hidden = NfsArgOp4::Create(Create4Args {
        objtype: CreateType4::Dir,
        objname: b("d"),
        createattrs: Attrs {
            hidden: Some(true),
            ..Default::default()
        }
        .encode(),
    });
    let r = h.seq(&s, &[putroot(), hidden]).await;
    fails(&r, OpNum4::Create, NfsStat4::Nfs4errAttrnotsupp);
    for (name, status) in bad_names() {
        let op = NfsArgOp4::Create(Create4Args {
            objtype: CreateType4::Dir,
            objname: name,
            createattrs: Fattr4::default(),
        });
        let r = h.seq(&s, &[putroot(), op]).await;
        fails(&r, OpNum4::Create, status);
    }
    assert!(names_in(&h, &s, &root_fh(&h, &s).await).await.is_empty());
}

#[tokio::test]
async fn create_in_what_is_no_directory() {
    let h = server();
    let s = h.client("c").await;
    let f = new_file(&h, &s, "f", 0o644, b"").await;
    let r = h.seq(&s, &[putfh(&f), mkdir("d")]).await;
    fails(&r, OpNum4::Create, NfsStat4::Nfs4errNotdir);
    let r = h.seq(&s, &[putroot(), symlink("l", "f"), mkdir("d")]).await;
    fails(&r, OpNum4::Create, NfsStat4::Nfs4errSymlink);
    let r = h.seq(&s, &[mkdir("d")]).await;
    fails(&r, OpNum4::Create, NfsStat4::Nfs4errNofilehandle);
}

#[tokio::test]
async fn create_without_write_permission_is_access() {
    let h = server();
    let s = h.client("root").await;
    let w = writable_dir(&h, &s).await;
    let u = h.client_as("user", user_auth()).await;
    let r = h.seq(&u, &[putroot(), mkdir("d")]).await;
    fails(&r, OpNum4::Create, NfsStat4::Nfs4errAccess);
    let r = h
        .seq(&u, &[putfh(&w), mkdir("d"), getattr(&[FATTR4_OWNER])])
        .await;
    ok(&r);
    assert_eq!(attrs_at(&r, 3).owner, Some(b("1000")));
}

#[tokio::test]
async fn create_on_a_read_only_export_is_rofs() {
    let h = read_only_server();
    let s = h.client("c").await;
    let r = h.seq(&s, &[putroot(), mkdir("d")]).await;
    fails(&r, OpNum4::Create, NfsStat4::Nfs4errRofs);
    assert_eq!(names_in(&h, &s, &root_fh(&h, &s).await).await, vec![b("f")]);
}

// ---------------------------------------------------------------------
// REMOVE (§18.25)
// ---------------------------------------------------------------------

#[tokio::test]
async fn remove_takes_the_name_away() {
    let h = server();
    let s = h.client("c").await;
    let root = root_fh(&h, &s).await;
    new_file(&h, &s, "f", 0o644, b"x").await;
    new_dir(&h, &s, &root, "d", None).await;
    for name in ["f", "d"] {
        let before = change_of(&h, &s, &root).await;
        let r = h.seq(&s, &[putroot(), remove(name)]).await;
        ok(&r);
        let c = resok!(r, 2, Remove).cinfo;
        assert_eq!(c.before, before);
        assert!(cinfo_changed(&c), "{c:?}");
        assert_eq!(c.after, change_of(&h, &s, &root).await);
        assert_eq!(
            lookup_status(&h, &s, &root, name).await,
            NfsStat4::Nfs4errNoent
        );
    }
}

#[tokio::test]
async fn remove_errors() {
    let h = server();
    let s = h.client("c").await;
    let root = root_fh(&h, &s).await;
    let f = new_file(&h, &s, "f", 0o644, b"").await;
    let d = new_dir(&h, &s, &root, "d", None).await;
    new_dir(&h, &s, &d, "inner", None).await;
    let r = h.seq(&s, &[putroot(), remove("missing")]).await;
    fails(&r, OpNum4::Remove, NfsStat4::Nfs4errNoent);
    let r = h.seq(&s, &[putroot(), remove("d")]).await;
    fails(&r, OpNum4::Remove, NfsStat4::Nfs4errNotempty);
    let r = h.seq(&s, &[putfh(&f), remove("x")]).await;
    fails(&r, OpNum4::Remove, NfsStat4::Nfs4errNotdir);
    let r = h.seq(&s, &[remove("f")]).await;
    fails(&r, OpNum4::Remove, NfsStat4::Nfs4errNofilehandle);
    for (name, status) in bad_names() {
        let r = h
            .seq(
                &s,
                &[putroot(), NfsArgOp4::Remove(Remove4Args { target: name })],
            )
            .await;
        fails(&r, OpNum4::Remove, status);
    }
    assert_eq!(names_in(&h, &s, &root).await, vec![b("f"), b("d")]);
}

#[tokio::test]
async fn remove_without_write_permission_is_access() {
    let h = server();
    let s = h.client("root").await;
    new_file(&h, &s, "f", 0o666, b"").await;
    let u = h.client_as("user", user_auth()).await;
    let r = h.seq(&u, &[putroot(), remove("f")]).await;
    fails(&r, OpNum4::Remove, NfsStat4::Nfs4errAccess);
    assert_eq!(names_in(&h, &s, &root_fh(&h, &s).await).await, vec![b("f")]);
}

#[tokio::test]
async fn remove_on_a_read_only_export_is_rofs() {
    let h = read_only_server();
    let s = h.client("c").await;
    let r = h.seq(&s, &[putroot(), remove("f")]).await;
    fails(&r, OpNum4::Remove, NfsStat4::Nfs4errRofs);
    assert_eq!(names_in(&h, &s, &root_fh(&h, &s).await).await, vec![b("f")]);
}

// ---------------------------------------------------------------------
// RENAME (§18.26)
// ---------------------------------------------------------------------

/// RENAME of `old` in `from` to `new` in `to`.
fn rename_ops(from: &NfsFh4, to: &NfsFh4, old: &str, new: &str) -> Vec<NfsArgOp4> {
    vec![putfh(from), NfsArgOp4::SaveFh, putfh(to), rename(old, new)]
}

#[tokio::test]
async fn rename_within_a_directory() {
    let h = server();
    let s = h.client("c").await;
    let root = root_fh(&h, &s).await;
    let f = new_file(&h, &s, "a", 0o644, b"data").await;
    let before = change_of(&h, &s, &root).await;
    let r = h.seq(&s, &rename_ops(&root, &root, "a", "b")).await;
    ok(&r);
    let c = resok!(r, 4, Rename);
    let after = change_of(&h, &s, &root).await;
    assert_eq!(
        (c.source_cinfo.before, c.source_cinfo.after),
        (before, after)
    );
    assert_eq!(
        (c.target_cinfo.before, c.target_cinfo.after),
        (before, after)
    );
    assert_ne!(before, after);
    assert_eq!(
        lookup_status(&h, &s, &root, "a").await,
        NfsStat4::Nfs4errNoent
    );
    assert_eq!(lookup_fh(&h, &s, &root, "b").await, f);
}

#[tokio::test]
async fn rename_between_directories_replacing_a_file() {
    let h = server();
    let s = h.client("c").await;
    let root = root_fh(&h, &s).await;
    let d = new_dir(&h, &s, &root, "d", None).await;
    let f = new_file(&h, &s, "f", 0o644, b"new").await;
    let r = h.seq(&s, &[putfh(&d), open_create(&s, "g", 0o644)]).await;
    ok(&r);
    let (src_before, dst_before) = (change_of(&h, &s, &root).await, change_of(&h, &s, &d).await);
    let r = h.seq(&s, &rename_ops(&root, &d, "f", "g")).await;
    ok(&r);
    let c = resok!(r, 4, Rename);
    assert_eq!(c.source_cinfo.before, src_before);
    assert_eq!(c.target_cinfo.before, dst_before);
    assert!(
        cinfo_changed(&c.source_cinfo) && cinfo_changed(&c.target_cinfo),
        "{c:?}"
    );
    assert_eq!(names_in(&h, &s, &root).await, vec![b("d")]);
    let g = lookup_fh(&h, &s, &d, "g").await;
    assert_eq!(g, f);
    assert_eq!(&content(&h, &s, &g).await[..], b"new");
}

#[tokio::test]
async fn rename_onto_itself_changes_nothing() {
    let h = server();
    let s = h.client("c").await;
    let root = root_fh(&h, &s).await;
    let a = new_file(&h, &s, "a", 0o644, b"").await;
    ok(&h.seq(&s, &link_ops(&a, &root, "b")).await);
    let before = change_of(&h, &s, &root).await;
    // The same name, and another link to the same file (§18.26.4).
    for new in ["a", "b"] {
        let r = h.seq(&s, &rename_ops(&root, &root, "a", new)).await;
        ok(&r);
        let c = resok!(r, 4, Rename);
        assert!(!cinfo_changed(&c.source_cinfo) && !cinfo_changed(&c.target_cinfo));
    }
    assert_eq!(change_of(&h, &s, &root).await, before);
    assert_eq!(names_in(&h, &s, &root).await, vec![b("a"), b("b")]);
}

#[tokio::test]
async fn rename_errors() {
    let h = server();
    let s = h.client("c").await;
    let root = root_fh(&h, &s).await;
    let f = new_file(&h, &s, "f", 0o644, b"").await;
    let d = new_dir(&h, &s, &root, "d", None).await;
    new_dir(&h, &s, &d, "inner", None).await;
    new_dir(&h, &s, &root, "e", None).await;
    let cases = [
        (
            rename_ops(&root, &root, "missing", "x"),
            NfsStat4::Nfs4errNoent,
        ),
        // A file over a directory, a directory over a file or over a
        // non-empty directory (§18.26.4's NFS4ERR_EXIST, told apart as
        // the Linux server and client do).
        (rename_ops(&root, &root, "f", "e"), NfsStat4::Nfs4errIsdir),
        (rename_ops(&root, &root, "e", "f"), NfsStat4::Nfs4errNotdir),
        (
            rename_ops(&root, &root, "e", "d"),
            NfsStat4::Nfs4errNotempty,
        ),
        // A directory into itself (§18.26.3).
        (rename_ops(&root, &d, "d", "x"), NfsStat4::Nfs4errInval),
        (rename_ops(&f, &root, "x", "y"), NfsStat4::Nfs4errNotdir),
        (rename_ops(&root, &f, "f", "y"), NfsStat4::Nfs4errNotdir),
        // No saved filehandle.
        (
            vec![putroot(), rename("f", "g")],
            NfsStat4::Nfs4errNofilehandle,
        ),
        (vec![rename("f", "g")], NfsStat4::Nfs4errNofilehandle),
    ];
    for (ops, status) in cases {
        let r = h.seq(&s, &ops).await;
        fails(&r, OpNum4::Rename, status);
    }
    for (name, status) in bad_names() {
        let mut ops = rename_ops(&root, &root, "f", "x");
        ops[3] = NfsArgOp4::Rename(Rename4Args {
            oldname: b("f"),
            newname: name.clone(),
        });
        fails(&h.seq(&s, &ops).await, OpNum4::Rename, status);
        ops[3] = NfsArgOp4::Rename(Rename4Args {
            oldname: name,
            newname: b("x"),
        });
        fails(&h.seq(&s, &ops).await, OpNum4::Rename, status);
    }
    assert_eq!(names_in(&h, &s, &root).await, vec![b("f"), b("d"), b("e")]);
}

#[tokio::test]
async fn rename_without_write_permission_is_access() {
    let h = server();
    let s = h.client("root").await;
    let root = root_fh(&h, &s).await;
    let w = writable_dir(&h, &s).await;
    new_file(&h, &s, "f", 0o666, b"").await;
    let u = h.client_as("user", user_auth()).await;
    let r = h.seq(&u, &rename_ops(&root, &w, "f", "g")).await;
    fails(&r, OpNum4::Rename, NfsStat4::Nfs4errAccess);
    assert!(names_in(&h, &s, &w).await.is_empty());
}

#[tokio::test]
async fn rename_on_a_read_only_export_is_rofs() {
    let h = read_only_server();
    let s = h.client("c").await;
    let root = root_fh(&h, &s).await;
    let r = h.seq(&s, &rename_ops(&root, &root, "f", "g")).await;
    fails(&r, OpNum4::Rename, NfsStat4::Nfs4errRofs);
    assert_eq!(names_in(&h, &s, &root).await, vec![b("f")]);
}

#[tokio::test]
async fn rename_and_link_across_exports_are_xdev() {
    let h = InProcess::with_exports(
        vec![
            export(1, "/a", ExportRules::open()),
            export(2, "/b", ExportRules::open()),
        ],
        LEASE,
    );
    let s = h.client("c").await;
    let a = {
        let r = h.seq(&s, &[putroot(), lookup("a"), getfh()]).await;
        fh_at(&r, 3)
    };
    let b_ = {
        let r = h.seq(&s, &[putroot(), lookup("b"), getfh()]).await;
        fh_at(&r, 3)
    };
    let r = h
        .seq(&s, &[putfh(&a), open_create(&s, "f", 0o644), getfh()])
        .await;
    ok(&r);
    let f = fh_at(&r, 3);
    let r = h.seq(&s, &rename_ops(&a, &b_, "f", "f")).await;
    fails(&r, OpNum4::Rename, NfsStat4::Nfs4errXdev);
    let r = h
        .seq(&s, &[putfh(&f), NfsArgOp4::SaveFh, putfh(&b_), link("f")])
        .await;
    fails(&r, OpNum4::Link, NfsStat4::Nfs4errXdev);
    assert!(names_in(&h, &s, &b_).await.is_empty());
}

// ---------------------------------------------------------------------
// LINK (§18.9)
// ---------------------------------------------------------------------

/// LINK of `file` as `name` in `dir`.
fn link_ops(file: &NfsFh4, dir: &NfsFh4, name: &str) -> Vec<NfsArgOp4> {
    vec![putfh(file), NfsArgOp4::SaveFh, putfh(dir), link(name)]
}

#[tokio::test]
async fn link_gives_the_file_another_name() {
    let h = server();
    let s = h.client("c").await;
    let root = root_fh(&h, &s).await;
    let d = new_dir(&h, &s, &root, "d", None).await;
    let f = new_file(&h, &s, "f", 0o644, b"shared").await;
    let before = change_of(&h, &s, &d).await;
    let r = h.seq(&s, &link_ops(&f, &d, "g")).await;
    ok(&r);
    let c = resok!(r, 4, Link).cinfo;
    assert_eq!(c.before, before);
    assert!(cinfo_changed(&c), "{c:?}");
    assert_eq!(lookup_fh(&h, &s, &d, "g").await, f);
    assert_eq!(
        attrs_of(&h, &s, &f, &[FATTR4_NUMLINKS]).await.numlinks,
        Some(2)
    );
}

#[tokio::test]
async fn link_errors() {
    let h = server();
    let s = h.client("c").await;
    let root = root_fh(&h, &s).await;
    let f = new_file(&h, &s, "f", 0o644, b"").await;
    let d = new_dir(&h, &s, &root, "d", None).await;
    let cases = [
        (link_ops(&f, &root, "d"), NfsStat4::Nfs4errExist),
        // Directories get no hard links.
        (link_ops(&d, &root, "d2"), NfsStat4::Nfs4errIsdir),
        (link_ops(&f, &f, "g"), NfsStat4::Nfs4errNotdir),
        (vec![putroot(), link("g")], NfsStat4::Nfs4errNofilehandle),
        (vec![link("g")], NfsStat4::Nfs4errNofilehandle),
    ];
    for (ops, status) in cases {
        let r = h.seq(&s, &ops).await;
        fails(&r, OpNum4::Link, status);
    }
    for (name, status) in bad_names() {
        let mut ops = link_ops(&f, &root, "x");
        ops[3] = NfsArgOp4::Link(Link4Args { newname: name });
        fails(&h.seq(&s, &ops).await, OpNum4::Link, status);
    }
    assert_eq!(
        attrs_of(&h, &s, &f, &[FATTR4_NUMLINKS]).await.numlinks,
        Some(1)
    );
}

#[tokio::test]
async fn link_without_write_permission_is_access() {
    let h = server();
    let s = h.client("root").await;
    let root = root_fh(&h, &s).await;
    let w = writable_dir(&h, &s).await;
    let u = h.client_as("user", user_auth()).await;
    let r = h
        .seq(&u, &[putfh(&w), open_create(&u, "mine", 0o644), getfh()])
        .await;
    ok(&r);
    let mine = fh_at(&r, 3);
    let r = h.seq(&u, &link_ops(&mine, &root, "g")).await;
    fails(&r, OpNum4::Link, NfsStat4::Nfs4errAccess);
    // Someone else's file the user may not write: the kernel's protected
    // hard links refuse it first (EPERM).
    let theirs = new_file(&h, &s, "f", 0o644, b"").await;
    let r = h.seq(&u, &link_ops(&theirs, &w, "g")).await;
    fails(&r, OpNum4::Link, NfsStat4::Nfs4errPerm);
    assert_eq!(names_in(&h, &s, &w).await, vec![b("mine")]);
}

#[tokio::test]
async fn link_on_a_read_only_export_is_rofs() {
    let h = read_only_server();
    let s = h.client("c").await;
    let root = root_fh(&h, &s).await;
    let f = lookup_fh(&h, &s, &root, "f").await;
    let r = h.seq(&s, &link_ops(&f, &root, "g")).await;
    fails(&r, OpNum4::Link, NfsStat4::Nfs4errRofs);
    assert_eq!(names_in(&h, &s, &root).await, vec![b("f")]);
}

// ---------------------------------------------------------------------
// READDIR (§18.23)
// ---------------------------------------------------------------------

#[tokio::test]
async fn readdir_lists_entries_with_attributes() {
    let h = server();
    let s = h.client("c").await;
    let root = root_fh(&h, &s).await;
    let f = new_file(&h, &s, "f", 0o644, b"").await;
    new_dir(&h, &s, &root, "d", None).await;
    let r = h
        .seq(
            &s,
            &[putroot(), readdir(0, &[FATTR4_TYPE, FATTR4_FILEHANDLE])],
        )
        .await;
    ok(&r);
    let l = resok!(r, 2, ReadDir).reply;
    assert!(l.eof);
    let got: Vec<(Bytes, Option<NfsFtype4>)> = l
        .entries
        .iter()
        .map(|e| {
            let a = Attrs::decode(&e.attrs).unwrap_or_default();
            (e.name.clone(), a.type_)
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (b("f"), Some(NfsFtype4::Nf4Reg)),
            (b("d"), Some(NfsFtype4::Nf4Dir)),
        ]
    );
    let fa = Attrs::decode(&l.entries[0].attrs).unwrap_or_default();
    assert_eq!(fa.filehandle, Some(f));
    assert!(
        l.entries.iter().all(|e| e.cookie > 2),
        "cookies 0-2 are reserved"
    );
    ok(&h.seq(&s, &[putroot(), remove("f")]).await);
    assert_eq!(names_in(&h, &s, &root).await, vec![b("d")]);
}

#[tokio::test]
async fn readdir_of_a_pseudo_directory_lists_the_exports() {
    let h = InProcess::with_exports(
        vec![
            export(1, "/a/one", ExportRules::open()),
            export(2, "/b", ExportRules::open()),
        ],
        LEASE,
    );
    let s = h.client("c").await;
    let want = [FATTR4_TYPE, FATTR4_FSID];
    let r = h
        .seq(&s, &[putroot(), getattr(&want), readdir(0, &want)])
        .await;
    ok(&r);
    let root_fsid = attrs_at(&r, 2).fsid;
    let l = resok!(r, 3, ReadDir).reply;
    let got: Vec<(Bytes, Option<NfsFtype4>, Option<FsId4>)> = l
        .entries
        .iter()
        .map(|e| {
            let a = Attrs::decode(&e.attrs).unwrap_or_default();
            (e.name.clone(), a.type_, a.fsid)
        })
        .collect();
    let dir = Some(NfsFtype4::Nf4Dir);
    // "a" is a pseudo directory, "b" the root of export 2, with its fsid.
    assert_eq!(
        got,
        vec![
            (b("a"), dir, root_fsid),
            (
                b("b"),
                dir,
                Some(FsId4 {
                    major: 0x4645_5252,
                    minor: 2
                })
            ),
        ]
    );
    assert_ne!(root_fsid, got[1].2);
}

#[tokio::test]
async fn readdir_continues_from_a_cookie() {
    let h = server();
    let s = h.client("c").await;
    let root = root_fh(&h, &s).await;
    for i in 0..20 {
        ok(&h.seq(&s, &[putroot(), mkdir(&format!("dir{i:02}"))]).await);
    }
    let mut seen = Vec::new();
    let (mut cookie, mut verf) = (0, [0; 8]);
    for round in 0.. {
        assert!(round < 20, "the listing ends");
        let op = NfsArgOp4::ReadDir(ReadDir4Args {
            cookie,
            cookieverf: verf,
            dircount: 0,
            maxcount: 200,
            attr_request: Bitmap4::default(),
        });
        let r = h.seq(&s, &[putfh(&root), op]).await;
        ok(&r);
        let res = resok!(r, 2, ReadDir);
        assert!(!res.reply.entries.is_empty() || res.reply.eof);
        seen.extend(res.reply.entries.iter().map(|e| e.name.clone()));
        if res.reply.eof {
            break;
        }
        cookie = res.reply.entries.last().map_or(cookie, |e| e.cookie);
        verf = res.cookieverf;
    }
    let want: Vec<Bytes> = (0..20).map(|i| b(&format!("dir{i:02}"))).collect();
    assert_eq!(seen, want);
}

#[tokio::test]
async fn readdir_errors() {
    let h = server();
    let s = h.client("c").await;
    let f = new_file(&h, &s, "f", 0o644, b"").await;
    let rd = |cookie, verf: u8, maxcount, attrs: &[u32]| {
        NfsArgOp4::ReadDir(ReadDir4Args {
            cookie,
            cookieverf: [verf; 8],
            dircount: 0,
            maxcount,
            attr_request: Bitmap4::from_attrs(attrs),
        })
    };
    let cases = [
        (vec![putfh(&f), readdir(0, &[])], NfsStat4::Nfs4errNotdir),
        (
            vec![putroot(), rd(1, 0, 8192, &[])],
            NfsStat4::Nfs4errBadCookie,
        ),
        (
            vec![putroot(), rd(2, 0, 8192, &[])],
            NfsStat4::Nfs4errBadCookie,
        ),
        // A cookie with a verifier the server never gave.
        (
            vec![putroot(), rd(5, 9, 8192, &[])],
            NfsStat4::Nfs4errNotSame,
        ),
        (
            vec![putroot(), rd(0, 0, 10, &[])],
            NfsStat4::Nfs4errToosmall,
        ),
        // One entry does not fit.
        (
            vec![putroot(), rd(0, 0, 40, &[FATTR4_FILEHANDLE])],
            NfsStat4::Nfs4errToosmall,
        ),
        (
            vec![putroot(), rd(0, 0, 8192, &[FATTR4_TIME_ACCESS_SET])],
            NfsStat4::Nfs4errInval,
        ),
        (vec![readdir(0, &[])], NfsStat4::Nfs4errNofilehandle),
    ];
    for (ops, status) in cases {
        let r = h.seq(&s, &ops).await;
        fails(&r, OpNum4::ReadDir, status);
    }
}

#[tokio::test]
async fn readdir_without_read_permission_is_access() {
    let h = server();
    let s = h.client("root").await;
    let d = new_dir(&h, &s, &root_fh(&h, &s).await, "private", Some(0o700)).await;
    let u = h.client_as("user", user_auth()).await;
    let r = h.seq(&u, &[putfh(&d), readdir(0, &[])]).await;
    fails(&r, OpNum4::ReadDir, NfsStat4::Nfs4errAccess);
}

// ---------------------------------------------------------------------
// READLINK (§18.24)
// ---------------------------------------------------------------------

#[tokio::test]
async fn readlink_reads_the_link_text() {
    let h = server();
    let s = h.client("c").await;
    let text = "../some/where else";
    let r = h
        .seq(&s, &[putroot(), symlink("l", text), NfsArgOp4::ReadLink])
        .await;
    ok(&r);
    assert_eq!(resok!(r, 3, ReadLink).link, b(text));
}

#[tokio::test]
async fn readlink_of_what_is_no_link() {
    let h = server();
    let s = h.client("c").await;
    let f = new_file(&h, &s, "f", 0o644, b"").await;
    for fh in [f, root_fh(&h, &s).await] {
        let r = h.seq(&s, &[putfh(&fh), NfsArgOp4::ReadLink]).await;
        fails(&r, OpNum4::ReadLink, NfsStat4::Nfs4errInval);
    }
    let r = h.seq(&s, &[NfsArgOp4::ReadLink]).await;
    fails(&r, OpNum4::ReadLink, NfsStat4::Nfs4errNofilehandle);
}
