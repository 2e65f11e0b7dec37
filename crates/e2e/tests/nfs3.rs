//! NFS version 3 and MOUNT version 3 (RFC 1813) beside NFSv4 on the same
//! port, over the same export: what the NFSv3 client of `crates/client`
//! sees of files made through NFSv4 and locally.

mod common;

use std::os::unix::fs::symlink;

use bytes::Bytes;
use client::v3::{mount, Client as Client3};
use common::*;
use proto::mount::MountStat3;
use proto::nfs3::*;

async fn client3(srv: &TestServer) -> Client3 {
    Client3::connect(srv.addr, srv.addr, "/", root_auth())
        .await
        .expect("MNT and connect")
}

fn status<T: std::fmt::Debug>(r: client::v3::Result<T>) -> NfsStat3 {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e
            .status()
            .unwrap_or_else(|| panic!("not an NFS status: {e}")),
    }
}

#[tokio::test]
async fn mount_then_read_what_nfsv4_and_local_processes_wrote() {
    within(async {
        let srv = TestServer::start().await;
        // Written locally, and through NFSv4.
        put_file(&srv, "dir/local.txt", b"made locally");
        symlink("local.txt", srv.path("dir/link")).unwrap();
        let c4 = srv.client().await;
        let root4 = c4.root_fh().await.unwrap();
        let f = create_file(&c4, &root4, "v4.txt").await;
        c4.write(
            &f.fh,
            f.stateid,
            0,
            Bytes::from_static(b"written over NFSv4"),
            proto::nfs4::StableHow4::FileSync4,
        )
        .await
        .unwrap();
        c4.close(&f.fh, f.stateid).await.unwrap();

        let c = client3(&srv).await;
        let root = c.root().clone();
        assert_eq!(c.getattr(&root).await.unwrap().type_, Ftype3::Dir);
        let l = c.lookup(&root, "v4.txt").await.unwrap();
        let a = l.obj_attributes.unwrap();
        assert_eq!((a.type_, a.size), (Ftype3::Reg, 18));
        assert!(l.dir_attributes.is_some());
        let r = c.read(&l.object, 0, 1 << 20).await.unwrap();
        assert_eq!(&r.data[..], b"written over NFSv4");
        assert!(r.eof);
        let r = c.read(&l.object, 8, 4).await.unwrap();
        assert_eq!((&r.data[..], r.eof), (&b"over"[..], false));
        // A path, "." and "..", a symbolic link.
        let dir = c.lookup_path("dir").await.unwrap();
        let local = c.lookup(&dir, "local.txt").await.unwrap();
        assert_eq!(
            &c.read(&local.object, 0, 100).await.unwrap().data[..],
            b"made locally"
        );
        let up = c.lookup(&dir, "..").await.unwrap();
        assert_eq!(up.object, root);
        let here = c.lookup(&dir, ".").await.unwrap();
        assert_eq!(here.object, dir);
        // The export's root is its own parent.
        assert_eq!(c.lookup(&root, "..").await.unwrap().object, root);
        let link = c.lookup(&dir, "link").await.unwrap();
        assert_eq!(&c.readlink(&link.object).await.unwrap()[..], b"local.txt");
        assert_eq!(status(c.readlink(&local.object).await), NfsStat3::Inval);
        assert_eq!(status(c.lookup(&dir, "nothing").await), NfsStat3::Noent);
        assert_eq!(status(c.read(&dir, 0, 10).await), NfsStat3::Isdir);
        // ACCESS: root may do everything asked of a directory.
        let all = ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY | ACCESS3_EXTEND | ACCESS3_DELETE;
        assert_eq!(c.access(&dir, all).await.unwrap(), all);
        assert_eq!(
            c.access(&local.object, ACCESS3_READ | ACCESS3_EXECUTE)
                .await
                .unwrap(),
            ACCESS3_READ,
            "a 0644 file is not executable"
        );
        // The file system's figures.
        let s = c.fsstat(&root).await.unwrap();
        assert!(s.tbytes >= s.fbytes && s.fbytes >= s.abytes && s.tbytes > 0);
        let i = c.fsinfo(&root).await.unwrap();
        assert_eq!((i.rtmax, i.wtmax), (1 << 20, 1 << 20));
        let p = c.pathconf(&root).await.unwrap();
        assert_eq!((p.name_max, p.no_trunc), (255, true));
        // A filehandle the server did not make.
        let forged = NfsFh3 {
            data: Bytes::from_static(&[2, 1, 0, 0, 9, 9, 9, 9, 9, 9, 9, 9, 1, 2, 3, 4]),
        };
        assert_eq!(status(c.getattr(&forged).await), NfsStat3::BadHandle);
    })
    .await
}

#[tokio::test]
async fn readdir_and_readdirplus_page_through_a_directory() {
    within(async {
        let srv = TestServer::start().await;
        for i in 0..300 {
            put_file(&srv, &format!("big/file-{i:04}"), b"x");
        }
        let c = client3(&srv).await;
        let dir = c.lookup_path("big").await.unwrap();
        // Small pages: every name once, "." and ".." first.
        let all = c.readdir_all(&dir, 1024).await.unwrap();
        let names: Vec<String> = all
            .iter()
            .map(|e| String::from_utf8_lossy(&e.name).into_owned())
            .collect();
        assert_eq!(&names[..2], [".", ".."]);
        let mut files = names[2..].to_vec();
        files.sort();
        let want: Vec<String> = (0..300).map(|i| format!("file-{i:04}")).collect();
        assert_eq!(files, want);
        let plus = c.readdirplus_all(&dir, 512, 4096).await.unwrap();
        assert_eq!(plus.len(), 302);
        for e in &plus[2..] {
            let a = e.name_attributes.expect("attributes");
            assert_eq!((a.type_, a.size), (Ftype3::Reg, 1));
            let fh = e.name_handle.clone().expect("a handle");
            assert_eq!(&c.read(&fh, 0, 10).await.unwrap().data[..], b"x");
        }
        // Too small for one entry; a cookie from another verifier.
        let r = c.readdir_page(&dir, 0, [0; 8], 120).await;
        assert_eq!(status(r), NfsStat3::TooSmall);
        let r = c.readdir_page(&dir, all[5].cookie, [1; 8], 4096).await;
        assert_eq!(status(r), NfsStat3::BadCookie);
    })
    .await
}

/// "." and ".." carry the directory's and its parent's file ids (the
/// root's own for the root), and the reply the directory's attributes,
/// on a first listing and on later ones served from the settled listing
/// the server keeps, and after the directory moves to another parent.
#[tokio::test]
async fn readdir_dots_name_the_directory_and_its_parent() {
    within(async {
        let srv = TestServer::start().await;
        put_file(&srv, "a/sub/f", b"x");
        std::fs::create_dir(srv.export.path().join("b")).unwrap();
        let c = client3(&srv).await;
        let root = c.lookup_path("").await.unwrap();
        let dots = |dir: NfsFh3| {
            let c = &c;
            async move {
                let page = c.readdir_page(&dir, 0, [0; 8], 4096).await.unwrap();
                let e = &page.reply.entries.0;
                assert_eq!((&e[0].name[..], &e[1].name[..]), (&b"."[..], &b".."[..]));
                let attr = page.dir_attributes.expect("the directory's attributes");
                assert_eq!(attr.fileid, e[0].fileid);
                assert_eq!(attr.type_, Ftype3::Dir);
                (e[0].fileid, e[1].fileid)
            }
        };
        let id = |fh: NfsFh3| {
            let c = &c;
            async move { c.getattr(&fh).await.unwrap().fileid }
        };
        let (a, b) = (
            c.lookup_path("a").await.unwrap(),
            c.lookup_path("b").await.unwrap(),
        );
        let sub = c.lookup_path("a/sub").await.unwrap();
        for round in 0..3 {
            assert_eq!(
                dots(sub.clone()).await,
                (id(sub.clone()).await, id(a.clone()).await),
                "round {round}"
            );
            assert_eq!(
                dots(root.clone()).await,
                (id(root.clone()).await, id(root.clone()).await)
            );
            tokio::time::sleep(std::time::Duration::from_millis(80)).await; // settled
        }
        std::fs::rename(
            srv.export.path().join("a/sub"),
            srv.export.path().join("b/sub"),
        )
        .unwrap();
        for _ in 0..3 {
            assert_eq!(
                dots(sub.clone()).await,
                (id(sub.clone()).await, id(b.clone()).await)
            );
            tokio::time::sleep(std::time::Duration::from_millis(80)).await;
        }
    })
    .await
}

#[tokio::test]
async fn mount_answers_by_the_export_rules() {
    within(async {
        let srv = TestServer::start().await;
        let auth = root_auth();
        let exports = mount::exports(srv.addr, &auth).await.unwrap();
        assert_eq!(exports.len(), 1);
        assert_eq!(&exports[0].ex_dir.0[..], b"/");
        let m = mount::mnt(srv.addr, "/", &auth).await.unwrap();
        // The test export accepts AUTH_SYS, then AUTH_NONE.
        assert_eq!(m.auth_flavors, vec![rpc::AUTH_SYS, 0]);
        let dumped = mount::dump(srv.addr, &auth).await.unwrap();
        assert_eq!(dumped.len(), 1);
        assert_eq!(&dumped[0].ml_directory.0[..], b"/");
        mount::umnt(srv.addr, "/", &auth).await.unwrap();
        assert!(mount::dump(srv.addr, &auth).await.unwrap().is_empty());
        let mnt_err = |e: client::v3::Error| match e {
            client::v3::Error::Mount { status, .. } => status,
            other => panic!("not a MOUNT status: {other:?}"),
        };
        let e = mount::mnt(srv.addr, "/elsewhere", &auth).await.unwrap_err();
        assert_eq!(mnt_err(e), MountStat3::Noent);
        // A directory inside the export: its filehandle, the one LOOKUP
        // gives; a file is not a mount point; ".." is refused.
        put_file(&srv, "sub/deeper/file", b"x");
        let m = mount::mnt(srv.addr, "//sub/deeper/", &auth).await.unwrap();
        let c = client3(&srv).await;
        let root = c.root().clone();
        let sub = c.lookup(&root, "sub").await.unwrap().object;
        let deeper = c.lookup(&sub, "deeper").await.unwrap().object;
        assert_eq!(
            c.getattr(&NfsFh3 { data: m.fhandle.0 })
                .await
                .unwrap()
                .fileid,
            c.getattr(&deeper).await.unwrap().fileid
        );
        let e = mount::mnt(srv.addr, "/sub/deeper/file", &auth)
            .await
            .unwrap_err();
        assert_eq!(mnt_err(e), MountStat3::Notdir);
        let e = mount::mnt(srv.addr, "/sub/../sub", &auth)
            .await
            .unwrap_err();
        assert_eq!(mnt_err(e), MountStat3::Inval);
        // Without search permission for the caller: ACCES.
        std::fs::set_permissions(
            srv.path("sub"),
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )
        .unwrap();
        let user = rpc::Auth::sys(1000, 1000, Vec::new(), "test");
        let e = mount::mnt(srv.addr, "/sub/deeper", &user)
            .await
            .unwrap_err();
        assert_eq!(mnt_err(e), MountStat3::Acces);
    })
    .await
}

fn mode(m: u32) -> Sattr3 {
    Sattr3 {
        mode: Some(m),
        ..Default::default()
    }
}

#[tokio::test]
async fn create_write_commit_rename_and_remove() {
    within(async {
        let srv = TestServer::start().await;
        let c = client3(&srv).await;
        let root = c.root().clone();
        // CREATE: guarded, unchecked (opening it again), exclusive
        // (a retransmission finds the same file; another verifier not).
        let f = c
            .create(&root, "f", CreateHow3::Guarded(mode(0o640)))
            .await
            .unwrap();
        assert_eq!(f.attrs.unwrap().mode, 0o640);
        assert!(f.dir_wcc.before.is_some() && f.dir_wcc.after.is_some());
        let again = c.create(&root, "f", CreateHow3::Guarded(mode(0o640))).await;
        assert_eq!(status(again), NfsStat3::Exist);
        let same = c
            .create(&root, "f", CreateHow3::Unchecked(mode(0o600)))
            .await
            .unwrap();
        assert_eq!(same.fh, f.fh);
        let x = c
            .create(&root, "x", CreateHow3::Exclusive([7; 8]))
            .await
            .unwrap();
        let x2 = c
            .create(&root, "x", CreateHow3::Exclusive([7; 8]))
            .await
            .unwrap();
        assert_eq!(x.fh, x2.fh);
        let other = c.create(&root, "x", CreateHow3::Exclusive([8; 8])).await;
        assert_eq!(status(other), NfsStat3::Exist);

        // WRITE unstable then COMMIT, and FILE_SYNC; one verifier.
        let w = c
            .write(&f.fh, 0, Bytes::from_static(b"hello "), StableHow::Unstable)
            .await
            .unwrap();
        assert_eq!((w.count, w.committed), (6, StableHow::Unstable));
        assert_eq!(w.file_wcc.before.unwrap().size, 0);
        assert_eq!(w.file_wcc.after.unwrap().size, 6);
        let s = c
            .write(&f.fh, 6, Bytes::from_static(b"world"), StableHow::FileSync)
            .await
            .unwrap();
        assert_eq!(s.committed, StableHow::FileSync);
        let k = c.commit(&f.fh, 0, 0).await.unwrap();
        assert_eq!((k.verf, s.verf), (w.verf, w.verf));
        assert_eq!(std::fs::read(srv.path("f")).unwrap(), b"hello world");

        // SETATTR with a guard that no longer holds; then without.
        let stale = Some(NfsTime3 {
            seconds: 1,
            nseconds: 0,
        });
        let r = c.setattr(&f.fh, mode(0o644), stale).await;
        assert_eq!(status(r), NfsStat3::NotSync);
        let grow = Sattr3 {
            size: Some(100),
            ..Default::default()
        };
        let wcc = c.setattr(&f.fh, grow, None).await.unwrap();
        assert_eq!(wcc.after.unwrap().size, 100);

        // MKDIR, SYMLINK, MKNOD (a FIFO), LINK.
        let d = c.mkdir(&root, "d", mode(0o755)).await.unwrap();
        assert_eq!(d.attrs.unwrap().type_, Ftype3::Dir);
        let l = c
            .symlink(&d.fh, "l", "../f", Sattr3::default())
            .await
            .unwrap();
        assert_eq!(&c.readlink(&l.fh).await.unwrap()[..], b"../f");
        let p = c
            .mknod(&d.fh, "p", MknodData3::Fifo(mode(0o600)))
            .await
            .unwrap();
        assert_eq!(p.attrs.unwrap().type_, Ftype3::Fifo);
        let bad = c.mknod(&d.fh, "q", MknodData3::Other(Ftype3::Reg)).await;
        assert_eq!(status(bad), NfsStat3::BadType);
        let ln = c.link(&f.fh, &d.fh, "f2").await.unwrap();
        assert_eq!(ln.file_attributes.unwrap().nlink, 2);

        // RENAME within a directory, across, and onto another link to the
        // same file (nothing happens).
        c.rename(&d.fh, "f2", &d.fh, "f3").await.unwrap();
        c.rename(&d.fh, "f3", &root, "g").await.unwrap();
        let none = c.rename(&root, "g", &root, "f").await.unwrap();
        assert_eq!(
            none.fromdir_wcc.before.unwrap().mtime,
            none.fromdir_wcc.after.unwrap().mtime
        );
        assert!(srv.path("g").exists() && srv.path("f").exists());

        // REMOVE and RMDIR, each of its own kind.
        assert_eq!(status(c.remove(&root, "d").await), NfsStat3::Isdir);
        assert_eq!(status(c.rmdir(&root, "f").await), NfsStat3::Notdir);
        assert_eq!(status(c.rmdir(&root, "d").await), NfsStat3::NotEmpty);
        for n in ["l", "p"] {
            c.remove(&d.fh, n).await.unwrap();
        }
        c.rmdir(&root, "d").await.unwrap();
        c.remove(&root, "g").await.unwrap();
        assert!(!srv.path("d").exists() && !srv.path("g").exists());
        assert_eq!(status(c.remove(&root, "g").await), NfsStat3::Noent);
    })
    .await
}

/// An NFSv3 WRITE recalls an NFSv4 client's read delegation of the file,
/// and is answered once it is returned; an NFSv3 create in a directory an
/// NFSv4 client holds a delegation of is told to it.
#[tokio::test]
async fn nfsv3_changes_recall_and_notify_nfsv4_delegations() {
    within(async {
        let srv = TestServer::start_delegating().await;
        let a = srv.client().await;
        let root4 = a.root_fh().await.unwrap();
        let mut o = client::OpenOpts::create(0o644);
        o.access |= proto::nfs4::OPEN4_SHARE_ACCESS_WANT_NO_DELEG;
        let f = a.open(&root4, "shared", o).await.unwrap();
        a.close(&f.fh, f.stateid).await.unwrap();
        let r = a
            .open(
                &root4,
                "shared",
                client::OpenOpts {
                    access: proto::nfs4::OPEN4_SHARE_ACCESS_READ
                        | proto::nfs4::OPEN4_SHARE_ACCESS_WANT_READ_DELEG,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert!(matches!(
            r.delegation,
            proto::nfs4::OpenDelegation4::Read(_)
        ));
        let c = client3(&srv).await;
        let root = c.root().clone();
        let fh = c.lookup(&root, "shared").await.unwrap().object;
        c.write(&fh, 0, Bytes::from_static(b"v3"), StableHow::FileSync)
            .await
            .unwrap();
        assert_eq!(recalls(&a, 1).await.len(), 1, "the NFSv3 write recalled it");
        // An NFSv3 READ recalls a write delegation.
        let w = create_file(&a, &root4, "written").await;
        assert!(matches!(
            w.delegation,
            proto::nfs4::OpenDelegation4::Write(_)
        ));
        let wfh = c.lookup(&root, "written").await.unwrap().object;
        c.read(&wfh, 0, 10).await.unwrap();
        assert_eq!(recalls(&a, 2).await.len(), 2, "the NFSv3 read recalled it");

        let d4 = a.mkdir(&root4, "watched", 0o777).await.unwrap();
        let g = a
            .compound(vec![
                putfh(&d4),
                proto::nfs4::NfsArgOp4::GetDirDelegation(proto::nfs4::GetDirDelegation4Args {
                    signal_deleg_avail: false,
                    notification_types: proto::nfs4::Bitmap4::from_attrs(&[
                        proto::nfs4::NotifyType4::AddEntry as u32,
                    ]),
                    child_attr_delay: Default::default(),
                    dir_attr_delay: Default::default(),
                    child_attributes: Default::default(),
                    dir_attributes: Default::default(),
                }),
            ])
            .await
            .unwrap();
        assert!(matches!(
            g[1],
            proto::nfs4::NfsResOp4::GetDirDelegation(proto::nfs4::Res4::Ok(
                proto::nfs4::GetDirDelegation4ResNonFatal::Ok(_)
            ))
        ));
        let d3 = c.lookup(&root, "watched").await.unwrap().object;
        c.create(&d3, "new", CreateHow3::Guarded(mode(0o644)))
            .await
            .unwrap();
        let told = eventually(|| Some(a.callbacks().notifies()).filter(|t| !t.is_empty()))
            .await
            .unwrap_or_default();
        assert_eq!(told.len(), 1, "the NFSv3 create was told");
        // A removal was not asked about: recalled first, then done.
        c.remove(&d3, "new").await.unwrap();
        assert_eq!(recalls(&a, 3).await.len(), 3);
    })
    .await
}
