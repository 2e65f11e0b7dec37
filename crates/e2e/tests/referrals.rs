//! Referrals (RFC 8881 §11.15; in RFC 5661 §11.8): a path of the pseudo
//! filesystem whose file system lives on other servers. LOOKUP into it
//! succeeds, what follows is NFS4ERR_MOVED, and GETATTR of its location
//! attributes (and READDIR of its parent) says where it went (§11.3,
//! §11.4).

mod common;

use std::time::Duration;

use bytes::Bytes;
use client::Client;
use common::*;
use proto::nfs4::*;
use server::config::{ExportConfig, ServerConfig};
use server::exports::referral::{Location, ReferralConfig};
use server::instance::Nfs4Config;
use server::run::Running;
use tempfile::TempDir;

struct World {
    running: Running,
    _dirs: (TempDir, TempDir),
}

/// A server exporting "/data", with the referral "/far" to two places.
async fn start() -> World {
    let data = TempDir::new().expect("temp dir");
    let state = TempDir::new().expect("temp dir");
    let cfg = ServerConfig {
        nfs4: Nfs4Config {
            lease: Duration::from_secs(10),
            grace: Some(Duration::ZERO),
            referrals: vec![ReferralConfig {
                path: "/far".into(),
                locations: vec![
                    Location::parse("127.0.0.2:/srv/far").expect("location"),
                    Location::parse("127.0.0.3:20490:/").expect("location"),
                ],
            }],
            ..Default::default()
        },
        ..ServerConfig::new(
            "127.0.0.1:0".parse().expect("address"),
            state.path().to_path_buf(),
            vec![ExportConfig::open("/data", data.path())],
        )
    };
    let running = server::run::start(cfg).await.expect("server starts");
    World {
        running,
        _dirs: (data, state),
    }
}

async fn client(w: &World) -> Client {
    Client::connect(w.running.addr, options())
        .await
        .expect("client connects")
}

fn status_of(r: client::Result<Vec<NfsResOp4>>) -> (usize, NfsStat4) {
    failed_at(r)
}

/// The Linux client's sequence (nfs4_proc_lookup_common, then
/// nfs4_proc_fs_locations): LOOKUP, GETFH fails with NFS4ERR_MOVED; then
/// LOOKUP and GETATTR of fsid, fs_locations and mounted_on_fileid
/// succeed, with an fsid unlike the parent's and both locations.
#[tokio::test]
async fn lookup_then_the_locations() {
    within(async {
        let w = start().await;
        let c = client(&w).await;
        let r = c
            .compound(vec![
                NfsArgOp4::PutRootFh,
                lookup("far"),
                NfsArgOp4::GetFh,
                getattr(&[FATTR4_TYPE]),
            ])
            .await;
        assert_eq!(status_of(r), (2, NfsStat4::Nfs4errMoved));
        let want = [
            FATTR4_FSID,
            FATTR4_FS_LOCATIONS,
            FATTR4_MOUNTED_ON_FILEID,
            // Not available on an absent file system: left out.
            FATTR4_SIZE,
            FATTR4_OWNER,
        ];
        let r = c
            .compound(vec![
                NfsArgOp4::PutRootFh,
                getattr(&[FATTR4_FSID]),
                lookup("far"),
                getattr(&want),
            ])
            .await
            .expect("locations");
        let parent = attrs_of(&r[1]).fsid.expect("the root's fsid");
        let a = attrs_of(&r[3]);
        assert!(a.size.is_none() && a.owner.is_none(), "{a:?}");
        let fsid = a.fsid.expect("fsid");
        assert_ne!(fsid, parent);
        assert!(a.mounted_on_fileid.is_some());
        let loc = a.fs_locations.expect("fs_locations");
        assert_eq!(loc.fs_root, vec![Bytes::from("far")]);
        assert_eq!(loc.locations.len(), 2);
        assert_eq!(loc.locations[0].server, vec![Bytes::from("127.0.0.2")]);
        assert_eq!(
            loc.locations[0].rootpath,
            vec![Bytes::from("srv"), Bytes::from("far")]
        );
        // A port other than 2049 travels as a universal address.
        assert_eq!(
            loc.locations[1].server,
            vec![Bytes::from("127.0.0.3.80.10")]
        );
        // fs_locations_info and fs_status, asked for, come too.
        let r = c
            .compound(vec![
                NfsArgOp4::PutRootFh,
                lookup("far"),
                getattr(&[FATTR4_FS_STATUS, FATTR4_FS_LOCATIONS_INFO]),
            ])
            .await
            .expect("status");
        let a = attrs_of(&r[2]);
        assert!(a.fs_status.expect("fs_status").absent);
        assert_eq!(a.fs_locations_info.expect("info").items.len(), 2);
        w.running.stop().await;
    })
    .await
}

/// Every other operation starting at the referral is NFS4ERR_MOVED:
/// GETATTR without a location attribute, ACCESS, READDIR, LOOKUP,
/// LOOKUPP, SAVEFH, VERIFY; SECINFO of its name in the parent answers.
#[tokio::test]
async fn everything_else_is_moved() {
    within(async {
        let w = start().await;
        let c = client(&w).await;
        let access = NfsArgOp4::Access(Access4Args {
            access: ACCESS4_READ,
        });
        let readdir = NfsArgOp4::ReadDir(ReadDir4Args {
            cookie: 0,
            cookieverf: [0; 8],
            dircount: 1024,
            maxcount: 4096,
            attr_request: Bitmap4::from_attrs(&[FATTR4_TYPE]),
        });
        let verify = NfsArgOp4::Verify(Verify4Args {
            obj_attributes: Attrs {
                size: Some(0),
                ..Default::default()
            }
            .encode(),
        });
        for op in [
            getattr(&[FATTR4_TYPE, FATTR4_FSID]),
            access,
            readdir,
            lookup("x"),
            NfsArgOp4::LookupP,
            NfsArgOp4::SaveFh,
            verify,
        ] {
            let name = format!("{op:?}");
            let r = c
                .compound(vec![NfsArgOp4::PutRootFh, lookup("far"), op])
                .await;
            assert_eq!(status_of(r), (2, NfsStat4::Nfs4errMoved), "{name}");
        }
        let r = c
            .compound(vec![
                NfsArgOp4::PutRootFh,
                NfsArgOp4::SecInfo(SecInfo4Args { name: b("far") }),
            ])
            .await
            .expect("SECINFO of the referral's name");
        match &r[1] {
            NfsResOp4::SecInfo(Res4::Ok(v)) => assert!(!v.is_empty()),
            other => panic!("{other:?}"),
        }
        w.running.stop().await;
    })
    .await
}

/// READDIR of the parent (§11.4.2): the referral's entry has rdattr_error
/// NFS4ERR_MOVED, fsid and mounted_on_fileid and no filehandle; with its
/// locations asked for, rdattr_error is NFS4_OK; with neither asked for,
/// the READDIR fails.
#[tokio::test]
async fn readdir_of_the_parent() {
    within(async {
        let w = start().await;
        let c = client(&w).await;
        let root = c.root_fh().await.expect("root");
        let entries = c
            .readdir(
                &root,
                &[
                    FATTR4_RDATTR_ERROR,
                    FATTR4_FSID,
                    FATTR4_MOUNTED_ON_FILEID,
                    FATTR4_FILEHANDLE,
                    FATTR4_TYPE,
                ],
            )
            .await
            .expect("readdir");
        let far = entries
            .iter()
            .find(|e| &e.name[..] == b"far")
            .expect("the referral is listed");
        let a = &far.attrs;
        assert_eq!(a.rdattr_error, Some(NfsStat4::Nfs4errMoved));
        assert!(a.fsid.is_some() && a.mounted_on_fileid.is_some());
        assert!(a.filehandle.is_none() && a.type_.is_none(), "{a:?}");
        let data = entries
            .iter()
            .find(|e| &e.name[..] == b"data")
            .expect("the export is listed");
        assert_eq!(data.attrs.rdattr_error, Some(NfsStat4::Nfs4Ok));
        let entries = c
            .readdir(&root, &[FATTR4_RDATTR_ERROR, FATTR4_FS_LOCATIONS])
            .await
            .expect("readdir");
        let far = entries.iter().find(|e| &e.name[..] == b"far").unwrap();
        let a = far.attrs.clone();
        assert_eq!(a.rdattr_error, Some(NfsStat4::Nfs4Ok));
        assert_eq!(a.fs_locations.expect("locations").locations.len(), 2);
        let r = c.readdir(&root, &[FATTR4_TYPE]).await;
        assert_eq!(status(r), NfsStat4::Nfs4errMoved);
        w.running.stop().await;
    })
    .await
}

/// EXCHANGE_ID says the server may refer (RFC 8881 §18.35.3), a present
/// file system's fs_locations names its root and no location, and the
/// server's report lists the referral.
#[tokio::test]
async fn the_server_says_it_refers() {
    within(async {
        let w = start().await;
        let c = client(&w).await;
        assert_ne!(
            c.exchange_flags() & EXCHGID4_FLAG_SUPP_MOVED_REFER,
            0,
            "SUPP_MOVED_REFER"
        );
        let r = c
            .compound(vec![
                NfsArgOp4::PutRootFh,
                lookup("data"),
                getattr(&[FATTR4_FS_LOCATIONS, FATTR4_SUPPORTED_ATTRS]),
            ])
            .await
            .expect("getattr");
        let a = attrs_of(&r[2]);
        assert!(a
            .supported_attrs
            .expect("supported")
            .contains(FATTR4_FS_LOCATIONS));
        let loc = a.fs_locations.expect("fs_locations");
        assert_eq!(loc.fs_root, vec![Bytes::from("data")]);
        assert!(loc.locations.is_empty());
        // `ferrite stat` and `ferrite exports` show it.
        let report = server::observe::stats::report::build(&w.running.nfs4);
        assert_eq!(report.referrals.len(), 1);
        assert_eq!(report.referrals[0].path, "/far");
        assert_eq!(
            report.referrals[0].locations,
            ["127.0.0.2:2049:/srv/far", "127.0.0.3:20490:/"]
        );
        w.running.stop().await;
    })
    .await
}
