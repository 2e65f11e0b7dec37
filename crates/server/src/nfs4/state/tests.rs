//! The state's rules on a manual clock, without sockets.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use proto::nfs4::*;

use super::clock::ManualClock;
use super::slots::CacheMemory;
use super::*;
use crate::locks::LockKind;

const L: Duration = Duration::from_secs(10);
const R: u32 = OPEN4_SHARE_ACCESS_READ;
const W: u32 = OPEN4_SHARE_ACCESS_WRITE;

fn s(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn file(n: u8) -> FileKey {
    (1, vfs::Handle(Bytes::copy_from_slice(&[n; 8])))
}

fn attrs() -> ChannelAttrs4 {
    ChannelAttrs4 {
        headerpadsize: 0,
        maxrequestsize: 1 << 20,
        maxresponsesize: 1 << 20,
        maxresponsesize_cached: 4096,
        maxoperations: 16,
        maxrequests: 4,
        rdma_ird: None,
    }
}

struct Fixture {
    clock: Arc<ManualClock>,
    st: State,
}

impl Fixture {
    fn new() -> Fixture {
        let clock = Arc::new(ManualClock::default());
        let st = State::new(7, L, clock.clone());
        Fixture { clock, st }
    }

    fn advance_to(&self, t: Duration) {
        let now = self.clock.now();
        self.clock.advance(t.saturating_sub(now));
    }

    fn owner(name: &str, verf: u8) -> ClientOwner4 {
        ClientOwner4 {
            verifier: [verf; 8],
            ownerid: Bytes::copy_from_slice(name.as_bytes()),
        }
    }

    fn session_req(&self, clientid: ClientId4, sequence: u32, uid: u32) -> NewSession {
        NewSession {
            clientid,
            sequence,
            principal: Principal::Sys { uid, gid: 0 },
            flags: 0,
            fore: attrs(),
            back: attrs(),
            cb_program: 0x4000_0000,
            sec_parms: Vec::new(),
            minorversion: 1,
            conn: None,
            drc: CacheMemory::new(1 << 20),
        }
    }

    /// EXCHANGE_ID for a new owner `name`, as root.
    fn exchange(&self, name: &str) -> ExchangeIdOk {
        let p = Principal::Sys { uid: 0, gid: 0 };
        self.st
            .exchange_id(&Self::owner(name, 1), p, false)
            .unwrap()
    }

    /// A confirmed client with a session, past its reclaims.
    fn client(&self, name: &str) -> (ClientId4, SessionId4) {
        let x = self.exchange(name);
        let c = self
            .st
            .create_session(self.session_req(x.clientid, x.sequenceid, 0))
            .unwrap();
        self.st.reclaim_complete(x.clientid).unwrap();
        (x.clientid, c.resok.sessionid)
    }

    fn lock(
        &self,
        client: ClientId4,
        owner: Option<&str>,
        presented: StateId4,
        f: &FileKey,
        range: (u64, u64),
        blocking: bool,
    ) -> Result<StateId4, LockError> {
        self.st.lock(&LockRequest {
            client,
            new_owner: owner.map(|o| Bytes::copy_from_slice(o.as_bytes())),
            presented,
            file: f.clone(),
            start: range.0,
            end: range.1,
            kind: LockKind::Write,
            blocking,
            reclaim: false,
            fh: Bytes::new(),
        })
    }
}

fn denied_by(r: Result<StateId4, LockError>) -> ClientId4 {
    match r {
        Err(LockError::Denied(h)) => h.owner.0,
        other => panic!("expected a denial, got {other:?}"),
    }
}

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
    // and from another owner of the same client
    let o2 = Bytes::from_static(b"o2");
    assert_eq!(
        f.st.open(c1, &o2, &file(1), R | W, 0),
        Err(NfsStat4::Nfs4errShareDenied)
    );
    // the same owner upgrades: same other, seqid 2
    let s2 = f.st.open(c1, &o, &file(1), W, 0).unwrap();
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

/// A state after a restart: "a" and "b" were recorded before it.
fn restarted() -> Fixture {
    let clock = Arc::new(ManualClock::default());
    let previous = ["a", "b"]
        .iter()
        .map(|n| Bytes::from(n.to_string()))
        .collect();
    let st = State::recovering(7, L, clock.clone(), Records::none(), previous, L);
    Fixture { clock, st }
}

impl Fixture {
    /// A confirmed client with a session that has not reclaimed yet.
    fn reclaiming(&self, name: &str) -> ClientId4 {
        let x = self.exchange(name);
        self.st
            .create_session(self.session_req(x.clientid, x.sequenceid, 0))
            .unwrap();
        x.clientid
    }

    fn reclaim_lock(
        &self,
        client: ClientId4,
        open: StateId4,
        owner: &str,
    ) -> Result<StateId4, LockError> {
        self.st.lock(&LockRequest {
            client,
            new_owner: Some(Bytes::copy_from_slice(owner.as_bytes())),
            presented: open,
            file: file(1),
            start: 0,
            end: 10,
            kind: LockKind::Write,
            blocking: false,
            reclaim: true,
            fh: Bytes::new(),
        })
    }
}

fn status(r: Result<StateId4, LockError>) -> NfsStat4 {
    match r {
        Ok(_) => NfsStat4::Nfs4Ok,
        Err(LockError::Status(s)) => s,
        Err(LockError::Denied(_)) => NfsStat4::Nfs4errDenied,
    }
}

#[test]
fn in_grace_only_recorded_clients_reclaim_and_nobody_takes_new_state() {
    let f = restarted();
    assert!(f.st.in_grace());
    let a = f.reclaiming("a");
    let c = f.reclaiming("c");
    // "a" was recorded: it may reclaim, not take new state yet.
    assert_eq!(f.st.may_take_state(a, true), Ok(()));
    assert_eq!(f.st.may_take_state(a, false), Err(NfsStat4::Nfs4errGrace));
    // "c" was not: it has nothing to reclaim (RFC 8881 §8.4.3), and even
    // once done it takes nothing new until the grace period ends.
    assert_eq!(f.st.may_take_state(c, true), Err(NfsStat4::Nfs4errNoGrace));
    f.st.reclaim_complete(c).unwrap();
    assert_eq!(f.st.may_take_state(c, false), Err(NfsStat4::Nfs4errGrace));
    let o = Bytes::from_static(b"o");
    let sa = f.st.open(a, &o, &file(1), R | W, 0).unwrap();
    assert_eq!(status(f.reclaim_lock(a, sa, "la")), NfsStat4::Nfs4Ok);
    // A conflicting reclaim by another recorded client: one of the two
    // lies, and the server cannot tell which.
    let b = f.reclaiming("b");
    let sb = f.st.open(b, &o, &file(1), R | W, 0).unwrap();
    assert_eq!(
        status(f.reclaim_lock(b, sb, "lb")),
        NfsStat4::Nfs4errReclaimConflict
    );
    // Reclaiming is over for "a" once it says so.
    f.st.reclaim_complete(a).unwrap();
    assert_eq!(f.st.may_take_state(a, true), Err(NfsStat4::Nfs4errNoGrace));
    assert!(!f.st.grace_due(), "b has not reclaimed");
    f.st.reclaim_complete(b).unwrap();
    assert!(f.st.grace_due(), "every recorded client reclaimed");
    f.st.end_grace();
    assert!(!f.st.in_grace());
    assert_eq!(f.st.may_take_state(c, false), Ok(()));
    assert_eq!(f.st.may_take_state(c, true), Err(NfsStat4::Nfs4errNoGrace));
}

#[test]
fn grace_ends_after_its_time_even_if_a_recorded_client_never_returns() {
    let f = restarted();
    let a = f.reclaiming("a");
    f.st.reclaim_complete(a).unwrap();
    assert!(!f.st.grace_due());
    f.advance_to(L);
    assert!(f.st.grace_due());
    f.st.end_grace();
    assert_eq!(f.st.may_take_state(a, false), Ok(()));
    // "b" is back too late: nothing to reclaim.
    let b = f.reclaiming("b");
    assert_eq!(f.st.may_take_state(b, true), Err(NfsStat4::Nfs4errNoGrace));
}

/// A recorded client still reclaiming keeps the grace period open past
/// its length, a progress window after each step, new state refused
/// throughout; three leases at most.
#[test]
fn grace_lasts_while_recorded_clients_reclaim_up_to_three_leases() {
    let window = crate::nfs4::recovery::progress_window(L);
    let f = restarted();
    let a = f.reclaiming("a");
    let c = f.reclaiming("c");
    f.st.reclaim_complete(c).unwrap();
    // "a" reclaims one thing a second, past the period's length.
    for t in 1..=20 {
        f.advance_to(s(t));
        assert_eq!(f.st.may_take_state(a, true), Ok(()), "{t}");
        assert!(!f.st.grace_due(), "{t}");
        assert_eq!(f.st.may_take_state(c, false), Err(NfsStat4::Nfs4errGrace));
    }
    // Then it stops (no RECLAIM_COMPLETE): over a window later.
    f.advance_to(s(20) + window - Duration::from_millis(1));
    assert!(!f.st.grace_due());
    f.advance_to(s(20) + window);
    assert!(f.st.grace_due());
    f.st.end_grace();
    assert_eq!(f.st.may_take_state(c, false), Ok(()));

    // However long "a" goes on, three leases (and a quarter second for
    // each of the two recorded clients) end it.
    let cap = crate::nfs4::recovery::grace_cap(L, L, 2);
    assert_eq!(cap, 3 * L + Duration::from_millis(500));
    let f = restarted();
    let a = f.reclaiming("a");
    for t in 1..=3 * L.as_secs() {
        f.advance_to(s(t));
        assert_eq!(f.st.may_take_state(a, true), Ok(()), "{t}");
        assert!(!f.st.grace_due(), "{t}");
    }
    f.advance_to(cap);
    assert!(f.st.grace_due(), "capped");
    // A returning recorded client's EXCHANGE_ID counts; another's not.
    let f = restarted();
    f.advance_to(L - s(1));
    f.exchange("x");
    f.advance_to(L);
    assert!(f.st.grace_due(), "an unrecorded client is no progress");
    let f = restarted();
    f.advance_to(L - s(1));
    f.exchange("b");
    f.advance_to(L);
    assert!(!f.st.grace_due(), "b is back and reclaiming");
    f.advance_to(L - s(1) + window);
    assert!(f.st.grace_due());
}

/// A client that has completed its reclaims and comes back as a new
/// incarnation (a new verifier) in the same grace period reclaims nothing
/// more (pynfs REBT4c).
#[test]
fn a_second_incarnation_of_a_completed_client_cannot_reclaim() {
    let f = restarted();
    let a = f.reclaiming("a");
    assert_eq!(f.st.may_take_state(a, true), Ok(()));
    f.st.reclaim_complete(a).unwrap();
    let p = Principal::Sys { uid: 0, gid: 0 };
    let x = f.st.exchange_id(&Fixture::owner("a", 2), p, false).unwrap();
    f.st.create_session(f.session_req(x.clientid, x.sequenceid, 0))
        .unwrap();
    assert_ne!(x.clientid, a);
    assert_eq!(
        f.st.may_take_state(x.clientid, true),
        Err(NfsStat4::Nfs4errNoGrace)
    );
    assert_eq!(
        f.st.may_take_state(x.clientid, false),
        Err(NfsStat4::Nfs4errGrace)
    );
}

#[test]
fn a_fresh_server_has_no_grace_period() {
    let f = Fixture::new();
    assert!(!f.st.in_grace());
    let (c, _) = f.client("x");
    assert_eq!(f.st.may_take_state(c, false), Ok(()));
    assert_eq!(f.st.may_take_state(c, true), Err(NfsStat4::Nfs4errNoGrace));
}

#[test]
fn a_full_client_table_makes_newcomers_wait_until_expired_clients_go() {
    let clock = Arc::new(ManualClock::default());
    let st = State::new(7, L, clock.clone()).with_max_clients(2);
    let f = Fixture { clock, st };
    let p = || Principal::Sys { uid: 0, gid: 0 };
    let (a, _) = f.client("a");
    f.exchange("b");
    assert_eq!(
        f.st.exchange_id(&Fixture::owner("c", 1), p(), false)
            .map(|_| ()),
        Err(NfsStat4::Nfs4errDelay)
    );
    // A known owner is not a newcomer.
    assert!(f
        .st
        .exchange_id(&Fixture::owner("a", 1), p(), false)
        .is_ok());
    // "b" never confirmed: gone after a lease, and "c" gets its place
    // ("a" keeps renewing).
    f.advance_to(L + s(1));
    f.st.may_take_state(a, false).unwrap();
    assert!(f
        .st
        .exchange_id(&Fixture::owner("a", 1), p(), false)
        .is_ok());
    assert!(f
        .st
        .exchange_id(&Fixture::owner("c", 1), p(), false)
        .is_ok());
    assert_eq!(f.st.client_count(), 2);
}

// Delegations (RFC 8881 §10.2, §10.4.6).

fn deleg_fixture() -> Fixture {
    let clock = Arc::new(ManualClock::default());
    let st = State::new(7, L, clock.clone()).with_max_delegations(100);
    Fixture { clock, st }
}

/// The open owner delegations are granted to here.
fn ow() -> Bytes {
    Bytes::from_static(b"o")
}

fn fh(n: u8) -> Bytes {
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
        f.st.offer_delegation(&(a, ow()), &file(1), fh(1), false, false)
            .unwrap();
    assert!(f.st.delegations_outstanding());
    assert_eq!(f.st.test_stateids(a, &[d]), vec![NfsStat4::Nfs4Ok]);
    assert_eq!(
        f.st.offer_delegation(&(a, ow()), &file(1), fh(1), false, false),
        Err(WhyNoDelegation4::Wnd4NotSuppUpgrade),
        "a second delegation of the same file"
    );
    // Another client's reader may have one too; not beside a writer.
    f.st.open(b, &o, &file(1), R, 0).unwrap();
    assert!(f
        .st
        .offer_delegation(&(b, ow()), &file(1), fh(1), false, false)
        .is_ok());
    f.st.open(b, &o, &file(2), W, 0).unwrap();
    f.st.open(a, &o, &file(2), R, 0).unwrap();
    assert_eq!(
        f.st.offer_delegation(&(a, ow()), &file(2), fh(2), false, false),
        Err(WhyNoDelegation4::Wnd4Contention)
    );
    // Nor beside the client's own writer.
    f.st.open(a, &o, &file(3), R | W, 0).unwrap();
    assert_eq!(
        f.st.offer_delegation(&(a, ow()), &file(3), fh(3), false, false),
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
        g.st.offer_delegation(&(c, ow()), &file(1), fh(1), false, false),
        Err(WhyNoDelegation4::Wnd4Resource)
    );
}

#[test]
fn a_conflict_recalls_once_waits_for_the_return_and_cools_the_file() {
    let f = deleg_fixture();
    let (a, _) = f.client("a");
    let (b, _) = f.client("b");
    let d =
        f.st.offer_delegation(&(a, ow()), &file(1), fh(1), false, false)
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
        f.st.offer_delegation(&(a, ow()), &file(1), fh(1), false, false),
        Err(WhyNoDelegation4::Wnd4Contention)
    );
    f.advance_to(tables::CONFLICT_QUIET + s(1));
    f.st.sequence(&f.client("c").1).unwrap();
    f.st.reap();
    assert!(f
        .st
        .offer_delegation(&(a, ow()), &file(1), fh(1), false, false)
        .is_ok());
}

#[test]
fn a_delegation_kept_a_lease_past_its_recall_is_revoked_until_freed() {
    let f = deleg_fixture();
    let (a, sa) = f.client("a");
    let (b, sb) = f.client("b");
    let d =
        f.st.offer_delegation(&(a, ow()), &file(1), fh(1), false, false)
            .unwrap();
    let pending = |f: &Fixture| {
        let mut t = f.st.lock_tables();
        let now = f.clock.now();
        t.deleg_conflicts(&file(1), &Breaker::Opener((b, ow())), false, now)
            .1
    };
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
fn holders_that_cannot_be_called_back_or_have_expired_do_not_hold_others_up() {
    let f = deleg_fixture();
    let (a, sa) = f.client("a");
    let (b, sb) = f.client("b");
    let (c, _) = f.client("c");
    // The fixture's sessions have no back channel: a recall cannot be
    // sent, so the delegation is revoked at once.
    let d =
        f.st.offer_delegation(&(a, ow()), &file(1), fh(1), false, false)
            .unwrap();
    let br =
        f.st.break_delegations(&file(1), &Breaker::Opener((b, ow())), false);
    assert!(br.recalls.is_empty() && !br.pending);
    assert_eq!(
        f.st.test_stateids(a, &[d]),
        vec![NfsStat4::Nfs4errDelegRevoked]
    );
    // A courtesy client's delegation goes with the client (§8.4.3).
    f.st.offer_delegation(&(c, ow()), &file(2), fh(2), false, false)
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
        f.st.offer_delegation(&(a, ow()), &file(1), fh(1), false, false),
        Err(WhyNoDelegation4::Wnd4Contention),
        "a new delegation in the grace period"
    );
    let d =
        f.st.offer_delegation(&(a, ow()), &file(1), fh(1), false, true)
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
        f.st.offer_delegation(&(a, ow()), &file(2), fh(2), true, false),
        Err(WhyNoDelegation4::Wnd4Contention)
    );
    let d =
        f.st.offer_delegation(&(a, ow()), &file(1), fh(1), true, false)
            .unwrap();
    assert!(f.st.write_delegations_outstanding());
    // Its stateid reads and writes.
    assert_eq!(f.st.check_io(a, &d, &file(1), W), Ok(false));
    // Nothing else beside it: another client's read delegation.
    f.st.open(b, &o, &file(1), R, 0).unwrap();
    assert_eq!(
        f.st.offer_delegation(&(b, ow()), &file(1), fh(1), false, false),
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
    let (holder, sid, wire, seen) = t.write_deleg(&file(1)).unwrap();
    assert_eq!((holder, sid, wire, seen), (a, d, fh(1), None));
    let s = CbSeen {
        client_change: 5,
        change: 9,
        size: 10,
        mtime: vfs::Timespec { sec: 1, nsec: 2 },
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
    f.st.offer_delegation(&(a, ow()), &file(1), fh(1), false, false)
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
        .grant_deleg(b, &ow(), &file(1), fh(1), false, false, now)
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
    f.st.offer_delegation(&(a, ow()), &file(1), fh(1), false, false)
        .unwrap();
    f.st.offer_delegation(&(a, ow()), &file(2), fh(2), false, false)
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

/// An NLM owner of host `h`.
fn nlm_owner(h: u32, svid: u8) -> OwnerKey {
    (nlm::nlm_client(h), Bytes::copy_from_slice(&[svid; 4]))
}

/// NLM hosts' and NFSv4 clients' locks live in one table: they deny each
/// other, an NLM host's lock never expires with a lease, and a blocked
/// NLM request is granted by the server when the NFSv4 lock goes (queued
/// for its host to be told), in arrival order with NFSv4 waiters.
#[test]
fn nlm_and_nfsv4_locks_share_the_table() {
    let f = Fixture::new();
    let granted = Arc::new(std::sync::Mutex::new(Vec::new()));
    let g = granted.clone();
    f.st.on_nlm_granted(Box::new(move |v| g.lock().unwrap().extend(v)));
    let (c1, _) = f.client("v4");
    let o = Bytes::from_static(b"oo");
    let open = f.st.open(c1, &o, &file(1), R | W, 0).unwrap();
    let a = nlm_owner(1, 1);
    let b = nlm_owner(2, 1);
    // NLM first: NFSv4 is denied by it, even long after (no lease).
    f.st.nlm_lock(&a, &file(1), 0, 10, LockKind::Write, false, false)
        .unwrap();
    assert_eq!(
        denied_by(f.lock(c1, Some("lo"), open, &file(1), (5, 6), false)),
        a.0
    );
    // The NLM host lets go; NFSv4 takes the range; the other NLM host is
    // denied, then waits (blocked).
    f.st.nlm_unlock(&a, &file(1), 0, u64::MAX);
    let lsid = f
        .lock(c1, Some("lo"), open, &file(1), (0, 10), false)
        .unwrap();
    match f
        .st
        .nlm_lock(&b, &file(1), 2, 3, LockKind::Read, false, false)
    {
        Err(nlm::NlmRefusal::Denied(h)) => assert_eq!(h.owner.0, c1),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        f.st.nlm_lock(&b, &file(1), 2, 3, LockKind::Read, true, false),
        Err(nlm::NlmRefusal::Blocked)
    );
    // A later NLM owner may not jump the queue.
    assert!(matches!(
        f.st.nlm_lock(&a, &file(1), 0, 5, LockKind::Write, false, false),
        Err(nlm::NlmRefusal::Denied(_))
    ));
    assert!(granted.lock().unwrap().is_empty());
    // LOCKU grants it.
    f.st.unlock(c1, &lsid, &file(1), 0, 10).unwrap();
    let g = std::mem::take(&mut *granted.lock().unwrap());
    assert_eq!(g.len(), 1);
    assert_eq!(
        (g[0].owner.clone(), g[0].start, g[0].end),
        (b.clone(), 2, 3)
    );
    // It holds the lock now: a write over it is denied.
    assert!(matches!(
        f.st
            .nlm_lock(&a, &file(1), 0, 5, LockKind::Write, false, false),
        Err(nlm::NlmRefusal::Denied(h)) if h.owner == b
    ));
    // A read is not.
    f.st.nlm_lock(&a, &file(1), 0, 5, LockKind::Read, false, false)
        .unwrap();
    // FREE_ALL of host 2 and host 1 leaves nothing.
    f.st.nlm_free_host(b.0);
    f.st.nlm_free_host(a.0);
    assert!(!f.st.nlm_host_busy(a.0) && !f.st.nlm_host_busy(b.0));
    f.lock(c1, Some("lo"), open, &file(1), (0, 100), false)
        .unwrap();
    // An NLM lock outlives any lease.
    f.st.nlm_lock(&a, &file(9), 0, 1, LockKind::Write, false, false)
        .unwrap();
    f.advance_to(s(10_000));
    assert!(matches!(
        f.st
            .nlm_lock(&b, &file(9), 0, 1, LockKind::Read, false, false),
        Err(nlm::NlmRefusal::Denied(h)) if h.owner == a
    ));
}

/// CANCEL forgets a queued request and lets the one behind it through;
/// a host's FREE_ALL grants what waited on its locks; in grace only
/// reclaims.
#[test]
fn nlm_cancel_free_and_grace() {
    let f = Fixture::new();
    let granted = Arc::new(std::sync::Mutex::new(Vec::new()));
    let g = granted.clone();
    f.st.on_nlm_granted(Box::new(move |v| g.lock().unwrap().extend(v)));
    let (a, b, c) = (nlm_owner(1, 1), nlm_owner(2, 1), nlm_owner(3, 1));
    let w = LockKind::Write;
    f.st.nlm_lock(&a, &file(2), 0, 100, w, false, false)
        .unwrap();
    assert_eq!(
        f.st.nlm_lock(&b, &file(2), 0, 100, w, true, false),
        Err(nlm::NlmRefusal::Blocked)
    );
    assert_eq!(
        f.st.nlm_lock(&c, &file(2), 50, 60, w, true, false),
        Err(nlm::NlmRefusal::Blocked)
    );
    assert!(f.st.nlm_cancel(&b, &file(2)).0);
    assert!(!f.st.nlm_cancel(&b, &file(2)).0);
    assert!(granted.lock().unwrap().is_empty());
    // Host 1 restarts: its lock goes and c's request is granted.
    f.st.nlm_free_host(a.0);
    let g = std::mem::take(&mut *granted.lock().unwrap());
    assert_eq!(g.len(), 1);
    assert_eq!(g[0].owner, c);
    // A waiter not retried within NLM_WAIT is forgotten.
    assert_eq!(
        f.st.nlm_lock(&b, &file(2), 0, 100, w, true, false),
        Err(nlm::NlmRefusal::Blocked)
    );
    f.advance_to(s(1) + nlm::NLM_WAIT * 2);
    f.st.nlm_lock(&a, &file(2), 0, 10, w, false, false).unwrap();
    f.st.nlm_free_host(c.0);
    assert!(granted.lock().unwrap().is_empty());

    // In a grace period only reclaims are granted.
    let clock = Arc::new(super::clock::ManualClock::default());
    let prev: std::collections::HashSet<Bytes> = [Bytes::from_static(b"nlm\0host")].into();
    let st = State::recovering(7, L, clock, Records::none(), prev, L);
    assert!(st.in_grace());
    assert_eq!(
        st.nlm_lock(&a, &file(1), 0, 1, w, false, false),
        Err(nlm::NlmRefusal::Grace)
    );
    st.nlm_lock(&a, &file(1), 0, 1, w, false, true).unwrap();
    assert_eq!(
        st.nlm_share(&b, &file(1), R, 0, false),
        Err(nlm::NlmRefusal::Grace)
    );
}

/// NLM share reservations and NFSv4 opens deny each other, and deny
/// NFSv3 I/O.
#[test]
fn nlm_shares_and_nfsv4_opens() {
    let f = Fixture::new();
    let (c1, _) = f.client("v4");
    let o = Bytes::from_static(b"oo");
    let (a, b) = (nlm_owner(1, 1), nlm_owner(2, 1));
    // NLM: read, deny write.
    assert_eq!(f.st.nlm_share(&a, &file(3), R, W, false), Ok(true));
    assert!(f.st.io_denied_by_share(&file(3), W));
    assert!(!f.st.io_denied_by_share(&file(3), R));
    // NFSv4 may not open for writing; may for reading.
    assert_eq!(
        f.st.open(c1, &o, &file(3), W, 0),
        Err(NfsStat4::Nfs4errShareDenied)
    );
    f.st.open(c1, &o, &file(3), R, 0).unwrap();
    // Another NLM host may not deny reading (NFSv4 reads), may read.
    assert_eq!(f.st.nlm_share(&b, &file(3), R, R, false), Ok(false));
    assert_eq!(f.st.nlm_share(&b, &file(3), R, 0, false), Ok(true));
    // Nor write (host 1 denies it).
    assert_eq!(f.st.nlm_share(&b, &file(3), R | W, 0, false), Ok(false));
    f.st.nlm_unshare(&a, &file(3));
    assert!(!f.st.io_denied_by_share(&file(3), W));
    assert_eq!(f.st.nlm_share(&b, &file(3), R | W, 0, false), Ok(true));
    f.st.nlm_free_host(b.0);
    f.st.open(c1, &o, &file(3), W, 0).unwrap();
}
