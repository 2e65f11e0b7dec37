//! NLM's locks and shares in the same tables as NFSv4's.

use super::*;

/// An NLM owner of host `h`.
fn nlm_owner(h: u32, svid: u8) -> OwnerKey {
    (
        crate::nlm::nlm_client(h),
        Bytes::copy_from_slice(&[svid; 4]),
    )
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
        Err(crate::nlm::NlmRefusal::Denied(h)) => assert_eq!(h.owner.0, c1),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        f.st.nlm_lock(&b, &file(1), 2, 3, LockKind::Read, true, false),
        Err(crate::nlm::NlmRefusal::Blocked)
    );
    // A later NLM owner may not jump the queue.
    assert!(matches!(
        f.st.nlm_lock(&a, &file(1), 0, 5, LockKind::Write, false, false),
        Err(crate::nlm::NlmRefusal::Denied(_))
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
        Err(crate::nlm::NlmRefusal::Denied(h)) if h.owner == b
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
        Err(crate::nlm::NlmRefusal::Denied(h)) if h.owner == a
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
        Err(crate::nlm::NlmRefusal::Blocked)
    );
    assert_eq!(
        f.st.nlm_lock(&c, &file(2), 50, 60, w, true, false),
        Err(crate::nlm::NlmRefusal::Blocked)
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
        Err(crate::nlm::NlmRefusal::Blocked)
    );
    f.advance_to(s(1) + crate::nlm::NLM_WAIT * 2);
    f.st.nlm_lock(&a, &file(2), 0, 10, w, false, false).unwrap();
    f.st.nlm_free_host(c.0);
    assert!(granted.lock().unwrap().is_empty());

    // In a grace period only reclaims are granted.
    let clock = Arc::new(super::clock::ManualClock::default());
    let prev: std::collections::HashSet<Bytes> = [Bytes::from_static(b"nlm\0host")].into();
    let st = State::recovering(
        7,
        L,
        clock,
        Arc::new(crate::records::RecordQueue::new(false)),
        prev,
        L,
    );
    assert!(st.in_grace());
    assert_eq!(
        st.nlm_lock(&a, &file(1), 0, 1, w, false, false),
        Err(crate::nlm::NlmRefusal::Grace)
    );
    st.nlm_lock(&a, &file(1), 0, 1, w, false, true).unwrap();
    assert_eq!(
        st.nlm_share(&b, &file(1), R, 0, false),
        Err(crate::nlm::NlmRefusal::Grace)
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
