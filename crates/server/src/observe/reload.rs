//! Reloading the configuration while serving (SIGHUP, `ferrite reload`):
//! exports added, removed or changed, and their client rules, applied
//! without dropping a connection, a session or any state.
//!
//! What a reload does to each export, matched by id (an export without
//! an `id` has its position):
//! * rules, security flavors, path, `delegations` and `async` change in
//!   place: the backend, its open files and caches stay, and so do the
//!   filehandles clients hold (they carry the id and the root's tag);
//! * a new id is a new export, opened as at start;
//! * an id no longer configured is removed: its filehandles are stale
//!   (NFS4ERR_STALE, NFS3ERR_STALE), as is any that was made while an
//!   export of that id served another directory;
//! * a new `dir` for an id is a new backend there: filehandles into the
//!   old directory are stale.
//!
//! Write logs are opened at start and applied at stop, never in between:
//! a change that would add, remove or move one (or remove or re-root an
//! export that has one) is refused, and then nothing changes at all. A
//! reload is all or nothing: a configuration that does not load, or an
//! export that cannot be opened, leaves everything as it was.
//!
//! Settings of the listener, the state directory, the NFSv4 limits and
//! the administration side take effect at the next start; a reload that
//! finds them changed says so.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::config::{export_ids, open_export, ExportConfig, ServerConfig};
use crate::exports::export::Export;
use crate::instance::Server;

/// What a reload changed, and what waits for a restart.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReloadReport {
    /// One line per change applied; empty when nothing changed.
    pub changes: Vec<String>,
    /// Settings that changed in the configuration but apply only at the
    /// next start.
    pub at_restart: Vec<String>,
}

/// What becomes of one export of the new configuration.
enum Plan<'a> {
    /// The running export, under its new settings.
    Keep {
        was: Arc<Export>,
        cfg: &'a ExportConfig,
        id: u16,
    },
    /// A backend opened for it.
    Open { cfg: &'a ExportConfig, id: u16 },
}

/// Applies `new` over `old` (the configuration the server runs) to `srv`:
/// the report, or why nothing was changed.
pub async fn apply(
    srv: &Arc<Server>,
    old: &ServerConfig,
    new: &ServerConfig,
) -> Result<ReloadReport, String> {
    let new_ids = export_ids(&new.exports).map_err(|e| e.to_string())?;
    let old_ids = export_ids(&old.exports).map_err(|e| e.to_string())?;
    let before: HashMap<u16, &ExportConfig> = old_ids.iter().copied().zip(&old.exports).collect();
    let current = srv.exports();
    let mut report = ReloadReport::default();
    let mut plans = Vec::new();
    for (cfg, &id) in new.exports.iter().zip(&new_ids) {
        let running = current.get(id);
        let Some((was_cfg, was)) = before.get(&id).zip(running) else {
            if cfg.log.is_some() {
                return Err(log_refusal(&cfg.path, id, "a new export with a write log"));
            }
            report.changes.push(format!(
                "export {} (id {id}) added: {}",
                cfg.path,
                cfg.dir.display()
            ));
            plans.push(Plan::Open { cfg, id });
            continue;
        };
        if was_cfg.log != cfg.log {
            return Err(log_refusal(&cfg.path, id, "its write log changed"));
        }
        if was_cfg.pnfs != cfg.pnfs {
            report.changes.push(format!(
                "export {} (id {id}): its data servers changed: layouts recalled",
                cfg.path
            ));
            plans.push(Plan::Open { cfg, id });
            continue;
        }
        if was_cfg.dir != cfg.dir {
            if cfg.log.is_some() {
                return Err(log_refusal(&cfg.path, id, "its directory changed"));
            }
            report.changes.push(format!(
                "export {} (id {id}) now serves {} instead of {}: filehandles into the old directory are stale",
                cfg.path,
                cfg.dir.display(),
                was_cfg.dir.display()
            ));
            plans.push(Plan::Open { cfg, id });
            continue;
        }
        report.changes.extend(differences(was_cfg, cfg, id));
        plans.push(Plan::Keep {
            was: was.clone(),
            cfg,
            id,
        });
    }
    for (id, was) in &before {
        if new_ids.contains(id) {
            continue;
        }
        if was.log.is_some() {
            return Err(log_refusal(
                &was.path,
                *id,
                "removing an export with a write log",
            ));
        }
        report.changes.push(format!(
            "export {} (id {id}) removed: its clients' filehandles are stale",
            was.path
        ));
    }
    if old.nfs4.referrals != new.nfs4.referrals {
        let names = |c: &ServerConfig| -> Vec<String> {
            c.nfs4
                .referrals
                .iter()
                .map(|r| {
                    let at: Vec<String> = r.locations.iter().map(|l| l.to_string()).collect();
                    format!("{} -> {}", r.path, at.join(", "))
                })
                .collect()
        };
        let (was, now) = (names(old), names(new));
        for r in was.iter().filter(|r| !now.contains(r)) {
            report.changes.push(format!("referral {r} removed"));
        }
        for r in now.iter().filter(|r| !was.contains(r)) {
            report.changes.push(format!("referral {r} added"));
        }
    }
    report.changes.sort();
    report.at_restart = restart_only(old, new);
    // Opened before anything changes: one that fails leaves all as it was.
    let mut list = Vec::with_capacity(plans.len());
    let mut toggles = Vec::new();
    for p in plans {
        list.push(Arc::new(match p {
            Plan::Open { cfg, id } => open_export(cfg, id, &old.state_dir)
                .await
                .map_err(|e| format!("export {} (id {id}): {e}", cfg.path))?,
            Plan::Keep { was, cfg, id } => {
                let was_async = before.get(&id).is_some_and(|c| c.metadata_async);
                if was_async != cfg.metadata_async {
                    toggles.push((was.vfs.clone(), cfg.metadata_async));
                }
                Export {
                    id,
                    path: cfg.path.clone(),
                    vfs: was.vfs.clone(),
                    fsid: was.fsid,
                    rules: cfg.rules.clone(),
                    log: was.log.clone(),
                    delegations: cfg.delegations,
                    shared_locks: cfg.shared_locks,
                    pnfs: was.pnfs.clone(),
                }
            }
        }));
    }
    if report.changes.is_empty() {
        return Ok(report);
    }
    for (fs, on) in toggles {
        fs.set_metadata_async(on);
    }
    // The namespace's junctions are looked up in the backends.
    let s = srv.clone();
    let referrals = new.nfs4.referrals.clone();
    tokio::task::spawn_blocking(move || s.replace_exports(list, Some(referrals)))
        .await
        .map_err(|e| format!("laying out the namespace: {e}"))?;
    crate::conflicts::local_locks::install(srv);
    // An export whose data servers changed (or that had some and went):
    // its layouts name the old ones, so they are recalled (RFC 8881
    // §12.5.5.1, LAYOUTRECALL4_FSID).
    for (id, was) in &before {
        let now = new_ids
            .iter()
            .position(|n| n == id)
            .map(|i| &new.exports[i].pnfs);
        if was.pnfs.is_some() && now != Some(&was.pnfs) {
            for r in srv.state().recall_all_layouts(Some(*id)) {
                if let Some(cb) = srv.callbacks() {
                    cb.recall_layout(r);
                }
            }
        }
    }
    Ok(report)
}

fn log_refusal(path: &str, id: u16, what: &str) -> String {
    format!(
        "export {path} (id {id}): {what}: write logs are opened at start and applied at \
         stop, so this takes a restart; nothing was changed"
    )
}

/// The changes to an export kept in place.
fn differences(a: &ExportConfig, b: &ExportConfig, id: u16) -> Vec<String> {
    let mut out = Vec::new();
    let name = |p: &str| format!("export {p} (id {id})");
    if a.path != b.path {
        out.push(format!("{} moved from {}", name(&b.path), a.path));
    }
    if a.rules.clients != b.rules.clients {
        let rules: Vec<String> = b.rules.clients.iter().map(|r| r.to_string()).collect();
        out.push(format!(
            "{} client rules now: {}",
            name(&b.path),
            rules.join(" ")
        ));
    }
    if a.rules.sec != b.rules.sec {
        out.push(format!(
            "{} security flavors now: {:?}",
            name(&b.path),
            b.rules.sec
        ));
    }
    if a.delegations != b.delegations {
        out.push(format!(
            "{} delegations {}",
            name(&b.path),
            if b.delegations {
                "granted from now on"
            } else {
                "no longer granted (those held stay until returned)"
            }
        ));
    }
    if a.metadata_async != b.metadata_async {
        out.push(format!(
            "{} {}",
            name(&b.path),
            if b.metadata_async {
                "now answers metadata changes before they are durable (async)"
            } else {
                "now answers metadata changes once they are durable"
            }
        ));
    }
    out
}

/// The settings that differ between `a` and `b` and apply only at start.
fn restart_only(a: &ServerConfig, b: &ServerConfig) -> Vec<String> {
    let mut out = Vec::new();
    let mut note = |changed: bool, what: &str| {
        if changed {
            out.push(format!("{what} changed: takes effect at the next start"));
        }
    };
    note(a.listen != b.listen, "the listening address");
    note(a.state_dir != b.state_dir, "the state directory");
    let limits = |c: &ServerConfig| crate::instance::Nfs4Config {
        referrals: Vec::new(),
        ..c.nfs4.clone()
    };
    note(
        limits(a) != limits(b),
        "NFSv4 settings (lease, grace, limits, delegation limits)",
    );
    note(a.rpc != b.rpc, "connection limits");
    note(a.aux != b.aux, "the port mapper, MOUNT or NLM ports");
    note(
        a.admin != b.admin,
        "the administration socket, metrics or link speed",
    );
    note(
        a.kerberos != b.kerberos,
        "[kerberos] (key table, principal map)",
    );
    note(
        a.tls != b.tls,
        "[tls] (certificate, key, client authorities)",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exports::export::{ClientMatch, ClientRule};

    fn cfg(exports: Vec<ExportConfig>) -> ServerConfig {
        ServerConfig::new("127.0.0.1:0".parse().unwrap(), "/nonexistent", exports)
    }

    #[test]
    fn differences_are_named() {
        let a = ExportConfig::open("/data", "/srv/data");
        let mut b = a.clone();
        assert!(differences(&a, &b, 0).is_empty());
        b.path = "/d".into();
        b.rules.clients = vec![ClientRule::new(ClientMatch::parse("10.0.0.0/8").unwrap())];
        b.delegations = false;
        let d = differences(&a, &b, 3);
        assert_eq!(d.len(), 3, "{d:?}");
        assert!(d[0].contains("export /d (id 3) moved from /data"), "{d:?}");
        assert!(d[1].contains("10.0.0.0/8"), "{d:?}");
        assert!(d[2].contains("delegations no longer granted"), "{d:?}");
    }

    #[test]
    fn restart_only_settings_are_named() {
        let a = cfg(vec![]);
        let mut b = a.clone();
        assert!(restart_only(&a, &b).is_empty());
        b.nfs4.lease = std::time::Duration::from_secs(7);
        b.listen = "127.0.0.1:1".parse().unwrap();
        let r = restart_only(&a, &b);
        assert_eq!(r.len(), 2, "{r:?}");
        assert!(r[0].starts_with("the listening address"));
        assert!(r[1].starts_with("NFSv4 settings"));
    }
}
