//! A client that makes lock owners without end, on files without end
//! (issue 33, bad input): each owner's locks on a file hold a descriptor
//! while they are shared with local processes, so one client may hold at
//! most a quarter of the export's budget (an eighth of the descriptor
//! limit); past it its new owners' locks get NFS4ERR_DELAY, and every
//! other client keeps locking. This lowers the process's RLIMIT_NOFILE,
//! so it is the only test in its binary.

mod common;

use common::*;
use proto::nfs4::*;

/// Under this limit the export holds at most 64 lock descriptions, 16 of
/// them for one client.
const NOFILE: u64 = 512;

#[tokio::test]
async fn lock_owners_without_end_cannot_take_the_servers_descriptors() {
    let _limit = NofileLimit::lower_to(NOFILE);
    within(async {
        let srv = TestServer::start().await;
        // A takes NFS4ERR_DELAY as an answer (no retry), to count them.
        let (a, b) = (srv.client_with(impatient()).await, srv.client().await);
        let root = a.root_fh().await.unwrap();
        // A: 100 owners, each locking a file of its own (files without
        // end), then 100 owners on one file (owners without end).
        let mut granted = 0;
        let mut delayed = 0;
        let shared = create_file(&a, &root, "one").await;
        for i in 0..200 {
            let o = if i < 100 {
                create_file(&a, &root, &format!("a{i}")).await
            } else {
                shared.clone()
            };
            let r = a
                .lock(
                    &o.fh,
                    NfsLockType4::WriteLt,
                    i,
                    1,
                    a.new_locker(o.stateid, a.new_owner(&format!("o{i}"))),
                )
                .await;
            match r {
                Ok(_) => granted += 1,
                Err(e) if e.status() == Some(NfsStat4::Nfs4errDelay) => delayed += 1,
                Err(e) => panic!("lock {i}: {e}"),
            }
        }
        eprintln!("one client's lock owners: {granted} granted, {delayed} NFS4ERR_DELAY");
        assert!(
            granted <= (NOFILE / 8 / 4) as usize,
            "{granted} lock owners' descriptions for one client under a limit of {NOFILE}"
        );
        assert!(granted > 0 && delayed == 200 - granted);
        // B is served: it creates, writes, reads back and locks files.
        for i in 0..10 {
            let o = create_file(&b, &root, &format!("b{i}")).await;
            write_read_back_and_lock(&b, &o, 8192, 4096).await;
            b.close(&o.fh, o.stateid).await.unwrap();
        }
    })
    .await;
}
