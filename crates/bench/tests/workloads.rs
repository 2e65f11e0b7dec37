//! Every workload against an in-process Ferrite server on loopback, with
//! exact operation accounting; the `dir:` backend; results round trips.

use std::time::Duration;

use bench::record::PhaseTable;
use bench::workload::{Overrides, Params, Workload};
use bench::{runner, Results};
use server::config::{ExportConfig, ServerConfig};
use server::instance::Nfs4Config;
use server::run::Running;
use tempfile::TempDir;

struct Srv {
    running: Running,
    _export: TempDir,
    _state: TempDir,
}

impl Srv {
    /// A server that grants no delegations: the tests count every
    /// compound, and a client returning a delegation adds one.
    async fn start() -> Srv {
        Self::start_with(false).await
    }

    async fn start_with(delegations: bool) -> Srv {
        let export = tempfile::tempdir().unwrap();
        let mut e = ExportConfig::open("/", export.path());
        e.delegations = delegations;
        let state = tempfile::tempdir().unwrap();
        let running = server::run::start(ServerConfig {
            nfs4: Nfs4Config {
                lease: Duration::from_secs(10),
                ..Default::default()
            },
            ..ServerConfig::new(
                "127.0.0.1:0".parse().unwrap(),
                state.path().to_path_buf(),
                vec![e],
            )
        })
        .await
        .unwrap();
        Srv {
            running,
            _export: export,
            _state: state,
        }
    }

    fn url(&self) -> String {
        format!("nfs4://{}/", self.running.addr)
    }
}

/// Operations a time-based run measures here: a fixed amount of work,
/// so that what a test checks does not depend on how much of it a busy
/// or slow machine gets done in some time.
const OPS: u64 = 60;

/// Bounded work, not time: time-based workloads measure [`OPS`]
/// operations, fixed-work ones do theirs, and `duration_s` is only a cap
/// that only a run stalled for minutes would reach. The warm-up lasts
/// 0.1 s and until every worker has done an operation of it (the runner
/// waits for that), so it is never empty either.
fn params(w: Workload, target: String, o: Overrides) -> Params {
    let mut p = Params::new(w, target, o);
    p.duration_s = 120.0;
    if w.time_based() {
        p.ops = OPS;
    }
    p.warmup_s = 0.1;
    p
}

fn phase<'a>(r: &'a bench::RunResult, name: &str) -> &'a PhaseTable {
    &r.nfs[name]
}

/// The operations every NFSv4 client of a run sends outside the measured
/// period no matter the workload: session setup (EXCHANGE_ID,
/// CREATE_SESSION, SEQUENCE+RECLAIM_COMPLETE), the target lookup
/// (SEQUENCE, PUTROOTFH, GETFH for "/") and, at teardown, DESTROY_SESSION
/// and DESTROY_CLIENTID.
fn check_session_ops(r: &bench::RunResult, clients: u64) {
    let s = phase(r, "setup");
    assert_eq!(s.op("EXCHANGE_ID"), clients);
    assert_eq!(s.op("CREATE_SESSION"), clients);
    assert_eq!(s.op("RECLAIM_COMPLETE"), clients);
    assert_eq!(s.op("PUTROOTFH"), clients);
    let t = phase(r, "teardown");
    assert_eq!(t.op("DESTROY_SESSION"), clients);
    assert_eq!(t.op("DESTROY_CLIENTID"), clients);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locked_read_accounting_is_exact() {
    let srv = Srv::start().await;
    let p = params(
        Workload::LockedRead,
        srv.url(),
        Overrides {
            files: Some(3),
            file_size: Some(4096),
            ..Default::default()
        },
    );
    // Not prepared yet: a clear error saying how to prepare.
    let err = runner::run(&p).await.unwrap_err().to_string();
    assert!(err.contains("ferrite bench prepare locked-read"), "{err}");
    assert!(err.contains("--files 3 --file-size 4096"), "{err}");
    runner::prepare(&p).await.unwrap();
    let res = runner::run(&p).await.unwrap();
    let r = &res.runs[0];
    assert!(r.completed);
    assert_eq!(r.ops, 30);
    assert_eq!(r.bytes, 30 * 4096);
    let m = phase(r, "measure");
    // 3 files x 10 x (OPEN, LOCK, READ, LOCKU, CLOSE), one COMPOUND each:
    // SEQUENCE+PUTFH+OPEN+GETFH, SEQUENCE+PUTFH+LOCK, SEQUENCE+PUTFH+READ,
    // SEQUENCE+PUTFH+LOCKU, SEQUENCE+PUTFH+CLOSE.
    for op in ["OPEN", "LOCK", "READ", "LOCKU", "CLOSE", "GETFH"] {
        assert_eq!(m.op(op), 30, "{op}");
    }
    assert_eq!(m.op("PUTFH"), 150);
    assert_eq!(m.op("SEQUENCE"), 150);
    assert_eq!(m.ops.len(), 8, "{:?}", m.ops);
    assert_eq!(m.calls["OPEN"].count, 30);
    assert!(m.calls["READ"].bytes_recv > 4096);
    assert!(m.calls["READ"].mean_rtt_us > 0.0);
    // Setup: session, root lookup, then LOOKUPs of ferrite-bench, the
    // marker, the set directory and d0 (SEQUENCE+PUTFH+LOOKUP+GETFH each).
    check_session_ops(r, 1);
    let s = phase(r, "setup");
    assert_eq!(s.op("LOOKUP"), 4);
    assert_eq!(s.op("PUTFH"), 4);
    assert_eq!(s.op("GETFH"), 5);
    assert_eq!(s.op("SEQUENCE"), 6);
    assert!(phase(r, "warmup").ops.is_empty());
    for step in ["locked-read", "open", "lock", "read", "unlock", "close"] {
        assert_eq!(r.latency[step].count, 30, "{step}");
    }
    assert!(r.latency["locked-read"].p99_us >= r.latency["locked-read"].p50_us);
    assert_eq!(r.recalls, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn randread_and_friends_count_every_io() {
    let srv = Srv::start().await;
    let o = Overrides {
        io_size: Some(4096),
        file_size: Some(1 << 20),
        ..Default::default()
    };
    runner::prepare(&params(Workload::Randread, srv.url(), o))
        .await
        .unwrap();
    for (w, op) in [
        (Workload::Randread, "READ"),
        (Workload::Randwrite, "WRITE"),
        (Workload::Seqread, "READ"),
        (Workload::Seqwrite, "WRITE"),
    ] {
        let mut p = params(w, srv.url(), o);
        p.threads = 2;
        p.runs = 2;
        let res = runner::run(&p).await.unwrap();
        assert_eq!(res.runs.len(), 2);
        for r in &res.runs {
            let m = phase(r, "measure");
            assert!(r.completed, "{w}");
            assert_eq!(r.ops, OPS, "{w}");
            assert_eq!(m.op(op), r.ops, "{w}");
            assert_eq!(m.op("SEQUENCE"), r.ops, "{w}");
            assert_eq!(m.op("PUTFH"), r.ops, "{w}");
            assert_eq!(m.ops.len(), 3, "{w}: {:?}", m.ops);
            assert_eq!(r.bytes, r.ops * 4096, "{w}");
            // Each worker opened the file in setup and closes it at teardown.
            assert_eq!(phase(r, "setup").op("OPEN"), 2);
            assert_eq!(phase(r, "teardown").op("CLOSE"), 2);
            // The runner's warm-up waits for an operation of each worker.
            assert!(phase(r, "warmup").op(op) >= 2, "{w}: warm-up ran");
            check_session_ops(r, 1);
            assert!(!r.series.is_empty());
            // OPS operations took some CPU, however fast.
            assert!(r.cpu.percent > 0.0);
            assert!(r.slot_wait.acquired >= r.ops);
        }
        let s = &res.summary["ops_per_s"];
        assert_eq!(s.n, 2);
        assert!(s.ci95.is_finite());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_smallfile_dirlist_and_deleg_recall() {
    let srv = Srv::start().await;

    // create: 2 clients x 2 threads, 5 files of 8 KiB per client in 4 KiB
    // writes: OPEN, WRITE, WRITE, COMMIT, CLOSE per file.
    let mut p = params(
        Workload::Create,
        srv.url(),
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
        (m.op("OPEN"), m.op("WRITE"), m.op("COMMIT"), m.op("CLOSE")),
        (10, 20, 10, 10)
    );
    assert_eq!(m.op("SEQUENCE"), 50);
    // Teardown removes the 10 files, the 2 client directories and the run
    // directory.
    assert_eq!(phase(r, "teardown").op("REMOVE"), 13);
    check_session_ops(r, 2);

    // smallfile-read: OPEN, READ, CLOSE per file.
    let o = Overrides {
        files: Some(20),
        file_size: Some(4096),
        ..Default::default()
    };
    let p = params(Workload::SmallfileRead, srv.url(), o);
    runner::prepare(&p).await.unwrap();
    let r = &runner::run(&p).await.unwrap().runs[0];
    let m = phase(r, "measure");
    assert_eq!(r.ops, OPS);
    for op in ["OPEN", "READ", "CLOSE", "GETFH"] {
        assert_eq!(m.op(op), r.ops, "{op}");
    }
    assert_eq!(m.op("SEQUENCE"), 3 * r.ops);

    // deleg-recall over the same file set: A holds 20 read opens, B opens
    // each read-write (measured) and closes it.
    let mut p = params(Workload::DelegRecall, srv.url(), o);
    p.clients = 2;
    let r = &runner::run(&p).await.unwrap().runs[0];
    assert_eq!(r.ops, 20);
    let m = phase(r, "measure");
    assert_eq!((m.op("OPEN"), m.op("CLOSE")), (20, 20));
    assert_eq!(phase(r, "setup").op("OPEN"), 20);
    assert_eq!(phase(r, "teardown").op("CLOSE"), 20);
    // This server grants no delegations.
    assert_eq!((r.recalls, r.delegations), (0, 0));
    assert_eq!(r.latency["conflict-open"].count, 20);
    // One that does (the default): A's opens hold read delegations, and
    // each of B's opens recalls one.
    let dsrv = Srv::start_with(true).await;
    runner::prepare(&params(Workload::SmallfileRead, dsrv.url(), o))
        .await
        .unwrap();
    let mut p = params(Workload::DelegRecall, dsrv.url(), o);
    p.clients = 2;
    let r = &runner::run(&p).await.unwrap().runs[0];
    assert_eq!(r.ops, 20);
    assert_eq!((r.recalls, r.delegations), (20, 20));
    assert_eq!(r.latency["conflict-open"].count, 20);

    // dirlist: 60 empty files, 12 leaves of 5 under 5-ary directories.
    let p = params(
        Workload::Dirlist,
        srv.url(),
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
    assert_eq!(m.op("SEQUENCE"), r.ops);
}

/// nhfsstone: every unit is one operation of the mix, each kind sends
/// what it should, `--rate` paces the run (never above the offered
/// load), and teardown leaves nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nhfsstone_runs_the_mix_at_the_offered_rate() {
    let srv = Srv::start().await;
    let o = Overrides {
        files: Some(30),
        ..Default::default()
    };
    let mut p = params(Workload::Nhfsstone, srv.url(), o);
    p.threads = 4;
    // Enough draws for the mix's shares below to be within ±5 standard
    // deviations of their weights.
    p.ops = 1000;
    runner::prepare(&p).await.unwrap();
    let r = &runner::run(&p).await.unwrap().runs[0];
    let m = phase(r, "measure");
    let kinds = [
        "getattr", "setattr", "lookup", "readlink", "read", "write", "create", "remove", "readdir",
        "fsstat",
    ];
    let per: Vec<u64> = kinds
        .iter()
        .map(|k| r.latency.get(*k).map_or(0, |l| l.count))
        .collect();
    assert_eq!(per.iter().sum::<u64>(), r.ops, "{kinds:?} {per:?}");
    assert_eq!(r.ops, 1000);
    // One call each, but a create is OPEN and CLOSE (and a remove with
    // nothing to remove is a create).
    let n = |k: &str| per[kinds.iter().position(|x| *x == k).unwrap()];
    assert_eq!(m.op("READLINK"), n("readlink"));
    assert_eq!(m.op("READ"), n("read"));
    assert_eq!(m.op("WRITE"), n("write"));
    assert_eq!(m.op("LOOKUP"), n("lookup"));
    assert_eq!(m.op("READDIR"), n("readdir"));
    assert_eq!(m.op("SETATTR"), n("setattr"));
    assert_eq!(m.op("GETATTR"), n("getattr") + n("fsstat"));
    assert_eq!(m.op("OPEN"), m.op("CLOSE"));
    assert_eq!(m.op("OPEN") + m.op("REMOVE"), n("create") + n("remove"));
    assert_eq!(m.op("SEQUENCE"), r.ops + m.op("CLOSE"));
    // The mix: lookups are about a third, reads about a fifth.
    let share = |k: &str| n(k) as f64 / r.ops as f64;
    assert!((0.24..0.44).contains(&share("lookup")), "{per:?}");
    assert!((0.14..0.30).contains(&share("read")), "{per:?}");
    // Offered 200 operations a second for 1 s: the run starts no more
    // than the 200 that fall due in that second, however late it is
    // (the generator's correctness, not the machine's speed: a stall
    // before or during the period must not make it send more), and at
    // least a quarter of them, a loose bound: a worker has 20 ms for each
    // of its operations (4 workers), which take well under 1 ms here, so
    // a machine ten times slower still starts all 200; it starts late
    // the ones a stall made it miss, so only a stall through most of the
    // second keeps it under 50.
    p.ops = 0;
    p.duration_s = 1.0;
    p.rate = 200.0;
    let r = &runner::run(&p).await.unwrap().runs[0];
    assert!(
        (50..=200).contains(&r.ops),
        "{} operations in 1 s at 200/s",
        r.ops
    );
    assert_eq!(r.errors, 0);
    let m = phase(r, "measure");
    assert_eq!(m.op("SEQUENCE"), r.ops + m.op("CLOSE"));
    // Teardown removed the runs' files and directories.
    let left: Vec<_> = std::fs::read_dir(srv._export.path().join("ferrite-bench"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with("create-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A mix of the operator's own, and a load-response curve over it: the
/// operations drawn are the mix's; no step achieves more than the load it
/// offers; the knee is one of the paced steps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_given_mix_and_its_load_response_curve() {
    let srv = Srv::start().await;
    let o = Overrides {
        files: Some(30),
        ..Default::default()
    };
    let mut p = params(Workload::Nhfsstone, srv.url(), o);
    p.threads = 4;
    // A load is offered for a time: the steps run for 0.6 s, not OPS.
    p.ops = 0;
    p.duration_s = 0.6;
    p.mix =
        Some(bench::workload::parse_mix("getattr=50, read=30,\nwrite=20 # no lookups").unwrap());
    p.check().unwrap();
    runner::prepare(&p).await.unwrap();
    let s = bench::sweep::run(&p, bench::sweep::Loads::Given(vec![100.0, 300.0]))
        .await
        .unwrap();
    assert_eq!(s.steps.len(), 2);
    for st in &s.steps {
        let r = &st.results.runs[0];
        for k in [
            "lookup", "readlink", "create", "remove", "readdir", "setattr", "fsstat",
        ] {
            assert!(!r.latency.contains_key(k), "{k} is not in the mix");
        }
        // The operations that fall due in the 0.6 s, no more, however
        // late the run (the generator's correctness); and the achieved
        // rate, over a measured period of at least 0.6 s, no more than
        // offered. Below: at least a quarter of them, a loose bound: a
        // worker has 13 ms or more for each of its operations, which take
        // well under 1 ms here, so a machine ten times slower still
        // starts them all (and starts late the ones a stall made it
        // miss).
        let due = (st.offered * p.duration_s).ceil();
        assert!(
            (due / 4.0..=due).contains(&(r.ops as f64)),
            "offered {} for {} s: {} operations",
            st.offered,
            p.duration_s,
            r.ops
        );
        assert!(
            st.achieved <= due / p.duration_s,
            "offered {} achieved {}",
            st.offered,
            st.achieved
        );
        assert_eq!(st.errors, 0);
        assert!(st.mean_us > 0.0 && st.p99_us >= st.p50_us);
    }
    assert!(matches!(s.knee, Some(0 | 1)));
    assert!(bench::sweep::render(&s).contains("<- knee"));
    let page = bench::report::sweep_html(&[("curve".into(), s)]);
    assert!(page.contains("<svg"));
    // Bad mixes are refused, with the reason.
    for (bad, why) in [
        ("getattr=50,read=30", "adding up to 100"),
        ("getattr=50,getattr=50", "twice"),
        ("chmod=100", "no operation"),
        ("read=x", "not a percentage"),
    ] {
        let e = bench::workload::parse_mix(bad).unwrap_err().to_string();
        assert!(e.contains(why), "{bad}: {e}");
    }
}

/// A delay sweep: the same workload (OPS reads) at each delay; one
/// request in flight at 5 ms each way completes fewer than a hundred a
/// second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delay_sweep_slows_with_the_delay() {
    let srv = Srv::start().await;
    let o = Overrides {
        file_size: Some(1 << 20),
        ..Default::default()
    };
    let p = params(Workload::Randread, srv.url(), o);
    runner::prepare(&p).await.unwrap();
    let s = bench::sweep::run_delays(&p, &[0.0, 5.0]).await.unwrap();
    assert_eq!(s.axis, bench::sweep::Axis::Delay);
    let (fast, slow) = (&s.steps[0], &s.steps[1]);
    assert_eq!((fast.delay_ms, slow.delay_ms), (0.0, 5.0));
    for st in [fast, slow] {
        assert_eq!(st.results.runs[0].ops, OPS);
    }
    // Bounds the delay sets whatever the machine: each delayed read waits
    // at least 10 ms (5 ms each way), one at a time, so its median and
    // mean are at least that and at most 100 complete a second.
    assert!(
        slow.achieved < 100.0 && slow.mean_us > 10_000.0 && slow.p50_us >= 10_000.0,
        "{} {} {}",
        slow.achieved,
        slow.mean_us,
        slow.p50_us
    );
    // The undelayed reads' median is below those 10 ms: a loopback read
    // takes well under 1 ms, so a machine ten times slower still meets
    // it, and a stall would have to hold up most of the reads to break
    // it (a throughput comparison would break with one long stall).
    assert!(fast.p50_us < slow.p50_us, "{} {}", fast.p50_us, slow.p50_us);
    let t = bench::sweep::render(&s);
    assert!(
        t.contains("by one-way delay") && t.contains("of the throughput at 0 ms"),
        "{t}"
    );
    let page = bench::report::sweep_html(&[("delays".into(), s)]);
    assert!(page.contains("one-way delay, ms"));
}

/// The personalities run their flows (each operation recorded under its
/// name: of OPS operations over 3 workers, one worker does at least 20,
/// more than a flow's length), twice over the same set (a second run
/// finds what the first created and deleted), and leave the set
/// consistent: every file is the size the workers wrote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fileserver_webserver_and_varmail_personalities() {
    let srv = Srv::start().await;
    for (w, ops) in [
        (
            Workload::Fileserver,
            &["create-write", "append", "read", "delete", "stat"][..],
        ),
        (Workload::Webserver, &["read-file", "append-log"][..]),
        (
            Workload::Varmail,
            &["delete", "create-append-fsync", "read-append-fsync", "read"][..],
        ),
    ] {
        let o = Overrides {
            files: Some(40),
            file_size: Some(20_000),
            io_size: Some(8192),
            ..Default::default()
        };
        let mut p = params(w, srv.url(), o);
        p.threads = 3;
        runner::prepare(&p).await.unwrap();
        for _ in 0..2 {
            let r = &runner::run(&p).await.unwrap().runs[0];
            // OPS operations, not as many as fit in some time: a flow
            // operation always finds its file (a worker's creates keep
            // up with its deletes), so each records one.
            assert!(
                r.completed && r.ops == OPS && r.errors == 0,
                "{w}: {} ops, {} errors",
                r.ops,
                r.errors
            );
            for op in ops {
                assert!(
                    r.latency.get(*op).is_some_and(|l| l.count > 0),
                    "{w}: no {op} in {:?}",
                    r.latency.keys().collect::<Vec<_>>()
                );
            }
        }
        let set = srv
            ._export
            .path()
            .join("ferrite-bench")
            .join(format!("{}-40x20000", w));
        // Filebench's directory width: 20 (fileserver, webserver), or
        // one directory (varmail).
        let dirs = std::fs::read_dir(&set).unwrap().count();
        assert_eq!(dirs, if w == Workload::Varmail { 1 } else { 2 }, "{w}");
        let files: Vec<u64> = std::fs::read_dir(set.join("d0"))
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .collect();
        assert!(!files.is_empty(), "{w}: every file deleted");
        if w == Workload::Webserver {
            assert!(files.iter().all(|&n| n == 20_000), "{w}: {files:?}");
        } else {
            // fileserver: 10,000 to 30,000 written, plus 16 KiB appends;
            // varmail: 16 KiB, plus appends.
            assert!(files.iter().all(|&n| n >= 10_000), "{w}: {files:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dir_target_runs_locked_read_through_posix() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("dir:{}", dir.path().display());
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
    assert!(dir
        .path()
        .join("ferrite-bench/files-3x4096/d0/f2")
        .is_file());
    let r = &runner::run(&p).await.unwrap().runs[0];
    let m = phase(r, "measure");
    assert_eq!(r.ops, 30);
    for op in [
        "open",
        "fcntl(F_SETLKW)",
        "pread",
        "fcntl(F_UNLCK)",
        "close",
    ] {
        assert_eq!(m.op(op), 30, "{op}");
    }
    assert_eq!(m.ops.len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nfs3_errors_name_the_missing_service_and_results_round_trip() {
    // Nothing listens on these ports (a listener bound and dropped).
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let p = params(
        Workload::Randread,
        format!("nfs3://127.0.0.1:{port}/x?mountport={port}"),
        Overrides::default(),
    );
    let e = runner::run(&p).await.unwrap_err().to_string();
    assert!(e.contains("connecting to nfs3://127.0.0.1"), "{e}");
    // No mountport and no portmapper answering on 111, or one without
    // this MOUNT: the error says to give the port. A portmapper that
    // does know a MOUNT (another NFS server running as root on this
    // host) sends the client there, and that server has no "/x".
    let p = params(
        Workload::LockedRead,
        format!("nfs3://127.0.0.1:{port}/x"),
        Overrides::default(),
    );
    let e = runner::run(&p).await.unwrap_err().to_string();
    let portmapper = std::net::TcpStream::connect("127.0.0.1:111").is_ok();
    assert!(
        e.contains("?mountport=N") || (portmapper && e.contains("MNT /x")),
        "{e}"
    );

    let srv = Srv::start().await;
    let o = Overrides {
        files: Some(4),
        file_size: Some(1000),
        ..Default::default()
    };
    let mut p = params(Workload::SmallfileRead, srv.url(), o);
    p.runs = 2;
    runner::prepare(&p).await.unwrap();
    let a = runner::run(&p).await.unwrap();
    let json = a.to_json().unwrap();
    assert!(json.contains("\"schema\": \"ferrite-bench/1\""));
    let back = Results::from_json(&json).unwrap();
    assert_eq!(back.runs.len(), 2);
    assert_eq!(back.params, a.params);
    let csv = a.to_csv();
    assert!(csv.starts_with("run,section,name,field,value\n"));
    assert!(csv.contains(",ops.measure,OPEN,count,"));
    assert!(a.render_summary().contains("ops/s"));
    let cmp = bench::compare::compare(&a, &back);
    assert!(cmp.contains("ops_per_s"));
    // smallfile-read: OPEN, READ, CLOSE per file on both sides.
    assert!(cmp.contains("operations per file"), "{cmp}");
    assert!(
        cmp.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["OPEN", "1.000", "1.000"]),
        "{cmp}"
    );
    let html = bench::report::html(&[("a.json".into(), a.clone()), ("b.json".into(), back)]);
    assert!(html.contains("<svg") && html.contains("Latency CDF"));
}
