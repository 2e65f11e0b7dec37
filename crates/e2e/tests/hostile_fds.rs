//! Running out of descriptors (issue 9): the listener must back off instead
//! of retrying accept in a loop, log rarely, and serve again once
//! descriptors are free. This lowers the process's RLIMIT_NOFILE, so it is
//! the only test in its binary.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use client::{Client, ClientOptions};
use proto::nfs4::{NFS_PROGRAM, NFS_V4};
use server::config::{ExportConfig, ServerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};
use xdr::{Encoder, Pack};

/// Warnings about failed accepts seen so far.
static ACCEPT_WARNINGS: AtomicUsize = AtomicUsize::new(0);

/// A subscriber that only counts "accept failed" warnings.
struct CountAcceptWarnings;

struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl Subscriber for CountAcceptWarnings {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        *m.level() <= Level::WARN
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, e: &Event<'_>) {
        let mut m = Message(String::new());
        e.record(&mut m);
        if m.0.contains("accept failed") {
            ACCEPT_WARNINGS.fetch_add(1, Ordering::SeqCst);
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

fn nofile() -> libc::rlimit {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only the struct passed.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) }, 0);
    r
}

fn set_nofile(r: &libc::rlimit) {
    // SAFETY: setrlimit reads only the struct passed.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, r) }, 0);
}

/// User plus system CPU time of this process.
fn cpu_time() -> Duration {
    // SAFETY: an all-zero rusage is valid; getrusage fills it.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes only the struct passed.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) }, 0);
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// The highest descriptor number open in this process.
fn highest_fd() -> i32 {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .max()
        .expect("some descriptor")
}

/// A NULL call (procedure 0) as one record.
fn null_record(xid: u32) -> Vec<u8> {
    let mut e = Encoder::new();
    e.u32(xid);
    e.u32(rpc::CALL);
    rpc::CallHeader {
        rpcvers: 2,
        prog: NFS_PROGRAM,
        vers: NFS_V4,
        proc_: 0,
        cred: rpc::OpaqueAuth::none(),
        verf: rpc::OpaqueAuth::none(),
    }
    .pack(&mut e);
    let body = e.to_bytes();
    let mut rec = (0x8000_0000u32 | body.len() as u32).to_be_bytes().to_vec();
    rec.extend_from_slice(&body);
    rec
}

async fn null_round_trip(s: &mut tokio::net::TcpStream, addr: SocketAddr) {
    s.write_all(&null_record(9)).await.expect("send NULL");
    let mut reply = [0u8; 28];
    // Milliseconds on an idle machine; generous for a busy one.
    let r = tokio::time::timeout(Duration::from_secs(30), s.read_exact(&mut reply)).await;
    assert!(
        matches!(r, Ok(Ok(_))),
        "a connection made while out of descriptors was not served once they were freed ({addr}): {r:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_descriptors_backs_off_and_recovers() {
    tracing::subscriber::set_global_default(CountAcceptWarnings).expect("subscriber");
    let result = tokio::time::timeout(Duration::from_secs(120), async {
        let export = tempfile::tempdir().expect("export dir");
        let state = tempfile::tempdir().expect("state dir");
        let running = server::run::start(ServerConfig::new(
            "127.0.0.1:0".parse().expect("address"),
            state.path().to_path_buf(),
            vec![ExportConfig::open("/", export.path())],
        ))
        .await
        .expect("server starts");
        let addr = running.addr;

        // Sockets made now, connected once no descriptor is left.
        let sockets: Vec<tokio::net::TcpSocket> = (0..4)
            .map(|_| tokio::net::TcpSocket::new_v4().expect("socket"))
            .collect();

        // No free descriptor below the limit: lower it to just above the
        // highest one open and fill the holes beneath.
        let saved = nofile();
        set_nofile(&libc::rlimit {
            rlim_cur: (highest_fd() + 1) as libc::rlim_t,
            rlim_max: saved.rlim_max,
        });
        let mut fillers: Vec<OwnedFd> = Vec::new();
        while let Ok(f) = std::fs::File::open("/dev/null") {
            fillers.push(f.into());
        }
        assert!(
            std::fs::File::open("/dev/null").is_err(),
            "descriptors exhausted"
        );

        let warned_before = ACCEPT_WARNINGS.load(Ordering::SeqCst);
        let mut conns = Vec::new();
        for s in sockets {
            conns.push(s.connect(addr).await.expect("handshake via the backlog"));
        }
        let cpu_before = cpu_time();
        let out_since = std::time::Instant::now();
        tokio::time::sleep(Duration::from_secs(3)).await;
        let cpu = cpu_time() - cpu_before;
        let warned = ACCEPT_WARNINGS.load(Ordering::SeqCst) - warned_before;
        // The bounds below are against the time really spent out of
        // descriptors, which a busy machine may stretch past the 3 s asked.
        let out_for = out_since.elapsed();

        // Free the descriptors before asserting anything.
        let highest_filler = fillers.last().map(|f| f.as_raw_fd());
        drop(fillers);
        set_nofile(&saved);
        eprintln!(
            "out of descriptors for {out_for:?}: {warned} accept warnings, {cpu:?} CPU \
             (fillers up to fd {highest_filler:?})"
        );
        // One warning per 10 s at most (the listener's rate limit), and
        // one more in case the time straddles two of its intervals.
        let allowed = 2 + out_for.as_secs() / 10;
        assert!(
            warned as u64 <= allowed,
            "{warned} accept warnings in {out_for:?}: not rate limited"
        );
        // Backing off, the listener wakes about once a second and the
        // process idles: a few milliseconds of CPU, however slow the
        // machine. A busy loop takes a whole core while it gets one; a
        // third of the time is far from both.
        assert!(
            cpu < out_for / 3,
            "{cpu:?} CPU in {out_for:?} while out of descriptors: busy loop"
        );

        // The waiting connections are served once descriptors are free.
        for c in &mut conns {
            null_round_trip(c, addr).await;
        }
        let c = Client::connect(addr, ClientOptions::new("hostile-fds"))
            .await
            .expect("a new client after recovery");
        c.root_fh().await.expect("PUTROOTFH");
        drop(c);
        drop(conns);
        running.stop().await;
    })
    .await;
    assert!(result.is_ok(), "test timed out");
}
