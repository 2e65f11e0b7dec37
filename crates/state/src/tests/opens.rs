//! Opens, share reservations, locks and the stateids of I/O.

use super::*;

#[test]
fn share_reservations_and_upgrade() {
    let f = Fixture::new();
    let (c1, _) = f.client("1");
    let (c2, _) = f.client("2");
    let o = Bytes::from_static(b"o");
    let s1 = f.st.open(c1, &o, &file(1), R, W).unwrap();
    assert_eq!(s1.seqid, 1);
    // deny write blocks a writer from another client
    assert_eq!(
        f.st.open(c2, &o, &file(1), W, 0),
        Err(NfsStat4::Nfs4errShareDenied)
    );
    // and is known to be refused before any recall (pynfs DELEG8)
    assert!(f.st.share_denied(c2, &file(1), W, 0));
    assert!(f.st.share_denied(c1, &file(1), W, 0));
    assert!(!f.st.share_denied(c2, &file(1), R, W));
    assert!(f.st.share_denied(c2, &file(1), R, R));
    assert!(!f.st.share_denied(c2, &file(2), W, 0));
    // and from another owner of the same client
    let o2 = Bytes::from_static(b"o2");
    assert_eq!(
        f.st.open(c1, &o2, &file(1), R | W, 0),
        Err(NfsStat4::Nfs4errShareDenied)
    );
    // nor from the owner itself (RFC 7530 §9.9: every open counts)
    assert_eq!(
        f.st.open(c1, &o, &file(1), W, 0),
        Err(NfsStat4::Nfs4errShareDenied)
    );
    // the same owner upgrades: same other, seqid 2
    let s2 = f.st.open(c1, &o, &file(1), R, 0).unwrap();
    assert_eq!((s2.other, s2.seqid), (s1.other, 2));
    assert_eq!(
        f.st.downgrade(c1, &s1, &file(1), R, 0),
        Err(NfsStat4::Nfs4errOldStateid)
    );
    assert_eq!(
        f.st.downgrade(c1, &s2, &file(2), R, 0),
        Err(NfsStat4::Nfs4errBadStateid)
    );
    // another client's stateid is unknown to it
    assert_eq!(
        f.st.close(c2, &s2, &file(1)),
        Err(NfsStat4::Nfs4errBadStateid)
    );
    // an expired holder yields
    f.advance_to(s(11));
    let (c3, _) = f.client("3");
    assert!(!f.st.share_denied(c3, &file(1), W, 0));
    assert!(f.st.open(c3, &o, &file(1), W, 0).is_ok());
    assert_eq!(f.st.client_count(), 2);
    assert_eq!(
        f.st.test_stateids(c1, &[s2])[0],
        NfsStat4::Nfs4errBadStateid
    );
}

#[test]
fn locks_close_and_free_stateid() {
    let f = Fixture::new();
    let (c1, _) = f.client("1");
    let (c2, _) = f.client("2");
    let o = Bytes::from_static(b"o");
    let open = f.st.open(c1, &o, &file(1), R | W, 0).unwrap();
    let ls = f
        .lock(c1, Some("lo"), open, &file(1), (0, u64::MAX), false)
        .unwrap();
    assert_eq!(ls.seqid, 1);
    let open2 = f.st.open(c2, &o, &file(1), R | W, 0).unwrap();
    assert_eq!(
        denied_by(f.lock(c2, Some("lo"), open2, &file(1), (10, 20), false)),
        c1
    );
    assert_eq!(
        f.st.close(c1, &open, &file(1)),
        Err(NfsStat4::Nfs4errLocksHeld)
    );
    assert_eq!(f.st.free_stateid(c1, &ls), Err(NfsStat4::Nfs4errLocksHeld));
    assert_eq!(
        f.st.free_stateid(c1, &open),
        Err(NfsStat4::Nfs4errLocksHeld)
    );
    let (ls2, _) = f.st.unlock(c1, &ls, &file(1), 0, u64::MAX).unwrap();
    assert_eq!(ls2.seqid, 2);
    // FREE_STATEID checks the seqid first (RFC 8881 §8.2.2): the
    // out-of-date one frees nothing, another client's is unknown.
    assert_eq!(f.st.free_stateid(c1, &ls), Err(NfsStat4::Nfs4errOldStateid));
    assert_eq!(
        f.st.free_stateid(c2, &ls2),
        Err(NfsStat4::Nfs4errBadStateid)
    );
    let newer = StateId4 { seqid: 3, ..ls2 };
    assert_eq!(
        f.st.free_stateid(c1, &newer),
        Err(NfsStat4::Nfs4errBadStateid)
    );
    assert_eq!(f.st.test_stateids(c1, &[ls2])[0], NfsStat4::Nfs4Ok);
    f.st.free_stateid(c1, &ls2).unwrap();
    assert_eq!(
        f.st.test_stateids(c1, &[ls2])[0],
        NfsStat4::Nfs4errBadStateid
    );
    // a lock stateid kept to CLOSE goes with its open
    let ls3 = f
        .lock(c1, Some("lo2"), open, &file(1), (100, 200), false)
        .unwrap();
    f.st.unlock(c1, &ls3, &file(1), 100, 200).unwrap();
    f.st.close(c1, &open, &file(1)).unwrap();
    assert_eq!(
        f.st.test_stateids(c1, &[ls3])[0],
        NfsStat4::Nfs4errBadStateid
    );
    // client 2 can lock now
    assert!(f
        .lock(c2, Some("lo"), open2, &file(1), (10, 20), false)
        .is_ok());
    // stateids of another server instance are stale
    let mut stale = open2;
    stale.other[..4].copy_from_slice(&8u32.to_be_bytes());
    assert_eq!(
        f.st.test_stateids(c2, &[stale])[0],
        NfsStat4::Nfs4errStaleStateid
    );
}

#[test]
fn lock_grace_and_openmode() {
    let f = Fixture::new();
    let x = f.exchange("a");
    f.st.create_session(f.session_req(x.clientid, x.sequenceid, 0))
        .unwrap();
    let c = x.clientid;
    let o = Bytes::from_static(b"o");
    let ro = f.st.open(c, &o, &file(1), R, 0).unwrap();
    // Before RECLAIM_COMPLETE only reclaims (§18.51.3).
    assert!(matches!(
        f.lock(c, Some("l"), ro, &file(1), (0, 1), false),
        Err(LockError::Status(NfsStat4::Nfs4errGrace))
    ));
    f.st.reclaim_complete(c).unwrap();
    assert_eq!(
        f.st.reclaim_complete(c),
        Err(NfsStat4::Nfs4errCompleteAlready)
    );
    // A write lock needs an open for writing.
    assert!(matches!(
        f.lock(c, Some("l"), ro, &file(1), (0, 1), false),
        Err(LockError::Status(NfsStat4::Nfs4errOpenmode))
    ));
}

#[test]
fn blocking_lock_waiters_go_first_until_stale() {
    let f = Fixture::new();
    let clients: Vec<_> = (1..=3).map(|n| f.client(&n.to_string())).collect();
    let ids: Vec<ClientId4> = clients.iter().map(|c| c.0).collect();
    let renew_all = || {
        for (_, sess) in &clients {
            f.st.sequence(sess).unwrap();
        }
    };
    let o = Bytes::from_static(b"o");
    let fl = file(1);
    let opens: Vec<StateId4> = ids
        .iter()
        .map(|c| f.st.open(*c, &o, &fl, R | W, 0).unwrap())
        .collect();
    let (a, b, c) = (ids[0], ids[1], ids[2]);
    let l1 = f
        .lock(a, Some("lo"), opens[0], &fl, (0, 100), false)
        .unwrap();
    // Client b blocks and is queued; client c (not blocking) is not.
    f.advance_to(s(1));
    assert_eq!(
        denied_by(f.lock(b, Some("lo"), opens[1], &fl, (0, 100), true)),
        a
    );
    assert_eq!(
        denied_by(f.lock(c, Some("lo"), opens[2], &fl, (50, 60), false)),
        a
    );
    // The holder may still re-lock what it holds.
    let l1 = f.lock(a, None, l1, &fl, (0, 100), false).unwrap();
    // a unlocks: b is told (once); c may not jump the queue, except
    // outside b's range.
    f.advance_to(s(2));
    let (_, notes) = f.st.unlock(a, &l1, &fl, 0, 100).unwrap();
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].owner.clientid, b);
    assert_eq!(
        denied_by(f.lock(c, Some("lo"), opens[2], &fl, (50, 60), false)),
        b
    );
    assert!(f
        .lock(c, Some("lo"), opens[2], &fl, (200, 300), false)
        .is_ok());
    // The waiter's retry is granted and leaves the queue.
    f.advance_to(s(3));
    let l2 = f
        .lock(b, Some("lo"), opens[1], &fl, (0, 100), true)
        .unwrap();
    // c now waits (blocking) behind b's lock...
    f.advance_to(s(4));
    let c_ls = match f.lock(c, Some("lo"), opens[2], &fl, (0, 10), true) {
        Err(LockError::Denied(h)) => h,
        other => panic!("{other:?}"),
    };
    assert_eq!(c_ls.owner.0, b);
    f.st.unlock(b, &l2, &fl, 0, 100).unwrap();
    // ...so a cannot take [0, 10) while c's entry is fresh...
    f.advance_to(s(13));
    renew_all();
    assert_eq!(
        denied_by(f.lock(a, Some("lo"), opens[0], &fl, (5, 6), false)),
        c
    );
    // ...but can once c has not retried for more than a lease.
    f.advance_to(s(15));
    renew_all();
    assert!(f.lock(a, Some("lo"), opens[0], &fl, (5, 6), false).is_ok());
}

#[test]
fn io_stateids() {
    let f = Fixture::new();
    let (c1, _) = f.client("1");
    let (c2, _) = f.client("2");
    let o = Bytes::from_static(b"o");
    // anonymous I/O is fine until someone denies it
    assert_eq!(
        f.st.check_io(c1, &StateId4::ANONYMOUS, &file(1), W),
        Ok(true)
    );
    let ro =
        f.st.open(c1, &o, &file(1), R, OPEN4_SHARE_DENY_WRITE)
            .unwrap();
    assert_eq!(
        f.st.check_io(c2, &StateId4::ANONYMOUS, &file(1), W),
        Err(NfsStat4::Nfs4errLocked)
    );
    assert_eq!(
        f.st.check_io(c2, &StateId4::ANONYMOUS, &file(1), R),
        Ok(true)
    );
    assert_eq!(
        f.st.check_io(c2, &StateId4::BYPASS, &file(1), W),
        Err(NfsStat4::Nfs4errLocked)
    );
    let bad = StateId4 {
        seqid: 5,
        ..StateId4::ANONYMOUS
    };
    assert_eq!(
        f.st.check_io(c1, &bad, &file(1), R),
        Err(NfsStat4::Nfs4errBadStateid)
    );
    // a read-only open may read, not write; other clients may not use it
    assert_eq!(f.st.check_io(c1, &ro, &file(1), R), Ok(false));
    assert_eq!(
        f.st.check_io(c1, &ro, &file(1), W),
        Err(NfsStat4::Nfs4errOpenmode)
    );
    assert_eq!(
        f.st.check_io(c2, &ro, &file(1), R),
        Err(NfsStat4::Nfs4errBadStateid)
    );
    assert_eq!(
        f.st.check_io(c1, &ro, &file(2), R),
        Err(NfsStat4::Nfs4errBadStateid)
    );
    // a write-only open may read too (§18.22.3 allows it)
    let wo = f.st.open(c2, &o, &file(2), W, 0).unwrap();
    assert_eq!(f.st.check_io(c2, &wo, &file(2), R), Ok(false));
    // a lock stateid carries its open's access
    let ls = f
        .lock(c2, Some("lo"), wo, &file(2), (0, 10), false)
        .unwrap();
    assert_eq!(f.st.check_io(c2, &ls, &file(2), W), Ok(false));
}
