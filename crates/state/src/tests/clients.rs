//! Clients, sessions, leases and back channels on a manual clock.

use super::delegations::deleg_fixture;
use super::*;

#[test]
fn exchange_id_cases_through_the_owner_index() {
    let f = Fixture::new();
    let p0 = Principal::Sys { uid: 0, gid: 0 };
    let p1 = Principal::Sys { uid: 1, gid: 0 };
    let a = Fixture::owner("a", 1);
    let x = f.st.exchange_id(&a, p0.clone(), false).unwrap();
    assert!(!x.confirmed);
    // The same request again: the unconfirmed record is replaced (case 4).
    let x2 = f.st.exchange_id(&a, p0.clone(), false).unwrap();
    assert_ne!(x.clientid, x2.clientid);
    assert_eq!(f.st.client_count(), 1);
    // Confirmed by CREATE_SESSION, then the same verifier finds it (case 2).
    f.st.create_session(f.session_req(x2.clientid, x2.sequenceid, 0))
        .unwrap();
    let x3 = f.st.exchange_id(&a, p0.clone(), false).unwrap();
    assert_eq!((x3.clientid, x3.confirmed), (x2.clientid, true));
    // Another principal while it holds a session: in use (case 3).
    assert_eq!(
        f.st.exchange_id(&a, p1, false),
        Err(NfsStat4::Nfs4errClidInuse)
    );
    // A rebooted client (new verifier) gets a new record; confirming it
    // replaces the old one and its session (case 5).
    let rebooted = Fixture::owner("a", 2);
    let x4 = f.st.exchange_id(&rebooted, p0, false).unwrap();
    assert_ne!(x4.clientid, x2.clientid);
    assert_eq!(f.st.client_count(), 2);
    f.st.create_session(f.session_req(x4.clientid, x4.sequenceid, 0))
        .unwrap();
    assert_eq!(f.st.client_count(), 1);
    assert_eq!(f.st.session_count(), 1);
}

#[test]
fn create_session_sequence_and_replay() {
    let f = Fixture::new();
    let x = f.exchange("a");
    let first =
        f.st.create_session(f.session_req(x.clientid, x.sequenceid, 0))
            .unwrap();
    // A retransmission gets the same reply and no new session.
    let again =
        f.st.create_session(f.session_req(x.clientid, x.sequenceid, 0))
            .unwrap();
    assert_eq!(again.resok.sessionid, first.resok.sessionid);
    assert_eq!(f.st.session_count(), 1);
    assert_eq!(
        f.st.create_session(f.session_req(x.clientid, x.sequenceid + 5, 0))
            .err(),
        Some(NfsStat4::Nfs4errSeqMisordered)
    );
    assert_eq!(
        f.st.create_session(f.session_req(99, 1, 0)).err(),
        Some(NfsStat4::Nfs4errStaleClientid)
    );
    // An unconfirmed record expires after a lease.
    let y =
        f.st.exchange_id(&Fixture::owner("b", 1), Principal::None, false)
            .unwrap();
    f.advance_to(s(11));
    assert_eq!(
        f.st.create_session(f.session_req(y.clientid, y.sequenceid, 0))
            .err(),
        Some(NfsStat4::Nfs4errStaleClientid)
    );
    // DESTROY_CLIENTID refuses while a session exists.
    assert_eq!(
        f.st.destroy_clientid(x.clientid),
        Err(NfsStat4::Nfs4errClientidBusy)
    );
    f.st.destroy_session(&first.resok.sessionid).unwrap();
    assert_eq!(
        f.st.sequence(&first.resok.sessionid).err(),
        Some(NfsStat4::Nfs4errBadsession)
    );
    f.st.destroy_clientid(x.clientid).unwrap();
    assert_eq!(f.st.client_count(), 0);
}

#[test]
fn sequence_renews_without_the_tables_lock() {
    use std::sync::mpsc::channel;
    let f = Arc::new(Fixture::new());
    let (_, sid) = f.client("a");
    // One thread holds the tables' lock until told to let go...
    let (held_tx, held_rx) = channel();
    let (release_tx, release_rx) = channel::<()>();
    let g = f.clone();
    let holder = std::thread::spawn(move || {
        let _t = g.st.lock_tables();
        held_tx.send(()).unwrap();
        let _ = release_rx.recv();
    });
    held_rx.recv().unwrap();
    // ...and SEQUENCE completes meanwhile: were it to take that lock, it
    // would wait until the holder is told to let go, after the 30 s below
    // (microseconds are needed; the rest is room for a busy machine).
    f.advance_to(s(5));
    let (done_tx, done_rx) = channel();
    let g = f.clone();
    let worker = std::thread::spawn(move || {
        let _ = done_tx.send(g.st.sequence(&sid).map(|sess| sess.lease.last()));
    });
    let got = done_rx.recv_timeout(Duration::from_secs(30));
    release_tx.send(()).unwrap();
    holder.join().unwrap();
    worker.join().unwrap();
    assert_eq!(got, Ok(Ok(s(5))), "SEQUENCE waited for the tables' lock");
}

#[test]
fn reaper_follows_renewals_in_order() {
    let f = Fixture::new();
    let (c1, s1) = f.client("1");
    let (_c2, _) = f.client("2");
    f.st.exchange_id(&Fixture::owner("3", 1), Principal::None, false)
        .unwrap();
    // The unconfirmed record goes after a lease.
    f.advance_to(s(11));
    assert_eq!(f.st.reap(), 1);
    // Client 1 renews through SEQUENCE; client 2 does not. Confirmed
    // clients are kept as courtesy clients for a day past their lease.
    f.st.sequence(&s1).unwrap();
    f.advance_to(s(21));
    assert_eq!(f.st.reap(), 0);
    let day = super::DEFAULT_COURTESY;
    f.advance_to(L + day + s(1));
    assert_eq!(f.st.reap(), 1);
    assert_eq!(f.st.client_count(), 1);
    assert!(f.st.sequence(&s1).is_ok());
    f.advance_to(L + day + s(1) + L + day + s(1));
    assert_eq!(f.st.reap(), 1);
    assert_eq!(f.st.client_count(), 0);
    assert_eq!(f.st.session_count(), 0);
    assert_eq!(
        f.st.may_take_state(c1, false),
        Err(NfsStat4::Nfs4errStaleClientid)
    );
}

#[test]
fn purged_client_leaves_no_file_state() {
    let f = Fixture::new();
    let (c1, _) = f.client("1");
    let (c2, _) = f.client("2");
    let o = Bytes::from_static(b"o");
    let open1 = f.st.open(c1, &o, &file(1), R | W, 0).unwrap();
    let open2 = f.st.open(c2, &o, &file(1), R | W, 0).unwrap();
    f.lock(c1, Some("l"), open1, &file(1), (0, 10), false)
        .unwrap();
    assert_eq!(
        denied_by(f.lock(c2, Some("l"), open2, &file(1), (0, 10), true)),
        c1
    );
    // c2 waits; purging it removes its waiter, and c1's state stays.
    f.st.destroy_clientid(c2).unwrap_err(); // has a session
                                            // Both hold state: courtesy clients for a day past their lease.
    f.advance_to(s(25));
    assert_eq!(f.st.reap(), 0);
    f.advance_to(L + super::DEFAULT_COURTESY + s(1));
    assert_eq!(f.st.reap(), 2);
    assert!(f.st.tables().files.is_empty());
}

/// A client whose lease ran out keeps its state, and its record, while
/// nobody conflicts with it (RFC 8881 §8.4.3); a conflicting lock purges
/// it at once, a full table purges the longest silent, and one that comes
/// back finds its state.
#[test]
fn courtesy_clients_keep_their_state_until_someone_conflicts() {
    let clock = Arc::new(ManualClock::default());
    let st = State::new(7, L, clock.clone()).with_max_clients(4);
    let f = Fixture { clock, st };
    let o = Bytes::from_static(b"o");
    let (a, _) = f.client("a");
    let (b, sb) = f.client("b");
    let (c, _) = f.client("c");
    let oa = f.st.open(a, &o, &file(1), R | W, 0).unwrap();
    f.lock(a, Some("la"), oa, &file(1), (0, 10), false).unwrap();
    let ob = f.st.open(b, &o, &file(2), R | W, 0).unwrap();
    f.lock(b, Some("lb"), ob, &file(2), (0, 10), false).unwrap();
    let oc = f.st.open(c, &o, &file(3), R, 0).unwrap();
    // Nobody renews for ten leases: all three are courtesy clients.
    f.advance_to(L * 10);
    assert_eq!(f.st.reap(), 0);
    assert_eq!(f.st.client_count(), 3);
    // "b" comes back: its session, lease and locks are all there.
    f.st.sequence(&sb).unwrap();
    assert_eq!(f.st.may_take_state(b, false), Ok(()));
    // A newcomer's conflicting lock purges "a" and is granted.
    let (d, _) = f.client("d");
    let od = f.st.open(d, &o, &file(1), R | W, 0).unwrap();
    assert!(f.lock(d, Some("ld"), od, &file(1), (5, 6), false).is_ok());
    assert_eq!(
        f.st.may_take_state(a, false),
        Err(NfsStat4::Nfs4errStaleClientid)
    );
    // The table is full (b, c, d and e): a newcomer purges "c", the
    // courtesy client silent longest, not "b", which renewed.
    let (_e, _) = f.client("e");
    assert_eq!(f.st.client_count(), 4);
    f.exchange("g");
    assert_eq!(
        f.st.may_take_state(c, false),
        Err(NfsStat4::Nfs4errStaleClientid)
    );
    assert_eq!(f.st.may_take_state(b, false), Ok(()));
    let _ = oc;
}

/// A back-channel connection as a driver would hand it over.
#[derive(Debug)]
pub(super) struct FakeConn {
    pub(super) id: u64,
    pub(super) closed: std::sync::atomic::AtomicBool,
}

impl BackConn for FakeConn {
    fn id(&self) -> u64 {
        self.id
    }
    fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// A session can be called back only while a live connection is bound
/// to its back channel; a delegation is offered only to such a client, and
/// a conflict revokes at once (no recall to send) the delegation of a
/// client whose connections are gone.
#[test]
fn back_channel_connections_decide_whether_a_client_can_be_called_back() {
    let fx = deleg_fixture();
    let (a, sa) = fx.client("a");
    let (b, _) = fx.client("b");
    let session = fx.st.session(&sa).unwrap();
    assert!(!session.callable(), "no connection bound yet");
    let conn = Arc::new(FakeConn {
        id: 5,
        closed: Default::default(),
    });
    let bound: Arc<dyn BackConn> = conn.clone();
    fx.st.bind_back(&session, &bound);
    fx.st.bind_back(&session, &bound);
    assert!(session.callable());
    assert_eq!(session.back_conn().map(|c| c.id()), Some(5));
    assert_eq!(session.back.lock().unwrap().conns.len(), 1, "bound once");

    let f = file(1);
    let f2 = file(2);
    let asker = (a, Bytes::from_static(b"o"));
    for (file, fh) in [(&f, "fh"), (&f2, "fh2")] {
        fx.st.open(a, &asker.1, file, R, 0).unwrap();
        fx.st
            .offer_delegation(&asker, file, Bytes::from(fh), (false, false), None)
            .unwrap();
    }
    let other = Breaker::Opener((b, Bytes::new()));
    let breaking = fx.st.break_delegations(&f, &other, false);
    assert_eq!(breaking.recalls.len(), 1, "a callable holder is recalled");
    assert!(breaking.pending);
    assert_eq!(breaking.recalls[0].session.id, sa);

    // The connection closes: the driver says so, and the session's
    // callback path is down; a conflict then revokes the delegation at
    // once, with no recall to send and nothing to wait for.
    conn.closed
        .store(true, std::sync::atomic::Ordering::Relaxed);
    fx.st.disconnected(5);
    assert!(!session.callable());
    assert!(session.cb_down.load(std::sync::atomic::Ordering::Relaxed));
    let breaking = fx.st.break_delegations(&f2, &other, false);
    assert!(breaking.recalls.is_empty() && !breaking.pending);
}
