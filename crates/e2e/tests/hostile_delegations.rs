//! A client that keeps delegations of files without end (issue 33, bad
//! input): each may hold descriptors (a lease, a watch), so the server
//! holds at most an eighth of its descriptor limit's worth, grants no
//! more past it, and keeps serving every other client. This lowers the
//! process's RLIMIT_NOFILE, so it is the only test in its binary.

mod common;

use common::*;
use proto::nfs4::*;

/// Under this descriptor limit the server may hold at most 64 delegations.
const NOFILE: u64 = 512;

#[tokio::test]
async fn delegations_of_files_without_end_cannot_take_the_servers_descriptors() {
    let _limit = NofileLimit::lower_to(NOFILE);
    within(async {
        let srv = TestServer::start_delegating().await;
        let (a, b) = (srv.client().await, srv.client().await);
        let root = a.root_fh().await.unwrap();
        // A opens 400 files for reading, wanting delegations, and keeps
        // them all (never closing).
        let files = 400;
        for i in 0..files {
            put_file(&srv, &format!("f{i}"), b"data");
        }
        let mut granted = 0;
        for i in 0..files {
            let o = a
                .open(
                    &root,
                    &format!("f{i}"),
                    client::OpenOpts {
                        access: OPEN4_SHARE_ACCESS_READ | OPEN4_SHARE_ACCESS_WANT_READ_DELEG,
                        ..Default::default()
                    },
                )
                .await
                .unwrap_or_else(|e| panic!("open {i}: {e}"));
            match o.delegation {
                OpenDelegation4::Read(_) => granted += 1,
                OpenDelegation4::NoneExt(_) => {}
                other => panic!("open {i}: {other:?}"),
            }
        }
        assert!(granted > 0, "no delegation at all");
        // Held now: those granted but for any given back when the server
        // asked (CB_RECALL_ANY near the limit).
        let held = granted - a.callbacks().delegreturns() as usize;
        assert!(
            held <= (NOFILE / 8) as usize,
            "{held} delegations held under a limit of {NOFILE} descriptors"
        );
        // Every other client is served: B creates, writes, reads back and
        // locks files.
        for i in 0..50 {
            let o = create_file(&b, &root, &format!("b{i}")).await;
            write_read_back_and_lock(&b, &o, 8192, 4096).await;
            b.close(&o.fh, o.stateid).await.unwrap();
        }
    })
    .await;
}
