//! An export's write log (issue 11, point 4) over the wire: stable WRITEs
//! answered FILE_SYNC once logged, seen by reads at once, and written
//! again after a crash that lost them from the export.

mod common;

use bytes::Bytes;
use common::*;
use proto::nfs4::*;

async fn write(c: &client::Client, o: &client::Open, offset: u64, data: Vec<u8>, how: StableHow4) {
    let w = c
        .write(&o.fh, o.stateid, offset, Bytes::from(data), how)
        .await
        .unwrap();
    if how != StableHow4::Unstable4 {
        assert_eq!(w.committed, StableHow4::FileSync4);
    }
}

/// A server with a write log, a client and its file "f".
async fn logged_file() -> (TestServer, client::Client, NfsFh4, client::Open) {
    let srv = TestServer::start_logged().await;
    let c = srv.client().await;
    let root = c.root_fh().await.unwrap();
    let o = create_file(&c, &root, "f").await;
    (srv, c, root, o)
}

#[tokio::test]
async fn stable_writes_survive_a_crash_that_lost_them_from_the_export() {
    within(async {
        let (mut srv, c, _, o) = logged_file().await;
        for (i, fill) in [b'a', b'b', b'c'].into_iter().enumerate() {
            write(
                &c,
                &o,
                i as u64 * 4096,
                vec![fill; 4096],
                StableHow4::FileSync4,
            )
            .await;
        }
        // Seen at once, logged but not applied.
        let (got, _) = c.read(&o.fh, o.stateid, 4096, 4096).await.unwrap();
        assert_eq!(&got[..], &[b'b'; 4096][..]);
        drop(c);
        let path = srv.path("f");
        srv.crash_restart(|_| {
            // What a power loss leaves of a file whose data was only in
            // the page cache and the log.
            std::fs::write(&path, b"").unwrap();
        })
        .await;
        let got = std::fs::read(&path).unwrap();
        assert_eq!(got.len(), 3 * 4096, "the logged writes are back");
        assert!(got[..4096].iter().all(|&b| b == b'a'));
        assert!(got[4096..8192].iter().all(|&b| b == b'b'));
        assert!(got[8192..].iter().all(|&b| b == b'c'));
        // A clean stop applies the log: nothing is replayed at the start
        // after, so a change made between stays.
        srv.stop().await;
        std::fs::write(&path, b"between").unwrap();
        srv.restart().await;
        assert_eq!(std::fs::read(&path).unwrap(), b"between");
    })
    .await;
}

/// Unstable data and its COMMIT over a logged range: the COMMIT is the
/// later promise, and replay after a crash must not write the older logged
/// data over it; nor over a truncation.
#[tokio::test]
async fn replay_never_undoes_a_later_commit_or_truncation() {
    within(async {
        let (mut srv, c, root, o) = logged_file().await;
        write(&c, &o, 0, vec![b'a'; 4096], StableHow4::FileSync4).await;
        write(&c, &o, 0, b"COMMITTED".to_vec(), StableHow4::Unstable4).await;
        c.commit(&o.fh, 0, 0).await.unwrap();
        let t = srv.client().await;
        let o2 = create_file(&t, &root, "t").await;
        write(&t, &o2, 0, vec![b't'; 4096], StableHow4::FileSync4).await;
        let size = Attrs {
            size: Some(10),
            ..Default::default()
        };
        t.setattr(&o2.fh, o2.stateid, &size).await.unwrap();
        drop((c, t));
        srv.crash_restart(|_| {}).await;
        let got = std::fs::read(srv.path("f")).unwrap();
        assert_eq!(&got[..9], b"COMMITTED");
        assert_eq!(got.len(), 4096);
        assert_eq!(std::fs::read(srv.path("t")).unwrap(), vec![b't'; 10]);
    })
    .await;
}
