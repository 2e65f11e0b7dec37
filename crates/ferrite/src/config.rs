//! Command-line options and the `ferrite.toml` configuration file.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};
use serde::Deserialize;
use server::config::{ExportConfig, ServerConfig};
use server::exports::export::{ClientMatch, ClientRule, ExportRules, Flavor, Squash, NOBODY};

#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "Examples:
  ferrite serve ./export                         # ./export at / on 127.0.0.1:2049, open to all (development)
  ferrite serve ./export --listen 0.0.0.0:2049 --root-squash --secure
  ferrite serve --config /etc/ferrite/ferrite.toml   # exports and client rules from a file
  ferrite serve ./export --metrics 127.0.0.1:9100    # and Prometheus metrics
Then, from another terminal: ferrite stat --state-dir STATE_DIR")]
pub struct ServeArgs {
    /// Directory to export at "/", created if missing (overrides the
    /// exports of --config).
    pub dir: Option<PathBuf>,
    /// Address and port to listen on [default: 127.0.0.1:2049].
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Directory for state that must survive restarts [default:
    /// /var/lib/ferrite as root, else ~/.local/state/ferrite].
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// Lease time in seconds (RFC 8881 §8.3) [default: 90].
    #[arg(long)]
    pub lease: Option<u64>,
    /// Grace period after a restart, in seconds (RFC 8881 §8.4.2.1):
    /// only clients that held state reclaim it [default: the lease]; it
    /// lasts longer (up to two more leases and a quarter second per
    /// client) while they are still reclaiming, and ends early once all
    /// have; 0 for none (another client may then take a lock before its
    /// holder reclaims it).
    #[arg(long)]
    pub grace: Option<u64>,
    /// Configuration file (TOML); command-line options override it.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// With DIR: map uid 0 and gid 0 to 65534 (root_squash) instead of
    /// serving root as root.
    #[arg(long, requires = "dir")]
    pub root_squash: bool,
    /// With DIR: accept only clients on privileged source ports (< 1024).
    #[arg(long, requires = "dir")]
    pub secure: bool,
    /// With DIR: answer metadata changes (create, remove, rename, ...)
    /// before they are on stable storage; a power loss may undo them.
    #[arg(long = "async", requires = "dir")]
    pub metadata_async: bool,
    /// With DIR: a write log in this directory (ideally on a faster device
    /// than DIR's): stable WRITEs are answered once logged, many sharing
    /// one sync, and reach DIR in the background.
    #[arg(long, requires = "dir")]
    pub log: Option<PathBuf>,
    /// With DIR: be a pNFS metadata server (RFC 8881 §12) handing out
    /// flexible-file layouts (RFC 8435): the files' bytes live on these
    /// NFSv3 data servers (another `ferrite serve DIR`, NFS-Ganesha, the
    /// Linux server), which clients with a layout read and write
    /// directly. ADDR:PORT[/PATH], comma-separated; PATH is the data
    /// server's export (default "/"). Each must let this server in as
    /// root (no root squashing).
    #[arg(long, requires = "dir", value_name = "ADDR:PORT[,...]")]
    pub data_servers: Option<String>,
    /// With --data-servers: bytes per stripe (4k, 1m, ...; a multiple of
    /// 4 KiB) [default: 1m]. A file's stripes go round the data servers.
    #[arg(long, requires = "data_servers", value_name = "SIZE")]
    pub stripe_unit: Option<String>,
    /// With --data-servers: copies of every stripe, each on another data
    /// server [default: 1]. With 2 or more, a client carries on reading
    /// from another copy when a data server fails.
    #[arg(long, requires = "data_servers", value_name = "N")]
    pub mirrors: Option<usize>,
    /// With --log: the most the log may hold, in MiB (default 1024);
    /// writers wait while it is full.
    #[arg(long, requires = "log")]
    pub log_mib: Option<u64>,
    /// Most client connections open at once [default: 4096]; at the cap a
    /// new connection takes the place of the one idle longest.
    #[arg(long)]
    pub max_connections: Option<usize>,
    /// Most connections open at once from one client address [default: a
    /// quarter of --max-connections, at least 16]; over it, that address's
    /// connection idle longest is closed for the new one.
    #[arg(long)]
    pub max_connections_per_address: Option<usize>,
    /// Seconds a connection may stay idle before it is closed (0: never).
    #[arg(long)]
    pub idle_timeout: Option<u64>,
    /// Grant read, write and directory delegations (RFC 8881 §10.2,
    /// §10.4, §10.9) on every export, the default: clients then read files
    /// no one writes to, and write files no one else opens, from their
    /// cache. A local process (not through NFS) that changes a delegated
    /// file or directory recalls them as another client would.
    #[arg(long, conflicts_with = "no_delegations")]
    pub delegations: bool,
    /// Grant no delegations on any export (what `delegations = false`
    /// does in the configuration file).
    #[arg(long)]
    pub no_delegations: bool,
    /// Keep NFS byte-range locks to the server instead of sharing them
    /// with local processes' fcntl(2) locks (what `shared_locks = false`
    /// does for one export in the configuration file).
    #[arg(long)]
    pub no_shared_locks: bool,
    /// The port mapper NFSv3 clients ask where MOUNT and NLM are: "auto"
    /// (the default: answer on port 111 when run as root and it is free,
    /// register with the system rpcbind when one holds it), "off", or an
    /// address to answer on.
    #[arg(long)]
    pub portmap: Option<String>,
    /// MOUNT's own port (TCP and UDP), besides the NFS port.
    #[arg(long)]
    pub mount_port: Option<u16>,
    /// NLM's and NSM's own port (TCP and UDP), besides the NFS port.
    #[arg(long)]
    pub nlm_port: Option<u16>,
    /// Serve the statistics in the Prometheus text format at
    /// http://ADDR:PORT/metrics (off unless given; docs/metrics.md).
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<SocketAddr>,
    /// The administration socket `ferrite stat` talks to (default
    /// STATE_DIR/admin.sock; "off" for none). Only root and the user the
    /// server runs as may use it.
    #[arg(long, value_name = "PATH")]
    pub admin_socket: Option<PathBuf>,
    /// The network link's capacity in megabits a second, for the load
    /// model (`ferrite stat`): without it the network is shown but never
    /// named as the limit.
    #[arg(long, value_name = "MBPS")]
    pub link_mbps: Option<f64>,
    /// The export's identity, as exports(5)'s fsid (a number or a
    /// string): its filehandles survive the file system being mounted
    /// again, elsewhere or by another server. Needed on a FUSE or network
    /// file system that keeps no extended attributes (elsewhere a marker
    /// on the export's root does).
    #[arg(long, requires = "dir", value_name = "ID")]
    pub fsid: Option<String>,
    /// Be the standby of the server using the same state directory (on
    /// storage both see): wait until it stops, however it stops, then
    /// take over, with a grace period for its clients to reclaim in.
    #[arg(long)]
    pub standby: bool,
}

/// The configuration file's shape. Every field is optional.
#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub listen: Option<SocketAddr>,
    pub state_dir: Option<PathBuf>,
    pub lease_seconds: Option<u64>,
    /// Grace period after a restart (default: one lease; 0: none).
    pub grace_seconds: Option<u64>,
    /// How long past its lease a silent client keeps its state while
    /// nobody conflicts with it (default: a day; at least the lease).
    pub courtesy_seconds: Option<u64>,
    /// Most session slots granted to a client.
    pub max_slots: Option<u32>,
    /// Most client records held at once.
    pub max_clients: Option<usize>,
    /// Largest READ/WRITE in bytes.
    pub max_io: Option<u32>,
    /// Reply-cache memory budget in MiB.
    pub reply_cache_mib: Option<usize>,
    /// Report owners as host user and group names instead of numbers.
    pub owner_names: Option<bool>,
    /// The NFSv4 domain of owner names, as idmapd.conf's `Domain`: owners
    /// go out as user@domain to Kerberos callers and to clients that send
    /// names; a name of another domain is refused (NFS4ERR_BADOWNER).
    pub owner_domain: Option<String>,
    /// Most client connections open at once.
    pub max_connections: Option<usize>,
    /// Most connections open at once from one client address.
    pub max_connections_per_address: Option<usize>,
    /// Seconds before an idle connection is closed; 0 never closes it.
    pub idle_timeout_seconds: Option<u64>,
    /// Grant delegations (default true; see --no-delegations): the default
    /// of every export.
    pub delegations: Option<bool>,
    /// Most delegations held at once (default 100000).
    pub max_delegations: Option<usize>,
    /// Milliseconds a request conflicting with a delegation waits for its
    /// return before NFS4ERR_DELAY (default 300).
    pub recall_wait_ms: Option<u64>,
    /// Grant write delegations too where delegations are on (default
    /// true); false grants read delegations only.
    pub write_delegations: Option<bool>,
    /// "auto" (default), "off" or an address: see --portmap.
    pub portmap: Option<String>,
    /// See --mount-port.
    pub mount_port: Option<u16>,
    /// See --nlm-port.
    pub nlm_port: Option<u16>,
    /// The port clients' port mappers listen on, for NLM_GRANTED and
    /// SM_NOTIFY (default 111; for tests).
    pub client_portmap_port: Option<u16>,
    /// See --metrics.
    pub metrics: Option<SocketAddr>,
    /// See --admin-socket.
    pub admin_socket: Option<PathBuf>,
    /// See --link-mbps.
    pub link_mbps: Option<f64>,
    /// RPCSEC_GSS with Kerberos V5 (the `krb5`, `krb5i` and `krb5p`
    /// flavors of `sec`).
    pub kerberos: Option<FileKerberos>,
    /// RPC-over-TLS (RFC 9289) on the NFS port; exports choose whether
    /// they demand it (`xprtsec`).
    pub tls: Option<FileTls>,
    #[serde(default)]
    pub export: Vec<FileExport>,
}

/// `[kerberos]`.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct FileKerberos {
    /// The key table holding the service's keys, `nfs/HOST@REALM`
    /// (default /etc/krb5.keytab).
    pub keytab: Option<PathBuf>,
    /// Principals mapped to local user names, before krb5.conf's
    /// auth_to_local rules: `"alice@EXAMPLE.COM" = "alice"`.
    #[serde(default)]
    pub principals: std::collections::BTreeMap<String, String>,
    /// Most GSS contexts held at once (default 4096).
    pub max_contexts: Option<usize>,
}

/// `[tls]`.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct FileTls {
    /// PEM: the server's certificate, then any intermediates.
    pub certificate: PathBuf,
    /// PEM: the certificate's private key.
    pub key: PathBuf,
    /// PEM: authorities of client certificates (mutual TLS): a client
    /// presenting one they signed has an "mtls" connection.
    pub client_ca: Option<PathBuf>,
    /// Seconds a client may take from the probe to the handshake's end
    /// (default 10).
    pub handshake_timeout: Option<u64>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct FileExport {
    /// The id its filehandles carry (0 to 65534): give each export one,
    /// and its clients' filehandles survive reordering the exports.
    /// Without it, the export's position (from 0) is its id.
    pub id: Option<u16>,
    /// Where clients see the export ("/data", "/home/shared", or "/" for
    /// a single export that is the whole namespace).
    pub path: String,
    /// The local directory exported (none for a referral).
    pub dir: Option<PathBuf>,
    /// A referral instead of a directory: the places the file system at
    /// `path` lives ("HOST:PORT:/path" or "HOST:/path", port 2049), where
    /// NFSv4 clients are sent (RFC 8881 §11.15).
    pub referral: Option<Vec<String>>,
    /// Accepted security flavors, preferred first: "sys", "none".
    /// Default: ["sys"].
    pub sec: Option<Vec<String>>,
    /// Accepted transport security, as the Linux server's `xprtsec`:
    /// "none" (plain), "tls" (TLS, no client certificate), "mtls" (TLS
    /// with a verified client certificate). Default: all three.
    pub xprtsec: Option<Vec<String>>,
    /// Client rules, first match wins; a client no rule matches cannot
    /// use the export. Default: one rule for "*" with the rule defaults.
    pub clients: Option<Vec<FileClient>>,
    /// Answer metadata changes before they are on stable storage.
    #[serde(rename = "async")]
    pub metadata_async: Option<bool>,
    /// A write log for stable WRITEs in this directory (outside `dir`).
    pub log: Option<PathBuf>,
    /// The most the write log may hold, in MiB (default 1024).
    pub log_mib: Option<u64>,
    /// Grant delegations of its files (default: the top-level
    /// `delegations`).
    pub delegations: Option<bool>,
    /// Share NFS byte-range locks with local processes' fcntl(2) locks
    /// (default true; false keeps them to the server).
    pub shared_locks: Option<bool>,
    /// pNFS: the NFSv3 data servers its files' bytes live on
    /// ("ADDR:PORT[/PATH]" each); the export hands out flexible-file
    /// layouts over them.
    pub data_servers: Option<Vec<String>>,
    /// With data_servers: bytes per stripe ("1m", "64k" or a number;
    /// default 1m).
    pub stripe_unit: Option<toml::Value>,
    /// With data_servers: copies of every stripe (default 1).
    pub mirrors: Option<usize>,
    /// "HOST:PORT": another server serves this export now; NFSv4
    /// clients are sent there (NFS4ERR_MOVED) until `ferrite migrate` on
    /// that server moves it here (RFC 8881 §11.14).
    pub served_by: Option<String>,
    /// The export's identity, as exports(5)'s fsid (a number or any
    /// string): its filehandles survive the file system being mounted
    /// again, elsewhere or by another server.
    pub fsid: Option<toml::Value>,
}

/// One client rule of an export (the fields of exports(5) that apply).
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct FileClient {
    /// "*", an address, a network ("10.0.0.0/8") or a host name
    /// (resolved when the configuration is loaded).
    #[serde(rename = "match")]
    pub match_: String,
    /// "rw" (default) or "ro".
    pub access: Option<String>,
    /// "root" (default), "none" or "all".
    pub squash: Option<String>,
    pub anonuid: Option<u32>,
    pub anongid: Option<u32>,
    /// Require a privileged source port (default true).
    pub secure: Option<bool>,
}

pub const DEFAULT_LISTEN: &str = "127.0.0.1:2049";

/// /var/lib/ferrite for root, ~/.local/state/ferrite for everyone else.
pub fn default_state_dir() -> PathBuf {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return PathBuf::from("/var/lib/ferrite");
    }
    std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".local/state/ferrite"))
        .unwrap_or_else(|| PathBuf::from("ferrite-state"))
}

pub fn load(args: &ServeArgs) -> anyhow::Result<ServerConfig> {
    let file: FileConfig = match &args.config {
        Some(p) => parse_file(p)?,
        None => FileConfig::default(),
    };
    let mut exports = match &args.dir {
        Some(d) => {
            // The quick form: one export at "/", open to everyone
            // (a development default; see README).
            let mut e = ExportConfig::open("/", d.clone());
            let rule = &mut e.rules.clients[0];
            if args.root_squash {
                rule.squash = Squash::Root;
            }
            rule.secure = args.secure;
            e.metadata_async = args.metadata_async;
            e.fsid = args.fsid.clone().filter(|f| !f.is_empty());
            e.log = log_config(&e.path, &e.dir, args.log.as_ref(), args.log_mib)?;
            e.pnfs = match &args.data_servers {
                Some(list) => Some(pnfs_config(
                    &e.path,
                    list_of(list)?,
                    args.stripe_unit.as_deref(),
                    args.mirrors,
                )?),
                None => None,
            };
            vec![e]
        }
        None => exports_of(&file.export, file.delegations.unwrap_or(true))?,
    };
    let referrals = match &args.dir {
        Some(_) => Vec::new(),
        None => referrals_of(&file.export, &exports)?,
    };
    if exports.is_empty() && referrals.is_empty() {
        bail!("nothing to export: give a directory (ferrite serve DIR) or [[export]] entries in --config");
    }
    let kerberos = file.kerberos.as_ref().map(|k| {
        let mut c = server::security::kerberos::KerberosConfig::new(
            k.keytab
                .clone()
                .unwrap_or_else(|| PathBuf::from("/etc/krb5.keytab")),
        );
        c.principals = k.principals.clone().into_iter().collect();
        if let Some(n) = k.max_contexts {
            c.max_contexts = n.max(1);
        }
        c
    });
    if kerberos.is_none() {
        for e in &exports {
            if let Some(f) = e.rules.sec.iter().find(|f| f.is_kerberos()) {
                bail!(
                    "export {}: sec {:?} needs Kerberos: add a [kerberos] section with the \
                     server's key table (keytab = \"/etc/krb5.keytab\")",
                    e.path,
                    f.name()
                );
            }
        }
    }
    let tls = file.tls.as_ref().map(|t| {
        let mut c = server::security::tls::TlsConfig::new(&t.certificate, &t.key);
        c.client_ca = t.client_ca.clone();
        if let Some(s) = t.handshake_timeout {
            c.handshake_timeout = std::time::Duration::from_secs(s.max(1));
        }
        c
    });
    if tls.is_none() {
        for e in &exports {
            if !e.rules.allows_xprt(rpc::tls::Xprt::None) {
                bail!(
                    "export {}: xprtsec {:?} needs TLS: add a [tls] section with the server's \
                     certificate and key",
                    e.path,
                    e.rules.xprtsec.iter().map(|x| x.name()).collect::<Vec<_>>()
                );
            }
        }
    }
    let mut nfs4 = server::instance::Nfs4Config {
        referrals,
        ..Default::default()
    };
    if let Some(l) = args.lease.or(file.lease_seconds) {
        if l < 5 {
            bail!("lease time {l} s is too short (at least 5 s)");
        }
        nfs4.lease = Duration::from_secs(l);
    }
    if let Some(g) = args.grace.or(file.grace_seconds) {
        // RFC 8881 §8.4.2.1: long enough for every client to notice the
        // restart, one lease; shorter loses reclaims, zero is none.
        if g != 0 && g < nfs4.lease.as_secs() {
            bail!(
                "grace period {g} s is shorter than the lease ({} s): clients may not notice the restart in time (0 for none)",
                nfs4.lease.as_secs()
            );
        }
        nfs4.grace = Some(Duration::from_secs(g));
    }
    if let Some(c) = file.courtesy_seconds {
        nfs4.courtesy = Duration::from_secs(c).max(nfs4.lease);
    }
    if let Some(n) = file.max_clients {
        if n == 0 {
            bail!("max_clients = 0 would refuse every client");
        }
        nfs4.max_clients = n;
    }
    if let Some(s) = file.max_slots {
        nfs4.max_slots = s.max(1);
    }
    if let Some(m) = file.max_io {
        nfs4.max_io = m.clamp(4096, 1024 * 1024);
    }
    if let Some(n) = file.owner_names {
        nfs4.numeric_owners = !n;
    }
    if let Some(d) = &file.owner_domain {
        if d.is_empty() || d.contains('@') || d.chars().any(char::is_whitespace) {
            bail!("owner_domain {d:?}: a DNS domain such as \"example.com\"");
        }
        nfs4.owner_domain = Some(d.to_ascii_lowercase());
    }
    if let Some(m) = file.reply_cache_mib {
        nfs4.drc_budget = m * 1024 * 1024;
    }
    nfs4.standby = args.standby;
    if args.delegations || args.no_delegations {
        for e in &mut exports {
            e.delegations = args.delegations;
        }
    }
    if args.no_shared_locks {
        for e in &mut exports {
            e.shared_locks = false;
        }
    }
    if let Some(n) = file.max_delegations {
        nfs4.max_delegations = n;
    }
    if let Some(w) = file.write_delegations {
        nfs4.write_delegations = w;
    }
    if let Some(ms) = file.recall_wait_ms {
        if ms > 10_000 {
            bail!("recall_wait_ms = {ms} holds a request too long (at most 10000)");
        }
        nfs4.recall_wait = Duration::from_millis(ms);
    }
    let mut rpc = rpc::ConnConfig::default();
    rpc.max_record = (nfs4.max_io as usize + 64 * 1024).max(rpc.max_record);
    if let Some(n) = args.max_connections.or(file.max_connections) {
        if n == 0 {
            bail!("max_connections = 0 would refuse every client");
        }
        rpc.max_connections = n;
    }
    if let Some(n) = args
        .max_connections_per_address
        .or(file.max_connections_per_address)
    {
        if n == 0 {
            bail!("max_connections_per_address = 0 would refuse every client");
        }
        rpc.max_connections_per_source = Some(n);
    }
    if let Some(t) = args.idle_timeout.or(file.idle_timeout_seconds) {
        // Clients holding state renew their lease at least once per lease
        // period (RFC 8881 §8.3), so a longer idle timeout spares them.
        if t != 0 && t <= nfs4.lease.as_secs() {
            bail!(
                "idle timeout {t} s must exceed the lease time ({} s), or be 0 for none",
                nfs4.lease.as_secs()
            );
        }
        rpc.idle_timeout = (t != 0).then(|| Duration::from_secs(t));
    }
    let listen = match args.listen.or(file.listen) {
        Some(l) => l,
        None => DEFAULT_LISTEN.parse().context("default listen address")?,
    };
    let portmap = match args.portmap.as_deref().or(file.portmap.as_deref()) {
        None | Some("auto") => server::config::PortmapMode::Auto,
        Some("off") => server::config::PortmapMode::Off,
        Some(a) => server::config::PortmapMode::At(a.parse().with_context(|| {
            format!("portmap {a:?}: expected \"auto\", \"off\" or an address such as 127.0.0.1:111")
        })?),
    };
    let aux = server::config::AuxConfig {
        portmap,
        mount_port: args.mount_port.or(file.mount_port),
        nlm_port: args.nlm_port.or(file.nlm_port),
        client_portmap_port: file.client_portmap_port.unwrap_or(111),
    };
    let state_dir = args
        .state_dir
        .clone()
        .or(file.state_dir)
        .unwrap_or_else(default_state_dir);
    let admin = server::config::AdminConfig {
        socket: match args.admin_socket.clone().or(file.admin_socket) {
            Some(p) if p.as_os_str() == "off" => None,
            Some(p) => Some(p),
            None => Some(state_dir.join(server::observe::admin::SOCKET)),
        },
        metrics: args.metrics.or(file.metrics),
        link_bytes_per_s: match args.link_mbps.or(file.link_mbps) {
            Some(m) if m > 0.0 && m.is_finite() => Some(m * 1e6 / 8.0),
            Some(m) => bail!("link_mbps must be a positive number, not {m}"),
            None => None,
        },
    };
    Ok(ServerConfig {
        listen,
        state_dir,
        exports,
        nfs4,
        rpc,
        aux,
        admin,
        kerberos,
        tls,
    })
}

/// The write log of the export at `path` serving `dir`: the log must
/// not be inside the export (clients would see and change it).
fn log_config(
    path: &str,
    dir: &Path,
    log: Option<&PathBuf>,
    mib: Option<u64>,
) -> anyhow::Result<Option<server::stable::writelog::LogConfig>> {
    let Some(log) = log else {
        if mib.is_some() {
            bail!("export {path}: log_mib without a log");
        }
        return Ok(None);
    };
    let abs = |p: &Path| -> PathBuf {
        let p = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        p.canonicalize().unwrap_or(p)
    };
    if abs(log).starts_with(abs(dir)) {
        bail!(
            "export {path}: the write log {} is inside the exported directory {}",
            log.display(),
            dir.display()
        );
    }
    let mib = mib.unwrap_or(server::stable::writelog::LogConfig::DEFAULT_CAPACITY >> 20);
    if mib < 8 {
        bail!("export {path}: log_mib = {mib} is too small (at least 8)");
    }
    Ok(Some(server::stable::writelog::LogConfig {
        dir: log.clone(),
        capacity_bytes: mib << 20,
    }))
}

/// `--data-servers`' list as given.
fn list_of(s: &str) -> anyhow::Result<String> {
    if s.trim().is_empty() {
        bail!("--data-servers: no data server given");
    }
    Ok(s.to_owned())
}

/// An export's pNFS configuration from its data servers, stripe unit and
/// mirrors as written, checked.
fn pnfs_config(
    path: &str,
    servers: String,
    stripe_unit: Option<&str>,
    mirrors: Option<usize>,
) -> anyhow::Result<server::pnfs::PnfsConfig> {
    let servers = server::pnfs::dataserver::parse_list(&servers)
        .map_err(|e| anyhow::anyhow!("export {path}: {e}"))?;
    let stripe_unit = match stripe_unit {
        Some(s) => bench::cli::parse_size(s)
            .map_err(|e| anyhow::anyhow!("export {path}: stripe unit: {e}"))?,
        None => server::pnfs::DEFAULT_STRIPE_UNIT,
    };
    let c = server::pnfs::PnfsConfig {
        servers,
        stripe_unit,
        mirrors: mirrors.unwrap_or(1),
    };
    c.check()
        .map_err(|e| anyhow::anyhow!("export {path}: {e}"))?;
    Ok(c)
}

/// Checks and converts the `[[export]]` tables.
/// The exports of the configuration file; `delegations` is the default of
/// those that do not say.
pub fn exports_of(file: &[FileExport], delegations: bool) -> anyhow::Result<Vec<ExportConfig>> {
    let mut out: Vec<ExportConfig> = Vec::new();
    for e in file.iter().filter(|e| e.referral.is_none()) {
        let path = normalize_path(&e.path)?;
        let Some(dir) = &e.dir else {
            bail!("export {path}: no dir (the directory to export), and no referral");
        };
        if let Some(other) = out.iter().find(|o| o.path == path) {
            bail!(
                "two exports at {path}: {} and {}",
                other.dir.display(),
                dir.display()
            );
        }
        let sec = match &e.sec {
            None => vec![Flavor::Sys],
            Some(v) if v.is_empty() => bail!("export {path}: sec = [] accepts no one"),
            Some(v) => {
                let mut flavors = Vec::new();
                for f in v {
                    let Some(fl) = Flavor::parse(f) else {
                        bail!(
                            "export {path}: unknown security flavor {f:?} \
                             (\"krb5p\", \"krb5i\", \"krb5\", \"sys\" or \"none\")"
                        );
                    };
                    if flavors.contains(&fl) {
                        bail!("export {path}: security flavor {f:?} listed twice");
                    }
                    flavors.push(fl);
                }
                flavors
            }
        };
        let xprtsec = match &e.xprtsec {
            None => ExportRules::ANY_XPRT.to_vec(),
            Some(v) if v.is_empty() => bail!("export {path}: xprtsec = [] accepts no one"),
            Some(v) => {
                let mut modes = Vec::new();
                for m in v {
                    let Some(x) = rpc::tls::Xprt::parse(m) else {
                        bail!(
                            "export {path}: unknown xprtsec {m:?} (\"tls\", \"mtls\" or \"none\")"
                        );
                    };
                    if modes.contains(&x) {
                        bail!("export {path}: xprtsec {m:?} listed twice");
                    }
                    modes.push(x);
                }
                modes
            }
        };
        let clients = match &e.clients {
            None => vec![ClientRule::new(ClientMatch::Any)],
            Some(v) => v
                .iter()
                .map(|c| client_rule(c).with_context(|| format!("export {path}")))
                .collect::<anyhow::Result<_>>()?,
        };
        let log = log_config(&path, dir, e.log.as_ref(), e.log_mib)?;
        if let Some(l) = &log {
            if let Some(other) = out
                .iter()
                .find(|o| o.log.as_ref().is_some_and(|o| o.dir == l.dir))
            {
                bail!(
                    "exports {} and {path} name the same write log {}",
                    other.path,
                    l.dir.display()
                );
            }
        }
        let pnfs = match &e.data_servers {
            Some(list) => {
                let su = match &e.stripe_unit {
                    None => None,
                    Some(toml::Value::Integer(n)) => Some(n.to_string()),
                    Some(toml::Value::String(s)) => Some(s.clone()),
                    Some(other) => bail!("export {path}: stripe_unit = {other}: a size (\"1m\") or a number of bytes"),
                };
                Some(pnfs_config(
                    &path,
                    list.join(","),
                    su.as_deref(),
                    e.mirrors,
                )?)
            }
            None if e.stripe_unit.is_some() || e.mirrors.is_some() => {
                bail!("export {path}: stripe_unit and mirrors need data_servers")
            }
            None => None,
        };
        if pnfs.is_some() && log.is_some() {
            bail!("export {path}: a write log and data servers together (the data servers keep the bytes; drop one)");
        }
        let fsid = match &e.fsid {
            None => None,
            Some(toml::Value::Integer(n)) => Some(n.to_string()),
            Some(toml::Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(other) => bail!("export {path}: fsid = {other}: a number or a string"),
        };
        let served_by = match &e.served_by {
            Some(s) => Some(
                server::exports::referral::Location::parse(&format!("{s}:{path}"))
                    .map_err(|why| anyhow::anyhow!("export {path}: served_by = {s:?}: {why}"))?,
            ),
            None => None,
        };
        out.push(ExportConfig {
            id: e.id,
            path,
            dir: dir.clone(),
            rules: ExportRules {
                clients,
                sec,
                xprtsec,
            },
            metadata_async: e.metadata_async.unwrap_or(false),
            log,
            delegations: e.delegations.unwrap_or(delegations),
            shared_locks: e.shared_locks.unwrap_or(true),
            pnfs,
            served_by,
            fsid,
        });
    }
    server::config::export_ids(&out).map_err(|e| anyhow::anyhow!("{e}"))?;
    if out.len() > 1 && out.iter().any(|e| e.path == "/") {
        bail!(
            "an export at \"/\" is the whole namespace and cannot be combined with other \
             exports: give every export its own path (\"/data\", \"/home\", ...) and \
             clients see them under a read-only pseudo root"
        );
    }
    Ok(out)
}

/// The referrals among the `[[export]]` tables (those with `referral`
/// instead of `dir`), checked against each other and `exports`: each
/// sits in the pseudo filesystem, not at "/", inside or above an export,
/// nor inside another referral.
pub fn referrals_of(
    file: &[FileExport],
    exports: &[ExportConfig],
) -> anyhow::Result<Vec<server::exports::referral::ReferralConfig>> {
    use server::exports::referral::{Location, ReferralConfig};
    let mut out: Vec<ReferralConfig> = Vec::new();
    for e in file {
        let Some(list) = &e.referral else { continue };
        let path = normalize_path(&e.path)?;
        let extra = [
            ("dir", e.dir.is_some()),
            ("sec", e.sec.is_some()),
            ("xprtsec", e.xprtsec.is_some()),
            ("clients", e.clients.is_some()),
            ("async", e.metadata_async.is_some()),
            ("log", e.log.is_some() || e.log_mib.is_some()),
            ("delegations", e.delegations.is_some()),
            ("data_servers", e.data_servers.is_some()),
            ("stripe_unit", e.stripe_unit.is_some()),
            ("mirrors", e.mirrors.is_some()),
            ("id", e.id.is_some()),
        ];
        if let Some((name, _)) = extra.iter().find(|(_, set)| *set) {
            bail!(
                "referral {path}: {name} does not apply to a referral (it has no file system here)"
            );
        }
        let locations = list
            .iter()
            .map(|l| Location::parse(l))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| anyhow::anyhow!("referral {path}: {e}"))?;
        let r = ReferralConfig { path, locations };
        r.check().map_err(|e| anyhow::anyhow!("{e}"))?;
        let comps = |p: &str| -> Vec<String> {
            p.split('/')
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect()
        };
        let below = |a: &str, b: &str| {
            let (a, b) = (comps(a), comps(b));
            a.len() <= b.len() && a.iter().zip(&b).all(|(x, y)| x == y)
        };
        for x in exports {
            if below(&x.path, &r.path) {
                bail!(
                    "referral {}: inside export {} (referrals live in the pseudo filesystem)",
                    r.path,
                    x.path
                );
            }
            if below(&r.path, &x.path) {
                bail!("referral {}: export {} lies below it", r.path, x.path);
            }
        }
        for o in &out {
            if below(&o.path, &r.path) || below(&r.path, &o.path) {
                bail!(
                    "referrals {} and {}: one lies inside the other",
                    o.path,
                    r.path
                );
            }
        }
        out.push(r);
    }
    Ok(out)
}

/// "/data/", "//data" -> "/data"; relative paths and "." or ".."
/// components are refused.
fn normalize_path(p: &str) -> anyhow::Result<String> {
    if !p.starts_with('/') {
        bail!("export path {p:?} must be absolute (start with \"/\")");
    }
    let comps: Vec<&str> = p.split('/').filter(|c| !c.is_empty()).collect();
    if comps
        .iter()
        .any(|c| *c == "." || *c == ".." || c.len() > 255)
    {
        bail!("export path {p:?}: components \".\" and \"..\" are not allowed");
    }
    Ok(format!("/{}", comps.join("/")))
}

fn client_rule(c: &FileClient) -> anyhow::Result<ClientRule> {
    let m = ClientMatch::parse(&c.match_).with_context(|| format!("client {:?}", c.match_))?;
    let mut r = ClientRule::new(m);
    r.read_only = match c.access.as_deref() {
        None | Some("rw") => false,
        Some("ro") => true,
        Some(o) => bail!(
            "client {:?}: access {o:?} is not \"rw\" or \"ro\"",
            c.match_
        ),
    };
    r.squash = match c.squash.as_deref() {
        None | Some("root") => Squash::Root,
        Some("none") => Squash::None,
        Some("all") => Squash::All,
        Some(o) => bail!(
            "client {:?}: squash {o:?} is not \"root\", \"none\" or \"all\"",
            c.match_
        ),
    };
    r.anonuid = c.anonuid.unwrap_or(NOBODY);
    r.anongid = c.anongid.unwrap_or(NOBODY);
    r.secure = c.secure.unwrap_or(true);
    Ok(r)
}

fn parse_file(p: &Path) -> anyhow::Result<FileConfig> {
    let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
    toml::from_str(&text).with_context(|| format!("parsing {}", p.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> anyhow::Result<Vec<ExportConfig>> {
        let f: FileConfig = toml::from_str(text)?;
        exports_of(&f.export, false)
    }

    fn parse_referrals(
        text: &str,
    ) -> anyhow::Result<Vec<server::exports::referral::ReferralConfig>> {
        let f: FileConfig = toml::from_str(text)?;
        let exports = exports_of(&f.export, false)?;
        referrals_of(&f.export, &exports)
    }

    /// A referral is an `[[export]]` with `referral` instead of `dir`;
    /// it must sit in the pseudo filesystem and carry nothing else.
    #[test]
    fn referrals_are_read_and_checked() {
        let r = parse_referrals(
            r#"
            [[export]]
            path = "/data"
            dir = "/tmp/x"
            [[export]]
            path = "/far/"
            referral = ["10.0.0.2:2050:/srv", "10.0.0.3:/"]
            "#,
        )
        .unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].path, "/far");
        assert_eq!(r[0].locations[0].port, 2050);
        assert_eq!(r[0].locations[1].port, 2049);
        for (bad, why) in [
            (
                r#"path = "/data/in"
                referral = ["10.0.0.2:/x"]"#,
                "inside export",
            ),
            (
                r#"path = "/"
                referral = ["10.0.0.2:/x"]"#,
                "root",
            ),
            (
                r#"path = "/r"
                referral = []"#,
                "no location",
            ),
            (
                r#"path = "/r"
                referral = ["10.0.0.2"]"#,
                "HOST:PORT:/path",
            ),
            (
                r#"path = "/r"
                dir = "/tmp/y"
                referral = ["10.0.0.2:/x"]"#,
                "dir does not apply",
            ),
        ] {
            let text =
                format!("[[export]]\npath = \"/data\"\ndir = \"/tmp/x\"\n[[export]]\n{bad}\n");
            let e = parse_referrals(&text).unwrap_err();
            assert!(format!("{e:#}").contains(why), "{bad}: {e:#}");
        }
        let e = parse_referrals(
            "[[export]]\npath = \"/data/sub\"\ndir = \"/tmp/x\"\n[[export]]\npath = \"/data\"\nreferral = [\"10.0.0.2:/x\"]\n",
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("lies below it"), "{e:#}");
        let e = parse_referrals(
            "[[export]]\npath = \"/a\"\nreferral = [\"10.0.0.2:/x\"]\n[[export]]\npath = \"/a/b\"\nreferral = [\"10.0.0.2:/y\"]\n",
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("inside the other"), "{e:#}");
        let e = parse("[[export]]\npath = \"/nodir\"\n").unwrap_err();
        assert!(format!("{e:#}").contains("no dir"), "{e:#}");
    }

    /// An export's id is its own, or its position; one id twice is
    /// refused, also when a position meets a given id.
    #[test]
    fn export_ids() {
        let e = parse(
            "[[export]]\nid = 7\npath = \"/a\"\ndir = \"/tmp/a\"\n\
             [[export]]\npath = \"/b\"\ndir = \"/tmp/b\"\n",
        )
        .unwrap();
        assert_eq!(server::config::export_ids(&e).unwrap(), vec![7, 1]);
        let twice = parse(
            "[[export]]\nid = 3\npath = \"/a\"\ndir = \"/tmp/a\"\n\
             [[export]]\nid = 3\npath = \"/b\"\ndir = \"/tmp/b\"\n",
        );
        let err = twice.unwrap_err().to_string();
        assert!(err.contains("/a and /b have the same id 3"), "{err}");
        let position = parse(
            "[[export]]\nid = 1\npath = \"/a\"\ndir = \"/tmp/a\"\n\
             [[export]]\npath = \"/b\"\ndir = \"/tmp/b\"\n",
        );
        assert!(position.unwrap_err().to_string().contains("same id 1"));
        let reserved = parse("[[export]]\nid = 65535\npath = \"/a\"\ndir = \"/tmp/a\"\n");
        assert!(reserved.unwrap_err().to_string().contains("reserved"));
    }

    #[test]
    fn several_exports_with_rules() {
        let e = parse(
            r#"
            [[export]]
            path = "/data/"
            dir = "/srv/data"
            [[export.clients]]
            match = "10.0.0.0/8"
            [[export.clients]]
            match = "*"
            access = "ro"
            squash = "all"
            anonuid = 1234
            anongid = 1235
            secure = false

            [[export]]
            path = "/home/shared"
            dir = "/srv/shared"
            sec = ["sys", "none"]

            [[export]]
            path = "/data/archive"
            dir = "/srv/archive"
            "#,
        )
        .unwrap();
        assert_eq!(e.len(), 3);
        assert_eq!(e[0].path, "/data");
        let c = &e[0].rules.clients;
        assert_eq!(c.len(), 2);
        assert_eq!(
            c[0].matches,
            ClientMatch::Net {
                addr: "10.0.0.0".parse().unwrap(),
                prefix: 8
            }
        );
        assert!(!c[0].read_only && c[0].secure && c[0].squash == Squash::Root);
        assert_eq!((c[0].anonuid, c[0].anongid), (NOBODY, NOBODY));
        assert!(c[1].read_only && !c[1].secure && c[1].squash == Squash::All);
        assert_eq!((c[1].anonuid, c[1].anongid), (1234, 1235));
        assert_eq!(e[0].rules.sec, vec![Flavor::Sys]);
        assert_eq!(e[1].rules.sec, vec![Flavor::Sys, Flavor::None]);
        // No rules: everyone, with the defaults.
        assert_eq!(e[1].rules.clients, vec![ClientRule::new(ClientMatch::Any)]);
    }

    #[test]
    fn refused_configurations() {
        let dup = r#"
            [[export]]
            path = "/data"
            dir = "/a"
            [[export]]
            path = "/data/"
            dir = "/b"
        "#;
        assert!(format!("{:#}", parse(dup).unwrap_err()).contains("two exports at /data"));
        let root_and_more = r#"
            [[export]]
            path = "/"
            dir = "/a"
            [[export]]
            path = "/b"
            dir = "/b"
        "#;
        assert!(format!("{:#}", parse(root_and_more).unwrap_err()).contains("cannot be combined"));
        for bad in [
            r#"path = "data""#,
            r#"path = "/a/../b""#,
            "path = \"/a\"\nsec = [\"krb6\"]",
            "path = \"/a\"\nsec = [\"krb5\", \"krb5\"]",
            "path = \"/a\"\nsec = []",
            "path = \"/a\"\n[[export.clients]]\nmatch = \"10.0.0.0/40\"",
            "path = \"/a\"\n[[export.clients]]\nmatch = \"10.0.0/8\"",
            "path = \"/a\"\n[[export.clients]]\nmatch = \"*\"\naccess = \"rx\"",
            "path = \"/a\"\n[[export.clients]]\nmatch = \"*\"\nsquash = \"some\"",
            "path = \"/a\"\n[[export.clients]]\nmatch = \"*\"\nfoo = 1",
            "path = \"/a\"\n[[export.clients]]\nmatch = \"no-such-host.invalid\"",
        ] {
            let text = format!("[[export]]\ndir = \"/x\"\n{bad}");
            assert!(parse(&text).is_err(), "accepted: {bad}");
        }
        // A single "/" export is fine.
        let one = parse("[[export]]\npath = \"/\"\ndir = \"/x\"").unwrap();
        assert_eq!(one[0].path, "/");
    }

    #[test]
    fn write_logs() {
        let one =
            parse("[[export]]\npath = \"/a\"\ndir = \"/x\"\nlog = \"/l\"\nlog_mib = 64").unwrap();
        assert_eq!(
            one[0].log,
            Some(server::stable::writelog::LogConfig {
                dir: "/l".into(),
                capacity_bytes: 64 << 20
            })
        );
        for (bad, why) in [
            (
                "dir = \"/x\"\nlog = \"/x/log\"",
                "inside the exported directory",
            ),
            ("dir = \"/x\"\nlog = \"/l\"\nlog_mib = 1", "too small"),
            ("dir = \"/x\"\nlog_mib = 64", "without a log"),
        ] {
            let e = parse(&format!("[[export]]\npath = \"/a\"\n{bad}")).unwrap_err();
            assert!(format!("{e:#}").contains(why), "{bad}: {e:#}");
        }
        let shared = "[[export]]\npath = \"/a\"\ndir = \"/x\"\nlog = \"/l\"\n\
                      [[export]]\npath = \"/b\"\ndir = \"/y\"\nlog = \"/l\"";
        assert!(format!("{:#}", parse(shared).unwrap_err()).contains("same write log"));
    }

    #[test]
    fn client_matches() {
        let e = parse(
            r#"
            [[export]]
            path = "/a"
            dir = "/x"
            clients = [
                { match = "192.168.1.7" },
                { match = "fd00::/8" },
                { match = "localhost" },
                { match = "*" },
            ]
            "#,
        )
        .unwrap();
        let c = &e[0].rules.clients;
        assert!(c[0].matches.matches("192.168.1.7".parse().unwrap()));
        assert!(!c[0].matches.matches("192.168.1.8".parse().unwrap()));
        assert!(c[1].matches.matches("fd00::5".parse().unwrap()));
        assert!(matches!(c[2].matches, ClientMatch::Host { .. }));
        assert_eq!(c[3].matches, ClientMatch::Any);
    }

    #[test]
    fn example_file_loads() {
        let f: FileConfig =
            toml::from_str(include_str!("../../../docs/ferrite.example.toml")).unwrap();
        let e = exports_of(&f.export, false).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].rules.clients.len(), 2);
    }

    /// `ferrite serve /tmp/x --state-dir /tmp/s`.
    fn quick() -> ServeArgs {
        ServeArgs {
            dir: Some("/tmp/x".into()),
            listen: None,
            state_dir: Some("/tmp/s".into()),
            lease: None,
            grace: None,
            config: None,
            root_squash: false,
            secure: false,
            metadata_async: false,
            log: None,
            log_mib: None,
            data_servers: None,
            stripe_unit: None,
            mirrors: None,
            max_connections: None,
            max_connections_per_address: None,
            idle_timeout: None,
            delegations: false,
            no_delegations: false,
            no_shared_locks: false,
            portmap: None,
            mount_port: None,
            nlm_port: None,
            metrics: None,
            admin_socket: None,
            link_mbps: None,
            fsid: None,
            standby: false,
        }
    }

    /// The administration socket is in the state directory unless placed
    /// elsewhere or turned off; metrics only when asked for.
    #[test]
    fn admin_options() {
        let cfg = load(&quick()).unwrap();
        assert_eq!(cfg.admin.socket, Some("/tmp/s/admin.sock".into()));
        assert_eq!(cfg.admin.metrics, None);
        let cfg = load(&ServeArgs {
            admin_socket: Some("off".into()),
            metrics: Some("127.0.0.1:9100".parse().unwrap()),
            ..quick()
        })
        .unwrap();
        assert_eq!(cfg.admin.socket, None);
        assert_eq!(cfg.admin.metrics, Some("127.0.0.1:9100".parse().unwrap()));
    }

    /// Kerberos flavors need a [kerberos] section; its settings are read;
    /// an owner domain must be a domain.
    /// Loads the configuration file `text` (written in `dir`).
    fn load_toml(dir: &Path, text: &str) -> anyhow::Result<ServerConfig> {
        let p = dir.join("f.toml");
        std::fs::write(&p, text).unwrap();
        load(&ServeArgs {
            dir: None,
            config: Some(p),
            ..quick()
        })
    }

    #[test]
    fn kerberos_and_owner_domain() {
        let dir = tempfile::tempdir().unwrap();
        let load_text = |text: &str| load_toml(dir.path(), text);
        let export = "[[export]]\npath = \"/s\"\ndir = \"/tmp/s\"\nsec = [\"krb5p\", \"sys\"]\n";
        let e = format!("{:#}", load_text(export).unwrap_err());
        assert!(e.contains("needs Kerberos"), "{e}");
        let cfg = load_text(&format!(
            "owner_domain = \"Example.COM\"\n[kerberos]\nkeytab = \"/k\"\nprincipals = {{ \"a@R\" = \"alice\" }}\n{export}"
        ))
        .unwrap();
        let k = cfg.kerberos.unwrap();
        assert_eq!(k.keytab, PathBuf::from("/k"));
        assert_eq!(k.principals, vec![("a@R".to_string(), "alice".to_string())]);
        assert_eq!(cfg.nfs4.owner_domain.as_deref(), Some("example.com"));
        assert!(
            load_text("owner_domain = \"a@b\"\n[[export]]\npath = \"/\"\ndir = \"/tmp/s\"")
                .is_err()
        );
    }

    /// `[tls]` is read; `xprtsec` is checked, and without `[tls]` an
    /// export that refuses plain connections is refused.
    #[test]
    fn tls_and_xprtsec() {
        let dir = tempfile::tempdir().unwrap();
        let load_text = |text: &str| load_toml(dir.path(), text);
        let export =
            |x: &str| format!("[[export]]\npath = \"/s\"\ndir = \"/tmp/s\"\nxprtsec = {x}\n");
        let e = format!("{:#}", load_text(&export("[\"tls\"]")).unwrap_err());
        assert!(e.contains("needs TLS"), "{e}");
        let cfg = load_text(&export("[\"none\", \"tls\"]")).unwrap();
        assert!(cfg.tls.is_none());
        assert_eq!(
            cfg.exports[0].rules.xprtsec,
            vec![rpc::tls::Xprt::None, rpc::tls::Xprt::Tls]
        );
        let tls = "[tls]\ncertificate = \"/c.pem\"\nkey = \"/k.pem\"\nclient_ca = \"/ca.pem\"\nhandshake_timeout = 3\n";
        let cfg = load_text(&format!("{tls}{}", export("[\"mtls\"]"))).unwrap();
        let t = cfg.tls.unwrap();
        assert_eq!(t.certificate, PathBuf::from("/c.pem"));
        assert_eq!(t.key, PathBuf::from("/k.pem"));
        assert_eq!(t.client_ca, Some(PathBuf::from("/ca.pem")));
        assert_eq!(t.handshake_timeout, std::time::Duration::from_secs(3));
        assert_eq!(cfg.exports[0].rules.xprtsec, vec![rpc::tls::Xprt::Mtls]);
        for bad in ["[]", "[\"ssl\"]", "[\"tls\", \"tls\"]"] {
            let e = format!(
                "{:#}",
                load_text(&format!("{tls}{}", export(bad))).unwrap_err()
            );
            assert!(e.contains("xprtsec"), "{bad}: {e}");
        }
        // The default: every transport.
        let cfg = load_text("[[export]]\npath = \"/s\"\ndir = \"/tmp/s\"\n").unwrap();
        assert_eq!(cfg.exports[0].rules.xprtsec.len(), 3);
    }

    #[test]
    fn portmap_option() {
        let cfg = load(&quick()).unwrap();
        assert_eq!(cfg.aux.portmap, server::config::PortmapMode::Auto);
        assert_eq!(cfg.aux.client_portmap_port, 111);
        let with = |p: &str| {
            load(&ServeArgs {
                portmap: Some(p.into()),
                ..quick()
            })
        };
        assert_eq!(
            with("off").unwrap().aux.portmap,
            server::config::PortmapMode::Off
        );
        assert_eq!(
            with("127.0.0.1:1111").unwrap().aux.portmap,
            server::config::PortmapMode::At("127.0.0.1:1111".parse().unwrap())
        );
        let e = with("sometimes").unwrap_err().to_string();
        assert!(e.contains("auto"), "{e}");
    }

    #[test]
    fn quick_form_is_open() {
        let args = quick();
        let cfg = load(&args).unwrap();
        assert_eq!(cfg.exports.len(), 1);
        assert_eq!(cfg.exports[0].path, "/");
        assert_eq!(cfg.exports[0].rules, ExportRules::open());
        let cfg = load(&ServeArgs {
            root_squash: true,
            secure: true,
            metadata_async: false,
            ..args
        })
        .unwrap();
        let r = &cfg.exports[0].rules.clients[0];
        assert!(r.secure && r.squash == Squash::Root);
    }

    #[test]
    fn delegations_are_on_unless_turned_off() {
        let args = quick();
        assert!(load(&args).unwrap().exports[0].delegations);
        let off = load(&ServeArgs {
            no_delegations: true,
            no_shared_locks: false,
            ..args.clone()
        })
        .unwrap();
        assert!(!off.exports[0].delegations);
        let on = load(&ServeArgs {
            delegations: true,
            ..args
        })
        .unwrap();
        assert!(on.exports[0].delegations);
        // In the file: a default for the exports, each may say otherwise.
        let file: FileConfig = toml::from_str(
            "delegations = true\n\
             [[export]]\npath = \"/a\"\ndir = \"/tmp/a\"\n\
             [[export]]\npath = \"/b\"\ndir = \"/tmp/b\"\ndelegations = false\n",
        )
        .unwrap();
        let e = exports_of(&file.export, file.delegations.unwrap_or(true)).unwrap();
        assert_eq!((e[0].delegations, e[1].delegations), (true, false));
        // Unsaid: on.
        let file: FileConfig =
            toml::from_str("[[export]]\npath = \"/a\"\ndir = \"/tmp/a\"\n").unwrap();
        let e = exports_of(&file.export, file.delegations.unwrap_or(true)).unwrap();
        assert!(e[0].delegations);
    }

    #[test]
    fn connection_limits() {
        let args = quick();
        let cfg = load(&args).unwrap();
        assert_eq!(cfg.rpc.max_connections, 4096);
        assert_eq!(cfg.rpc.idle_timeout, Some(Duration::from_secs(300)));
        let cfg = load(&ServeArgs {
            max_connections: Some(10),
            idle_timeout: Some(0),
            ..args
        })
        .unwrap();
        assert_eq!(cfg.rpc.max_connections, 10);
        assert_eq!(cfg.rpc.idle_timeout, None);
        assert_eq!(cfg.rpc.max_connections_per_source, None);
        let per = |n| ServeArgs {
            max_connections_per_address: Some(n),
            ..quick()
        };
        assert_eq!(
            load(&per(8)).unwrap().rpc.max_connections_per_source,
            Some(8)
        );
        assert!(load(&per(0)).is_err());
        let short = ServeArgs {
            lease: Some(90),
            max_connections: Some(0),
            idle_timeout: Some(60),
            ..quick()
        };
        assert!(load(&short).is_err());
        // The grace period: at least a lease, or none.
        let grace = |g| ServeArgs {
            grace: Some(g),
            max_connections: None,
            idle_timeout: None,
            ..short.clone()
        };
        assert!(load(&grace(30)).is_err());
        assert_eq!(load(&grace(0)).unwrap().nfs4.grace, Some(Duration::ZERO));
        assert_eq!(
            load(&grace(120)).unwrap().nfs4.grace,
            Some(Duration::from_secs(120))
        );
        assert!(load(&ServeArgs {
            max_connections: None,
            ..short
        })
        .is_err());
        let f: FileConfig =
            toml::from_str(include_str!("../../../docs/ferrite.example.toml")).unwrap();
        assert_eq!(f.max_connections, Some(4096));
        assert_eq!(f.idle_timeout_seconds, Some(300));
    }
}
