//! pNFS layouts (RFC 8881 §12.5): stateids and seqids, returns, recalls,
//! and layouts lost to an unanswered recall or a lease run out.

use super::clients::FakeConn;
use super::*;
use crate::layouts::{LayoutLost, RecallScope};
use LayoutIoMode4::{Any, Read, Rw};

const ALL: u64 = u64::MAX;

fn fh(n: u8) -> Bytes {
    Bytes::copy_from_slice(&[n; 4])
}

/// A fixture whose lost layouts are collected.
fn layout_fixture() -> (Fixture, Arc<Mutex<Vec<LayoutLost>>>) {
    let f = Fixture::new();
    let lost = Arc::new(Mutex::new(Vec::new()));
    let l = lost.clone();
    f.st.on_layouts_lost(Box::new(move |v| l.lock().unwrap().extend(v)));
    (f, lost)
}

/// A client with a session that can be called back.
fn callable(f: &Fixture, name: &str, id: u64) -> ClientId4 {
    callable_session(f, name, id).0
}

fn callable_session(f: &Fixture, name: &str, id: u64) -> (ClientId4, SessionId4) {
    let (c, s) = f.client(name);
    let session = f.st.session(&s).unwrap();
    let conn: Arc<dyn BackConn> = Arc::new(FakeConn {
        id,
        closed: Default::default(),
    });
    f.st.bind_back(&session, &conn);
    (c, s)
}

fn open(f: &Fixture, c: ClientId4, n: u8) -> StateId4 {
    f.st.open(c, &Bytes::from_static(b"o"), &file(n), R | W, 0)
        .unwrap()
}

#[test]
fn layoutget_starts_from_an_open_and_goes_on_with_its_own_stateid() {
    let (f, _) = layout_fixture();
    let a = callable(&f, "a", 1);
    let b = callable(&f, "b", 2);
    let os = open(&f, a, 1);
    let l1 =
        f.st.layout_get(a, &os, &file(1), &fh(1), Rw, 0, 100)
            .unwrap();
    assert_ne!(l1.other, os.other);
    assert_eq!(l1.seqid, 1);
    // The layout stateid, any seqid since the last return, goes on.
    let l2 =
        f.st.layout_get(a, &l1, &file(1), &fh(1), Read, 100, ALL)
            .unwrap();
    assert_eq!((l2.other, l2.seqid), (l1.other, 2));
    let l3 =
        f.st.layout_get(a, &l1, &file(1), &fh(1), Rw, 100, 200)
            .unwrap();
    assert_eq!(l3.seqid, 3);
    // One from the future, another client's, another file's, or a
    // forged one is refused.
    let future = StateId4 { seqid: 9, ..l3 };
    assert_eq!(
        f.st.layout_get(a, &future, &file(1), &fh(1), Rw, 0, 1),
        Err(NfsStat4::Nfs4errBadStateid)
    );
    assert_eq!(
        f.st.layout_get(b, &l3, &file(1), &fh(1), Rw, 0, 1),
        Err(NfsStat4::Nfs4errBadStateid)
    );
    assert_eq!(
        f.st.layout_get(a, &l3, &file(2), &fh(2), Rw, 0, 1),
        Err(NfsStat4::Nfs4errBadStateid)
    );
    let mut forged = l3;
    forged.other[11] ^= 0x55;
    assert_eq!(
        f.st.layout_get(a, &forged, &file(1), &fh(1), Rw, 0, 1),
        Err(NfsStat4::Nfs4errBadStateid)
    );
    // Not usable for I/O through the metadata server.
    assert_eq!(
        f.st.check_io(a, &l3, &file(1), R),
        Err(NfsStat4::Nfs4errBadStateid)
    );
    // A return leaves a barrier: a LAYOUTGET sent before it is old.
    let r =
        f.st.layout_return_file(a, &l3, &file(1), Rw, 0, 50)
            .unwrap()
            .unwrap();
    assert_eq!(r.seqid, 4);
    assert_eq!(
        f.st.layout_get(a, &l3, &file(1), &fh(1), Rw, 0, 1),
        Err(NfsStat4::Nfs4errOldStateid)
    );
    // So is a return with an old seqid.
    assert_eq!(
        f.st.layout_return_file(a, &l3, &file(1), Any, 0, ALL),
        Err(NfsStat4::Nfs4errOldStateid)
    );
    // Held: FREE_STATEID refuses; everything returned, the stateid goes.
    assert_eq!(f.st.free_stateid(a, &r), Err(NfsStat4::Nfs4errLocksHeld));
    assert_eq!(
        f.st.layout_return_file(a, &r, &file(1), Any, 0, ALL),
        Ok(None)
    );
    assert_eq!(
        f.st.test_stateids(a, &[r]),
        vec![NfsStat4::Nfs4errBadStateid]
    );
    assert!(!f.st.layouts_outstanding());
}

#[test]
fn layoutcommit_needs_an_rw_layout_of_the_file() {
    let (f, _) = layout_fixture();
    let a = callable(&f, "a", 1);
    let os = open(&f, a, 1);
    let l =
        f.st.layout_get(a, &os, &file(1), &fh(1), Read, 0, ALL)
            .unwrap();
    assert_eq!(
        f.st.layout_commit_check(a, &l, &file(1)),
        Err(NfsStat4::Nfs4errBadiomode)
    );
    let l =
        f.st.layout_get(a, &l, &file(1), &fh(1), Rw, 0, ALL)
            .unwrap();
    assert_eq!(f.st.layout_commit_check(a, &l, &file(1)), Ok(()));
    assert_eq!(
        f.st.layout_commit_check(a, &os, &file(1)),
        Err(NfsStat4::Nfs4errBadStateid)
    );
    let newer = StateId4 {
        seqid: l.seqid + 1,
        ..l
    };
    assert_eq!(
        f.st.layout_commit_check(a, &newer, &file(1)),
        Err(NfsStat4::Nfs4errBadStateid)
    );
}

#[test]
fn a_change_recalls_other_clients_layouts_and_waits_for_their_return() {
    let (f, lost) = layout_fixture();
    let a = callable(&f, "a", 1);
    let (b, sb) = callable_session(&f, "b", 2);
    let la =
        f.st.layout_get(a, &open(&f, a, 1), &file(1), &fh(1), Rw, 0, ALL)
            .unwrap();
    let lb =
        f.st.layout_get(b, &open(&f, b, 1), &file(1), &fh(1), Read, 0, ALL)
            .unwrap();
    // A read through the metadata server by b recalls a's RW layout only.
    let br = f.st.break_layouts(&file(1), Some(b), true);
    assert!(br.pending);
    assert_eq!(br.recalls.len(), 1);
    assert_eq!(br.recalls[0].client, a);
    let RecallScope::File(rsid, rfh) = &br.recalls[0].scope else {
        panic!("a file recall")
    };
    assert_eq!(
        (rsid.other, rsid.seqid, rfh),
        (la.other, la.seqid + 1, &fh(1))
    );
    assert_eq!(br.recalls[0].iomode, Rw);
    // Recalled once; while it is, a's LAYOUTGET is refused.
    assert!(f
        .st
        .break_layouts(&file(1), Some(b), true)
        .recalls
        .is_empty());
    assert_eq!(
        f.st.layout_get(a, rsid, &file(1), &fh(1), Rw, 0, 1),
        Err(NfsStat4::Nfs4errRecallconflict)
    );
    // The return answers it.
    assert_eq!(
        f.st.layout_return_file(a, rsid, &file(1), Rw, 0, ALL),
        Ok(None)
    );
    assert!(!f.st.break_layouts(&file(1), Some(b), true).pending);
    // A change by NFSv3 (no client) recalls b's READ layout too.
    let br = f.st.break_layouts(&file(1), None, false);
    assert!(br.pending && br.recalls.len() == 1 && br.recalls[0].client == b);
    // b does not answer: a lease later the layout is lost (fenced).
    f.clock.advance(L + s(1));
    f.st.renew(&f.st.session(&sb).unwrap());
    f.st.reap();
    assert_eq!(
        *lost.lock().unwrap(),
        vec![LayoutLost {
            file: file(1),
            client: b,
            rw: false
        }]
    );
    assert_eq!(
        f.st.test_stateids(b, &[lb]),
        vec![NfsStat4::Nfs4errBadStateid]
    );
    assert!(!f.st.break_layouts(&file(1), None, false).pending);
}

#[test]
fn layouts_go_with_a_lease_and_cannot_be_recalled_without_a_back_channel() {
    let (f, lost) = layout_fixture();
    let a = callable(&f, "a", 1);
    let (c, _) = f.client("c"); // no back channel
    f.st.layout_get(a, &open(&f, a, 1), &file(1), &fh(1), Rw, 0, ALL)
        .unwrap();
    f.st.layout_get(c, &open(&f, c, 2), &file(2), &fh(2), Rw, 0, ALL)
        .unwrap();
    // c cannot be recalled: its layout is lost at once, nothing waits.
    let br = f.st.break_layouts(&file(2), None, false);
    assert!(!br.pending && br.recalls.is_empty());
    assert_eq!(lost.lock().unwrap().len(), 1);
    // a stops renewing: its layouts are lost when the lease runs out,
    // though its other state is kept in courtesy.
    f.clock.advance(L + s(1));
    f.st.reap();
    let v = lost.lock().unwrap().clone();
    assert_eq!(v.len(), 2);
    assert_eq!(
        v[1],
        LayoutLost {
            file: file(1),
            client: a,
            rw: true
        }
    );
    assert!(!f.st.layouts_outstanding());
}

#[test]
fn bulk_returns_and_recalls_cover_an_export_or_everything() {
    let (f, _) = layout_fixture();
    let a = callable(&f, "a", 1);
    let other_export: FileKey = (2, Bytes::from_static(b"x"));
    f.st.layout_get(a, &open(&f, a, 1), &file(1), &fh(1), Rw, 0, ALL)
        .unwrap();
    f.st.layout_get(a, &open(&f, a, 2), &file(2), &fh(2), Read, 0, ALL)
        .unwrap();
    let os =
        f.st.open(a, &Bytes::from_static(b"o"), &other_export, R, 0)
            .unwrap();
    f.st.layout_get(a, &os, &other_export, &fh(3), Read, 0, ALL)
        .unwrap();
    let r = f.st.recall_all_layouts(Some(1));
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].scope, RecallScope::Fsid(1));
    let back = f.st.layout_return_bulk(a, Some(1), Any);
    assert_eq!(back.files.len(), 2);
    assert!(back.files.iter().any(|(k, rw)| k == &file(1) && *rw));
    assert_eq!(f.st.layouts_of(a).len(), 1);
    f.st.layout_return_bulk(a, None, Any);
    assert!(f.st.layouts_of(a).is_empty());
}

#[test]
fn no_layout_in_the_grace_period() {
    let clock = Arc::new(ManualClock::default());
    let st = State::recovering(
        7,
        L,
        clock.clone(),
        Arc::new(records::RecordQueue::new(false)),
        [Bytes::from_static(b"someone")].into_iter().collect(),
        L,
    );
    let f = Fixture { clock, st };
    let x = f.exchange("a");
    f.st.create_session(f.session_req(x.clientid, x.sequenceid, 0))
        .unwrap();
    let os = StateId4 {
        seqid: 1,
        other: [0; 12],
    };
    assert_eq!(
        f.st.layout_get(x.clientid, &os, &file(1), &fh(1), Rw, 0, ALL),
        Err(NfsStat4::Nfs4errGrace)
    );
}

#[test]
fn layouts_near_the_most_held_are_asked_back_and_beyond_it_refused() {
    let clock = Arc::new(ManualClock::default());
    let st = State::new(7, L, clock.clone()).with_max_layouts(2);
    let f = Fixture { clock, st };
    let a = callable(&f, "a", 1);
    f.st.layout_get(a, &open(&f, a, 1), &file(1), &fh(1), Rw, 0, ALL)
        .unwrap();
    assert!(f.st.layout_recall_any().is_empty(), "half full");
    f.st.layout_get(a, &open(&f, a, 2), &file(2), &fh(2), Rw, 0, ALL)
        .unwrap();
    let asked = f.st.layout_recall_any();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].1, 1, "keep half");
    assert!(f.st.layout_recall_any().is_empty(), "not again at once");
    assert_eq!(
        f.st.layout_get(a, &open(&f, a, 3), &file(3), &fh(3), Rw, 0, ALL),
        Err(NfsStat4::Nfs4errLayouttrylater)
    );
}
