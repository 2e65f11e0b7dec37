//! Filehandles, names and attributes: PUTROOTFH, PUTFH, PUTPUBFH, GETFH,
//! SAVEFH, RESTOREFH, LOOKUP, LOOKUPP, GETATTR, SETATTR, ACCESS, CREATE,
//! REMOVE, RENAME, LINK, READLINK, READDIR, SECINFO, SECINFO_NO_NAME,
//! VERIFY, NVERIFY (RFC 8881 §18).

mod common;

use std::collections::HashSet;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};

use bytes::Bytes;
use client::OpenOpts;
use common::*;
use proto::nfs4::*;

#[tokio::test]
async fn putrootfh_getfh_getattr_of_root() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        let r = c
            .compound(vec![
                NfsArgOp4::PutRootFh,
                NfsArgOp4::GetFh,
                getattr(&[
                    FATTR4_SUPPORTED_ATTRS,
                    FATTR4_TYPE,
                    FATTR4_FH_EXPIRE_TYPE,
                    FATTR4_CHANGE,
                    FATTR4_SIZE,
                    FATTR4_LINK_SUPPORT,
                    FATTR4_SYMLINK_SUPPORT,
                    FATTR4_NAMED_ATTR,
                    FATTR4_FSID,
                    FATTR4_UNIQUE_HANDLES,
                    FATTR4_LEASE_TIME,
                    FATTR4_FILEHANDLE,
                    FATTR4_FILEID,
                    FATTR4_MODE,
                    FATTR4_NUMLINKS,
                    FATTR4_SUPPATTR_EXCLCREAT,
                ]),
            ])
            .await
            .unwrap();
        let fh = fh_of(&r[1]);
        assert!(!fh.0.is_empty() && fh.0.len() <= NFS4_FHSIZE);
        let a = attrs_of(&r[2]);
        assert_eq!(a.type_, Some(NfsFtype4::Nf4Dir));
        assert_eq!(a.filehandle.as_ref(), Some(&fh));
        // Every REQUIRED attribute (§5.6) is supported and was returned.
        let sup = a.supported_attrs.clone().expect("supported_attrs");
        for n in [
            FATTR4_SUPPORTED_ATTRS,
            FATTR4_TYPE,
            FATTR4_FH_EXPIRE_TYPE,
            FATTR4_CHANGE,
            FATTR4_SIZE,
            FATTR4_LINK_SUPPORT,
            FATTR4_SYMLINK_SUPPORT,
            FATTR4_NAMED_ATTR,
            FATTR4_FSID,
            FATTR4_UNIQUE_HANDLES,
            FATTR4_LEASE_TIME,
            FATTR4_RDATTR_ERROR,
            FATTR4_FILEHANDLE,
            FATTR4_SUPPATTR_EXCLCREAT,
        ] {
            assert!(sup.contains(n), "REQUIRED attribute {n} not supported");
        }
        assert!(a.change.is_some() && a.size.is_some() && a.fsid.is_some());
        assert_eq!(a.lease_time, Some(10));
        assert_eq!(a.link_support, Some(true));
        assert_eq!(a.symlink_support, Some(true));
        let meta = std::fs::metadata(srv.export.path()).unwrap();
        assert_eq!(a.mode, Some(meta.mode() & 0o7777));
        assert_eq!(a.numlinks, Some(meta.nlink() as u32));
        assert!(a.fileid.is_some());
        assert!(a.suppattr_exclcreat.is_some());
    })
    .await
}

#[tokio::test]
async fn putpubfh_is_the_root_and_putfh_restores_a_handle() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let r = c
            .compound(vec![
                NfsArgOp4::PutPubFh,
                getattr(&[FATTR4_FILEID, FATTR4_TYPE]),
            ])
            .await
            .unwrap();
        let pubattrs = attrs_of(&r[1]);
        let rootattrs = c
            .getattr(&root, &[FATTR4_FILEID, FATTR4_TYPE])
            .await
            .unwrap();
        assert_eq!(pubattrs, rootattrs);
        let r = c
            .compound(vec![putfh(&root), NfsArgOp4::GetFh])
            .await
            .unwrap();
        assert_eq!(fh_of(&r[1]), root);
    })
    .await
}

#[tokio::test]
async fn operations_without_a_current_filehandle_are_nofilehandle() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        let none = NfsStat4::Nfs4errNofilehandle;
        for op in [
            NfsArgOp4::GetFh,
            getattr(&[FATTR4_TYPE]),
            lookup("x"),
            NfsArgOp4::LookupP,
            NfsArgOp4::SaveFh,
            NfsArgOp4::ReadLink,
            NfsArgOp4::Access(Access4Args {
                access: ACCESS4_READ,
            }),
            NfsArgOp4::Remove(Remove4Args { target: b("x") }),
            NfsArgOp4::Create(Create4Args {
                objtype: CreateType4::Dir,
                objname: b("x"),
                createattrs: Fattr4::default(),
            }),
            NfsArgOp4::ReadDir(ReadDir4Args {
                cookie: 0,
                cookieverf: [0; 8],
                dircount: 1000,
                maxcount: 4000,
                attr_request: Bitmap4::default(),
            }),
            NfsArgOp4::SecInfo(SecInfo4Args { name: b("x") }),
            NfsArgOp4::SecInfoNoName(SecInfoStyle4::CurrentFh),
            NfsArgOp4::Verify(Verify4Args {
                obj_attributes: Fattr4::default(),
            }),
        ] {
            let name = format!("{op:?}");
            assert_eq!(failed_at(c.compound(vec![op]).await), (0, none), "{name}");
        }
        // RESTOREFH with nothing saved.
        let r = c
            .compound(vec![NfsArgOp4::PutRootFh, NfsArgOp4::RestoreFh])
            .await;
        assert_eq!(failed_at(r), (1, NfsStat4::Nfs4errRestorefh));
        // RENAME and LINK need a saved filehandle too.
        let r = c
            .compound(vec![
                NfsArgOp4::PutRootFh,
                NfsArgOp4::Rename(Rename4Args {
                    oldname: b("a"),
                    newname: b("b"),
                }),
            ])
            .await;
        assert_eq!(failed_at(r), (1, none));
        let r = c
            .compound(vec![
                NfsArgOp4::PutRootFh,
                NfsArgOp4::Link(Link4Args { newname: b("b") }),
            ])
            .await;
        assert_eq!(failed_at(r), (1, none));
    })
    .await
}

#[tokio::test]
async fn savefh_restorefh_swap_handles() {
    within(async {
        let srv = TestServer::start().await;
        std::fs::create_dir(srv.path("a")).unwrap();
        let c = srv.client().await;
        let a = c.lookup_path("/a").await.unwrap();
        let root = c.root_fh().await.unwrap();
        let r = c
            .compound(vec![
                NfsArgOp4::PutRootFh,
                lookup("a"),
                NfsArgOp4::SaveFh,
                NfsArgOp4::PutRootFh,
                NfsArgOp4::GetFh,
                NfsArgOp4::RestoreFh,
                NfsArgOp4::GetFh,
            ])
            .await
            .unwrap();
        assert_eq!(fh_of(&r[4]), root);
        assert_eq!(fh_of(&r[6]), a);
    })
    .await
}

#[tokio::test]
async fn lookup_and_lookupp_walk_the_tree() {
    within(async {
        let srv = TestServer::start().await;
        std::fs::create_dir_all(srv.path("a/b/c")).unwrap();
        put_file(&srv, "a/b/file", b"x");
        let c = srv.client().await;
        let a = c.lookup_path("/a").await.unwrap();
        let bfh = c.lookup_path("/a/b").await.unwrap();
        assert_eq!(c.lookup(&a, "b").await.unwrap(), bfh);
        let r = c
            .compound(vec![putfh(&bfh), NfsArgOp4::LookupP, NfsArgOp4::GetFh])
            .await
            .unwrap();
        assert_eq!(fh_of(&r[2]), a);
        let r = c
            .compound(vec![
                putfh(&bfh),
                lookup("c"),
                NfsArgOp4::LookupP,
                NfsArgOp4::LookupP,
                NfsArgOp4::LookupP,
                NfsArgOp4::GetFh,
            ])
            .await
            .unwrap();
        assert_eq!(fh_of(&r[5]), c.root_fh().await.unwrap());
        // LOOKUPP at the root of the namespace is NOENT (§18.14.3).
        let r = c
            .compound(vec![NfsArgOp4::PutRootFh, NfsArgOp4::LookupP])
            .await;
        assert_eq!(failed_at(r), (1, NfsStat4::Nfs4errNoent));
        // LOOKUPP from a file is NOTDIR.
        let file = c.lookup_path("/a/b/file").await.unwrap();
        let r = c.compound(vec![putfh(&file), NfsArgOp4::LookupP]).await;
        assert_eq!(failed_at(r), (1, NfsStat4::Nfs4errNotdir));
    })
    .await
}

#[tokio::test]
async fn lookup_errors() {
    within(async {
        let srv = TestServer::start().await;
        put_file(&srv, "file", b"x");
        std::os::unix::fs::symlink("file", srv.path("link")).unwrap();
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let file = c.lookup(&root, "file").await.unwrap();
        let link = c.lookup(&root, "link").await.unwrap();
        let cases: Vec<(&NfsFh4, Bytes, NfsStat4)> = vec![
            (&root, b("missing"), NfsStat4::Nfs4errNoent),
            (&root, Bytes::new(), NfsStat4::Nfs4errInval),
            (&root, b("."), NfsStat4::Nfs4errBadname),
            (&root, b(".."), NfsStat4::Nfs4errBadname),
            (&root, b("a/b"), NfsStat4::Nfs4errBadchar),
            (
                &root,
                Bytes::from(vec![b'n'; 256]),
                NfsStat4::Nfs4errNametoolong,
            ),
            (
                &root,
                Bytes::from_static(&[0xff, 0xfe]),
                NfsStat4::Nfs4errInval,
            ),
            (&file, b("x"), NfsStat4::Nfs4errNotdir),
            (&link, b("x"), NfsStat4::Nfs4errSymlink),
        ];
        for (dir, name, want) in cases {
            let r = c
                .compound(vec![
                    putfh(dir),
                    NfsArgOp4::Lookup(Lookup4Args {
                        objname: name.clone(),
                    }),
                ])
                .await;
            assert_eq!(failed_at(r), (1, want), "LOOKUP {name:?}");
        }
    })
    .await
}

#[tokio::test]
async fn getattr_matches_the_local_file() {
    within(async {
        let srv = TestServer::start().await;
        put_file(&srv, "f", &[7u8; 1234]);
        std::fs::set_permissions(srv.path("f"), std::fs::Permissions::from_mode(0o640)).unwrap();
        let c = srv.client().await;
        let f = c.lookup_path("/f").await.unwrap();
        let a = c
            .getattr(
                &f,
                &[
                    FATTR4_TYPE,
                    FATTR4_SIZE,
                    FATTR4_MODE,
                    FATTR4_NUMLINKS,
                    FATTR4_OWNER,
                    FATTR4_OWNER_GROUP,
                    FATTR4_FILEID,
                    FATTR4_SPACE_USED,
                    FATTR4_TIME_MODIFY,
                    FATTR4_TIME_ACCESS,
                    FATTR4_TIME_METADATA,
                ],
            )
            .await
            .unwrap();
        let meta = std::fs::metadata(srv.path("f")).unwrap();
        assert_eq!(a.type_, Some(NfsFtype4::Nf4Reg));
        assert_eq!(a.size, Some(1234));
        assert_eq!(a.mode, Some(0o640));
        assert_eq!(a.numlinks, Some(1));
        assert_eq!(a.fileid, Some(meta.ino()));
        assert_eq!(a.time_modify.map(|t| t.seconds), Some(meta.mtime()));
        assert!(a.owner.is_some() && a.owner_group.is_some());
        // Asking for an attribute the server does not support is not an
        // error: it is left out of the reply (§18.7.3).
        let fa = c
            .getattr_raw(&f, Bitmap4::from_attrs(&[FATTR4_SIZE, FATTR4_MIMETYPE]))
            .await
            .unwrap();
        assert!(fa.attrmask.contains(FATTR4_SIZE));
        // Write-only attributes are INVAL in GETATTR (§18.7.3).
        let r = c
            .compound(vec![putfh(&f), getattr(&[FATTR4_TIME_MODIFY_SET])])
            .await;
        assert_eq!(failed_at(r), (1, NfsStat4::Nfs4errInval));
    })
    .await
}

fn owner_name(b: &Bytes) -> String {
    let s = String::from_utf8_lossy(b).into_owned();
    s.split('@').next().unwrap_or_default().to_string()
}

#[tokio::test]
async fn setattr_mode_owner_group_size_and_times() {
    within(async {
        let srv = TestServer::start().await;
        put_file(&srv, "f", &[1u8; 100]);
        let c = srv.client().await;
        let f = c.lookup_path("/f").await.unwrap();
        let anon = StateId4::ANONYMOUS;

        // mode
        let set = c
            .setattr(
                &f,
                anon,
                &Attrs {
                    mode: Some(0o600),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(set, Bitmap4::from_attrs(&[FATTR4_MODE]));
        let meta = std::fs::metadata(srv.path("f")).unwrap();
        assert_eq!(meta.mode() & 0o7777, 0o600);

        // owner and group, numerically (no such user on the host)
        c.setattr(
            &f,
            anon,
            &Attrs {
                owner: Some(b("54321")),
                owner_group: Some(b("54322")),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let meta = std::fs::metadata(srv.path("f")).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (54321, 54322));
        let a = c
            .getattr(&f, &[FATTR4_OWNER, FATTR4_OWNER_GROUP])
            .await
            .unwrap();
        assert_eq!(owner_name(a.owner.as_ref().unwrap()), "54321");
        assert_eq!(owner_name(a.owner_group.as_ref().unwrap()), "54322");
        // a name that resolves to nobody is BADOWNER
        let r = c
            .setattr(
                &f,
                anon,
                &Attrs {
                    owner: Some(b("no-such-user-xyzzy")),
                    ..Default::default()
                },
            )
            .await;
        assert_eq!(status(r), NfsStat4::Nfs4errBadowner);

        // size: truncate and extend
        c.setattr(
            &f,
            anon,
            &Attrs {
                size: Some(10),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        assert_eq!(std::fs::metadata(srv.path("f")).unwrap().len(), 10);
        c.setattr(
            &f,
            anon,
            &Attrs {
                size: Some(5000),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let data = std::fs::read(srv.path("f")).unwrap();
        assert_eq!(data.len(), 5000);
        assert_eq!(&data[..10], &[1u8; 10]);
        assert!(data[10..].iter().all(|&x| x == 0));

        // times: client time for mtime, server time for atime
        let t = NfsTime4 {
            seconds: 1_000_000_000,
            nseconds: 500,
        };
        c.setattr(
            &f,
            anon,
            &Attrs {
                time_modify_set: Some(SetTime4::SetToClientTime4(t)),
                time_access_set: Some(SetTime4::SetToServerTime4),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let a = c
            .getattr(&f, &[FATTR4_TIME_MODIFY, FATTR4_TIME_ACCESS])
            .await
            .unwrap();
        assert_eq!(a.time_modify, Some(t));
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let at = a.time_access.unwrap().seconds;
        assert!((now - at).abs() < 60, "atime {at} vs now {now}");
        // and server time for mtime too
        c.setattr(
            &f,
            anon,
            &Attrs {
                time_modify_set: Some(SetTime4::SetToServerTime4),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let a = c.getattr(&f, &[FATTR4_TIME_MODIFY]).await.unwrap();
        assert!((now - a.time_modify.unwrap().seconds).abs() < 60);
    })
    .await
}

#[tokio::test]
async fn setattr_errors() {
    within(async {
        let srv = TestServer::start().await;
        put_file(&srv, "f", b"abc");
        let c = srv.client().await;
        let f = c.lookup_path("/f").await.unwrap();
        let root = c.root_fh().await.unwrap();
        let anon = StateId4::ANONYMOUS;
        // A read-only attribute cannot be set (§18.30.4).
        let r = c
            .setattr(
                &f,
                anon,
                &Attrs {
                    fileid: Some(1),
                    ..Default::default()
                },
            )
            .await;
        assert_eq!(status(r), NfsStat4::Nfs4errInval);
        // Size on a directory.
        let r = c
            .setattr(
                &root,
                anon,
                &Attrs {
                    size: Some(0),
                    ..Default::default()
                },
            )
            .await;
        assert!(
            matches!(status(r), NfsStat4::Nfs4errIsdir | NfsStat4::Nfs4errInval),
            "size on a directory"
        );
        // Undecodable attribute values: BADXDR.
        let r = c
            .compound(vec![
                putfh(&f),
                NfsArgOp4::SetAttr(SetAttr4Args {
                    stateid: anon,
                    obj_attributes: Fattr4 {
                        attrmask: Bitmap4::from_attrs(&[FATTR4_MODE]),
                        attr_vals: Bytes::from_static(&[0, 0]),
                    },
                }),
            ])
            .await;
        assert_eq!(failed_at(r), (1, NfsStat4::Nfs4errBadxdr));
        // A bogus stateid.
        let o = c.open_fh(&f, OpenOpts::both()).await.unwrap();
        let r = c
            .setattr(
                &f,
                forge(o.stateid),
                &Attrs {
                    size: Some(1),
                    ..Default::default()
                },
            )
            .await;
        assert_eq!(status(r), NfsStat4::Nfs4errBadStateid);
    })
    .await
}

#[tokio::test]
async fn access_reports_rights() {
    within(async {
        let srv = TestServer::start().await;
        put_file(&srv, "f", b"abc");
        std::fs::create_dir(srv.path("private")).unwrap();
        std::fs::set_permissions(srv.path("private"), std::fs::Permissions::from_mode(0o700))
            .unwrap();
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let all = ACCESS4_READ | ACCESS4_LOOKUP | ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_DELETE;
        let r = c.access(&root, all).await.unwrap();
        assert_eq!(r.supported & all, all);
        assert_eq!(r.access & all, all, "root may do everything in its export");
        let f = c.lookup(&root, "f").await.unwrap();
        let r = c.access(&f, ACCESS4_READ | ACCESS4_EXECUTE).await.unwrap();
        assert_ne!(r.access & ACCESS4_READ, 0);

        // Another user on a 0700 directory owned by root.
        let other = srv
            .client_with(options().auth(rpc::Auth::sys(1000, 1000, vec![], "e2e")))
            .await;
        let p = other.lookup(&root, "private").await.unwrap();
        let r = other
            .access(&p, ACCESS4_READ | ACCESS4_LOOKUP | ACCESS4_MODIFY)
            .await
            .unwrap();
        assert_eq!(r.supported & ACCESS4_READ, ACCESS4_READ);
        assert_eq!(
            r.access & (ACCESS4_READ | ACCESS4_LOOKUP | ACCESS4_MODIFY),
            0
        );
        // And it cannot create inside it.
        let r = other.mkdir(&p, "x", 0o755).await;
        assert_eq!(status(r), NfsStat4::Nfs4errAccess);
    })
    .await
}

#[tokio::test]
async fn create_every_object_type() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let mode = |m| Attrs {
            mode: Some(m),
            ..Default::default()
        };
        let (d, ok) = c
            .create(&root, "dir", CreateType4::Dir, &mode(0o750))
            .await
            .unwrap();
        assert!(ok.cinfo.after != ok.cinfo.before || !ok.cinfo.atomic);
        assert!(srv.path("dir").is_dir());
        assert_eq!(
            std::fs::metadata(srv.path("dir")).unwrap().mode() & 0o7777,
            0o750
        );
        let a = c.getattr(&d, &[FATTR4_TYPE]).await.unwrap();
        assert_eq!(a.type_, Some(NfsFtype4::Nf4Dir));

        let l = c.symlink(&root, "sym", "some/target").await.unwrap();
        assert_eq!(&c.readlink(&l).await.unwrap()[..], b"some/target");
        assert_eq!(
            std::fs::read_link(srv.path("sym")).unwrap().to_str(),
            Some("some/target")
        );

        c.create(&root, "fifo", CreateType4::Fifo, &mode(0o600))
            .await
            .unwrap();
        assert!(std::fs::symlink_metadata(srv.path("fifo"))
            .unwrap()
            .file_type()
            .is_fifo());
        c.create(&root, "sock", CreateType4::Sock, &mode(0o600))
            .await
            .unwrap();
        assert!(std::fs::symlink_metadata(srv.path("sock"))
            .unwrap()
            .file_type()
            .is_socket());
        let dev = SpecData4 {
            specdata1: 1,
            specdata2: 3,
        };
        let (chr, _) = c
            .create(&root, "chr", CreateType4::Chr(dev), &mode(0o600))
            .await
            .unwrap();
        let m = std::fs::symlink_metadata(srv.path("chr")).unwrap();
        assert!(m.file_type().is_char_device());
        let a = c
            .getattr(&chr, &[FATTR4_TYPE, FATTR4_RAWDEV])
            .await
            .unwrap();
        assert_eq!(a.type_, Some(NfsFtype4::Nf4Chr));
        assert_eq!(a.rawdev, Some(dev));
        let (blk, _) = c
            .create(
                &root,
                "blk",
                CreateType4::Blk(SpecData4 {
                    specdata1: 7,
                    specdata2: 0,
                }),
                &mode(0o600),
            )
            .await
            .unwrap();
        assert!(std::fs::symlink_metadata(srv.path("blk"))
            .unwrap()
            .file_type()
            .is_block_device());
        let a = c.getattr(&blk, &[FATTR4_TYPE]).await.unwrap();
        assert_eq!(a.type_, Some(NfsFtype4::Nf4Blk));

        for (name, t) in [
            ("fifo", NfsFtype4::Nf4Fifo),
            ("sock", NfsFtype4::Nf4Sock),
            ("sym", NfsFtype4::Nf4Lnk),
        ] {
            let fh = c.lookup(&root, name).await.unwrap();
            assert_eq!(c.getattr(&fh, &[FATTR4_TYPE]).await.unwrap().type_, Some(t));
        }
    })
    .await
}

#[tokio::test]
async fn create_errors() {
    within(async {
        let srv = TestServer::start().await;
        put_file(&srv, "file", b"");
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let file = c.lookup(&root, "file").await.unwrap();
        let cases: Vec<(&NfsFh4, CreateType4, &str, NfsStat4)> = vec![
            (&root, CreateType4::Dir, "file", NfsStat4::Nfs4errExist),
            // Regular files are made by OPEN, not CREATE.
            (
                &root,
                CreateType4::Other(NfsFtype4::Nf4Reg as u32),
                "r",
                NfsStat4::Nfs4errBadtype,
            ),
            (&root, CreateType4::Dir, "", NfsStat4::Nfs4errInval),
            (&root, CreateType4::Dir, "..", NfsStat4::Nfs4errBadname),
            (&file, CreateType4::Dir, "x", NfsStat4::Nfs4errNotdir),
            (
                &root,
                CreateType4::Link(Bytes::new()),
                "emptylink",
                NfsStat4::Nfs4errInval,
            ),
        ];
        for (dir, t, name, want) in cases {
            let what = format!("CREATE {t:?} {name:?}");
            let r = c.create(dir, name, t, &Attrs::default()).await;
            assert_eq!(status(r), want, "{what}");
        }
    })
    .await
}

#[tokio::test]
async fn remove_files_and_directories() {
    within(async {
        let srv = TestServer::start().await;
        put_file(&srv, "f", b"x");
        put_file(&srv, "full/inner", b"x");
        std::fs::create_dir(srv.path("empty")).unwrap();
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let before = c.getattr(&root, &[FATTR4_CHANGE]).await.unwrap().change;
        let ci = c.remove(&root, "f").await.unwrap();
        assert_ne!(ci.before, ci.after);
        assert!(!srv.path("f").exists());
        let after = c.getattr(&root, &[FATTR4_CHANGE]).await.unwrap().change;
        assert_ne!(before, after, "directory change attribute moves on REMOVE");
        c.remove(&root, "empty").await.unwrap();
        assert!(!srv.path("empty").exists());
        assert_eq!(status(c.remove(&root, "f").await), NfsStat4::Nfs4errNoent);
        assert_eq!(
            status(c.remove(&root, "full").await),
            NfsStat4::Nfs4errNotempty
        );
        assert_eq!(status(c.remove(&root, "").await), NfsStat4::Nfs4errInval);
        assert_eq!(
            status(c.remove(&root, "..").await),
            NfsStat4::Nfs4errBadname
        );
        let inner = c.lookup_path("/full/inner").await.unwrap();
        assert_eq!(status(c.remove(&inner, "x").await), NfsStat4::Nfs4errNotdir);
    })
    .await
}

#[tokio::test]
async fn rename_within_and_across_directories() {
    within(async {
        let srv = TestServer::start().await;
        put_file(&srv, "a", b"A");
        put_file(&srv, "b", b"B");
        std::fs::create_dir(srv.path("d")).unwrap();
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let d = c.lookup(&root, "d").await.unwrap();
        let afh = c.lookup(&root, "a").await.unwrap();
        c.rename(&root, "a", &root, "a2").await.unwrap();
        assert!(!srv.path("a").exists());
        assert_eq!(std::fs::read(srv.path("a2")).unwrap(), b"A");
        // The file keeps its filehandle across a rename.
        let a = c.getattr(&afh, &[FATTR4_SIZE]).await.unwrap();
        assert_eq!(a.size, Some(1));
        // Across directories.
        let r = c.rename(&root, "a2", &d, "moved").await.unwrap();
        assert_ne!(r.source_cinfo.before, r.source_cinfo.after);
        assert_ne!(r.target_cinfo.before, r.target_cinfo.after);
        assert_eq!(std::fs::read(srv.path("d/moved")).unwrap(), b"A");
        // Over an existing file: replaced.
        c.rename(&d, "moved", &root, "b").await.unwrap();
        assert_eq!(std::fs::read(srv.path("b")).unwrap(), b"A");
        // Errors.
        assert_eq!(
            status(c.rename(&root, "missing", &root, "x").await),
            NfsStat4::Nfs4errNoent
        );
        assert_eq!(
            status(c.rename(&root, "b", &root, "").await),
            NfsStat4::Nfs4errInval
        );
        assert_eq!(
            status(c.rename(&root, "b", &root, "..").await),
            NfsStat4::Nfs4errBadname
        );
        // A file over a directory, a directory over a file (§18.26.4's
        // NFS4ERR_EXIST, told apart as the Linux server does).
        put_file(&srv, "d/inner", b"");
        assert_eq!(
            status(c.rename(&root, "b", &root, "d").await),
            NfsStat4::Nfs4errIsdir
        );
        assert_eq!(
            status(c.rename(&root, "d", &root, "b").await),
            NfsStat4::Nfs4errNotdir
        );
        // A directory over a non-empty directory.
        std::fs::create_dir(srv.path("empty")).unwrap();
        assert_eq!(
            status(c.rename(&root, "empty", &root, "d").await),
            NfsStat4::Nfs4errNotempty
        );
        // Over an empty directory: replaced.
        std::fs::create_dir(srv.path("empty2")).unwrap();
        c.rename(&root, "empty", &root, "empty2").await.unwrap();
        assert!(!srv.path("empty").exists());
        let b = c.lookup(&root, "b").await.unwrap();
        assert_eq!(
            status(c.rename(&b, "x", &root, "y").await),
            NfsStat4::Nfs4errNotdir
        );
    })
    .await
}

#[tokio::test]
async fn link_makes_a_hard_link() {
    within(async {
        let srv = TestServer::start().await;
        put_file(&srv, "f", b"data");
        std::fs::create_dir(srv.path("d")).unwrap();
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let f = c.lookup(&root, "f").await.unwrap();
        let d = c.lookup(&root, "d").await.unwrap();
        let ci = c.link(&f, &d, "hard").await.unwrap();
        assert_ne!(ci.before, ci.after);
        assert_eq!(std::fs::read(srv.path("d/hard")).unwrap(), b"data");
        let a = c.getattr(&f, &[FATTR4_NUMLINKS]).await.unwrap();
        assert_eq!(a.numlinks, Some(2));
        let h = c.lookup(&d, "hard").await.unwrap();
        let fa = c.getattr(&f, &[FATTR4_FILEID]).await.unwrap();
        let ha = c.getattr(&h, &[FATTR4_FILEID]).await.unwrap();
        assert_eq!(fa.fileid, ha.fileid);
        // Errors: existing name, a directory as the source, a file as target dir.
        assert_eq!(status(c.link(&f, &d, "hard").await), NfsStat4::Nfs4errExist);
        assert_eq!(
            status(c.link(&d, &root, "dirlink").await),
            NfsStat4::Nfs4errIsdir
        );
        assert_eq!(status(c.link(&f, &f, "x").await), NfsStat4::Nfs4errNotdir);
        assert_eq!(status(c.link(&f, &d, "").await), NfsStat4::Nfs4errInval);
    })
    .await
}

#[tokio::test]
async fn readlink_of_symlinks_only() {
    within(async {
        let srv = TestServer::start().await;
        put_file(&srv, "f", b"data");
        std::os::unix::fs::symlink("../../etc/passwd", srv.path("l")).unwrap();
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let l = c.lookup(&root, "l").await.unwrap();
        // The text comes back as stored, not resolved.
        assert_eq!(&c.readlink(&l).await.unwrap()[..], b"../../etc/passwd");
        let f = c.lookup(&root, "f").await.unwrap();
        assert_eq!(status(c.readlink(&f).await), NfsStat4::Nfs4errInval);
    })
    .await
}

#[tokio::test]
async fn readdir_lists_1200_entries_exactly_across_many_calls() {
    within(async {
        let srv = TestServer::start().await;
        std::fs::create_dir(srv.path("big")).unwrap();
        let mut want = HashSet::new();
        for i in 0..1200 {
            let name = format!("entry-{i:05}");
            std::fs::write(srv.path(&format!("big/{name}")), i.to_string()).unwrap();
            want.insert(name);
        }
        let c = srv.client().await;
        let big = c.lookup_path("/big").await.unwrap();

        // With attributes, default sizes.
        let all = c
            .readdir(&big, &[FATTR4_TYPE, FATTR4_FILEID, FATTR4_SIZE])
            .await
            .unwrap();
        assert_eq!(all.len(), 1200);
        let got: HashSet<String> = all
            .iter()
            .map(|e| String::from_utf8(e.name.to_vec()).unwrap())
            .collect();
        assert_eq!(got, want, "every entry exactly once, no . or ..");
        for e in &all {
            assert_eq!(e.attrs.type_, Some(NfsFtype4::Nf4Reg));
            assert!(e.attrs.fileid.is_some());
            let n: usize = String::from_utf8_lossy(&e.name)[6..].parse().unwrap();
            assert_eq!(e.attrs.size, Some(n.to_string().len() as u64));
        }
        let cookies: HashSet<u64> = all.iter().map(|e| e.cookie).collect();
        assert_eq!(cookies.len(), 1200, "cookies are distinct");
        assert!(!cookies.contains(&0) && !cookies.contains(&1) && !cookies.contains(&2));

        // A small maxcount: many calls, same listing.
        let mut calls = 0;
        let mut cookie = 0;
        let mut verf = [0u8; 8];
        let mut names = Vec::new();
        loop {
            let page = c
                .readdir_page(&big, cookie, verf, 512, 1024, &[])
                .await
                .unwrap();
            calls += 1;
            verf = page.cookieverf;
            assert!(
                page.reply.eof || !page.reply.entries.is_empty(),
                "no progress"
            );
            for e in &page.reply.entries {
                names.push(String::from_utf8(e.name.to_vec()).unwrap());
                cookie = e.cookie;
            }
            if page.reply.eof {
                break;
            }
        }
        assert!(
            calls > 10,
            "maxcount 1024 over 1200 entries took {calls} calls"
        );
        assert_eq!(names.len(), 1200);
        assert_eq!(names.iter().cloned().collect::<HashSet<_>>(), want);

        // Resuming from a cookie in the middle gives what followed it.
        let mid = &all[600];
        let page = c
            .readdir_page(&big, mid.cookie, verf, 8192, 32768, &[])
            .await
            .unwrap();
        let rest: Vec<Bytes> = page.reply.entries.iter().map(|e| e.name.clone()).collect();
        let expected: Vec<Bytes> = all[601..]
            .iter()
            .take(rest.len())
            .map(|e| e.name.clone())
            .collect();
        assert!(!rest.is_empty());
        assert_eq!(rest, expected);
    })
    .await
}

#[tokio::test]
async fn readdir_errors() {
    within(async {
        let srv = TestServer::start().await;
        put_file(&srv, "f", b"");
        put_file(&srv, "d/x", b"");
        let c = srv.client().await;
        let f = c.lookup_path("/f").await.unwrap();
        let d = c.lookup_path("/d").await.unwrap();
        let r = c.readdir_page(&f, 0, [0; 8], 1000, 4000, &[]).await;
        assert_eq!(status(r), NfsStat4::Nfs4errNotdir);
        // maxcount too small for even one entry (§18.23.3).
        let r = c.readdir_page(&d, 0, [0; 8], 10, 20, &[]).await;
        assert_eq!(status(r), NfsStat4::Nfs4errToosmall);
        // Reserved cookies 1 and 2 (§18.23.3): BAD_COOKIE.
        let r = c.readdir_page(&d, 1, [0; 8], 1000, 4000, &[]).await;
        assert_eq!(status(r), NfsStat4::Nfs4errBadCookie);
        // An empty directory lists nothing with eof.
        std::fs::create_dir(srv.path("e")).unwrap();
        let e = c.lookup_path("/e").await.unwrap();
        let page = c
            .readdir_page(&e, 0, [0; 8], 1000, 4000, &[])
            .await
            .unwrap();
        assert!(page.reply.entries.is_empty());
        assert!(page.reply.eof);
    })
    .await
}

#[tokio::test]
async fn secinfo_and_secinfo_no_name() {
    within(async {
        let srv = TestServer::start().await;
        put_file(&srv, "f", b"");
        std::fs::create_dir(srv.path("d")).unwrap();
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let has_sys = |v: &[SecInfo4]| v.iter().any(|s| *s == SecInfo4::Flavor(AUTH_SYS));
        let v = c.secinfo(&root, "f").await.unwrap();
        assert!(has_sys(&v), "{v:?}");
        assert_eq!(
            status(c.secinfo(&root, "missing").await),
            NfsStat4::Nfs4errNoent
        );
        assert_eq!(status(c.secinfo(&root, "").await), NfsStat4::Nfs4errInval);
        // SECINFO consumes the current filehandle (§2.6.3.1.1.8).
        let r = c
            .compound(vec![
                putfh(&root),
                NfsArgOp4::SecInfo(SecInfo4Args { name: b("f") }),
                NfsArgOp4::GetFh,
            ])
            .await;
        assert_eq!(failed_at(r), (2, NfsStat4::Nfs4errNofilehandle));

        let v = c
            .secinfo_no_name(&root, SecInfoStyle4::CurrentFh)
            .await
            .unwrap();
        assert!(has_sys(&v), "{v:?}");
        let d = c.lookup(&root, "d").await.unwrap();
        let v = c.secinfo_no_name(&d, SecInfoStyle4::Parent).await.unwrap();
        assert!(has_sys(&v));
        // Like LOOKUPP, the parent of a non-directory is NOTDIR.
        let f = c.lookup(&root, "f").await.unwrap();
        let r = c.secinfo_no_name(&f, SecInfoStyle4::Parent).await;
        assert_eq!(status(r), NfsStat4::Nfs4errNotdir);
        // The root has no parent.
        let r = c.secinfo_no_name(&root, SecInfoStyle4::Parent).await;
        assert_eq!(status(r), NfsStat4::Nfs4errNoent);
        let r = c
            .compound(vec![
                putfh(&root),
                NfsArgOp4::SecInfoNoName(SecInfoStyle4::CurrentFh),
                NfsArgOp4::GetFh,
            ])
            .await;
        assert_eq!(failed_at(r), (2, NfsStat4::Nfs4errNofilehandle));
    })
    .await
}

#[tokio::test]
async fn verify_and_nverify() {
    within(async {
        let srv = TestServer::start().await;
        put_file(&srv, "f", &[0u8; 42]);
        let c = srv.client().await;
        let f = c.lookup_path("/f").await.unwrap();
        let size = |n| {
            Attrs {
                size: Some(n),
                type_: Some(NfsFtype4::Nf4Reg),
                ..Default::default()
            }
            .encode()
        };
        let verify = |a| NfsArgOp4::Verify(Verify4Args { obj_attributes: a });
        let nverify = |a| NfsArgOp4::NVerify(NVerify4Args { obj_attributes: a });
        c.compound(vec![putfh(&f), verify(size(42)), NfsArgOp4::GetFh])
            .await
            .unwrap();
        let r = c.compound(vec![putfh(&f), verify(size(41))]).await;
        assert_eq!(failed_at(r), (1, NfsStat4::Nfs4errNotSame));
        c.compound(vec![putfh(&f), nverify(size(41)), NfsArgOp4::GetFh])
            .await
            .unwrap();
        let r = c.compound(vec![putfh(&f), nverify(size(42))]).await;
        assert_eq!(failed_at(r), (1, NfsStat4::Nfs4errSame));
        // Write-only attributes cannot be verified (§18.31.3).
        let bad = Attrs {
            time_access_set: Some(SetTime4::SetToServerTime4),
            ..Default::default()
        }
        .encode();
        let r = c.compound(vec![putfh(&f), verify(bad)]).await;
        assert_eq!(failed_at(r), (1, NfsStat4::Nfs4errInval));
        // Unsupported attributes: ATTRNOTSUPP.
        let r = c
            .compound(vec![
                putfh(&f),
                verify(Fattr4 {
                    attrmask: Bitmap4::from_attrs(&[FATTR4_MIMETYPE]),
                    attr_vals: xdr::to_bytes(&Bytes::from_static(b"text/plain")),
                }),
            ])
            .await;
        assert_eq!(failed_at(r), (1, NfsStat4::Nfs4errAttrnotsupp));
    })
    .await
}

#[tokio::test]
async fn filehandles_survive_a_server_restart() {
    within(async {
        let mut srv = TestServer::start().await;
        put_file(&srv, "dir/file", b"persist");
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let dir = c.lookup_path("/dir").await.unwrap();
        let file = c.lookup_path("/dir/file").await.unwrap();
        let before = c.getattr(&file, &[FATTR4_FILEID]).await.unwrap();
        drop(c);
        srv.restart().await;
        let c = srv.client().await;
        assert_eq!(c.root_fh().await.unwrap(), root, "root handle is stable");
        let after = c
            .getattr(&file, &[FATTR4_FILEID, FATTR4_SIZE])
            .await
            .unwrap();
        assert_eq!(after.fileid, before.fileid);
        assert_eq!(after.size, Some(7));
        assert_eq!(c.lookup(&dir, "file").await.unwrap(), file);
        let o = c.open_fh(&file, OpenOpts::read()).await.unwrap();
        let (data, eof) = c.read(&file, o.stateid, 0, 100).await.unwrap();
        assert_eq!(&data[..], b"persist");
        assert!(eof);
    })
    .await
}

#[tokio::test]
async fn deleted_file_handle_is_stale() {
    within(async {
        let srv = TestServer::start().await;
        put_file(&srv, "doomed", b"x");
        std::fs::create_dir(srv.path("doomed-dir")).unwrap();
        let c = srv.client().await;
        let f = c.lookup_path("/doomed").await.unwrap();
        let d = c.lookup_path("/doomed-dir").await.unwrap();
        let root = c.root_fh().await.unwrap();
        c.remove(&root, "doomed").await.unwrap();
        std::fs::remove_dir(srv.path("doomed-dir")).unwrap();
        for fh in [&f, &d] {
            let r = c.compound(vec![putfh(fh), getattr(&[FATTR4_TYPE])]).await;
            let (_, st) = failed_at(r);
            assert_eq!(st, NfsStat4::Nfs4errStale);
        }
    })
    .await
}

#[tokio::test]
async fn forged_handles_are_badhandle() {
    within(async {
        let srv = TestServer::start().await;
        put_file(&srv, "f", b"x");
        let c = srv.client().await;
        let real = c.lookup_path("/f").await.unwrap();
        let mut tampered = real.0.to_vec();
        let last = tampered.len() - 1;
        tampered[last] ^= 0x01;
        let mut tampered_mid = real.0.to_vec();
        tampered_mid[real.0.len() / 2] ^= 0x80;
        for fh in [
            NfsFh4(Bytes::from_static(
                b"not a handle at all, but 40 bytes long!",
            )),
            NfsFh4(Bytes::new()),
            NfsFh4(Bytes::from(vec![0u8; 128])),
            NfsFh4(Bytes::from(tampered)),
            NfsFh4(Bytes::from(tampered_mid)),
            NfsFh4(real.0.slice(..real.0.len() - 1)),
        ] {
            let r = c.compound(vec![putfh(&fh), getattr(&[FATTR4_TYPE])]).await;
            let (_, st) = failed_at(r);
            assert_eq!(st, NfsStat4::Nfs4errBadhandle, "{fh:?}");
        }
    })
    .await
}

/// A READDIR asking only for type and file id is answered from the
/// listing (d_type, d_ino); it must agree with the objects themselves,
/// whatever their kind, and with a READDIR that looks each one up.
#[tokio::test]
async fn readdir_of_type_and_fileid_agrees_with_the_objects() {
    use std::os::unix::fs::MetadataExt;
    within(async {
        let srv = TestServer::start().await;
        std::fs::create_dir_all(srv.path("kinds/sub")).unwrap();
        std::fs::write(srv.path("kinds/file"), b"x").unwrap();
        std::os::unix::fs::symlink("file", srv.path("kinds/link")).unwrap();
        let fifo =
            std::ffi::CString::new(srv.path("kinds/fifo").into_os_string().into_encoded_bytes())
                .unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        let c = srv.client().await;
        let dir = c.lookup_path("/kinds").await.unwrap();
        let listed = c
            .readdir(
                &dir,
                &[FATTR4_TYPE, FATTR4_FILEID, FATTR4_MOUNTED_ON_FILEID],
            )
            .await
            .unwrap();
        let looked_up = c
            .readdir(&dir, &[FATTR4_TYPE, FATTR4_FILEID, FATTR4_MODE])
            .await
            .unwrap();
        assert_eq!(listed.len(), 4);
        for (e, l) in listed.iter().zip(&looked_up) {
            let name = String::from_utf8(e.name.to_vec()).unwrap();
            let md = std::fs::symlink_metadata(srv.path(&format!("kinds/{name}"))).unwrap();
            let want = match name.as_str() {
                "sub" => NfsFtype4::Nf4Dir,
                "file" => NfsFtype4::Nf4Reg,
                "link" => NfsFtype4::Nf4Lnk,
                "fifo" => NfsFtype4::Nf4Fifo,
                other => panic!("unexpected entry {other}"),
            };
            assert_eq!(e.attrs.type_, Some(want), "{name}");
            assert_eq!(e.attrs.fileid, Some(md.ino()), "{name}");
            assert_eq!(e.attrs.mounted_on_fileid, Some(md.ino()), "{name}");
            assert_eq!(e.attrs.size, None, "{name}: only what was asked");
            assert_eq!(
                (&l.name, l.attrs.type_, l.attrs.fileid),
                (&e.name, e.attrs.type_, e.attrs.fileid)
            );
        }
    })
    .await
}

/// Listings answered from the server's cache of directory listings still
/// show every change: one made by a local process in the exported
/// directory (twice within a few milliseconds, within one tick of the file
/// system's clock), and one made by another client.
#[tokio::test]
async fn cached_listings_see_local_and_other_clients_changes() {
    within(async {
        let srv = TestServer::start().await;
        std::fs::create_dir(srv.path("d")).unwrap();
        std::fs::write(srv.path("d/a"), b"").unwrap();
        let c = srv.client().await;
        let other = srv.client().await;
        let d = c.lookup_path("/d").await.unwrap();
        let names = |v: Vec<client::DirEntry>| {
            let mut n: Vec<String> = v
                .iter()
                .map(|e| String::from_utf8(e.name.to_vec()).unwrap())
                .collect();
            n.sort();
            n
        };
        let attrs = [FATTR4_TYPE, FATTR4_FILEID];
        // Settled (unchanged for a while): listed into the cache, then
        // served from it.
        tokio::time::sleep(std::time::Duration::from_millis(120)).await;
        for _ in 0..2 {
            assert_eq!(names(c.readdir(&d, &attrs).await.unwrap()), ["a"]);
            assert_eq!(names(c.readdir(&d, &[]).await.unwrap()), ["a"]);
        }
        // Two local changes in quick succession.
        std::fs::write(srv.path("d/b"), b"").unwrap();
        assert_eq!(names(c.readdir(&d, &attrs).await.unwrap()), ["a", "b"]);
        std::fs::write(srv.path("d/c"), b"").unwrap();
        assert_eq!(names(c.readdir(&d, &attrs).await.unwrap()), ["a", "b", "c"]);
        std::fs::remove_file(srv.path("d/a")).unwrap();
        assert_eq!(names(c.readdir(&d, &[]).await.unwrap()), ["b", "c"]);
        // Settled again, cached again; then another client removes one
        // and creates one.
        tokio::time::sleep(std::time::Duration::from_millis(120)).await;
        for _ in 0..2 {
            assert_eq!(names(c.readdir(&d, &attrs).await.unwrap()), ["b", "c"]);
        }
        let od = other.lookup_path("/d").await.unwrap();
        other.remove(&od, "b").await.unwrap();
        assert_eq!(names(c.readdir(&d, &attrs).await.unwrap()), ["c"]);
        other
            .create(&od, "e", CreateType4::Dir, &Default::default())
            .await
            .unwrap();
        assert_eq!(names(c.readdir(&d, &attrs).await.unwrap()), ["c", "e"]);
        // A type changed in place (a directory replaced by a file of the
        // same name) shows too.
        tokio::time::sleep(std::time::Duration::from_millis(120)).await;
        c.readdir(&d, &attrs).await.unwrap();
        std::fs::remove_dir(srv.path("d/e")).unwrap();
        std::fs::write(srv.path("d/e"), b"").unwrap();
        let l = c.readdir(&d, &attrs).await.unwrap();
        let e = l.iter().find(|e| &e.name[..] == b"e").unwrap();
        assert_eq!(e.attrs.type_, Some(NfsFtype4::Nf4Reg));
    })
    .await
}
