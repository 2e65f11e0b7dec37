//! Shared harness: a server over a temporary export, clients, helpers.
#![allow(dead_code)]

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use client::{Client, ClientOptions};
use proto::nfs4::*;
use server::config::{ExportConfig, ServerConfig};
use server::instance::Nfs4Config;
use server::run::Running;
use tempfile::TempDir;

/// A running server over a temporary export directory.
pub struct TestServer {
    pub running: Option<Running>,
    pub addr: SocketAddr,
    pub export: TempDir,
    pub state: TempDir,
    /// The grace period after a restart.
    pub grace: Duration,
    /// The export's write log (in the state directory), if it has one.
    pub log: bool,
    /// Read delegations granted, and the most held at once.
    pub delegations: bool,
    pub max_delegations: usize,
    /// MOUNT, NLM, NSM and port mapper settings.
    pub aux: server::config::AuxConfig,
    /// Byte-range locks shared with local processes (the default).
    pub shared_locks: bool,
}

#[allow(clippy::too_many_arguments)]
fn config(
    export: &TempDir,
    state: &TempDir,
    grace: Duration,
    log: bool,
    delegations: bool,
    max_delegations: usize,
    aux: &server::config::AuxConfig,
    shared_locks: bool,
) -> ServerConfig {
    let mut e = ExportConfig::open("/", export.path());
    e.delegations = delegations;
    e.shared_locks = shared_locks;
    if log {
        e.log = Some(server::stable::writelog::LogConfig {
            dir: state.path().join("log"),
            capacity_bytes: 16 << 20,
        });
    }
    ServerConfig {
        nfs4: Nfs4Config {
            lease: Duration::from_secs(10),
            grace: Some(grace),
            max_delegations,
            // A request conflicting with a delegation waits this long for
            // its return before NFS4ERR_DELAY: the recall's round trip
            // takes milliseconds, but the default 300 ms is too little for
            // a busy machine, and tests expect the return to be waited
            // for. Kept well under the lease (10 s), so that a delegation
            // never returned is answered NFS4ERR_DELAY before it is
            // revoked (delegations.rs).
            recall_wait: Duration::from_secs(3),
            ..Default::default()
        },
        aux: aux.clone(),
        admin: server::config::AdminConfig {
            socket: Some(state.path().join(server::observe::admin::SOCKET)),
            metrics: Some("127.0.0.1:0".parse().expect("address")),
            link_bytes_per_s: None,
        },
        ..ServerConfig::new(
            "127.0.0.1:0".parse().expect("address"),
            state.path().to_path_buf(),
            vec![e],
        )
    }
}

impl TestServer {
    /// A server without a grace period: most tests' restarts are not
    /// about reclaims (tests/recovery.rs is).
    pub async fn start() -> TestServer {
        Self::start_with_grace(Duration::ZERO).await
    }

    /// A server with a grace period of `grace` after each restart.
    pub async fn start_with_grace(grace: Duration) -> TestServer {
        Self::start_as(grace, false).await
    }

    /// A server whose byte-range locks are its own (`shared_locks =
    /// false`): local processes' locks do not see them.
    pub async fn start_unshared_locks() -> TestServer {
        let mut s = Self::start().await;
        s.shared_locks = false;
        s.restart().await;
        s
    }

    /// A server whose export has a write log.
    pub async fn start_logged() -> TestServer {
        Self::start_as(Duration::ZERO, true).await
    }

    /// A server granting read delegations.
    pub async fn start_delegating() -> TestServer {
        Self::start_full(Duration::ZERO, false, Some(100_000)).await
    }

    /// A server granting read delegations, with a grace period of `grace`
    /// after each restart.
    pub async fn start_delegating_with_grace(grace: Duration) -> TestServer {
        Self::start_full(grace, false, Some(100_000)).await
    }

    /// A server granting at most `max` read delegations at once.
    pub async fn start_delegating_at_most(max: usize) -> TestServer {
        Self::start_full(Duration::ZERO, false, Some(max)).await
    }

    async fn start_as(grace: Duration, log: bool) -> TestServer {
        Self::start_full(grace, log, None).await
    }

    /// A server with these MOUNT, NLM, NSM and port mapper settings and a
    /// grace period of `grace` after each restart.
    pub async fn start_aux(grace: Duration, aux: server::config::AuxConfig) -> TestServer {
        Self::start_all(grace, false, None, aux).await
    }

    /// [`TestServer::start_aux`] granting delegations.
    pub async fn start_aux_delegating(aux: server::config::AuxConfig) -> TestServer {
        Self::start_all(Duration::ZERO, false, Some(100_000), aux).await
    }

    /// `delegations`: none, or granted up to that many at once.
    async fn start_full(grace: Duration, log: bool, delegations: Option<usize>) -> TestServer {
        Self::start_all(grace, log, delegations, Default::default()).await
    }

    async fn start_all(
        grace: Duration,
        log: bool,
        delegations: Option<usize>,
        aux: server::config::AuxConfig,
    ) -> TestServer {
        let export = tempfile::tempdir().expect("export dir");
        let state = tempfile::tempdir().expect("state dir");
        let max_delegations = delegations.unwrap_or(100_000);
        let delegations = delegations.is_some();
        let running = server::run::start(config(
            &export,
            &state,
            grace,
            log,
            delegations,
            max_delegations,
            &aux,
            true,
        ))
        .await
        .expect("server starts");
        TestServer {
            addr: running.addr,
            running: Some(running),
            export,
            state,
            grace,
            log,
            delegations,
            max_delegations,
            aux,
            shared_locks: true,
        }
    }

    /// Stops the server as a crash would (nothing applied, no goodbye to
    /// clients) and starts a new one on the same directories.
    pub async fn crash_restart(&mut self, meanwhile: impl FnOnce(&Self)) {
        if let Some(r) = self.running.take() {
            r.crash().await;
        }
        meanwhile(self);
        self.start_again().await;
    }

    /// Stops the server and starts a new one on the same export and state
    /// directories (a new port).
    pub async fn restart(&mut self) {
        if let Some(r) = self.running.take() {
            r.stop().await;
        }
        self.start_again().await;
    }

    async fn start_again(&mut self) {
        let cfg = config(
            &self.export,
            &self.state,
            self.grace,
            self.log,
            self.delegations,
            self.max_delegations,
            &self.aux,
            self.shared_locks,
        );
        let running = server::run::start(cfg).await.expect("server restarts");
        self.addr = running.addr;
        self.running = Some(running);
    }

    pub async fn stop(&mut self) {
        if let Some(r) = self.running.take() {
            r.stop().await;
        }
    }

    /// A path inside the export directory.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.export.path().join(rel)
    }

    /// A connected client with a unique owner.
    pub async fn client(&self) -> Client {
        self.client_with(options()).await
    }

    pub async fn client_with(&self, opts: ClientOptions) -> Client {
        Client::connect(self.addr, opts)
            .await
            .expect("client connects")
    }
}

static OWNER: AtomicU64 = AtomicU64::new(1);

/// Client options with a unique owner.
pub fn options() -> ClientOptions {
    let n = OWNER.fetch_add(1, Ordering::Relaxed);
    ClientOptions::new(format!("e2e-{}-{n}", std::process::id()))
}

/// Runs a test body with a time limit.
pub async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(120), f)
        .await
        .expect("test timed out")
}

/// The NFS status of a failed call (panics if it succeeded or failed
/// otherwise).
#[track_caller]
pub fn status<T: std::fmt::Debug>(r: client::Result<T>) -> NfsStat4 {
    match r {
        Ok(v) => panic!("expected an NFS error, got Ok({v:?})"),
        Err(e) => e
            .status()
            .unwrap_or_else(|| panic!("expected an NFS error, got {e}")),
    }
}

/// The failing index and status of a compound.
#[track_caller]
pub fn failed_at<T: std::fmt::Debug>(r: client::Result<T>) -> (usize, NfsStat4) {
    match r {
        Err(client::Error::Status { index, status, .. }) => (index, status),
        other => panic!("expected a failed operation, got {other:?}"),
    }
}

pub fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

pub fn putfh(fh: &NfsFh4) -> NfsArgOp4 {
    client::ops::putfh(fh)
}

pub fn lookup(name: &str) -> NfsArgOp4 {
    NfsArgOp4::Lookup(Lookup4Args { objname: b(name) })
}

pub fn getattr(attrs: &[u32]) -> NfsArgOp4 {
    client::ops::getattr_op(attrs)
}

/// The decoded attributes of a GETATTR result.
#[track_caller]
pub fn attrs_of(r: &NfsResOp4) -> Attrs {
    match r {
        NfsResOp4::GetAttr(Res4::Ok(ok)) => {
            Attrs::decode(&ok.obj_attributes).expect("attrs decode")
        }
        other => panic!("not a GETATTR result: {other:?}"),
    }
}

/// The filehandle of a GETFH result.
#[track_caller]
pub fn fh_of(r: &NfsResOp4) -> NfsFh4 {
    match r {
        NfsResOp4::GetFh(Res4::Ok(ok)) => ok.object.clone(),
        other => panic!("not a GETFH result: {other:?}"),
    }
}

/// Writes a file in the export directory directly.
pub fn put_file(srv: &TestServer, rel: &str, data: &[u8]) {
    let p = srv.path(rel);
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    std::fs::write(p, data).expect("write");
}

/// Opens (creating if needed) a file for read and write in `dir`.
pub async fn create_file(c: &Client, dir: &NfsFh4, name: &str) -> client::Open {
    c.open(dir, name, client::OpenOpts::create(0o644))
        .await
        .expect("create file")
}

/// A stateid this server never issued but shaped like `real` (same
/// server-instance part, unknown rest): BAD_STATEID, not STALE_STATEID.
pub fn forge(real: StateId4) -> StateId4 {
    let mut other = real.other;
    for b in &mut other[8..] {
        *b ^= 0xa5;
    }
    StateId4 { seqid: 1, other }
}

/// True for the statuses a server may give a stateid it cannot place:
/// BAD_STATEID, or STALE_STATEID when it looks like another instance's.
pub fn unknown_stateid(s: NfsStat4) -> bool {
    matches!(
        s,
        NfsStat4::Nfs4errBadStateid | NfsStat4::Nfs4errStaleStateid
    )
}

/// Options of a client that does not retry NFS4ERR_DELAY: a request
/// conflicting with a delegation that was not settled within the server's
/// wait shows.
pub fn impatient() -> ClientOptions {
    let mut o = options();
    o.delay_retry = Duration::ZERO;
    o
}

/// How long a test waits for something that takes milliseconds on an idle
/// machine (a callback, a connection closing): long enough that a machine
/// many times slower, or busy with other work, still gets there, and short
/// enough that a hang fails well within [`within`]'s limit.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// Polls `probe` every 20 ms until it gives `Some`, for [`PATIENCE`] at
/// most; `None` if it never did.
pub async fn eventually<T>(mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let end = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Some(v) = probe() {
            return Some(v);
        }
        if tokio::time::Instant::now() >= end {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits ([`PATIENCE`] at most) for `c` to have `n` recalls.
pub async fn recalls(c: &Client, n: usize) -> Vec<client::callback::Recall> {
    eventually(|| Some(c.callbacks().recalls()).filter(|got| got.len() >= n))
        .await
        .unwrap_or_else(|| c.callbacks().recalls())
}

/// Waits ([`PATIENCE`] at most) for `c` to have returned `n` delegations
/// after recalls: its count moves once the server answered the
/// DELEGRETURN, which may be after the server let a waiting request go.
pub async fn delegreturns(c: &Client, n: u64) -> u64 {
    eventually(|| Some(c.callbacks().delegreturns()).filter(|got| *got >= n))
        .await
        .unwrap_or_else(|| c.callbacks().delegreturns())
}

/// Waits ([`PATIENCE`] at most) until `c` has received `n` CB_NOTIFY_LOCKs.
pub async fn notices(c: &Client, n: usize) -> Vec<CbNotifyLock4Args> {
    eventually(|| Some(c.callbacks().lock_notices()).filter(|got| got.len() >= n))
        .await
        .unwrap_or_else(|| c.callbacks().lock_notices())
}

/// How long a test that checks that something does *not* happen (a
/// callback that must not be sent) gives it to show, after the request
/// that would have caused it was answered. No condition marks the end of
/// such a wait, so it is a fixed time; a slow machine can only make the
/// check miss a wrong callback, never fail a server that sends none.
pub const QUIET: Duration = Duration::from_millis(300);

/// AUTH_SYS as root, for the NFSv3 client.
pub fn root_auth() -> rpc::Auth {
    rpc::Auth::sys(0, 0, Vec::new(), "test")
}

/// `reader` creates `name` in `rdir` and opens it for reading with a
/// read delegation; `writer` then opens it (in `wdir`, the same
/// directory as it sees it) for writing: the delegation must be recalled
/// over `reader`'s back channel and given back before the open succeeds.
pub async fn delegation_recalled_by_a_writer(
    reader: &Client,
    rdir: &NfsFh4,
    writer: &Client,
    wdir: &NfsFh4,
    name: &str,
) {
    let mut create = client::OpenOpts::create(0o666);
    create.access |= OPEN4_SHARE_ACCESS_WANT_NO_DELEG;
    let f = reader.open(rdir, name, create).await.expect("create");
    reader.close(&f.fh, f.stateid).await.expect("close");
    let o = reader
        .open(
            rdir,
            name,
            client::OpenOpts {
                access: OPEN4_SHARE_ACCESS_READ | OPEN4_SHARE_ACCESS_WANT_READ_DELEG,
                ..Default::default()
            },
        )
        .await
        .expect("open for reading");
    let OpenDelegation4::Read(d) = o.delegation else {
        panic!("no read delegation: {:?}", o.delegation)
    };
    let w = writer
        .open(wdir, name, client::OpenOpts::write())
        .await
        .expect("open for writing");
    let got = recalls(reader, 1).await;
    assert_eq!(got.len(), 1, "the reader was called back");
    assert_eq!(got[0].stateid.other, d.stateid.other);
    assert_eq!(delegreturns(reader, 1).await, 1);
    writer.close(&w.fh, w.stateid).await.expect("close");
}

/// Writes `len` bytes of a pattern to the open file `o` in FILE_SYNC
/// WRITEs of `chunk` bytes, reads them back in READs of `chunk` bytes
/// and compares; then takes a write lock on its first 100 bytes and
/// releases it.
pub async fn write_read_back_and_lock(c: &Client, o: &client::Open, len: usize, chunk: usize) {
    let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
    for (i, part) in data.chunks(chunk).enumerate() {
        c.write(
            &o.fh,
            o.stateid,
            (i * chunk) as u64,
            Bytes::copy_from_slice(part),
            StableHow4::FileSync4,
        )
        .await
        .expect("write");
    }
    let mut back = Vec::new();
    while back.len() < data.len() {
        let (got, _) = c
            .read(&o.fh, o.stateid, back.len() as u64, chunk as u32)
            .await
            .expect("read");
        assert!(!got.is_empty(), "a READ came back empty at {}", back.len());
        back.extend_from_slice(&got);
    }
    assert!(back == data, "read back differs");
    let owner = c.new_owner("lk");
    let lk = c
        .lock(
            &o.fh,
            NfsLockType4::WriteLt,
            0,
            100,
            c.new_locker(o.stateid, owner),
        )
        .await
        .expect("lock");
    c.locku(&o.fh, NfsLockType4::WriteLt, lk, 0, 100)
        .await
        .expect("unlock");
}

/// A local lock on a file of the export, through `f`'s open file
/// description (`F_OFD_SETLK`; `kind` F_RDLCK, F_WRLCK or F_UNLCK):
/// whether it was granted. The test process stands for a local process
/// (not an NFS client) with locks of its own: a POSIX lock would be
/// dropped whenever the server, in the same process, closes a descriptor
/// of the file.
pub fn local_lock(f: &std::fs::File, kind: libc::c_int, start: i64, len: i64) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: flock is plain data.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = kind as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = start;
    fl.l_len = len;
    // SAFETY: fcntl reads a live flock through a live descriptor.
    unsafe { libc::fcntl(f.as_raw_fd(), libc::F_OFD_SETLK, &fl) == 0 }
}

/// The export's file `rel`, opened for reading and writing by a local
/// process (this one).
pub fn local_file(srv: &TestServer, rel: &str) -> std::fs::File {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(srv.path(rel))
        .expect("open the export's file locally")
}

/// Lowers this process's RLIMIT_NOFILE to `n` until dropped (a test
/// doing so must be alone in its binary).
pub struct NofileLimit(libc::rlimit);

impl NofileLimit {
    pub fn lower_to(n: u64) -> NofileLimit {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit and setrlimit on a live struct.
        unsafe {
            assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut r), 0);
            let low = libc::rlimit {
                rlim_cur: n,
                rlim_max: r.rlim_max,
            };
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &low), 0);
        }
        NofileLimit(r)
    }
}

impl Drop for NofileLimit {
    fn drop(&mut self) {
        // SAFETY: setrlimit from a live struct.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &self.0) };
    }
}
