//! RPCSEC_GSS with Kerberos V5 against a real KDC (RFC 2203; RFC 8881
//! §2.6): the three services, principals mapped to local users, export
//! flavor lists, and forged, replayed and tampered calls.
//!
//! These need a realm: tests/kerberos.sh makes one (Debian's krb5-kdc on
//! loopback), the server's key table, tickets for alice and bob and a
//! local user for alice, then runs them with
//! `cargo test -p e2e --features kerberos --test kerberos -- --ignored`, KRB5_CONFIG set for
//! the whole process. FERRITE_KRB5_DIR names the realm's directory,
//! FERRITE_KRB5_UID the local user alice maps to.

#![cfg(feature = "kerberos")]

mod common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use client::{Client, ClientOptions, GssOptions, OpenOpts};
use common::*;
use proto::nfs4::*;
use rpc::gss::wire::{GssCred, GssProc, InitRes, GSS_S_COMPLETE};
use rpc::gss::GssService;
use rpc::{AuthStat, CallError, OpaqueAuth, ReplyError};
use server::config::{ExportConfig, ServerConfig};
use server::exports::export::{ClientMatch, ClientRule, ExportRules, Flavor, Squash};
use server::security::kerberos::KerberosConfig;
use xdr::Unpack;

fn realm() -> PathBuf {
    PathBuf::from(
        std::env::var("FERRITE_KRB5_DIR").expect("FERRITE_KRB5_DIR (tests/kerberos.sh sets it)"),
    )
}

fn alice_uid() -> u32 {
    std::env::var("FERRITE_KRB5_UID")
        .expect("FERRITE_KRB5_UID")
        .parse()
        .expect("a uid")
}

fn ccache(user: &str) -> String {
    format!("FILE:{}/{user}.cc", realm().display())
}

struct KrbServer {
    running: server::run::Running,
    dirs: Vec<tempfile::TempDir>,
    _state: tempfile::TempDir,
}

/// A server with one export per (path, flavors), each open to every
/// address with root squashed.
async fn start(exports: &[(&str, &[Flavor])]) -> KrbServer {
    start_as(exports, false).await
}

async fn start_as(exports: &[(&str, &[Flavor])], delegations: bool) -> KrbServer {
    let mut dirs = Vec::new();
    let mut list = Vec::new();
    for (path, sec) in exports {
        let d = tempfile::tempdir().expect("export dir");
        // Writable by the users the principals map to.
        std::fs::set_permissions(
            d.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o1777),
        )
        .expect("chmod");
        let mut e = ExportConfig::open(*path, d.path());
        let mut rule = ClientRule::new(ClientMatch::Any);
        rule.squash = Squash::Root;
        rule.secure = false;
        e.rules = ExportRules {
            clients: vec![rule],
            sec: sec.to_vec(),
            ..ExportRules::open()
        };
        e.delegations = delegations;
        list.push(e);
        dirs.push(d);
    }
    let state = tempfile::tempdir().expect("state dir");
    let mut k = KerberosConfig::new(realm().join("nfs.keytab"));
    k.principals = vec![("alice@FERRITE.TEST".into(), "ferrite-krb".into())];
    let cfg = ServerConfig {
        nfs4: server::instance::Nfs4Config {
            lease: Duration::from_secs(10),
            grace: Some(Duration::ZERO),
            owner_domain: Some("ferrite.test".into()),
            ..Default::default()
        },
        kerberos: Some(k),
        ..ServerConfig::new(
            "127.0.0.1:0".parse().expect("address"),
            state.path().to_path_buf(),
            list,
        )
    };
    let running = server::run::start(cfg).await.expect("server starts");
    KrbServer {
        running,
        dirs,
        _state: state,
    }
}

fn gss_options(user: &str, service: GssService) -> ClientOptions {
    let mut o = ClientOptions::new(format!("krb-{user}-{service:?}-{}", std::process::id()));
    o.gss = Some(GssOptions {
        target: "nfs@localhost".into(),
        ccache: Some(ccache(user)),
        service,
    });
    o
}

async fn gss_client(s: &KrbServer, user: &str, service: GssService) -> Client {
    Client::connect(s.running.addr, gss_options(user, service))
        .await
        .expect("GSS client connects")
}

fn gate(s: &KrbServer) -> &Arc<rpc::gss::Gate> {
    s.running.nfs4.gss().expect("the server has a GSS gate")
}

/// Writes, reads back, locks and unlocks a file under each service; the
/// file belongs to the local user alice's principal maps to.
#[tokio::test]
#[ignore = "needs a Kerberos realm: run by tests/kerberos.sh"]
async fn krb5_krb5i_krb5p_write_read_and_lock() {
    within(async {
        let s = start(&[("/", &[Flavor::Krb5p, Flavor::Krb5i, Flavor::Krb5])]).await;
        for service in [GssService::None, GssService::Integrity, GssService::Privacy] {
            let c = gss_client(&s, "alice", service).await;
            let root = c.root_fh().await.expect("root");
            let name = format!("f-{service:?}");
            let o = c
                .open(&root, &name, OpenOpts::create(0o644))
                .await
                .expect("create");
            // 300 KiB: READs above the size sent from the page cache.
            write_read_back_and_lock(&c, &o, 300 << 10, 100 << 10).await;
            // A Kerberos caller gets owners as names (RFC 8881 §5.9).
            let a = c.getattr(&o.fh, &[FATTR4_OWNER]).await.expect("getattr");
            assert_eq!(a.owner.as_deref(), Some(&b"ferrite-krb@ferrite.test"[..]));
            c.close(&o.fh, o.stateid).await.expect("close");
            let meta = std::fs::metadata(s.dirs[0].path().join(&name)).expect("file on disk");
            assert_eq!(
                std::os::unix::fs::MetadataExt::uid(&meta),
                alice_uid(),
                "{service:?}: alice@FERRITE.TEST acts as ferrite-krb"
            );
        }
        // bob maps to no local user: he acts as nobody (root squashed).
        let c = gss_client(&s, "bob", GssService::Integrity).await;
        let root = c.root_fh().await.expect("root");
        c.open(&root, "bobs", OpenOpts::create(0o644))
            .await
            .expect("bob creates");
        let meta = std::fs::metadata(s.dirs[0].path().join("bobs")).expect("file");
        assert_eq!(std::os::unix::fs::MetadataExt::uid(&meta), 65534);
        assert!(
            gate(&s)
                .counts()
                .established
                .load(std::sync::atomic::Ordering::Relaxed)
                >= 4
        );
    })
    .await
}

/// Each export takes the flavors it lists (RFC 8881 §2.6.3.1): others
/// get NFS4ERR_WRONGSEC, and SECINFO says which to use, in order.
#[tokio::test]
#[ignore = "needs a Kerberos realm: run by tests/kerberos.sh"]
async fn export_flavor_lists_are_enforced() {
    within(async {
        let s = start(&[
            ("/private", &[Flavor::Krb5p]),
            ("/signed", &[Flavor::Krb5i, Flavor::Krb5p]),
            ("/open", &[Flavor::Sys, Flavor::Krb5]),
        ])
        .await;
        let sys = Client::connect(s.running.addr, options())
            .await
            .expect("sys client");
        let root = sys.root_fh().await.expect("root");
        for name in ["private", "signed"] {
            assert_eq!(
                status(sys.lookup(&root, name).await),
                NfsStat4::Nfs4errWrongsec,
                "AUTH_SYS into {name}"
            );
        }
        sys.lookup(&root, "open").await.expect("sys into open");
        let krb5p = |svc| {
            SecInfo4::RpcSecGss(RpcSecGssInfo {
                oid: Bytes::from_static(server::exports::export::KRB5_OID),
                qop: 0,
                service: svc,
            })
        };
        assert_eq!(
            sys.secinfo(&root, "private").await.expect("secinfo"),
            [krb5p(RpcGssSvc::RpcGssSvcPrivacy)]
        );
        assert_eq!(
            sys.secinfo(&root, "signed").await.expect("secinfo"),
            [
                krb5p(RpcGssSvc::RpcGssSvcIntegrity),
                krb5p(RpcGssSvc::RpcGssSvcPrivacy)
            ]
        );
        assert_eq!(
            sys.secinfo(&root, "open").await.expect("secinfo"),
            [
                SecInfo4::Flavor(rpc::AUTH_SYS),
                krb5p(RpcGssSvc::RpcGssSvcNone)
            ]
        );
        // The pseudo root lists the Kerberos flavors first.
        let pseudo = sys
            .secinfo_no_name(&root, SecInfoStyle4::CurrentFh)
            .await
            .expect("secinfo_no_name");
        assert_eq!(pseudo[0], krb5p(RpcGssSvc::RpcGssSvcPrivacy));
        // krb5 (authentication only) is not enough for private, krb5p is.
        let k = gss_client(&s, "alice", GssService::None).await;
        let root = k.root_fh().await.expect("root");
        assert_eq!(
            status(k.lookup(&root, "private").await),
            NfsStat4::Nfs4errWrongsec
        );
        k.lookup(&root, "open").await.expect("krb5 into open");
        let p = gss_client(&s, "alice", GssService::Privacy).await;
        let root = p.root_fh().await.expect("root");
        let dir = p
            .lookup(&root, "private")
            .await
            .expect("krb5p into private");
        p.mkdir(&dir, "d", 0o755).await.expect("mkdir under krb5p");
        p.lookup(&root, "signed").await.expect("krb5p into signed");
    })
    .await
}

/// Context creation with a token that is not a valid AP-REQ, with one
/// replayed from another context, and without a ticket at all: each
/// refused, the server serving others all along.
#[tokio::test]
#[ignore = "needs a Kerberos realm: run by tests/kerberos.sh"]
async fn forged_replayed_and_missing_tickets_are_refused() {
    within(async {
        let s = start(&[("/", &[Flavor::Krb5])]).await;
        let conn = rpc::connect(s.running.addr, None, Default::default())
            .await
            .expect("connect");
        let init = |token: Vec<u8>| {
            let conn = conn.clone();
            async move {
                let cred = GssCred {
                    proc_: GssProc::Init,
                    seq_num: 0,
                    service: GssService::None,
                    handle: Bytes::new(),
                }
                .opaque();
                let mut e = xdr::Encoder::new();
                e.opaque(&token);
                let (_, mut d) = conn
                    .call_raw(100003, 4, 0, &cred, |_| OpaqueAuth::none(), e.finish())
                    .await
                    .expect("INIT answered");
                InitRes::unpack(&mut d).expect("rpc_gss_init_res")
            }
        };
        // Garbage, and a token shaped like Kerberos's but forged.
        let r = init(vec![0x60, 0x82, 0x01, 0x00, 0x06, 0x09, 1, 2, 3]).await;
        assert_ne!(r.gss_major, GSS_S_COMPLETE);
        assert!(r.handle.is_empty());
        let r = init(vec![7u8; 2000]).await;
        assert_ne!(r.gss_major, GSS_S_COMPLETE);
        // A real AP-REQ, taken from a context alice made, sent again.
        let mut mech =
            rpc::gss::krb5::initiator("nfs@localhost", Some(&ccache("alice"))).expect("initiator");
        let token = match mech.step(None).expect("first token") {
            rpc::gss::mech::Step::More(t) | rpc::gss::mech::Step::Done(Some(t)) => t,
            other => panic!("no token: {other:?}"),
        };
        let first = init(token.clone()).await;
        assert_eq!(first.gss_major, GSS_S_COMPLETE, "the first use is accepted");
        let again = init(token).await;
        assert_ne!(
            again.gss_major, GSS_S_COMPLETE,
            "a replayed AP-REQ is refused"
        );
        // A user without a ticket cannot even make a token.
        let empty = format!("FILE:{}/nobody.cc", realm().display());
        let r =
            rpc::gss::krb5::initiator("nfs@localhost", Some(&empty)).and_then(|mut m| m.step(None));
        assert!(r.is_err(), "a token without a ticket");
        assert!(
            gate(&s)
                .counts()
                .refused
                .load(std::sync::atomic::Ordering::Relaxed)
                >= 3
        );
        // Still serving.
        let c = gss_client(&s, "alice", GssService::None).await;
        c.root_fh().await.expect("served after the refusals");
    })
    .await
}

/// A call sent twice under one sequence number is answered once; a call
/// whose checksum does not match its header is refused
/// RPCSEC_GSS_CREDPROBLEM; integrity-protected arguments changed on the
/// way are GARBAGE_ARGS; a destroyed context is gone.
#[tokio::test]
#[ignore = "needs a Kerberos realm: run by tests/kerberos.sh"]
async fn replayed_forged_and_tampered_calls() {
    within(async {
        let s = start(&[("/", &[Flavor::Krb5i, Flavor::Krb5])]).await;
        let conn = rpc::connect(s.running.addr, None, Default::default())
            .await
            .expect("connect");
        let mech =
            rpc::gss::krb5::initiator("nfs@localhost", Some(&ccache("alice"))).expect("initiator");
        let ctx = Arc::new(
            rpc::gss::ClientContext::establish(&conn, 100003, 4, mech, GssService::Integrity)
                .await
                .expect("context"),
        );
        let null = |seq| ctx.cred(GssProc::Data, seq, GssService::Integrity);
        let seal = |seq| {
            ctx.seal_args(seq, GssService::Integrity, Vec::new())
                .expect("sealed")
        };
        // NULL under integrity, once.
        let seq = ctx.next_seq();
        let (v, d) = conn
            .call_raw(100003, 4, 0, &null(seq), |h| ctx.verifier(h), seal(seq))
            .await
            .expect("NULL");
        ctx.open_reply(seq, GssService::Integrity, &v, d)
            .expect("reply verifies");
        // The same call again: dropped; a later one is answered, so the
        // replay was read and not answered.
        let dropped = || {
            gate(&s)
                .counts()
                .dropped
                .load(std::sync::atomic::Ordering::Relaxed)
        };
        let before = dropped();
        let replay = {
            let (conn, ctx, cred, args) = (conn.clone(), ctx.clone(), null(seq), seal(seq));
            tokio::spawn(async move {
                conn.call_raw(100003, 4, 0, &cred, |h| ctx.verifier(h), args)
                    .await
                    .is_ok()
            })
        };
        let seq2 = ctx.next_seq();
        let (v, d) = conn
            .call_raw(100003, 4, 0, &null(seq2), |h| ctx.verifier(h), seal(seq2))
            .await
            .expect("the next call");
        ctx.open_reply(seq2, GssService::Integrity, &v, d)
            .expect("reply verifies");
        assert_eq!(dropped(), before + 1);
        assert!(!replay.is_finished(), "the replay was answered");
        replay.abort();
        // A verifier that is not the header's checksum.
        let seq3 = ctx.next_seq();
        let r = conn
            .call_raw(
                100003,
                4,
                0,
                &null(seq3),
                |h| {
                    let mut h = h.to_vec();
                    h[0] ^= 1;
                    ctx.verifier(&h)
                },
                seal(seq3),
            )
            .await;
        assert_eq!(
            r.err(),
            Some(CallError::Rejected(ReplyError::Auth(
                AuthStat::GssCredProblem
            )))
        );
        // Arguments changed after their checksum.
        let seq4 = ctx.next_seq();
        let mut flat = seal(seq4).concat();
        let last = flat.len() - 1;
        flat[last] ^= 0x40;
        let r = conn
            .call_raw(
                100003,
                4,
                0,
                &null(seq4),
                |h| ctx.verifier(h),
                vec![Bytes::from(flat)],
            )
            .await;
        assert_eq!(r.err(), Some(CallError::Rejected(ReplyError::GarbageArgs)));
        // Destroyed: refused after.
        ctx.destroy(&conn, 100003, 4).await.expect("destroy");
        let seq5 = ctx.next_seq();
        let r = conn
            .call_raw(100003, 4, 0, &null(seq5), |h| ctx.verifier(h), seal(seq5))
            .await;
        assert_eq!(
            r.err(),
            Some(CallError::Rejected(ReplyError::Auth(
                AuthStat::GssCredProblem
            )))
        );
    })
    .await
}

/// NFSv4.1 callbacks for clients whose fore channel is Kerberos: a krb5p
/// client's read delegation is recalled (CB_RECALL on its back channel)
/// when a krb5i client opens the file for writing, returned, and the
/// writer goes on (RFC 8881 §2.10.8.3: the back channel has its own
/// security, from CREATE_SESSION).
#[tokio::test]
#[ignore = "needs a Kerberos realm: run by tests/kerberos.sh"]
async fn callbacks_reach_clients_that_use_kerberos() {
    within(async {
        let s = start_as(&[("/", &[Flavor::Krb5p, Flavor::Krb5i])], true).await;
        let a = gss_client(&s, "alice", GssService::Privacy).await;
        let mut bo = gss_options("bob", GssService::Integrity);
        bo.delay_retry = Duration::from_secs(60);
        let b = Client::connect(s.running.addr, bo)
            .await
            .expect("bob connects");
        let root = a.root_fh().await.expect("root");
        delegation_recalled_by_a_writer(&a, &root, &b, &root, "shared").await;
    })
    .await
}
