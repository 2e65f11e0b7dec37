//! The `nfs3://` backend against a real NFSv3 + MOUNT + NLM server
//! (NFS-Ganesha, started by `tools/ganesha.sh`), with exact operation
//! accounting. Ignored unless asked for (`-- --ignored`, as
//! tests/peer-ganesha.sh does); it then needs `FERRITE_BENCH_NFS3`, the
//! target URL, e.g. `nfs3://127.0.0.1:12050/?mountport=12048&nlmport=12047`
//! (what `tools/ganesha.sh start` prints; tests/peer-ganesha.sh sets it).

use bench::record::PhaseTable;
use bench::workload::{Overrides, Params, Workload};
use bench::{runner, RunResult};

fn target() -> String {
    match std::env::var("FERRITE_BENCH_NFS3") {
        Ok(u) if !u.is_empty() => u,
        _ => panic!(
            "FERRITE_BENCH_NFS3=nfs3://HOST:PORT/PATH?mountport=N&nlmport=M is not set: this \
             test needs a live NFSv3 server (tests/peer-ganesha.sh starts NFS-Ganesha and runs it)"
        ),
    }
}

/// Operations a time-based run measures: a fixed amount of work, not
/// what a busy machine gets done in some time.
const OPS: u64 = 60;

fn params(w: Workload, target: String, o: Overrides) -> Params {
    let mut p = Params::new(w, target, o);
    // Every run must finish its work (a first NLM LOCK waits for the
    // server's SM_MON to its statd): the duration is only a cap; time-based
    // workloads measure OPS operations.
    p.duration_s = 120.0;
    if w.time_based() {
        p.ops = OPS;
    }
    p.warmup_s = 0.1;
    p
}

fn phase<'a>(r: &'a RunResult, name: &str) -> &'a PhaseTable {
    &r.nfs[name]
}

/// MNT at setup, UMNT at teardown, once per client.
fn check_mount_ops(r: &RunResult, clients: u64) {
    assert_eq!(phase(r, "setup").op("MNT"), clients);
    assert_eq!(phase(r, "teardown").op("UMNT"), clients);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs NFS-Ganesha: run by tests/peer-ganesha.sh"]
async fn locked_read_over_nfs3_and_nlm_is_exact() {
    let url = target();
    let p = params(
        Workload::LockedRead,
        url,
        Overrides {
            files: Some(3),
            file_size: Some(4096),
            ..Default::default()
        },
    );
    runner::prepare(&p).await.unwrap();
    let res = runner::run(&p).await.unwrap();
    let r = &res.runs[0];
    assert!(r.completed);
    assert_eq!(r.ops, 30);
    assert_eq!(r.bytes, 30 * 4096);
    let m = phase(r, "measure");
    // 3 files x 10 x (LOOKUP + ACCESS, NLM4_LOCK, READ, NLM4_UNLOCK);
    // closing sends nothing.
    for op in ["LOOKUP", "ACCESS", "NLM4_LOCK", "READ", "NLM4_UNLOCK"] {
        assert_eq!(m.op(op), 30, "{op}");
        assert_eq!(m.calls[op].count, 30, "{op}");
        assert_eq!(m.calls[op].errors, 0, "{op}");
    }
    assert_eq!(m.ops.len(), 5, "{:?}", m.ops);
    assert!(m.calls["READ"].bytes_recv > 30 * 4096);
    assert!(m.calls["NLM4_LOCK"].mean_rtt_us > 0.0);
    // Setup: MNT, then LOOKUPs of ferrite-bench, the marker, the set
    // directory and d0.
    check_mount_ops(r, 1);
    assert_eq!(phase(r, "setup").op("LOOKUP"), 4);
    for step in ["locked-read", "open", "lock", "read", "unlock", "close"] {
        assert_eq!(r.latency[step].count, 30, "{step}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs NFS-Ganesha: run by tests/peer-ganesha.sh"]
async fn io_create_smallfile_and_dirlist_over_nfs3() {
    let url = target();
    let o = Overrides {
        io_size: Some(4096),
        file_size: Some(1 << 20),
        ..Default::default()
    };
    runner::prepare(&params(Workload::Randread, url.clone(), o))
        .await
        .unwrap();
    for (w, op) in [
        (Workload::Randread, "READ"),
        (Workload::Randwrite, "WRITE"),
        (Workload::Seqread, "READ"),
        (Workload::Seqwrite, "WRITE"),
    ] {
        let mut p = params(w, url.clone(), o);
        p.threads = 2;
        let r = &runner::run(&p).await.unwrap().runs[0];
        let m = phase(r, "measure");
        assert!(r.completed, "{w}");
        assert_eq!(r.ops, OPS, "{w}");
        assert_eq!(m.op(op), r.ops, "{w}");
        assert_eq!(m.ops.len(), 1, "{w}: {:?}", m.ops);
        assert_eq!(r.bytes, r.ops * 4096, "{w}");
        // Each worker "opened" the file in setup: LOOKUP + ACCESS.
        assert_eq!(phase(r, "setup").op("ACCESS"), 2, "{w}");
        check_mount_ops(r, 1);
    }

    // create: 2 clients x 2 threads, 5 files of 8 KiB per client in 4 KiB
    // writes: CREATE, WRITE, WRITE, COMMIT per file; teardown REMOVEs the
    // files and RMDIRs the client directories and the run directory.
    let mut p = params(
        Workload::Create,
        url.clone(),
        Overrides {
            clients: Some(2),
            files: Some(5),
            file_size: Some(8192),
            io_size: Some(4096),
        },
    );
    p.threads = 2;
    let r = &runner::run(&p).await.unwrap().runs[0];
    let m = phase(r, "measure");
    assert_eq!(r.ops, 10);
    assert_eq!(
        (m.op("CREATE"), m.op("WRITE"), m.op("COMMIT")),
        (10, 20, 10)
    );
    assert_eq!(m.ops.len(), 3, "{:?}", m.ops);
    let t = phase(r, "teardown");
    assert_eq!((t.op("REMOVE"), t.op("RMDIR")), (10, 3));
    check_mount_ops(r, 2);

    // smallfile-read: LOOKUP, ACCESS, READ per file.
    let o = Overrides {
        files: Some(20),
        file_size: Some(4096),
        ..Default::default()
    };
    let p = params(Workload::SmallfileRead, url.clone(), o);
    runner::prepare(&p).await.unwrap();
    let r = &runner::run(&p).await.unwrap().runs[0];
    let m = phase(r, "measure");
    assert_eq!(r.ops, OPS);
    for op in ["LOOKUP", "ACCESS", "READ"] {
        assert_eq!(m.op(op), r.ops, "{op}");
    }

    // dirlist: one READDIR per directory of a 60-file tree (each fits in
    // one 32 KiB reply).
    let p = params(
        Workload::Dirlist,
        url,
        Overrides {
            files: Some(60),
            ..Default::default()
        },
    );
    runner::prepare(&p).await.unwrap();
    let r = &runner::run(&p).await.unwrap().runs[0];
    let m = phase(r, "measure");
    assert_eq!(r.ops, OPS);
    assert_eq!(m.op("READDIR"), r.ops);
    assert_eq!(m.ops.len(), 1, "{:?}", m.ops);
}
