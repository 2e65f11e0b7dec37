//! Starting and stopping a server: listener, programs, exports.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::export::{Export, ExportRules};
use crate::nfs4::filehandle::FhKey;
use crate::nfs4::state::clock::SystemClock;
use crate::nfs4::{Nfs4Config, Nfs4Server, Nfs4Service};

/// One export of a local directory.
#[derive(Debug, Clone)]
pub struct ExportConfig {
    /// Where clients see it ("/" for the namespace root).
    pub path: String,
    /// The local directory served.
    pub dir: PathBuf,
    /// Which clients may use it, and how.
    pub rules: ExportRules,
    /// Answer metadata changes (create, remove, rename, link, attributes,
    /// size) before they are on stable storage: a power loss may undo
    /// acknowledged ones. Stable WRITEs and COMMIT still sync.
    pub metadata_async: bool,
    /// A write log for stable WRITEs ([`crate::writelog`]), or none.
    pub log: Option<crate::writelog::LogConfig>,
    /// Grant delegations of its files (RFC 8881 §10.2, §10.4).
    pub delegations: bool,
}

impl ExportConfig {
    /// An export open to every client: read-write, no squashing, any
    /// port, AUTH_SYS or AUTH_NONE (the development default).
    pub fn open(path: impl Into<String>, dir: impl Into<PathBuf>) -> Self {
        ExportConfig {
            path: path.into(),
            dir: dir.into(),
            rules: ExportRules::open(),
            metadata_async: false,
            log: None,
            delegations: false,
        }
    }
}

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    /// Where the server keeps what must survive restarts (the filehandle key).
    pub state_dir: PathBuf,
    pub exports: Vec<ExportConfig>,
    pub nfs4: Nfs4Config,
    pub rpc: rpc::ConnConfig,
}

/// A running server.
pub struct Running {
    pub addr: SocketAddr,
    pub nfs4: Arc<Nfs4Server>,
    shutdown: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Running {
    /// Stops serving as a crash would, for tests and harnesses: the
    /// listener ends (clients drop their connections themselves), and
    /// every export's write log stops as it is, with nothing applied (the
    /// next start replays it).
    pub async fn crash(self) {
        for log in self.nfs4.exports.iter().filter_map(|e| e.log.as_ref()) {
            log.halt();
        }
        self.task.abort();
        let _ = self.task.await;
    }

    /// Stops accepting connections, waits for the listener to finish and
    /// applies every export's write log (nothing left to replay).
    pub async fn stop(self) {
        let _ = self.shutdown.send(true);
        let _ = self.task.await;
        let logs: Vec<_> = self
            .nfs4
            .exports
            .iter()
            .filter_map(|e| e.log.clone())
            .collect();
        let drained = tokio::task::spawn_blocking(move || {
            for log in logs {
                if let Err(e) = log.drain() {
                    tracing::error!(log = %log.dir().display(), "write log: applying at stop: {e}");
                }
                let st = log.stats();
                tracing::info!(
                    log = %log.dir().display(),
                    writes = st.writes,
                    barriers = st.barriers,
                    records = st.records,
                    syncs = st.syncs,
                    bytes = st.bytes,
                    applies = st.applies,
                    "write log: stopped, everything applied"
                );
            }
        });
        let _ = drained.await;
    }
}

/// Binds the listener and starts serving.
pub async fn start(cfg: ServerConfig) -> std::io::Result<Running> {
    // Made durably: handles, client records and sessions rest on it.
    vfs::durable::create_dir_all(&cfg.state_dir)?;
    let key = FhKey::load_or_create(&cfg.state_dir)?;
    let mut exports = Vec::new();
    for (i, e) in cfg.exports.iter().enumerate() {
        vfs::durable::create_dir_all(&e.dir)?;
        let mut fs = vfs::local::LocalFs::new(&e.dir)?;
        fs.set_async(e.metadata_async);
        let id = i as u16;
        let vfs: Arc<dyn vfs::Vfs> = Arc::new(fs);
        // Replayed before anyone is served; a log that cannot be is an
        // error, never ignored.
        let log = match e.log.clone() {
            Some(l) => {
                let fs = vfs.clone();
                let opened =
                    tokio::task::spawn_blocking(move || crate::writelog::WriteLog::open(&l, fs))
                        .await
                        .map_err(std::io::Error::other)?;
                Some(
                    opened.map_err(|why| {
                        std::io::Error::other(format!("export {}: {why}", e.path))
                    })?,
                )
            }
            None => None,
        };
        exports.push(Export {
            id,
            path: e.path.clone(),
            vfs,
            fsid: (0x4645_5252, id as u64 + 1),
            rules: e.rules.clone(),
            log,
            delegations: e.delegations,
        });
    }
    let recovery =
        crate::nfs4::Recovery::open(&cfg.state_dir, cfg.nfs4.grace_period(), cfg.nfs4.lease)?;
    let nfs4 = Nfs4Server::recovering(
        cfg.nfs4.clone(),
        key,
        exports,
        Arc::new(SystemClock::default()),
        recovery,
    );
    nfs4.spawn_reaper();
    spawn_heap_trim();
    // NFS versions 3 and 4, and MOUNT version 3, on the one port.
    let nfs = crate::nfs3::NfsVersions {
        v3: crate::nfs3::Nfs3Service(nfs4.clone()),
        v4: Nfs4Service(nfs4.clone()),
    };
    let programs = rpc::Programs::new()
        .add(
            proto::nfs4::NFS_PROGRAM,
            proto::nfs3::NFS_V3,
            proto::nfs4::NFS_V4,
            Arc::new(nfs),
        )
        .add(
            proto::mount::MOUNT_PROGRAM,
            proto::mount::MOUNT_V3,
            proto::mount::MOUNT_V3,
            Arc::new(crate::mount::MountService::new(nfs4.clone())),
        );
    let listener = TcpListener::bind(cfg.listen).await?;
    let addr = listener.local_addr()?;
    let (tx, rx) = watch::channel(false);
    let rpc_cfg = cfg.rpc.clone();
    let task = tokio::spawn(rpc::serve(listener, Arc::new(programs), rpc_cfg, rx));
    Ok(Running {
        addr,
        nfs4,
        shutdown: tx,
        task,
    })
}

/// Gives memory the allocator holds but no longer uses back to the system
/// every few seconds. Without it, glibc keeps the buffers freed when a
/// burst of large records or replies ends (a slow reader's queue, hundreds
/// of partial records), and the server stays that large long after.
fn spawn_heap_trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    tokio::spawn(async {
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
            // SAFETY: malloc_trim only walks the allocator's own lists.
            let trim = tokio::task::spawn_blocking(|| unsafe { libc::malloc_trim(0) });
            let _ = trim.await;
        }
    });
}
