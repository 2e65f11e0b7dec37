//! pNFS with flexible-file layouts (issue 30): a Ferrite metadata server
//! over Ferrite data servers, all on loopback. A client writes through a
//! layout straight to a data server (NFSv3, as the layout's synthetic
//! user), commits the layout, and reads the same bytes through the
//! metadata server; the metadata server's own writes land in the data
//! files where the striping says; a layout never returned is fenced.

mod common;

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use client::v3::Client as Client3;
use client::{Client, OpenOpts};
use common::*;
use proto::nfs3::{NfsFh3, NfsStat3, StableHow};
use proto::nfs4::*;
use server::config::{ExportConfig, ServerConfig};
use server::instance::Nfs4Config;
use server::pnfs::dataserver::DataServerAddr;
use server::pnfs::PnfsConfig;
use server::run::Running;
use tempfile::TempDir;

const UNIT: u64 = 64 << 10;

fn config(state: &Path, e: ExportConfig, lease: Duration) -> ServerConfig {
    ServerConfig {
        nfs4: Nfs4Config {
            lease,
            grace: Some(Duration::ZERO),
            recall_wait: Duration::from_secs(2),
            ..Default::default()
        },
        ..ServerConfig::new("127.0.0.1:0".parse().unwrap(), state.to_path_buf(), vec![e])
    }
}

struct Cluster {
    mds: Running,
    ds: Vec<(Running, TempDir)>,
    _dirs: Vec<TempDir>,
}

/// `n` Ferrite data servers (plain `ferrite serve DIR`) and a metadata
/// server striping over them with `mirrors` copies.
async fn cluster(n: usize, mirrors: usize, lease: Duration) -> Cluster {
    let mut ds = Vec::new();
    let mut dirs = Vec::new();
    for _ in 0..n {
        let (d, s) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let r = server::run::start(config(s.path(), ExportConfig::open("/", d.path()), lease))
            .await
            .unwrap();
        ds.push((r, d));
        dirs.push(s);
    }
    let (m, s) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut e = ExportConfig::open("/", m.path());
    e.pnfs = Some(PnfsConfig {
        servers: ds
            .iter()
            .map(|(r, _)| DataServerAddr {
                addr: r.addr,
                path: "/".into(),
            })
            .collect(),
        stripe_unit: UNIT,
        mirrors,
    });
    let mds = server::run::start(config(s.path(), e, lease))
        .await
        .unwrap();
    dirs.push(m);
    dirs.push(s);
    Cluster {
        mds,
        ds,
        _dirs: dirs,
    }
}

fn layoutget(fh: &NfsFh4, sid: StateId4, iomode: LayoutIoMode4, offset: u64) -> Vec<NfsArgOp4> {
    vec![
        putfh(fh),
        NfsArgOp4::LayoutGet(LayoutGet4Args {
            signal_layout_avail: false,
            layout_type: LAYOUT4_FLEX_FILES,
            iomode,
            offset,
            length: u64::MAX,
            minlength: 0,
            stateid: sid,
            maxcount: 4096,
        }),
    ]
}

/// A LAYOUTGET's stateid and its one segment.
async fn get_layout(
    c: &Client,
    fh: &NfsFh4,
    sid: StateId4,
    iomode: LayoutIoMode4,
    offset: u64,
) -> (StateId4, Layout4, FfLayout4) {
    let r = c
        .compound(layoutget(fh, sid, iomode, offset))
        .await
        .unwrap();
    let NfsResOp4::LayoutGet(LayoutGet4Res::Ok(ok)) = &r[1] else {
        panic!("LAYOUTGET: {:?}", r[1]);
    };
    assert_eq!(ok.layout.len(), 1);
    let l = ok.layout[0].clone();
    let ff = FfLayout4::from_content(&l.content).unwrap();
    (ok.stateid, l, ff)
}

/// The data server a layout's mirror names (GETDEVICEINFO) and an NFSv3
/// client to it as the layout's synthetic user.
async fn data_server(c: &Client, d: &FfDataServer4) -> (std::net::SocketAddr, Client3, NfsFh3) {
    let r = c
        .compound(vec![NfsArgOp4::GetDeviceInfo(GetDeviceInfo4Args {
            device_id: d.deviceid,
            layout_type: LAYOUT4_FLEX_FILES,
            maxcount: 4096,
            notify_types: Bitmap4::default(),
        })])
        .await
        .unwrap();
    let NfsResOp4::GetDeviceInfo(GetDeviceInfo4Res::Ok(ok)) = &r[0] else {
        panic!("GETDEVICEINFO: {:?}", r[0]);
    };
    let addr = FfDeviceAddr4::from_device_addr(&ok.device_addr).unwrap();
    assert_eq!(addr.versions[0].version, 3);
    let ua = &addr.netaddrs.0[0];
    assert_eq!(ua.netid, "tcp");
    // h1.h2.h3.h4.p1.p2
    let parts: Vec<&str> = ua.addr.split('.').collect();
    let port = parts[4].parse::<u16>().unwrap() * 256 + parts[5].parse::<u16>().unwrap();
    let sa: std::net::SocketAddr = format!("{}:{port}", parts[..4].join(".")).parse().unwrap();
    let uid: u32 = std::str::from_utf8(&d.user).unwrap().parse().unwrap();
    let gid: u32 = std::str::from_utf8(&d.group).unwrap().parse().unwrap();
    let conn = rpc::connect(sa, None, rpc::ConnConfig::default())
        .await
        .unwrap();
    let fh = NfsFh3 {
        data: d.fh_vers[0].0.clone(),
    };
    let c3 = Client3::from_handle(conn, fh.clone(), rpc::Auth::sys(uid, gid, vec![], "client"));
    (sa, c3, fh)
}

fn layoutcommit(fh: &NfsFh4, sid: StateId4, last: u64) -> Vec<NfsArgOp4> {
    vec![
        putfh(fh),
        NfsArgOp4::LayoutCommit(LayoutCommit4Args {
            offset: 0,
            length: u64::MAX,
            reclaim: false,
            stateid: sid,
            last_write_offset: Some(last),
            time_modify: None,
            layoutupdate: LayoutUpdate4 {
                layout_type: LAYOUT4_FLEX_FILES,
                body: Bytes::new(),
            },
        }),
    ]
}

/// The data file of the metadata server's file on one data server's disk.
fn data_file(dir: &Path) -> Vec<u8> {
    let files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("ferrite-"))
        .collect();
    assert_eq!(files.len(), 1, "one data file in {}", dir.display());
    std::fs::read(files[0].path()).unwrap()
}

#[tokio::test]
async fn writes_through_a_layout_are_read_through_the_metadata_server() {
    within(async {
        let cl = cluster(2, 1, Duration::from_secs(30)).await;
        let c = Client::connect(cl.mds.addr, options()).await.unwrap();
        let root = c.root_fh().await.unwrap();
        let attrs = c
            .getattr(&root, &[FATTR4_FS_LAYOUT_TYPES, FATTR4_LAYOUT_BLKSIZE])
            .await
            .unwrap();
        assert_eq!(attrs.fs_layout_types, Some(vec![LAYOUT4_FLEX_FILES]));
        assert_eq!(attrs.layout_blksize, Some(UNIT as u32));
        let o = c.open(&root, "f", OpenOpts::create(0o644)).await.unwrap();

        // Stripe 0 through its layout, straight to its data server.
        let (lsid, seg, ff) = get_layout(&c, &o.fh, o.stateid, LayoutIoMode4::Rw, 10).await;
        assert_eq!((seg.offset, seg.length), (0, UNIT), "one stripe");
        assert_eq!(ff.mirrors.len(), 1);
        let (ds0, c3, dfh) = data_server(&c, &ff.mirrors[0].data_servers[0]).await;
        c3.write(&dfh, 0, b("through the layout"), StableHow::FileSync)
            .await
            .unwrap();
        let r = c.compound(layoutcommit(&o.fh, lsid, 17)).await.unwrap();
        let NfsResOp4::LayoutCommit(Res4::Ok(ok)) = &r[1] else {
            panic!("LAYOUTCOMMIT: {:?}", r[1]);
        };
        assert_eq!(ok.newsize, Some(18));

        // The metadata server reads it from the data file.
        let (data, eof) = c.read(&o.fh, o.stateid, 0, 100).await.unwrap();
        assert_eq!(&data[..], b"through the layout");
        assert!(eof);

        // Its own write to stripe 1 lands on the other data server.
        c.write(
            &o.fh,
            o.stateid,
            UNIT,
            b("second stripe"),
            StableHow4::FileSync4,
        )
        .await
        .unwrap();
        let (_, _, ff1) = get_layout(&c, &o.fh, lsid, LayoutIoMode4::Read, UNIT + 1).await;
        let (ds1, r3, rfh) = data_server(&c, &ff1.mirrors[0].data_servers[0]).await;
        assert_ne!(ds0, ds1, "stripes go round the data servers");
        let got = r3.read(&rfh, UNIT, 64).await.unwrap();
        assert_eq!(&got.data[..], b"second stripe");
        // A READ layout's user may read and not write.
        let denied = r3.write(&rfh, UNIT, b("no"), StableHow::FileSync).await;
        assert_eq!(denied.unwrap_err().status(), Some(NfsStat3::Acces));

        // On the data servers' disks: each holds its stripe at its offset.
        for (r, dir) in &cl.ds {
            let bytes = data_file(dir.path());
            if r.addr == ds0 {
                assert_eq!(&bytes[..18], b"through the layout");
                assert!(
                    bytes.len() as u64 <= UNIT,
                    "no second stripe on the first server"
                );
            } else {
                assert_eq!(bytes.len() as u64, UNIT + 13);
                assert!(bytes[..UNIT as usize].iter().all(|b| *b == 0));
                assert_eq!(&bytes[UNIT as usize..], b"second stripe");
            }
        }
        let size = c.getattr(&o.fh, &[FATTR4_SIZE]).await.unwrap().size;
        assert_eq!(size, Some(UNIT + 13));

        // Truncation through the metadata server reaches the data files.
        let five = Attrs {
            size: Some(5),
            ..Attrs::default()
        };
        c.setattr(&o.fh, o.stateid, &five).await.unwrap();
        let (data, _) = c.read(&o.fh, o.stateid, 0, 100).await.unwrap();
        assert_eq!(&data[..], b"throu");
        for (_, dir) in &cl.ds {
            assert!(data_file(dir.path()).len() <= 5);
        }
        // Removal removes them.
        c.remove(&root, "f").await.unwrap();
        for (_, dir) in &cl.ds {
            let left = std::fs::read_dir(dir.path()).unwrap().count();
            assert_eq!(left, 0, "data files removed");
        }
    })
    .await;
}

#[tokio::test]
async fn layout_stateids_are_checked() {
    within(async {
        let cl = cluster(1, 1, Duration::from_secs(30)).await;
        let a = Client::connect(cl.mds.addr, options()).await.unwrap();
        let b = Client::connect(cl.mds.addr, options()).await.unwrap();
        let root = a.root_fh().await.unwrap();
        let o = a.open(&root, "f", OpenOpts::create(0o644)).await.unwrap();
        let (lsid, seg, _) = get_layout(&a, &o.fh, o.stateid, LayoutIoMode4::Rw, 0).await;
        assert_eq!(
            (seg.offset, seg.length),
            (0, u64::MAX),
            "one server: the whole file"
        );
        // Another client's, a forged one, one from the future.
        let ob = b.open(&root, "f", OpenOpts::read()).await.unwrap();
        let st = |r: client::Result<Vec<NfsResOp4>>| status(r);
        assert_eq!(
            st(b.compound(layoutget(&o.fh, lsid, LayoutIoMode4::Read, 0))
                .await),
            NfsStat4::Nfs4errBadStateid
        );
        assert!(unknown_stateid(st(a
            .compound(layoutget(&o.fh, forge(lsid), LayoutIoMode4::Read, 0))
            .await)));
        let future = StateId4 {
            seqid: lsid.seqid + 5,
            ..lsid
        };
        assert_eq!(
            st(a.compound(layoutget(&o.fh, future, LayoutIoMode4::Read, 0))
                .await),
            NfsStat4::Nfs4errBadStateid
        );
        // ANY is not a mode to get; a layout stateid is not for READ.
        assert_eq!(
            st(a.compound(layoutget(&o.fh, lsid, LayoutIoMode4::Any, 0))
                .await),
            NfsStat4::Nfs4errBadiomode
        );
        assert_eq!(
            status(a.read(&o.fh, lsid, 0, 10).await),
            NfsStat4::Nfs4errBadStateid
        );
        // A malformed return body.
        let ret = |sid: StateId4, body: Bytes| {
            vec![
                putfh(&o.fh),
                NfsArgOp4::LayoutReturn(LayoutReturn4Args {
                    reclaim: false,
                    layout_type: LAYOUT4_FLEX_FILES,
                    iomode: LayoutIoMode4::Any,
                    layoutreturn: LayoutReturn4::File(LayoutReturnFile4 {
                        offset: 0,
                        length: u64::MAX,
                        stateid: sid,
                        body,
                    }),
                }),
            ]
        };
        assert_eq!(
            st(a.compound(ret(lsid, Bytes::from_static(&[0, 0, 0, 9])))
                .await),
            NfsStat4::Nfs4errBadxdr
        );
        // Returned: the stateid is gone.
        let r = a
            .compound(ret(lsid, FfLayoutReturn4::default().to_body()))
            .await
            .unwrap();
        assert!(
            matches!(r[1], NfsResOp4::LayoutReturn(Res4::Ok(None))),
            "{:?}",
            r[1]
        );
        assert_eq!(
            st(a.compound(layoutcommit(&o.fh, lsid, 1)).await),
            NfsStat4::Nfs4errBadStateid
        );
        // An export without data servers has no layouts.
        let _ = ob;
        drop(cl);
    })
    .await;
}

/// A client that does not answer a recall (here: does not return the
/// layout) is fenced a lease later: its writes to the data server fail,
/// and the other client's I/O through the metadata server goes on.
#[tokio::test]
async fn a_recall_left_unanswered_fences_the_holder() {
    within(async {
        let lease = Duration::from_secs(5);
        let cl = cluster(1, 1, lease).await;
        let a = Client::connect(cl.mds.addr, options()).await.unwrap();
        let cb = Client::connect(cl.mds.addr, options()).await.unwrap();
        let root = a.root_fh().await.unwrap();
        let o = a.open(&root, "f", OpenOpts::create(0o644)).await.unwrap();
        let (_, _, ff) = get_layout(&a, &o.fh, o.stateid, LayoutIoMode4::Rw, 0).await;
        let (_, c3, dfh) = data_server(&a, &ff.mirrors[0].data_servers[0]).await;
        c3.write(&dfh, 0, b("before"), StableHow::FileSync)
            .await
            .unwrap();
        // b writes through the metadata server: a's layout is recalled;
        // a keeps renewing its lease but never returns it.
        let ob = cb.open(&root, "f", OpenOpts::write()).await.unwrap();
        let renew = {
            let a = a.clone();
            tokio::spawn(async move {
                loop {
                    let _ = a.compound(vec![]).await;
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            })
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            match cb
                .write(&ob.fh, ob.stateid, 0, b("from b"), StableHow4::FileSync4)
                .await
            {
                Ok(_) => break,
                Err(client::Error::Status {
                    status: NfsStat4::Nfs4errDelay,
                    ..
                }) => {
                    assert!(
                        std::time::Instant::now() < deadline,
                        "b's write never went through"
                    );
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => panic!("b's write: {e}"),
            }
        }
        renew.abort();
        assert!(!a.callbacks().layout_recalls().is_empty(), "a was recalled");
        // Fenced: a's old layout no longer writes.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            match c3.write(&dfh, 0, b("late"), StableHow::FileSync).await {
                Err(e) if e.status() == Some(NfsStat3::Acces) => break,
                _ => {
                    assert!(std::time::Instant::now() < deadline, "never fenced");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
        let (data, _) = cb.read(&ob.fh, ob.stateid, 0, 6).await.unwrap();
        assert_eq!(&data[..], b"from b");
    })
    .await;
}

/// A link to a data server that the test can cut and restore: a TCP
/// forwarder on a fixed address.
struct Link {
    addr: std::net::SocketAddr,
    to: std::net::SocketAddr,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Link {
    async fn up(addr: std::net::SocketAddr, to: std::net::SocketAddr) -> Link {
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let mut conns = tokio::task::JoinSet::new();
            loop {
                let Ok((mut a, _)) = listener.accept().await else {
                    return;
                };
                conns.spawn(async move {
                    if let Ok(mut b) = tokio::net::TcpStream::connect(to).await {
                        let _ = tokio::io::copy_bidirectional(&mut a, &mut b).await;
                    }
                });
            }
        });
        Link {
            addr,
            to,
            task: Some(task),
        }
    }

    /// Every connection through it drops, and nothing connects.
    async fn cut(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
            let _ = t.await;
        }
    }

    async fn restore(&mut self) {
        let l = Link::up(self.addr, self.to).await;
        *self = l;
    }
}

/// Two Ferrite data servers, each reached through a [`Link`] the test
/// can cut, and a metadata server over the links with two mirrors: the
/// metadata server, the data servers (and their directories), the links,
/// the metadata server's state and export directories, and the data
/// servers' state directories.
async fn linked_cluster() -> (
    Running,
    Vec<(Running, TempDir)>,
    Vec<Link>,
    TempDir,
    TempDir,
    Vec<TempDir>,
) {
    let lease = Duration::from_secs(30);
    let mut ds = Vec::new();
    let mut links = Vec::new();
    let mut keep = Vec::new();
    for _ in 0..2 {
        let (d, s) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let r = server::run::start(config(s.path(), ExportConfig::open("/", d.path()), lease))
            .await
            .unwrap();
        links.push(Link::up("127.0.0.1:0".parse().unwrap(), r.addr).await);
        ds.push((r, d));
        keep.push(s);
    }
    let (m, s) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut e = ExportConfig::open("/", m.path());
    e.pnfs = Some(PnfsConfig {
        servers: links
            .iter()
            .map(|l| DataServerAddr {
                addr: l.addr,
                path: "/".into(),
            })
            .collect(),
        stripe_unit: UNIT,
        mirrors: 2,
    });
    let mds = server::run::start(config(s.path(), e, lease))
        .await
        .unwrap();
    (mds, ds, links, s, m, keep)
}

/// With two mirrors, a data server that cannot be reached is read around
/// (the other mirror answers) and written around; once it is back, the
/// files it missed are copied to it, so both mirrors hold the same bytes.
#[tokio::test]
async fn a_data_server_down_is_read_around_and_brought_up_to_date() {
    within(async {
        let (mds, ds, mut links, s, m, keep) = linked_cluster().await;
        let c = Client::connect(mds.addr, options()).await.unwrap();
        let root = c.root_fh().await.unwrap();
        let o = c.open(&root, "m", OpenOpts::create(0o644)).await.unwrap();
        let first: Vec<u8> = (0..3 * UNIT).map(|i| (i % 251) as u8).collect();
        c.write(
            &o.fh,
            o.stateid,
            0,
            Bytes::from(first.clone()),
            StableHow4::FileSync4,
        )
        .await
        .unwrap();
        for (_, dir) in &ds {
            assert!(
                data_file(dir.path()) == first,
                "both mirrors hold every stripe"
            );
        }
        // One data server cannot be reached.
        links[1].cut().await;
        let (data, _) = c
            .read(&o.fh, o.stateid, 0, first.len() as u32)
            .await
            .unwrap();
        assert!(data[..] == first[..], "read from the other mirror");
        let second = b("written while a mirror was down");
        c.write(
            &o.fh,
            o.stateid,
            UNIT + 7,
            second.clone(),
            StableHow4::FileSync4,
        )
        .await
        .unwrap();
        let mut want = first.clone();
        want[(UNIT + 7) as usize..(UNIT + 7) as usize + second.len()].copy_from_slice(&second);
        let (data, _) = c
            .read(&o.fh, o.stateid, 0, want.len() as u32)
            .await
            .unwrap();
        assert!(data[..] == want[..]);
        assert!(
            data_file(ds[1].1.path()) == first,
            "the unreachable server missed it"
        );
        // It is recorded durably as behind.
        let behind = std::fs::read_dir(s.path().join("pnfs")).unwrap().count();
        assert_eq!(behind, 1, "a marker for the server left behind");
        // Back: brought up to date, and the marker goes.
        links[1].restore().await;
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while data_file(ds[1].1.path()) != want
            || std::fs::read_dir(s.path().join("pnfs")).unwrap().count() != 0
        {
            assert!(
                std::time::Instant::now() < deadline,
                "never brought up to date"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        drop((mds, m, keep));
    })
    .await;
}

/// A change of the export's data servers on reload recalls every layout
/// of the export (CB_LAYOUTRECALL of the file system), and the device ids
/// of the old ones are unknown after it.
#[tokio::test]
async fn a_reload_that_changes_the_data_servers_recalls_the_layouts() {
    within(async {
        let cl = cluster(2, 1, Duration::from_secs(30)).await;
        let c = Client::connect(cl.mds.addr, options()).await.unwrap();
        let root = c.root_fh().await.unwrap();
        let o = c.open(&root, "f", OpenOpts::create(0o644)).await.unwrap();
        let (_, _, ff) = get_layout(&c, &o.fh, o.stateid, LayoutIoMode4::Rw, 0).await;
        let old_device = ff.mirrors[0].data_servers[0].deviceid;
        // The same export with one data server fewer.
        let mut e = ExportConfig::open("/", cl._dirs[cl._dirs.len() - 2].path());
        e.pnfs = Some(PnfsConfig {
            servers: vec![DataServerAddr {
                addr: cl.ds[0].0.addr,
                path: "/".into(),
            }],
            stripe_unit: UNIT,
            mirrors: 1,
        });
        let state = cl._dirs[cl._dirs.len() - 1].path().to_path_buf();
        let report = cl
            .mds
            .reload(config(&state, e, Duration::from_secs(30)))
            .await
            .expect("reload applied");
        assert!(
            report
                .changes
                .iter()
                .any(|c| c.contains("data servers changed")),
            "{:?}",
            report.changes
        );
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let recalls = c.callbacks().layout_recalls();
            if let Some(r) = recalls.first() {
                assert!(matches!(r.recall, LayoutRecall4::Fsid(_)), "{r:?}");
                break;
            }
            assert!(std::time::Instant::now() < deadline, "no CB_LAYOUTRECALL");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let r = c
            .compound(vec![NfsArgOp4::GetDeviceInfo(GetDeviceInfo4Args {
                device_id: old_device,
                layout_type: LAYOUT4_FLEX_FILES,
                maxcount: 4096,
                notify_types: Bitmap4::default(),
            })])
            .await;
        assert_eq!(status(r), NfsStat4::Nfs4errNoent);
    })
    .await;
}

/// After a restart of the metadata server, a client reclaims what it
/// wrote under its old layout with LAYOUTCOMMIT's `loca_reclaim` in the
/// grace period (RFC 8881 §12.7.4); outside it, NFS4ERR_NO_GRACE.
#[tokio::test]
async fn layoutcommit_reclaims_after_a_restart() {
    within(async {
        let lease = Duration::from_secs(10);
        let (d, ds_state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let ds = server::run::start(config(
            ds_state.path(),
            ExportConfig::open("/", d.path()),
            lease,
        ))
        .await
        .unwrap();
        let (m, s) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mds_cfg = || {
            let mut e = ExportConfig::open("/", m.path());
            e.pnfs = Some(PnfsConfig {
                servers: vec![DataServerAddr {
                    addr: ds.addr,
                    path: "/".into(),
                }],
                stripe_unit: UNIT,
                mirrors: 1,
            });
            let mut c = config(s.path(), e, lease);
            c.nfs4.grace = Some(Duration::from_secs(20));
            c
        };
        let mds = server::run::start(mds_cfg()).await.unwrap();
        let mut opts = options();
        opts.owner = Bytes::from_static(b"reclaimer");
        let c = Client::connect(mds.addr, opts.clone()).await.unwrap();
        let root = c.root_fh().await.unwrap();
        let o = c.open(&root, "f", OpenOpts::create(0o644)).await.unwrap();
        let (_, _, ff) = get_layout(&c, &o.fh, o.stateid, LayoutIoMode4::Rw, 0).await;
        let (_, c3, dfh) = data_server(&c, &ff.mirrors[0].data_servers[0]).await;
        c3.write(&dfh, 0, b("written, not committed"), StableHow::FileSync)
            .await
            .unwrap();
        drop(c);
        mds.stop().await;
        // Restarted: the same client reclaims.
        let mds = server::run::start(mds_cfg()).await.unwrap();
        let c = Client::connect(mds.addr, opts.clone().reclaiming())
            .await
            .unwrap();
        let reclaim = |fh: &NfsFh4, reclaim: bool| {
            vec![
                putfh(fh),
                NfsArgOp4::LayoutCommit(LayoutCommit4Args {
                    offset: 0,
                    length: u64::MAX,
                    reclaim,
                    stateid: StateId4::ANONYMOUS,
                    last_write_offset: Some(21),
                    time_modify: None,
                    layoutupdate: LayoutUpdate4 {
                        layout_type: LAYOUT4_FLEX_FILES,
                        body: Bytes::new(),
                    },
                }),
            ]
        };
        let r = c.compound(reclaim(&o.fh, true)).await.unwrap();
        let NfsResOp4::LayoutCommit(Res4::Ok(ok)) = &r[1] else {
            panic!("{:?}", r[1]);
        };
        assert_eq!(ok.newsize, Some(22));
        c.reclaim_complete().await.unwrap();
        assert_eq!(
            status(c.compound(reclaim(&o.fh, true)).await),
            NfsStat4::Nfs4errNoGrace
        );
        let o2 = c.open(&root, "f", OpenOpts::read()).await;
        let o2 = match o2 {
            Ok(o) => o,
            Err(_) => {
                // Still in grace for others: wait for it to end.
                let deadline = std::time::Instant::now() + Duration::from_secs(60);
                loop {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    if let Ok(o) = c.open(&root, "f", OpenOpts::read()).await {
                        break o;
                    }
                    assert!(std::time::Instant::now() < deadline, "grace never ended");
                }
            }
        };
        let (data, _) = c.read(&o2.fh, o2.stateid, 0, 100).await.unwrap();
        assert_eq!(&data[..], b"written, not committed");
        drop(mds);
    })
    .await;
}

/// With two mirrors and one data server down, a file created meanwhile
/// (no data file anywhere yet) gets a layout of the other mirror alone,
/// and can be written through the metadata server: the one server that
/// does not answer cannot hold a data file of it that the other lacks.
/// (Before, its fence generation could not be learnt while a server was
/// unreachable: LAYOUTGET answered NFS4ERR_LAYOUTTRYLATER and the metadata
/// server's own writes NFS4ERR_IO, so no new file could be written until
/// the server was back; the Linux client's writes failed with EIO.)
#[tokio::test]
async fn a_new_file_is_written_while_a_mirror_is_down() {
    within(async {
        let (mds, ds, mut links, _s, m, keep) = linked_cluster().await;
        let c = Client::connect(mds.addr, options()).await.unwrap();
        let root = c.root_fh().await.unwrap();
        let o = c.open(&root, "old", OpenOpts::create(0o644)).await.unwrap();
        c.write(&o.fh, o.stateid, 0, b("both up"), StableHow4::FileSync4)
            .await
            .unwrap();
        // Server 1 goes; the metadata server finds out writing "old".
        links[1].cut().await;
        c.write(&o.fh, o.stateid, 0, b("one down"), StableHow4::FileSync4)
            .await
            .unwrap();

        // A new file: a layout naming the live server alone.
        let n = c.open(&root, "new", OpenOpts::create(0o644)).await.unwrap();
        let (_, _, ff) = get_layout(&c, &n.fh, n.stateid, LayoutIoMode4::Rw, 0).await;
        assert_eq!(ff.mirrors.len(), 1, "the down server left out");
        let (addr, c3, dfh) = data_server(&c, &ff.mirrors[0].data_servers[0]).await;
        assert_eq!(addr, links[0].addr);
        c3.write(&dfh, 0, b("through the layout"), StableHow::FileSync)
            .await
            .unwrap();

        // Another, written through the metadata server.
        let n2 = c
            .open(&root, "new2", OpenOpts::create(0o644))
            .await
            .unwrap();
        c.write(
            &n2.fh,
            n2.stateid,
            0,
            b("through the MDS"),
            StableHow4::FileSync4,
        )
        .await
        .expect("a new file written while a mirror is down");
        let (data, _) = c.read(&n2.fh, n2.stateid, 0, 100).await.unwrap();
        assert_eq!(&data[..], b"through the MDS");
        let on_disk: Vec<Vec<u8>> = std::fs::read_dir(ds[0].1.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("ferrite-"))
            .map(|e| std::fs::read(e.path()).unwrap())
            .collect();
        assert!(on_disk.iter().any(|d| d == b"through the MDS"));
        assert!(on_disk.iter().any(|d| d == b"through the layout"));
        drop((mds, m, keep));
    })
    .await;
}
