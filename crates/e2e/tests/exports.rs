//! Several exports under a pseudo filesystem (RFC 8881 §7.3, §7.4) and
//! the per-export client rules: read-only access, root and all squashing,
//! client matching, privileged ports and security flavors.

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::time::Duration;

use bytes::Bytes;
use client::{Client, OpenOpts};
use common::*;
use proto::nfs4::*;
use server::config::{ExportConfig, ServerConfig};
use server::exports::export::{ClientMatch, ClientRule, ExportRules, Flavor, Squash};
use server::exports::filehandle::FhTarget;
use server::instance::Nfs4Config;
use server::run::Running;
use tempfile::TempDir;

/// The exports of these tests, by path.
const DATA: &str = "/data";
const SHARED: &str = "/home/shared";
const HIDDEN: &str = "/hidden";
const SECURE: &str = "/secure";
const SYSONLY: &str = "/sysonly";
const INNER: &str = "/data/inner";

/// A rule for everyone from any port.
fn rule(read_only: bool, squash: Squash) -> ClientRule {
    ClientRule {
        read_only,
        squash,
        secure: false,
        ..ClientRule::new(ClientMatch::Any)
    }
}

fn rules(clients: Vec<ClientRule>, sec: Vec<Flavor>) -> ExportRules {
    ExportRules {
        clients,
        sec,
        ..ExportRules::open()
    }
}

struct Exports {
    running: Running,
    addr: SocketAddr,
    dirs: BTreeMap<&'static str, TempDir>,
    _state: TempDir,
}

impl Exports {
    /// "/data" rw with root squashing, "/home/shared" ro with everyone
    /// squashed to 1234:1234, "/hidden" only for 10.0.0.0/8, "/secure"
    /// only from privileged ports, "/sysonly" only with AUTH_SYS, and
    /// "/data/inner" mounted inside "/data".
    async fn start() -> Exports {
        let mut dirs = BTreeMap::new();
        for p in [DATA, SHARED, HIDDEN, SECURE, SYSONLY, INNER] {
            let d = tempfile::tempdir().expect("export dir");
            // Squashed identities must be able to work in them.
            std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777))
                .expect("chmod");
            dirs.insert(p, d);
        }
        std::fs::create_dir(dirs[DATA].path().join("inner")).expect("junction dir");
        let all = vec![Flavor::Sys, Flavor::None];
        let shared_rule = ClientRule {
            anonuid: 1234,
            anongid: 1234,
            ..rule(true, Squash::All)
        };
        let mut hidden = rule(false, Squash::None);
        hidden.matches = ClientMatch::parse("10.0.0.0/8").expect("cidr");
        let secure = ClientRule {
            secure: true,
            ..rule(false, Squash::None)
        };
        let export = |p: &'static str, r: ExportRules| ExportConfig {
            id: None,
            path: p.into(),
            dir: dirs[p].path().to_path_buf(),
            rules: r,
            metadata_async: false,
            log: None,
            delegations: false,
            shared_locks: true,
            pnfs: None,
            served_by: None,
            fsid: None,
        };
        let exports = vec![
            export(DATA, rules(vec![rule(false, Squash::Root)], all.clone())),
            export(SHARED, rules(vec![shared_rule], all.clone())),
            export(HIDDEN, rules(vec![hidden], all.clone())),
            export(SECURE, rules(vec![secure], all.clone())),
            export(
                SYSONLY,
                rules(vec![rule(false, Squash::None)], vec![Flavor::Sys]),
            ),
            export(INNER, rules(vec![rule(false, Squash::None)], all)),
        ];
        let state = tempfile::tempdir().expect("state dir");
        let cfg = ServerConfig {
            nfs4: Nfs4Config {
                lease: Duration::from_secs(10),
                ..Default::default()
            },
            ..ServerConfig::new(
                "127.0.0.1:0".parse().expect("address"),
                state.path().to_path_buf(),
                exports,
            )
        };
        let running = server::run::start(cfg).await.expect("server starts");
        Exports {
            addr: running.addr,
            running,
            dirs,
            _state: state,
        }
    }

    fn dir(&self, export: &str) -> &std::path::Path {
        self.dirs[export].path()
    }

    async fn client(&self) -> Client {
        Client::connect(self.addr, options())
            .await
            .expect("client connects")
    }

    async fn client_as(&self, auth: rpc::Auth) -> Client {
        Client::connect(self.addr, options().auth(auth))
            .await
            .expect("client connects")
    }

    /// The root filehandle of the export at `path`, minted with the
    /// server's key (as a client that had it before would present it).
    fn root_of(&self, path: &str) -> NfsFh4 {
        let srv = &self.running.nfs4;
        let e = srv
            .exports()
            .iter()
            .find(|e| e.path == path)
            .expect("export")
            .clone();
        NfsFh4(srv.fh.encode(&FhTarget::Object {
            export: e.id,
            handle: e.vfs.root(),
            parent: None,
        }))
    }
}

fn names(entries: &[client::DirEntry]) -> Vec<String> {
    entries
        .iter()
        .map(|e| String::from_utf8_lossy(&e.name).into_owned())
        .collect()
}

const IDENT: &[u32] = &[
    FATTR4_TYPE,
    FATTR4_FSID,
    FATTR4_FILEID,
    FATTR4_MOUNTED_ON_FILEID,
    FATTR4_MODE,
    FATTR4_OWNER,
    FATTR4_OWNER_GROUP,
    FATTR4_CHANGE,
];

#[tokio::test]
async fn pseudo_root_lists_the_exports_a_client_may_use() {
    within(async {
        let srv = Exports::start().await;
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let attrs = [
            FATTR4_TYPE,
            FATTR4_FSID,
            FATTR4_FILEID,
            FATTR4_MOUNTED_ON_FILEID,
            FATTR4_FILEHANDLE,
        ];
        let entries = c.readdir(&root, &attrs).await.unwrap();
        // "hidden" is only for 10.0.0.0/8; "inner" is inside "data".
        assert_eq!(names(&entries), ["data", "home", "secure", "sysonly"]);
        let rootattrs = c.getattr(&root, IDENT).await.unwrap();
        let pseudo_fsid = rootattrs.fsid.unwrap();
        for e in &entries {
            assert_eq!(e.attrs.type_, Some(NfsFtype4::Nf4Dir));
            let fh = e.attrs.filehandle.clone().expect("filehandle");
            let name = String::from_utf8_lossy(&e.name).into_owned();
            // The entry's handle is what LOOKUP gives.
            if name != "secure" {
                assert_eq!(c.lookup(&root, &name).await.unwrap(), fh, "{name}");
            }
            let fsid = e.attrs.fsid.unwrap();
            if name == "home" {
                assert_eq!(fsid, pseudo_fsid);
                assert_eq!(e.attrs.mounted_on_fileid, e.attrs.fileid);
            } else {
                // An export root: its own fsid, mounted on a pseudo fileid.
                assert_ne!(fsid, pseudo_fsid, "{name}");
                assert_ne!(e.attrs.mounted_on_fileid, e.attrs.fileid, "{name}");
            }
        }
        // Pseudo directories: read-only, root's, constant.
        assert_eq!(rootattrs.type_, Some(NfsFtype4::Nf4Dir));
        assert_eq!(rootattrs.mode, Some(0o555));
        assert_eq!(rootattrs.owner.as_deref(), Some(&b"0"[..]));
        assert_eq!(rootattrs.owner_group.as_deref(), Some(&b"0"[..]));
        assert_eq!(c.getattr(&root, IDENT).await.unwrap(), rootattrs);
        // LOOKUPP at the pseudo root: nothing above.
        let r = c.compound(vec![putfh(&root), NfsArgOp4::LookupP]).await;
        assert_eq!(failed_at(r), (1, NfsStat4::Nfs4errNoent));
        // An unknown name.
        assert_eq!(
            status(c.lookup(&root, "nothing").await),
            NfsStat4::Nfs4errNoent
        );
    })
    .await
}

#[tokio::test]
async fn lookup_crosses_into_exports_and_lookupp_comes_back() {
    within(async {
        let srv = Exports::start().await;
        let c = srv.client().await;
        let r = c
            .compound(vec![
                NfsArgOp4::PutRootFh,
                getattr(IDENT),
                lookup("home"),
                getattr(IDENT),
                NfsArgOp4::GetFh,
                lookup("shared"),
                getattr(IDENT),
                NfsArgOp4::LookupP,
                getattr(IDENT),
                NfsArgOp4::LookupP,
                getattr(IDENT),
                lookup("data"),
                getattr(IDENT),
            ])
            .await
            .unwrap();
        let root = attrs_of(&r[1]);
        let home = attrs_of(&r[3]);
        let shared = attrs_of(&r[6]);
        let data = attrs_of(&r[12]);
        assert_eq!(home.fsid, root.fsid);
        assert_ne!(home.fileid, root.fileid);
        assert_ne!(shared.fsid, root.fsid);
        assert_ne!(shared.fsid, data.fsid);
        assert_ne!(data.fsid, root.fsid);
        // The export root is the directory exported.
        let meta = std::fs::metadata(srv.dir(SHARED)).unwrap();
        assert_eq!(shared.fileid, Some(meta.ino()));
        assert_ne!(shared.mounted_on_fileid, shared.fileid);
        // LOOKUPP goes back to "home", then to the root.
        assert_eq!(attrs_of(&r[8]), home);
        assert_eq!(attrs_of(&r[10]), root);
        // PUTFH of a pseudo handle works.
        let homefh = fh_of(&r[4]);
        let again = c.getattr(&homefh, IDENT).await.unwrap();
        assert_eq!(again, home);
        // And SECINFO_NO_NAME(PARENT) of an export root names the pseudo
        // directory's flavors.
        let sharedfh = c.lookup_path("/home/shared").await.unwrap();
        let sec = c
            .secinfo_no_name(&sharedfh, SecInfoStyle4::Parent)
            .await
            .unwrap();
        assert!(sec.contains(&SecInfo4::Flavor(AUTH_SYS)));
    })
    .await
}

#[tokio::test]
async fn an_export_inside_an_export_is_crossed_at_its_directory() {
    within(async {
        let srv = Exports::start().await;
        let c = srv.client().await;
        std::fs::write(srv.dir(INNER).join("marker"), b"inner").unwrap();
        let r = c
            .compound(vec![
                NfsArgOp4::PutRootFh,
                lookup("data"),
                getattr(IDENT),
                lookup("inner"),
                getattr(IDENT),
                lookup("marker"),
                NfsArgOp4::PutRootFh,
                lookup("data"),
                lookup("inner"),
                NfsArgOp4::LookupP,
                getattr(IDENT),
            ])
            .await
            .unwrap();
        let data = attrs_of(&r[2]);
        let inner = attrs_of(&r[4]);
        assert_ne!(inner.fsid, data.fsid);
        let junction = std::fs::metadata(srv.dir(DATA).join("inner")).unwrap();
        assert_eq!(inner.mounted_on_fileid, Some(junction.ino()));
        assert_eq!(attrs_of(&r[10]), data);
        // READDIR of "/data" shows "inner" as the inner export's root.
        let datafh = c.lookup_path(DATA).await.unwrap();
        let entries = c
            .readdir(&datafh, &[FATTR4_FSID, FATTR4_MOUNTED_ON_FILEID])
            .await
            .unwrap();
        let e = entries.iter().find(|e| &e.name[..] == b"inner").unwrap();
        assert_eq!(e.attrs.fsid, inner.fsid);
        assert_eq!(e.attrs.mounted_on_fileid, Some(junction.ino()));
    })
    .await
}

#[tokio::test]
async fn pseudo_directories_are_read_only() {
    within(async {
        let srv = Exports::start().await;
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let rofs = NfsStat4::Nfs4errRofs;
        assert_eq!(status(c.mkdir(&root, "new", 0o755).await), rofs);
        assert_eq!(
            status(
                c.create(&root, "s", CreateType4::Sock, &Attrs::default())
                    .await
            ),
            rofs
        );
        assert_eq!(status(c.remove(&root, "data").await), rofs);
        assert_eq!(status(c.rename(&root, "data", &root, "x").await), rofs);
        let mode = Attrs {
            mode: Some(0o777),
            ..Default::default()
        };
        assert_eq!(
            status(c.setattr(&root, StateId4::ANONYMOUS, &mode).await),
            rofs
        );
        assert_eq!(
            status(c.open(&root, "f", OpenOpts::create(0o644)).await),
            rofs
        );
        // Opening a pseudo node, or an entry of one, without creating.
        assert_eq!(
            status(c.open(&root, "home", OpenOpts::read()).await),
            NfsStat4::Nfs4errIsdir
        );
        assert_eq!(
            status(c.open(&root, "nothing", OpenOpts::read()).await),
            NfsStat4::Nfs4errNoent
        );
        assert_eq!(
            status(c.open_fh(&root, OpenOpts::read()).await),
            NfsStat4::Nfs4errIsdir
        );
        assert_eq!(
            status(c.read(&root, StateId4::ANONYMOUS, 0, 10).await),
            NfsStat4::Nfs4errIsdir
        );
        assert_eq!(
            status(
                c.write(&root, StateId4::ANONYMOUS, 0, b("x"), StableHow4::FileSync4)
                    .await
            ),
            rofs
        );
        assert_eq!(status(c.readlink(&root).await), NfsStat4::Nfs4errInval);
        // LINK of an export's file into a pseudo directory.
        std::fs::write(srv.dir(DATA).join("f"), b"x").unwrap();
        let f = c.lookup_path("/data/f").await.unwrap();
        assert_eq!(status(c.link(&f, &root, "f").await), NfsStat4::Nfs4errXdev);
        // ACCESS: read and search, no modification.
        let all = ACCESS4_READ | ACCESS4_LOOKUP | ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_DELETE;
        let a = c.access(&root, all).await.unwrap();
        assert_eq!(a.supported, all);
        assert_eq!(a.access, ACCESS4_READ | ACCESS4_LOOKUP);
        // VERIFY/NVERIFY work on pseudo attributes.
        let cur = c
            .getattr_raw(&root, Bitmap4::from_attrs(&[FATTR4_MODE]))
            .await
            .unwrap();
        let r = c
            .compound(vec![
                putfh(&root),
                NfsArgOp4::Verify(Verify4Args {
                    obj_attributes: cur.clone(),
                }),
                NfsArgOp4::SaveFh,
                lookup("data"),
                NfsArgOp4::RestoreFh,
                NfsArgOp4::NVerify(NVerify4Args {
                    obj_attributes: cur,
                }),
            ])
            .await;
        assert_eq!(failed_at(r), (5, NfsStat4::Nfs4errSame));
    })
    .await
}

#[tokio::test]
async fn read_only_export_refuses_changes_and_serves_reads() {
    within(async {
        let srv = Exports::start().await;
        let c = srv.client().await;
        let path = srv.dir(SHARED).join("readme");
        std::fs::write(&path, b"shared data").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let dir = c.lookup_path(SHARED).await.unwrap();
        let file = c.lookup(&dir, "readme").await.unwrap();
        let rofs = NfsStat4::Nfs4errRofs;
        assert_eq!(status(c.mkdir(&dir, "d", 0o755).await), rofs);
        assert_eq!(status(c.symlink(&dir, "l", "readme").await), rofs);
        assert_eq!(
            status(c.open(&dir, "new", OpenOpts::create(0o644)).await),
            rofs
        );
        assert_eq!(
            status(c.open(&dir, "readme", OpenOpts::write()).await),
            rofs
        );
        assert_eq!(status(c.remove(&dir, "readme").await), rofs);
        assert_eq!(status(c.rename(&dir, "readme", &dir, "x").await), rofs);
        assert_eq!(status(c.link(&file, &dir, "again").await), rofs);
        let mode = Attrs {
            mode: Some(0o600),
            ..Default::default()
        };
        assert_eq!(
            status(c.setattr(&file, StateId4::ANONYMOUS, &mode).await),
            rofs
        );
        assert_eq!(
            status(
                c.write(&file, StateId4::ANONYMOUS, 0, b("x"), StableHow4::FileSync4)
                    .await
            ),
            rofs
        );
        // Nothing changed; reading works.
        let o = c.open(&dir, "readme", OpenOpts::read()).await.unwrap();
        let (data, eof) = c.read(&o.fh, o.stateid, 0, 100).await.unwrap();
        assert_eq!((&data[..], eof), (&b"shared data"[..], true));
        c.close(&o.fh, o.stateid).await.unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"shared data");
        assert_eq!(names(&c.readdir(&dir, &[]).await.unwrap()), ["readme"]);
        // ACCESS never grants modification on it, whatever the mode.
        let a = c
            .access(&file, ACCESS4_READ | ACCESS4_MODIFY | ACCESS4_EXTEND)
            .await
            .unwrap();
        assert_eq!(a.access, ACCESS4_READ);
    })
    .await
}

#[tokio::test]
async fn root_is_squashed_to_nobody() {
    within(async {
        let srv = Exports::start().await;
        require_root();
        let root = srv.client().await;
        let dir = root.lookup_path(DATA).await.unwrap();
        let o = root
            .open(&dir, "by-root", OpenOpts::create(0o644))
            .await
            .unwrap();
        root.close(&o.fh, o.stateid).await.unwrap();
        let m = std::fs::metadata(srv.dir(DATA).join("by-root")).unwrap();
        assert_eq!((m.uid(), m.gid()), (65534, 65534));
        let user = srv.client_as(rpc::Auth::sys(1000, 1000, vec![], "u")).await;
        let o = user
            .open(&dir, "by-user", OpenOpts::create(0o644))
            .await
            .unwrap();
        user.close(&o.fh, o.stateid).await.unwrap();
        let m = std::fs::metadata(srv.dir(DATA).join("by-user")).unwrap();
        assert_eq!((m.uid(), m.gid()), (1000, 1000));
        // A squashed root cannot read what only root may.
        let secret = srv.dir(DATA).join("secret");
        std::fs::write(&secret, b"s").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            status(root.open(&dir, "secret", OpenOpts::read()).await),
            NfsStat4::Nfs4errAccess
        );
        // Nor give files away.
        let f = root.lookup(&dir, "by-root").await.unwrap();
        let chown = Attrs {
            owner: Some(Bytes::from_static(b"0")),
            ..Default::default()
        };
        assert_eq!(
            status(root.setattr(&f, StateId4::ANONYMOUS, &chown).await),
            NfsStat4::Nfs4errPerm
        );
    })
    .await
}

#[tokio::test]
async fn all_squash_acts_as_the_anonymous_identity() {
    within(async {
        let srv = Exports::start().await;
        require_root();
        let d = srv.dir(SHARED);
        for (name, uid) in [("anon", 1234), ("roots", 0)] {
            let p = d.join(name);
            std::fs::write(&p, name).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
            std::os::unix::fs::chown(&p, Some(uid), Some(uid)).unwrap();
        }
        // Whoever the client says it is, it is 1234 here.
        for auth in [
            rpc::Auth::sys(0, 0, vec![], "r"),
            rpc::Auth::sys(1000, 1000, vec![0], "u"),
        ] {
            let c = srv.client_as(auth).await;
            let dir = c.lookup_path(SHARED).await.unwrap();
            let o = c.open(&dir, "anon", OpenOpts::read()).await.unwrap();
            let (data, _) = c.read(&o.fh, o.stateid, 0, 10).await.unwrap();
            assert_eq!(&data[..], b"anon");
            c.close(&o.fh, o.stateid).await.unwrap();
            assert_eq!(
                status(c.open(&dir, "roots", OpenOpts::read()).await),
                NfsStat4::Nfs4errAccess
            );
        }
    })
    .await
}

#[tokio::test]
async fn a_client_without_a_rule_cannot_enter_or_see_an_export() {
    within(async {
        let srv = Exports::start().await;
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        assert_eq!(
            status(c.lookup(&root, "hidden").await),
            NfsStat4::Nfs4errAccess
        );
        assert!(!names(&c.readdir(&root, &[]).await.unwrap()).contains(&"hidden".to_string()));
        assert_eq!(
            status(c.secinfo(&root, "hidden").await),
            NfsStat4::Nfs4errAccess
        );
        // A handle obtained some other way is refused too.
        let fh = srv.root_of(HIDDEN);
        let r = c.compound(vec![putfh(&fh), getattr(&[FATTR4_TYPE])]).await;
        assert_eq!(failed_at(r), (0, NfsStat4::Nfs4errAccess));
    })
    .await
}

/// Fails a test that needs root (to switch identities or bind privileged
/// ports) when not run as root, rather than letting it pass untested.
fn require_root() {
    assert!(
        std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0),
        "this test needs root: run it as root (CI and ./test.sh do)"
    );
}

/// A connection from a privileged local port (we run as root).
async fn privileged_stream(addr: SocketAddr) -> Option<tokio::net::TcpStream> {
    for port in (600..1024).rev() {
        let s = tokio::net::TcpSocket::new_v4().ok()?;
        if s.bind(SocketAddr::from(([127, 0, 0, 1], port))).is_err() {
            continue;
        }
        if let Ok(stream) = s.connect(addr).await {
            return Some(stream);
        }
    }
    None
}

#[tokio::test]
async fn a_secure_export_wants_a_privileged_port() {
    within(async {
        let srv = Exports::start().await;
        let c = srv.client().await;
        assert!(c.connection().local().port() >= 1024);
        let root = c.root_fh().await.unwrap();
        // Still listed, but entering it is NFS4ERR_PERM (as knfsd answers).
        assert!(names(&c.readdir(&root, &[]).await.unwrap()).contains(&"secure".to_string()));
        assert_eq!(
            status(c.lookup(&root, "secure").await),
            NfsStat4::Nfs4errPerm
        );
        let fh = srv.root_of(SECURE);
        let r = c.compound(vec![putfh(&fh), getattr(&[FATTR4_TYPE])]).await;
        assert_eq!(failed_at(r), (0, NfsStat4::Nfs4errPerm));
        // From a port below 1024 it works.
        require_root();
        let stream = privileged_stream(srv.addr)
            .await
            .expect("a privileged port");
        let p = Client::connect_stream(stream, options()).await.unwrap();
        assert!(p.connection().local().port() < 1024);
        let dir = p.lookup_path(SECURE).await.unwrap();
        assert_eq!(dir, fh);
        p.mkdir(&dir, "d", 0o755).await.unwrap();
        assert!(srv.dir(SECURE).join("d").is_dir());
    })
    .await
}

#[tokio::test]
async fn a_flavor_the_export_does_not_accept_is_wrongsec() {
    within(async {
        let srv = Exports::start().await;
        let c = srv.client_as(rpc::Auth::None).await;
        let root = c.root_fh().await.unwrap();
        // The pseudo root and the exports accepting AUTH_NONE are open.
        assert_eq!(
            names(&c.readdir(&root, &[]).await.unwrap()),
            ["data", "home", "secure", "sysonly"]
        );
        c.lookup_path(DATA).await.unwrap();
        // LOOKUP into the AUTH_SYS-only export (§2.6.3.1.1.3).
        assert_eq!(
            status(c.lookup(&root, "sysonly").await),
            NfsStat4::Nfs4errWrongsec
        );
        // SECINFO tells which flavor to use.
        assert_eq!(
            c.secinfo(&root, "sysonly").await.unwrap(),
            [SecInfo4::Flavor(AUTH_SYS)]
        );
        assert_eq!(
            c.secinfo(&root, "data").await.unwrap(),
            [SecInfo4::Flavor(AUTH_SYS), SecInfo4::Flavor(AUTH_NONE)]
        );
        // PUTFH followed by a use of the handle: the PUTFH fails
        // (§2.6.3.1.1.7) ...
        let fh = srv.root_of(SYSONLY);
        let r = c.compound(vec![putfh(&fh), getattr(&[FATTR4_TYPE])]).await;
        assert_eq!(failed_at(r), (0, NfsStat4::Nfs4errWrongsec));
        // ... but not when followed by SECINFO_NO_NAME (§2.6.3.1.1.5).
        assert_eq!(
            c.secinfo_no_name(&fh, SecInfoStyle4::CurrentFh)
                .await
                .unwrap(),
            [SecInfo4::Flavor(AUTH_SYS)]
        );
        // PUTFH; SAVEFH; GETATTR: the use fails.
        let r = c
            .compound(vec![putfh(&fh), NfsArgOp4::SaveFh, getattr(&[FATTR4_TYPE])])
            .await;
        assert_eq!(failed_at(r), (2, NfsStat4::Nfs4errWrongsec));
        // LOOKUPP out of it to the pseudo root is allowed.
        let r = c
            .compound(vec![putfh(&fh), NfsArgOp4::LookupP, NfsArgOp4::GetFh])
            .await
            .unwrap();
        assert_eq!(fh_of(&r[2]), root);
        // With AUTH_SYS it all works.
        let s = srv.client().await;
        let dir = s.lookup_path(SYSONLY).await.unwrap();
        assert_eq!(dir, fh);
        s.readdir(&dir, &[FATTR4_TYPE]).await.unwrap();
    })
    .await
}

// ---- filehandles stay inside their export (RFC 8881 §4.2.2) ----

/// Makes the kernel forget unused dentries, so that handles are opened
/// disconnected (as after memory pressure or a reboot). Needs root: the
/// tests run as root, CI included.
fn forget_dentries() {
    require_root();
    // Recently used dentries survive one pass of the shrinker.
    for _ in 0..3 {
        std::fs::write("/proc/sys/vm/drop_caches", b"2").expect("drop the dentry cache");
    }
}

/// Starts a server with these exports and state directory.
async fn serve(state: &std::path::Path, exports: Vec<ExportConfig>) -> Running {
    let cfg = ServerConfig {
        nfs4: Nfs4Config {
            lease: Duration::from_secs(10),
            // Restarts here test handles, not reclaims: no grace period.
            grace: Some(Duration::ZERO),
            ..Default::default()
        },
        ..ServerConfig::new(
            "127.0.0.1:0".parse().expect("address"),
            state.to_path_buf(),
            exports,
        )
    };
    server::run::start(cfg).await.expect("server starts")
}

/// Stops a server and waits until its backends are gone, so none of
/// their cached descriptors keeps a dentry alive.
async fn stop_fully(running: Running) {
    let backends: Vec<_> = running
        .nfs4
        .exports()
        .iter()
        .map(|e| std::sync::Arc::downgrade(&e.vfs))
        .collect();
    running.stop().await;
    let gone = eventually(|| backends.iter().all(|w| w.strong_count() == 0).then_some(())).await;
    assert!(
        gone.is_some(),
        "the stopped server's backends are still alive"
    );
}

/// The status a PUTFH of `fh` followed by GETATTR and by READ ends with.
async fn uses_of(c: &Client, fh: &NfsFh4) -> [NfsStat4; 2] {
    let read = NfsArgOp4::Read(Read4Args {
        stateid: StateId4::ANONYMOUS,
        offset: 0,
        count: 100,
    });
    let mut out = [NfsStat4::Nfs4Ok; 2];
    for (i, op) in [getattr(&[FATTR4_TYPE]), read].into_iter().enumerate() {
        if let Err(e) = c.compound(vec![putfh(fh), op]).await {
            out[i] = e.status().expect("an NFS status");
        }
    }
    out
}

#[tokio::test]
async fn handles_minted_by_a_wider_export_are_stale_once_it_is_narrowed() {
    within(async {
        let top = tempfile::tempdir().unwrap();
        let a = top.path();
        std::fs::create_dir_all(a.join("sub/dir")).unwrap();
        std::fs::create_dir_all(a.join("outdir")).unwrap();
        std::fs::write(a.join("secret"), b"secret").unwrap();
        std::fs::write(a.join("outdir/f"), b"secret too").unwrap();
        std::fs::write(a.join("sub/inside"), b"inside").unwrap();
        let state = tempfile::tempdir().unwrap();

        // Export "/" is the whole of A: the client learns some handles.
        let wide = serve(state.path(), vec![ExportConfig::open("/", a)]).await;
        let c = Client::connect(wide.addr, options()).await.unwrap();
        let mut old = Vec::new();
        for p in ["/secret", "/outdir", "/outdir/f", "/sub/inside", "/sub/dir"] {
            let fh = c.lookup_path(p).await.unwrap();
            assert_eq!(uses_of(&c, &fh).await[0], NfsStat4::Nfs4Ok, "{p}");
            old.push((p, fh));
        }
        drop(c);
        stop_fully(wide).await;

        // The same export narrowed to A/sub, same key; the kernel has
        // forgotten the dentries, so files open disconnected.
        let narrow = serve(state.path(), vec![ExportConfig::open("/", a.join("sub"))]).await;
        forget_dentries();
        let c = Client::connect(narrow.addr, options()).await.unwrap();
        for (p, fh) in &old {
            // Every handle of the old configuration is bound to the old
            // root, even those naming objects still inside: STALE, and
            // already at PUTFH.
            let r = c.compound(vec![putfh(fh)]).await;
            assert_eq!(failed_at(r), (0, NfsStat4::Nfs4errStale), "{p}");
            assert_eq!(uses_of(&c, fh).await, [NfsStat4::Nfs4errStale; 2], "{p}");
        }
        // Handles of the new configuration work, disconnected or not.
        let inside = c.lookup_path("/inside").await.unwrap();
        let dir = c.lookup_path("/dir").await.unwrap();
        std::fs::write(a.join("sub/dir/leaves"), b"moved out later").unwrap();
        let leaves = c.lookup_path("/dir/leaves").await.unwrap();
        assert_eq!(uses_of(&c, &leaves).await, [NfsStat4::Nfs4Ok; 2]);
        drop(c);
        stop_fully(narrow).await;
        // Moved out of the export behind the server's back.
        std::fs::rename(a.join("sub/dir/leaves"), a.join("outdir/left")).unwrap();
        let narrow = serve(state.path(), vec![ExportConfig::open("/", a.join("sub"))]).await;
        forget_dentries();
        let c = Client::connect(narrow.addr, options()).await.unwrap();
        assert_eq!(uses_of(&c, &inside).await, [NfsStat4::Nfs4Ok; 2]);
        assert_eq!(uses_of(&c, &dir).await[0], NfsStat4::Nfs4Ok);
        let (data, _) = c.read(&inside, StateId4::ANONYMOUS, 0, 100).await.unwrap();
        assert_eq!(&data[..], b"inside");
        // Its handle, made inside, no longer reaches it outside.
        assert_eq!(uses_of(&c, &leaves).await, [NfsStat4::Nfs4errStale; 2]);
        narrow.stop().await;
    })
    .await
}

#[tokio::test]
async fn exports_sharing_a_file_system_do_not_open_each_others_objects() {
    within(async {
        let top = tempfile::tempdir().unwrap();
        let a = top.path();
        for d in ["x", "y/dy"] {
            std::fs::create_dir_all(a.join(d)).unwrap();
        }
        std::fs::write(a.join("x/fx"), b"x").unwrap();
        std::fs::write(a.join("y/fy"), b"y").unwrap();
        let state = tempfile::tempdir().unwrap();
        let running = serve(
            state.path(),
            vec![
                ExportConfig::open("/x", a.join("x")),
                ExportConfig::open("/y", a.join("y")),
            ],
        )
        .await;
        let srv = running.nfs4.clone();
        let id_of = |p: &str| srv.exports().iter().find(|e| e.path == p).unwrap().id;
        let (x, y) = (id_of("/x"), id_of("/y"));
        let c = Client::connect(running.addr, options()).await.unwrap();
        let fx = c.lookup_path("/x/fx").await.unwrap();
        assert_eq!(uses_of(&c, &fx).await, [NfsStat4::Nfs4Ok; 2]);

        // /x's handle with /y's export id: the MAC no longer matches.
        let mut moved = fx.0.to_vec();
        moved[2..4].copy_from_slice(&y.to_be_bytes());
        let r = c.compound(vec![putfh(&NfsFh4(Bytes::from(moved)))]).await;
        assert_eq!(failed_at(r), (0, NfsStat4::Nfs4errBadhandle));

        // Objects of /y, in a handle minted (with the server's key) for
        // /x: whether the kernel still knows where they are or not, /x
        // does not open them.
        let ys = vfs::local::LocalFs::new(&a.join("y")).unwrap();
        let root = vfs::Vfs::root(&ys);
        let cr = vfs::Creds::root();
        let objs: Vec<_> = ["fy", "dy"]
            .iter()
            .map(|n| vfs::Vfs::lookup(&ys, &cr, &root, n.as_bytes()).unwrap().0)
            .collect();
        drop(ys);
        // With no parent, and naming /x's root as the parent.
        let x_root = srv.exports().iter().find(|e| e.id == x).unwrap().vfs.root();
        let minted: Vec<_> = objs
            .into_iter()
            .flat_map(|handle| [None, Some(x_root.clone())].map(|parent| (handle.clone(), parent)))
            .map(|(handle, parent)| {
                NfsFh4(srv.fh.encode(&FhTarget::Object {
                    export: x,
                    handle,
                    parent,
                }))
            })
            .collect();
        for fh in &minted {
            assert_eq!(
                uses_of(&c, fh).await,
                [NfsStat4::Nfs4errStale; 2],
                "connected"
            );
        }
        forget_dentries();
        for fh in &minted {
            assert_eq!(
                uses_of(&c, fh).await,
                [NfsStat4::Nfs4errStale; 2],
                "disconnected"
            );
        }
        // /x's own handle still works.
        assert_eq!(uses_of(&c, &fx).await, [NfsStat4::Nfs4Ok; 2]);
        running.stop().await;
    })
    .await
}

/// With `numeric_owners` off, owners are reported by name (RFC 8881
/// §5.9), for pseudo directories, export roots and directory entries
/// alike, and names are accepted back.
#[tokio::test]
async fn owner_names_when_not_numeric() {
    within(async {
        let (a, b_dir, state) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        let export = |p: &str, d: &TempDir| ExportConfig {
            id: None,
            path: p.into(),
            dir: d.path().to_path_buf(),
            metadata_async: false,
            log: None,
            delegations: false,
            shared_locks: true,
            pnfs: None,
            served_by: None,
            fsid: None,
            rules: rules(
                vec![rule(false, Squash::None)],
                vec![Flavor::Sys, Flavor::None],
            ),
        };
        let running = server::run::start(ServerConfig {
            nfs4: Nfs4Config {
                numeric_owners: false,
                ..Default::default()
            },
            ..ServerConfig::new(
                "127.0.0.1:0".parse().unwrap(),
                state.path().to_path_buf(),
                vec![export("/a", &a), export("/b", &b_dir)],
            )
        })
        .await
        .unwrap();
        let c = Client::connect(running.addr, options()).await.unwrap();
        let ids = server::ids::IdMap::default();
        let want = [FATTR4_OWNER, FATTR4_OWNER_GROUP];
        let root = c.root_fh().await.unwrap();
        let pseudo = c.getattr(&root, &want).await.unwrap();
        assert_eq!(pseudo.owner, Some(Bytes::from(ids.user_name(0))));
        assert_eq!(pseudo.owner_group, Some(Bytes::from(ids.group_name(0))));
        let meta = std::fs::metadata(a.path()).unwrap();
        let fh = c.lookup(&root, "a").await.unwrap();
        let attrs = c.getattr(&fh, &want).await.unwrap();
        let owner = Bytes::from(ids.user_name(meta.uid()));
        assert_eq!(attrs.owner.as_ref(), Some(&owner));
        assert_eq!(
            attrs.owner_group,
            Some(Bytes::from(ids.group_name(meta.gid())))
        );
        for e in c.readdir(&root, &want).await.unwrap() {
            assert!(e.attrs.owner.is_some(), "{e:?}");
        }
        // The name given back, with a domain, sets the same owner.
        let mut named = owner.to_vec();
        named.extend(b"@ferrite.test");
        let r = c
            .compound(vec![
                putfh(&fh),
                NfsArgOp4::SetAttr(SetAttr4Args {
                    stateid: StateId4::ANONYMOUS,
                    obj_attributes: Attrs {
                        owner: Some(Bytes::from(named)),
                        ..Default::default()
                    }
                    .encode(),
                }),
            ])
            .await;
        assert!(r.is_ok(), "{r:?}");
        assert_eq!(std::fs::metadata(a.path()).unwrap().uid(), meta.uid());
        running.stop().await;
    })
    .await
}

/// With an owner domain (idmapd's `Domain`), a client that sends owners
/// as names gets names back, `user@domain`, and one that does not stays
/// numeric; a name of another domain is NFS4ERR_BADOWNER (RFC 8881 §5.9).
#[tokio::test]
async fn owner_domain_names_go_to_clients_that_send_names() {
    within(async {
        let (a, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(a.path().join("f"), b"x").unwrap();
        let running = server::run::start(ServerConfig {
            nfs4: Nfs4Config {
                owner_domain: Some("ferrite.test".into()),
                ..Default::default()
            },
            ..ServerConfig::new(
                "127.0.0.1:0".parse().unwrap(),
                state.path().to_path_buf(),
                vec![ExportConfig {
                    rules: rules(vec![rule(false, Squash::None)], vec![Flavor::Sys]),
                    ..ExportConfig::open("/", a.path())
                }],
            )
        })
        .await
        .unwrap();
        let (named, numeric) = (
            Client::connect(running.addr, options()).await.unwrap(),
            Client::connect(running.addr, options()).await.unwrap(),
        );
        let root = named.root_fh().await.unwrap();
        let f = named.lookup(&root, "f").await.unwrap();
        let want = [FATTR4_OWNER, FATTR4_OWNER_GROUP];
        let owner = |a: &Attrs| String::from_utf8(a.owner.clone().unwrap().to_vec()).unwrap();
        assert_eq!(owner(&named.getattr(&f, &want).await.unwrap()), "0");
        let setattr = |c: &Client, who: &str| {
            let (c, f, who) = (c.clone(), f.clone(), who.to_string());
            async move {
                c.compound(vec![
                    putfh(&f),
                    NfsArgOp4::SetAttr(SetAttr4Args {
                        stateid: StateId4::ANONYMOUS,
                        obj_attributes: Attrs {
                            owner: Some(Bytes::from(who)),
                            ..Default::default()
                        }
                        .encode(),
                    }),
                ])
                .await
            }
        };
        // A name of another domain names nobody here.
        assert_eq!(
            failed_at(setattr(&named, "root@elsewhere.example").await),
            (1, NfsStat4::Nfs4errBadowner)
        );
        setattr(&named, "root@ferrite.test").await.unwrap();
        let got = named.getattr(&f, &want).await.unwrap();
        assert_eq!(owner(&got), "root@ferrite.test");
        assert_eq!(got.owner_group.as_deref(), Some(&b"root@ferrite.test"[..]));
        // The other client never sent a name: numbers.
        assert_eq!(owner(&numeric.getattr(&f, &want).await.unwrap()), "0");
        // Numbers are taken whatever the domain.
        setattr(&numeric, "0@elsewhere.example").await.unwrap();
        running.stop().await;
    })
    .await
}

/// Exports with ids keep their clients' filehandles when the
/// configuration lists them in another order; without ids (the order is
/// the id) the same reordering makes them stale.
#[tokio::test]
async fn export_ids_survive_reordering() {
    within(async {
        let (a, b, state) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        std::fs::write(b.path().join("f"), b"in b").unwrap();
        let export = |id: Option<u16>, p: &str, d: &TempDir| ExportConfig {
            id,
            path: p.into(),
            dir: d.path().to_path_buf(),
            metadata_async: false,
            log: None,
            delegations: false,
            shared_locks: true,
            pnfs: None,
            served_by: None,
            fsid: None,
            rules: rules(vec![rule(false, Squash::None)], vec![Flavor::Sys]),
        };
        let start = |exports: Vec<ExportConfig>| {
            server::run::start(ServerConfig {
                nfs4: Nfs4Config {
                    grace: Some(Duration::ZERO),
                    ..Default::default()
                },
                ..ServerConfig::new(
                    "127.0.0.1:0".parse().unwrap(),
                    state.path().to_path_buf(),
                    exports,
                )
            })
        };
        for with_ids in [true, false] {
            let id = |n: u16| with_ids.then_some(n);
            let running = start(vec![export(id(10), "/a", &a), export(id(20), "/b", &b)])
                .await
                .unwrap();
            let c = Client::connect(running.addr, options()).await.unwrap();
            let fh = c.lookup_path("/b/f").await.unwrap();
            running.stop().await;
            // The same exports, listed the other way round.
            let running = start(vec![export(id(20), "/b", &b), export(id(10), "/a", &a)])
                .await
                .unwrap();
            let c = Client::connect(running.addr, options()).await.unwrap();
            let r = c.getattr(&fh, &[FATTR4_SIZE]).await;
            if with_ids {
                assert_eq!(r.unwrap().size, Some(4));
            } else {
                assert_eq!(status(r), NfsStat4::Nfs4errStale);
            }
            running.stop().await;
        }
    })
    .await
}
