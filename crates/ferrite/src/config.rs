//! Command-line options and the `ferrite.toml` configuration file.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};
use serde::Deserialize;
use server::run::{ExportConfig, ServerConfig};

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Directory to export at "/", created if missing (overrides the
    /// exports of --config).
    pub dir: Option<PathBuf>,
    /// Address and port to listen on.
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Directory for state that must survive restarts.
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// Lease time in seconds (RFC 8881 §8.3).
    #[arg(long)]
    pub lease: Option<u64>,
    /// Configuration file (TOML); command-line options override it.
    #[arg(long)]
    pub config: Option<PathBuf>,
}

/// The configuration file's shape. Every field is optional.
#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub listen: Option<SocketAddr>,
    pub state_dir: Option<PathBuf>,
    pub lease_seconds: Option<u64>,
    /// Most session slots granted to a client.
    pub max_slots: Option<u32>,
    /// Largest READ/WRITE in bytes.
    pub max_io: Option<u32>,
    /// Reply-cache memory budget in MiB.
    pub reply_cache_mib: Option<usize>,
    /// Report owners as host user and group names instead of numbers.
    pub owner_names: Option<bool>,
    #[serde(default)]
    pub export: Vec<FileExport>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct FileExport {
    /// Where clients see the export.
    pub path: String,
    /// The local directory exported.
    pub dir: PathBuf,
}

pub const DEFAULT_LISTEN: &str = "127.0.0.1:2049";

/// /var/lib/ferrite for root, ~/.local/state/ferrite for everyone else.
fn default_state_dir() -> PathBuf {
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
    let mut exports: Vec<ExportConfig> = file
        .export
        .iter()
        .map(|e| ExportConfig {
            path: e.path.clone(),
            dir: e.dir.clone(),
        })
        .collect();
    if let Some(d) = &args.dir {
        exports = vec![ExportConfig {
            path: "/".into(),
            dir: d.clone(),
        }];
    }
    if exports.is_empty() {
        bail!("nothing to export: give a directory (ferrite serve DIR) or [[export]] entries in --config");
    }
    if exports.len() > 1 || exports[0].path != "/" {
        bail!("this version exports exactly one directory, at \"/\"");
    }
    let mut nfs4 = server::nfs4::Nfs4Config::default();
    if let Some(l) = args.lease.or(file.lease_seconds) {
        if l < 5 {
            bail!("lease time {l} s is too short (at least 5 s)");
        }
        nfs4.lease = Duration::from_secs(l);
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
    if let Some(m) = file.reply_cache_mib {
        nfs4.drc_budget = m * 1024 * 1024;
    }
    let mut rpc = rpc::ConnConfig::default();
    rpc.max_record = (nfs4.max_io as usize + 64 * 1024).max(rpc.max_record);
    let listen = match args.listen.or(file.listen) {
        Some(l) => l,
        None => DEFAULT_LISTEN.parse().context("default listen address")?,
    };
    Ok(ServerConfig {
        listen,
        state_dir: args
            .state_dir
            .clone()
            .or(file.state_dir)
            .unwrap_or_else(default_state_dir),
        exports,
        nfs4,
        rpc,
    })
}

fn parse_file(p: &Path) -> anyhow::Result<FileConfig> {
    let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
    toml::from_str(&text).with_context(|| format!("parsing {}", p.display()))
}
