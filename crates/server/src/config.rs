//! What a server serves and how, as the binary hands it over: the exports
//! and their options ([`ExportConfig`], each opened into an
//! [`crate::exports::export::Export`] by [`open_export`]), the auxiliary
//! programs' ports, the admin socket and the whole [`ServerConfig`] that
//! `crate::run::start` starts and `crate::observe::reload` re-applies.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use crate::exports::export::{Export, ExportRules};
use crate::instance::Nfs4Config;

/// One export of a local directory.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportConfig {
    /// The id its filehandles carry: stable across restarts and
    /// reorderings of the configuration when given; none: its position
    /// among the exports.
    pub id: Option<u16>,
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
    /// A write log for stable WRITEs ([`crate::stable::writelog`]), or none.
    pub log: Option<crate::stable::writelog::LogConfig>,
    /// Grant delegations of its files and directories (RFC 8881 §10.2,
    /// §10.4, §10.9); on by default.
    pub delegations: bool,
    /// Share NFS byte-range locks with local processes' `fcntl(2)` locks,
    /// where the backend can (`crate::conflicts::local_locks`); on by
    /// default.
    pub shared_locks: bool,
    /// Data servers: the export is a pNFS metadata server handing out
    /// flexible-file layouts, its files' bytes on them (`crate::pnfs`).
    pub pnfs: Option<crate::pnfs::PnfsConfig>,
    /// Another server serves it now (its NFS address, the export's path
    /// there the same): NFSv4 clients are sent there until a migration
    /// brings it here ([`crate::exports::away`]).
    pub served_by: Option<crate::exports::referral::Location>,
    /// Its identity, as exports(5)'s `fsid`: what its filehandles are
    /// bound to instead of the file system's id and the root's kernel
    /// handle (`vfs::local::Identity`). None: those, or on a file system
    /// without a stable identity (FUSE, network), a marker kept on its
    /// root.
    pub fsid: Option<String>,
}

impl ExportConfig {
    /// An export open to every client: read-write, no squashing, any
    /// port, AUTH_SYS or AUTH_NONE (the development default).
    pub fn open(path: impl Into<String>, dir: impl Into<PathBuf>) -> Self {
        ExportConfig {
            id: None,
            path: path.into(),
            dir: dir.into(),
            rules: ExportRules::open(),
            metadata_async: false,
            log: None,
            delegations: true,
            shared_locks: true,
            pnfs: None,
            served_by: None,
            fsid: None,
        }
    }
}

/// Where the port mapper answers ([`crate::v3::portmap`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortmapMode {
    Off,
    /// On port 111 of the NFS listener's address when it can be had (as
    /// root, with nothing else there); where a port mapper already
    /// answers there, Ferrite's programs are registered with it instead.
    Auto,
    /// At this address, or not at all (an error).
    At(SocketAddr),
}

/// The programs NFSv3 needs beside NFS itself: MOUNT, NLM and NSM (served
/// on the NFS port over TCP and UDP, and on their own ports if given),
/// and the port mapper that tells clients where they are.
#[derive(Debug, Clone, PartialEq)]
pub struct AuxConfig {
    pub portmap: PortmapMode,
    /// MOUNT's own port (TCP and UDP) besides the NFS port.
    pub mount_port: Option<u16>,
    /// NLM's and NSM's own port besides the NFS port.
    pub nlm_port: Option<u16>,
    /// Where clients' port mappers listen (111): NLM_GRANTED and SM_NOTIFY
    /// find the client's lock manager and status monitor through them.
    pub client_portmap_port: u16,
}

impl Default for AuxConfig {
    fn default() -> Self {
        AuxConfig {
            portmap: PortmapMode::Off,
            mount_port: None,
            nlm_port: None,
            client_portmap_port: proto::portmap::PMAP_PORT,
        }
    }
}

/// How the server is watched and administered (issue 14).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AdminConfig {
    /// The administration socket `ferrite stat` uses ([`crate::observe::admin`]);
    /// none: not served.
    pub socket: Option<PathBuf>,
    /// Where the Prometheus metrics are served ([`crate::observe::metrics`]);
    /// none: not served.
    pub metrics: Option<SocketAddr>,
    /// The network link's capacity in bytes a second, for the load model
    /// ([`crate::observe::load`]); none: the network is shown, never limiting.
    pub link_bytes_per_s: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    /// Where the server keeps what must survive restarts (the filehandle key).
    pub state_dir: PathBuf,
    pub exports: Vec<ExportConfig>,
    pub nfs4: Nfs4Config,
    pub rpc: rpc::ConnConfig,
    pub aux: AuxConfig,
    pub admin: AdminConfig,
    /// RPCSEC_GSS with Kerberos V5; none: AUTH_SYS and AUTH_NONE only.
    pub kerberos: Option<crate::security::kerberos::KerberosConfig>,
    /// RPC-over-TLS (RFC 9289): the settings with which AUTH_TLS probes
    /// on the NFS port are answered; none: no TLS offered.
    pub tls: Option<crate::security::tls::TlsConfig>,
}

impl ServerConfig {
    /// A server on `listen` keeping its state in `state_dir`, exporting
    /// `exports`, everything else as defaults: no Kerberos, no TLS.
    pub fn new(
        listen: SocketAddr,
        state_dir: impl Into<PathBuf>,
        exports: Vec<ExportConfig>,
    ) -> Self {
        ServerConfig {
            listen,
            state_dir: state_dir.into(),
            exports,
            nfs4: Nfs4Config::default(),
            rpc: rpc::ConnConfig::default(),
            aux: AuxConfig::default(),
            admin: AdminConfig::default(),
            kerberos: None,
            tls: None,
        }
    }
}

/// Opens the backend of export `e` (its directory created if missing),
/// with id `id`, and its write log, replayed before anyone is served: a
/// log that cannot be is an error, never ignored.
pub(crate) async fn open_export(
    e: &ExportConfig,
    id: u16,
    state_dir: &std::path::Path,
) -> std::io::Result<Export> {
    vfs::durable::create_dir_all(&e.dir)?;
    let fs = vfs::local::LocalFs::with_options(
        &e.dir,
        &vfs::local::LocalOptions {
            fsid: e.fsid.clone(),
        },
    )?;
    match fs.identity() {
        vfs::local::Identity::FileSystem => {}
        vfs::local::Identity::Configured(f) => tracing::info!(
            export = %e.path,
            "identity from the configuration (fsid = {f:?}): filehandles survive remounts"
        ),
        vfs::local::Identity::Marker(m) => tracing::info!(
            export = %e.path,
            "on a file system whose handles do not survive a remount: identity {m} kept on the export's root ({}), objects named by inode number",
            vfs::local::MARKER_XATTR
        ),
    }
    fs.set_async(e.metadata_async);
    let mut vfs: Arc<dyn vfs::Vfs> = Arc::new(fs);
    let invalid = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, why);
    let pnfs = match &e.pnfs {
        Some(p) => {
            p.check()
                .map_err(|why| invalid(format!("export {}: {why}", e.path)))?;
            if e.log.is_some() {
                return Err(invalid(format!(
                    "export {}: a write log and data servers together (the data servers keep the bytes; drop one)",
                    e.path
                )));
            }
            let pnfs = Arc::new(crate::pnfs::Pnfs::new(
                id,
                vfs.clone(),
                p,
                tokio::runtime::Handle::current(),
            ));
            pnfs.open_degraded(&state_dir.join("pnfs")).await?;
            tokio::spawn(pnfs.clone().probe_loop());
            vfs = Arc::new(crate::pnfs::vfs::DataVfs::new(vfs, pnfs.clone()));
            Some(pnfs)
        }
        None => None,
    };
    let log = match e.log.clone() {
        Some(l) => {
            let fs = vfs.clone();
            let opened = tokio::task::spawn_blocking(move || {
                crate::stable::writelog::WriteLog::open(&l, fs)
            })
            .await
            .map_err(std::io::Error::other)?;
            Some(opened.map_err(|why| std::io::Error::other(format!("export {}: {why}", e.path)))?)
        }
        None => None,
    };
    Ok(Export {
        id,
        path: e.path.clone(),
        vfs,
        fsid: (0x4645_5252, id as u64 + 1),
        rules: e.rules.clone(),
        log,
        delegations: e.delegations,
        shared_locks: e.shared_locks,
        pnfs,
    })
}

/// Each export's id: its own, or else its position; two exports with one
/// id are refused (their filehandles could not be told apart), as is the
/// id the pseudo filesystem's nodes carry (65535).
pub fn export_ids(exports: &[ExportConfig]) -> std::io::Result<Vec<u16>> {
    let ids: Vec<u16> = exports
        .iter()
        .enumerate()
        .map(|(i, e)| e.id.unwrap_or(i as u16))
        .collect();
    let invalid = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, why);
    for (i, a) in ids.iter().enumerate() {
        if *a == crate::exports::namespace::PSEUDO_EXPORT {
            return Err(invalid(format!(
                "export {}: id {a} is reserved (0 to 65534)",
                exports[i].path
            )));
        }
        if let Some(j) = ids[..i].iter().position(|b| b == a) {
            return Err(invalid(format!(
                "exports {} and {} have the same id {a} (an export without an id has its position, counted from 0)",
                exports[j].path, exports[i].path
            )));
        }
    }
    Ok(ids)
}
