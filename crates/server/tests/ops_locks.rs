//! Byte-range locks in process (RFC 8881 §18.10–§18.12, §9): LOCK,
//! LOCKT, LOCKU; blocking locks and CB_NOTIFY_LOCK (§9.6, §20.11) as
//! sent on the connection; leases running out on the manual clock.

mod common;

use std::time::Duration;

use common::*;
use server::nfs4::inproc::BackCall;

use NfsLockType4::{ReadLt, ReadwLt, WriteLt, WritewLt};

/// A file "f" opened for reading and writing by `s`: handle, open stateid.
async fn opened(h: &InProcess, s: &Session) -> (NfsFh4, StateId4) {
    open_new(h, s, "f", 0o666, b"0123456789").await
}

/// Locks `[offset, offset + length)` for a new lock owner `owner` of
/// `s`'s open `sid`; returns the reply.
async fn lock(
    h: &InProcess,
    s: &Session,
    fh: &NfsFh4,
    kind: NfsLockType4,
    range: (u64, u64),
    sid: StateId4,
    owner: &str,
) -> Compound4Res {
    h.seq(
        s,
        &[putfh(fh), lock_new(s, kind, range.0, range.1, sid, owner)],
    )
    .await
}

/// A client whose session has a back channel (for CB_NOTIFY_LOCK).
async fn client_with_callbacks(h: &InProcess, name: &str) -> Session {
    let opts = ClientOpts {
        flags: CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
        ..Default::default()
    };
    h.client_with(name, opts).await
}

/// Answers a CB_COMPOUND holding CB_SEQUENCE and CB_NOTIFY_LOCK.
fn answer_notify(h: &InProcess, call: &BackCall) {
    let args = call.cb_compound();
    let Some(NfsCbArgOp4::CbSequence(seq)) = args.argarray.first() else {
        panic!("CB_SEQUENCE first: {args:?}");
    };
    let res = CbCompound4Res {
        status: NfsStat4::Nfs4Ok,
        tag: Bytes::new(),
        resarray: vec![
            NfsCbResOp4::CbSequence(Res4::Ok(CbSequence4ResOk {
                sessionid: seq.sessionid,
                sequenceid: seq.sequenceid,
                slotid: seq.slotid,
                highest_slotid: 0,
                target_highest_slotid: 0,
            })),
            NfsCbResOp4::CbNotifyLock(Res4::Ok(())),
        ],
    };
    assert!(h.answer(call, vec![xdr::to_bytes(&res)]));
}

// ---------------------------------------------------------------------
// LOCK (§18.10)
// ---------------------------------------------------------------------

#[tokio::test]
async fn lock_grants_and_others_see_it() {
    let h = server();
    let a = h.client("a").await;
    let b_ = h.client("b").await;
    let (fh, sid) = opened(&h, &a).await;
    let r = lock(&h, &a, &fh, WriteLt, (2, 3), sid, "la").await;
    ok(&r);
    let lsid = lock_sid_at(&r, 2);
    assert_eq!(lsid.seqid, 1);
    assert_ne!(lsid.other, sid.other, "a stateid of its own");
    let r = h
        .seq(&b_, &[putfh(&fh), lockt(&b_, ReadLt, 0, 10, "lb")])
        .await;
    fails(&r, OpNum4::LockT, NfsStat4::Nfs4errDenied);
    let d = denied_at(&r, 2);
    assert_eq!((d.offset, d.length, d.locktype), (2, 3, WriteLt));
    assert_eq!(d.owner, owner(&a, "la"));
    // The same owner locks more with its lock stateid.
    let r = h
        .seq(&a, &[putfh(&fh), lock_more(WriteLt, 8, 2, lsid)])
        .await;
    ok(&r);
    let again = lock_sid_at(&r, 2);
    assert_eq!((again.other, again.seqid), (lsid.other, 2));
    let r = h
        .seq(&b_, &[putfh(&fh), lockt(&b_, WriteLt, 6, u64::MAX, "lb")])
        .await;
    assert_eq!(denied_at(&r, 2).offset, 8);
}

#[tokio::test]
async fn lock_conflicts_and_sharing() {
    let h = server();
    let a = h.client("a").await;
    let b_ = h.client("b").await;
    let (fh, asid) = opened(&h, &a).await;
    let bsid = open_existing(&h, &b_, &fh, "o", OPEN4_SHARE_ACCESS_BOTH, 0).await;
    ok(&lock(&h, &a, &fh, ReadLt, (0, 10), asid, "la").await);
    // Readers share...
    ok(&lock(&h, &b_, &fh, ReadLt, (5, 10), bsid, "lb").await);
    // ...a writer waits for both; a range past them is free.
    let r = lock(&h, &b_, &fh, WriteLt, (0, 1), bsid, "lb2").await;
    fails(&r, OpNum4::Lock, NfsStat4::Nfs4errDenied);
    let d = denied_at(&r, 2);
    assert_eq!((d.offset, d.length, d.locktype), (0, 10, ReadLt));
    assert_eq!(d.owner.clientid, a.clientid);
    ok(&lock(&h, &b_, &fh, WriteLt, (15, 1), bsid, "lb2").await);
    // Two owners of one client conflict like any others.
    let r = lock(&h, &a, &fh, WriteLt, (15, 1), asid, "la2").await;
    fails(&r, OpNum4::Lock, NfsStat4::Nfs4errDenied);
}

#[tokio::test]
async fn lock_by_an_owner_of_its_own_range_converts_it() {
    let h = server();
    let a = h.client("a").await;
    let b_ = h.client("b").await;
    let (fh, sid) = opened(&h, &a).await;
    let r = lock(&h, &a, &fh, WriteLt, (0, 10), sid, "la").await;
    let lsid = lock_sid_at(&r, 2);
    ok(&h
        .seq(&a, &[putfh(&fh), lock_more(ReadLt, 0, 10, lsid)])
        .await);
    // Now only a read lock: other readers may share it.
    let r = h
        .seq(&b_, &[putfh(&fh), lockt(&b_, ReadLt, 0, 10, "lb")])
        .await;
    ok(&r);
    let r = h
        .seq(&b_, &[putfh(&fh), lockt(&b_, WriteLt, 0, 10, "lb")])
        .await;
    fails(&r, OpNum4::LockT, NfsStat4::Nfs4errDenied);
}

#[tokio::test]
async fn lock_refuses_bad_ranges() {
    let h = server();
    let s = h.client("c").await;
    let (fh, sid) = opened(&h, &s).await;
    // Zero length, and a range past 2^64 - 1 (§18.10.3).
    for (offset, length) in [(0, 0), (u64::MAX, 2), (10, u64::MAX - 5)] {
        let r = lock(&h, &s, &fh, WriteLt, (offset, length), sid, "l").await;
        fails(&r, OpNum4::Lock, NfsStat4::Nfs4errInval);
    }
    // u64::MAX as length: to the end of the file, whatever its offset.
    ok(&lock(&h, &s, &fh, WriteLt, (10, u64::MAX), sid, "l").await);
}

#[tokio::test]
async fn lock_needs_an_open_allowing_it() {
    let h = server();
    let s = h.client("c").await;
    let fh = new_file(&h, &s, "f", 0o666, b"").await;
    let ro = open_existing(&h, &s, &fh, "reader", OPEN4_SHARE_ACCESS_READ, 0).await;
    let r = lock(&h, &s, &fh, WriteLt, (0, 1), ro, "l").await;
    fails(&r, OpNum4::Lock, NfsStat4::Nfs4errOpenmode);
    ok(&lock(&h, &s, &fh, ReadLt, (0, 1), ro, "l").await);
}

#[tokio::test]
async fn lock_stateid_errors() {
    let h = server();
    let s = h.client("c").await;
    let other = h.client("other").await;
    let (fh, first) = opened(&h, &s).await;
    let sid = open_existing(&h, &s, &fh, "o", OPEN4_SHARE_ACCESS_BOTH, 0).await;
    let g = new_file(&h, &s, "g", 0o666, b"").await;
    let r = lock(&h, &s, &fh, WriteLt, (0, 1), sid, "l").await;
    let lsid = lock_sid_at(&r, 2);
    let cases = [
        (
            vec![putfh(&fh), lock_new(&s, WriteLt, 5, 1, first, "m")],
            NfsStat4::Nfs4errOldStateid,
        ),
        (
            vec![putfh(&fh), lock_new(&s, WriteLt, 5, 1, unknown(sid), "m")],
            NfsStat4::Nfs4errBadStateid,
        ),
        (
            vec![putfh(&fh), lock_new(&s, WriteLt, 5, 1, stale(sid), "m")],
            NfsStat4::Nfs4errStaleStateid,
        ),
        // The open of another file.
        (
            vec![putfh(&g), lock_new(&s, WriteLt, 5, 1, sid, "m")],
            NfsStat4::Nfs4errBadStateid,
        ),
        // An open stateid where a lock stateid belongs, and the reverse.
        (
            vec![putfh(&fh), lock_more(WriteLt, 5, 1, sid)],
            NfsStat4::Nfs4errBadStateid,
        ),
        (
            vec![putfh(&fh), lock_new(&s, WriteLt, 5, 1, lsid, "m")],
            NfsStat4::Nfs4errBadStateid,
        ),
        (
            vec![lock_new(&s, WriteLt, 5, 1, sid, "m")],
            NfsStat4::Nfs4errNofilehandle,
        ),
    ];
    for (ops, status) in cases {
        let r = h.seq(&s, &ops).await;
        fails(&r, OpNum4::Lock, status);
    }
    let r = h
        .seq(
            &other,
            &[putfh(&fh), lock_new(&other, WriteLt, 5, 1, sid, "m")],
        )
        .await;
    fails(&r, OpNum4::Lock, NfsStat4::Nfs4errBadStateid);
    // None of these locked anything.
    let r = h
        .seq(
            &other,
            &[putfh(&fh), lockt(&other, WriteLt, 1, u64::MAX, "x")],
        )
        .await;
    ok(&r);
}

#[tokio::test]
async fn lock_before_reclaim_complete_is_grace_except_reclaims() {
    let h = restarted_server(&["rebooted"]);
    let opts = ClientOpts {
        reclaim_complete: false,
        ..Default::default()
    };
    let g = h.client_with("rebooted", opts).await;
    let root = root_fh(&h, &g).await;
    let fh = lookup_fh(&h, &g, &root, "f").await;
    let previous = open(
        &g,
        "o",
        OPEN4_SHARE_ACCESS_BOTH,
        0,
        OpenFlag4::NoCreate,
        OpenClaim4::Previous(OpenDelegationType4::OpenDelegateNone),
    );
    let r = h.seq(&g, &[putfh(&fh), previous]).await;
    ok(&r);
    let sid = sid_at(&r, 2);
    let reclaim = |reclaim| {
        NfsArgOp4::Lock(Lock4Args {
            locktype: WriteLt,
            reclaim,
            offset: 0,
            length: 1,
            locker: Locker4::OpenOwner(OpenToLockOwner4 {
                open_seqid: 0,
                open_stateid: sid,
                lock_seqid: 0,
                lock_owner: owner(&g, "l"),
            }),
        })
    };
    let r = h.seq(&g, &[putfh(&fh), reclaim(false)]).await;
    fails(&r, OpNum4::Lock, NfsStat4::Nfs4errGrace);
    ok(&h.seq(&g, &[putfh(&fh), reclaim(true)]).await);
    // A lock test waits for the grace period too: a lock may not be
    // reclaimed yet.
    let r = h
        .seq(&g, &[putfh(&fh), lockt(&g, WriteLt, 0, 1, "x")])
        .await;
    fails(&r, OpNum4::LockT, NfsStat4::Nfs4errGrace);
    let rc = NfsArgOp4::ReclaimComplete(ReclaimComplete4Args { one_fs: false });
    ok(&h.seq(&g, &[rc]).await);
    let r = h.seq(&g, &[putfh(&fh), reclaim(true)]).await;
    fails(&r, OpNum4::Lock, NfsStat4::Nfs4errNoGrace);
}

// ---------------------------------------------------------------------
// LOCKT (§18.11)
// ---------------------------------------------------------------------

#[tokio::test]
async fn lockt_ignores_the_owners_own_locks() {
    let h = server();
    let s = h.client("c").await;
    let (fh, sid) = opened(&h, &s).await;
    ok(&h
        .seq(&s, &[putfh(&fh), lockt(&s, WriteLt, 0, 10, "l")])
        .await);
    ok(&lock(&h, &s, &fh, WriteLt, (0, 10), sid, "l").await);
    ok(&h
        .seq(&s, &[putfh(&fh), lockt(&s, WriteLt, 0, 10, "l")])
        .await);
    let r = h.seq(&s, &[putfh(&fh), lockt(&s, ReadLt, 9, 1, "m")]).await;
    assert_eq!(denied_at(&r, 2).owner, owner(&s, "l"));
    // LOCKT takes nothing.
    ok(&h
        .seq(&s, &[putfh(&fh), lockt(&s, WriteLt, 10, 10, "m")])
        .await);
    ok(&lock(&h, &s, &fh, WriteLt, (10, 10), sid, "n").await);
}

#[tokio::test]
async fn lockt_errors() {
    let h = server();
    let s = h.client("c").await;
    let fh = new_file(&h, &s, "f", 0o644, b"").await;
    let cases = [
        (
            vec![putfh(&fh), lockt(&s, WriteLt, 0, 0, "l")],
            NfsStat4::Nfs4errInval,
        ),
        (
            vec![putfh(&fh), lockt(&s, WriteLt, u64::MAX, 2, "l")],
            NfsStat4::Nfs4errInval,
        ),
        (
            vec![putroot(), lockt(&s, WriteLt, 0, 1, "l")],
            NfsStat4::Nfs4errIsdir,
        ),
        (
            vec![lockt(&s, WriteLt, 0, 1, "l")],
            NfsStat4::Nfs4errNofilehandle,
        ),
    ];
    for (ops, status) in cases {
        let r = h.seq(&s, &ops).await;
        fails(&r, OpNum4::LockT, status);
    }
    let r = h
        .seq(
            &s,
            &[putroot(), symlink("l", "f"), lockt(&s, WriteLt, 0, 1, "l")],
        )
        .await;
    fails(&r, OpNum4::LockT, NfsStat4::Nfs4errSymlink);
}

// ---------------------------------------------------------------------
// LOCKU (§18.12)
// ---------------------------------------------------------------------

#[tokio::test]
async fn locku_releases_the_range() {
    let h = server();
    let a = h.client("a").await;
    let b_ = h.client("b").await;
    let (fh, sid) = opened(&h, &a).await;
    let r = lock(&h, &a, &fh, WriteLt, (0, 30), sid, "la").await;
    let lsid = lock_sid_at(&r, 2);
    // Unlocking the middle leaves two locks.
    let r = h.seq(&a, &[putfh(&fh), locku(lsid, 10, 10)]).await;
    ok(&r);
    let after = resok!(r, 2, LockU);
    assert_eq!((after.other, after.seqid), (lsid.other, lsid.seqid + 1));
    ok(&h
        .seq(&b_, &[putfh(&fh), lockt(&b_, WriteLt, 10, 10, "lb")])
        .await);
    let r = h
        .seq(&b_, &[putfh(&fh), lockt(&b_, WriteLt, 15, 10, "lb")])
        .await;
    assert_eq!(denied_at(&r, 2).offset, 20);
    // With the current stateid LOCK just returned.
    let r = h
        .seq(
            &a,
            &[
                putfh(&fh),
                lock_more(WriteLt, 40, 1, after),
                locku(StateId4::CURRENT, 0, u64::MAX),
            ],
        )
        .await;
    ok(&r);
    ok(&h
        .seq(&b_, &[putfh(&fh), lockt(&b_, WriteLt, 0, u64::MAX, "lb")])
        .await);
}

#[tokio::test]
async fn locku_errors() {
    let h = server();
    let s = h.client("c").await;
    let other = h.client("other").await;
    let (fh, sid) = opened(&h, &s).await;
    let r = lock(&h, &s, &fh, WriteLt, (0, 10), sid, "l").await;
    let lsid = lock_sid_at(&r, 2);
    let r = h
        .seq(&s, &[putfh(&fh), lock_more(WriteLt, 20, 1, lsid)])
        .await;
    let newer = lock_sid_at(&r, 2);
    let cases = [
        (locku(sid, 0, 10), NfsStat4::Nfs4errBadStateid),
        (locku(lsid, 0, 10), NfsStat4::Nfs4errOldStateid),
        (
            locku(seq_moved(newer, 1), 0, 10),
            NfsStat4::Nfs4errBadStateid,
        ),
        (locku(unknown(newer), 0, 10), NfsStat4::Nfs4errBadStateid),
        (locku(stale(newer), 0, 10), NfsStat4::Nfs4errStaleStateid),
        (locku(newer, 0, 0), NfsStat4::Nfs4errInval),
        (locku(newer, u64::MAX, 2), NfsStat4::Nfs4errInval),
    ];
    for (op, status) in cases {
        let r = h.seq(&s, &[putfh(&fh), op]).await;
        fails(&r, OpNum4::LockU, status);
    }
    let r = h.seq(&s, &[locku(newer, 0, 10)]).await;
    fails(&r, OpNum4::LockU, NfsStat4::Nfs4errNofilehandle);
    let r = h.seq(&other, &[putfh(&fh), locku(newer, 0, 10)]).await;
    fails(&r, OpNum4::LockU, NfsStat4::Nfs4errBadStateid);
    let r = h
        .seq(&other, &[putfh(&fh), lockt(&other, WriteLt, 0, 10, "x")])
        .await;
    fails(&r, OpNum4::LockT, NfsStat4::Nfs4errDenied);
}

// ---------------------------------------------------------------------
// Blocking locks and CB_NOTIFY_LOCK (§9.6, §20.11)
// ---------------------------------------------------------------------

#[tokio::test]
async fn blocking_lock_waiter_is_notified_and_goes_first() {
    let h = server();
    let a = h.client("a").await;
    let b_ = client_with_callbacks(&h, "b").await;
    let c = h.client("c").await;
    let (fh, asid) = opened(&h, &a).await;
    let bsid = open_existing(&h, &b_, &fh, "o", OPEN4_SHARE_ACCESS_BOTH, 0).await;
    let csid = open_existing(&h, &c, &fh, "o", OPEN4_SHARE_ACCESS_BOTH, 0).await;
    let r = lock(&h, &a, &fh, WriteLt, (0, 10), asid, "la").await;
    let alock = lock_sid_at(&r, 2);
    let r = lock(&h, &b_, &fh, WritewLt, (0, 10), bsid, "lb").await;
    fails(&r, OpNum4::Lock, NfsStat4::Nfs4errDenied);
    assert!(h.try_back_call().await.is_none(), "nothing to tell yet");
    ok(&h.seq(&a, &[putfh(&fh), locku(alock, 0, 10)]).await);
    let call = h.next_back_call().await;
    let args = call.cb_compound();
    match &args.argarray[..] {
        [NfsCbArgOp4::CbSequence(seq), NfsCbArgOp4::CbNotifyLock(n)] => {
            assert_eq!(seq.sessionid, b_.sessionid);
            assert_eq!(n.fh, fh);
            assert_eq!(n.lock_owner, owner(&b_, "lb"));
        }
        other => panic!("not CB_SEQUENCE, CB_NOTIFY_LOCK: {other:?}"),
    }
    answer_notify(&h, &call);
    // The range is free, but b waits for it: c may not take it first.
    let r = lock(&h, &c, &fh, WriteLt, (5, 1), csid, "lc").await;
    fails(&r, OpNum4::Lock, NfsStat4::Nfs4errDenied);
    assert_eq!(denied_at(&r, 2).owner, owner(&b_, "lb"));
    ok(&lock(&h, &b_, &fh, WritewLt, (0, 10), bsid, "lb").await);
    // c's own blocking request does not overtake either.
    let r = lock(&h, &c, &fh, ReadwLt, (5, 1), csid, "lc").await;
    fails(&r, OpNum4::Lock, NfsStat4::Nfs4errDenied);
    assert_eq!(denied_at(&r, 2).owner, owner(&b_, "lb"));
}

#[tokio::test]
async fn blocking_lock_waiter_that_stops_asking_is_forgotten() {
    let h = server();
    let a = h.client("a").await;
    let b_ = h.client("b").await;
    let c = h.client("c").await;
    let (fh, asid) = opened(&h, &a).await;
    let bsid = open_existing(&h, &b_, &fh, "o", OPEN4_SHARE_ACCESS_BOTH, 0).await;
    let csid = open_existing(&h, &c, &fh, "o", OPEN4_SHARE_ACCESS_BOTH, 0).await;
    let r = lock(&h, &a, &fh, WriteLt, (0, 10), asid, "la").await;
    let alock = lock_sid_at(&r, 2);
    let r = lock(&h, &b_, &fh, WritewLt, (0, 10), bsid, "lb").await;
    fails(&r, OpNum4::Lock, NfsStat4::Nfs4errDenied);
    ok(&h.seq(&a, &[putfh(&fh), locku(alock, 0, 10)]).await);
    // b's session has no back channel: nothing is sent.
    assert!(h.try_back_call().await.is_none());
    let r = lock(&h, &c, &fh, WriteLt, (0, 1), csid, "lc").await;
    fails(&r, OpNum4::Lock, NfsStat4::Nfs4errDenied);
    // A lease later b has not asked again: its place is given up.
    h.advance(LEASE + Duration::from_secs(1));
    ok(&h.seq(&b_, &[]).await);
    ok(&lock(&h, &c, &fh, WriteLt, (0, 1), csid, "lc").await);
}

// ---------------------------------------------------------------------
// Leases (§8.3, §8.4.3)
// ---------------------------------------------------------------------

#[tokio::test]
async fn locks_of_a_client_renewing_its_lease_hold() {
    let h = server();
    let a = h.client("a").await;
    let b_ = h.client("b").await;
    let (fh, asid) = opened(&h, &a).await;
    let bsid = open_existing(&h, &b_, &fh, "o", OPEN4_SHARE_ACCESS_BOTH, 0).await;
    ok(&lock(&h, &a, &fh, WriteLt, (0, 10), asid, "la").await);
    for _ in 0..6 {
        h.advance(LEASE / 2);
        ok(&h.seq(&a, &[]).await);
        let r = lock(&h, &b_, &fh, WriteLt, (0, 10), bsid, "lb").await;
        fails(&r, OpNum4::Lock, NfsStat4::Nfs4errDenied);
    }
    assert_eq!(h.srv.state().reap(), 0);
}

#[tokio::test]
async fn locks_of_an_expired_client_yield_to_a_conflict() {
    let h = server();
    let a = h.client("a").await;
    let b_ = h.client("b").await;
    let (fh, asid) = opened(&h, &a).await;
    let bsid = open_existing(&h, &b_, &fh, "o", OPEN4_SHARE_ACCESS_BOTH, 0).await;
    ok(&lock(&h, &a, &fh, WriteLt, (0, 10), asid, "la").await);
    h.advance(LEASE + Duration::from_secs(1));
    ok(&h.seq(&b_, &[]).await);
    // a's lease ran out: LOCKT and LOCK of b no longer meet its lock.
    ok(&h
        .seq(&b_, &[putfh(&fh), lockt(&b_, WriteLt, 0, 10, "lb")])
        .await);
    ok(&lock(&h, &b_, &fh, WriteLt, (0, 10), bsid, "lb").await);
    // a lost all its state with it.
    let r = h.seq(&a, &[]).await;
    fails(&r, OpNum4::Sequence, NfsStat4::Nfs4errBadsession);
    let cs = NfsArgOp4::CreateSession(CreateSession4Args {
        clientid: a.clientid,
        sequence: 2,
        flags: 0,
        fore_chan_attrs: a.fore,
        back_chan_attrs: a.fore,
        cb_program: 1,
        sec_parms: vec![CallbackSecParms4::AuthNone],
    });
    let r = h.compound(&root_auth(), &[cs]).await;
    fails(&r, OpNum4::CreateSession, NfsStat4::Nfs4errStaleClientid);
}

#[tokio::test]
async fn an_expired_client_without_conflicts_keeps_its_locks_until_reaped() {
    let h = server();
    let a = h.client("a").await;
    let b_ = h.client("b").await;
    let (fh, asid) = opened(&h, &a).await;
    let r = lock(&h, &a, &fh, WriteLt, (0, 10), asid, "la").await;
    let alock = lock_sid_at(&r, 2);
    // A courtesy client (§8.4.3): expired, nobody wanted its locks.
    h.advance(LEASE + Duration::from_secs(1));
    assert_eq!(h.srv.state().reap(), 0);
    ok(&h.seq(&a, &[putfh(&fh), locku(alock, 0, 5)]).await);
    // Silent for two leases it still holds them (a courtesy client keeps
    // its state for a day while nobody conflicts); after that it goes.
    h.advance(LEASE * 2 + Duration::from_secs(1));
    ok(&h.seq(&b_, &[]).await);
    assert_eq!(h.srv.state().reap(), 0);
    h.advance(state::DEFAULT_COURTESY);
    ok(&h.seq(&b_, &[]).await);
    assert_eq!(h.srv.state().reap(), 1);
    let r = h.seq(&a, &[]).await;
    fails(&r, OpNum4::Sequence, NfsStat4::Nfs4errBadsession);
    ok(&h
        .seq(&b_, &[putfh(&fh), lockt(&b_, WriteLt, 0, 10, "lb")])
        .await);
}
