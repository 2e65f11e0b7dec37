//! Blocking locks (RFC 8881 §9.6): waiters are not overtaken and are told
//! with CB_NOTIFY_LOCK (§20.11) when the lock they wait for is released.

mod common;

use client::OpenOpts;
use common::*;
use proto::nfs4::*;

#[tokio::test]
async fn blocking_lock_waiter_is_notified_and_not_overtaken() {
    within(async {
        let srv = TestServer::start().await;
        let (a, w, late) = (srv.client().await, srv.client().await, srv.client().await);
        let root = a.root_fh().await.unwrap();
        let oa = create_file(&a, &root, "f").await;
        assert_ne!(oa.rflags & OPEN4_RESULT_MAY_NOTIFY_LOCK, 0);
        let ow = w.open_fh(&oa.fh, OpenOpts::both()).await.unwrap();
        let ol = late.open_fh(&oa.fh, OpenOpts::both()).await.unwrap();
        let (a_owner, w_owner, l_owner) = (
            a.new_owner("a"),
            w.new_owner("waiter"),
            late.new_owner("late"),
        );
        let la = a
            .lock(
                &oa.fh,
                NfsLockType4::WriteLt,
                0,
                100,
                a.new_locker(oa.stateid, a_owner),
            )
            .await
            .unwrap();

        // The waiter's blocking request is denied and queued.
        let e = w
            .lock(
                &oa.fh,
                NfsLockType4::WritewLt,
                0,
                100,
                w.new_locker(ow.stateid, w_owner.clone()),
            )
            .await
            .unwrap_err();
        assert_eq!(e.denied().unwrap().owner.clientid, a.clientid());
        assert!(w.callbacks().lock_notices().is_empty());

        // A releases: the waiter is told, with its own lock owner.
        a.locku(&oa.fh, NfsLockType4::WriteLt, la, 0, 100)
            .await
            .unwrap();
        let got = notices(&w, 1).await;
        assert_eq!(got.len(), 1, "one CB_NOTIFY_LOCK");
        assert_eq!(got[0].fh, oa.fh);
        assert_eq!(got[0].lock_owner.owner, w_owner.owner);
        assert_eq!(got[0].lock_owner.clientid, w.clientid());

        // Before the waiter comes back, a newcomer's conflicting request is
        // denied (naming the waiter); one outside its range is not.
        let e = late
            .lock(
                &oa.fh,
                NfsLockType4::WriteLt,
                50,
                10,
                late.new_locker(ol.stateid, l_owner.clone()),
            )
            .await
            .unwrap_err();
        assert_eq!(e.denied().unwrap().owner.owner, w_owner.owner);
        let ll = late
            .lock(
                &oa.fh,
                NfsLockType4::WriteLt,
                200,
                10,
                late.new_locker(ol.stateid, l_owner.clone()),
            )
            .await
            .unwrap();

        // The waiter retries and gets it.
        let lw = w
            .lock(
                &oa.fh,
                NfsLockType4::WritewLt,
                0,
                100,
                w.new_locker(ow.stateid, w_owner.clone()),
            )
            .await
            .unwrap();
        // Non-blocking requests are not queued, so nobody is told when
        // the waiter unlocks; the newcomer simply succeeds now.
        let r = late
            .lock(
                &oa.fh,
                NfsLockType4::WriteLt,
                50,
                10,
                late.existing_locker(ll),
            )
            .await;
        assert!(r.unwrap_err().denied().is_some());
        w.locku(&oa.fh, NfsLockType4::WriteLt, lw, 0, 100)
            .await
            .unwrap();
        late.lock(
            &oa.fh,
            NfsLockType4::WriteLt,
            50,
            10,
            late.existing_locker(ll),
        )
        .await
        .unwrap();
        tokio::time::sleep(QUIET).await;
        assert!(late.callbacks().lock_notices().is_empty());
        assert_eq!(w.callbacks().lock_notices().len(), 1);
    })
    .await
}

#[tokio::test]
async fn notifications_follow_the_queue() {
    within(async {
        let srv = TestServer::start().await;
        let (a, w1, w2) = (srv.client().await, srv.client().await, srv.client().await);
        let root = a.root_fh().await.unwrap();
        let oa = create_file(&a, &root, "f").await;
        let o1 = w1.open_fh(&oa.fh, OpenOpts::both()).await.unwrap();
        let o2 = w2.open_fh(&oa.fh, OpenOpts::both()).await.unwrap();
        let la = a
            .lock(
                &oa.fh,
                NfsLockType4::WriteLt,
                0,
                u64::MAX,
                a.new_locker(oa.stateid, a.new_owner("a")),
            )
            .await
            .unwrap();
        let (n1, n2) = (w1.new_owner("w1"), w2.new_owner("w2"));
        for (c, o, n, off) in [(&w1, &o1, &n1, 0), (&w2, &o2, &n2, 5)] {
            let e = c
                .lock(
                    &oa.fh,
                    NfsLockType4::WritewLt,
                    off,
                    10,
                    c.new_locker(o.stateid, n.clone()),
                )
                .await
                .unwrap_err();
            assert!(e.denied().is_some());
        }
        // Releasing: only the first waiter (w2's range overlaps w1's).
        a.locku(&oa.fh, NfsLockType4::WriteLt, la, 0, u64::MAX)
            .await
            .unwrap();
        assert_eq!(notices(&w1, 1).await.len(), 1);
        tokio::time::sleep(QUIET).await;
        assert!(w2.callbacks().lock_notices().is_empty());
        // w2 retrying now is still behind w1.
        let e = w2
            .lock(
                &oa.fh,
                NfsLockType4::WritewLt,
                5,
                10,
                w2.new_locker(o2.stateid, n2.clone()),
            )
            .await
            .unwrap_err();
        assert_eq!(e.denied().unwrap().owner.owner, n1.owner);
        // w1 takes and releases its lock: now w2 is told.
        let l1 = w1
            .lock(
                &oa.fh,
                NfsLockType4::WritewLt,
                0,
                10,
                w1.new_locker(o1.stateid, n1.clone()),
            )
            .await
            .unwrap();
        w1.locku(&oa.fh, NfsLockType4::WriteLt, l1, 0, 10)
            .await
            .unwrap();
        assert_eq!(notices(&w2, 1).await.len(), 1);
        w2.lock(
            &oa.fh,
            NfsLockType4::WritewLt,
            5,
            10,
            w2.new_locker(o2.stateid, n2),
        )
        .await
        .unwrap();
    })
    .await
}
