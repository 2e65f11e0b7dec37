//! The client crate's NFSv4.0 mode (RFC 7530) against the server over
//! TCP: SETCLIENTID and its confirmation, the owners' sequence ids, the
//! first OPEN of an owner confirmed, locks contending with an NFSv4.1
//! client's, and the lease kept by RENEW while the client is idle.

mod common;

use std::time::Duration;

use client::OpenOpts;
use common::*;
use proto::nfs4::*;

fn options40() -> client::ClientOptions {
    options().minorversion(0)
}

#[tokio::test]
async fn an_nfsv4_0_client_opens_writes_reads_locks_and_closes() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client_with(options40()).await;
        let c41 = srv.client().await;
        assert_eq!(c.minorversion(), 0);
        let root = c.root_fh().await.unwrap();
        // The owner's first OPEN comes back confirmed (OPEN_CONFIRM sent).
        let o = create_file(&c, &root, "f40").await;
        assert_eq!(o.rflags & OPEN4_RESULT_CONFIRM, 0, "{o:?}");
        assert_eq!(o.stateid.seqid, 2, "OPEN_CONFIRM's stateid");
        write_read_back_and_lock(&c, &o, 100_000, 32 * 1024).await;
        // A lock owner's first lock, then its next one by its lock stateid.
        let owner = c.new_owner("lk40");
        let lk = c
            .lock(
                &o.fh,
                NfsLockType4::WriteLt,
                0,
                10,
                c.new_locker(o.stateid, owner),
            )
            .await
            .unwrap();
        let lk = c
            .lock(&o.fh, NfsLockType4::WriteLt, 20, 10, c.existing_locker(lk))
            .await
            .unwrap();
        // An NFSv4.1 client's lock of the same bytes is denied.
        let o41 = c41.open(&root, "f40", OpenOpts::both()).await.unwrap();
        let owner41 = c41.new_owner("lk41");
        let denied = c41
            .lock(
                &o41.fh,
                NfsLockType4::WriteLt,
                25,
                1,
                c41.new_locker(o41.stateid, owner41.clone()),
            )
            .await;
        assert_eq!(status(denied), NfsStat4::Nfs4errDenied);
        c.locku(&o.fh, NfsLockType4::WriteLt, lk, 0, 30)
            .await
            .unwrap();
        let lk41 = c41
            .lock(
                &o41.fh,
                NfsLockType4::WriteLt,
                25,
                1,
                c41.new_locker(o41.stateid, owner41),
            )
            .await
            .unwrap();
        c41.locku(&o41.fh, NfsLockType4::WriteLt, lk41, 25, 1)
            .await
            .unwrap();
        c41.close(&o41.fh, o41.stateid).await.unwrap();
        // The same owner opens again: an upgrade, no confirmation.
        let again = c.open(&root, "f40", OpenOpts::read()).await.unwrap();
        assert_eq!(again.stateid.other, o.stateid.other);
        assert_eq!(again.rflags & OPEN4_RESULT_CONFIRM, 0);
        c.close(&o.fh, again.stateid).await.unwrap();
        c.remove(&root, "f40").await.unwrap();
    })
    .await
}

#[tokio::test]
async fn an_idle_nfsv4_0_client_keeps_its_lease_by_renew() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client_with(options40()).await;
        let root = c.root_fh().await.unwrap();
        let o = create_file(&c, &root, "idle40").await;
        // Idle for longer than the lease (10 s): RENEW keeps it.
        tokio::time::sleep(Duration::from_secs(13)).await;
        // Another client's OPEN that denies writes would take a gone
        // client's share: this one's stands.
        let other = srv.client().await;
        let denied = other
            .open(
                &root,
                "idle40",
                OpenOpts::read().deny(OPEN4_SHARE_DENY_WRITE),
            )
            .await;
        assert_eq!(status(denied), NfsStat4::Nfs4errShareDenied);
        c.write(&o.fh, o.stateid, 0, b("still mine"), StableHow4::FileSync4)
            .await
            .unwrap();
        c.close(&o.fh, o.stateid).await.unwrap();
    })
    .await
}
