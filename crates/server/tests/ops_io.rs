//! Opens and I/O in process: OPEN (§18.16: claims, create modes, share
//! reservations), OPEN_DOWNGRADE (§18.18), CLOSE (§18.2), READ (§18.22),
//! WRITE (§18.32), COMMIT (§18.3), DELEGRETURN (§18.6) of RFC 8881, and
//! ALLOCATE, DEALLOCATE, SEEK, COPY, CLONE, OFFLOAD_STATUS and
//! OFFLOAD_CANCEL of RFC 7862 §15.

mod common;

use std::time::Duration;

use common::*;

const R: u32 = OPEN4_SHARE_ACCESS_READ;
const W: u32 = OPEN4_SHARE_ACCESS_WRITE;
const RW: u32 = OPEN4_SHARE_ACCESS_BOTH;

fn open_how(how: CreateHow4) -> OpenFlag4 {
    OpenFlag4::Create(how)
}

fn exclusive41(verf: u8, a: Attrs) -> OpenFlag4 {
    open_how(CreateHow4::Exclusive41(CreatVerfAttr {
        verf: [verf; 8],
        attrs: a.encode(),
    }))
}

fn downgrade(sid: StateId4, access: u32, deny: u32) -> NfsArgOp4 {
    NfsArgOp4::OpenDowngrade(OpenDowngrade4Args {
        open_stateid: sid,
        seqid: 0,
        share_access: access,
        share_deny: deny,
    })
}

fn commit(offset: u64, count: u32) -> NfsArgOp4 {
    NfsArgOp4::Commit(Commit4Args { offset, count })
}

fn allocate(sid: StateId4, offset: u64, length: u64) -> NfsArgOp4 {
    NfsArgOp4::Allocate(Allocate4Args {
        stateid: sid,
        offset,
        length,
    })
}

fn deallocate(sid: StateId4, offset: u64, length: u64) -> NfsArgOp4 {
    NfsArgOp4::Deallocate(Deallocate4Args {
        stateid: sid,
        offset,
        length,
    })
}

fn seek(sid: StateId4, offset: u64, what: DataContent4) -> NfsArgOp4 {
    NfsArgOp4::Seek(Seek4Args {
        stateid: sid,
        offset,
        what,
    })
}

fn copy(src: StateId4, dst: StateId4, src_offset: u64, dst_offset: u64, count: u64) -> NfsArgOp4 {
    NfsArgOp4::Copy(Copy4Args {
        src_stateid: src,
        dst_stateid: dst,
        src_offset,
        dst_offset,
        count,
        consecutive: true,
        synchronous: true,
        source_server: vec![],
    })
}

fn clone_op(
    src: StateId4,
    dst: StateId4,
    src_offset: u64,
    dst_offset: u64,
    count: u64,
) -> NfsArgOp4 {
    NfsArgOp4::Clone(Clone4Args {
        src_stateid: src,
        dst_stateid: dst,
        src_offset,
        dst_offset,
        count,
    })
}

fn copy_status(r: &Compound4Res, i: usize) -> Copy4ResOk {
    match r.resarray.get(i) {
        Some(NfsResOp4::Copy(Copy4Res::Ok(c))) => *c,
        _ => panic!("result {i} is no successful COPY: {r:?}"),
    }
}

/// `src` saved, `dst` current: the filehandles of COPY and CLONE.
fn src_dst(src: &NfsFh4, dst: &NfsFh4) -> [NfsArgOp4; 3] {
    [putfh(src), NfsArgOp4::SaveFh, putfh(dst)]
}

// ---------------------------------------------------------------------
// OPEN (§18.16): creating
// ---------------------------------------------------------------------

#[tokio::test]
async fn open_guarded_creates_the_file_and_makes_it_current() {
    let h = server();
    let s = h.client("c").await;
    let root = root_fh(&h, &s).await;
    let before = change_of(&h, &s, &root).await;
    let r = h
        .seq(
            &s,
            &[
                putroot(),
                open_create(&s, "f", 0o600),
                getattr(&[FATTR4_TYPE, FATTR4_MODE]),
                getfh(),
            ],
        )
        .await;
    ok(&r);
    let o = resok!(r, 2, Open);
    assert_eq!(o.stateid.seqid, 1);
    assert_eq!(o.cinfo.before, before);
    assert_eq!(o.cinfo.after, change_of(&h, &s, &root).await);
    assert_ne!(o.cinfo.before, o.cinfo.after);
    assert!(o.attrset.contains(FATTR4_MODE));
    assert_ne!(o.rflags & OPEN4_RESULT_LOCKTYPE_POSIX, 0);
    let a = attrs_at(&r, 3);
    assert_eq!((a.type_, a.mode), (Some(NfsFtype4::Nf4Reg), Some(0o600)));
    assert_eq!(lookup_fh(&h, &s, &root, "f").await, fh_at(&r, 4));
    // GUARDED4 finds it there now.
    let r = h.seq(&s, &[putroot(), open_create(&s, "f", 0o600)]).await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errExist);
}

#[tokio::test]
async fn open_unchecked_opens_an_existing_file_and_may_truncate_it() {
    let h = server();
    let s = h.client("c").await;
    let fh = new_file(&h, &s, "f", 0o644, b"old data").await;
    let unchecked = |a: Attrs| {
        open(
            &s,
            "o",
            RW,
            0,
            open_how(CreateHow4::Unchecked(a.encode())),
            OpenClaim4::Null(b("f")),
        )
    };
    // Only a size of 0 applies to an existing file.
    let r = h
        .seq(&s, &[putroot(), unchecked(mode_attr(0o600)), getfh()])
        .await;
    ok(&r);
    assert_eq!(fh_at(&r, 3), fh);
    assert!(!resok!(r, 2, Open).attrset.contains(FATTR4_MODE));
    let a = attrs_of(&h, &s, &fh, &[FATTR4_MODE, FATTR4_SIZE]).await;
    assert_eq!((a.mode, a.size), (Some(0o644), Some(8)));
    let r = h.seq(&s, &[putroot(), unchecked(size_attr(0))]).await;
    ok(&r);
    assert!(resok!(r, 2, Open).attrset.contains(FATTR4_SIZE));
    assert_eq!(attrs_of(&h, &s, &fh, &[FATTR4_SIZE]).await.size, Some(0));
}

#[tokio::test]
async fn open_exclusive4_1_is_idempotent_for_its_verifier() {
    let h = server();
    let s = h.client("c").await;
    let op = |verf, a| {
        open(
            &s,
            "o",
            RW,
            0,
            exclusive41(verf, a),
            OpenClaim4::Null(b("x")),
        )
    };
    let r = h
        .seq(&s, &[putroot(), op(7, mode_attr(0o640)), getfh()])
        .await;
    ok(&r);
    let o = resok!(r, 2, Open);
    // The verifier lives in the times (§18.16.4).
    for n in [FATTR4_MODE, FATTR4_TIME_ACCESS, FATTR4_TIME_MODIFY] {
        assert!(o.attrset.contains(n), "{n}: {o:?}");
    }
    let fh = fh_at(&r, 3);
    assert_eq!(
        attrs_of(&h, &s, &fh, &[FATTR4_MODE]).await.mode,
        Some(0o640)
    );
    // A retransmission (same verifier) opens what it created...
    let r = h
        .seq(&s, &[putroot(), op(7, mode_attr(0o640)), getfh()])
        .await;
    ok(&r);
    assert_eq!(fh_at(&r, 3), fh);
    // ...another verifier is another create.
    let r = h.seq(&s, &[putroot(), op(8, mode_attr(0o640))]).await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errExist);
    // Another client that happens to send the same verifier (two
    // identical Linux machines can: jiffies and the process ID) did not
    // make the file: its create is not a retransmission.
    let other = h.client("d").await;
    let r = h
        .seq(
            &other,
            &[
                putroot(),
                open(
                    &other,
                    "o",
                    RW,
                    0,
                    exclusive41(7, mode_attr(0o640)),
                    OpenClaim4::Null(b("x")),
                ),
            ],
        )
        .await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errExist);
    // Only the attributes of suppattr_exclcreat may be given.
    let times = Attrs {
        time_modify_set: Some(SetTime4::SetToServerTime4),
        ..Default::default()
    };
    let r = h
        .seq(
            &s,
            &[
                putroot(),
                open(
                    &s,
                    "o",
                    RW,
                    0,
                    exclusive41(1, times),
                    OpenClaim4::Null(b("y")),
                ),
            ],
        )
        .await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errInval);
    assert_eq!(
        lookup_status(&h, &s, &root_fh(&h, &s).await, "y").await,
        NfsStat4::Nfs4errNoent
    );
}

/// Two clients racing exclusive creates of one name with the same
/// verifier (two identical Linux machines send the same one): exactly one
/// wins each round. The creator is known only once its create returns, so
/// a loser checked in between would take the file for its own
/// retransmission unless the create and the check are one step.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_exclusive_creates_with_one_verifier_have_one_winner() {
    let fs = vfs::mem::MemFs::default().with_create_delay(Duration::from_millis(2));
    let h = std::sync::Arc::new(InProcess::new(std::sync::Arc::new(fs), LEASE));
    let (a, c) = (h.client("a").await, h.client("c").await);
    for round in 0..50 {
        let name = format!("x{round}");
        let go = |s: Session, h: std::sync::Arc<InProcess>, name: String| {
            tokio::spawn(async move {
                let op = open(
                    &s,
                    "o",
                    RW,
                    0,
                    exclusive41(9, mode_attr(0o644)),
                    OpenClaim4::Null(b(&name)),
                );
                h.seq(&s, &[putroot(), op]).await.status
            })
        };
        let (ra, rc) = tokio::join!(
            go(a.clone(), h.clone(), name.clone()),
            go(c.clone(), h.clone(), name)
        );
        let got = [ra.expect("task a"), rc.expect("task c")];
        let won = got.iter().filter(|s| **s == NfsStat4::Nfs4Ok).count();
        assert_eq!(won, 1, "round {round}: {got:?}");
        assert!(
            got.contains(&NfsStat4::Nfs4errExist),
            "round {round}: {got:?}"
        );
    }
}

#[tokio::test]
async fn open_exclusive4_also_creates_once() {
    let h = server();
    let s = h.client("c").await;
    let op = |verf: u8| {
        open(
            &s,
            "o",
            RW,
            0,
            open_how(CreateHow4::Exclusive([verf; 8])),
            OpenClaim4::Null(b("x")),
        )
    };
    let r = h.seq(&s, &[putroot(), op(3), getfh()]).await;
    ok(&r);
    let fh = fh_at(&r, 3);
    let r = h.seq(&s, &[putroot(), op(3), getfh()]).await;
    ok(&r);
    assert_eq!(fh_at(&r, 3), fh);
    let r = h.seq(&s, &[putroot(), op(4)]).await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errExist);
}

// ---------------------------------------------------------------------
// OPEN: claims
// ---------------------------------------------------------------------

#[tokio::test]
async fn open_nocreate_and_claim_fh_open_existing_files() {
    let h = server();
    let s = h.client("c").await;
    let fh = new_file(&h, &s, "f", 0o644, b"abc").await;
    let r = h
        .seq(
            &s,
            &[
                putroot(),
                open_name(&s, "o", "f", R, 0),
                getfh(),
                read(StateId4::CURRENT, 0, 10),
            ],
        )
        .await;
    ok(&r);
    assert_eq!(fh_at(&r, 3), fh);
    assert_eq!(&resok!(r, 4, Read).data[..], b"abc");
    let r = h.seq(&s, &[putfh(&fh), open_fh(&s, "p", R, 0)]).await;
    ok(&r);
    let r = h
        .seq(&s, &[putroot(), open_name(&s, "o", "missing", R, 0)])
        .await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errNoent);
}

#[tokio::test]
async fn open_of_what_is_no_regular_file() {
    let h = server();
    let s = h.client("c").await;
    let root = root_fh(&h, &s).await;
    let f = new_file(&h, &s, "f", 0o644, b"").await;
    new_dir(&h, &s, &root, "d", None).await;
    ok(&h.seq(&s, &[putroot(), symlink("l", "f")]).await);
    let cases = [
        (
            vec![putroot(), open_name(&s, "o", "d", R, 0)],
            NfsStat4::Nfs4errIsdir,
        ),
        (
            vec![putroot(), open_name(&s, "o", "l", R, 0)],
            NfsStat4::Nfs4errSymlink,
        ),
        (
            vec![putroot(), open_fh(&s, "o", R, 0)],
            NfsStat4::Nfs4errIsdir,
        ),
        (
            vec![putroot(), lookup("l"), open_fh(&s, "o", R, 0)],
            NfsStat4::Nfs4errSymlink,
        ),
        // CLAIM_NULL names a file in the current directory.
        (
            vec![putfh(&f), open_name(&s, "o", "x", R, 0)],
            NfsStat4::Nfs4errNotdir,
        ),
        (
            vec![putroot(), lookup("l"), open_name(&s, "o", "x", R, 0)],
            NfsStat4::Nfs4errSymlink,
        ),
        (
            vec![open_name(&s, "o", "f", R, 0)],
            NfsStat4::Nfs4errNofilehandle,
        ),
    ];
    for (ops, status) in cases {
        let r = h.seq(&s, &ops).await;
        fails(&r, OpNum4::Open, status);
    }
}

#[tokio::test]
async fn open_refuses_bad_share_bits_and_names() {
    let h = server();
    let s = h.client("c").await;
    new_file(&h, &s, "f", 0o644, b"").await;
    for (access, deny) in [(0, 0), (4, 0), (R, 4)] {
        let r = h
            .seq(&s, &[putroot(), open_name(&s, "o", "f", access, deny)])
            .await;
        fails(&r, OpNum4::Open, NfsStat4::Nfs4errInval);
    }
    let cases = [
        ("", NfsStat4::Nfs4errInval),
        ("..", NfsStat4::Nfs4errBadname),
        ("a/b", NfsStat4::Nfs4errBadchar),
    ];
    for (name, status) in cases {
        let r = h.seq(&s, &[putroot(), open_create(&s, name, 0o644)]).await;
        fails(&r, OpNum4::Open, status);
    }
    let long = "x".repeat(256);
    let r = h.seq(&s, &[putroot(), open_create(&s, &long, 0o644)]).await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errNametoolong);
}

#[tokio::test]
async fn open_in_grace_is_reclaims_by_recorded_clients_only() {
    // Restarted with "rebooted" recorded; "c" is a client it never saw.
    let h = restarted_server(&["rebooted"]);
    let reclaiming = ClientOpts {
        reclaim_complete: false,
        ..Default::default()
    };
    let s = h.client("c").await;
    let g = h.client_with("rebooted", reclaiming).await;
    let root = root_fh(&h, &g).await;
    let fh = lookup_fh(&h, &g, &root, "f").await;
    let previous = |c: &Session| {
        open(
            c,
            "o",
            R,
            0,
            OpenFlag4::NoCreate,
            OpenClaim4::Previous(OpenDelegationType4::OpenDelegateNone),
        )
    };
    // New opens wait for the grace period, whoever asks (RFC 8881
    // §8.4.2.1, §18.51.3).
    let r = h.seq(&g, &[putroot(), open_name(&g, "o", "f", R, 0)]).await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errGrace);
    let r = h.seq(&s, &[putroot(), open_name(&s, "o", "f", R, 0)]).await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errGrace);
    // A client without a record has nothing to reclaim (§8.4.3).
    let r = h.seq(&s, &[putfh(&fh), previous(&s)]).await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errNoGrace);
    ok(&h.seq(&g, &[putfh(&fh), previous(&g)]).await);
    // Reclaims are over once the client says so; the grace period with
    // them, "rebooted" being the only client recorded.
    let rc = NfsArgOp4::ReclaimComplete(ReclaimComplete4Args { one_fs: false });
    ok(&h.seq(&g, &[rc]).await);
    let r = h.seq(&g, &[putfh(&fh), previous(&g)]).await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errNoGrace);
    ok(&h.seq(&s, &[putroot(), open_name(&s, "o", "f", R, 0)]).await);
}

#[tokio::test]
async fn without_a_restart_nothing_is_reclaimed() {
    let h = server();
    let s = h.client("c").await;
    let fh = new_file(&h, &s, "f", 0o644, b"").await;
    let opts = ClientOpts {
        reclaim_complete: false,
        ..Default::default()
    };
    let g = h.client_with("rebooted", opts).await;
    let r = h.seq(&g, &[putroot(), open_name(&g, "o", "f", R, 0)]).await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errGrace);
    let previous = open(
        &g,
        "o",
        R,
        0,
        OpenFlag4::NoCreate,
        OpenClaim4::Previous(OpenDelegationType4::OpenDelegateNone),
    );
    let r = h.seq(&g, &[putfh(&fh), previous]).await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errNoGrace);
}

#[tokio::test]
async fn open_of_delegation_claims_fails() {
    let h = server();
    let s = h.client("c").await;
    let fh = new_file(&h, &s, "f", 0o644, b"").await;
    let sid = open_existing(&h, &s, &fh, "o", R, 0).await;
    let cur = open(
        &s,
        "o",
        R,
        0,
        OpenFlag4::NoCreate,
        OpenClaim4::DelegateCur(OpenClaimDelegateCur4 {
            delegate_stateid: sid,
            file: b("f"),
        }),
    );
    let r = h.seq(&s, &[putroot(), cur]).await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errBadStateid);
    let prev = open(
        &s,
        "o",
        R,
        0,
        OpenFlag4::NoCreate,
        OpenClaim4::DelegatePrev(b("f")),
    );
    // A reclaim after the client's own restart comes before its
    // RECLAIM_COMPLETE (this client sent one).
    let r = h.seq(&s, &[putroot(), prev]).await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errNoGrace);
}

#[tokio::test]
async fn open_never_grants_a_delegation() {
    let h = server();
    let s = h.client("c").await;
    let fh = new_file(&h, &s, "f", 0o644, b"").await;
    let r = h
        .seq(
            &s,
            &[
                putfh(&fh),
                open_fh(&s, "o", R | OPEN4_SHARE_ACCESS_WANT_READ_DELEG, 0),
            ],
        )
        .await;
    ok(&r);
    let o = resok!(r, 2, Open);
    assert!(matches!(o.delegation, OpenDelegation4::NoneExt(_)), "{o:?}");
    let r = h
        .seq(
            &s,
            &[
                putfh(&fh),
                open_fh(&s, "p", R | OPEN4_SHARE_ACCESS_WANT_NO_DELEG, 0),
            ],
        )
        .await;
    ok(&r);
    assert_eq!(
        resok!(r, 2, Open).delegation,
        OpenDelegation4::NoneExt(OpenNoneDelegation4::Other(WhyNoDelegation4::Wnd4NotWanted))
    );
}

// ---------------------------------------------------------------------
// OPEN: permissions, read-only exports, share reservations
// ---------------------------------------------------------------------

#[tokio::test]
async fn open_without_permission_is_access() {
    let h = server();
    let s = h.client("root").await;
    let fh = new_file(&h, &s, "secret", 0o600, b"").await;
    new_file(&h, &s, "readable", 0o644, b"").await;
    let u = h.client_as("user", user_auth()).await;
    let cases = [
        (
            vec![putfh(&fh), open_fh(&u, "o", R, 0)],
            NfsStat4::Nfs4errAccess,
        ),
        (
            vec![putroot(), open_name(&u, "o", "readable", W, 0)],
            NfsStat4::Nfs4errAccess,
        ),
        (
            vec![putroot(), open_create(&u, "new", 0o644)],
            NfsStat4::Nfs4errAccess,
        ),
    ];
    for (ops, status) in cases {
        let r = h.seq(&u, &ops).await;
        fails(&r, OpNum4::Open, status);
    }
    ok(&h
        .seq(&u, &[putroot(), open_name(&u, "o", "readable", R, 0)])
        .await);
}

#[tokio::test]
async fn open_on_a_read_only_export_reads_only() {
    let h = read_only_server();
    let s = h.client("c").await;
    let r = h.seq(&s, &[putroot(), open_create(&s, "g", 0o644)]).await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errRofs);
    assert_eq!(
        lookup_status(&h, &s, &root_fh(&h, &s).await, "g").await,
        NfsStat4::Nfs4errNoent
    );
    for access in [W, RW] {
        let r = h
            .seq(&s, &[putroot(), open_name(&s, "o", "f", access, 0)])
            .await;
        fails(&r, OpNum4::Open, NfsStat4::Nfs4errRofs);
    }
    let r = h
        .seq(
            &s,
            &[
                putroot(),
                open_name(&s, "o", "f", R, 0),
                read(StateId4::CURRENT, 0, 10),
            ],
        )
        .await;
    ok(&r);
    assert_eq!(&resok!(r, 3, Read).data[..], b"data");
}

#[tokio::test]
async fn open_of_existing_directories_by_creating_modes() {
    let h = server();
    let s = h.client("c").await;
    new_dir(&h, &s, &root_fh(&h, &s).await, "d", None).await;
    let unchecked = open(
        &s,
        "o",
        RW,
        0,
        open_how(CreateHow4::Unchecked(Fattr4::default())),
        OpenClaim4::Null(b("d")),
    );
    let r = h.seq(&s, &[putroot(), unchecked]).await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errIsdir);
    let r = h.seq(&s, &[putroot(), open_create(&s, "d", 0o644)]).await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errExist);
}

#[tokio::test]
async fn open_in_a_pseudo_directory() {
    let h = InProcess::with_exports(vec![export(1, "/data", ExportRules::open())], LEASE);
    let s = h.client("c").await;
    let cases = [
        (open_create(&s, "new", 0o644), NfsStat4::Nfs4errRofs),
        (open_name(&s, "o", "data", R, 0), NfsStat4::Nfs4errIsdir),
        (open_name(&s, "o", "missing", R, 0), NfsStat4::Nfs4errNoent),
        (open_fh(&s, "o", R, 0), NfsStat4::Nfs4errIsdir),
    ];
    for (op, status) in cases {
        let r = h.seq(&s, &[putroot(), op]).await;
        fails(&r, OpNum4::Open, status);
    }
}

#[tokio::test]
async fn open_share_reservations_conflict() {
    let h = server();
    let a = h.client("a").await;
    let b_ = h.client("b").await;
    let fh = new_file(&h, &a, "f", 0o666, b"").await;
    open_existing(&h, &a, &fh, "o", R, OPEN4_SHARE_DENY_WRITE).await;
    let r = h.seq(&b_, &[putfh(&fh), open_fh(&b_, "o", W, 0)]).await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errShareDenied);
    // Reading is not denied; denying what the other reads is.
    open_existing(&h, &b_, &fh, "o", R, 0).await;
    let r = h
        .seq(
            &b_,
            &[putfh(&fh), open_fh(&b_, "p", R, OPEN4_SHARE_DENY_READ)],
        )
        .await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errShareDenied);
    // Another owner of the same client conflicts too.
    let r = h.seq(&a, &[putfh(&fh), open_fh(&a, "other", RW, 0)]).await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errShareDenied);
}

#[tokio::test]
async fn open_again_by_the_same_owner_upgrades_the_open() {
    let h = server();
    let s = h.client("c").await;
    let fh = new_file(&h, &s, "f", 0o644, b"").await;
    let first = open_existing(&h, &s, &fh, "o", R, 0).await;
    let r = h.seq(&s, &[putfh(&fh), write(first, 0, b"no")]).await;
    fails(&r, OpNum4::Write, NfsStat4::Nfs4errOpenmode);
    let second = open_existing(&h, &s, &fh, "o", W, 0).await;
    assert_eq!((second.other, second.seqid), (first.other, first.seqid + 1));
    ok(&h.seq(&s, &[putfh(&fh), write(second, 0, b"yes")]).await);
    let r = h.seq(&s, &[putfh(&fh), write(first, 0, b"old")]).await;
    fails(&r, OpNum4::Write, NfsStat4::Nfs4errOldStateid);
}

#[tokio::test]
async fn open_share_of_an_expired_client_yields() {
    let h = server();
    let a = h.client("a").await;
    let b_ = h.client("b").await;
    let fh = new_file(&h, &a, "f", 0o666, b"").await;
    open_existing(&h, &a, &fh, "o", RW, OPEN4_SHARE_DENY_BOTH).await;
    // b keeps its lease, a does not.
    h.advance(LEASE / 2);
    ok(&h.seq(&b_, &[]).await);
    let r = h.seq(&b_, &[putfh(&fh), open_fh(&b_, "o", R, 0)]).await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errShareDenied);
    h.advance(LEASE / 2 + Duration::from_secs(1));
    // a is a courtesy client now: its reservation gives way (§8.4.3)...
    open_existing(&h, &b_, &fh, "o", R, 0).await;
    // ...and with it a's whole state.
    let r = h.seq(&a, &[]).await;
    fails(&r, OpNum4::Sequence, NfsStat4::Nfs4errBadsession);
}

// ---------------------------------------------------------------------
// OPEN_DOWNGRADE (§18.18)
// ---------------------------------------------------------------------

#[tokio::test]
async fn open_downgrade_gives_up_access_and_deny() {
    let h = server();
    let a = h.client("a").await;
    let b_ = h.client("b").await;
    let fh = new_file(&h, &a, "f", 0o666, b"").await;
    let sid = open_existing(&h, &a, &fh, "o", RW, OPEN4_SHARE_DENY_WRITE).await;
    // Only to modes an OPEN of the owner asked for (RFC 8881 §18.18.3).
    let r = h.seq(&a, &[putfh(&fh), downgrade(sid, R, 0)]).await;
    fails(&r, OpNum4::OpenDowngrade, NfsStat4::Nfs4errInval);
    let sid = open_existing(&h, &a, &fh, "o", R, 0).await;
    let r = h.seq(&a, &[putfh(&fh), downgrade(sid, R, 0)]).await;
    ok(&r);
    let new = resok!(r, 2, OpenDowngrade).open_stateid;
    assert_eq!((new.other, new.seqid), (sid.other, sid.seqid + 1));
    let r = h.seq(&a, &[putfh(&fh), write(new, 0, b"x")]).await;
    fails(&r, OpNum4::Write, NfsStat4::Nfs4errOpenmode);
    // The deny is gone too.
    open_existing(&h, &b_, &fh, "o", W, 0).await;
}

#[tokio::test]
async fn open_downgrade_errors() {
    let h = server();
    let s = h.client("c").await;
    let other = h.client("other").await;
    let fh = new_file(&h, &s, "f", 0o666, b"").await;
    let g = new_file(&h, &s, "g", 0o666, b"").await;
    let sid = open_existing(&h, &s, &fh, "o", R, OPEN4_SHARE_DENY_NONE).await;
    let cases = [
        // Access or deny the open does not have (§18.18.3).
        (
            vec![putfh(&fh), downgrade(sid, RW, 0)],
            NfsStat4::Nfs4errInval,
        ),
        (
            vec![putfh(&fh), downgrade(sid, R, OPEN4_SHARE_DENY_READ)],
            NfsStat4::Nfs4errInval,
        ),
        (
            vec![putfh(&fh), downgrade(sid, 0, 0)],
            NfsStat4::Nfs4errInval,
        ),
        (
            vec![putfh(&fh), downgrade(seq_moved(sid, 1), R, 0)],
            NfsStat4::Nfs4errBadStateid,
        ),
        (
            vec![putfh(&fh), downgrade(unknown(sid), R, 0)],
            NfsStat4::Nfs4errBadStateid,
        ),
        (
            vec![putfh(&fh), downgrade(stale(sid), R, 0)],
            NfsStat4::Nfs4errStaleStateid,
        ),
        // The stateid of another file.
        (
            vec![putfh(&g), downgrade(sid, R, 0)],
            NfsStat4::Nfs4errBadStateid,
        ),
        (vec![downgrade(sid, R, 0)], NfsStat4::Nfs4errNofilehandle),
    ];
    for (ops, status) in cases {
        let r = h.seq(&s, &ops).await;
        fails(&r, OpNum4::OpenDowngrade, status);
    }
    let r = h.seq(&other, &[putfh(&fh), downgrade(sid, R, 0)]).await;
    fails(&r, OpNum4::OpenDowngrade, NfsStat4::Nfs4errBadStateid);
    // Still as it was: seqid 1, readable.
    let r = h.seq(&s, &[putfh(&fh), downgrade(sid, R, 0)]).await;
    ok(&r);
    let new = resok!(r, 2, OpenDowngrade).open_stateid;
    assert_eq!(new.seqid, 2);
    let r = h.seq(&s, &[putfh(&fh), downgrade(sid, R, 0)]).await;
    fails(&r, OpNum4::OpenDowngrade, NfsStat4::Nfs4errOldStateid);
}

// ---------------------------------------------------------------------
// CLOSE (§18.2)
// ---------------------------------------------------------------------

#[tokio::test]
async fn close_ends_the_open() {
    let h = server();
    let a = h.client("a").await;
    let b_ = h.client("b").await;
    let fh = new_file(&h, &a, "f", 0o666, b"data").await;
    let held = open_existing(&h, &a, &fh, "o", R, OPEN4_SHARE_DENY_BOTH).await;
    let r = h.seq(&b_, &[putfh(&fh), open_fh(&b_, "o", R, 0)]).await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errShareDenied);
    let r = h.seq(&a, &[putfh(&fh), close(held)]).await;
    ok(&r);
    // §18.2.4: the stateid returned is the invalid special stateid.
    assert_eq!(resok!(r, 2, Close), StateId4::INVALID);
    let r = h.seq(&a, &[putfh(&fh), read(held, 0, 4)]).await;
    fails(&r, OpNum4::Read, NfsStat4::Nfs4errBadStateid);
    open_existing(&h, &b_, &fh, "o", R, 0).await;
}

#[tokio::test]
async fn close_with_the_current_stateid() {
    let h = server();
    let s = h.client("c").await;
    let r = h
        .seq(
            &s,
            &[
                putroot(),
                open_create(&s, "f", 0o644),
                close(StateId4::CURRENT),
                getfh(),
            ],
        )
        .await;
    ok(&r);
    let sid = sid_at(&r, 2);
    let fh = fh_at(&r, 4);
    let r = h.seq(&s, &[putfh(&fh), close(sid)]).await;
    fails(&r, OpNum4::Close, NfsStat4::Nfs4errBadStateid);
}

#[tokio::test]
async fn close_errors() {
    let h = server();
    let s = h.client("c").await;
    let other = h.client("other").await;
    let (fh, first) = open_new(&h, &s, "f", 0o666, b"").await;
    let g = new_file(&h, &s, "g", 0o666, b"").await;
    let sid = open_existing(&h, &s, &fh, "o", R, 0).await;
    let cases = [
        (vec![putfh(&fh), close(first)], NfsStat4::Nfs4errOldStateid),
        (
            vec![putfh(&fh), close(seq_moved(sid, 1))],
            NfsStat4::Nfs4errBadStateid,
        ),
        (
            vec![putfh(&fh), close(unknown(sid))],
            NfsStat4::Nfs4errBadStateid,
        ),
        (
            vec![putfh(&fh), close(stale(sid))],
            NfsStat4::Nfs4errStaleStateid,
        ),
        (vec![putfh(&g), close(sid)], NfsStat4::Nfs4errBadStateid),
        // No current stateid to stand for.
        (
            vec![putfh(&fh), close(StateId4::CURRENT)],
            NfsStat4::Nfs4errBadStateid,
        ),
        (vec![close(sid)], NfsStat4::Nfs4errNofilehandle),
    ];
    for (ops, status) in cases {
        let r = h.seq(&s, &ops).await;
        fails(&r, OpNum4::Close, status);
    }
    let r = h.seq(&other, &[putfh(&fh), close(sid)]).await;
    fails(&r, OpNum4::Close, NfsStat4::Nfs4errBadStateid);
    ok(&h.seq(&s, &[putfh(&fh), close(sid)]).await);
}

#[tokio::test]
async fn close_while_locks_are_held_is_locks_held() {
    let h = server();
    let s = h.client("c").await;
    let (fh, sid) = open_new(&h, &s, "f", 0o644, b"").await;
    let r = h
        .seq(
            &s,
            &[
                putfh(&fh),
                lock_new(&s, NfsLockType4::WriteLt, 0, 1, sid, "l"),
            ],
        )
        .await;
    let lsid = lock_sid_at(&r, 2);
    let r = h.seq(&s, &[putfh(&fh), close(sid)]).await;
    fails(&r, OpNum4::Close, NfsStat4::Nfs4errLocksHeld);
    ok(&h
        .seq(&s, &[putfh(&fh), locku(lsid, 0, 1), close(sid)])
        .await);
    // The lock stateids of the open went with it (§8.2.4).
    let test = NfsArgOp4::TestStateId(TestStateId4Args {
        stateids: vec![lsid],
    });
    let r = h.seq(&s, &[test]).await;
    assert_eq!(
        resok!(r, 1, TestStateId).status_codes,
        vec![NfsStat4::Nfs4errBadStateid]
    );
}

// ---------------------------------------------------------------------
// READ (§18.22), WRITE (§18.32), COMMIT (§18.3)
// ---------------------------------------------------------------------

#[tokio::test]
async fn write_then_read_back() {
    let h = server();
    let s = h.client("c").await;
    let (fh, sid) = open_new(&h, &s, "f", 0o644, b"").await;
    let unstable = NfsArgOp4::Write(Write4Args {
        stateid: sid,
        offset: 4,
        stable: StableHow4::Unstable4,
        data: b("world"),
    });
    let r = h
        .seq(
            &s,
            &[putfh(&fh), write(sid, 0, b"hi, "), unstable, commit(0, 0)],
        )
        .await;
    ok(&r);
    let w = resok!(r, 2, Write);
    assert_eq!((w.count, w.committed), (4, StableHow4::FileSync4));
    let w2 = resok!(r, 3, Write);
    assert_eq!(w2.count, 5);
    // One verifier for the server instance (§18.32.3).
    assert_eq!(w.writeverf, w2.writeverf);
    assert_eq!(resok!(r, 4, Commit).writeverf, w.writeverf);
    let r = h
        .seq(
            &s,
            &[
                putfh(&fh),
                read(sid, 0, 100),
                read(sid, 4, 3),
                read(sid, 100, 10),
            ],
        )
        .await;
    ok(&r);
    let all = resok!(r, 2, Read);
    assert_eq!((&all.data[..], all.eof), (&b"hi, world"[..], true));
    let part = resok!(r, 3, Read);
    assert_eq!((&part.data[..], part.eof), (&b"wor"[..], false));
    let past = resok!(r, 4, Read);
    assert_eq!((past.data.len(), past.eof), (0, true));
}

#[tokio::test]
async fn read_and_write_of_what_is_no_regular_file() {
    let h = server();
    let s = h.client("c").await;
    ok(&h.seq(&s, &[putroot(), symlink("l", "x")]).await);
    ok(&h
        .seq(&s, &[putroot(), create("p", CreateType4::Fifo)])
        .await);
    let anon = StateId4::ANONYMOUS;
    let cases = [
        (putroot(), NfsStat4::Nfs4errIsdir),
        (lookup("l"), NfsStat4::Nfs4errSymlink),
        (lookup("p"), NfsStat4::Nfs4errWrongType),
    ];
    for (to, status) in cases {
        let r = h.seq(&s, &[putroot(), to.clone(), read(anon, 0, 1)]).await;
        fails(&r, OpNum4::Read, status);
        let r = h
            .seq(&s, &[putroot(), to.clone(), write(anon, 0, b"x")])
            .await;
        fails(&r, OpNum4::Write, status);
        let r = h.seq(&s, &[putroot(), to, commit(0, 0)]).await;
        fails(&r, OpNum4::Commit, status);
    }
}

#[tokio::test]
async fn read_and_write_stateid_errors() {
    let h = server();
    let s = h.client("c").await;
    let other = h.client("other").await;
    let (fh, first) = open_new(&h, &s, "f", 0o666, b"abc").await;
    let sid = open_existing(&h, &s, &fh, "o", RW, 0).await;
    let bad = [
        (first, NfsStat4::Nfs4errOldStateid),
        (seq_moved(sid, 1), NfsStat4::Nfs4errBadStateid),
        (unknown(sid), NfsStat4::Nfs4errBadStateid),
        (stale(sid), NfsStat4::Nfs4errStaleStateid),
        // The special stateids must be exact (§8.2.3).
        (
            StateId4 {
                seqid: 1,
                ..StateId4::BYPASS
            },
            NfsStat4::Nfs4errBadStateid,
        ),
        (StateId4::CURRENT, NfsStat4::Nfs4errBadStateid),
    ];
    for (stateid, status) in bad {
        let r = h.seq(&s, &[putfh(&fh), read(stateid, 0, 3)]).await;
        fails(&r, OpNum4::Read, status);
        let r = h.seq(&s, &[putfh(&fh), write(stateid, 0, b"zzz")]).await;
        fails(&r, OpNum4::Write, status);
    }
    let r = h.seq(&other, &[putfh(&fh), write(sid, 0, b"zzz")]).await;
    fails(&r, OpNum4::Write, NfsStat4::Nfs4errBadStateid);
    let r = h.seq(&s, &[read(sid, 0, 3)]).await;
    fails(&r, OpNum4::Read, NfsStat4::Nfs4errNofilehandle);
    let r = h.seq(&s, &[write(sid, 0, b"zzz")]).await;
    fails(&r, OpNum4::Write, NfsStat4::Nfs4errNofilehandle);
    assert_eq!(&content(&h, &s, &fh).await[..], b"abc");
}

#[tokio::test]
async fn write_with_a_read_only_open_is_openmode() {
    let h = server();
    let s = h.client("c").await;
    let fh = new_file(&h, &s, "f", 0o666, b"abc").await;
    let sid = open_existing(&h, &s, &fh, "o", R, 0).await;
    let r = h.seq(&s, &[putfh(&fh), write(sid, 0, b"x")]).await;
    fails(&r, OpNum4::Write, NfsStat4::Nfs4errOpenmode);
    ok(&h.seq(&s, &[putfh(&fh), read(sid, 0, 3)]).await);
}

#[tokio::test]
async fn anonymous_io_meets_share_reservations() {
    let h = server();
    let a = h.client("a").await;
    let b_ = h.client("b").await;
    let fh = new_file(&h, &a, "f", 0o666, b"abc").await;
    open_existing(&h, &a, &fh, "o", RW, OPEN4_SHARE_DENY_BOTH).await;
    let r = h
        .seq(&b_, &[putfh(&fh), read(StateId4::ANONYMOUS, 0, 3)])
        .await;
    fails(&r, OpNum4::Read, NfsStat4::Nfs4errLocked);
    let r = h
        .seq(&b_, &[putfh(&fh), write(StateId4::ANONYMOUS, 0, b"x")])
        .await;
    fails(&r, OpNum4::Write, NfsStat4::Nfs4errLocked);
    // The READ bypass stateid passes deny-read reservations, for READ
    // only (§8.2.3).
    let r = h
        .seq(&b_, &[putfh(&fh), read(StateId4::BYPASS, 0, 3)])
        .await;
    ok(&r);
    assert_eq!(&resok!(r, 2, Read).data[..], b"abc");
    let r = h
        .seq(&b_, &[putfh(&fh), write(StateId4::BYPASS, 0, b"x")])
        .await;
    fails(&r, OpNum4::Write, NfsStat4::Nfs4errLocked);
    assert_eq!(&content_bypass(&h, &b_, &fh).await[..], b"abc");
}

async fn content_bypass(h: &InProcess, s: &Session, fh: &NfsFh4) -> Bytes {
    let r = h.seq(s, &[putfh(fh), read(StateId4::BYPASS, 0, 100)]).await;
    ok(&r);
    resok!(r, 2, Read).data.into_mem().unwrap()
}

#[tokio::test]
async fn anonymous_io_without_permission_is_access() {
    let h = server();
    let s = h.client("root").await;
    let secret = new_file(&h, &s, "secret", 0o600, b"abc").await;
    let readable = new_file(&h, &s, "readable", 0o644, b"abc").await;
    let u = h.client_as("user", user_auth()).await;
    let r = h
        .seq(&u, &[putfh(&secret), read(StateId4::ANONYMOUS, 0, 3)])
        .await;
    fails(&r, OpNum4::Read, NfsStat4::Nfs4errAccess);
    let r = h
        .seq(&u, &[putfh(&readable), write(StateId4::ANONYMOUS, 0, b"x")])
        .await;
    fails(&r, OpNum4::Write, NfsStat4::Nfs4errAccess);
    assert_eq!(&content(&h, &s, &readable).await[..], b"abc");
}

#[tokio::test]
async fn write_limits() {
    let h = server();
    let opts = ClientOpts {
        fore: ChannelAttrs4 {
            maxrequestsize: 4 << 20,
            ..ClientOpts::default().fore
        },
        ..Default::default()
    };
    let s = h.client_with("c", opts).await;
    let (fh, sid) = open_new(&h, &s, "f", 0o644, b"").await;
    // Past the largest file size.
    let r = h
        .seq(&s, &[putfh(&fh), write(sid, i64::MAX as u64, b"x")])
        .await;
    fails(&r, OpNum4::Write, NfsStat4::Nfs4errFbig);
    // More than maxwrite in one WRITE.
    let max = h.srv.cfg.max_io as usize;
    let r = h
        .seq(&s, &[putfh(&fh), write(sid, 0, &vec![1; max + 1])])
        .await;
    fails(&r, OpNum4::Write, NfsStat4::Nfs4errInval);
    assert_eq!(attrs_of(&h, &s, &fh, &[FATTR4_SIZE]).await.size, Some(0));
}

#[tokio::test]
async fn write_on_a_read_only_export_is_rofs() {
    let h = read_only_server();
    let s = h.client("c").await;
    let r = h
        .seq(
            &s,
            &[putroot(), lookup("f"), write(StateId4::ANONYMOUS, 0, b"x")],
        )
        .await;
    fails(&r, OpNum4::Write, NfsStat4::Nfs4errRofs);
    let r = h
        .seq(
            &s,
            &[
                putroot(),
                lookup("f"),
                read(StateId4::ANONYMOUS, 0, 10),
                commit(0, 0),
            ],
        )
        .await;
    ok(&r);
    assert_eq!(&resok!(r, 3, Read).data[..], b"data");
}

#[tokio::test]
async fn commit_errors() {
    let h = server();
    let s = h.client("c").await;
    let fh = new_file(&h, &s, "f", 0o644, b"").await;
    let r = h.seq(&s, &[putfh(&fh), commit(u64::MAX, 2)]).await;
    fails(&r, OpNum4::Commit, NfsStat4::Nfs4errInval);
    let r = h.seq(&s, &[commit(0, 0)]).await;
    fails(&r, OpNum4::Commit, NfsStat4::Nfs4errNofilehandle);
}

// ---------------------------------------------------------------------
// DELEGRETURN (§18.6)
// ---------------------------------------------------------------------

#[tokio::test]
async fn delegreturn_knows_no_delegation() {
    let h = server();
    let s = h.client("c").await;
    let (fh, sid) = open_new(&h, &s, "f", 0o644, b"").await;
    let dr = |sid| NfsArgOp4::DelegReturn(DelegReturn4Args { deleg_stateid: sid });
    // No delegation is ever granted, so no stateid names one: not even an
    // open stateid, which stays valid.
    for stateid in [sid, unknown(sid), StateId4::CURRENT] {
        let r = h.seq(&s, &[putfh(&fh), dr(stateid)]).await;
        fails(&r, OpNum4::DelegReturn, NfsStat4::Nfs4errBadStateid);
    }
    let r = h.seq(&s, &[dr(sid)]).await;
    fails(&r, OpNum4::DelegReturn, NfsStat4::Nfs4errNofilehandle);
    ok(&h.seq(&s, &[putfh(&fh), read(sid, 0, 1)]).await);
}

// ---------------------------------------------------------------------
// NFSv4.2: ALLOCATE (§15.1), DEALLOCATE (§15.4), SEEK (§15.11)
// ---------------------------------------------------------------------

#[tokio::test]
async fn allocate_reserves_space_and_extends_the_file() {
    let h = server();
    let s = client42(&h, "c").await;
    let (fh, sid) = open_new(&h, &s, "f", 0o644, b"abc").await;
    let r = h.seq(&s, &[putfh(&fh), allocate(sid, 0, 10_000)]).await;
    ok(&r);
    let a = attrs_of(&h, &s, &fh, &[FATTR4_SIZE, FATTR4_SPACE_USED]).await;
    assert_eq!(a.size, Some(10_000));
    assert!(a.space_used >= Some(10_000), "{a:?}");
    let r = h.seq(&s, &[putfh(&fh), read(sid, 0, 5)]).await;
    assert_eq!(&resok!(r, 2, Read).data[..], b"abc\0\0");
}

#[tokio::test]
async fn deallocate_punches_a_hole() {
    let h = server();
    let s = client42(&h, "c").await;
    let (fh, sid) = open_new(&h, &s, "f", 0o644, &[b'x'; 3 * 4096]).await;
    let r = h
        .seq(
            &s,
            &[
                putfh(&fh),
                deallocate(sid, 4096, 4096),
                seek(sid, 0, DataContent4::Nfs4ContentHole),
            ],
        )
        .await;
    ok(&r);
    assert_eq!(resok!(r, 3, Seek).offset, 4096);
    let a = attrs_of(&h, &s, &fh, &[FATTR4_SIZE]).await;
    assert_eq!(a.size, Some(3 * 4096), "the size stays");
    let data = content(&h, &s, &fh).await;
    assert!(data[4096..8192].iter().all(|&c| c == 0));
    assert!(data[..4096].iter().chain(&data[8192..]).all(|&c| c == b'x'));
}

#[tokio::test]
async fn allocate_and_deallocate_errors() {
    let h = server();
    let s = client42(&h, "c").await;
    let (fh, sid) = open_new(&h, &s, "f", 0o666, b"").await;
    let ro = open_existing(&h, &s, &fh, "reader", R, 0).await;
    for op in [allocate, deallocate] {
        let name = match op(sid, 0, 1) {
            NfsArgOp4::Allocate(_) => OpNum4::Allocate,
            _ => OpNum4::Deallocate,
        };
        let cases = [
            (vec![putfh(&fh), op(sid, 0, 0)], NfsStat4::Nfs4errInval),
            (
                vec![putfh(&fh), op(sid, i64::MAX as u64, 2)],
                NfsStat4::Nfs4errFbig,
            ),
            (vec![putfh(&fh), op(ro, 0, 1)], NfsStat4::Nfs4errOpenmode),
            (
                vec![putfh(&fh), op(unknown(sid), 0, 1)],
                NfsStat4::Nfs4errBadStateid,
            ),
            (
                vec![putfh(&fh), op(stale(sid), 0, 1)],
                NfsStat4::Nfs4errStaleStateid,
            ),
            (
                vec![putroot(), op(StateId4::ANONYMOUS, 0, 1)],
                NfsStat4::Nfs4errIsdir,
            ),
            (vec![op(sid, 0, 1)], NfsStat4::Nfs4errNofilehandle),
        ];
        for (ops, status) in cases {
            let r = h.seq(&s, &ops).await;
            fails(&r, name, status);
        }
    }
    assert_eq!(attrs_of(&h, &s, &fh, &[FATTR4_SIZE]).await.size, Some(0));
    let ro = read_only_server();
    let s = client42(&ro, "c").await;
    let anon = StateId4::ANONYMOUS;
    let r = ro
        .seq(&s, &[putroot(), lookup("f"), allocate(anon, 0, 1)])
        .await;
    fails(&r, OpNum4::Allocate, NfsStat4::Nfs4errRofs);
    let r = ro
        .seq(&s, &[putroot(), lookup("f"), deallocate(anon, 0, 1)])
        .await;
    fails(&r, OpNum4::Deallocate, NfsStat4::Nfs4errRofs);
    let f = lookup_fh(&ro, &s, &root_fh(&ro, &s).await, "f").await;
    assert_eq!(&content(&ro, &s, &f).await[..], b"data");
}

#[tokio::test]
async fn seek_finds_data_and_holes() {
    let h = server();
    let s = client42(&h, "c").await;
    let (fh, sid) = open_new(&h, &s, "f", 0o644, b"head").await;
    ok(&h.seq(&s, &[putfh(&fh), write(sid, 1 << 20, b"tail")]).await);
    let size = (1 << 20) + 4;
    let r = h
        .seq(
            &s,
            &[
                putfh(&fh),
                seek(sid, 0, DataContent4::Nfs4ContentData),
                seek(sid, 0, DataContent4::Nfs4ContentHole),
                seek(sid, 5000, DataContent4::Nfs4ContentData),
                seek(sid, size - 1, DataContent4::Nfs4ContentHole),
            ],
        )
        .await;
    ok(&r);
    let at = |i| {
        let x = resok!(r, i, Seek);
        (x.offset, x.eof)
    };
    assert_eq!(at(2), (0, false));
    assert_eq!(at(3), (4096, false));
    assert_eq!(at(4), (1 << 20, false));
    // The hole at the end of every file.
    assert_eq!(at(5), (size, true));
    let r = h
        .seq(
            &s,
            &[putfh(&fh), seek(sid, size, DataContent4::Nfs4ContentData)],
        )
        .await;
    fails(&r, OpNum4::Seek, NfsStat4::Nfs4errNxio);
}

#[tokio::test]
async fn seek_errors() {
    let h = server();
    let s = client42(&h, "c").await;
    let (fh, sid) = open_new(&h, &s, "f", 0o644, b"abc").await;
    let data = DataContent4::Nfs4ContentData;
    let cases = [
        (
            vec![putfh(&fh), seek(unknown(sid), 0, data)],
            NfsStat4::Nfs4errBadStateid,
        ),
        (
            vec![putfh(&fh), seek(stale(sid), 0, data)],
            NfsStat4::Nfs4errStaleStateid,
        ),
        (
            vec![putroot(), seek(StateId4::ANONYMOUS, 0, data)],
            NfsStat4::Nfs4errIsdir,
        ),
        (vec![seek(sid, 0, data)], NfsStat4::Nfs4errNofilehandle),
    ];
    for (ops, status) in cases {
        let r = h.seq(&s, &ops).await;
        fails(&r, OpNum4::Seek, status);
    }
}

#[tokio::test]
async fn nfsv4_2_operations_are_not_supported_in_nfsv4_1() {
    let h = server();
    let s = h.client("v41").await;
    let (fh, sid) = open_new(&h, &s, "f", 0o644, b"abc").await;
    let oid = NfsArgOp4::OffloadStatus(OffloadStatus4Args { stateid: sid });
    let ocan = NfsArgOp4::OffloadCancel(OffloadCancel4Args { stateid: sid });
    let cases = [
        (allocate(sid, 0, 1), OpNum4::Allocate),
        (deallocate(sid, 0, 1), OpNum4::Deallocate),
        (seek(sid, 0, DataContent4::Nfs4ContentData), OpNum4::Seek),
        (copy(sid, sid, 0, 3, 3), OpNum4::Copy),
        (clone_op(sid, sid, 0, 4096, 4096), OpNum4::Clone),
        (oid, OpNum4::OffloadStatus),
        (ocan, OpNum4::OffloadCancel),
    ];
    for (op, num) in cases {
        let r = h.seq(&s, &[putfh(&fh), NfsArgOp4::SaveFh, op]).await;
        fails(&r, num, NfsStat4::Nfs4errNotsupp);
    }
    assert_eq!(&content(&h, &s, &fh).await[..], b"abc");
}

// ---------------------------------------------------------------------
// NFSv4.2: COPY (§15.2), CLONE (§15.13), OFFLOAD_* (§15.8, §15.9)
// ---------------------------------------------------------------------

#[tokio::test]
async fn copy_copies_synchronously() {
    let h = server();
    let s = client42(&h, "c").await;
    let (src, ssid) = open_new(&h, &s, "src", 0o644, b"0123456789").await;
    let (dst, dsid) = open_new(&h, &s, "dst", 0o644, b"abc").await;
    let r = h
        .seq(
            &s,
            &[&src_dst(&src, &dst)[..], &[copy(ssid, dsid, 2, 1, 5)]].concat(),
        )
        .await;
    ok(&r);
    let c = copy_status(&r, 4);
    assert_eq!((c.response.count, c.response.callback_id), (5, None));
    assert!(c.requirements.synchronous);
    assert_eq!(&content(&h, &s, &dst).await[..], b"a23456");
    // Count 0: to the end of the source.
    let r = h
        .seq(
            &s,
            &[&src_dst(&src, &dst)[..], &[copy(ssid, dsid, 8, 0, 0)]].concat(),
        )
        .await;
    ok(&r);
    assert_eq!(copy_status(&r, 4).response.count, 2);
    assert_eq!(&content(&h, &s, &dst).await[..], b"893456");
}

#[tokio::test]
async fn copy_errors() {
    let h = server();
    let s = client42(&h, "c").await;
    let (src, ssid) = open_new(&h, &s, "src", 0o644, b"0123456789").await;
    let (dst, dsid) = open_new(&h, &s, "dst", 0o666, b"").await;
    let dst_ro = open_existing(&h, &s, &dst, "reader", R, 0).await;
    let root = root_fh(&h, &s).await;
    let with = |from: &NfsFh4, to: &NfsFh4, op| [&src_dst(from, to)[..], &[op]].concat();
    let remote = NfsArgOp4::Copy(Copy4Args {
        source_server: vec![NetLoc4::Name(b("elsewhere"))],
        ..match copy(ssid, dsid, 0, 0, 1) {
            NfsArgOp4::Copy(a) => a,
            _ => unreachable!(),
        }
    });
    let cases = [
        (
            with(&src, &dst, copy(ssid, dst_ro, 0, 0, 1)),
            NfsStat4::Nfs4errOpenmode,
        ),
        (
            with(&src, &dst, copy(unknown(ssid), dsid, 0, 0, 1)),
            NfsStat4::Nfs4errBadStateid,
        ),
        (
            with(&src, &dst, copy(ssid, stale(dsid), 0, 0, 1)),
            NfsStat4::Nfs4errStaleStateid,
        ),
        // Past the end of the source (§15.2.3).
        (
            with(&src, &dst, copy(ssid, dsid, 20, 0, 1)),
            NfsStat4::Nfs4errInval,
        ),
        (
            with(&root, &dst, copy(StateId4::ANONYMOUS, dsid, 0, 0, 1)),
            NfsStat4::Nfs4errIsdir,
        ),
        (
            with(&src, &root, copy(ssid, StateId4::ANONYMOUS, 0, 0, 1)),
            NfsStat4::Nfs4errIsdir,
        ),
        (with(&src, &dst, remote), NfsStat4::Nfs4errNotsupp),
        // No saved filehandle: no source.
        (
            vec![putfh(&dst), copy(ssid, dsid, 0, 0, 1)],
            NfsStat4::Nfs4errNofilehandle,
        ),
    ];
    for (ops, status) in cases {
        let r = h.seq(&s, &ops).await;
        fails(&r, OpNum4::Copy, status);
    }
    assert_eq!(content(&h, &s, &dst).await.len(), 0);
}

#[tokio::test]
async fn clone_shares_aligned_ranges() {
    let h = server();
    let s = client42(&h, "c").await;
    let mut data = vec![b'a'; 4096];
    data.extend(vec![b'b'; 4096]);
    let (src, ssid) = open_new(&h, &s, "src", 0o644, &data).await;
    let (dst, dsid) = open_new(&h, &s, "dst", 0o644, b"").await;
    let r = h
        .seq(
            &s,
            &[
                &src_dst(&src, &dst)[..],
                &[clone_op(ssid, dsid, 4096, 0, 4096)],
            ]
            .concat(),
        )
        .await;
    ok(&r);
    assert_eq!(&content(&h, &s, &dst).await[..], &data[4096..]);
    // Count 0: to the end of the source (§15.13.3).
    let (whole, wsid) = open_new(&h, &s, "whole", 0o644, b"").await;
    let r = h
        .seq(
            &s,
            &[&src_dst(&src, &whole)[..], &[clone_op(ssid, wsid, 0, 0, 0)]].concat(),
        )
        .await;
    ok(&r);
    assert_eq!(&content(&h, &s, &whole).await[..], &data[..]);
    // Unaligned ranges cannot share blocks.
    let r = h
        .seq(
            &s,
            &[
                &src_dst(&src, &dst)[..],
                &[clone_op(ssid, dsid, 1, 0, 4096)],
            ]
            .concat(),
        )
        .await;
    fails(&r, OpNum4::Clone, NfsStat4::Nfs4errInval);
    let root = root_fh(&h, &s).await;
    let r = h
        .seq(
            &s,
            &[
                &src_dst(&root, &dst)[..],
                &[clone_op(StateId4::ANONYMOUS, dsid, 0, 0, 4096)],
            ]
            .concat(),
        )
        .await;
    fails(&r, OpNum4::Clone, NfsStat4::Nfs4errIsdir);
    let r = h
        .seq(
            &s,
            &[
                &src_dst(&src, &dst)[..],
                &[clone_op(ssid, unknown(dsid), 0, 0, 4096)],
            ]
            .concat(),
        )
        .await;
    fails(&r, OpNum4::Clone, NfsStat4::Nfs4errBadStateid);
    let r = h
        .seq(&s, &[putfh(&dst), clone_op(ssid, dsid, 0, 0, 4096)])
        .await;
    fails(&r, OpNum4::Clone, NfsStat4::Nfs4errNofilehandle);
    assert_eq!(&content(&h, &s, &dst).await[..], &data[4096..]);
}

#[tokio::test]
async fn copy_and_clone_on_a_read_only_export_are_rofs() {
    let h = read_only_server();
    let s = client42(&h, "c").await;
    let root = root_fh(&h, &s).await;
    let anon = StateId4::ANONYMOUS;
    let r = h
        .seq(
            &s,
            &[&src_dst(&root, &root)[..], &[copy(anon, anon, 0, 0, 1)]].concat(),
        )
        .await;
    fails(&r, OpNum4::Copy, NfsStat4::Nfs4errRofs);
    let r = h
        .seq(
            &s,
            &[&src_dst(&root, &root)[..], &[clone_op(anon, anon, 0, 0, 1)]].concat(),
        )
        .await;
    fails(&r, OpNum4::Clone, NfsStat4::Nfs4errRofs);
}

#[tokio::test]
async fn offload_status_and_cancel_know_no_copy() {
    let h = server();
    let s = client42(&h, "c").await;
    let (src, ssid) = open_new(&h, &s, "src", 0o644, b"abc").await;
    let (dst, dsid) = open_new(&h, &s, "dst", 0o644, b"").await;
    // Every COPY is synchronous: none leaves a copy stateid behind.
    let r = h
        .seq(
            &s,
            &[&src_dst(&src, &dst)[..], &[copy(ssid, dsid, 0, 0, 0)]].concat(),
        )
        .await;
    ok(&r);
    assert!(copy_status(&r, 4).response.callback_id.is_none());
    let status = NfsArgOp4::OffloadStatus(OffloadStatus4Args { stateid: dsid });
    let cancel = NfsArgOp4::OffloadCancel(OffloadCancel4Args { stateid: dsid });
    for (op, num) in [
        (status, OpNum4::OffloadStatus),
        (cancel, OpNum4::OffloadCancel),
    ] {
        let r = h.seq(&s, &[putfh(&dst), op.clone()]).await;
        fails(&r, num, NfsStat4::Nfs4errBadStateid);
        let r = h.seq(&s, &[op]).await;
        fails(&r, num, NfsStat4::Nfs4errNofilehandle);
    }
}
