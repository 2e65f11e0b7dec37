//! Filehandle operations in process (RFC 8881 §18.8, §18.13, §18.14,
//! §18.19–§18.21, §18.27–§18.29, §18.45): PUTFH, PUTROOTFH, PUTPUBFH,
//! GETFH, SAVEFH, RESTOREFH, LOOKUP, LOOKUPP, SECINFO, SECINFO_NO_NAME.

mod common;

use common::*;
use server::exports::export::{ClientMatch, ClientRule};

fn secinfo(name: &str) -> NfsArgOp4 {
    NfsArgOp4::SecInfo(SecInfo4Args { name: b(name) })
}

fn secinfo_no_name(style: SecInfoStyle4) -> NfsArgOp4 {
    NfsArgOp4::SecInfoNoName(style)
}

fn flavors(r: &Compound4Res, i: usize) -> Vec<u32> {
    let list = match r.resarray.get(i) {
        Some(NfsResOp4::SecInfo(Res4::Ok(l))) | Some(NfsResOp4::SecInfoNoName(Res4::Ok(l))) => l,
        _ => panic!("result {i} is no SECINFO list: {r:?}"),
    };
    list.iter()
        .map(|f| match f {
            SecInfo4::Flavor(n) => *n,
            SecInfo4::RpcSecGss(_) => RPCSEC_GSS,
        })
        .collect()
}

/// A server whose root export accepts AUTH_SYS only.
fn sys_only_server() -> InProcess {
    let rules = ExportRules {
        sec: vec![Flavor::Sys],
        ..ExportRules::open()
    };
    InProcess::with_exports(vec![export(1, "/", rules)], LEASE)
}

/// A server with exports at /data and /other: the root is a pseudo
/// directory (RFC 8881 §7.3).
fn pseudo_server() -> InProcess {
    InProcess::with_exports(
        vec![
            export(1, "/data", ExportRules::open()),
            export(2, "/other", ExportRules::open()),
        ],
        LEASE,
    )
}

// ---------------------------------------------------------------------
// PUTFH (§18.19), GETFH (§18.8)
// ---------------------------------------------------------------------

#[tokio::test]
async fn putfh_makes_the_object_current() {
    let h = server();
    let s = h.client("c").await;
    let fh = new_file(&h, &s, "f", 0o644, b"abc").await;
    let r = h
        .seq(
            &s,
            &[
                putroot(),
                putfh(&fh),
                getattr(&[FATTR4_TYPE, FATTR4_SIZE]),
                getfh(),
            ],
        )
        .await;
    ok(&r);
    let a = attrs_at(&r, 3);
    assert_eq!((a.type_, a.size), (Some(NfsFtype4::Nf4Reg), Some(3)));
    assert_eq!(fh_at(&r, 4), fh, "GETFH gives the handle back");
}

#[tokio::test]
async fn putfh_refuses_handles_it_did_not_make() {
    let h = server();
    let s = h.client("c").await;
    let fh = new_file(&h, &s, "f", 0o644, b"").await;
    let mut forged = fh.0.to_vec();
    let last = forged.len() - 1;
    forged[last] ^= 1;
    for bad in [
        NfsFh4(Bytes::from(forged)),
        NfsFh4(b("not a handle")),
        NfsFh4(Bytes::new()),
    ] {
        let r = h.seq(&s, &[putfh(&bad), getattr(&[FATTR4_TYPE])]).await;
        fails(&r, OpNum4::PutFh, NfsStat4::Nfs4errBadhandle);
    }
}

#[tokio::test]
async fn putfh_of_another_file_system_is_stale() {
    let h = server();
    let s = h.client("c").await;
    // Same key, same export id, another root: a handle of what the
    // export used to be (RFC 8881 §4.2.2).
    let other = server();
    let o = other.client("c").await;
    let theirs = root_fh(&other, &o).await;
    let r = h.seq(&s, &[putfh(&theirs), getattr(&[FATTR4_TYPE])]).await;
    fails(&r, OpNum4::PutFh, NfsStat4::Nfs4errStale);
}

#[tokio::test]
async fn putfh_of_a_removed_object_is_stale() {
    let h = server();
    let s = h.client("c").await;
    let fh = new_file(&h, &s, "f", 0o644, b"").await;
    ok(&h.seq(&s, &[putroot(), remove("f")]).await);
    let r = h.seq(&s, &[putfh(&fh), getattr(&[FATTR4_TYPE])]).await;
    assert_eq!(r.status, NfsStat4::Nfs4errStale, "{r:?}");
}

#[tokio::test]
async fn putfh_of_an_export_refusing_the_flavor_is_wrongsec() {
    let h = sys_only_server();
    let s = h.client("sys").await;
    let root = root_fh(&h, &s).await;
    let none = h.client_as("none", rpc::Auth::None).await;
    // §2.6.3.1.1.7: the put-filehandle operation fails when the next
    // operation uses the filehandle...
    let r = h.seq(&none, &[putfh(&root), getattr(&[FATTR4_TYPE])]).await;
    fails(&r, OpNum4::PutFh, NfsStat4::Nfs4errWrongsec);
    assert_eq!(r.resarray.len(), 2);
    // ...but not when it asks which flavors to use.
    let r = h
        .seq(
            &none,
            &[putfh(&root), secinfo_no_name(SecInfoStyle4::CurrentFh)],
        )
        .await;
    ok(&r);
    assert_eq!(flavors(&r, 2), vec![AUTH_SYS]);
}

#[tokio::test]
async fn getfh_needs_a_current_filehandle() {
    let h = server();
    let s = h.client("c").await;
    let r = h.seq(&s, &[getfh()]).await;
    fails(&r, OpNum4::GetFh, NfsStat4::Nfs4errNofilehandle);
}

// ---------------------------------------------------------------------
// PUTROOTFH (§18.21), PUTPUBFH (§18.20)
// ---------------------------------------------------------------------

#[tokio::test]
async fn putrootfh_and_putpubfh_are_the_root_directory() {
    let h = server();
    let s = h.client("c").await;
    let d = new_dir(&h, &s, &root_fh(&h, &s).await, "d", None).await;
    let r = h
        .seq(
            &s,
            &[
                putroot(),
                getattr(&[FATTR4_TYPE]),
                getfh(),
                NfsArgOp4::PutPubFh,
                getfh(),
            ],
        )
        .await;
    ok(&r);
    assert_eq!(attrs_at(&r, 2).type_, Some(NfsFtype4::Nf4Dir));
    let root = fh_at(&r, 3);
    assert_eq!(fh_at(&r, 5), root, "the public filehandle is the root");
    // The root is where LOOKUPP from its subdirectory leads.
    let r = h.seq(&s, &[putfh(&d), NfsArgOp4::LookupP, getfh()]).await;
    ok(&r);
    assert_eq!(fh_at(&r, 3), root);
}

#[tokio::test]
async fn putrootfh_over_exports_elsewhere_is_the_pseudo_root() {
    let h = pseudo_server();
    let s = h.client("c").await;
    let r = h
        .seq(&s, &[putroot(), getattr(&[FATTR4_TYPE]), readdir(0, &[])])
        .await;
    ok(&r);
    assert_eq!(attrs_at(&r, 2).type_, Some(NfsFtype4::Nf4Dir));
    let names: Vec<Bytes> = resok!(r, 3, ReadDir)
        .reply
        .entries
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, vec![b("data"), b("other")]);
    // The pseudo root may not be written (§7.4).
    let r = h.seq(&s, &[putroot(), mkdir("x")]).await;
    fails(&r, OpNum4::Create, NfsStat4::Nfs4errRofs);
}

#[tokio::test]
async fn putrootfh_of_an_export_without_a_rule_for_the_client_is_access() {
    let mut rules = ExportRules::open();
    rules.clients = vec![ClientRule {
        matches: ClientMatch::parse("10.0.0.0/8").unwrap_or(ClientMatch::Any),
        ..ClientRule::open()
    }];
    assert_ne!(rules.clients[0].matches, ClientMatch::Any);
    let h = InProcess::with_exports(vec![export(1, "/", rules)], LEASE);
    let s = h.client("c").await;
    let r = h.seq(&s, &[putroot()]).await;
    fails(&r, OpNum4::PutRootFh, NfsStat4::Nfs4errAccess);
    let r = h.seq(&s, &[NfsArgOp4::PutPubFh]).await;
    fails(&r, OpNum4::PutPubFh, NfsStat4::Nfs4errAccess);
}

// ---------------------------------------------------------------------
// SAVEFH (§18.28), RESTOREFH (§18.27)
// ---------------------------------------------------------------------

#[tokio::test]
async fn savefh_and_restorefh_keep_a_filehandle_across_others() {
    let h = server();
    let s = h.client("c").await;
    let root = root_fh(&h, &s).await;
    new_file(&h, &s, "f", 0o644, b"").await;
    let r = h
        .seq(
            &s,
            &[
                putroot(),
                NfsArgOp4::SaveFh,
                lookup("f"),
                NfsArgOp4::RestoreFh,
                getfh(),
            ],
        )
        .await;
    ok(&r);
    assert_eq!(fh_at(&r, 5), root);
}

#[tokio::test]
async fn savefh_keeps_the_current_stateid_with_the_filehandle() {
    let h = server();
    let s = h.client("c").await;
    // OPEN makes its stateid current; SAVEFH keeps it, RESTOREFH brings
    // it back (§16.2.3.1.2) for a WRITE naming the current stateid.
    let r = h
        .seq(
            &s,
            &[
                putroot(),
                open_create(&s, "f", 0o644),
                NfsArgOp4::SaveFh,
                putroot(),
                NfsArgOp4::RestoreFh,
                write(StateId4::CURRENT, 0, b"kept"),
                getfh(),
            ],
        )
        .await;
    ok(&r);
    let fh = fh_at(&r, 7);
    assert_eq!(&content(&h, &s, &fh).await[..], b"kept");
    // PUTROOTFH dropped it: no current stateid to write with.
    let r = h
        .seq(
            &s,
            &[
                putroot(),
                lookup("f"),
                putfh(&fh),
                write(StateId4::CURRENT, 0, b"x"),
            ],
        )
        .await;
    fails(&r, OpNum4::Write, NfsStat4::Nfs4errBadStateid);
}

#[tokio::test]
async fn savefh_and_restorefh_errors() {
    let h = server();
    let s = h.client("c").await;
    let r = h.seq(&s, &[NfsArgOp4::SaveFh]).await;
    fails(&r, OpNum4::SaveFh, NfsStat4::Nfs4errNofilehandle);
    let r = h.seq(&s, &[putroot(), NfsArgOp4::RestoreFh]).await;
    fails(&r, OpNum4::RestoreFh, NfsStat4::Nfs4errRestorefh);
}

// ---------------------------------------------------------------------
// LOOKUP (§18.13)
// ---------------------------------------------------------------------

#[tokio::test]
async fn lookup_finds_the_object_by_name() {
    let h = server();
    let s = h.client("c").await;
    let root = root_fh(&h, &s).await;
    let d = new_dir(&h, &s, &root, "d", None).await;
    let r = h
        .seq(
            &s,
            &[putroot(), lookup("d"), getfh(), getattr(&[FATTR4_TYPE])],
        )
        .await;
    ok(&r);
    assert_eq!(fh_at(&r, 3), d);
    assert_eq!(attrs_at(&r, 4).type_, Some(NfsFtype4::Nf4Dir));
    assert_eq!(
        lookup_status(&h, &s, &root, "missing").await,
        NfsStat4::Nfs4errNoent
    );
}

#[tokio::test]
async fn lookup_in_what_is_no_directory() {
    let h = server();
    let s = h.client("c").await;
    let f = new_file(&h, &s, "f", 0o644, b"").await;
    let r = h.seq(&s, &[putfh(&f), lookup("x")]).await;
    fails(&r, OpNum4::Lookup, NfsStat4::Nfs4errNotdir);
    let r = h
        .seq(&s, &[putroot(), symlink("l", "f"), lookup("x")])
        .await;
    fails(&r, OpNum4::Lookup, NfsStat4::Nfs4errSymlink);
    let r = h.seq(&s, &[lookup("x")]).await;
    fails(&r, OpNum4::Lookup, NfsStat4::Nfs4errNofilehandle);
}

#[tokio::test]
async fn lookup_checks_the_name() {
    let h = server();
    let s = h.client("c").await;
    let long = "n".repeat(256);
    let cases: &[(&[u8], NfsStat4)] = &[
        (b"", NfsStat4::Nfs4errInval),
        (b"\xff\xfe", NfsStat4::Nfs4errInval),
        (b".", NfsStat4::Nfs4errBadname),
        (b"..", NfsStat4::Nfs4errBadname),
        (b"a/b", NfsStat4::Nfs4errBadchar),
        (b"a\0b", NfsStat4::Nfs4errBadchar),
        (long.as_bytes(), NfsStat4::Nfs4errNametoolong),
    ];
    for (name, status) in cases {
        let op = NfsArgOp4::Lookup(Lookup4Args {
            objname: Bytes::copy_from_slice(name),
        });
        let r = h.seq(&s, &[putroot(), op]).await;
        fails(&r, OpNum4::Lookup, *status);
    }
}

#[tokio::test]
async fn lookup_in_a_directory_the_user_may_not_search_is_access() {
    let h = server();
    let s = h.client("root").await;
    let root = root_fh(&h, &s).await;
    let d = new_dir(&h, &s, &root, "private", Some(0o700)).await;
    new_dir(&h, &s, &d, "inner", None).await;
    let u = h.client_as("user", user_auth()).await;
    let r = h.seq(&u, &[putfh(&d), lookup("inner")]).await;
    fails(&r, OpNum4::Lookup, NfsStat4::Nfs4errAccess);
    ok(&h.seq(&s, &[putfh(&d), lookup("inner")]).await);
}

#[tokio::test]
async fn lookup_into_an_export_refusing_the_flavor_is_wrongsec() {
    let rules = ExportRules {
        sec: vec![Flavor::Sys],
        ..ExportRules::open()
    };
    let h = InProcess::with_exports(vec![export(1, "/data", rules)], LEASE);
    let none = h.client_as("none", rpc::Auth::None).await;
    let r = h.seq(&none, &[putroot(), lookup("data")]).await;
    fails(&r, OpNum4::Lookup, NfsStat4::Nfs4errWrongsec);
    let sys = h.client("sys").await;
    ok(&h.seq(&sys, &[putroot(), lookup("data")]).await);
}

// ---------------------------------------------------------------------
// LOOKUPP (§18.14)
// ---------------------------------------------------------------------

#[tokio::test]
async fn lookupp_goes_to_the_parent() {
    let h = server();
    let s = h.client("c").await;
    let root = root_fh(&h, &s).await;
    let a = new_dir(&h, &s, &root, "a", None).await;
    let b_ = new_dir(&h, &s, &a, "b", None).await;
    let r = h
        .seq(
            &s,
            &[
                putfh(&b_),
                NfsArgOp4::LookupP,
                getfh(),
                NfsArgOp4::LookupP,
                getfh(),
            ],
        )
        .await;
    ok(&r);
    assert_eq!((fh_at(&r, 3), fh_at(&r, 5)), (a, root));
}

#[tokio::test]
async fn lookupp_errors() {
    let h = server();
    let s = h.client("c").await;
    let f = new_file(&h, &s, "f", 0o644, b"").await;
    let r = h.seq(&s, &[putroot(), NfsArgOp4::LookupP]).await;
    fails(&r, OpNum4::LookupP, NfsStat4::Nfs4errNoent);
    let r = h.seq(&s, &[putfh(&f), NfsArgOp4::LookupP]).await;
    fails(&r, OpNum4::LookupP, NfsStat4::Nfs4errNotdir);
    let r = h.seq(&s, &[NfsArgOp4::LookupP]).await;
    fails(&r, OpNum4::LookupP, NfsStat4::Nfs4errNofilehandle);
}

#[tokio::test]
async fn lookupp_from_an_export_root_is_the_pseudo_directory() {
    let h = pseudo_server();
    let s = h.client("c").await;
    let r = h
        .seq(
            &s,
            &[
                putroot(),
                getfh(),
                lookup("data"),
                NfsArgOp4::LookupP,
                getfh(),
                NfsArgOp4::LookupP,
            ],
        )
        .await;
    fails(&r, OpNum4::LookupP, NfsStat4::Nfs4errNoent);
    assert_eq!(fh_at(&r, 2), fh_at(&r, 5));
}

// ---------------------------------------------------------------------
// SECINFO (§18.29), SECINFO_NO_NAME (§18.45)
// ---------------------------------------------------------------------

#[tokio::test]
async fn secinfo_lists_the_flavors_and_consumes_the_filehandle() {
    let h = server();
    let s = h.client("c").await;
    new_file(&h, &s, "f", 0o644, b"").await;
    let r = h.seq(&s, &[putroot(), secinfo("f")]).await;
    ok(&r);
    assert_eq!(flavors(&r, 2), vec![AUTH_SYS, AUTH_NONE]);
    // §2.6.3.1.1.8: no current filehandle afterwards.
    let r = h.seq(&s, &[putroot(), secinfo("f"), getfh()]).await;
    fails(&r, OpNum4::GetFh, NfsStat4::Nfs4errNofilehandle);
    // A name leading into another export: that export's flavors.
    let sys_only = ExportRules {
        sec: vec![Flavor::Sys],
        ..ExportRules::open()
    };
    let h = InProcess::with_exports(
        vec![
            export(1, "/open", ExportRules::open()),
            export(2, "/sys", sys_only),
        ],
        LEASE,
    );
    let s = h.client("c").await;
    let r = h.seq(&s, &[putroot(), secinfo("sys")]).await;
    ok(&r);
    assert_eq!(flavors(&r, 2), vec![AUTH_SYS]);
    let r = h.seq(&s, &[putroot(), secinfo("open")]).await;
    ok(&r);
    assert_eq!(flavors(&r, 2), vec![AUTH_SYS, AUTH_NONE]);
}

#[tokio::test]
async fn secinfo_errors() {
    let h = server();
    let s = h.client("c").await;
    let f = new_file(&h, &s, "f", 0o644, b"").await;
    let r = h.seq(&s, &[putroot(), secinfo("missing")]).await;
    fails(&r, OpNum4::SecInfo, NfsStat4::Nfs4errNoent);
    let r = h.seq(&s, &[putfh(&f), secinfo("x")]).await;
    fails(&r, OpNum4::SecInfo, NfsStat4::Nfs4errNotdir);
    let r = h.seq(&s, &[putroot(), secinfo("..")]).await;
    fails(&r, OpNum4::SecInfo, NfsStat4::Nfs4errBadname);
    let r = h.seq(&s, &[secinfo("f")]).await;
    fails(&r, OpNum4::SecInfo, NfsStat4::Nfs4errNofilehandle);
}

#[tokio::test]
async fn secinfo_no_name_of_the_object_and_of_its_parent() {
    let h = server();
    let s = h.client("c").await;
    let d = new_dir(&h, &s, &root_fh(&h, &s).await, "d", None).await;
    for style in [SecInfoStyle4::CurrentFh, SecInfoStyle4::Parent] {
        let r = h.seq(&s, &[putfh(&d), secinfo_no_name(style)]).await;
        ok(&r);
        assert_eq!(flavors(&r, 2), vec![AUTH_SYS, AUTH_NONE]);
        let r = h
            .seq(&s, &[putfh(&d), secinfo_no_name(style), getfh()])
            .await;
        fails(&r, OpNum4::GetFh, NfsStat4::Nfs4errNofilehandle);
    }
}

#[tokio::test]
async fn secinfo_no_name_errors() {
    let h = server();
    let s = h.client("c").await;
    let f = new_file(&h, &s, "f", 0o644, b"").await;
    // The root of the namespace has no parent.
    let r = h
        .seq(&s, &[putroot(), secinfo_no_name(SecInfoStyle4::Parent)])
        .await;
    fails(&r, OpNum4::SecInfoNoName, NfsStat4::Nfs4errNoent);
    let r = h
        .seq(&s, &[putfh(&f), secinfo_no_name(SecInfoStyle4::Parent)])
        .await;
    fails(&r, OpNum4::SecInfoNoName, NfsStat4::Nfs4errNotdir);
    let r = h
        .seq(&s, &[secinfo_no_name(SecInfoStyle4::CurrentFh)])
        .await;
    fails(&r, OpNum4::SecInfoNoName, NfsStat4::Nfs4errNofilehandle);
}
