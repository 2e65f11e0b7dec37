//! Read delegations (RFC 8881 §10.2) over the wire: granted on OPEN for
//! reading, recalled with CB_RECALL when another client opens for writing
//! or removes the file, the conflicting request answered once the holder
//! returns it (not NFS4ERR_DELAY), and revoked a lease after a recall the
//! holder ignores.

mod common;

use std::time::Duration;

use client::OpenOpts;
use common::*;
use proto::nfs4::*;

const WANT_READ: u32 = OPEN4_SHARE_ACCESS_READ | OPEN4_SHARE_ACCESS_WANT_READ_DELEG;

fn read_deleg(d: &OpenDelegation4) -> StateId4 {
    match d {
        OpenDelegation4::Read(r) => r.stateid,
        other => panic!("no read delegation: {other:?}"),
    }
}

/// Creates `name` in `dir` as `c`, and opens it for reading wanting a
/// read delegation: the open and the delegation's stateid.
async fn delegated(c: &client::Client, dir: &NfsFh4, name: &str) -> (client::Open, StateId4) {
    let f = create_undelegated(c, dir, name).await;
    c.close(&f.fh, f.stateid).await.unwrap();
    let o = wanting(c, dir, name).await;
    let d = read_deleg(&o.delegation);
    (o, d)
}

/// Creates `name` in `dir` and opens it for reading and writing, wanting
/// no delegation (a lone writer would get a write delegation).
async fn create_undelegated(c: &client::Client, dir: &NfsFh4, name: &str) -> client::Open {
    let mut o = OpenOpts::create(0o644);
    o.access |= OPEN4_SHARE_ACCESS_WANT_NO_DELEG;
    c.open(dir, name, o).await.unwrap()
}

/// Opens `name` in `dir` for reading, wanting a read delegation.
async fn wanting(c: &client::Client, dir: &NfsFh4, name: &str) -> client::Open {
    c.open(
        dir,
        name,
        OpenOpts {
            access: WANT_READ,
            ..Default::default()
        },
    )
    .await
    .unwrap()
}

/// OPEN with CLAIM_DELEG_CUR_FH of `fh` under `deleg`, as `c` with a new
/// open owner `owner`.
async fn open_under(
    c: &client::Client,
    fh: &NfsFh4,
    deleg: StateId4,
    owner: &str,
) -> client::Result<Vec<NfsResOp4>> {
    c.compound(vec![
        putfh(fh),
        NfsArgOp4::Open(Open4Args {
            seqid: 0,
            share_access: OPEN4_SHARE_ACCESS_READ,
            share_deny: 0,
            owner: OpenOwner4 {
                clientid: c.clientid(),
                owner: common::b(owner),
            },
            openhow: OpenFlag4::NoCreate,
            claim: OpenClaim4::DelegCurFh(deleg),
        }),
    ])
    .await
}

#[tokio::test]
async fn a_conflicting_open_recalls_the_delegation_and_goes_on_at_its_return() {
    within(async {
        let srv = TestServer::start_delegating().await;
        let (a, b) = (srv.client().await, srv.client_with(impatient()).await);
        let root = a.root_fh().await.unwrap();
        let (o, d) = delegated(&a, &root, "f").await;
        // Another reader does not conflict.
        let r = b.open(&root, "f", OpenOpts::read()).await.unwrap();
        assert!(a.callbacks().recalls().is_empty());
        b.close(&r.fh, r.stateid).await.unwrap();
        // A writer does: the holder is called back and returns it, and the
        // OPEN is answered then, not with NFS4ERR_DELAY.
        let w = b.open(&root, "f", OpenOpts::write()).await.unwrap();
        let got = recalls(&a, 1).await;
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].stateid.other, &got[0].fh), (d.other, &o.fh));
        assert_eq!(delegreturns(&a, 1).await, 1);
        // Returned, not revoked.
        assert_eq!(
            a.test_stateids(vec![d]).await.unwrap(),
            vec![NfsStat4::Nfs4errBadStateid]
        );
        assert_eq!(a.status_flags() & SEQ4_STATUS_RECALLABLE_STATE_REVOKED, 0);
        // The file was in contention: no delegation of it for a while.
        let again = wanting(&a, &root, "f").await;
        assert!(matches!(
            again.delegation,
            OpenDelegation4::NoneExt(OpenNoneDelegation4::Contention(false))
        ));
        b.close(&w.fh, w.stateid).await.unwrap();
    })
    .await
}

#[tokio::test]
async fn an_open_the_share_reservations_refuse_recalls_nothing() {
    within(async {
        let srv = TestServer::start_delegating().await;
        let (a, b) = (srv.client().await, srv.client_with(impatient()).await);
        let root = a.root_fh().await.unwrap();
        let f = create_undelegated(&a, &root, "denied").await;
        a.close(&f.fh, f.stateid).await.unwrap();
        // A reader that denies writes, with a read delegation.
        let o = a
            .open(
                &root,
                "denied",
                OpenOpts {
                    access: WANT_READ,
                    deny: OPEN4_SHARE_DENY_WRITE,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let d = read_deleg(&o.delegation);
        // A writer is refused by the deny, whatever the delegation: it is
        // answered at once and the delegation stays (pynfs DELEG8).
        let e = b
            .open(&root, "denied", OpenOpts::write())
            .await
            .unwrap_err();
        assert_eq!(e.status(), Some(NfsStat4::Nfs4errShareDenied), "{e:?}");
        assert!(a.callbacks().recalls().is_empty());
        assert_eq!(
            a.test_stateids(vec![d]).await.unwrap(),
            vec![NfsStat4::Nfs4Ok]
        );
        // Once the deny is gone the writer recalls it.
        a.close(&o.fh, o.stateid).await.unwrap();
        let w = b.open(&root, "denied", OpenOpts::write()).await.unwrap();
        assert_eq!(recalls(&a, 1).await.len(), 1);
        b.close(&w.fh, w.stateid).await.unwrap();
    })
    .await
}

#[tokio::test]
async fn removing_a_delegated_file_recalls_it_and_opens_under_it_are_the_holders() {
    within(async {
        let srv = TestServer::start_delegating().await;
        let (a, b) = (srv.client().await, srv.client_with(impatient()).await);
        let root = a.root_fh().await.unwrap();
        let (o, d) = delegated(&a, &root, "g").await;
        // CLAIM_DELEG_CUR_FH: the holder's open under its delegation.
        let res = open_under(&a, &o.fh, d, "under-deleg").await.unwrap();
        assert!(matches!(res[1], NfsResOp4::Open(Res4::Ok(_))), "{res:?}");
        // Another client cannot present it.
        let res = open_under(&b, &o.fh, d, "thief").await;
        assert!(unknown_stateid(failed_at(res).1));
        // REMOVE by another client recalls it.
        b.remove(&root, "g").await.unwrap();
        assert_eq!(recalls(&a, 1).await.len(), 1);
        assert_eq!(delegreturns(&a, 1).await, 1);
    })
    .await
}

#[tokio::test]
async fn what_the_open_answers_when_no_delegation_is_granted() {
    within(async {
        let srv = TestServer::start_delegating().await;
        let a = srv.client().await;
        let root = a.root_fh().await.unwrap();
        let f = create_undelegated(&a, &root, "h").await;
        let open = |c: &client::Client, access| {
            let (c, root) = (c.clone(), root.clone());
            async move {
                c.open(
                    &root,
                    "h",
                    OpenOpts {
                        access,
                        ..Default::default()
                    },
                )
                .await
                .unwrap()
            }
        };
        let contention = OpenDelegation4::NoneExt(OpenNoneDelegation4::Contention(false));
        assert_eq!(
            open(
                &a,
                OPEN4_SHARE_ACCESS_READ | OPEN4_SHARE_ACCESS_WANT_NO_DELEG
            )
            .await
            .delegation,
            OpenDelegation4::NoneExt(OpenNoneDelegation4::Other(WhyNoDelegation4::Wnd4NotWanted))
        );
        // No read delegation to a writer, the client itself included.
        assert_eq!(open(&a, WANT_READ).await.delegation, contention);
        assert_eq!(
            open(
                &a,
                OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_READ_DELEG
            )
            .await
            .delegation,
            contention
        );
        // No write delegation while another client has the file open.
        let b = srv.client().await;
        let r = open(
            &b,
            OPEN4_SHARE_ACCESS_READ | OPEN4_SHARE_ACCESS_WANT_NO_DELEG,
        )
        .await;
        assert_eq!(
            open(
                &a,
                OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG
            )
            .await
            .delegation,
            contention
        );
        b.close(&r.fh, r.stateid).await.unwrap();
        // Alone, it gets one; held, no preference gets plain none.
        let w = open(
            &a,
            OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG,
        )
        .await;
        assert!(
            matches!(w.delegation, OpenDelegation4::Write(_)),
            "{:?}",
            w.delegation
        );
        assert_eq!(
            open(&a, OPEN4_SHARE_ACCESS_BOTH).await.delegation,
            OpenDelegation4::None
        );
        // The opens upgraded the one open stateid: close its current one.
        let current = StateId4 {
            seqid: 0,
            ..f.stateid
        };
        a.close(&f.fh, current).await.unwrap();

        // A server with delegations off grants none.
        let off = TestServer::start().await;
        let c = off.client().await;
        let root = c.root_fh().await.unwrap();
        let g = create_file(&c, &root, "h").await;
        c.close(&g.fh, g.stateid).await.unwrap();
        assert_eq!(
            wanting(&c, &root, "h").await.delegation,
            OpenDelegation4::NoneExt(OpenNoneDelegation4::Resource(false))
        );
    })
    .await
}

#[tokio::test]
async fn a_delegation_kept_past_its_recall_is_revoked_and_freed() {
    within(async {
        let srv = TestServer::start_delegating().await;
        let mut keeper = options();
        keeper.return_delegations = false;
        let (a, b) = (
            srv.client_with(keeper).await,
            srv.client_with(impatient()).await,
        );
        let root = a.root_fh().await.unwrap();
        let (o, d) = delegated(&a, &root, "k").await;
        // Held past the server's wait (3 s here): NFS4ERR_DELAY, and the
        // client retries until the delegation is revoked (a lease after
        // the recall: 10 s here), its holder renewing all along.
        let mut tries = 0;
        let w = loop {
            tries += 1;
            match b.open(&root, "k", OpenOpts::write()).await {
                Ok(w) => break w,
                Err(e) => assert_eq!(e.status(), Some(NfsStat4::Nfs4errDelay)),
            }
            a.compound(Vec::new()).await.unwrap();
            tokio::time::sleep(Duration::from_millis(500)).await;
        };
        assert!(tries > 1, "the open did not wait for the delegation");
        assert_eq!(recalls(&a, 1).await.len(), 1, "recalled once");
        a.compound(Vec::new()).await.unwrap();
        assert_ne!(a.status_flags() & SEQ4_STATUS_RECALLABLE_STATE_REVOKED, 0);
        assert_eq!(
            a.test_stateids(vec![d]).await.unwrap(),
            vec![NfsStat4::Nfs4errDelegRevoked]
        );
        let read = a.read(&o.fh, d, 0, 10).await;
        assert_eq!(status(read), NfsStat4::Nfs4errDelegRevoked);
        a.free_stateid(d).await.unwrap();
        a.compound(Vec::new()).await.unwrap();
        assert_eq!(a.status_flags() & SEQ4_STATUS_RECALLABLE_STATE_REVOKED, 0);
        b.close(&w.fh, w.stateid).await.unwrap();
    })
    .await
}

/// The holder's own OPEN for writing (same client and open owner) does not
/// recall its delegation (it coordinates its own opens, §10.4), but its
/// WRITE does: another cache of the same client (a Linux `nosharecache`
/// mount) may rely on it.
#[tokio::test]
async fn the_holders_own_open_keeps_its_delegation_and_its_write_recalls_it() {
    within(async {
        let srv = TestServer::start_delegating().await;
        let a = srv.client_with(impatient()).await;
        let root = a.root_fh().await.unwrap();
        let (o, d) = delegated(&a, &root, "s").await;
        let w = a.open(&root, "s", OpenOpts::write()).await.unwrap();
        tokio::time::sleep(QUIET).await;
        assert!(
            a.callbacks().recalls().is_empty(),
            "recalled by its own open"
        );
        assert_eq!(
            a.test_stateids(vec![d]).await.unwrap(),
            vec![NfsStat4::Nfs4Ok]
        );
        a.write(&w.fh, w.stateid, 0, common::b("new"), StableHow4::Unstable4)
            .await
            .unwrap();
        let got = recalls(&a, 1).await;
        assert_eq!((got.len(), got[0].fh.clone()), (1, o.fh.clone()));
        assert_eq!(delegreturns(&a, 1).await, 1);
        a.close(&w.fh, w.stateid).await.unwrap();
    })
    .await
}

/// A local process (not an NFS client) opening a delegated file for
/// writing recalls the delegation and waits in the kernel (a read lease)
/// until it is returned; a file open for writing locally gets none.
#[tokio::test]
async fn a_local_writer_recalls_the_delegation_and_waits_for_its_return() {
    within(async {
        let srv = TestServer::start_delegating().await;
        let a = srv.client().await;
        let root = a.root_fh().await.unwrap();
        let (_, d) = delegated(&a, &root, "l").await;
        let path = srv.path("l");
        let writer = tokio::task::spawn_blocking(move || {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            f.write_all(b"local").unwrap();
        });
        let got = recalls(&a, 1).await;
        assert_eq!(got.len(), 1, "the local writer recalled nothing");
        assert_eq!(got[0].stateid.other, d.other);
        writer.await.unwrap();
        // The writer went on only once the delegation was gone.
        assert_eq!(
            a.test_stateids(vec![d]).await.unwrap(),
            vec![NfsStat4::Nfs4errBadStateid]
        );

        let f = create_undelegated(&a, &root, "m").await;
        a.close(&f.fh, f.stateid).await.unwrap();
        let held = std::fs::OpenOptions::new()
            .write(true)
            .open(srv.path("m"))
            .unwrap();
        assert_eq!(
            wanting(&a, &root, "m").await.delegation,
            OpenDelegation4::NoneExt(OpenNoneDelegation4::Contention(false))
        );
        drop(held);
    })
    .await
}

/// After a restart, a client reclaiming an open that had a read delegation
/// (CLAIM_PREVIOUS, delegate_type READ) gets the delegation back in the
/// grace period, when no new one is granted (RFC 8881 §10.2.1).
#[tokio::test]
async fn a_read_delegation_is_reclaimed_after_a_restart() {
    within(async {
        let mut srv = TestServer::start_delegating_with_grace(Duration::from_secs(30)).await;
        let a_opts = options();
        let a = srv.client_with(a_opts.clone()).await;
        let root = a.root_fh().await.unwrap();
        let (o, _) = delegated(&a, &root, "r").await;
        drop(a);
        srv.restart().await;
        let a = srv.client_with(a_opts.reclaiming()).await;
        let r = a
            .open_reclaim_deleg(
                &o.fh,
                OpenOpts::read(),
                OpenDelegationType4::OpenDelegateRead,
            )
            .await
            .unwrap();
        let d = read_deleg(&r.delegation);
        assert_eq!(
            a.test_stateids(vec![d]).await.unwrap(),
            vec![NfsStat4::Nfs4Ok]
        );
        // A reclaim of an open that had none gets none.
        let g = a.open_reclaim(&o.fh, OpenOpts::read()).await.unwrap();
        assert_eq!(g.delegation, OpenDelegation4::None);
        a.reclaim_complete().await.unwrap();
    })
    .await
}

/// With 90% of its most delegations held, the server asks their holders
/// to give half back (CB_RECALL_ANY, RFC 8881 §20.6), and grants none past
/// the most.
#[tokio::test]
async fn scarce_delegations_are_asked_back_with_cb_recall_any() {
    within(async {
        let srv = TestServer::start_delegating_at_most(10).await;
        let a = srv.client().await;
        let root = a.root_fh().await.unwrap();
        for i in 0..10 {
            delegated(&a, &root, &format!("s{i}")).await;
        }
        let f = create_file(&a, &root, "s10").await;
        a.close(&f.fh, f.stateid).await.unwrap();
        assert_eq!(
            wanting(&a, &root, "s10").await.delegation,
            OpenDelegation4::NoneExt(OpenNoneDelegation4::Resource(false))
        );
        let got = eventually(|| Some(a.callbacks().recall_anys()).filter(|g| !g.is_empty()))
            .await
            .unwrap_or_default();
        assert_eq!(got.len(), 1, "no CB_RECALL_ANY within {PATIENCE:?}");
        assert_eq!(got[0].objects_to_keep, 5);
        assert!(got[0].type_mask.contains(RCA4_TYPE_MASK_RDATA_DLG));
    })
    .await
}

/// OPEN of `fh` (CLAIM_DELEG_PREV_FH) or of `name` in `dir`
/// (CLAIM_DELEGATE_PREV) for reading: a delegation the server kept across
/// the client's own restart.
async fn open_prev(
    c: &client::Client,
    at: &NfsFh4,
    name: Option<&str>,
) -> client::Result<Vec<NfsResOp4>> {
    open_prev_for(c, at, name, OPEN4_SHARE_ACCESS_READ).await
}

/// [`open_prev`] for `access`.
async fn open_prev_for(
    c: &client::Client,
    at: &NfsFh4,
    name: Option<&str>,
    access: u32,
) -> client::Result<Vec<NfsResOp4>> {
    let claim = match name {
        Some(n) => OpenClaim4::DelegatePrev(common::b(n)),
        None => OpenClaim4::DelegPrevFh,
    };
    c.compound(vec![
        putfh(at),
        NfsArgOp4::Open(Open4Args {
            seqid: 0,
            share_access: access,
            share_deny: 0,
            owner: OpenOwner4 {
                clientid: c.clientid(),
                owner: common::b("after-restart"),
            },
            openhow: OpenFlag4::NoCreate,
            claim,
        }),
    ])
    .await
}

/// A client that restarted (a new verifier; the server ran on) finds its
/// delegations kept a lease (RFC 8881 §10.2.1): CLAIM_DELEG_PREV_FH and
/// CLAIM_DELEGATE_PREV get them back before its RECLAIM_COMPLETE; one that
/// another client's change came between is gone (NFS4ERR_RECLAIM_BAD), and
/// so are the rest after DELEGPURGE.
#[tokio::test]
async fn delegations_outlive_the_clients_own_restart() {
    within(async {
        let srv = TestServer::start_delegating().await;
        let a_opts = options();
        let a = srv.client_with(a_opts.clone()).await;
        let root = a.root_fh().await.unwrap();
        let (p1, _) = delegated(&a, &root, "p1").await;
        delegated(&a, &root, "p2").await;
        let (p3, _) = delegated(&a, &root, "p3").await;
        let (p4, _) = delegated(&a, &root, "p4").await;
        // A write delegation: kept as one.
        let pw = create_file(&a, &root, "pw").await;
        assert!(matches!(pw.delegation, OpenDelegation4::Write(_)));
        drop(a);
        // The restarted client: the same owner, a new verifier.
        let mut again = a_opts.reclaiming();
        again.verifier = Some([7; NFS4_VERIFIER_SIZE]);
        let a = srv.client_with(again).await;
        // Another client writes p3 meanwhile: nothing to recall (the old
        // instance is gone), but p3's delegation is no longer kept.
        let b = srv.client().await;
        let w = b.open(&root, "p3", OpenOpts::write()).await.unwrap();
        b.close(&w.fh, w.stateid).await.unwrap();

        let res = open_prev(&a, &p1.fh, None).await.unwrap();
        match &res[1] {
            NfsResOp4::Open(Res4::Ok(ok)) => {
                read_deleg(&ok.delegation);
            }
            other => panic!("{other:?}"),
        }
        let res = open_prev(&a, &root, Some("p2")).await.unwrap();
        match &res[1] {
            NfsResOp4::Open(Res4::Ok(ok)) => {
                read_deleg(&ok.delegation);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            failed_at(open_prev(&a, &p3.fh, None).await),
            (1, NfsStat4::Nfs4errReclaimBad)
        );
        let res = open_prev_for(&a, &pw.fh, None, OPEN4_SHARE_ACCESS_BOTH)
            .await
            .unwrap();
        match &res[1] {
            NfsResOp4::Open(Res4::Ok(ok)) => {
                assert!(
                    matches!(ok.delegation, OpenDelegation4::Write(_)),
                    "{:?}",
                    ok.delegation
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            failed_at(open_prev(&a, &p1.fh, None).await),
            (1, NfsStat4::Nfs4errReclaimBad),
            "reclaimed once"
        );
        // DELEGPURGE: the client will reclaim no more.
        a.compound(vec![NfsArgOp4::DelegPurge(DelegPurge4Args {
            clientid: a.clientid(),
        })])
        .await
        .unwrap();
        assert_eq!(
            failed_at(open_prev(&a, &p4.fh, None).await),
            (1, NfsStat4::Nfs4errReclaimBad)
        );
        a.reclaim_complete().await.unwrap();
        assert_eq!(
            failed_at(open_prev(&a, &root, Some("p2")).await),
            (1, NfsStat4::Nfs4errNoGrace)
        );
    })
    .await
}
