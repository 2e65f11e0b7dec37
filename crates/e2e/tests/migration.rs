//! Migration of an export with its clients' state between two Ferrites
//! over one directory (transparent state migration, RFC 8881 §11.14):
//! `ferrite migrate` through the source's administration socket, the
//! source's NFS4ERR_MOVED and fs_locations, the destination's confirmed
//! client record and the source's stateids honoured there; refusals that
//! leave the source serving; the peer program's answers to calls that
//! are not authentic.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use client::{Client, ClientOptions, OpenOpts};
use common::*;
use proto::migrate::*;
use proto::nfs4::*;
use server::config::{AdminConfig, ExportConfig, ServerConfig};
use server::exports::referral::Location;
use server::instance::Nfs4Config;
use server::run::Running;
use tempfile::TempDir;
use xdr::Unpack;

struct Pair {
    a: Running,
    b: Running,
    a_state: TempDir,
    b_state: TempDir,
    _data: TempDir,
}

fn config(
    data: &Path,
    state: &Path,
    served_by: Option<Location>,
    delegations: bool,
) -> ServerConfig {
    let mut e = ExportConfig::open("/data", data);
    e.served_by = served_by;
    e.delegations = delegations;
    ServerConfig {
        nfs4: Nfs4Config {
            lease: Duration::from_secs(10),
            grace: Some(Duration::ZERO),
            max_delegations: if delegations { 100 } else { 0 },
            ..Default::default()
        },
        admin: AdminConfig {
            socket: Some(state.join(server::observe::admin::SOCKET)),
            metrics: None,
            link_bytes_per_s: None,
        },
        ..ServerConfig::new(
            "127.0.0.1:0".parse().expect("address"),
            state.to_path_buf(),
            vec![e],
        )
    }
}

/// Server A serving "/data", and B over the same directory with the same
/// filehandle key, configured as served by A (or serving it itself, if
/// `b_serves`).
async fn pair(b_serves: bool, delegations: bool) -> Pair {
    let data = TempDir::new().expect("temp dir");
    let a_state = TempDir::new().expect("temp dir");
    let b_state = TempDir::new().expect("temp dir");
    let a = server::run::start(config(data.path(), a_state.path(), None, delegations))
        .await
        .expect("A starts");
    std::fs::copy(a_state.path().join("fh.key"), b_state.path().join("fh.key")).expect("key");
    let by = (!b_serves).then(|| Location::parse(&format!("{}:/data", a.addr)).expect("location"));
    let b = server::run::start(config(data.path(), b_state.path(), by, delegations))
        .await
        .expect("B starts");
    Pair {
        a,
        b,
        a_state,
        b_state,
        _data: data,
    }
}

fn socket(state: &TempDir) -> PathBuf {
    state.path().join(server::observe::admin::SOCKET)
}

/// `ferrite migrate /data --to TO` at the server whose state directory
/// is `from`: its JSON answer.
async fn migrate(from: &TempDir, to: std::net::SocketAddr) -> serde_json::Value {
    let cmd = format!("migrate /data {to}");
    let raw = server::observe::admin::request(&socket(from), &cmd)
        .await
        .expect("admin socket");
    serde_json::from_str(&raw).expect("JSON")
}

/// A client owner that connects to A, then to B, as the same instance.
fn owner(name: &str) -> ClientOptions {
    let mut o = options();
    o.owner = Bytes::from(format!("migration-{name}-{}", std::process::id()));
    o.verifier = Some([7; 8]);
    o
}

async fn data_dir(c: &Client) -> NfsFh4 {
    let r = c
        .compound(vec![NfsArgOp4::PutRootFh, lookup("data"), NfsArgOp4::GetFh])
        .await
        .expect("lookup /data");
    fh_of(&r[2])
}

fn lock_owner(c: &Client, n: &str) -> StateOwner4 {
    StateOwner4 {
        clientid: c.clientid(),
        owner: Bytes::from(n.to_string()),
    }
}

async fn write(
    c: &Client,
    f: &client::Open,
    offset: u64,
    data: &'static [u8],
) -> client::Result<client::WriteResult> {
    c.write(
        &f.fh,
        f.stateid,
        offset,
        Bytes::from_static(data),
        StableHow4::FileSync4,
    )
    .await
}

/// A write lock of `len` bytes at `offset` for a new lock owner `owner`
/// of `c`, through the open `open`.
async fn lock_new(
    c: &Client,
    fh: &NfsFh4,
    open: StateId4,
    owner: &str,
    offset: u64,
    len: u64,
) -> client::Result<StateId4> {
    c.lock(
        fh,
        NfsLockType4::WriteLt,
        offset,
        len,
        c.new_locker(open, lock_owner(c, owner)),
    )
    .await
}

#[tokio::test]
async fn a_busy_export_moves_with_its_opens_and_locks() {
    within(async {
        let p = pair(false, false).await;
        // Before the move B sends clients to A.
        let early = Client::connect(p.b.addr, options()).await.expect("B");
        let r = early
            .compound(vec![NfsArgOp4::PutRootFh, lookup("data"), NfsArgOp4::GetFh])
            .await;
        assert_eq!(failed_at(r), (2, NfsStat4::Nfs4errMoved));
        // Client 1 holds an open and a write lock; client 2 is refused
        // the lock.
        let c1 = Client::connect(p.a.addr, owner("one")).await.expect("A");
        let dir = data_dir(&c1).await;
        let f = create_file(&c1, &dir, "f").await;
        write(&c1, &f, 0, b"before ").await.expect("write at A");
        let lock = lock_new(&c1, &f.fh, f.stateid, "l1", 0, 100)
            .await
            .expect("lock at A");
        let c2 = Client::connect(p.a.addr, owner("two")).await.expect("A");
        let f2 = c2.open_fh(&f.fh, OpenOpts::both()).await.expect("open");
        let denied = lock_new(&c2, &f.fh, f2.stateid, "l2", 50, 10).await;
        assert_eq!(status(denied), NfsStat4::Nfs4errDenied);

        let report = migrate(&p.a_state, p.b.addr).await;
        assert!(report.get("error").is_none(), "{report}");
        assert_eq!(report["clients"], 2, "{report}");
        assert_eq!(report["stateids"], 3, "two opens and a lock: {report}");
        assert!(
            report["frozen_ms"].as_u64().expect("frozen_ms")
                <= report["took_ms"].as_u64().expect("took_ms")
        );

        // A tells client 2 its lease moved, until it hears NFS4ERR_MOVED.
        c2.compound(vec![]).await.expect("SEQUENCE");
        assert_ne!(c2.status_flags() & SEQ4_STATUS_LEASE_MOVED, 0);
        // At A: NFS4ERR_MOVED, and where the export went.
        let r = write(&c1, &f, 7, b"x").await;
        assert_eq!(status(r), NfsStat4::Nfs4errMoved);
        let r = c2
            .compound(vec![
                putfh(&f.fh),
                getattr(&[FATTR4_FSID, FATTR4_FS_LOCATIONS]),
            ])
            .await
            .expect("fs_locations at A");
        let loc = attrs_of(&r[1]).fs_locations.expect("fs_locations");
        assert_eq!(loc.fs_root, vec![b("data")]);
        let port = p.b.addr.port();
        assert_eq!(
            loc.locations[0].server,
            vec![Bytes::from(format!(
                "127.0.0.1.{}.{}",
                port >> 8,
                port & 0xff
            ))]
        );
        assert_eq!(loc.locations[0].rootpath, vec![b("data")]);
        c2.compound(vec![]).await.expect("SEQUENCE");
        assert_eq!(c2.status_flags() & SEQ4_STATUS_LEASE_MOVED, 0);
        // A client that mounts A now is sent along too.
        let late = Client::connect(p.a.addr, options()).await.expect("A");
        let r = late
            .compound(vec![NfsArgOp4::PutRootFh, lookup("data"), NfsArgOp4::GetFh])
            .await;
        assert_eq!(failed_at(r), (2, NfsStat4::Nfs4errMoved));

        // At B the same client instances find their records confirmed
        // (RFC 8881 §11.14.2) and their stateids valid: no reclaim.
        let mut o1 = owner("one");
        o1.reclaim_complete = false;
        let d1 = Client::connect(p.b.addr, o1).await.expect("B");
        assert_ne!(d1.exchange_flags() & EXCHGID4_FLAG_CONFIRMED_R, 0);
        let mut o2 = owner("two");
        o2.reclaim_complete = false;
        let d2 = Client::connect(p.b.addr, o2).await.expect("B");
        write(&d1, &f, 7, b"after")
            .await
            .expect("write at B with A's open stateid");
        // The lock moved: client 2 is still refused it.
        let denied = lock_new(&d2, &f.fh, f2.stateid, "l2", 50, 10).await;
        assert_eq!(status(denied), NfsStat4::Nfs4errDenied);
        let unlocked = d1
            .locku(&f.fh, NfsLockType4::WriteLt, lock, 0, 100)
            .await
            .expect("unlock at B with A's lock stateid");
        assert_eq!(
            (unlocked.other, unlocked.seqid),
            (lock.other, lock.seqid + 1)
        );
        lock_new(&d2, &f.fh, f2.stateid, "l2", 50, 10)
            .await
            .expect("the lock is free now");
        let r = d1
            .compound(vec![
                putfh(&f.fh),
                NfsArgOp4::Read(Read4Args {
                    stateid: f.stateid,
                    offset: 0,
                    count: 100,
                }),
            ])
            .await
            .expect("read at B");
        match &r[1] {
            NfsResOp4::Read(Res4::Ok(ok)) => assert_eq!(&ok.data[..], b"before after"),
            other => panic!("{other:?}"),
        }
        // And back: A takes the export again, stateids and all.
        let back = migrate(&p.b_state, p.a.addr).await;
        assert!(back.get("error").is_none(), "{back}");
        write(&c1, &f, 0, b"B")
            .await
            .expect("write at A again, with A's own open stateid");
        let denied = lock_new(&c1, &f.fh, f.stateid, "l1", 55, 1).await;
        assert_eq!(
            status(denied),
            NfsStat4::Nfs4errDenied,
            "client 2's lock came back too"
        );
    })
    .await;
}

/// A destination that refuses, an address that is not one, an export
/// that does not exist: the source says why and goes on serving, its
/// clients' state intact.
#[tokio::test]
async fn a_move_that_cannot_happen_leaves_the_export_served_here() {
    within(async {
        let p = pair(true, false).await;
        let c1 = Client::connect(p.a.addr, owner("stay")).await.expect("A");
        let dir = data_dir(&c1).await;
        let f = create_file(&c1, &dir, "f").await;
        let lock = lock_new(&c1, &f.fh, f.stateid, "l", 0, 10)
            .await
            .expect("lock");
        let refused = migrate(&p.a_state, p.b.addr).await;
        let why = refused["error"].as_str().expect("an error");
        assert!(why.contains("served here already"), "{why}");
        let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let nobody = closed.local_addr().expect("address");
        drop(closed);
        let why = migrate(&p.a_state, nobody).await["error"]
            .as_str()
            .expect("an error")
            .to_string();
        assert!(why.contains("cannot reach"), "{why}");
        let raw = server::observe::admin::request(
            &socket(&p.a_state),
            &format!("migrate /nope {}", p.b.addr),
        )
        .await
        .expect("admin");
        assert!(raw.contains("no export /nope"), "{raw}");
        // Served as before: the open and the lock hold.
        write(&c1, &f, 0, b"still").await.expect("write");
        let c2 = Client::connect(p.a.addr, owner("other")).await.expect("A");
        let o2 = c2.open_fh(&f.fh, OpenOpts::both()).await.expect("open");
        let denied = lock_new(&c2, &f.fh, o2.stateid, "x", 5, 1).await;
        assert_eq!(status(denied), NfsStat4::Nfs4errDenied);
        c1.locku(&f.fh, NfsLockType4::WriteLt, lock, 0, 10)
            .await
            .expect("unlock");
    })
    .await;
}

/// Calls of the peer program that are not authentic (an unknown
/// session, a wrong MAC, a replayed counter) or malformed are refused,
/// and the server goes on serving.
#[tokio::test]
async fn peer_calls_that_are_not_authentic_are_refused() {
    within(async {
        let p = pair(false, false).await;
        let conn = rpc::connect(p.b.addr, None, rpc::ConnConfig::default())
            .await
            .expect("connect");
        let none = rpc::OpaqueAuth::none();
        let call = |proc_: u32, body: Bytes| {
            let conn = conn.clone();
            let none = none.clone();
            async move {
                conn.call(
                    FERRITE_PEER_PROGRAM,
                    FERRITE_PEER_V1,
                    proc_,
                    &none,
                    vec![body],
                )
                .await
            }
        };
        // Garbage: refused as such.
        match call(PEER_PREPARE, Bytes::from_static(b"\x00\x01")).await {
            Err(rpc::CallError::Rejected(rpc::ReplyError::GarbageArgs)) => {}
            other => panic!("{other:?}"),
        }
        // A session that does not exist, and a MAC made without the key.
        let prepare = PrepareArgs {
            migration: [1; 16],
            export_path: b("/data"),
            export_id: 0,
            root_identity: Bytes::new(),
            lease_secs: 10,
            source: b("nobody"),
        };
        let hello = call(PEER_HELLO, xdr::to_bytes(&HelloArgs { nonce: [3; 16] }))
            .await
            .expect("HELLO");
        let session = HelloRes::unpack(&mut { hello })
            .expect("HELLO's answer")
            .session;
        for (session, mac) in [([9u8; 16], [0u8; 32]), (session, [0u8; 32])] {
            let sealed = Sealed {
                session,
                counter: 1,
                body: xdr::to_bytes(&prepare),
                mac,
            };
            let mut d = call(PEER_PREPARE, xdr::to_bytes(&sealed))
                .await
                .expect("answer");
            let r = SealedRes::unpack(&mut d).expect("sealed answer");
            assert_eq!(r.status, PeerStatus::Auth);
        }
        // Nothing changed: B still sends clients to A, and A serves.
        let c = Client::connect(p.b.addr, options()).await.expect("B");
        let r = c
            .compound(vec![NfsArgOp4::PutRootFh, lookup("data"), NfsArgOp4::GetFh])
            .await;
        assert_eq!(failed_at(r), (2, NfsStat4::Nfs4errMoved));
        let a = Client::connect(p.a.addr, options()).await.expect("A");
        data_dir(&a).await;
    })
    .await;
}

/// A delegation its holder does not return holds the move up (its
/// recall goes out, no new delegation is granted meanwhile, though opens
/// and locks go on, and a second move of it is refused) until it is
/// revoked a lease later; then the move goes through, frozen only for
/// the transfer itself.
#[tokio::test]
async fn an_unreturned_delegation_holds_the_move_until_it_is_revoked() {
    within(async {
        let p = pair(false, true).await;
        let mut keeper = owner("keeper");
        keeper.return_delegations = false;
        let k = Client::connect(p.a.addr, keeper).await.expect("A");
        let dir = data_dir(&k).await;
        let mut o = OpenOpts::create(0o644);
        o.access |= OPEN4_SHARE_ACCESS_WANT_NO_DELEG;
        let f = k.open(&dir, "d", o).await.expect("create");
        k.close(&f.fh, f.stateid).await.expect("close");
        let held = k
            .open(
                &dir,
                "d",
                OpenOpts {
                    access: OPEN4_SHARE_ACCESS_READ | OPEN4_SHARE_ACCESS_WANT_READ_DELEG,
                    ..Default::default()
                },
            )
            .await
            .expect("open wanting a delegation");
        assert!(
            matches!(held.delegation, OpenDelegation4::Read(_)),
            "{:?}",
            held.delegation
        );
        let sock = socket(&p.a_state);
        let to = p.b.addr;
        let first = tokio::spawn(async move {
            server::observe::admin::request(&sock, &format!("migrate /data {to}")).await
        });
        // The recall reached the holder; meanwhile another move is
        // refused, and a new open is served without a delegation.
        recalls(&k, 1).await;
        let second = migrate(&p.a_state, p.b.addr).await;
        let why = second["error"].as_str().expect("an error");
        assert!(why.contains("already under way"), "{why}");
        let mut quick = owner("quick");
        quick.delay_retry = Duration::ZERO;
        let q = Client::connect(p.a.addr, quick).await.expect("A");
        let mut wants = OpenOpts::create(0o644);
        wants.access |= OPEN4_SHARE_ACCESS_WANT_READ_DELEG;
        let other = q
            .open(&dir, "other", wants)
            .await
            .expect("an open while recalling");
        assert!(
            !matches!(
                other.delegation,
                OpenDelegation4::Read(_) | OpenDelegation4::Write(_)
            ),
            "a delegation granted on an export about to move: {:?}",
            other.delegation
        );
        q.close(&other.fh, other.stateid).await.expect("close");
        // The holder keeps renewing; a lease after the recall the
        // delegation is revoked, and the move completes.
        let report = loop {
            k.compound(Vec::new()).await.expect("renew");
            if first.is_finished() {
                break first.await.expect("task").expect("admin");
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        };
        let report: serde_json::Value = serde_json::from_str(&report).expect("JSON");
        assert!(report.get("error").is_none(), "{report}");
        let (took, frozen) = (
            report["took_ms"].as_u64().expect("took_ms"),
            report["frozen_ms"].as_u64().expect("frozen_ms"),
        );
        assert!(
            took >= 5_000,
            "the move waited for the revocation: {report}"
        );
        assert!(frozen < took, "frozen only after the recall: {report}");
        // It held nothing there by then, so nothing moved: at B it is a
        // new client like any other.
        let qb = Client::connect(p.b.addr, owner("quick")).await.expect("B");
        qb.open(&dir, "other", OpenOpts::create(0o644))
            .await
            .expect("open at B");
    })
    .await;
}

/// A source that restarts in the middle of its commit does not know
/// whether the destination committed: it holds the export off, asks the
/// destination, then sends clients there (committed) or serves the
/// export again (not committed). Never both servers.
#[tokio::test]
async fn a_source_restarted_during_its_commit_asks_the_destination() {
    within(async {
        for committed in [true, false] {
            let Pair {
                a: old,
                b,
                a_state,
                b_state: _b_state,
                _data,
            } = pair(false, false).await;
            let (data, a_state) = (_data.path().to_path_buf(), a_state.path().to_path_buf());
            old.stop().await;
            // The record a source leaves just before COMMIT.
            let id = "0123456789abcdef0123456789abcdef";
            let leaving = server::exports::away::Leaving {
                to: b.addr.to_string(),
                location: Location::parse(&format!("{}:/data", b.addr)).expect("location"),
                migration: id.into(),
            };
            let exports = vec![(0u16, "/data".to_string(), None)];
            server::exports::away::AwayExports::load(Some(&a_state), &exports)
                .expect("load")
                .record_leaving("/data", &leaving)
                .expect("record");
            if committed {
                b.nfs4
                    .away
                    .record_arrived("/data", id)
                    .expect("arrived at B");
            }
            let a = server::run::start(config(&data, &a_state, None, false))
                .await
                .expect("A restarts");
            let c = Client::connect(a.addr, options()).await.expect("A");
            let want = if committed {
                NfsStat4::Nfs4errMoved
            } else {
                NfsStat4::Nfs4Ok
            };
            // Held off (NFS4ERR_DELAY) until B has answered.
            let until = std::time::Instant::now() + Duration::from_secs(60);
            let got = loop {
                let r = c
                    .compound(vec![NfsArgOp4::PutRootFh, lookup("data"), NfsArgOp4::GetFh])
                    .await;
                let s = match r {
                    Ok(_) => NfsStat4::Nfs4Ok,
                    Err(e) => e.status().expect("an NFS status"),
                };
                if s != NfsStat4::Nfs4errDelay || std::time::Instant::now() > until {
                    break s;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            };
            assert_eq!(got, want, "committed at B: {committed}");
            a.stop().await;
        }
    })
    .await;
}
