//! Delegations (RFC 8881 §10.2, §10.4.6) and directory delegations (§10.9).

use super::grace::restarted;
use super::*;

// Delegations (RFC 8881 §10.2, §10.4.6).

pub(super) fn deleg_fixture() -> Fixture {
    let clock = Arc::new(ManualClock::default());
    let st = State::new(7, L, clock.clone()).with_max_delegations(100);
    Fixture { clock, st }
}

/// The open owner delegations are granted to here.
pub(super) fn ow() -> Bytes {
    Bytes::from_static(b"o")
}

pub(super) fn fh(n: u8) -> Bytes {
    Bytes::copy_from_slice(&[n; 4])
}

#[test]
fn a_read_delegation_is_granted_once_and_not_beside_a_writer() {
    let f = deleg_fixture();
    let (a, _) = f.client("a");
    let (b, _) = f.client("b");
    let o = Bytes::from_static(b"o");
    f.st.open(a, &o, &file(1), R, 0).unwrap();
    let d =
        f.st.offer_delegation(&(a, ow()), &file(1), fh(1), (false, false), None)
            .unwrap();
    assert!(f.st.delegations_outstanding());
    assert_eq!(f.st.test_stateids(a, &[d]), vec![NfsStat4::Nfs4Ok]);
    assert_eq!(
        f.st.offer_delegation(&(a, ow()), &file(1), fh(1), (false, false), None),
        Err(WhyNoDelegation4::Wnd4NotSuppUpgrade),
        "a second delegation of the same file"
    );
    // Another client's reader may have one too; not beside a writer.
    f.st.open(b, &o, &file(1), R, 0).unwrap();
    assert!(f
        .st
        .offer_delegation(&(b, ow()), &file(1), fh(1), (false, false), None)
        .is_ok());
    f.st.open(b, &o, &file(2), W, 0).unwrap();
    f.st.open(a, &o, &file(2), R, 0).unwrap();
    assert_eq!(
        f.st.offer_delegation(&(a, ow()), &file(2), fh(2), (false, false), None),
        Err(WhyNoDelegation4::Wnd4Contention)
    );
    // Nor beside the client's own writer.
    f.st.open(a, &o, &file(3), R | W, 0).unwrap();
    assert_eq!(
        f.st.offer_delegation(&(a, ow()), &file(3), fh(3), (false, false), None),
        Err(WhyNoDelegation4::Wnd4Contention)
    );
    // The stateid reads, and does not write; it is state still held.
    assert_eq!(f.st.check_io(a, &d, &file(1), R), Ok(false));
    assert_eq!(
        f.st.check_io(a, &d, &file(1), W),
        Err(NfsStat4::Nfs4errOpenmode)
    );
    assert_eq!(f.st.free_stateid(a, &d), Err(NfsStat4::Nfs4errLocksHeld));
    // None at all when the server holds none.
    let g = Fixture::new();
    let (c, _) = g.client("c");
    assert_eq!(
        g.st.offer_delegation(&(c, ow()), &file(1), fh(1), (false, false), None),
        Err(WhyNoDelegation4::Wnd4Resource)
    );
}

#[test]
fn a_conflict_recalls_once_waits_for_the_return_and_cools_the_file() {
    let f = deleg_fixture();
    let (a, _) = f.client("a");
    let (b, _) = f.client("b");
    let d =
        f.st.offer_delegation(&(a, ow()), &file(1), fh(1), (false, false), None)
            .unwrap();
    {
        let mut t = f.st.lock_tables();
        let (recall, pending) =
            t.deleg_conflicts(&file(1), &Breaker::Opener((b, ow())), false, f.clock.now());
        assert_eq!(recall.len(), 1);
        assert_eq!((recall[0].0, recall[0].1, &recall[0].2), (a, d, &fh(1)));
        assert!(pending);
        // Recalled once; still in the way.
        let (recall, pending) =
            t.deleg_conflicts(&file(1), &Breaker::Opener((b, ow())), false, f.clock.now());
        assert!(recall.is_empty() && pending);
        // The holder's own OPEN is no conflict; under another open owner,
        // or a change, is.
        assert!(
            !t.deleg_conflicts(&file(1), &Breaker::Opener((a, ow())), false, f.clock.now())
                .1
        );
        // One by another owner of the same client does (another mount of
        // it, with a cache of its own).
        let other = (a, Bytes::from_static(b"p"));
        assert!(
            t.deleg_conflicts(
                &file(1),
                &Breaker::Opener(other.clone()),
                false,
                f.clock.now()
            )
            .1
        );
        assert!(
            t.deleg_conflicts(&file(1), &Breaker::Anyone, false, f.clock.now())
                .1
        );
    }
    // Returned: nothing in the way, and the file is in contention for a
    // while.
    assert_eq!(
        f.st.delegreturn(b, &d, &file(1)),
        Err(NfsStat4::Nfs4errBadStateid),
        "another client's delegation"
    );
    f.st.delegreturn(a, &d, &file(1)).unwrap();
    assert!(!f.st.delegations_outstanding());
    assert!(
        !f.st
            .break_delegations(&file(1), &Breaker::Opener((b, ow())), false)
            .pending
    );
    assert_eq!(
        f.st.test_stateids(a, &[d]),
        vec![NfsStat4::Nfs4errBadStateid]
    );
    assert_eq!(
        f.st.offer_delegation(&(a, ow()), &file(1), fh(1), (false, false), None),
        Err(WhyNoDelegation4::Wnd4Contention)
    );
    f.advance_to(tables::CONFLICT_QUIET + s(1));
    f.st.sequence(&f.client("c").1).unwrap();
    f.st.reap();
    assert!(f
        .st
        .offer_delegation(&(a, ow()), &file(1), fh(1), (false, false), None)
        .is_ok());
}

/// Whether an OPEN for writing of file 1 by `b` still waits for a
/// delegation's return (a recall is out).
fn conflict_pending(f: &Fixture, b: ClientId4) -> bool {
    let mut t = f.st.lock_tables();
    let now = f.clock.now();
    t.deleg_conflicts(&file(1), &Breaker::Opener((b, ow())), false, now)
        .1
}

#[test]
fn a_delegation_kept_a_lease_past_its_recall_is_revoked_until_freed() {
    let f = deleg_fixture();
    let (a, sa) = f.client("a");
    let (b, sb) = f.client("b");
    let d =
        f.st.offer_delegation(&(a, ow()), &file(1), fh(1), (false, false), None)
            .unwrap();
    let pending = |f: &Fixture| conflict_pending(f, b);
    assert!(pending(&f));
    // Both clients keep renewing; the holder never returns it.
    for t in [4, 8, 10] {
        f.advance_to(s(t));
        f.st.sequence(&sa).unwrap();
        f.st.sequence(&sb).unwrap();
        assert_eq!(f.st.reap(), 0);
        assert!(pending(&f), "revoked before a lease at {t} s");
    }
    f.advance_to(L + s(1));
    f.st.sequence(&sa).unwrap();
    f.st.sequence(&sb).unwrap();
    assert_eq!(f.st.reap(), 0, "its client stays");
    assert!(!pending(&f));
    assert!(!f.st.delegations_outstanding());
    let session = f.st.session(&sa).unwrap();
    assert!(session.lease.has_revoked());
    assert_eq!(
        f.st.test_stateids(a, &[d]),
        vec![NfsStat4::Nfs4errDelegRevoked]
    );
    assert_eq!(
        f.st.check_io(a, &d, &file(1), R),
        Err(NfsStat4::Nfs4errDelegRevoked)
    );
    assert_eq!(
        f.st.delegreturn(a, &d, &file(1)),
        Err(NfsStat4::Nfs4errDelegRevoked)
    );
    f.st.free_stateid(a, &d).unwrap();
    assert!(!session.lease.has_revoked());
    assert_eq!(
        f.st.test_stateids(a, &[d]),
        vec![NfsStat4::Nfs4errBadStateid]
    );
}

#[test]
fn an_unanswered_recall_restarts_the_lease_before_revocation() {
    let f = deleg_fixture();
    let (a, sa) = f.client("a");
    let (b, sb) = f.client("b");
    let d =
        f.st.offer_delegation(&(a, ow()), &file(1), fh(1), (false, false), None)
            .unwrap();
    let pending = |f: &Fixture| conflict_pending(f, b);
    assert!(pending(&f));
    // The callback path fails 5 s into the recall (an NFSv4.0 holder's
    // CB_RECALL timed out): a lease from then, not from the recall.
    f.advance_to(s(5));
    assert!(f.st.recall_unanswered40(&d));
    assert!(!f.st.recall_unanswered40(&StateId4 {
        seqid: 1,
        other: [9; 12]
    }));
    for t in [L + s(1), L + s(4)] {
        f.advance_to(t);
        f.st.sequence(&sa).unwrap();
        f.st.sequence(&sb).unwrap();
        f.st.reap();
        assert!(pending(&f), "revoked a lease after the recall");
    }
    f.advance_to(L + s(6));
    f.st.sequence(&sa).unwrap();
    f.st.sequence(&sb).unwrap();
    f.st.reap();
    assert!(!pending(&f), "kept past a lease after the path failed");
}

#[test]
fn holders_that_cannot_be_called_back_or_have_expired_do_not_hold_others_up() {
    let f = deleg_fixture();
    let (a, sa) = f.client("a");
    let (b, sb) = f.client("b");
    let (c, _) = f.client("c");
    // The fixture's sessions have no back channel: a recall cannot be
    // sent, so the delegation is revoked at once.
    let d =
        f.st.offer_delegation(&(a, ow()), &file(1), fh(1), (false, false), None)
            .unwrap();
    let br =
        f.st.break_delegations(&file(1), &Breaker::Opener((b, ow())), false);
    assert!(br.recalls.is_empty() && !br.pending);
    assert_eq!(
        f.st.test_stateids(a, &[d]),
        vec![NfsStat4::Nfs4errDelegRevoked]
    );
    // A courtesy client's delegation goes with the client (§8.4.3).
    f.st.offer_delegation(&(c, ow()), &file(2), fh(2), (false, false), None)
        .unwrap();
    f.advance_to(L + s(1));
    f.st.sequence(&sa).unwrap();
    f.st.sequence(&sb).unwrap();
    let mut t = f.st.lock_tables();
    let now = f.clock.now();
    assert_eq!(
        t.deleg_conflicts(&file(2), &Breaker::Opener((b, ow())), false, now),
        (Vec::new(), false)
    );
    assert!(!t.clients.contains_key(&c));
    assert_eq!(t.delegs, 0);
}

/// In the grace period after a restart, a client reclaiming an open that
/// had a read delegation gets it back (§10.2.1); nobody gets a new one.
#[test]
fn a_delegation_is_reclaimed_in_the_grace_period_and_none_is_new() {
    let Fixture { clock, st } = restarted();
    let f = Fixture {
        clock,
        st: st.with_max_delegations(10),
    };
    let a = f.reclaiming("a");
    assert_eq!(
        f.st.offer_delegation(&(a, ow()), &file(1), fh(1), (false, false), None),
        Err(WhyNoDelegation4::Wnd4Contention),
        "a new delegation in the grace period"
    );
    let d =
        f.st.offer_delegation(&(a, ow()), &file(1), fh(1), (false, true), None)
            .unwrap();
    assert_eq!(f.st.test_stateids(a, &[d]), vec![NfsStat4::Nfs4Ok]);
}

#[test]
fn a_write_delegation_is_exclusive_and_spares_its_holders_io() {
    let f = deleg_fixture();
    let (a, _) = f.client("a");
    let (b, _) = f.client("b");
    let o = ow();
    let open = f.st.open(a, &o, &file(1), R | W, 0).unwrap();
    // Another open owner of the same client has it open: no write
    // delegation (it may be another cache on the client).
    f.st.open(a, &Bytes::from_static(b"p"), &file(2), R, 0)
        .unwrap();
    f.st.open(a, &o, &file(2), R | W, 0).unwrap();
    assert_eq!(
        f.st.offer_delegation(&(a, ow()), &file(2), fh(2), (true, false), None),
        Err(WhyNoDelegation4::Wnd4Contention)
    );
    let d =
        f.st.offer_delegation(&(a, ow()), &file(1), fh(1), (true, false), None)
            .unwrap();
    assert!(f.st.write_delegations_outstanding());
    // Its stateid reads and writes.
    assert_eq!(f.st.check_io(a, &d, &file(1), W), Ok(false));
    // Nothing else beside it: another client's read delegation.
    f.st.open(b, &o, &file(1), R, 0).unwrap();
    assert_eq!(
        f.st.offer_delegation(&(b, ow()), &file(1), fh(1), (false, false), None),
        Err(WhyNoDelegation4::Wnd4Contention)
    );
    let now = f.clock.now();
    let mut t = f.st.lock_tables();
    // The holder's I/O, under the delegation or its open, is no conflict;
    // a read by anyone else is, and any change by another.
    for sid in [d, open] {
        assert!(
            !t.deleg_conflicts(&file(1), &Breaker::Io(a, sid), false, now)
                .1
        );
        assert!(
            !t.deleg_conflicts(&file(1), &Breaker::Io(a, sid), true, now)
                .1
        );
    }
    // One CB_GETATTR at a time, and none once it is recalled.
    assert!(t.begin_cb_getattr(&d.other));
    assert!(!t.begin_cb_getattr(&d.other));
    t.end_cb_getattr(&d.other);
    assert!(t.begin_cb_getattr(&d.other));
    t.end_cb_getattr(&d.other);
    let (recall, pending) = t.deleg_conflicts(&file(1), &Breaker::Opener((b, ow())), true, now);
    assert!(pending);
    assert_eq!((recall.len(), recall[0].1), (1, d));
    assert!(t.deleg_conflicts(&file(1), &Breaker::Anyone, false, now).1);
    assert!(!t.begin_cb_getattr(&d.other));
    // CB_GETATTR's findings are kept with it.
    let (holder, sid, wire, seen, _) = t.write_deleg(&file(1)).unwrap();
    assert_eq!((holder, sid, wire, seen), (a, d, fh(1), None));
    let s = CbSeen {
        client_change: 5,
        change: 9,
        size: 10,
        mtime: NfsTime4 {
            seconds: 1,
            nseconds: 2,
        },
    };
    t.set_cb_seen(&d.other, s);
    assert_eq!(t.write_deleg(&file(1)).unwrap().3, Some(s));
    drop(t);
    // Returned: no write delegation left, and reads conflict with nothing.
    f.st.delegreturn(a, &d, &file(1)).unwrap();
    assert!(!f.st.write_delegations_outstanding());
    assert!(f.st.write_delegation(&file(1)).is_none());
    assert!(
        !f.st
            .break_delegations(&file(1), &Breaker::Anyone, true)
            .pending
    );
}

#[test]
fn a_read_delegation_does_not_conflict_with_reads() {
    let f = deleg_fixture();
    let (a, _) = f.client("a");
    let (b, _) = f.client("b");
    f.st.offer_delegation(&(a, ow()), &file(1), fh(1), (false, false), None)
        .unwrap();
    let now = f.clock.now();
    let mut t = f.st.lock_tables();
    assert!(!t.deleg_conflicts(&file(1), &Breaker::Anyone, true, now).1);
    assert!(
        !t.deleg_conflicts(&file(1), &Breaker::Opener((b, ow())), true, now)
            .1
    );
    // The holder's own write recalls its read delegation.
    let sid = t
        .grant_deleg(b, &ow(), &file(1), fh(1), (false, false), None, now)
        .unwrap();
    assert!(
        t.deleg_conflicts(&file(1), &Breaker::Io(b, sid), false, now)
            .1
    );
}

#[test]
fn a_directory_delegation_is_told_of_what_it_asked_and_recalled_for_the_rest() {
    let f = deleg_fixture();
    let (a, _) = f.client("a");
    let (b, _) = f.client("b");
    let watch = DirWatch {
        types: 1 << NotifyType4::AddEntry as u32,
        ..Default::default()
    };
    let d =
        f.st.offer_dir_delegation(a, &file(9), fh(9), watch)
            .unwrap();
    let note = |_: &DirWatch| Notify4::one(NotifyType4::AddEntry as u32, &1u32);
    let now = f.clock.now();
    let mut t = f.st.lock_tables();
    // Its own client's changes: neither told nor recalled.
    assert!(
        !t.dir_conflicts(&file(9), a, NotifyType4::RemoveEntry, now)
            .1
    );
    assert!(t
        .dir_notify(&file(9), a, NotifyType4::AddEntry, &note, now)
        .start
        .is_empty());
    assert!(!t.dir_watched(&file(9), a, NotifyType4::AddEntry));
    assert!(t.dir_watched(&file(9), b, NotifyType4::AddEntry));
    // Another's addition is queued (one sender), a second one too.
    let n = t.dir_notify(&file(9), b, NotifyType4::AddEntry, &note, now);
    assert_eq!(n.start, vec![(a, d.other)]);
    assert!(t
        .dir_notify(&file(9), b, NotifyType4::AddEntry, &note, now)
        .start
        .is_empty());
    // As many as the budget holds, one at least (each takes 20 bytes).
    t.dir_notify(&file(9), b, NotifyType4::AddEntry, &note, now);
    let (_, _, notes) = t.take_dir_notes(&d.other, 1).unwrap();
    assert_eq!(notes.len(), 1);
    let (sid, wire, notes) = t.take_dir_notes(&d.other, usize::MAX).unwrap();
    assert_eq!((sid, wire, notes.len()), (d, fh(9), 2));
    assert!(
        t.take_dir_notes(&d.other, usize::MAX).is_none(),
        "the sender stops"
    );
    // Nor is it in the way of changes of files, or of I/O on it.
    assert!(
        !t.deleg_conflicts(&file(9), &Breaker::Io(b, d), false, now)
            .1
    );
    assert!(
        !t.deleg_conflicts(&file(9), &Breaker::Opener((a, ow())), false, now)
            .1
    );
    // Too many queued: recalled instead.
    for _ in 0..tables::MAX_QUEUED_NOTES {
        t.dir_notify(&file(9), b, NotifyType4::AddEntry, &note, now);
    }
    let n = t.dir_notify(&file(9), b, NotifyType4::AddEntry, &note, now);
    assert_eq!(n.recalls.len(), 1);
    // A removal was not asked for: recalled (once), and in the way; so is
    // an addition now (a holder being recalled is told nothing more).
    let (recall, pending) = t.dir_conflicts(&file(9), b, NotifyType4::RemoveEntry, now);
    assert!(recall.is_empty() && pending, "recalled already");
    assert!(t.dir_conflicts(&file(9), b, NotifyType4::AddEntry, now).1);
}

#[test]
fn delegations_kept_across_a_client_restart_last_a_lease() {
    let f = deleg_fixture();
    let (a, _) = f.client("a");
    f.st.offer_delegation(&(a, ow()), &file(1), fh(1), (false, false), None)
        .unwrap();
    f.st.offer_delegation(&(a, ow()), &file(2), fh(2), (false, false), None)
        .unwrap();
    // The client restarts: the same owner, a new verifier.
    let p = Principal::Sys { uid: 0, gid: 0 };
    let x = f.st.exchange_id(&Fixture::owner("a", 2), p, false).unwrap();
    f.st.create_session(f.session_req(x.clientid, x.sequenceid, 0))
        .unwrap();
    let a2 = x.clientid;
    assert!(f.st.delegations_outstanding(), "kept ones count");
    assert_eq!(f.st.take_prev_delegation(a2, &file(1)), Ok(false));
    assert_eq!(
        f.st.take_prev_delegation(a2, &file(1)),
        Err(NfsStat4::Nfs4errReclaimBad)
    );
    // A lease later the other is gone.
    f.advance_to(f.clock.now() + L + Duration::from_secs(1));
    f.st.reap();
    assert_eq!(
        f.st.take_prev_delegation(a2, &file(2)),
        Err(NfsStat4::Nfs4errReclaimBad)
    );
}
