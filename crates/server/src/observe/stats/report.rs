//! The statistics as one document: what `ferrite stat` prints (it gets
//! this as JSON over the administration socket) and what the metrics
//! endpoint turns into Prometheus text.

use std::sync::atomic::Ordering;
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};

pub use super::Reloads;
pub use crate::observe::process::{process, Process};

use super::hist;
use super::names::{proc_name, status_name};
use super::{OpCounters, Program};
use crate::instance::Server;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Report {
    pub version: String,
    pub pid: u32,
    /// Seconds since the epoch.
    pub started: u64,
    pub uptime_s: f64,
    pub process: Process,
    pub programs: Vec<ProgramReport>,
    /// Whole NFSv4 COMPOUNDs.
    pub compounds: OpReport,
    pub exports: Vec<ExportReport>,
    /// Referrals: paths whose file systems live on other servers.
    #[serde(default)]
    pub referrals: Vec<ReferralReport>,
    pub clients: Vec<ClientReport>,
    /// Hosts seen over NFSv3, MOUNT, NLM and NSM.
    pub hosts: Vec<HostReport>,
    /// The load model: utilization per resource, and what limits.
    pub load: crate::observe::load::LoadReport,
    /// Configuration reloads (SIGHUP, `ferrite reload`).
    #[serde(default)]
    pub reloads: Reloads,
    /// RPCSEC_GSS and RPC-over-TLS, where configured.
    #[serde(default)]
    pub security: Security,
}

/// What came of RPCSEC_GSS calls and TLS handshakes since the start.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Security {
    pub gss: Option<GssReport>,
    pub tls: Option<TlsReport>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct GssReport {
    /// Contexts held now, and the most that may be.
    pub contexts: u64,
    pub max_contexts: u64,
    pub established: u64,
    /// Context creations refused (bad, forged or replayed tokens).
    pub refused: u64,
    /// Calls refused (unknown or expired context, bad checksum).
    pub denied: u64,
    /// Calls dropped (replays, below the window).
    pub dropped: u64,
    /// Calls whose sealed arguments did not check.
    pub garbage: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TlsReport {
    pub probes: u64,
    pub established: u64,
    pub mutual: u64,
    pub failed: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProgramReport {
    pub name: String,
    /// The operations (procedures) used, in number order.
    pub ops: Vec<OpReport>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct OpReport {
    pub name: String,
    pub count: u64,
    pub errors: u64,
    /// Statuses other than OK, by name.
    pub statuses: Vec<(String, u64)>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Total time, nanoseconds.
    pub nanos: u64,
    /// Non-empty latency buckets ([`hist`]): (bucket, count).
    pub latency: Vec<(u16, u64)>,
}

impl OpReport {
    fn of(name: String, c: &OpCounters, p: Program) -> Self {
        OpReport {
            name,
            count: c.count(),
            errors: c.errors.load(Ordering::Relaxed),
            statuses: c
                .statuses()
                .into_iter()
                .map(|(s, n)| (status_name(p, s), n))
                .collect(),
            bytes_in: c.bytes_in.load(Ordering::Relaxed),
            bytes_out: c.bytes_out.load(Ordering::Relaxed),
            nanos: c.nanos.load(Ordering::Relaxed),
            latency: c.latency.sparse(),
        }
    }

    pub fn mean_us(&self) -> Option<f64> {
        (self.count > 0).then(|| self.nanos as f64 / self.count as f64 / 1e3)
    }

    /// The `q` quantile of latency in µs.
    pub fn quantile_us(&self, q: f64) -> Option<f64> {
        hist::quantile(&self.latency, q).map(|ns| ns / 1e3)
    }

    /// What was counted since `before` (the same operation, earlier).
    pub fn since(&self, before: &OpReport) -> OpReport {
        let statuses = self
            .statuses
            .iter()
            .filter_map(|(s, n)| {
                let old = before
                    .statuses
                    .iter()
                    .find(|(t, _)| t == s)
                    .map_or(0, |x| x.1);
                (*n > old).then(|| (s.clone(), n - old))
            })
            .collect();
        OpReport {
            name: self.name.clone(),
            count: self.count.saturating_sub(before.count),
            errors: self.errors.saturating_sub(before.errors),
            statuses,
            bytes_in: self.bytes_in.saturating_sub(before.bytes_in),
            bytes_out: self.bytes_out.saturating_sub(before.bytes_out),
            nanos: self.nanos.saturating_sub(before.nanos),
            latency: hist::since(&self.latency, &before.latency),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ExportReport {
    pub id: u16,
    pub path: String,
    /// The local directory, or "(in memory)" for another backend.
    pub dir: String,
    /// Its client rules in order, exports(5)-style: the first that
    /// matches a client is the one that applies.
    pub clients: Vec<String>,
    /// Security flavors accepted, preferred first ("sys", "none").
    pub sec: Vec<String>,
    /// Options: "async", "delegations", "log", data servers, and where
    /// an export served elsewhere now is.
    pub options: Vec<String>,
    pub ops: u64,
    pub errors: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Metadata changes (creates, removes, renames, links, attribute
    /// changes: objects) made durable before they were answered, and the
    /// syncs that did it; several changes share one where the file system
    /// allows (`syncs` below `metadata_changes`).
    #[serde(default)]
    pub metadata_changes: u64,
    #[serde(default)]
    pub metadata_syncs: u64,
}

/// A referral (RFC 8881 §11.15), as configured.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ReferralReport {
    pub path: String,
    /// "HOST:PORT:/path", in the order clients are given them.
    pub locations: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ClientReport {
    /// The client id, hexadecimal.
    pub id: String,
    pub owner: String,
    pub address: Option<String>,
    /// "4.0", "4.1" or "4.2".
    pub version: String,
    pub confirmed: bool,
    pub sessions: u64,
    pub opens: u64,
    pub locks: u64,
    pub delegations: u64,
    /// Seconds since its lease was last renewed.
    pub since_renewal_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HostReport {
    pub address: String,
    pub programs: Vec<String>,
    pub calls: u64,
    /// Seconds since its last call.
    pub idle_s: u64,
}

/// The report of `srv` now.
pub fn build(srv: &Server) -> Report {
    let st = &srv.stats;
    let started = st
        .started
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let uptime_s = st.started.elapsed().map_or(0.0, |d| d.as_secs_f64());
    let programs = Program::ALL
        .iter()
        .map(|&p| ProgramReport {
            name: p.name().to_string(),
            ops: st
                .program(p)
                .used()
                .map(|(n, c)| OpReport::of(proc_name(p, n), c, p))
                .collect(),
        })
        .collect();
    let exports = srv
        .exports()
        .iter()
        .map(|e| {
            let c = st.export(e.id);
            let get = |f: fn(&super::ExportCounters) -> &std::sync::atomic::AtomicU64| {
                c.as_ref().map_or(0, |c| f(c).load(Ordering::Relaxed))
            };
            let mut options = Vec::new();
            if e.delegations {
                options.push("delegations".to_string());
            }
            if let Some(l) = &e.log {
                options.push(format!("log={}", l.dir().display()));
            }
            if let Some(p) = &e.pnfs {
                let behind: std::collections::HashMap<usize, (usize, bool)> = p
                    .stale_counts()
                    .into_iter()
                    .map(|(i, n, o)| (i, (n, o)))
                    .collect();
                for (i, ds) in p.servers.iter().enumerate() {
                    let state = match (ds.is_up(), behind.get(&i)) {
                        (false, _) => "down".to_string(),
                        (true, Some((n, false))) => format!("up, {n} files to bring up to date"),
                        (true, Some((_, true))) => "up, every file to bring up to date".to_string(),
                        (true, None) => "up".to_string(),
                    };
                    options.push(format!("data server {} ({state})", ds.addr));
                }
            }
            // Not served here now (migration, served_by).
            match srv.away.get(e.id) {
                Some(crate::exports::away::Away::Elsewhere(at)) => {
                    options.push(format!("served by {at} (clients are sent there)"))
                }
                Some(crate::exports::away::Away::Leaving) => {
                    options.push("being migrated away".to_string())
                }
                Some(crate::exports::away::Away::Arriving) => {
                    options.push("arriving by a migration".to_string())
                }
                Some(crate::exports::away::Away::Uncertain(l)) => options.push(format!(
                    "held off: waiting for {} to say whether its move there committed",
                    l.to
                )),
                None => {}
            }
            let durable = e.vfs.sync_counts().unwrap_or_default();
            ExportReport {
                id: e.id,
                path: e.path.clone(),
                dir: e.vfs.describe(),
                clients: e.rules.clients.iter().map(|r| r.to_string()).collect(),
                sec: e.rules.sec.iter().map(|f| f.name().to_string()).collect(),
                options,
                ops: get(|c| &c.ops),
                errors: get(|c| &c.errors),
                bytes_read: get(|c| &c.bytes_read),
                bytes_written: get(|c| &c.bytes_written),
                metadata_changes: durable.changes,
                metadata_syncs: durable.syncs,
            }
        })
        .collect();
    let clients = srv
        .state()
        .client_summaries()
        .into_iter()
        .map(|c| ClientReport {
            id: format!("{:016x}", c.id),
            owner: c.owner,
            address: c.address.map(|a| a.to_string()),
            version: format!("4.{}", c.minorversion),
            confirmed: c.confirmed,
            sessions: c.sessions as u64,
            opens: c.opens as u64,
            locks: c.locks as u64,
            delegations: c.delegations as u64,
            since_renewal_s: c.since_renewal.as_secs_f64(),
        })
        .collect();
    let now = super::unix_now();
    let mut hosts: Vec<HostReport> = st
        .hosts()
        .into_iter()
        .map(|(a, h)| HostReport {
            address: a.to_string(),
            programs: Program::ALL
                .iter()
                .filter(|&&p| h.programs & (1 << p as u8) != 0)
                .map(|p| p.name().to_string())
                .collect(),
            calls: h.calls,
            idle_s: now.saturating_sub(h.last),
        })
        .collect();
    hosts.sort_by(|a, b| a.address.cmp(&b.address));
    Report {
        version: env!("CARGO_PKG_VERSION").to_string(),
        pid: std::process::id(),
        started,
        uptime_s,
        process: process(),
        programs,
        compounds: OpReport::of("COMPOUND".into(), &st.compounds, Program::Nfs4),
        exports,
        referrals: srv
            .exports()
            .ns
            .referrals
            .iter()
            .map(|r| ReferralReport {
                path: r.path.clone(),
                locations: r.locations.iter().map(|l| l.to_string()).collect(),
            })
            .collect(),
        clients,
        hosts,
        load: st.load_report(),
        reloads: st.reloads(),
        security: security(srv),
    }
}

fn security(srv: &Server) -> Security {
    let n = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
    Security {
        gss: srv.gss().map(|g| {
            let c = g.counts();
            GssReport {
                contexts: g.contexts().len() as u64,
                max_contexts: g.contexts().max() as u64,
                established: n(&c.established),
                refused: n(&c.refused),
                denied: n(&c.denied),
                dropped: n(&c.dropped),
                garbage: n(&c.garbage),
            }
        }),
        tls: srv.tls().map(|t| {
            let c = &t.counts;
            TlsReport {
                probes: n(&c.probes),
                established: n(&c.established),
                mutual: n(&c.mutual),
                failed: n(&c.failed),
            }
        }),
    }
}
