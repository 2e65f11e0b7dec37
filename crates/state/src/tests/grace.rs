//! Restarts: the grace period, reclaims and the client table's bound.

use super::*;

/// A state after a restart: "a" and "b" were recorded before it.
pub(super) fn restarted() -> Fixture {
    let clock = Arc::new(ManualClock::default());
    let previous = ["a", "b"]
        .iter()
        .map(|n| Bytes::from(n.to_string()))
        .collect();
    let st = State::recovering(
        7,
        L,
        clock.clone(),
        Arc::new(crate::records::RecordQueue::new(false)),
        previous,
        L,
    );
    Fixture { clock, st }
}

impl Fixture {
    /// A confirmed client with a session that has not reclaimed yet.
    pub(super) fn reclaiming(&self, name: &str) -> ClientId4 {
        let x = self.exchange(name);
        self.st
            .create_session(self.session_req(x.clientid, x.sequenceid, 0))
            .unwrap();
        x.clientid
    }

    pub(super) fn reclaim_lock(
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

pub(super) fn status(r: Result<StateId4, LockError>) -> NfsStat4 {
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
    let window = crate::grace::progress_window(L);
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
    let cap = crate::grace::grace_cap(L, L, 2);
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
