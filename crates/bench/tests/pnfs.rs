//! `ferrite bench` over pNFS: an in-process Ferrite metadata server
//! striping over two in-process Ferrite data servers. The benchmark's
//! READs and WRITEs go to the data servers (the metadata server serves
//! none), its accounting shows them apart, recalled layouts are given
//! back, and a data server that cannot be reached is written around
//! through the metadata server.

use std::path::Path;
use std::time::Duration;

use bench::proxy::{DelayConfig, Proxy};
use bench::record::PhaseTable;
use bench::rng::Rng;
use bench::workload::{Overrides, Params, Workload};
use bench::{runner, RunResult};
use server::config::{ExportConfig, ServerConfig};
use server::instance::Nfs4Config;
use server::observe::stats::report::{build, OpReport, Report};
use server::pnfs::dataserver::DataServerAddr;
use server::pnfs::PnfsConfig;
use server::run::Running;
use tempfile::TempDir;

fn config(state: &Path, e: ExportConfig) -> ServerConfig {
    ServerConfig {
        nfs4: Nfs4Config {
            lease: Duration::from_secs(20),
            grace: Some(Duration::ZERO),
            recall_wait: Duration::from_secs(5),
            ..Default::default()
        },
        ..ServerConfig::new("127.0.0.1:0".parse().unwrap(), state.to_path_buf(), vec![e])
    }
}

struct Cluster {
    mds: Running,
    ds: Vec<Running>,
    /// With `via_proxies`: what stands between the clients (and the
    /// metadata server) and each data server.
    proxies: Vec<Option<Proxy>>,
    _dirs: Vec<TempDir>,
}

impl Cluster {
    /// Two data servers, striped `unit` bytes at a time with `mirrors`
    /// copies; the metadata server is told the proxies' addresses when
    /// `via_proxies`.
    async fn start(unit: u64, mirrors: usize, via_proxies: bool) -> Cluster {
        let mut ds = Vec::new();
        let mut dirs = Vec::new();
        let mut proxies = Vec::new();
        let mut addrs = Vec::new();
        for _ in 0..2 {
            let (d, s) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            let r = server::run::start(config(s.path(), ExportConfig::open("/", d.path())))
                .await
                .unwrap();
            if via_proxies {
                let p = Proxy::start(r.addr, DelayConfig::NONE).await.unwrap();
                addrs.push(p.addr);
                proxies.push(Some(p));
            } else {
                addrs.push(r.addr);
            }
            ds.push(r);
            dirs.push(d);
            dirs.push(s);
        }
        let (m, s) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut e = ExportConfig::open("/", m.path());
        e.pnfs = Some(PnfsConfig {
            servers: addrs
                .iter()
                .map(|a| DataServerAddr {
                    addr: *a,
                    path: "/".into(),
                })
                .collect(),
            stripe_unit: unit,
            mirrors,
        });
        let mds = server::run::start(config(s.path(), e)).await.unwrap();
        dirs.push(m);
        dirs.push(s);
        Cluster {
            mds,
            ds,
            proxies,
            _dirs: dirs,
        }
    }

    fn url(&self) -> String {
        format!("nfs4://{}/", self.mds.addr)
    }
}

fn op(r: &Report, program: &str, name: &str) -> u64 {
    r.programs
        .iter()
        .find(|p| p.name == program)
        .and_then(|p| p.ops.iter().find(|o| o.name == name))
        .map_or(0, |o: &OpReport| o.count)
}

/// Bounded work: a number of operations, never a time.
fn params(w: Workload, url: String, o: Overrides, ops: u64) -> Params {
    let mut p = Params::new(w, url, o);
    p.duration_s = 300.0;
    p.warmup_s = 0.05;
    p.ops = ops;
    p
}

fn phase<'a>(r: &'a RunResult, name: &str) -> &'a PhaseTable {
    &r.nfs[name]
}

/// Calls of `kind` in every phase of a run.
fn calls(r: &RunResult, kind: &str) -> u64 {
    r.nfs
        .values()
        .filter_map(|t| t.calls.get(kind))
        .map(|c| c.count)
        .sum()
}

const KIB: u64 = 1024;

/// Two files of 512 KiB striped 64 KiB at a time over two data servers
/// (so each file's stripes alternate between them): prepared, written
/// and read by four workers through layouts. The metadata server
/// serves no READ or WRITE; the data servers serve them all; the bytes
/// the benchmark wrote are what the metadata server reads back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_and_writes_go_to_the_data_servers() {
    let cl = Cluster::start(64 * KIB, 1, false).await;
    let o = Overrides {
        io_size: Some(64 * 1024),
        file_size: Some(512 * KIB),
        files: Some(2),
        ..Default::default()
    };
    runner::prepare(&params(Workload::Seqread, cl.url(), o, 0))
        .await
        .unwrap();
    for (w, ds_kind) in [
        (Workload::Seqwrite, "WRITE (DS)"),
        (Workload::Seqread, "READ (DS)"),
    ] {
        let mut p = params(w, cl.url(), o, 40);
        p.threads = 4;
        let res = runner::run(&p).await.unwrap();
        let r = &res.runs[0];
        assert!(r.completed, "{w}");
        assert_eq!(r.ops, 40, "{w}");
        assert_eq!(r.bytes, 40 * 64 * KIB, "{w}: every byte asked for");
        let m = phase(r, "measure");
        // One data server call per unit, none to the metadata server.
        assert_eq!(m.calls[ds_kind].count, r.ops, "{w}: {:?}", m.calls);
        assert_eq!(m.calls[ds_kind].errors, 0);
        assert!(m.calls[ds_kind].mean_rtt_us > 0.0);
        assert!(m.calls[ds_kind].bytes_sent > 0 && m.calls[ds_kind].bytes_recv > 0);
        assert_eq!(m.op("READ") + m.op("WRITE"), 0, "{w}: {:?}", m.ops);
        for k in ["READ (MDS fallback)", "WRITE (MDS fallback)"] {
            assert_eq!(calls(r, k), 0, "{w}: {k}");
        }
        // Layouts: got, devices looked up once each, given back.
        assert!(calls(r, "LAYOUTGET") >= 1, "{w}");
        assert_eq!(calls(r, "GETDEVICEINFO"), 2, "{w}: once per data server");
        assert!(phase(r, "teardown").op("LAYOUTRETURN") >= 1, "{w}");
        if w == Workload::Seqwrite {
            // Written UNSTABLE: committed to the data servers at close,
            // then LAYOUTCOMMIT.
            assert!(phase(r, "teardown").op("COMMIT (DS)") >= 2, "{w}");
            assert!(phase(r, "teardown").op("LAYOUTCOMMIT") >= 1, "{w}");
        }
    }
    // The metadata server served no READ or WRITE (the benchmark's file
    // set included); the data servers served them all.
    let mds = build(&cl.mds.nfs4);
    assert_eq!(op(&mds, "NFSv4", "READ"), 0);
    assert_eq!(op(&mds, "NFSv4", "WRITE"), 0);
    assert!(op(&mds, "NFSv4", "LAYOUTGET") >= 2);
    let (mut reads, mut writes) = (0, 0);
    for d in &cl.ds {
        let r = build(&d.nfs4);
        assert!(op(&r, "NFSv3", "WRITE") > 0, "both data servers written");
        reads += op(&r, "NFSv3", "READ");
        writes += op(&r, "NFSv3", "WRITE");
    }
    // prepare: 2 x 8 pieces; seqwrite: 40 and its warm-up.
    assert!(writes >= 16 + 40, "{writes}");
    assert!(reads >= 40, "{reads}");

    // What the last seqwrite left, read through the metadata server: each
    // worker wrote its stripe from its start with the run's data (the
    // seed's byte stream), and the size is the file's (LAYOUTCOMMIT).
    let c = client::Client::connect(cl.mds.addr, client::ClientOptions::new(&b"check"[..]))
        .await
        .unwrap();
    let root = c.root_fh().await.unwrap();
    let bench_dir = c.lookup(&root, "ferrite-bench").await.unwrap();
    let fh = c
        .lookup(&bench_dir, &format!("large-{}", 512 * KIB))
        .await
        .unwrap();
    let size = c
        .getattr(&fh, &[proto::nfs4::FATTR4_SIZE])
        .await
        .unwrap()
        .size;
    assert_eq!(size, Some(512 * KIB));
    let o = c
        .open(
            &bench_dir,
            &format!("large-{}", 512 * KIB),
            client::OpenOpts::read(),
        )
        .await
        .unwrap();
    let (got, _) = c.read(&o.fh, o.stateid, 0, 64 * 1024).await.unwrap();
    let mut want = Vec::new();
    let mut rng = Rng::new(1);
    while want.len() < 64 * 1024 {
        want.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    assert!(
        got[..] == want[..64 * 1024],
        "the first worker's first WRITE"
    );
}

/// `?pnfs=off`: everything through the metadata server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pnfs_off_goes_through_the_metadata_server() {
    let cl = Cluster::start(64 * KIB, 1, false).await;
    let o = Overrides {
        io_size: Some(64 * 1024),
        file_size: Some(256 * KIB),
        ..Default::default()
    };
    let url = format!("{}?pnfs=off", cl.url());
    runner::prepare(&params(Workload::Seqread, url.clone(), o, 0))
        .await
        .unwrap();
    let res = runner::run(&params(Workload::Seqread, url, o, 20))
        .await
        .unwrap();
    let r = &res.runs[0];
    assert_eq!(r.bytes, 20 * 64 * KIB);
    assert_eq!(phase(r, "measure").op("READ"), 20);
    assert_eq!(calls(r, "READ (DS)") + calls(r, "LAYOUTGET"), 0);
    let mds = build(&cl.mds.nfs4);
    assert!(op(&mds, "NFSv4", "READ") >= 20);
    assert_eq!(op(&mds, "NFSv4", "LAYOUTGET"), 0);
}

/// Another client's write through the metadata server recalls the
/// benchmark's layout: it is given back (committed first), the write
/// goes through, and the benchmark carries on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recalled_layout_is_given_back() {
    let cl = Cluster::start(64 * KIB, 1, false).await;
    let o = Overrides {
        io_size: Some(4096),
        file_size: Some(256 * KIB),
        ..Default::default()
    };
    runner::prepare(&params(Workload::Seqwrite, cl.url(), o, 0))
        .await
        .unwrap();
    // Enough work that the run is still going when the other client
    // writes (it waits for the benchmark's first layout).
    let mut p = params(Workload::Seqwrite, cl.url(), o, 20_000);
    p.threads = 2;
    let run = tokio::spawn(async move { runner::run(&p).await });
    // Once the benchmark holds layouts (its LAYOUTGETs on top of
    // prepare's), another client writes the file through the metadata
    // server.
    let before = op(&build(&cl.mds.nfs4), "NFSv4", "LAYOUTGET");
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while op(&build(&cl.mds.nfs4), "NFSv4", "LAYOUTGET") == before {
        assert!(std::time::Instant::now() < deadline, "no LAYOUTGET");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let c = client::Client::connect(cl.mds.addr, client::ClientOptions::new(&b"other"[..]))
        .await
        .unwrap();
    let root = c.root_fh().await.unwrap();
    let bench_dir = c.lookup(&root, "ferrite-bench").await.unwrap();
    let name = format!("large-{}", 256 * KIB);
    let f = c
        .open(&bench_dir, &name, client::OpenOpts::write())
        .await
        .unwrap();
    loop {
        match c
            .write(
                &f.fh,
                f.stateid,
                0,
                bytes::Bytes::from_static(b"other"),
                proto::nfs4::StableHow4::FileSync4,
            )
            .await
        {
            Ok(_) => break,
            Err(e) => {
                assert!(std::time::Instant::now() < deadline, "write: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    let res = run.await.unwrap().unwrap();
    let r = &res.runs[0];
    assert!(r.completed);
    assert_eq!(r.errors, 0);
    assert!(calls(r, "LAYOUTRETURN(recall)") >= 1, "{:?}", r.nfs);
    assert!(op(&build(&cl.mds.nfs4), "NFSv4", "LAYOUTRETURN") >= 1);
}

/// With two mirrors, one data server cut off: the writes to it fail,
/// are done through the metadata server instead (which writes the
/// other copy), the error is reported in the layout's return, and the
/// run completes without an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_server_cut_off_is_written_around() {
    let mut cl = Cluster::start(64 * KIB, 2, true).await;
    let o = Overrides {
        io_size: Some(64 * 1024),
        file_size: Some(256 * KIB),
        ..Default::default()
    };
    runner::prepare(&params(Workload::Seqwrite, cl.url(), o, 0))
        .await
        .unwrap();
    // Every connection through it drops, and nothing connects.
    cl.proxies[1] = None;
    let res = runner::run(&params(Workload::Seqwrite, cl.url(), o, 20))
        .await
        .unwrap();
    let r = &res.runs[0];
    assert!(r.completed);
    assert_eq!(r.errors, 0);
    assert_eq!(r.bytes, 20 * 64 * KIB);
    assert!(
        calls(r, "WRITE (MDS fallback)") >= 1,
        "a fallback: {:?}",
        r.nfs
    );
    assert!(calls(r, "LAYOUTRETURN") >= 1);
}
