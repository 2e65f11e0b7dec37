//! An export's state moving between two servers (RFC 8881 §11.14), and
//! the phases of a move on each side, on a manual clock.

use super::*;
use crate::migration::phases::*;

/// A second server: another epoch, its own clock.
fn server(epoch: u32) -> Fixture {
    let clock = Arc::new(ManualClock::default());
    let st = State::new(epoch, L, clock.clone());
    Fixture { clock, st }
}

fn other_export(n: u8) -> FileKey {
    (2, Bytes::copy_from_slice(&[n; 8]))
}

/// The client "1" at `f` with an open and a lock on file(1) (export 1)
/// and an open on export 2.
fn busy(f: &Fixture) -> (ClientId4, StateId4, StateId4, StateId4) {
    let (c, _) = f.client("1");
    let o = Bytes::from_static(b"o");
    let open = f.st.open(c, &o, &file(1), R | W, 0).unwrap();
    let lock = f
        .lock(c, Some("lo"), open, &file(1), (0, 100), false)
        .unwrap();
    let stay = f.st.open(c, &o, &other_export(1), R, 0).unwrap();
    (c, open, lock, stay)
}

/// EXCHANGE_ID and CREATE_SESSION of client "1" (verifier 1) at `f`, as
/// the client does at a destination: its record must be confirmed.
fn arrive(f: &Fixture) -> ClientId4 {
    let x = f.exchange("1");
    assert!(
        x.confirmed,
        "the destination answers with a confirmed record"
    );
    f.st.create_session(f.session_req(x.clientid, x.sequenceid, 0))
        .unwrap();
    x.clientid
}

#[test]
fn opens_and_locks_move_with_the_stateids_their_client_holds() {
    let src = Fixture::new();
    let dst = server(9);
    let (c, open, lock, stay) = busy(&src);
    let snap = src.st.export_state(1).unwrap();
    assert_eq!(snap.len(), 1);
    assert_eq!(snap[0].states.len(), 2, "the open and the lock of export 1");
    let done = dst.st.import_state(1, snap).unwrap();
    assert_eq!(done.states, 2);
    let here = arrive(&dst);
    assert_eq!(done.clients, vec![(here, Bytes::from_static(b"1"))]);
    assert_ne!(here, c, "a client id of the destination's own");
    // The source's stateids work at the destination, and its lock holds
    // against another client there.
    assert_eq!(dst.st.check_io(here, &open, &file(1), W), Ok(false));
    let (other, _) = dst.client("2");
    let o2 = Bytes::from_static(b"o2");
    let open2 = dst.st.open(other, &o2, &file(1), R | W, 0).unwrap();
    assert_eq!(
        denied_by(dst.lock(other, Some("x"), open2, &file(1), (50, 60), false)),
        here
    );
    let (lock2, _) = dst.st.unlock(here, &lock, &file(1), 0, 100).unwrap();
    assert_eq!((lock2.other, lock2.seqid), (lock.other, lock.seqid + 1));
    assert!(dst
        .lock(other, Some("x"), open2, &file(1), (50, 60), false)
        .is_ok());
    // A stateid of another client is still nobody's.
    assert_eq!(
        dst.st.close(other, &open, &file(1)),
        Err(NfsStat4::Nfs4errBadStateid)
    );
    // The source forgets export 1 only, and tells the client its lease
    // moved until it has been told NFS4ERR_MOVED.
    assert!(!src.st.lease_moved(c));
    assert_eq!(src.st.drop_export(1), 2);
    assert!(src.st.lease_moved(c));
    assert_eq!(
        src.st.test_stateids(c, &[open, stay]),
        vec![NfsStat4::Nfs4errBadStateid, NfsStat4::Nfs4Ok]
    );
    src.st.moved_seen(c, 1);
    assert!(!src.st.lease_moved(c));
    // New state there is the destination's own.
    let fresh = dst
        .st
        .open(here, &Bytes::from_static(b"n"), &file(2), R, 0)
        .unwrap();
    assert_eq!(fresh.other[..4], 9u32.to_be_bytes());
    // Purging the client takes its aliases with it.
    assert_eq!(dst.st.aliases(), 1);
    dst.advance_to(s(10 + 24 * 3600 + 60));
    dst.st.reap();
    assert_eq!(dst.st.aliases(), 0);
}

#[test]
fn a_client_that_arrives_before_its_state_keeps_its_record() {
    let src = Fixture::new();
    let dst = server(9);
    let (_, open, _, _) = busy(&src);
    // It reached the destination first (another export there, or early).
    let x = dst.exchange("1");
    dst.st
        .create_session(dst.session_req(x.clientid, x.sequenceid, 0))
        .unwrap();
    let done = dst
        .st
        .import_state(1, src.st.export_state(1).unwrap())
        .unwrap();
    assert_eq!(done.clients[0].0, x.clientid, "the same record");
    assert_eq!(dst.st.client_count(), 1);
    assert_eq!(dst.st.check_io(x.clientid, &open, &file(1), R), Ok(false));
}

#[test]
fn a_transfer_is_taken_whole_or_not_at_all() {
    let src = Fixture::new();
    let dst = server(9);
    busy(&src);
    let snap = src.st.export_state(1).unwrap();
    // A lock held at the destination conflicts: nothing is taken.
    let (d, _) = dst.client("d");
    let od = dst
        .st
        .open(d, &Bytes::from_static(b"od"), &file(1), R | W, 0)
        .unwrap();
    let ld = dst
        .lock(d, Some("ld"), od, &file(1), (90, 95), false)
        .unwrap();
    let before = dst.st.client_count();
    assert!(dst.st.import_state(1, snap.clone()).is_err());
    assert_eq!((dst.st.client_count(), dst.st.aliases()), (before, 0));
    dst.st.unlock(d, &ld, &file(1), 90, 95).unwrap();
    // Malformed transfers are refused too.
    let mut twice = snap.clone();
    let dup = twice[0].states[0].clone();
    twice[0].states.push(dup);
    assert!(dst.st.import_state(1, twice).is_err());
    let mut orphan = snap.clone();
    orphan[0]
        .states
        .retain(|s| matches!(s.kind, proto::migrate::PeerStateKind::Lock(_)));
    assert!(dst.st.import_state(1, orphan).is_err());
    let mut foreign = snap.clone();
    foreign[0].clientid ^= 1;
    assert!(dst.st.import_state(1, foreign).is_err());
    assert_eq!(dst.st.aliases(), 0);
    assert!(dst.st.import_state(1, snap).is_ok());
}

#[test]
fn a_delegation_keeps_an_export_from_moving_until_it_is_back() {
    let f = super::delegations::deleg_fixture();
    let (c, _) = f.client("1");
    let o = super::delegations::ow();
    f.st.open(c, &o, &file(1), R, 0).unwrap();
    let d =
        f.st.offer_delegation(
            &(c, o),
            &file(1),
            super::delegations::fh(1),
            (false, false),
            None,
        )
        .unwrap();
    assert!(f.st.export_state(1).is_err());
    // Other exports are free to move.
    assert!(f.st.export_state(2).is_ok());
    f.st.delegreturn(c, &d, &file(1)).unwrap();
    assert_eq!(f.st.export_state(1).unwrap()[0].states.len(), 1);
}

#[test]
fn a_move_freezes_then_moves_and_says_how_long_it_held_clients_off() {
    let (mut m, a) = Outgoing::start(s(0), s(30));
    assert_eq!(a, vec![OutAction::SendPrepare]);
    assert_eq!(
        m.on(OutEvent::Prepared, s(1)),
        vec![OutAction::StopGrants, OutAction::CheckRecalls]
    );
    assert_eq!(
        m.on(OutEvent::Recalled { left: 2 }, s(2)),
        vec![OutAction::CheckRecalls]
    );
    // Frozen only once the recalls are back.
    assert_eq!(m.frozen_for(s(3)), s(0));
    assert_eq!(
        m.on(OutEvent::Recalled { left: 0 }, s(3)),
        vec![OutAction::Freeze, OutAction::SendTransfer]
    );
    assert_eq!(m.on(OutEvent::Staged, s(4)), vec![OutAction::SendCommit]);
    assert_eq!(
        m.on(OutEvent::Committed, s(5)),
        vec![OutAction::Moved, OutAction::Finish(Ok(()))]
    );
    assert_eq!(m.phase, Phase::Done);
    assert_eq!(m.frozen_for(s(100)), s(2));
    assert!(m.on(OutEvent::PeerFailed("late".into()), s(6)).is_empty());
}

#[test]
fn a_destination_that_fails_before_its_commit_leaves_the_export_here() {
    // Refused at PREPARE: nothing was frozen.
    let (mut m, _) = Outgoing::start(s(0), s(30));
    let a = m.on(OutEvent::PeerFailed("refused".into()), s(1));
    assert_eq!(a, vec![OutAction::Finish(Err("refused".into()))]);
    // Dies half-way, during the transfer: thawed, told to abort.
    let (mut m, _) = Outgoing::start(s(0), s(30));
    m.on(OutEvent::Prepared, s(1));
    m.on(OutEvent::Recalled { left: 0 }, s(1));
    let a = m.on(OutEvent::PeerFailed("connection reset".into()), s(2));
    assert_eq!(
        a,
        vec![
            OutAction::Thaw,
            OutAction::SendAbort(Duration::ZERO),
            OutAction::Finish(Err("connection reset".into()))
        ]
    );
    assert_eq!(m.frozen_for(s(50)), s(1));
    // Refused while recalling: grants resume, nothing was frozen.
    let (mut m, _) = Outgoing::start(s(0), s(30));
    m.on(OutEvent::Prepared, s(1));
    let a = m.on(OutEvent::PeerFailed("gone".into()), s(2));
    assert_eq!(a[0], OutAction::Thaw);
    assert_eq!(m.frozen_for(s(50)), s(0));
    // Delegations not back in time: thawed.
    let (mut m, _) = Outgoing::start(s(0), s(30));
    m.on(OutEvent::Prepared, s(1));
    assert_eq!(
        m.on(OutEvent::Recalled { left: 1 }, s(30)),
        vec![OutAction::CheckRecalls]
    );
    let a = m.on(OutEvent::Recalled { left: 1 }, s(31));
    assert_eq!(
        a[..2],
        [OutAction::Thaw, OutAction::SendAbort(Duration::ZERO)]
    );
    // A snapshot the transfer cannot carry: thawed.
    let (mut m, _) = Outgoing::start(s(0), s(30));
    m.on(OutEvent::Prepared, s(1));
    m.on(OutEvent::Recalled { left: 0 }, s(1));
    let a = m.on(OutEvent::SnapshotRefused("NLM".into()), s(1));
    assert_eq!(a[0], OutAction::Thaw);
}

#[test]
fn an_unanswered_commit_keeps_the_export_frozen_until_the_destination_says() {
    for committed in [true, false] {
        let (mut m, _) = Outgoing::start(s(0), s(30));
        m.on(OutEvent::Prepared, s(1));
        m.on(OutEvent::Recalled { left: 0 }, s(1));
        m.on(OutEvent::Staged, s(2));
        assert_eq!(
            m.on(OutEvent::PeerFailed("timed out".into()), s(3)),
            vec![OutAction::SendAbort(Duration::ZERO)]
        );
        // Unreachable: ask again, never thaw nor move on a guess.
        for t in 4..10 {
            assert_eq!(
                m.on(OutEvent::PeerFailed("unreachable".into()), s(t)),
                vec![OutAction::SendAbort(ABORT_RETRY)]
            );
            assert_eq!(m.phase, Phase::Uncertain);
        }
        let a = m.on(OutEvent::AbortAnswered { committed }, s(12));
        if committed {
            assert_eq!(a, vec![OutAction::Moved, OutAction::Finish(Ok(()))]);
        } else {
            assert_eq!(a[0], OutAction::Thaw);
            assert!(matches!(a[1], OutAction::Finish(Err(_))));
        }
        assert_eq!(m.frozen_for(s(100)), s(11));
    }
}

#[test]
fn a_destination_stages_one_migration_per_export_and_drops_the_forgotten() {
    let mut i = Incoming::default();
    i.prepare([1; 16], 3, s(0)).unwrap();
    // A retransmission is fine; a second migration of the export is not.
    i.prepare([1; 16], 3, s(1)).unwrap();
    assert!(matches!(
        i.prepare([2; 16], 3, s(1)),
        Err(IncomingError::Refused(_))
    ));
    assert!(i.arriving(3));
    assert!(matches!(
        i.commit(&[1; 16], s(2)),
        Err(IncomingError::Refused(_))
    ));
    assert_eq!(
        i.transfer(&[9; 16], Vec::new(), s(2)),
        Err(IncomingError::Unknown)
    );
    assert_eq!(i.transfer(&[1; 16], Vec::new(), s(2)), Ok(3));
    assert_eq!(i.commit(&[1; 16], s(3)), Ok((3, Vec::new())));
    assert!(!i.arriving(3));
    assert_eq!(i.abort(&[1; 16]), None);
    // A source that went quiet: dropped after the timeout.
    i.prepare([4; 16], 5, s(10)).unwrap();
    assert!(i
        .expire(s(10) + INCOMING_TIMEOUT - Duration::from_millis(1))
        .is_empty());
    assert_eq!(i.expire(s(10) + INCOMING_TIMEOUT), vec![5]);
    assert_eq!(i.commit(&[4; 16], s(100)), Err(IncomingError::Unknown));
    // Bounded.
    for n in 0..MAX_INCOMING as u8 {
        i.prepare([n + 10; 16], n as u16 + 10, s(200)).unwrap();
    }
    assert!(i.prepare([99; 16], 99, s(200)).is_err());
}

#[test]
fn a_frozen_export_takes_no_state_changes_until_thawed() {
    let f = Fixture::new();
    let (c, open, lock, stay) = busy(&f);
    f.st.freeze_export(1);
    let o = Bytes::from_static(b"o");
    assert_eq!(
        f.st.open(c, &o, &file(2), R, 0),
        Err(NfsStat4::Nfs4errDelay)
    );
    assert!(matches!(
        f.lock(c, None, lock, &file(1), (200, 300), false),
        Err(LockError::Status(NfsStat4::Nfs4errDelay))
    ));
    assert_eq!(
        f.st.unlock(c, &lock, &file(1), 0, 100).map(|_| ()),
        Err(NfsStat4::Nfs4errDelay)
    );
    assert_eq!(f.st.close(c, &open, &file(1)), Err(NfsStat4::Nfs4errDelay));
    // I/O goes on, and other exports are not held.
    assert_eq!(f.st.check_io(c, &open, &file(1), W), Ok(false));
    assert!(f.st.close(c, &stay, &other_export(1)).is_ok());
    f.st.thaw_export(1);
    assert!(f.st.unlock(c, &lock, &file(1), 0, 100).is_ok());
}

#[test]
fn stateids_survive_a_move_there_and_back() {
    let a = Fixture::new();
    let b = server(9);
    let (c, open, lock, _) = busy(&a);
    b.st.import_state(1, a.st.export_state(1).unwrap()).unwrap();
    a.st.drop_export(1);
    let at_b = arrive(&b);
    let (lock, _) = b.st.unlock(at_b, &lock, &file(1), 0, 10).unwrap();
    // Back to A: the client's record there is the same instance.
    a.st.import_state(1, b.st.export_state(1).unwrap()).unwrap();
    b.st.drop_export(1);
    assert_eq!(a.st.check_io(c, &open, &file(1), W), Ok(false));
    assert!(a.st.unlock(c, &lock, &file(1), 10, 100).is_ok());
    // On to a third server: the transfer carries the ids the stateids
    // name.
    let snap = a.st.export_state(1).unwrap();
    let c2 = server(11);
    c2.st.import_state(1, snap).unwrap();
    let at_c = arrive(&c2);
    assert_eq!(c2.st.check_io(at_c, &open, &file(1), W), Ok(false));
}
