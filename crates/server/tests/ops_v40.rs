//! NFSv4.0 in process (RFC 7530): SETCLIENTID and its confirmation
//! (§16.33, §16.34), OPEN and OPEN_CONFIRM (§16.16, §16.18), open and lock
//! owners' sequence ids and the replay of their last reply (§9.1.7),
//! RENEW and leases (§16.29, §9.5), RELEASE_LOCKOWNER (§16.37), which
//! operations an NFSv4.0 COMPOUND may hold, and an NFSv4.0 and an NFSv4.1
//! client contending for one file.

mod common;

use common::*;

/// An NFSv4.0 client: its client id and credential.
struct C40 {
    id: ClientId4,
    auth: rpc::Auth,
}

async fn v40(h: &InProcess, auth: &rpc::Auth, ops: &[NfsArgOp4]) -> Compound4Res {
    h.compound_v(auth, 0, ops).await
}

fn setclientid(name: &str, verf: u8) -> NfsArgOp4 {
    NfsArgOp4::SetClientId(SetClientId4Args {
        client: NfsClientId4 {
            verifier: [verf; 8],
            id: b(name),
        },
        callback: CbClient4 {
            cb_program: 0x4000_0000,
            cb_location: NetAddr4 {
                netid: "tcp".into(),
                addr: "0.0.0.0.0.0".into(),
            },
        },
        callback_ident: 1,
    })
}

fn confirm(id: ClientId4, verf: Verifier4) -> NfsArgOp4 {
    NfsArgOp4::SetClientIdConfirm(SetClientIdConfirm4Args {
        clientid: id,
        setclientid_confirm: verf,
    })
}

/// SETCLIENTID and SETCLIENTID_CONFIRM of `name` with verifier `verf`.
async fn client_as(h: &InProcess, name: &str, verf: u8, auth: rpc::Auth) -> C40 {
    let r = v40(h, &auth, &[setclientid(name, verf)]).await;
    let Some(NfsResOp4::SetClientId(SetClientId4Res::Ok(ok))) = r.resarray.first() else {
        panic!("SETCLIENTID: {r:?}");
    };
    let ok = *ok;
    ok_(&v40(h, &auth, &[confirm(ok.clientid, ok.setclientid_confirm)]).await);
    C40 {
        id: ok.clientid,
        auth,
    }
}

async fn client(h: &InProcess, name: &str) -> C40 {
    client_as(h, name, 1, root_auth()).await
}

#[track_caller]
fn ok_(r: &Compound4Res) {
    assert_eq!(r.status, NfsStat4::Nfs4Ok, "{r:?}");
}

fn owner40(c: &C40, name: &str) -> StateOwner4 {
    StateOwner4 {
        clientid: c.id,
        owner: b(name),
    }
}

/// OPEN of `name` (created if missing) for reading and writing.
fn open40(c: &C40, owner: &str, seqid: u32, name: &str, deny: u32) -> NfsArgOp4 {
    NfsArgOp4::Open(Open4Args {
        seqid,
        share_access: OPEN4_SHARE_ACCESS_BOTH,
        share_deny: deny,
        owner: owner40(c, owner),
        openhow: OpenFlag4::Create(CreateHow4::Unchecked(mode_attr(0o644).encode())),
        claim: OpenClaim4::Null(b(name)),
    })
}

fn open_confirm(sid: StateId4, seqid: u32) -> NfsArgOp4 {
    NfsArgOp4::OpenConfirm(OpenConfirm4Args {
        open_stateid: sid,
        seqid,
    })
}

fn close40(sid: StateId4, seqid: u32) -> NfsArgOp4 {
    NfsArgOp4::Close(Close4Args {
        seqid,
        open_stateid: sid,
    })
}

fn lock40(
    c: &C40,
    open_sid: StateId4,
    open_seqid: u32,
    owner: &str,
    range: (u64, u64),
) -> NfsArgOp4 {
    NfsArgOp4::Lock(Lock4Args {
        locktype: NfsLockType4::WriteLt,
        reclaim: false,
        offset: range.0,
        length: range.1,
        locker: Locker4::OpenOwner(OpenToLockOwner4 {
            open_seqid,
            open_stateid: open_sid,
            lock_seqid: 0,
            lock_owner: owner40(c, owner),
        }),
    })
}

fn locku40(sid: StateId4, seqid: u32, range: (u64, u64)) -> NfsArgOp4 {
    NfsArgOp4::LockU(LockU4Args {
        locktype: NfsLockType4::WriteLt,
        seqid,
        lock_stateid: sid,
        offset: range.0,
        length: range.1,
    })
}

fn open_ok(r: &Compound4Res, i: usize) -> Open4ResOk {
    match r.resarray.get(i) {
        Some(NfsResOp4::Open(Open4Res::Ok(ok))) => ok.clone(),
        _ => panic!("result {i} is not an OK OPEN: {r:?}"),
    }
}

fn status_at(r: &Compound4Res, i: usize) -> NfsStat4 {
    r.resarray
        .get(i)
        .map(|x| x.status())
        .unwrap_or_else(|| panic!("no result {i}: {r:?}"))
}

/// A file `name` opened and confirmed by `owner` of `c` (its first
/// OPEN, seqid 0, then OPEN_CONFIRM with 1): its handle and open stateid.
async fn opened(h: &InProcess, c: &C40, owner: &str, name: &str) -> (NfsFh4, StateId4) {
    let r = v40(
        h,
        &c.auth,
        &[
            putroot(),
            open40(c, owner, 0, name, OPEN4_SHARE_DENY_NONE),
            getfh(),
        ],
    )
    .await;
    ok_(&r);
    let o = open_ok(&r, 1);
    assert_ne!(o.rflags & OPEN4_RESULT_CONFIRM, 0, "a new owner confirms");
    assert_eq!(
        o.rflags & OPEN4_RESULT_MAY_NOTIFY_LOCK,
        0,
        "no NFSv4.1 flags"
    );
    let fh = fh_at(&r, 2);
    let r = v40(h, &c.auth, &[putfh(&fh), open_confirm(o.stateid, 1)]).await;
    ok_(&r);
    let Some(NfsResOp4::OpenConfirm(Res4::Ok(c))) = r.resarray.get(1) else {
        panic!("OPEN_CONFIRM: {r:?}");
    };
    assert_eq!(c.open_stateid.seqid, o.stateid.seqid + 1);
    (fh, c.open_stateid)
}

#[tokio::test]
async fn open_confirm_write_close_with_owner_sequence() {
    let h = server();
    let c = client(&h, "c40").await;
    let (fh, sid) = opened(&h, &c, "o", "f").await;
    ok_(&v40(&h, &c.auth, &[putfh(&fh), write(sid, 0, b"four")]).await);
    // The owner is confirmed now: its next OPEN needs no confirmation.
    let r = v40(&h, &c.auth, &[putroot(), open40(&c, "o", 2, "f", 0)]).await;
    ok_(&r);
    let o = open_ok(&r, 1);
    assert_eq!(o.rflags & OPEN4_RESULT_CONFIRM, 0);
    // A confirmed owner cannot be confirmed again.
    let r = v40(&h, &c.auth, &[putfh(&fh), open_confirm(o.stateid, 3)]).await;
    assert_eq!(r.status, NfsStat4::Nfs4errBadStateid, "{r:?}");
    // BAD_STATEID does not move the sequence on: 3 is next.
    ok_(&v40(&h, &c.auth, &[putfh(&fh), close40(o.stateid, 3)]).await);
    assert_eq!(content(&h, &crate_session(&h).await, &fh).await, b("four"));
}

/// A session of an NFSv4.1 client, to look at what NFSv4.0 did.
async fn crate_session(h: &InProcess) -> Session {
    h.client("v41-reader").await
}

#[tokio::test]
async fn a_retransmission_gets_the_first_reply_and_others_bad_seqid() {
    let h = server();
    let c = client(&h, "c40").await;
    let (fh, sid) = opened(&h, &c, "o", "f").await;
    // Skipping a sequence id, or going back past the last, is refused
    // without moving the sequence.
    for seqid in [5, 0, 1u32.wrapping_sub(2)] {
        let r = v40(&h, &c.auth, &[putfh(&fh), close40(sid, seqid)]).await;
        assert_eq!(r.status, NfsStat4::Nfs4errBadSeqid, "seqid {seqid}: {r:?}");
    }
    let first = v40(&h, &c.auth, &[putfh(&fh), close40(sid, 2)]).await;
    ok_(&first);
    // The same CLOSE again (a new xid: not the duplicate request cache)
    // after its stateid is gone: the owner's last reply.
    let again = v40(&h, &c.auth, &[putfh(&fh), close40(sid, 2)]).await;
    assert_eq!(again, first);
    // The same sequence id for another operation is not a replay.
    let r = v40(&h, &c.auth, &[putroot(), open40(&c, "o", 2, "f", 0)]).await;
    assert_eq!(status_at(&r, 1), NfsStat4::Nfs4errBadSeqid, "{r:?}");
}

#[tokio::test]
async fn errors_move_the_sequence_on_but_not_the_stateid_ones() {
    let h = server();
    let c = client(&h, "c40").await;
    let (fh, sid) = opened(&h, &c, "o", "f").await;
    // NOENT counts (RFC 7530 §9.1.7): 2 is used up.
    let r = v40(
        &h,
        &c.auth,
        &[
            putroot(),
            NfsArgOp4::Open(Open4Args {
                seqid: 2,
                share_access: OPEN4_SHARE_ACCESS_READ,
                share_deny: 0,
                owner: owner40(&c, "o"),
                openhow: OpenFlag4::NoCreate,
                claim: OpenClaim4::Null(b("missing")),
            }),
        ],
    )
    .await;
    assert_eq!(status_at(&r, 1), NfsStat4::Nfs4errNoent);
    // A stale stateid does not count: 3 is still next.
    let r = v40(&h, &c.auth, &[putfh(&fh), close40(stale(sid), 3)]).await;
    assert_eq!(r.status, NfsStat4::Nfs4errStaleStateid, "{r:?}");
    ok_(&v40(&h, &c.auth, &[putfh(&fh), close40(sid, 3)]).await);
}

#[tokio::test]
async fn locks_have_their_own_owner_sequence_and_are_released() {
    let h = server();
    let c = client(&h, "c40").await;
    let (fh, sid) = opened(&h, &c, "o", "f").await;
    let r = v40(
        &h,
        &c.auth,
        &[putfh(&fh), lock40(&c, sid, 2, "lo", (0, 10))],
    )
    .await;
    ok_(&r);
    let lsid = lock_sid_at(&r, 1);
    // A retransmission of the LOCK that made the lock owner: the same
    // reply, from the open owner's sequence.
    let again = v40(
        &h,
        &c.auth,
        &[putfh(&fh), lock40(&c, sid, 2, "lo", (0, 10))],
    )
    .await;
    assert_eq!(again, r);
    let release = NfsArgOp4::ReleaseLockOwner(ReleaseLockOwner4Args {
        lock_owner: owner40(&c, "lo"),
    });
    let r = v40(&h, &c.auth, std::slice::from_ref(&release)).await;
    assert_eq!(r.status, NfsStat4::Nfs4errLocksHeld, "{r:?}");
    // The lock owner's sequence began at lock_seqid 0.
    let r = v40(&h, &c.auth, &[putfh(&fh), locku40(lsid, 2, (0, 10))]).await;
    assert_eq!(r.status, NfsStat4::Nfs4errBadSeqid, "{r:?}");
    ok_(&v40(&h, &c.auth, &[putfh(&fh), locku40(lsid, 1, (0, 10))]).await);
    ok_(&v40(&h, &c.auth, &[release]).await);
    // The lock stateid went with its owner.
    let r = v40(&h, &c.auth, &[putfh(&fh), locku40(lsid, 2, (0, 10))]).await;
    assert_eq!(r.status, NfsStat4::Nfs4errBadStateid, "{r:?}");
    ok_(&v40(&h, &c.auth, &[putfh(&fh), close40(sid, 3)]).await);
}

#[tokio::test]
async fn only_its_own_operations_are_in_an_nfsv40_compound() {
    let h = server();
    let c = client(&h, "c40").await;
    // NFSv4.1's operations are illegal in NFSv4.0 (RFC 7530 §15.2).
    let r = v40(
        &h,
        &c.auth,
        &[
            putroot(),
            NfsArgOp4::ReclaimComplete(ReclaimComplete4Args { one_fs: false }),
        ],
    )
    .await;
    assert_eq!(r.status, NfsStat4::Nfs4errOpIllegal);
    assert!(
        matches!(r.resarray.get(1), Some(NfsResOp4::Illegal(_))),
        "{r:?}"
    );
    // NFSv4.0's are not supported in NFSv4.1 (RFC 8881 §18: MNI).
    let r = h.compound(&root_auth(), &[setclientid("x", 1)]).await;
    assert_eq!(r.status, NfsStat4::Nfs4errNotsupp, "{r:?}");
    let s = h.client("v41").await;
    let r = h
        .seq(
            &s,
            &[NfsArgOp4::Renew(Renew4Args {
                clientid: s.clientid,
            })],
        )
        .await;
    assert_eq!(r.status, NfsStat4::Nfs4errNotsupp, "{r:?}");
    // An NFSv4.0 client gets no NFSv4.1 attributes.
    let r = v40(
        &h,
        &c.auth,
        &[putroot(), getattr(&[FATTR4_SUPPORTED_ATTRS])],
    )
    .await;
    ok_(&r);
    let sup = attrs_at(&r, 1).supported_attrs.expect("supported_attrs");
    assert!(sup.contains(FATTR4_MOUNTED_ON_FILEID));
    assert!(sup.iter().all(|a| a <= FATTR4_MOUNTED_ON_FILEID), "{sup:?}");
    // A COMPOUND longer than the server takes: NFS4ERR_RESOURCE.
    let many = vec![putroot(); 1000];
    assert_eq!(
        v40(&h, &c.auth, &many).await.status,
        NfsStat4::Nfs4errResource
    );
}

#[tokio::test]
async fn setclientid_cases() {
    let h = server();
    let c = client(&h, "same").await;
    let (fh, sid) = opened(&h, &c, "o", "f").await;
    // The same id string, verifier and principal: the callback is
    // updated, the client id and its state kept.
    let again = client(&h, "same").await;
    assert_eq!(again.id, c.id);
    ok_(&v40(&h, &c.auth, &[putfh(&fh), write(sid, 0, b"kept")]).await);
    // Another principal while it holds state: in use.
    let r = v40(&h, &user_auth(), &[setclientid("same", 1)]).await;
    assert!(
        matches!(
            r.resarray.first(),
            Some(NfsResOp4::SetClientId(SetClientId4Res::ClidInuse(_)))
        ),
        "{r:?}"
    );
    // A wrong confirm verifier, or a client id of no record.
    let r = v40(&h, &c.auth, &[confirm(c.id, [9; 8])]).await;
    assert_eq!(r.status, NfsStat4::Nfs4errStaleClientid);
    let r = v40(&h, &c.auth, &[confirm(0, [0; 8])]).await;
    assert_eq!(r.status, NfsStat4::Nfs4errStaleClientid);
    // A new verifier: the client rebooted. Its new record, once
    // confirmed, replaces the old one and its state: the old stateid has
    // expired (RFC 7530 §9.6.3), the old client id too.
    let rebooted = client_as(&h, "same", 2, root_auth()).await;
    assert_ne!(rebooted.id, c.id);
    let r = v40(&h, &c.auth, &[putfh(&fh), close40(sid, 2)]).await;
    assert_eq!(r.status, NfsStat4::Nfs4errExpired, "{r:?}");
    let r = v40(
        &h,
        &c.auth,
        &[NfsArgOp4::Renew(Renew4Args { clientid: c.id })],
    )
    .await;
    assert_eq!(r.status, NfsStat4::Nfs4errExpired, "{r:?}");
    ok_(&v40(
        &h,
        &c.auth,
        &[NfsArgOp4::Renew(Renew4Args {
            clientid: rebooted.id,
        })],
    )
    .await);
    // An unconfirmed record takes no state.
    let r = v40(&h, &c.auth, &[setclientid("fresh", 1)]).await;
    let Some(NfsResOp4::SetClientId(SetClientId4Res::Ok(u))) = r.resarray.first() else {
        panic!("{r:?}");
    };
    let unconfirmed = C40 {
        id: u.clientid,
        auth: root_auth(),
    };
    let r = v40(
        &h,
        &c.auth,
        &[putroot(), open40(&unconfirmed, "o", 0, "g", 0)],
    )
    .await;
    assert_eq!(status_at(&r, 1), NfsStat4::Nfs4errStaleClientid, "{r:?}");
}

#[tokio::test]
async fn an_nfsv40_and_an_nfsv41_client_contend_for_one_file() {
    let h = server();
    let c = client(&h, "c40").await;
    let s = h.client("c41").await;
    let (fh, sid) = opened(&h, &c, "o", "f").await;
    let r = v40(
        &h,
        &c.auth,
        &[putfh(&fh), lock40(&c, sid, 2, "lo", (0, 100))],
    )
    .await;
    ok_(&r);
    let lsid = lock_sid_at(&r, 1);
    // The NFSv4.1 client is refused the range and told who holds it.
    let r = h
        .seq(
            &s,
            &[putfh(&fh), open_fh(&s, "o41", OPEN4_SHARE_ACCESS_BOTH, 0)],
        )
        .await;
    ok_(&r);
    let sid41 = sid_at(&r, 2);
    let r = h
        .seq(
            &s,
            &[
                putfh(&fh),
                lock_new(&s, NfsLockType4::WriteLt, 50, 10, sid41, "lo41"),
            ],
        )
        .await;
    fails(&r, OpNum4::Lock, NfsStat4::Nfs4errDenied);
    assert_eq!(denied_at(&r, 2).owner.clientid, c.id);
    // Once the NFSv4.0 owner unlocks, the NFSv4.1 client gets it, and
    // then the NFSv4.0 client is refused.
    ok_(&v40(&h, &c.auth, &[putfh(&fh), locku40(lsid, 1, (0, 100))]).await);
    let r = h
        .seq(
            &s,
            &[
                putfh(&fh),
                lock_new(&s, NfsLockType4::WriteLt, 50, 10, sid41, "lo41"),
            ],
        )
        .await;
    ok_(&r);
    let more = NfsArgOp4::Lock(Lock4Args {
        locktype: NfsLockType4::WriteLt,
        reclaim: false,
        offset: 0,
        length: 100,
        locker: Locker4::LockOwner(ExistLockOwner4 {
            lock_stateid: lsid_next(lsid),
            lock_seqid: 2,
        }),
    });
    let r = v40(&h, &c.auth, &[putfh(&fh), more]).await;
    assert_eq!(r.status, NfsStat4::Nfs4errDenied, "{r:?}");
    // Share reservations: the NFSv4.1 client's deny-write open refuses
    // the NFSv4.0 client's new writer.
    let r = h
        .seq(
            &s,
            &[
                putfh(&fh),
                open_fh(&s, "deny", OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_DENY_WRITE),
            ],
        )
        .await;
    assert_eq!(
        r.status,
        NfsStat4::Nfs4errShareDenied,
        "the 4.0 open writes: {r:?}"
    );
}

/// The lock stateid after one more change (LOCKU moved it on).
fn lsid_next(s: StateId4) -> StateId4 {
    StateId4 {
        seqid: s.seqid + 1,
        other: s.other,
    }
}

#[tokio::test]
async fn leases_are_renewed_by_requests_and_expired_state_yields() {
    let h = server();
    let c = client(&h, "c40").await;
    let (fh, sid) = opened(&h, &c, "o", "f").await;
    ok_(&v40(
        &h,
        &c.auth,
        &[putfh(&fh), lock40(&c, sid, 2, "lo", (0, 10))],
    )
    .await);
    // Requests naming the client renew its lease: READs each half lease
    // keep it for three leases.
    for _ in 0..6 {
        h.advance(LEASE / 2);
        ok_(&v40(&h, &c.auth, &[putfh(&fh), read(sid, 0, 4)]).await);
    }
    let s = h.client("c41").await;
    let r = h
        .seq(
            &s,
            &[putfh(&fh), open_fh(&s, "o41", OPEN4_SHARE_ACCESS_BOTH, 0)],
        )
        .await;
    ok_(&r);
    let sid41 = sid_at(&r, 2);
    let lock41 = lock_new(&s, NfsLockType4::WriteLt, 0, 10, sid41, "lo41");
    let r = h.seq(&s, &[putfh(&fh), lock41.clone()]).await;
    fails(&r, OpNum4::Lock, NfsStat4::Nfs4errDenied);
    // Silent for two leases: its lock yields to the NFSv4.1 client, and
    // its own requests are told its state expired.
    h.advance(LEASE * 2);
    ok_(&h.seq(&s, &[putfh(&fh), lock41]).await);
    let r = v40(&h, &c.auth, &[putfh(&fh), close40(sid, 3)]).await;
    assert_eq!(r.status, NfsStat4::Nfs4errExpired, "{r:?}");
    let r = v40(
        &h,
        &c.auth,
        &[NfsArgOp4::Renew(Renew4Args { clientid: c.id })],
    )
    .await;
    assert_eq!(r.status, NfsStat4::Nfs4errExpired, "{r:?}");
}

#[tokio::test]
async fn an_unconfirmed_owner_starts_again_and_needs_confirming() {
    let h = server();
    let c = client(&h, "c40").await;
    let r = v40(
        &h,
        &c.auth,
        &[putroot(), open40(&c, "o", 7, "f", 0), getfh()],
    )
    .await;
    ok_(&r);
    let first = open_ok(&r, 1).stateid;
    let fh = fh_at(&r, 2);
    // Not confirmed: its stateid is no good for CLOSE.
    let r = v40(&h, &c.auth, &[putfh(&fh), close40(first, 8)]).await;
    assert_eq!(r.status, NfsStat4::Nfs4errBadStateid, "{r:?}");
    // A new OPEN (any sequence id) starts the owner again; the first
    // open is gone.
    let r = v40(&h, &c.auth, &[putroot(), open40(&c, "o", 100, "f", 0)]).await;
    ok_(&r);
    let second = open_ok(&r, 1);
    assert_ne!(second.rflags & OPEN4_RESULT_CONFIRM, 0);
    let r = v40(&h, &c.auth, &[putfh(&fh), open_confirm(first, 101)]).await;
    assert_eq!(r.status, NfsStat4::Nfs4errBadStateid, "{r:?}");
    ok_(&v40(
        &h,
        &c.auth,
        &[putfh(&fh), open_confirm(second.stateid, 101)],
    )
    .await);
}

#[tokio::test]
async fn after_a_restart_a_recorded_client_reclaims_its_open_in_grace() {
    let h = restarted_server(&["c40"]);
    let c = client(&h, "c40").await;
    let r = v40(&h, &c.auth, &[putroot(), lookup("f"), getfh()]).await;
    ok_(&r);
    let fh = fh_at(&r, 2);
    // A new open waits for the grace period (RFC 7530 §9.6.2).
    let r = v40(&h, &c.auth, &[putroot(), open_prev_or_new(&c, 0, false)]).await;
    assert_eq!(r.status, NfsStat4::Nfs4errGrace, "{r:?}");
    // The reclaim (any sequence id: the owner is new to this instance),
    // then its confirmation.
    let r = v40(&h, &c.auth, &[putfh(&fh), open_prev_or_new(&c, 41, true)]).await;
    ok_(&r);
    let o = open_ok(&r, 1);
    // Its owner was confirmed before the restart: no OPEN_CONFIRM (the
    // Linux client sends none after a reclaim).
    assert_eq!(o.rflags & OPEN4_RESULT_CONFIRM, 0, "{o:?}");
    ok_(&v40(
        &h,
        &c.auth,
        &[putfh(&fh), write(o.stateid, 0, b"reclaimed")],
    )
    .await);
    ok_(&v40(&h, &c.auth, &[putfh(&fh), close40(o.stateid, 42)]).await);
    // A client not recorded reclaims nothing.
    let other = client(&h, "other").await;
    let r = v40(
        &h,
        &other.auth,
        &[putfh(&fh), open_prev_or_new(&other, 0, true)],
    )
    .await;
    assert_eq!(r.status, NfsStat4::Nfs4errNoGrace, "{r:?}");
}

/// OPEN by owner "o": a reclaim of the current filehandle
/// (CLAIM_PREVIOUS), or a new open of "f" in the current directory.
fn open_prev_or_new(c: &C40, seqid: u32, reclaim: bool) -> NfsArgOp4 {
    NfsArgOp4::Open(Open4Args {
        seqid,
        share_access: OPEN4_SHARE_ACCESS_BOTH,
        share_deny: OPEN4_SHARE_DENY_NONE,
        owner: owner40(c, "o"),
        openhow: OpenFlag4::NoCreate,
        claim: if reclaim {
            OpenClaim4::Previous(OpenDelegationType4::OpenDelegateWrite)
        } else {
            OpenClaim4::Null(b("f"))
        },
    })
}
