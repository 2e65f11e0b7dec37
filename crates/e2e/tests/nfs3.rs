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

fn root_auth() -> rpc::Auth {
    rpc::Auth::Sys(rpc::AuthSysParms {
        stamp: 1,
        machinename: Bytes::from_static(b"test"),
        uid: 0,
        gid: 0,
        gids: Vec::new(),
    })
}

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
        let e = mount::mnt(srv.addr, "/elsewhere", &auth).await.unwrap_err();
        assert!(
            e.to_string().contains("NOENT")
                || format!("{e:?}").contains(&format!("{:?}", MountStat3::Noent)),
            "{e:?}"
        );
        // Procedures not built yet say so, with their failure body.
        let c = client3(&srv).await;
        let r = c.mkdir(c.root(), "d", Sattr3::default()).await;
        assert_eq!(status(r), NfsStat3::NotSupp);
    })
    .await
}
