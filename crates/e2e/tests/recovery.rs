//! Reboot recovery across a server restart (RFC 8881 §8.4.2, §8.4.3): the
//! grace period, reclaims by recorded clients, and nobody else's state in
//! between.

mod common;

use std::time::Duration;

use client::{Client, ClientOptions, OpenOpts};
use common::*;
use proto::nfs4::*;

/// The grace period of these servers: long enough that no test sees it
/// end by time unless it waits for that.
const GRACE: Duration = Duration::from_secs(6);

/// A server with that grace period, and a client that created file "f"
/// (its options, to come back with the same owner; its open).
async fn setup() -> (TestServer, ClientOptions, Client, client::Open) {
    let srv = TestServer::start_with_grace(GRACE).await;
    let opts = options();
    let a = srv.client_with(opts.clone()).await;
    let root = a.root_fh().await.unwrap();
    let oa = create_file(&a, &root, "f").await;
    (srv, opts, a, oa)
}

#[tokio::test]
async fn a_lock_held_before_a_restart_is_reclaimed_before_anyone_else_gets_it() {
    within(async {
        let (mut srv, a_opts, a, oa) = setup().await;
        let owner = a.new_owner("a");
        a.lock(
            &oa.fh,
            NfsLockType4::WriteLt,
            0,
            100,
            a.new_locker(oa.stateid, owner.clone()),
        )
        .await
        .unwrap();
        drop(a);
        srv.restart().await;

        // A new client in the grace period: no new opens, locks or lock
        // tests, nothing to reclaim; reads and the like go on.
        let b = srv.client().await;
        let e = b.open_fh(&oa.fh, OpenOpts::both()).await.unwrap_err();
        assert_eq!(e.status(), Some(NfsStat4::Nfs4errGrace), "{e}");
        let e = b.open_reclaim(&oa.fh, OpenOpts::both()).await.unwrap_err();
        assert_eq!(e.status(), Some(NfsStat4::Nfs4errNoGrace), "{e}");
        let e = b
            .compound(vec![
                client::ops::putfh(&oa.fh),
                NfsArgOp4::LockT(LockT4Args {
                    locktype: NfsLockType4::WriteLt,
                    offset: 0,
                    length: 1,
                    owner: LockOwner4 {
                        clientid: b.clientid(),
                        owner: "t".into(),
                    },
                }),
            ])
            .await
            .unwrap_err();
        assert_eq!(e.status(), Some(NfsStat4::Nfs4errGrace), "{e}");
        b.getattr(&oa.fh, &[FATTR4_SIZE]).await.unwrap();

        // The same client comes back (same owner) and reclaims.
        let a = srv.client_with(a_opts.clone().reclaiming()).await;
        let e = a.open_fh(&oa.fh, OpenOpts::both()).await.unwrap_err();
        assert_eq!(e.status(), Some(NfsStat4::Nfs4errGrace), "{e}");
        let ra = a.open_reclaim(&oa.fh, OpenOpts::both()).await.unwrap();
        a.lock_reclaim(
            &oa.fh,
            NfsLockType4::WriteLt,
            0,
            100,
            a.new_locker(ra.stateid, owner.clone()),
        )
        .await
        .unwrap();
        // Its RECLAIM_COMPLETE ends the grace period at once: it was the
        // only client recorded.
        a.reclaim_complete().await.unwrap();
        let e = a.open_reclaim(&oa.fh, OpenOpts::both()).await.unwrap_err();
        assert_eq!(e.status(), Some(NfsStat4::Nfs4errNoGrace), "{e}");

        // Now the other client may open, and finds the lock taken.
        let ob = b.open_fh(&oa.fh, OpenOpts::both()).await.unwrap();
        let e = b
            .lock(
                &oa.fh,
                NfsLockType4::WriteLt,
                0,
                1,
                b.new_locker(ob.stateid, b.new_owner("b")),
            )
            .await
            .unwrap_err();
        assert_eq!(e.denied().unwrap().owner.clientid, a.clientid());
    })
    .await
}

#[tokio::test]
async fn a_client_that_lost_its_lease_cannot_reclaim_after_a_restart() {
    within(async {
        let (mut srv, a_opts, a, oa) = setup().await;
        let a_id = a.clientid();
        // The lease runs out and the client is purged (DESTROY_CLIENTID
        // does what the reaper does after two leases): its record goes.
        a.destroy().await.unwrap();
        let b = srv.client().await;
        let ob = b.open_fh(&oa.fh, OpenOpts::both()).await.unwrap();
        b.lock(
            &oa.fh,
            NfsLockType4::WriteLt,
            0,
            100,
            b.new_locker(ob.stateid, b.new_owner("b")),
        )
        .await
        .unwrap();
        drop(b);
        // Before the restart, so before the grace period began: however
        // long what follows takes, it cannot end sooner than GRACE after.
        let t0 = std::time::Instant::now();
        srv.restart().await;
        // "a" has no record: §8.4.3's edge condition, refused. "b" has one.
        let a = srv.client_with(a_opts.reclaiming()).await;
        assert_ne!(a.clientid(), a_id);
        let e = a.open_reclaim(&oa.fh, OpenOpts::both()).await.unwrap_err();
        assert_eq!(e.status(), Some(NfsStat4::Nfs4errNoGrace), "{e}");
        // Until "b" reclaims or the time is up, new state waits.
        a.reclaim_complete().await.unwrap();
        let e = a.open_fh(&oa.fh, OpenOpts::both()).await.unwrap_err();
        assert_eq!(e.status(), Some(NfsStat4::Nfs4errGrace), "{e}");
        let oa2 = loop {
            match a.open_fh(&oa.fh, OpenOpts::both()).await {
                Ok(o) => break o,
                Err(e) if e.status() == Some(NfsStat4::Nfs4errGrace) => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => panic!("{e}"),
            }
        };
        let waited = t0.elapsed();
        assert!(
            waited >= GRACE,
            "grace ended after {waited:?}, before its time"
        );
        // "b" never came back, so its lock is gone: "a" gets it.
        a.lock(
            &oa2.fh,
            NfsLockType4::WriteLt,
            0,
            100,
            a.new_locker(oa2.stateid, a.new_owner("a")),
        )
        .await
        .unwrap();
    })
    .await
}

#[tokio::test]
async fn records_survive_a_second_restart_during_the_grace_period() {
    within(async {
        let (mut srv, a_opts, a, oa) = setup().await;
        drop(a);
        srv.restart().await;
        // Restarted again before "a" came back: it still may reclaim.
        srv.restart().await;
        let a: Client = srv.client_with(a_opts.reclaiming()).await;
        a.open_reclaim(&oa.fh, OpenOpts::both()).await.unwrap();
        a.reclaim_complete().await.unwrap();
        a.open_fh(&oa.fh, OpenOpts::read()).await.unwrap();
    })
    .await
}
