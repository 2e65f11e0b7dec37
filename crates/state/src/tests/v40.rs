//! NFSv4.0's clients and owners on a manual clock: the bounds a client
//! cannot grow past (owners per client, client records), sequence ids
//! that wrap, and a confirmed record's grace rules.

use super::*;
use crate::v40::{Callback40, OwnerName, MAX_OWNERS};

fn id(name: &str, verf: u8) -> NfsClientId4 {
    NfsClientId4 {
        verifier: [verf; 8],
        id: Bytes::copy_from_slice(name.as_bytes()),
    }
}

const P: Principal = Principal::Sys { uid: 0, gid: 0 };

/// A confirmed NFSv4.0 client.
fn confirmed(st: &State, name: &str) -> ClientId4 {
    let (cid, verf) = st
        .setclientid(&id(name, 1), Callback40::default(), P)
        .unwrap_or_else(|e| panic!("SETCLIENTID: {e:?}"));
    st.setclientid_confirm(cid, &verf, &P, Box::new(()))
        .unwrap_or_else(|e| panic!("CONFIRM: {e:?}"));
    cid
}

fn owners(st: &State, cid: ClientId4) -> usize {
    let t = st.lock_tables();
    t.clients[&cid].v40.as_ref().map_or(0, |v| v.owners.len())
}

#[test]
fn owners_per_client_are_bounded_and_idle_ones_make_room() {
    let f = Fixture::new();
    let cid = confirmed(&f.st, "c");
    let open = OpNum4::Open as u32;
    // Owners that never hold anything: the table stays at its bound.
    for n in 0..MAX_OWNERS + 100 {
        let name = OwnerName::Open(Bytes::from(format!("o{n}")));
        assert!(matches!(
            f.st.seq_begin(cid, &name, 0, open, true, false),
            Ok(SeqStart::Run { confirm: true })
        ));
        f.st.seq_end(
            cid,
            &name,
            0,
            open,
            NfsStat4::Nfs4errNoent,
            Bytes::new(),
            None,
            None,
        );
    }
    assert_eq!(owners(&f.st, cid), MAX_OWNERS);
}

#[test]
fn owners_holding_state_are_kept_and_then_new_ones_refused() {
    let f = Fixture::new();
    let cid = confirmed(&f.st, "c");
    let open = OpNum4::Open as u32;
    for n in 0..MAX_OWNERS {
        let owner = Bytes::from(format!("o{n}"));
        let name = OwnerName::Open(owner.clone());
        f.st.seq_begin(cid, &name, 0, open, true, false).unwrap();
        let f_n: FileKey = (1, Bytes::copy_from_slice(&(n as u64).to_be_bytes()));
        f.st.open(cid, &owner, &f_n, R, 0).unwrap();
        f.st.seq_end(
            cid,
            &name,
            0,
            open,
            NfsStat4::Nfs4Ok,
            Bytes::new(),
            None,
            None,
        );
    }
    let more = OwnerName::Open(Bytes::from_static(b"one more"));
    assert_eq!(
        f.st.seq_begin(cid, &more, 0, open, true, false),
        Err(NfsStat4::Nfs4errResource)
    );
    assert_eq!(owners(&f.st, cid), MAX_OWNERS);
}

#[test]
fn a_setclientid_flood_is_bounded_by_the_client_table() {
    let clock = Arc::new(ManualClock::default());
    let st = State::new(7, L, clock.clone()).with_max_clients(50);
    let mut refused = 0;
    for n in 0..200 {
        match st.setclientid(&id(&format!("flood{n}"), 1), Callback40::default(), P) {
            Ok(_) => {}
            Err(Err(NfsStat4::Nfs4errResource)) => refused += 1,
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(refused, 150);
    assert_eq!(st.client_count(), 50);
    // Unconfirmed records go after a lease: room again.
    clock.advance(L * 2);
    assert!(st
        .setclientid(&id("later", 1), Callback40::default(), P)
        .is_ok());
}

#[test]
fn sequence_ids_wrap() {
    let f = Fixture::new();
    let cid = confirmed(&f.st, "c");
    let lock = OpNum4::LockU as u32;
    let name = OwnerName::Lock(Bytes::from_static(b"l"));
    f.st.seq_begin(cid, &name, u32::MAX, lock, false, false)
        .unwrap();
    f.st.seq_end(
        cid,
        &name,
        u32::MAX,
        lock,
        NfsStat4::Nfs4Ok,
        Bytes::from_static(b"r"),
        None,
        None,
    );
    assert_eq!(
        f.st.seq_begin(cid, &name, u32::MAX, lock, false, false),
        Ok(SeqStart::Replay(Bytes::from_static(b"r")))
    );
    assert_eq!(
        f.st.seq_begin(cid, &name, 0, lock, false, false),
        Ok(SeqStart::Run { confirm: false })
    );
    // Running: a second request of the owner waits.
    assert_eq!(
        f.st.seq_begin(cid, &name, 1, lock, false, false),
        Err(NfsStat4::Nfs4errDelay)
    );
    f.st.seq_abandon(cid, &name);
    assert_eq!(
        f.st.seq_begin(cid, &name, 1, lock, false, false),
        Err(NfsStat4::Nfs4errBadSeqid)
    );
}

#[test]
fn nfsv40_clients_reclaim_in_grace_and_take_new_state_after() {
    let clock = Arc::new(ManualClock::default());
    let records = Arc::new(crate::records::RecordQueue::new(false));
    let previous: HashSet<Bytes> = [Bytes::from_static(b"old")].into_iter().collect();
    let st = State::recovering(7, L, clock.clone(), records, previous, L);
    let old = confirmed(&st, "old");
    let new = confirmed(&st, "new");
    assert_eq!(st.may_take_state(old, true), Ok(()));
    assert_eq!(st.may_take_state(old, false), Err(NfsStat4::Nfs4errGrace));
    assert_eq!(st.may_take_state(new, true), Err(NfsStat4::Nfs4errNoGrace));
    // No RECLAIM_COMPLETE in NFSv4.0: the period runs its time.
    assert!(!st.grace_due());
    clock.advance(L * 4);
    assert!(st.grace_due());
    st.end_grace();
    assert_eq!(st.may_take_state(new, false), Ok(()));
    assert_eq!(st.may_take_state(old, true), Err(NfsStat4::Nfs4errNoGrace));
}

#[test]
fn a_downgrade_goes_only_to_modes_an_open_asked_for() {
    let f = Fixture::new();
    let cid = confirmed(&f.st, "c");
    let o = Bytes::from_static(b"o");
    let both = R | W;
    // Opened for both only: not down to reading (RFC 7530 §16.19.4).
    let sid = f.st.open(cid, &o, &file(1), both, 0).unwrap();
    assert_eq!(
        f.st.downgrade(cid, &sid, &file(1), R, 0),
        Err(NfsStat4::Nfs4errInval)
    );
    // Opened for reading, then both: down to reading, then not to
    // writing (gone with the downgrade).
    f.st.open(cid, &o, &file(2), R, 0).unwrap();
    let sid = f.st.open(cid, &o, &file(2), both, 0).unwrap();
    let sid = f.st.downgrade(cid, &sid, &file(2), R, 0).unwrap();
    assert_eq!(
        f.st.downgrade(cid, &sid, &file(2), W, 0),
        Err(NfsStat4::Nfs4errInval)
    );
    // Writing asked for again: down to it.
    let sid = f.st.open(cid, &o, &file(2), W, 0).unwrap();
    let sid = f.st.downgrade(cid, &sid, &file(2), W, 0).unwrap();
    assert_eq!(
        f.st.downgrade(cid, &sid, &file(2), R, 0),
        Err(NfsStat4::Nfs4errInval)
    );
}
