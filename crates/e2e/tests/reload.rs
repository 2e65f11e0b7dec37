//! Reloading the configuration while serving (issue 14, point 4): rules,
//! exports added, removed and re-rooted, applied under a client that
//! stays connected, with its session and open files; refused changes
//! leave everything as it was.

mod common;

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use client::v3::{mount, Client as Client3};
use client::{Client, OpenOpts};
use common::*;
use proto::nfs3::{NfsStat3, StableHow};
use proto::nfs4::*;
use server::config::{ExportConfig, ServerConfig};
use server::exports::export::{ClientMatch, ClientRule, ExportRules, Flavor, Squash};
use server::instance::Nfs4Config;
use server::run::Running;
use tempfile::TempDir;

fn export(id: u16, path: &str, dir: &Path, read_only: bool) -> ExportConfig {
    ExportConfig {
        id: Some(id),
        path: path.into(),
        dir: dir.to_path_buf(),
        rules: ExportRules {
            clients: vec![ClientRule {
                read_only,
                squash: Squash::None,
                secure: false,
                ..ClientRule::new(ClientMatch::Any)
            }],
            sec: vec![Flavor::Sys, Flavor::None],
            ..ExportRules::open()
        },
        metadata_async: false,
        log: None,
        delegations: false,
        shared_locks: true,
        pnfs: None,
        served_by: None,
        fsid: None,
    }
}

fn config(state: &Path, exports: Vec<ExportConfig>) -> ServerConfig {
    ServerConfig {
        nfs4: Nfs4Config {
            grace: Some(Duration::ZERO),
            ..Default::default()
        },
        ..ServerConfig::new("127.0.0.1:0".parse().unwrap(), state.to_path_buf(), exports)
    }
}

fn tempdir() -> TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    d
}

fn names(entries: &[client::DirEntry]) -> Vec<String> {
    entries
        .iter()
        .map(|e| String::from_utf8_lossy(&e.name).into_owned())
        .collect()
}

async fn reload(running: &Running, exports: Vec<ExportConfig>, state: &Path) -> Vec<String> {
    running
        .reload(config(state, exports))
        .await
        .expect("reload applied")
        .changes
}

/// One client, connected throughout: its open file, its session and its
/// filehandles see each reload take effect at once.
#[tokio::test]
async fn exports_and_rules_change_under_a_connected_client() {
    within(async {
        let (a, bd, b2, c, state) = (tempdir(), tempdir(), tempdir(), tempdir(), tempdir());
        std::fs::write(bd.path().join("f"), b"in b").unwrap();
        let first = vec![
            export(1, "/a", a.path(), false),
            export(2, "/b", bd.path(), false),
        ];
        let running = server::run::start(config(state.path(), first.clone()))
            .await
            .unwrap();
        let cl = Client::connect(running.addr, options()).await.unwrap();
        let root = cl.root_fh().await.unwrap();
        let adir = cl.lookup_path("/a").await.unwrap();
        let o = cl.open(&adir, "f", OpenOpts::create(0o644)).await.unwrap();
        cl.write(&o.fh, o.stateid, 0, b("one"), StableHow4::FileSync4)
            .await
            .unwrap();
        let bf = cl.lookup_path("/b/f").await.unwrap();
        assert_eq!(names(&cl.readdir(&root, &[]).await.unwrap()), ["a", "b"]);
        let root_change = cl.getattr(&root, &[FATTR4_CHANGE]).await.unwrap().change;

        // /a read-only, /b gone, /n/c new (under a new pseudo directory).
        let changes = reload(
            &running,
            vec![
                export(1, "/a", a.path(), true),
                export(3, "/n/c", c.path(), false),
            ],
            state.path(),
        )
        .await;
        assert_eq!(changes.len(), 3, "{changes:?}");
        let rofs = NfsStat4::Nfs4errRofs;
        assert_eq!(
            status(
                cl.write(&o.fh, o.stateid, 3, b("two"), StableHow4::FileSync4)
                    .await
            ),
            rofs
        );
        assert_eq!(
            status(cl.open(&adir, "g", OpenOpts::create(0o644)).await),
            rofs
        );
        let (data, _) = cl.read(&o.fh, o.stateid, 0, 10).await.unwrap();
        assert_eq!(&data[..], b"one");
        assert_eq!(
            status(cl.getattr(&bf, &[FATTR4_SIZE]).await),
            NfsStat4::Nfs4errStale
        );
        assert_eq!(status(cl.lookup(&root, "b").await), NfsStat4::Nfs4errNoent);
        assert_eq!(names(&cl.readdir(&root, &[]).await.unwrap()), ["a", "n"]);
        assert_ne!(
            cl.getattr(&root, &[FATTR4_CHANGE]).await.unwrap().change,
            root_change,
            "the pseudo root's change attribute tells clients to read it again"
        );
        let n = cl.lookup_path("/n").await.unwrap();
        let cdir = cl.lookup(&n, "c").await.unwrap();
        let made = cl
            .open(&cdir, "new", OpenOpts::create(0o644))
            .await
            .unwrap();
        cl.close(&made.fh, made.stateid).await.unwrap();
        assert!(c.path().join("new").exists());

        // Back: /a writable, /b again (same id, same directory: its old
        // handles are good again); /n/c stays, and so does the pseudo
        // directory /n, under the same handle.
        let changes = reload(
            &running,
            vec![
                export(3, "/n/c", c.path(), false),
                export(2, "/b", bd.path(), false),
                export(1, "/a", a.path(), false),
            ],
            state.path(),
        )
        .await;
        assert_eq!(changes.len(), 2, "{changes:?}");
        cl.write(&o.fh, o.stateid, 3, b("two"), StableHow4::FileSync4)
            .await
            .unwrap();
        assert_eq!(std::fs::read(a.path().join("f")).unwrap(), b"onetwo");
        assert_eq!(cl.getattr(&bf, &[FATTR4_SIZE]).await.unwrap().size, Some(4));
        assert_eq!(names(&cl.readdir(&n, &[]).await.unwrap()), ["c"]);
        assert_eq!(cl.lookup(&n, "c").await.unwrap(), cdir);

        // The same list in another order: nothing to change.
        let same = vec![
            export(1, "/a", a.path(), false),
            export(3, "/n/c", c.path(), false),
            export(2, "/b", bd.path(), false),
        ];
        assert!(reload(&running, same.clone(), state.path())
            .await
            .is_empty());

        // /b re-rooted at another directory: its old handles are stale.
        std::fs::write(b2.path().join("f"), b"other b").unwrap();
        let mut moved = same.clone();
        moved[2].dir = b2.path().to_path_buf();
        let changes = reload(&running, moved.clone(), state.path()).await;
        assert!(changes[0].contains("stale"), "{changes:?}");
        assert_eq!(
            status(cl.getattr(&bf, &[FATTR4_SIZE]).await),
            NfsStat4::Nfs4errStale
        );
        let bf2 = cl.lookup_path("/b/f").await.unwrap();
        assert_eq!(
            cl.getattr(&bf2, &[FATTR4_SIZE]).await.unwrap().size,
            Some(7)
        );

        // Refused: a write log added to a running export, and two exports
        // with one id. Nothing changes: /a stays writable.
        let log = tempdir();
        let mut logged = moved.clone();
        logged[0].log = Some(server::stable::writelog::LogConfig {
            dir: log.path().join("log"),
            capacity_bytes: 64 << 20,
        });
        let why = running
            .reload(config(state.path(), logged))
            .await
            .unwrap_err();
        assert!(
            why.contains("write log") && why.contains("restart"),
            "{why}"
        );
        let mut twice = moved.clone();
        twice[0].rules.clients[0].read_only = true;
        twice[1].id = Some(1);
        let why = running
            .reload(config(state.path(), twice))
            .await
            .unwrap_err();
        assert!(why.contains("same id"), "{why}");
        // Counted, and shown as Prometheus metrics.
        let counted = running.nfs4.stats.reloads();
        assert_eq!((counted.applied, counted.refused), (4, 2));
        assert!(counted.last_error.is_some_and(|e| e.contains("same id")));
        let text = server::observe::stats::prometheus::render(
            &server::observe::stats::report::build(&running.nfs4),
        );
        for line in [
            "ferrite_config_reloads_total{result=\"applied\"} 4",
            "ferrite_config_reloads_total{result=\"refused\"} 2",
            "ferrite_config_last_reload_successful 0",
        ] {
            assert!(text.contains(line), "{line} not in:\n{text}");
        }
        cl.write(&o.fh, o.stateid, 6, b("three"), StableHow4::FileSync4)
            .await
            .unwrap();
        cl.close(&o.fh, o.stateid).await.unwrap();
        running.stop().await;
    })
    .await
}

/// NFSv3 and MOUNT follow a reload too: the export list, a rule made
/// read-only under a mounted client, and an export removed.
#[tokio::test]
async fn nfsv3_and_mount_follow_a_reload() {
    within(async {
        let (a, c, state) = (tempdir(), tempdir(), tempdir());
        let running =
            server::run::start(config(state.path(), vec![export(1, "/a", a.path(), false)]))
                .await
                .unwrap();
        let at: SocketAddr = running.addr;
        let v3 = Client3::connect(at, at, "/a", root_auth()).await.unwrap();
        let root = v3.root().clone();
        let made = v3
            .create(
                &root,
                "f",
                proto::nfs3::CreateHow3::Unchecked(Default::default()),
            )
            .await
            .unwrap();
        let f = made.fh;
        v3.write(&f, 0, b("abc"), StableHow::FileSync)
            .await
            .unwrap();

        let changes = reload(
            &running,
            vec![
                export(1, "/a", a.path(), true),
                export(5, "/c", c.path(), false),
            ],
            state.path(),
        )
        .await;
        assert_eq!(changes.len(), 2, "{changes:?}");
        let listed: Vec<String> = mount::exports(at, &root_auth())
            .await
            .unwrap()
            .iter()
            .map(|e| String::from_utf8_lossy(&e.ex_dir.0).into_owned())
            .collect();
        assert_eq!(listed, ["/a", "/c"]);
        match v3.write(&f, 3, b("def"), StableHow::FileSync).await {
            Err(e) => assert_eq!(e.status(), Some(NfsStat3::Rofs)),
            Ok(r) => panic!("a write to a read-only export: {r:?}"),
        }
        assert_eq!(&v3.read(&f, 0, 10).await.unwrap().data[..], b"abc");
        let v3c = Client3::connect(at, at, "/c", root_auth()).await.unwrap();
        v3c.getattr(v3c.root()).await.unwrap();

        reload(
            &running,
            vec![export(5, "/c", c.path(), false)],
            state.path(),
        )
        .await;
        match v3.getattr(&f).await {
            Err(e) => assert_eq!(e.status(), Some(NfsStat3::Stale)),
            Ok(a) => panic!("a handle of a removed export: {a:?}"),
        }
        assert!(Client3::connect(at, at, "/a", root_auth()).await.is_err());
        running.stop().await;
    })
    .await
}
