//! Files removed while open (RFC 8881 §18.16.3,
//! OPEN4_RESULT_PRESERVE_UNLINKED): the server says it keeps them, and
//! does: a file removed (by NFSv4 or NFSv3), or replaced by a rename,
//! while a client holds it open stays readable and writable through its
//! open with nlink 0, and goes with the last CLOSE.

mod common;

use bytes::Bytes;
use client::v3::Client as Client3;
use common::*;
use proto::nfs4::*;

async fn nlink(c: &client::Client, fh: &NfsFh4) -> client::Result<u32> {
    let a = c.getattr(fh, &[FATTR4_NUMLINKS]).await?;
    Ok(a.numlinks.expect("numlinks"))
}

async fn write(c: &client::Client, o: &client::Open, offset: u64, data: &'static [u8]) {
    c.write(
        &o.fh,
        o.stateid,
        offset,
        Bytes::from_static(data),
        StableHow4::FileSync4,
    )
    .await
    .expect("write");
}

/// The file `o` is, with no name left: nlink 0, its data read back,
/// written to and read again, then gone with its CLOSE.
async fn kept_until_closed(c: &client::Client, o: &client::Open, what: &str) {
    assert_eq!(nlink(c, &o.fh).await.unwrap(), 0, "{what}");
    let (data, _) = c.read(&o.fh, o.stateid, 0, 100).await.unwrap();
    assert_eq!(&data[..], b"data", "{what}");
    write(c, o, 4, b"+more").await;
    let (data, eof) = c.read(&o.fh, o.stateid, 0, 100).await.unwrap();
    assert_eq!((&data[..], eof), (&b"data+more"[..], true), "{what}");
    c.close(&o.fh, o.stateid).await.unwrap();
    assert_eq!(
        status(c.getattr(&o.fh, &[FATTR4_NUMLINKS]).await),
        NfsStat4::Nfs4errStale,
        "{what}: gone with its last CLOSE"
    );
}

/// The removed files of the export this process still has open.
fn deleted_held(srv: &TestServer) -> Vec<String> {
    let root = srv.path("");
    let root = root.to_string_lossy();
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| p.starts_with(&*root) && p.ends_with(" (deleted)"))
        .collect()
}

#[tokio::test]
async fn a_file_removed_while_open_stays_until_its_last_close() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        let other = srv.client().await;
        let root = c.root_fh().await.unwrap();

        // Removed by its own client: OPEN said the server keeps it.
        let a = create_file(&c, &root, "a").await;
        assert_ne!(a.rflags & OPEN4_RESULT_PRESERVE_UNLINKED, 0);
        write(&c, &a, 0, b"data").await;
        c.remove(&root, "a").await.unwrap();
        assert!(!srv.path("a").exists());
        assert_eq!(deleted_held(&srv).len(), 1, "kept open");
        kept_until_closed(&c, &a, "removed by its opener").await;

        // Removed by another client while two hold it open: kept until
        // both have closed it.
        let b = create_file(&c, &root, "b").await;
        write(&c, &b, 0, b"data").await;
        let b2 = other
            .open(&root, "b", client::OpenOpts::read())
            .await
            .unwrap();
        other.remove(&root, "b").await.unwrap();
        let (data, _) = other.read(&b2.fh, b2.stateid, 0, 100).await.unwrap();
        assert_eq!(&data[..], b"data");
        other.close(&b2.fh, b2.stateid).await.unwrap();
        kept_until_closed(&c, &b, "removed by another client").await;

        // Replaced by a rename.
        let t = create_file(&c, &root, "target").await;
        write(&c, &t, 0, b"data").await;
        let n = create_file(&c, &root, "new").await;
        c.close(&n.fh, n.stateid).await.unwrap();
        c.rename(&root, "new", &root, "target").await.unwrap();
        assert_eq!(c.lookup(&root, "target").await.unwrap(), n.fh);
        kept_until_closed(&c, &t, "replaced by a rename").await;

        // Removed over NFSv3.
        let d = create_file(&c, &root, "d").await;
        write(&c, &d, 0, b"data").await;
        let c3 = Client3::connect(srv.addr, srv.addr, "/", root_auth())
            .await
            .expect("MNT and connect");
        c3.remove(c3.root(), "d").await.unwrap();
        kept_until_closed(&c, &d, "removed over NFSv3").await;

        // A file nobody has open goes at once.
        let e = create_file(&c, &root, "e").await;
        c.close(&e.fh, e.stateid).await.unwrap();
        c.remove(&root, "e").await.unwrap();
        assert_eq!(
            status(c.getattr(&e.fh, &[FATTR4_NUMLINKS]).await),
            NfsStat4::Nfs4errStale
        );
        // A file with another name is not kept: it has its other name.
        let f = create_file(&c, &root, "f").await;
        c.link(&f.fh, &root, "f2").await.unwrap();
        c.remove(&root, "f").await.unwrap();
        assert_eq!(nlink(&c, &f.fh).await.unwrap(), 1);
        c.close(&f.fh, f.stateid).await.unwrap();
        assert_eq!(nlink(&c, &f.fh).await.unwrap(), 1);
        // And nothing removed is held open by the server any more (it
        // runs in this process).
        assert_eq!(deleted_held(&srv), Vec::<String>::new());
    })
    .await;
}
