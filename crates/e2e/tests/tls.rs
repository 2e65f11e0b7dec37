//! RPC-over-TLS (RFC 9289) end to end: a server with `[tls]` settings
//! read from PEM files, exports that demand TLS, mutual TLS or a plain
//! connection (`xprtsec`), and the project's client over TLS, over
//! mutual TLS and in the clear: NFSv4.1 reads, writes, locks and a
//! delegation recalled over the TLS back channel; NFSv3 over TLS; the
//! refusals (NFS4ERR_WRONGSEC, NFS3ERR_ACCES) where the transport is not
//! one the export takes.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use client::v3::{mount, Client as Client3};
use client::{Client, ClientOptions, OpenOpts};
use common::*;
use proto::nfs3::NfsStat3;
use proto::nfs4::*;
use rpc::tls::{TlsClient, Xprt};
use server::config::{ExportConfig, ServerConfig};
use server::exports::export::ExportRules;
use server::security::tls::TlsConfig;

/// An authority and, signed by it, the server's certificate (for
/// "localhost") and a client's, written as PEM files.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().expect("pki dir");
        let ca_key = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = params.self_signed(&ca_key).expect("ca");
        std::fs::write(dir.path().join("ca.pem"), ca.pem()).expect("write");
        for (who, name) in [("server", "localhost"), ("client", "client.ferrite.test")] {
            let key = rcgen::KeyPair::generate().expect("key");
            let cert = rcgen::CertificateParams::new(vec![name.to_string()])
                .expect("params")
                .signed_by(&key, &ca, &ca_key)
                .expect("sign");
            std::fs::write(dir.path().join(format!("{who}.pem")), cert.pem()).expect("write");
            std::fs::write(dir.path().join(format!("{who}.key")), key.serialize_pem())
                .expect("write");
        }
        Pki { dir }
    }

    fn path(&self, f: &str) -> PathBuf {
        self.dir.path().join(f)
    }

    fn client(&self, with_cert: bool) -> TlsClient {
        let (c, k) = (self.path("client.pem"), self.path("client.key"));
        let id: Option<(&Path, &Path)> = with_cert.then_some((c.as_path(), k.as_path()));
        TlsClient::from_pem(&self.path("ca.pem"), "localhost", id).expect("client TLS settings")
    }
}

struct TlsServer {
    running: server::run::Running,
    _dirs: Vec<tempfile::TempDir>,
    _state: tempfile::TempDir,
}

/// Exports: /tls (tls or mtls), /mtls (mtls only), /plain (no TLS) and
/// /any (the default: all three), delegations on.
async fn start(pki: &Pki) -> TlsServer {
    let mut dirs = Vec::new();
    let mut exports = Vec::new();
    for (path, modes) in [
        ("/tls", vec![Xprt::Tls, Xprt::Mtls]),
        ("/mtls", vec![Xprt::Mtls]),
        ("/plain", vec![Xprt::None]),
        ("/any", ExportRules::ANY_XPRT.to_vec()),
    ] {
        let d = tempfile::tempdir().expect("export dir");
        let mut e = ExportConfig::open(path, d.path());
        e.rules.xprtsec = modes;
        e.delegations = true;
        exports.push(e);
        dirs.push(d);
    }
    let state = tempfile::tempdir().expect("state dir");
    let mut tls = TlsConfig::new(pki.path("server.pem"), pki.path("server.key"));
    tls.client_ca = Some(pki.path("ca.pem"));
    let cfg = ServerConfig {
        nfs4: server::instance::Nfs4Config {
            lease: Duration::from_secs(10),
            grace: Some(Duration::ZERO),
            ..Default::default()
        },
        tls: Some(tls),
        ..ServerConfig::new(
            "127.0.0.1:0".parse().expect("address"),
            state.path().to_path_buf(),
            exports,
        )
    };
    let running = server::run::start(cfg).await.expect("server starts");
    TlsServer {
        running,
        _dirs: dirs,
        _state: state,
    }
}

fn tls_options(t: TlsClient) -> ClientOptions {
    let mut o = options();
    o.tls = Some(t);
    o
}

/// Creates `name` under `dir`, writes 1 MiB, reads it back, locks it.
async fn write_read_lock(c: &Client, dir: &NfsFh4, name: &str) {
    let o = c
        .open(dir, name, OpenOpts::create(0o644))
        .await
        .expect("create");
    write_read_back_and_lock(c, &o, 1 << 20, 256 << 10).await;
    c.close(&o.fh, o.stateid).await.expect("close");
}

/// Each export takes the transports it lists: TLS, mutual TLS and plain
/// clients reach what they may and get NFS4ERR_WRONGSEC elsewhere.
#[tokio::test]
async fn exports_take_the_transports_they_list() {
    within(async {
        let pki = Pki::new();
        let s = start(&pki).await;
        let tls = Client::connect(s.running.addr, tls_options(pki.client(false)))
            .await
            .expect("TLS client connects");
        assert_eq!(tls.connection().xprt(), Xprt::Tls);
        let root = tls.root_fh().await.expect("root");
        let dir = tls.lookup(&root, "tls").await.expect("TLS into /tls");
        write_read_lock(&tls, &dir, "over-tls").await;
        let any = tls.lookup(&root, "any").await.expect("TLS into /any");
        write_read_lock(&tls, &any, "any-over-tls").await;
        for refused in ["mtls", "plain"] {
            assert_eq!(
                status(tls.lookup(&root, refused).await),
                NfsStat4::Nfs4errWrongsec,
                "TLS into /{refused}"
            );
        }

        let mtls = Client::connect(s.running.addr, tls_options(pki.client(true)))
            .await
            .expect("mutual TLS client connects");
        let root = mtls.root_fh().await.expect("root");
        let dir = mtls.lookup(&root, "mtls").await.expect("mTLS into /mtls");
        write_read_lock(&mtls, &dir, "over-mtls").await;
        mtls.lookup(&root, "tls").await.expect("mTLS into /tls");
        assert_eq!(
            status(mtls.lookup(&root, "plain").await),
            NfsStat4::Nfs4errWrongsec
        );

        let plain = Client::connect(s.running.addr, options())
            .await
            .expect("plain client connects");
        let root = plain.root_fh().await.expect("root");
        for refused in ["tls", "mtls"] {
            assert_eq!(
                status(plain.lookup(&root, refused).await),
                NfsStat4::Nfs4errWrongsec,
                "plain into /{refused}"
            );
        }
        let dir = plain
            .lookup(&root, "plain")
            .await
            .expect("plain into /plain");
        write_read_lock(&plain, &dir, "in-the-clear").await;
        // `ferrite stat` counts the handshakes; one that fails counts too.
        let mut raw = tokio::net::TcpStream::connect(s.running.addr)
            .await
            .expect("connect");
        tokio::io::AsyncWriteExt::write_all(&mut raw, &rpc::tls::probe_call(9, NFS_PROGRAM, 4))
            .await
            .expect("probe");
        rpc::tls::read_probe_reply(&mut raw, 9)
            .await
            .expect("STARTTLS");
        tokio::io::AsyncWriteExt::write_all(&mut raw, b"not a ClientHello at all")
            .await
            .expect("garbage");
        let counts = || server::observe::stats::report::build(&s.running.nfs4).security;
        let failed = eventually(|| counts().tls.filter(|t| t.failed >= 1)).await;
        let t = failed.expect("the failed handshake counted");
        assert!(
            t.probes >= 3 && t.established >= 2 && t.mutual >= 1,
            "{t:?}"
        );
        assert!(counts().gss.is_none(), "no Kerberos configured");
        // A handle got over TLS does not open the export to a plain caller.
        let fh = tls
            .lookup(&tls.root_fh().await.expect("root"), "tls")
            .await
            .expect("fh");
        assert_eq!(
            status(plain.getattr(&fh, &[FATTR4_SIZE]).await),
            NfsStat4::Nfs4errWrongsec
        );
    })
    .await
}

/// A read delegation held by a TLS client is recalled over its back
/// channel, inside TLS, when a plain client opens the file to write.
#[tokio::test]
async fn a_delegation_is_recalled_over_the_tls_back_channel() {
    within(async {
        let pki = Pki::new();
        let s = start(&pki).await;
        let a = Client::connect(s.running.addr, tls_options(pki.client(false)))
            .await
            .expect("TLS client");
        let mut bo = options();
        bo.delay_retry = Duration::from_secs(60);
        let b = Client::connect(s.running.addr, bo)
            .await
            .expect("plain client");
        let root = a.root_fh().await.expect("root");
        let dir = a.lookup(&root, "any").await.expect("any");
        let broot = b.root_fh().await.expect("root");
        let bdir = b.lookup(&broot, "any").await.expect("any");
        delegation_recalled_by_a_writer(&a, &dir, &b, &bdir, "shared").await;
    })
    .await
}

/// NFSv3 over TLS: MOUNT (which xprtsec does not govern, as with the
/// Linux server) in the clear, then NFS calls inside TLS; the same calls
/// in the clear are NFS3ERR_ACCES.
#[tokio::test]
async fn nfsv3_runs_inside_tls_and_is_refused_in_the_clear() {
    within(async {
        let pki = Pki::new();
        let s = start(&pki).await;
        let addr = s.running.addr;
        let auth = root_auth();
        let m = mount::mnt(addr, "/tls", &auth).await.expect("MOUNT /tls");
        let fh = proto::nfs3::NfsFh3 {
            data: m.fhandle.0.clone(),
        };
        let conn = rpc::tls::connect(
            addr,
            proto::nfs4::NFS_PROGRAM,
            proto::nfs3::NFS_V3,
            &pki.client(false),
            None,
            rpc::ConnConfig::default(),
        )
        .await
        .expect("TLS connection");
        let c = Client3::from_handle(conn, fh.clone(), auth.clone());
        let a = c.getattr(&fh).await.expect("GETATTR inside TLS");
        assert_eq!(a.type_, proto::nfs3::Ftype3::Dir);
        let plain = rpc::connect(addr, None, rpc::ConnConfig::default())
            .await
            .expect("plain connection");
        let p = Client3::from_handle(plain, fh.clone(), auth);
        match p.getattr(&fh).await {
            Err(client::v3::Error::Status {
                status: NfsStat3::Acces,
                ..
            }) => {}
            other => panic!("GETATTR in the clear on /tls: {other:?}"),
        }
    })
    .await
}

/// A server whose certificate or key cannot be read does not start, and
/// says which file.
#[tokio::test]
async fn a_missing_certificate_stops_the_start() {
    let pki = Pki::new();
    let state = tempfile::tempdir().expect("state");
    let d = tempfile::tempdir().expect("export");
    let cfg = ServerConfig {
        tls: Some(TlsConfig::new(
            pki.path("nonexistent.pem"),
            pki.path("server.key"),
        )),
        ..ServerConfig::new(
            "127.0.0.1:0".parse().expect("address"),
            state.path().to_path_buf(),
            vec![ExportConfig::open("/", d.path())],
        )
    };
    let Err(e) = server::run::start(cfg).await else {
        panic!("started without its certificate")
    };
    assert!(e.to_string().contains("nonexistent.pem"), "{e}");
}
