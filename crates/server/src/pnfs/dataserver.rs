//! One data server as the metadata server reaches it: an NFSv3 client
//! (RFC 1813, MOUNT for its root: at the NFS address, else where the data
//! server's port mapper says) on one TCP connection, made when first
//! needed and again after a failure, every call under a timeout, replies
//! bounded by the connection's record limit. A call that fails for the
//! transport (not an NFS status) marks the server down; a prober
//! ([`DataServer::probe`]) brings it back up when it answers NULL.
//!
//! The metadata server speaks to data servers as root (AUTH_SYS uid 0):
//! it creates, truncates, removes and re-owns their data files (RFC 8435
//! §2.2), so a data server must not squash root for it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use client::v3::{Client, Error as ClientError};
use proto::nfs3::*;
use proto::portmap::PMAP_PORT;

/// How long one call to a data server may take before it counts as a
/// failure (the call is abandoned and the server marked down).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// How long connecting (MOUNT and the NFS connection) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The largest reply accepted from a data server: a READ of
/// [`IO_SIZE`] and its header.
const MAX_RECORD: usize = IO_SIZE as usize + 64 * 1024;

/// READ and WRITE size to and from data servers (the metadata server's
/// own I/O through them, and the rsize and wsize told to clients in
/// GETDEVICEINFO).
pub const IO_SIZE: u32 = 1 << 20;

/// Where a data server is: its NFS address (MOUNT is asked there first,
/// where Ferrite answers it, then where the port mapper on port 111 of
/// that address says, as NFS-Ganesha and the Linux server have it) and
/// the export path to mount. `ADDR:PORT[/PATH]`; the path defaults to "/".
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DataServerAddr {
    pub addr: SocketAddr,
    pub path: String,
}

impl std::fmt::Display for DataServerAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path == "/" {
            write!(f, "{}", self.addr)
        } else {
            write!(f, "{}{}", self.addr, self.path)
        }
    }
}

impl std::str::FromStr for DataServerAddr {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        // The path starts at the first '/' after the port (an IPv6
        // address is in brackets and has no '/').
        let (addr, path) = match s.find('/') {
            Some(i) => (&s[..i], &s[i..]),
            None => (s, "/"),
        };
        let addr: SocketAddr = addr.parse().map_err(|e| {
            format!("data server {s:?}: {e} (expected ADDR:PORT or ADDR:PORT/PATH, e.g. 127.0.0.1:2050 or [::1]:2049/export)")
        })?;
        if addr.port() == 0 {
            return Err(format!("data server {s:?}: port 0"));
        }
        Ok(DataServerAddr {
            addr,
            path: path.to_owned(),
        })
    }
}

/// Parses a comma-separated list of data servers (`--data-servers`).
pub fn parse_list(s: &str) -> Result<Vec<DataServerAddr>, String> {
    let v: Vec<DataServerAddr> = s
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    if v.is_empty() {
        return Err("no data server given".into());
    }
    for (i, a) in v.iter().enumerate() {
        if v[..i].contains(a) {
            return Err(format!("data server {a} is given twice"));
        }
    }
    Ok(v)
}

/// Why a call to a data server failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DsError {
    /// The server answered with this NFS status.
    Status(NfsStat3),
    /// It did not answer in time, could not be reached, or answered
    /// something undecodable: it is marked down.
    Down(String),
}

impl std::fmt::Display for DsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DsError::Status(s) => write!(f, "{s:?}"),
            DsError::Down(why) => write!(f, "unreachable: {why}"),
        }
    }
}

impl DsError {
    /// The errno the metadata server's own I/O answers with.
    pub fn errno(&self) -> vfs::Errno {
        vfs::Errno(match self {
            DsError::Status(NfsStat3::Noent | NfsStat3::Stale) => libc::ESTALE,
            DsError::Status(NfsStat3::Nospc) => libc::ENOSPC,
            DsError::Status(NfsStat3::Dquot) => libc::EDQUOT,
            DsError::Status(NfsStat3::Fbig) => libc::EFBIG,
            DsError::Status(NfsStat3::Rofs) => libc::EROFS,
            _ => libc::EIO,
        })
    }
}

/// One data server.
pub struct DataServer {
    pub addr: DataServerAddr,
    client: tokio::sync::Mutex<Option<Client>>,
    up: AtomicBool,
    /// When it last failed (for the log's rate limit and `ferrite stat`).
    failed_at: Mutex<Option<Instant>>,
    /// Calls and failures, for `ferrite stat` and the tests.
    pub calls: AtomicU64,
    pub failures: AtomicU64,
    /// A probe is under way (one at a time: clients' error reports may
    /// come faster than a hung server times out).
    probing: AtomicBool,
    /// Where its port mapper listens, asked where MOUNT is when MOUNT is
    /// not served at its NFS address ([`PMAP_PORT`]; another in tests).
    portmap_port: u16,
    /// Told when it is marked down (the prober, which otherwise sleeps).
    trouble: Arc<tokio::sync::Notify>,
}

impl std::fmt::Debug for DataServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DataServer({}, up {})", self.addr, self.is_up())
    }
}

impl DataServer {
    pub fn new(addr: DataServerAddr) -> DataServer {
        DataServer {
            addr,
            client: tokio::sync::Mutex::new(None),
            up: AtomicBool::new(true),
            failed_at: Mutex::new(None),
            calls: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            probing: AtomicBool::new(false),
            portmap_port: PMAP_PORT,
            trouble: Arc::new(tokio::sync::Notify::new()),
        }
    }

    /// Tells `trouble` whenever it is marked down.
    pub fn watched_by(mut self, trouble: Arc<tokio::sync::Notify>) -> DataServer {
        self.trouble = trouble;
        self
    }

    /// Whether its last call (or probe) succeeded.
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    /// The connection, made if there is none.
    async fn client(&self) -> Result<Client, DsError> {
        let mut g = self.client.lock().await;
        if let Some(c) = g.as_ref() {
            if !c.connection().is_closed() {
                return Ok(c.clone());
            }
        }
        let cfg = rpc::ConnConfig {
            max_record: MAX_RECORD,
            ..rpc::ConnConfig::default()
        };
        let auth = rpc::Auth::Sys(rpc::AuthSysParms {
            stamp: 0,
            machinename: Bytes::from_static(b"ferrite-mds"),
            uid: 0,
            gid: 0,
            gids: Vec::new(),
        });
        let c = tokio::time::timeout(CONNECT_TIMEOUT, self.connect(auth, cfg))
            .await
            .map_err(|_| DsError::Down(format!("no connection within {CONNECT_TIMEOUT:?}")))??;
        *g = Some(c.clone());
        Ok(c)
    }

    /// Mounts the export and connects: MOUNT at the NFS address (where
    /// Ferrite answers it), else at the port the data server's port
    /// mapper gives (NFS-Ganesha and the Linux server serve MOUNT on a
    /// port of its own, and answer PROG_UNAVAIL for it on the NFS port).
    async fn connect(&self, auth: rpc::Auth, cfg: rpc::ConnConfig) -> Result<Client, DsError> {
        use rpc::{CallError, ReplyError};
        let a = &self.addr;
        let down = |e: ClientError| DsError::Down(e.to_string());
        match Client::connect_with(a.addr, a.addr, &a.path, auth.clone(), cfg.clone()).await {
            Err(ClientError::Rpc(CallError::Rejected(
                ReplyError::ProgUnavail | ReplyError::ProgMismatch { .. },
            ))) => {}
            r => return r.map_err(down),
        }
        let pmap = SocketAddr::new(a.addr.ip(), self.portmap_port);
        let port =
            client::portmap::getport(pmap, proto::mount::MOUNT_PROGRAM, proto::mount::MOUNT_V3)
                .await
                .map_err(|e| {
                    DsError::Down(format!(
                    "MOUNT is not served at {} and the port mapper at {pmap} does not answer: {e}",
                    a.addr
                ))
                })?
                .ok_or_else(|| {
                    DsError::Down(format!(
                        "MOUNT is not served at {} nor registered with the port mapper at {pmap}",
                        a.addr
                    ))
                })?;
        let mount = SocketAddr::new(a.addr.ip(), port);
        Client::connect_with(a.addr, mount, &a.path, auth, cfg)
            .await
            .map_err(down)
    }

    /// Runs one call under [`CALL_TIMEOUT`]: an NFS status is the call's
    /// answer; anything else marks the server down and drops the
    /// connection.
    pub async fn call<T, F, Fut>(&self, f: F) -> Result<T, DsError>
    where
        F: FnOnce(Client) -> Fut,
        Fut: std::future::Future<Output = client::v3::Result<T>>,
    {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let r = match self.client().await {
            Ok(c) => match tokio::time::timeout(CALL_TIMEOUT, f(c)).await {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(ClientError::Status { status, .. })) => Err(DsError::Status(status)),
                Ok(Err(e)) => Err(DsError::Down(e.to_string())),
                Err(_) => Err(DsError::Down(format!("no answer within {CALL_TIMEOUT:?}"))),
            },
            Err(e) => Err(e),
        };
        match &r {
            Err(DsError::Down(why)) => self.mark_down(why).await,
            _ => self.mark_up(),
        }
        r
    }

    async fn mark_down(&self, why: &str) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        if let Some(c) = self.client.lock().await.take() {
            c.connection().close();
        }
        let was_up = self.up.swap(false, Ordering::Relaxed);
        self.trouble.notify_one();
        let mut at = self.failed_at.lock().unwrap_or_else(|p| p.into_inner());
        let quiet = at.is_some_and(|t| t.elapsed() < Duration::from_secs(10));
        *at = Some(Instant::now());
        if was_up || !quiet {
            tracing::warn!(data_server = %self.addr, "data server down: {why}");
        }
    }

    fn mark_up(&self) {
        if !self.up.swap(true, Ordering::Relaxed) {
            tracing::info!(data_server = %self.addr, "data server back up");
        }
    }

    /// Closes the connection, if there is one.
    pub async fn disconnect(&self) {
        if let Some(c) = self.client.lock().await.take() {
            c.connection().close();
        }
    }

    /// NULL: brings a server marked down back up if it answers.
    /// One at a time: a probe asked for while one runs answers whether
    /// the server is up now.
    pub async fn probe(&self) -> bool {
        if self.probing.swap(true, Ordering::AcqRel) {
            return self.is_up();
        }
        // Cleared however the probe ends (dropped included).
        struct Done<'a>(&'a AtomicBool);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        let _done = Done(&self.probing);
        self.call(|c| async move { c.null().await }).await.is_ok()
    }

    /// The export's root handle (connecting if needed).
    pub async fn root(&self) -> Result<NfsFh3, DsError> {
        self.call(|c| async move { Ok(c.root().clone()) }).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proto::mount::*;
    use proto::portmap::*;
    use rpc::{Call, Programs, Reply, ReplyFuture, Service};
    use xdr::Unpack;

    use super::*;

    /// Answers NULL (NFSv3, MOUNT v3, the port mapper); MNT with the
    /// handle `root`; GETPORT of MOUNT v3 over TCP with `mount_port`
    /// (0: not registered).
    struct Fake {
        root: &'static [u8],
        mount_port: u32,
    }

    impl Service for Fake {
        fn call(&self, mut call: Call) -> ReplyFuture {
            let (root, mount_port) = (self.root, self.mount_port);
            Box::pin(async move {
                match (call.prog, call.proc_) {
                    (_, 0) => Reply::success(&()),
                    (MOUNT_PROGRAM, MOUNTPROC3_MNT) => {
                        Reply::success(&MountRes3::Ok(MountRes3Ok {
                            fhandle: FHandle3(Bytes::from_static(root)),
                            auth_flavors: vec![1],
                        }))
                    }
                    (PMAP_PROG, PMAPPROC_GETPORT) => match Mapping::unpack(&mut call.args) {
                        Ok(m) if (m.prog, m.vers, m.prot) == (MOUNT_PROGRAM, 3, IPPROTO_TCP) => {
                            Reply::success(&mount_port)
                        }
                        Ok(_) => Reply::success(&0u32),
                        Err(_) => Reply::Error(rpc::ReplyError::GarbageArgs),
                    },
                    _ => Reply::Error(rpc::ReplyError::ProcUnavail),
                }
            })
        }
    }

    /// Serves `programs` (program, version, service) on a loopback port.
    async fn serve(programs: Vec<(u32, u32, Arc<dyn Service>)>) -> SocketAddr {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let mut p = Programs::new();
        for (prog, vers, s) in programs {
            p = p.add(prog, vers, vers, s);
        }
        let (tx, rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            rpc::serve(l, Arc::new(p), rpc::ConnConfig::default(), rx).await;
            drop(tx);
        });
        addr
    }

    fn fake(root: &'static [u8], mount_port: u32) -> Arc<dyn Service> {
        Arc::new(Fake { root, mount_port })
    }

    fn data_server(nfs: SocketAddr, portmap_port: u16) -> DataServer {
        let mut ds = DataServer::new(DataServerAddr {
            addr: nfs,
            path: "/".into(),
        });
        ds.portmap_port = portmap_port;
        ds
    }

    /// A port nothing listens on.
    async fn closed_port() -> u16 {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        l.local_addr().unwrap().port()
    }

    #[tokio::test]
    async fn mount_on_the_nfs_port_needs_no_port_mapper() {
        // Ferrite: MOUNT beside NFS on one port.
        let nfs = serve(vec![
            (NFS_PROGRAM, NFS_V3, fake(b"ferrite-root", 0)),
            (MOUNT_PROGRAM, MOUNT_V3, fake(b"ferrite-root", 0)),
        ])
        .await;
        let ds = data_server(nfs, closed_port().await);
        assert_eq!(&ds.root().await.unwrap().data[..], b"ferrite-root");
        assert!(ds.probe().await);
    }

    #[tokio::test]
    async fn mount_on_a_port_of_its_own_is_found_through_the_port_mapper() {
        // NFS-Ganesha, the Linux server: NFS alone on its port (MOUNT there
        // is PROG_UNAVAIL), MOUNT on another, registered with the port
        // mapper on the data server's address.
        let mount = serve(vec![(MOUNT_PROGRAM, MOUNT_V3, fake(b"ganesha-root", 0))]).await;
        let nfs = serve(vec![(NFS_PROGRAM, NFS_V3, fake(b"", 0))]).await;
        let pmap = serve(vec![(PMAP_PROG, PMAP_VERS, fake(b"", mount.port() as u32))]).await;
        let ds = data_server(nfs, pmap.port());
        assert_eq!(&ds.root().await.unwrap().data[..], b"ganesha-root");
        assert!(ds.is_up());
        assert!(ds.probe().await);

        // The port mapper does not know MOUNT: down, saying why.
        let pmap = serve(vec![(PMAP_PROG, PMAP_VERS, fake(b"", 0))]).await;
        let ds = data_server(nfs, pmap.port());
        match ds.root().await {
            Err(DsError::Down(why)) => assert!(why.contains("nor registered"), "{why}"),
            r => panic!("{r:?}"),
        }
        assert!(!ds.is_up());

        // No port mapper at all: down too.
        let ds = data_server(nfs, closed_port().await);
        match ds.root().await {
            Err(DsError::Down(why)) => assert!(why.contains("port mapper"), "{why}"),
            r => panic!("{r:?}"),
        }
    }
}
