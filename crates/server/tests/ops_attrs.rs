//! Attribute operations in process (RFC 8881 §18.1, §18.7, §18.15,
//! §18.30, §18.31): GETATTR, SETATTR, VERIFY, NVERIFY, ACCESS.

mod common;

use common::*;

fn verify(a: Attrs) -> NfsArgOp4 {
    NfsArgOp4::Verify(Verify4Args {
        obj_attributes: a.encode(),
    })
}

fn nverify(a: Attrs) -> NfsArgOp4 {
    NfsArgOp4::NVerify(NVerify4Args {
        obj_attributes: a.encode(),
    })
}

fn access(bits: u32) -> NfsArgOp4 {
    NfsArgOp4::Access(Access4Args { access: bits })
}

fn setattr_raw(stateid: StateId4, f: Fattr4) -> NfsArgOp4 {
    NfsArgOp4::SetAttr(SetAttr4Args {
        stateid,
        obj_attributes: f,
    })
}

/// SETATTR's result at `i`: status and attrsset.
fn setattr_res(r: &Compound4Res, i: usize) -> SetAttr4Res {
    match r.resarray.get(i) {
        Some(NfsResOp4::SetAttr(s)) => s.clone(),
        _ => panic!("result {i} is no SETATTR: {r:?}"),
    }
}

fn access_res(r: &Compound4Res, i: usize) -> (u32, u32) {
    let a = resok!(r, i, Access);
    (a.supported, a.access)
}

const FILE_BITS: u32 = ACCESS4_READ | ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_EXECUTE;
const DIR_BITS: u32 =
    ACCESS4_READ | ACCESS4_LOOKUP | ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_DELETE;

// ---------------------------------------------------------------------
// GETATTR (§18.7)
// ---------------------------------------------------------------------

#[tokio::test]
async fn getattr_reports_the_objects_attributes() {
    let h = server();
    let s = h.client("c").await;
    let fh = new_file(&h, &s, "f", 0o640, b"12345").await;
    let want = [
        FATTR4_SUPPORTED_ATTRS,
        FATTR4_TYPE,
        FATTR4_SIZE,
        FATTR4_MODE,
        FATTR4_NUMLINKS,
        FATTR4_OWNER,
        FATTR4_OWNER_GROUP,
        FATTR4_FILEHANDLE,
        FATTR4_LEASE_TIME,
    ];
    let a = attrs_of(&h, &s, &fh, &want).await;
    assert_eq!(a.type_, Some(NfsFtype4::Nf4Reg));
    assert_eq!(a.size, Some(5));
    assert_eq!(a.mode, Some(0o640));
    assert_eq!(a.numlinks, Some(1));
    assert_eq!((a.owner, a.owner_group), (Some(b("0")), Some(b("0"))));
    assert_eq!(a.filehandle, Some(fh.clone()));
    assert_eq!(a.lease_time, Some(LEASE.as_secs() as u32));
    let sup = a.supported_attrs.unwrap_or_default();
    assert!(want.iter().all(|n| sup.contains(*n)), "{sup:?}");
    // A write shows in size and change.
    let before = change_of(&h, &s, &fh).await;
    let sid = open_existing(&h, &s, &fh, "o", OPEN4_SHARE_ACCESS_WRITE, 0).await;
    ok(&h.seq(&s, &[putfh(&fh), write(sid, 5, b"678")]).await);
    let a = attrs_of(&h, &s, &fh, &[FATTR4_SIZE, FATTR4_CHANGE]).await;
    assert_eq!(a.size, Some(8));
    assert_ne!(a.change, Some(before));
}

#[tokio::test]
async fn getattr_leaves_out_what_is_not_supported() {
    let h = server();
    let s = h.client("c").await;
    let a = attrs_of(
        &h,
        &s,
        &root_fh(&h, &s).await,
        &[FATTR4_TYPE, FATTR4_ACL, FATTR4_HIDDEN],
    )
    .await;
    assert_eq!(a.type_, Some(NfsFtype4::Nf4Dir));
    // The in-memory back end keeps no ACLs: none is shown.
    assert_eq!((a.acl, a.hidden), (None, None));
}

#[tokio::test]
async fn getattr_errors() {
    let h = server();
    let s = h.client("c").await;
    let r = h.seq(&s, &[getattr(&[FATTR4_TYPE])]).await;
    fails(&r, OpNum4::GetAttr, NfsStat4::Nfs4errNofilehandle);
    // Write-only attributes cannot be read (§18.7.3).
    let r = h
        .seq(&s, &[putroot(), getattr(&[FATTR4_TIME_MODIFY_SET])])
        .await;
    fails(&r, OpNum4::GetAttr, NfsStat4::Nfs4errInval);
    let fh = new_file(&h, &s, "f", 0o644, b"").await;
    ok(&h.seq(&s, &[putroot(), remove("f")]).await);
    let r = h.seq(&s, &[putfh(&fh), getattr(&[FATTR4_TYPE])]).await;
    assert_eq!(r.status, NfsStat4::Nfs4errStale, "{r:?}");
}

// ---------------------------------------------------------------------
// SETATTR (§18.30)
// ---------------------------------------------------------------------

#[tokio::test]
async fn setattr_changes_mode_times_and_size() {
    let h = server();
    let s = h.client("c").await;
    let (fh, sid) = open_new(&h, &s, "f", 0o644, b"0123456789").await;
    let when = NfsTime4 {
        seconds: 1_000_000,
        nseconds: 5,
    };
    let set = Attrs {
        mode: Some(0o600),
        size: Some(4),
        time_modify_set: Some(SetTime4::SetToClientTime4(when)),
        ..Default::default()
    };
    let r = h.seq(&s, &[putfh(&fh), setattr(sid, set)]).await;
    ok(&r);
    let done = setattr_res(&r, 2).attrsset;
    for n in [FATTR4_MODE, FATTR4_SIZE, FATTR4_TIME_MODIFY_SET] {
        assert!(done.contains(n), "{n} in {done:?}");
    }
    let a = attrs_of(&h, &s, &fh, &[FATTR4_MODE, FATTR4_SIZE, FATTR4_TIME_MODIFY]).await;
    assert_eq!(
        (a.mode, a.size, a.time_modify),
        (Some(0o600), Some(4), Some(when))
    );
    assert_eq!(&content(&h, &s, &fh).await[..], b"0123");
}

#[tokio::test]
async fn setattr_of_the_owner_by_name_or_number() {
    let h = server();
    let s = h.client("c").await;
    let fh = new_file(&h, &s, "f", 0o644, b"").await;
    let set = Attrs {
        owner: Some(b("1234")),
        owner_group: Some(b("99")),
        ..Default::default()
    };
    ok(&h
        .seq(&s, &[putfh(&fh), setattr(StateId4::ANONYMOUS, set)])
        .await);
    let a = attrs_of(&h, &s, &fh, &[FATTR4_OWNER, FATTR4_OWNER_GROUP]).await;
    assert_eq!((a.owner, a.owner_group), (Some(b("1234")), Some(b("99"))));
    let set = Attrs {
        owner: Some(b("no-such-user-ferrite-test@nowhere.invalid")),
        ..Default::default()
    };
    let r = h
        .seq(&s, &[putfh(&fh), setattr(StateId4::ANONYMOUS, set)])
        .await;
    fails(&r, OpNum4::SetAttr, NfsStat4::Nfs4errBadowner);
}

#[tokio::test]
async fn setattr_refuses_bad_attributes() {
    let h = server();
    let s = h.client("c").await;
    let fh = new_file(&h, &s, "f", 0o644, b"").await;
    let cases: Vec<(Fattr4, NfsStat4)> = vec![
        // Not a permission bit.
        (mode_attr(0o170000).encode(), NfsStat4::Nfs4errInval),
        // Read-only attributes.
        (
            Attrs {
                type_: Some(NfsFtype4::Nf4Dir),
                ..Default::default()
            }
            .encode(),
            NfsStat4::Nfs4errInval,
        ),
        // Not supported at all.
        (
            Attrs {
                hidden: Some(true),
                ..Default::default()
            }
            .encode(),
            NfsStat4::Nfs4errAttrnotsupp,
        ),
        // Values that do not decode.
        (
            Fattr4 {
                attrmask: Bitmap4::from_attrs(&[FATTR4_MODE]),
                attr_vals: Bytes::from_static(&[0, 0]),
            },
            NfsStat4::Nfs4errBadxdr,
        ),
        // Nanoseconds past a second.
        (
            Attrs {
                time_access_set: Some(SetTime4::SetToClientTime4(NfsTime4 {
                    seconds: 1,
                    nseconds: 1_000_000_000,
                })),
                ..Default::default()
            }
            .encode(),
            NfsStat4::Nfs4errInval,
        ),
    ];
    for (f, status) in cases {
        let r = h
            .seq(&s, &[putfh(&fh), setattr_raw(StateId4::ANONYMOUS, f)])
            .await;
        fails(&r, OpNum4::SetAttr, status);
        assert!(setattr_res(&r, 2).attrsset.is_empty(), "{r:?}");
    }
    assert_eq!(
        attrs_of(&h, &s, &fh, &[FATTR4_MODE]).await.mode,
        Some(0o644)
    );
    let r = h
        .seq(&s, &[setattr(StateId4::ANONYMOUS, mode_attr(0o600))])
        .await;
    fails(&r, OpNum4::SetAttr, NfsStat4::Nfs4errNofilehandle);
}

#[tokio::test]
async fn setattr_of_the_size_checks_the_stateid() {
    let h = server();
    let s = h.client("a").await;
    let other = h.client("b").await;
    let (fh, sid) = open_new(&h, &s, "f", 0o666, b"0123456789").await;
    let read_only = open_existing(&h, &s, &fh, "reader", OPEN4_SHARE_ACCESS_READ, 0).await;
    let (_, elsewhere) = open_new(&h, &s, "g", 0o666, b"").await;
    let cases = [
        (read_only, NfsStat4::Nfs4errOpenmode),
        (elsewhere, NfsStat4::Nfs4errBadStateid),
        (unknown(sid), NfsStat4::Nfs4errBadStateid),
        (stale(sid), NfsStat4::Nfs4errStaleStateid),
        (seq_moved(sid, 1), NfsStat4::Nfs4errBadStateid),
    ];
    for (stateid, status) in cases {
        let r = h
            .seq(&s, &[putfh(&fh), setattr(stateid, size_attr(0))])
            .await;
        fails(&r, OpNum4::SetAttr, status);
    }
    // Another client's stateid is as good as unknown.
    let r = h
        .seq(&other, &[putfh(&fh), setattr(sid, size_attr(0))])
        .await;
    fails(&r, OpNum4::SetAttr, NfsStat4::Nfs4errBadStateid);
    // Denied writing by a share reservation, the anonymous stateid may
    // not truncate (§9.1.2).
    ok(&h.seq(&s, &[putfh(&fh), close(sid)]).await);
    open_existing(
        &h,
        &s,
        &fh,
        "denier",
        OPEN4_SHARE_ACCESS_READ,
        OPEN4_SHARE_DENY_WRITE,
    )
    .await;
    let r = h
        .seq(
            &other,
            &[putfh(&fh), setattr(StateId4::ANONYMOUS, size_attr(0))],
        )
        .await;
    fails(&r, OpNum4::SetAttr, NfsStat4::Nfs4errLocked);
    assert_eq!(attrs_of(&h, &s, &fh, &[FATTR4_SIZE]).await.size, Some(10));
}

#[tokio::test]
async fn setattr_of_a_directorys_size_is_isdir() {
    let h = server();
    let s = h.client("c").await;
    let r = h
        .seq(&s, &[putroot(), setattr(StateId4::ANONYMOUS, size_attr(0))])
        .await;
    fails(&r, OpNum4::SetAttr, NfsStat4::Nfs4errIsdir);
}

#[tokio::test]
async fn setattr_by_someone_else_than_the_owner_is_perm() {
    let h = server();
    let s = h.client("root").await;
    let fh = new_file(&h, &s, "f", 0o666, b"").await;
    let u = h.client_as("user", user_auth()).await;
    let r = h
        .seq(
            &u,
            &[putfh(&fh), setattr(StateId4::ANONYMOUS, mode_attr(0o777))],
        )
        .await;
    fails(&r, OpNum4::SetAttr, NfsStat4::Nfs4errPerm);
    assert_eq!(
        attrs_of(&h, &s, &fh, &[FATTR4_MODE]).await.mode,
        Some(0o666)
    );
}

#[tokio::test]
async fn setattr_on_a_read_only_export_is_rofs() {
    let h = read_only_server();
    let s = h.client("c").await;
    let f = lookup_fh(&h, &s, &root_fh(&h, &s).await, "f").await;
    for set in [mode_attr(0o600), size_attr(0)] {
        let r = h
            .seq(&s, &[putfh(&f), setattr(StateId4::ANONYMOUS, set)])
            .await;
        fails(&r, OpNum4::SetAttr, NfsStat4::Nfs4errRofs);
    }
    let a = attrs_of(&h, &s, &f, &[FATTR4_MODE, FATTR4_SIZE]).await;
    assert_eq!((a.mode, a.size), (Some(0o666), Some(4)));
}

// ---------------------------------------------------------------------
// VERIFY (§18.31), NVERIFY (§18.15)
// ---------------------------------------------------------------------

#[tokio::test]
async fn verify_guards_the_operations_after_it() {
    let h = server();
    let s = h.client("c").await;
    let (fh, sid) = open_new(&h, &s, "f", 0o644, b"abc").await;
    let same = Attrs {
        size: Some(3),
        mode: Some(0o644),
        ..Default::default()
    };
    ok(&h
        .seq(&s, &[putfh(&fh), verify(same.clone()), write(sid, 3, b"d")])
        .await);
    // Now the size is 4: the guard stops the second write.
    let r = h
        .seq(&s, &[putfh(&fh), verify(same), write(sid, 4, b"e")])
        .await;
    fails(&r, OpNum4::Verify, NfsStat4::Nfs4errNotSame);
    assert_eq!(&content(&h, &s, &fh).await[..], b"abcd");
}

#[tokio::test]
async fn nverify_guards_the_operations_after_it() {
    let h = server();
    let s = h.client("c").await;
    let (fh, sid) = open_new(&h, &s, "f", 0o644, b"abc").await;
    let r = h
        .seq(
            &s,
            &[putfh(&fh), nverify(size_attr(3)), write(sid, 0, b"X")],
        )
        .await;
    fails(&r, OpNum4::NVerify, NfsStat4::Nfs4errSame);
    ok(&h
        .seq(
            &s,
            &[putfh(&fh), nverify(size_attr(99)), write(sid, 0, b"Y")],
        )
        .await);
    assert_eq!(&content(&h, &s, &fh).await[..], b"Ybc");
}

#[tokio::test]
async fn verify_and_nverify_errors() {
    let h = server();
    let s = h.client("c").await;
    for op in [verify, nverify] {
        let r = h.seq(&s, &[op(size_attr(0))]).await;
        assert_eq!(r.status, NfsStat4::Nfs4errNofilehandle, "{r:?}");
        // Not comparable (§18.31.3).
        let rdattr = Attrs {
            rdattr_error: Some(NfsStat4::Nfs4Ok),
            ..Default::default()
        };
        let r = h.seq(&s, &[putroot(), op(rdattr)]).await;
        assert_eq!(r.status, NfsStat4::Nfs4errInval, "{r:?}");
        let hidden = Attrs {
            hidden: Some(false),
            ..Default::default()
        };
        let r = h.seq(&s, &[putroot(), op(hidden)]).await;
        assert_eq!(r.status, NfsStat4::Nfs4errAttrnotsupp, "{r:?}");
    }
}

// ---------------------------------------------------------------------
// ACCESS (§18.1)
// ---------------------------------------------------------------------

#[tokio::test]
async fn access_of_the_owner_and_of_others() {
    let h = server();
    let s = h.client("root").await;
    let fh = new_file(&h, &s, "f", 0o644, b"").await;
    let r = h.seq(&s, &[putfh(&fh), access(FILE_BITS)]).await;
    ok(&r);
    // Root may do everything but execute a file no one may execute.
    assert_eq!(
        access_res(&r, 2),
        (FILE_BITS, ACCESS4_READ | ACCESS4_MODIFY | ACCESS4_EXTEND)
    );
    let u = h.client_as("user", user_auth()).await;
    let r = h.seq(&u, &[putfh(&fh), access(FILE_BITS)]).await;
    ok(&r);
    assert_eq!(access_res(&r, 2), (FILE_BITS, ACCESS4_READ));
    let r = h
        .seq(&u, &[putroot(), access(DIR_BITS | ACCESS4_EXECUTE)])
        .await;
    ok(&r);
    // EXECUTE means nothing for a directory: not reported as supported.
    assert_eq!(access_res(&r, 2), (DIR_BITS, ACCESS4_READ | ACCESS4_LOOKUP));
}

#[tokio::test]
async fn access_on_a_read_only_export_grants_no_modification() {
    let h = read_only_server();
    let s = h.client("root").await;
    let r = h.seq(&s, &[putroot(), access(DIR_BITS)]).await;
    ok(&r);
    assert_eq!(access_res(&r, 2), (DIR_BITS, ACCESS4_READ | ACCESS4_LOOKUP));
}

#[tokio::test]
async fn access_of_a_pseudo_directory_is_read_only() {
    let h = InProcess::with_exports(vec![export(1, "/data", ExportRules::open())], LEASE);
    let s = h.client("c").await;
    let r = h.seq(&s, &[putroot(), access(DIR_BITS)]).await;
    ok(&r);
    assert_eq!(access_res(&r, 2), (DIR_BITS, ACCESS4_READ | ACCESS4_LOOKUP));
}

#[tokio::test]
async fn access_errors() {
    let h = server();
    let s = h.client("c").await;
    let r = h.seq(&s, &[access(ACCESS4_READ)]).await;
    fails(&r, OpNum4::Access, NfsStat4::Nfs4errNofilehandle);
    // The extended-attribute bits are NFSv4.2's (RFC 8276 §8.6).
    let r = h.seq(&s, &[putroot(), access(ACCESS4_XAREAD)]).await;
    fails(&r, OpNum4::Access, NfsStat4::Nfs4errInval);
    let r = h.seq(&s, &[putroot(), access(0x8000)]).await;
    fails(&r, OpNum4::Access, NfsStat4::Nfs4errInval);
    let s42 = client42(&h, "v42").await;
    let r = h
        .seq(&s42, &[putroot(), access(ACCESS4_XAREAD | ACCESS4_READ)])
        .await;
    ok(&r);
    assert_eq!(access_res(&r, 2), (ACCESS4_READ, ACCESS4_READ));
}
