//! Live statistics (issue 14): what `ferrite stat` reads over the
//! administration socket, and the Prometheus endpoint, against the
//! operations a test client sent.

mod common;

use std::os::unix::fs::PermissionsExt;

use bytes::Bytes;
use client::OpenOpts;
use common::*;
use proto::nfs4::*;
use server::observe::stats::report::{OpReport, Report};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn report(srv: &TestServer) -> Report {
    let path = srv.state.path().join(server::observe::admin::SOCKET);
    let raw = server::observe::admin::request(&path, "stat")
        .await
        .expect("admin socket");
    serde_json::from_str(&raw).unwrap_or_else(|e| panic!("{e}: {raw}"))
}

fn op(r: &Report, program: &str, name: &str) -> OpReport {
    r.programs
        .iter()
        .find(|p| p.name == program)
        .and_then(|p| p.ops.iter().find(|o| o.name == name))
        .cloned()
        .unwrap_or_default()
}

async fn scrape(srv: &TestServer, target: &str) -> (String, String) {
    let at = srv
        .running
        .as_ref()
        .unwrap()
        .metrics
        .expect("metrics served");
    let mut s = tokio::net::TcpStream::connect(at).await.unwrap();
    s.write_all(format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    let (head, body) = out.split_once("\r\n\r\n").expect("an HTTP reply");
    (head.to_string(), body.to_string())
}

fn sample<'a>(
    scrape: &'a prometheus_parse::Scrape,
    metric: &str,
    labels: &[(&str, &str)],
) -> Option<&'a prometheus_parse::Value> {
    scrape
        .samples
        .iter()
        .find(|s| s.metric == metric && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| &s.value)
}

/// Every READ, LOOKUP and WRITE the client sends is counted once, with
/// its status, bytes and latency, under its export and its client; the
/// Prometheus text says the same.
#[tokio::test]
async fn operations_sent_are_counted() {
    within(async {
        let srv = TestServer::start().await;
        put_file(&srv, "f", &[7u8; 10_000]);
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let o = c.open(&root, "f", OpenOpts::read()).await.unwrap();
        let before = report(&srv).await;
        for i in 0..37u64 {
            let (data, _) = c.read(&o.fh, o.stateid, i * 100, 1000).await.unwrap();
            assert_eq!(data.len(), 1000);
        }
        for _ in 0..5 {
            assert!(c.lookup(&root, "missing").await.is_err());
        }
        let w = c.open(&root, "g", OpenOpts::create(0o644)).await.unwrap();
        c.write(
            &w.fh,
            w.stateid,
            0,
            Bytes::from(vec![1u8; 3000]),
            StableHow4::Unstable4,
        )
        .await
        .unwrap();
        let after = report(&srv).await;

        let read = op(&after, "NFSv4", "READ").since(&op(&before, "NFSv4", "READ"));
        assert_eq!((read.count, read.errors), (37, 0));
        // Each result: the operation, status, eof, the data's length and
        // 1000 bytes.
        assert_eq!(read.bytes_out, 37 * (4 + 4 + 4 + 4 + 1000));
        assert!(read.quantile_us(0.5).unwrap() > 0.0);
        assert!(read.quantile_us(0.99).unwrap() >= read.quantile_us(0.5).unwrap());
        let lookup = op(&after, "NFSv4", "LOOKUP").since(&op(&before, "NFSv4", "LOOKUP"));
        assert_eq!((lookup.count, lookup.errors), (5, 5));
        assert_eq!(lookup.statuses, vec![("NFS4ERR_NOENT".to_string(), 5)]);
        let write = op(&after, "NFSv4", "WRITE").since(&op(&before, "NFSv4", "WRITE"));
        assert_eq!(write.count, 1);
        assert!(write.bytes_in >= 3000);
        // COMPOUNDs: 37 + 5 + OPEN's + WRITE's.
        let compounds = after.compounds.since(&before.compounds);
        assert!(compounds.count >= 44, "{}", compounds.count);
        assert_eq!(compounds.errors, 5);

        let e = |r: &Report| r.exports[0].clone();
        assert_eq!(e(&after).path, "/");
        assert_eq!(e(&after).bytes_read - e(&before).bytes_read, read.bytes_out);
        assert!(e(&after).bytes_written - e(&before).bytes_written >= 3000);
        // The create of "g" was made durable before OPEN answered, by a
        // sync of its own or one it shared.
        let changes = e(&after).metadata_changes - e(&before).metadata_changes;
        let syncs = e(&after).metadata_syncs - e(&before).metadata_syncs;
        assert!(
            changes >= 1 && syncs >= 1 && syncs <= changes,
            "{changes} changes, {syncs} syncs"
        );
        assert_eq!(after.clients.len(), 1);
        let cl = &after.clients[0];
        assert_eq!((cl.version.as_str(), cl.sessions, cl.opens), ("4.1", 1, 2));
        assert!(cl.address.as_deref().unwrap().starts_with("127.0.0.1:"));
        assert!(after.process.open_fds > 0 && after.process.threads > 0);

        // The same over HTTP, in the Prometheus text format.
        let now = report(&srv).await;
        let (head, body) = scrape(&srv, "/metrics").await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(head.contains("text/plain; version=0.0.4"), "{head}");
        let s = prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).unwrap();
        let read_now = op(&now, "NFSv4", "READ");
        let labels = [("program", "NFSv4"), ("op", "READ")];
        match sample(&s, "ferrite_operations_total", &labels) {
            Some(prometheus_parse::Value::Counter(n)) => assert_eq!(*n as u64, read_now.count),
            other => panic!("READ count: {other:?}"),
        }
        match sample(&s, "ferrite_operation_duration_seconds", &labels) {
            Some(prometheus_parse::Value::Histogram(b)) => {
                let inf = b.iter().find(|h| h.less_than.is_infinite()).expect("+Inf");
                assert_eq!(inf.count as u64, read_now.count);
                assert!(b.windows(2).all(|w| w[0].count <= w[1].count), "cumulative");
            }
            other => panic!("READ latency: {other:?}"),
        }
        match sample(
            &s,
            "ferrite_operation_errors_total",
            &[("op", "LOOKUP"), ("status", "NFS4ERR_NOENT")],
        ) {
            Some(prometheus_parse::Value::Counter(n)) => assert!(*n >= 5.0),
            other => panic!("LOOKUP errors: {other:?}"),
        }
        for m in [
            "process_resident_memory_bytes",
            "process_open_fds",
            "process_threads",
        ] {
            match sample(&s, m, &[]) {
                Some(prometheus_parse::Value::Gauge(v)) => assert!(*v > 0.0, "{m}"),
                other => panic!("{m}: {other:?}"),
            }
        }
        assert!(matches!(
            sample(&s, "ferrite_export_read_bytes_total", &[("export", "/")]),
            Some(prometheus_parse::Value::Counter(n)) if *n as u64 == now.exports[0].bytes_read
        ));
        let (head, _) = scrape(&srv, "/other").await;
        assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    })
    .await
}

/// NFSv3 procedures and MOUNT are counted by procedure, with NFSv3's
/// statuses, and their host is listed.
#[tokio::test]
async fn nfsv3_procedures_are_counted() {
    within(async {
        let srv = TestServer::start().await;
        put_file(&srv, "f", b"hello");
        let c = client::v3::Client::connect(srv.addr, srv.addr, "/", root_auth())
            .await
            .unwrap();
        let root = c.root().clone();
        let f = c.lookup(&root, "f").await.unwrap().object;
        for _ in 0..12 {
            assert_eq!(&c.read(&f, 0, 5).await.unwrap().data[..], b"hello");
        }
        for _ in 0..3 {
            assert!(c.lookup(&root, "nothing").await.is_err());
        }
        let r = report(&srv).await;
        let read = op(&r, "NFSv3", "READ");
        assert_eq!((read.count, read.errors), (12, 0));
        let lookup = op(&r, "NFSv3", "LOOKUP");
        assert_eq!((lookup.count, lookup.errors), (4, 3));
        assert_eq!(lookup.statuses, vec![("NFS3ERR_NOENT".to_string(), 3)]);
        assert_eq!(op(&r, "MOUNT", "MNT").count, 1);
        let host = r
            .hosts
            .iter()
            .find(|h| h.address == "127.0.0.1")
            .expect("host");
        assert!(host.programs.contains(&"NFSv3".to_string()));
        assert!(host.programs.contains(&"MOUNT".to_string()));
        assert!(host.calls >= 17);
    })
    .await
}

/// The socket is the owner's alone, and a request it does not know is
/// answered with an error, not silence.
#[tokio::test]
async fn the_administration_socket_is_private_and_answers_errors() {
    within(async {
        let srv = TestServer::start().await;
        let path = srv.state.path().join(server::observe::admin::SOCKET);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // What is exported to whom (`ferrite exports`).
        let r = report(&srv).await;
        assert_eq!(r.exports.len(), 1);
        let e = &r.exports[0];
        assert_eq!((e.id, e.path.as_str()), (0, "/"));
        assert_eq!(e.dir, srv.export.path().display().to_string());
        assert_eq!(
            e.clients,
            vec!["*(rw,no_root_squash,anonuid=65534,anongid=65534,insecure)".to_string()]
        );
        assert_eq!(e.sec, vec!["sys".to_string(), "none".to_string()]);
        let raw = server::observe::admin::request(&path, "reboot")
            .await
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&raw).unwrap();
        assert!(
            v["error"].as_str().unwrap().contains("unknown command"),
            "{raw}"
        );
    })
    .await
}

/// The load model is fed every second: once it has seen operations, every
/// resource the server depends on has a utilization, and the same figures
/// are in the metrics.
#[tokio::test]
async fn the_load_model_reports_each_resource() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        // Operations until the model has taken samples with some in them:
        // a second or two, however many operations that is on this
        // machine, and however late its sampling runs.
        let end = std::time::Instant::now() + PATIENCE;
        let r = loop {
            for _ in 0..50 {
                c.getattr(&root, &[FATTR4_SIZE]).await.unwrap();
            }
            let r = report(&srv).await;
            let sampled = r.load.resources.iter().any(|x| x.name == "cpu")
                && r.load.ops_per_s[0] > 0.0
                && r.load.verdict != "idle";
            if sampled || std::time::Instant::now() >= end {
                break r;
            }
        };
        let names: Vec<&str> = r.load.resources.iter().map(|x| x.name.as_str()).collect();
        assert!(
            names.contains(&"cpu") && names.contains(&"pool"),
            "{names:?}"
        );
        assert!(names.contains(&"network"), "{names:?}");
        let cpu = r.load.resources.iter().find(|x| x.name == "cpu").unwrap();
        let u = cpu.utilization.unwrap();
        assert!(u.iter().all(|v| (0.0..=1.0).contains(v)), "{u:?}");
        assert!(r.load.ops_per_s[0] > 0.0, "{:?}", r.load);
        assert!(
            !r.load.verdict.is_empty() && r.load.verdict != "idle",
            "{}",
            r.load.verdict
        );
        let (_, body) = scrape(&srv, "/metrics").await;
        let s = prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).unwrap();
        assert!(matches!(
            sample(&s, "ferrite_load_utilization", &[("resource", "cpu"), ("window", "5s")]),
            Some(prometheus_parse::Value::Gauge(v)) if (0.0..=1.0).contains(v)
        ));
    })
    .await
}
