//! One data server as the metadata server reaches it: an NFSv3 client
//! (RFC 1813, MOUNT for its root) on one TCP connection, made when first
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
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use client::v3::{Client, Error as ClientError};
use proto::nfs3::*;

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

/// Where a data server is: its NFS address (MOUNT answers there too, as
/// with a Ferrite, NFS-Ganesha or Linux server) and the export path to
/// mount. `ADDR:PORT[/PATH]`; the path defaults to "/".
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
        }
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
        let a = &self.addr;
        let c = tokio::time::timeout(
            CONNECT_TIMEOUT,
            Client::connect_with(a.addr, a.addr, &a.path, auth, cfg),
        )
        .await
        .map_err(|_| DsError::Down(format!("no connection within {CONNECT_TIMEOUT:?}")))?
        .map_err(|e| DsError::Down(e.to_string()))?;
        *g = Some(c.clone());
        Ok(c)
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
    pub async fn probe(&self) -> bool {
        self.call(|c| async move { c.null().await }).await.is_ok()
    }

    /// The export's root handle (connecting if needed).
    pub async fn root(&self) -> Result<NfsFh3, DsError> {
        self.call(|c| async move { Ok(c.root().clone()) }).await
    }
}
