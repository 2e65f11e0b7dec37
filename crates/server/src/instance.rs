//! One running server instance, which every protocol serves from: its
//! limits and timers ([`Nfs4Config`]: most are NFSv4's, the largest I/O is
//! everyone's), exports, filehandle key, the state machine, stable
//! storage (write verifier, group commit, client records, persistent
//! sessions), statistics, and the callbacks a change may need
//! ([`crate::conflicts::Callbacks`], installed by the NFSv4 service).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arc_swap::ArcSwap;
use bytes::Bytes;
use proto::nfs4::*;

use crate::conflicts::Callbacks;
use crate::exports::export::Export;
use crate::exports::filehandle::FhKey;
use crate::ids::IdMap;
use state::clock::Clock;
use state::slots::CacheMemory;
use state::State;

/// Limits and timers of the NFSv4 service.
#[derive(Debug, Clone, PartialEq)]
pub struct Nfs4Config {
    /// Lease time (RFC 8881 §8.3).
    pub lease: Duration,
    /// The grace period after a restart (RFC 8881 §8.4.2.1); `None`: one
    /// lease.
    pub grace: Option<Duration>,
    /// Client records held at most; a new client beyond them waits
    /// (NFS4ERR_DELAY) until expired ones are reaped (courtesy clients,
    /// the longest silent first, make room).
    pub max_clients: usize,
    /// How long a client whose lease ran out keeps its state while
    /// nobody conflicts with it (`state::DEFAULT_COURTESY`).
    pub courtesy: Duration,
    /// Most slots granted per session (RFC 8881 §2.10.6.1).
    pub max_slots: u32,
    /// Largest COMPOUND request and reply, in bytes.
    pub max_request: u32,
    pub max_response: u32,
    /// Largest reply kept in a slot's reply cache.
    pub max_response_cached: u32,
    /// Most operations in one COMPOUND.
    pub max_ops: u32,
    /// Reply-cache memory budget across all sessions.
    pub drc_budget: usize,
    /// Largest READ and WRITE.
    pub max_io: u32,
    /// Report owner and owner_group as numeric strings ("1000") rather
    /// than names. RFC 8881 §5.9 allows this for AUTH_SYS, and it is what
    /// makes ownership come out right on clients whose user database
    /// differs from the server's (the Linux server does the same by
    /// default). Names are always accepted on SETATTR.
    pub numeric_owners: bool,
    /// The NFSv4 domain of owner names (`user@domain`; idmapd's
    /// `Domain`). With one, owners go out as names to the clients that
    /// send names and to Kerberos callers, numeric to the others (unless
    /// `numeric_owners` is off: names to all), and a name of another
    /// domain is NFS4ERR_BADOWNER.
    pub owner_domain: Option<String>,
    /// Delegations held at most (RFC 8881 §10.2), on the exports that grant
    /// them (`Export::delegations`).
    pub max_delegations: usize,
    /// How long a request that conflicts with another client's delegation
    /// waits for its return before it is answered NFS4ERR_DELAY
    /// (§10.4.6): a few round trips of a client that answers.
    pub recall_wait: Duration,
    /// Grant write delegations (§10.4) too, on the exports that grant
    /// delegations; read delegations only if false.
    pub write_delegations: bool,
    /// Paths of the namespace whose file systems live on other servers
    /// (RFC 8881 §11.15; [`crate::exports::referral`]). A reload applies
    /// changes to them.
    pub referrals: Vec<crate::exports::referral::ReferralConfig>,
    /// Wait for the server holding the state directory to stop, then
    /// take over (fail-over, [`crate::stable::serving`]); without it a
    /// state directory in use is an error.
    pub standby: bool,
}

impl Nfs4Config {
    /// The grace period after a restart: as configured, else one lease.
    pub fn grace_period(&self) -> Duration {
        self.grace.unwrap_or(self.lease)
    }
}

impl Default for Nfs4Config {
    fn default() -> Self {
        Nfs4Config {
            lease: Duration::from_secs(90),
            grace: None,
            max_clients: 65536,
            courtesy: state::DEFAULT_COURTESY,
            max_slots: 1024,
            max_request: 1024 * 1024 + 16 * 1024,
            max_response: 1024 * 1024 + 16 * 1024,
            max_response_cached: 64 * 1024,
            max_ops: 200,
            drc_budget: 256 * 1024 * 1024,
            max_io: 1024 * 1024,
            numeric_owners: true,
            owner_domain: None,
            max_delegations: 100_000,
            recall_wait: Duration::from_millis(300),
            write_delegations: true,
            referrals: Vec::new(),
            standby: false,
        }
    }
}

/// The server instance: configuration, exports, state and stable storage.
pub struct Server {
    pub cfg: Nfs4Config,
    pub fh: FhKey,
    /// The exports and the pseudo filesystem joining them (RFC 8881
    /// §7.3), replaced whole by a reload ([`Server::replace_exports`]).
    exports: ArcSwap<crate::exports::Exports>,
    pub clock: Arc<dyn Clock>,
    pub drc: Arc<CacheMemory>,
    pub ids: IdMap,
    /// WRITE/COMMIT verifier: differs for every server instance (RFC 8881 §18.32.3).
    pub write_verf: Verifier4,
    /// Group commit of stable WRITEs and COMMITs, per file.
    pub stable: crate::stable::groups::Groups,
    /// Who made recent files by exclusive create.
    pub exclusive: crate::conflicts::exclusive::Creators,
    pub server_owner: ServerOwner4,
    pub server_scope: Bytes,
    /// When this server instance started (since the epoch): the pseudo
    /// directories' times.
    pub started: Duration,
    /// Persistent sessions' files, and the earlier instance's sessions.
    pub sessions: crate::stable::sessions::Sessions,
    /// Orders the changes to directories under delegation with their
    /// notifications ([`crate::conflicts::directories::order`]).
    pub dir_order: crate::conflicts::order::Stripes,
    /// Live statistics ([`crate::observe::stats`]).
    pub stats: Arc<crate::observe::stats::Stats>,
    /// Client records on stable storage (RFC 8881 §8.4.2.1).
    pub records: crate::stable::records::Records,
    /// Woken when delegations go (returned, revoked, freed with their
    /// client): requests waiting for a recall look again. Register
    /// (`enable`) before breaking delegations so that none is missed.
    pub deleg_gone: tokio::sync::Notify,
    /// NFSv4.0's duplicate request cache: the replies of COMPOUNDs that
    /// changed something, by caller, xid and request (`nfs4::compound::v40`).
    pub(crate) drc40: crate::nfs4::compound::v40::Drc,
    /// Wakes the task that polls waiters local locks block
    /// (`crate::conflicts::local_locks`).
    pub shared_wake: Arc<tokio::sync::Notify>,
    /// Whether the state shares locks through the kernel's port.
    locks_shared: std::sync::atomic::AtomicBool,
    /// Sends callbacks to NFSv4 clients (recalls, notifications), for
    /// changes by any protocol; set once by the NFSv4 service
    /// ([`Server::install_callbacks`]).
    callbacks: OnceLock<Arc<dyn Callbacks>>,
    /// Exports configured here but not served here now: moved away,
    /// served by another server, or being migrated (RFC 8881 §11.14).
    pub away: crate::exports::away::AwayExports,
    /// Moves exports to other servers (`ferrite migrate`); set once by
    /// the peer program ([`Server::install_migrator`]), which holds the
    /// server: weak, or neither would ever go.
    migrator: OnceLock<std::sync::Weak<dyn Migrator>>,
    /// RPCSEC_GSS with Kerberos, when configured ([`Server::install_gss`]).
    gss: OnceLock<Arc<rpc::gss::Gate>>,
    /// RPC-over-TLS settings and counts, when `[tls]` is configured.
    tls: OnceLock<Arc<rpc::tls::TlsServer>>,
    state: State,
}

/// The most delegations held at once: `configured`, but no more than an
/// eighth of the descriptors the process may open (each delegation may
/// hold two: its lease and its watch of local changes), so that clients
/// that keep delegations of files without end cannot take the
/// descriptors every other request needs. Past it OPEN grants none
/// (WND4_RESOURCE), and from 90% of it holders are asked to give some
/// back (CB_RECALL_ANY).
fn delegation_budget(configured: usize) -> usize {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit into a live struct.
    let nofile = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0 {
        r.rlim_cur
    } else {
        1024
    };
    let budget = (nofile / 8).max(16) as usize;
    if configured > budget {
        tracing::info!(
            configured,
            budget,
            "delegations held at once limited by the descriptor limit (RLIMIT_NOFILE {nofile})"
        );
    }
    configured.min(budget)
}

/// What moves an export to another server, for the administration
/// socket: the report of the move (JSON), or why it did not happen.
pub trait Migrator: Send + Sync {
    fn migrate(
        self: Arc<Self>,
        export: String,
        to: String,
        location: Option<String>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, String>> + Send>>;
}

impl Server {
    pub fn new(
        cfg: Nfs4Config,
        fh: FhKey,
        exports: Vec<Export>,
        clock: Arc<dyn Clock>,
    ) -> Arc<Self> {
        Self::recovering(cfg, fh, exports, clock, Recovery::none())
    }

    /// A server that keeps client records as `recovery` says, in a grace
    /// period for the clients it recorded before a restart.
    pub fn recovering(
        cfg: Nfs4Config,
        fh: FhKey,
        exports: Vec<Export>,
        clock: Arc<dyn Clock>,
        recovery: Recovery,
    ) -> Arc<Self> {
        let mut verf = [0u8; 8];
        let _ = getrandom::getrandom(&mut verf);
        let started = recovery.started;
        // Tells this instance's client ids, session ids and stateids from
        // an earlier one's, even one started in the same second (a crash
        // and a quick restart): random, else the start time in ms.
        let mut e = [0u8; 4];
        let epoch = match getrandom::getrandom(&mut e) {
            // Not 0 or 1 either: clients (pynfs among them) make up
            // stale stateids with those.
            Ok(()) if u32::from_be_bytes(e) > 1 => u32::from_be_bytes(e),
            _ => (started.as_millis() as u32).max(2),
        };
        let host = hostname();
        let exports: Vec<Arc<Export>> = exports.into_iter().map(Arc::new).collect();
        let cfg_lease = cfg.lease;
        let grace = cfg.grace_period();
        let max_clients = cfg.max_clients;
        let courtesy = cfg.courtesy;
        let max_delegations = delegation_budget(cfg.max_delegations);
        let clock_for_state = clock.clone();
        let record_queue = recovery.records.queue().clone();
        let fh = fh.with_roots(exports.iter().map(|e| (e.id, e.vfs.root_identity())));
        let referrals = cfg.referrals.iter().cloned().map(Arc::new).collect();
        let ids = IdMap::with_domain(cfg.owner_domain.clone());
        let srv = Arc::new(Server {
            stats: crate::observe::stats::Stats::new(exports.iter().map(|e| e.id)),
            drc: CacheMemory::new(cfg.drc_budget),
            cfg,
            fh,
            exports: ArcSwap::from_pointee(crate::exports::Exports::new(exports, referrals, None)),
            clock,
            ids,
            write_verf: verf,
            stable: crate::stable::groups::Groups::default(),
            exclusive: crate::conflicts::exclusive::Creators::default(),
            server_owner: ServerOwner4 {
                minor_id: 0,
                major_id: Bytes::from(format!("ferrite:{host}")),
            },
            server_scope: Bytes::from(format!("ferrite:{host}")),
            started,
            sessions: recovery.sessions,
            dir_order: crate::conflicts::order::Stripes::default(),
            records: recovery.records,
            deleg_gone: tokio::sync::Notify::new(),
            drc40: crate::nfs4::compound::v40::Drc::new(),
            shared_wake: Arc::new(tokio::sync::Notify::new()),
            locks_shared: std::sync::atomic::AtomicBool::new(false),
            callbacks: OnceLock::new(),
            away: recovery.away,
            migrator: OnceLock::new(),
            gss: OnceLock::new(),
            tls: OnceLock::new(),
            state: State::recovering(
                epoch,
                cfg_lease,
                clock_for_state,
                record_queue,
                recovery.previous,
                grace,
            )
            .with_max_clients(max_clients)
            .with_courtesy(courtesy)
            .with_max_delegations(max_delegations),
        });
        // A delegation that goes ends its guard against local writers;
        // then requests waiting for a recall look again.
        let weak = Arc::downgrade(&srv);
        srv.state.on_delegation_ended(Box::new(move |files| {
            let Some(srv) = weak.upgrade() else { return };
            for (export, handle) in files {
                if let Some(e) = srv.export(*export) {
                    let h = vfs::Handle(handle.clone());
                    e.vfs.unguard_local_writes(&h);
                    e.vfs.unwatch_local_changes(&h);
                }
            }
            srv.deleg_gone.notify_waiters();
        }));
        srv
    }

    /// Whether an export wants byte-range locks shared with local
    /// processes and its backend can; true once, the first time it is
    /// asked while one does (the caller then installs the state's port,
    /// `crate::conflicts::local_locks::install`).
    pub fn first_to_share_locks(&self) -> bool {
        let wanted = self
            .exports()
            .iter()
            .any(|e| e.shared_locks && e.vfs.shares_locks());
        wanted
            && !self
                .locks_shared
                .swap(true, std::sync::atomic::Ordering::Relaxed)
    }

    /// The exports now: a snapshot a reload does not change.
    pub fn exports(&self) -> Arc<crate::exports::Exports> {
        self.exports.load_full()
    }

    /// Serves `list` from now on instead of the exports before
    /// (a reload): their namespace is laid out (blocking), their roots
    /// bound into filehandles and their statistics counted. Calls under
    /// way finish on the exports they started with.
    /// The referrals come along: `referrals`, or, with none, those
    /// served before.
    pub fn replace_exports(
        &self,
        list: Vec<Arc<Export>>,
        referrals: Option<Vec<crate::exports::referral::ReferralConfig>>,
    ) -> Arc<crate::exports::Exports> {
        let before = self.exports();
        let referrals = match referrals {
            Some(r) => r.into_iter().map(Arc::new).collect(),
            None => before.ns.referrals.clone(),
        };
        let next = Arc::new(crate::exports::Exports::new(list, referrals, Some(&before)));
        self.stats.add_exports(next.iter().map(|e| e.id));
        self.fh
            .bind_roots(next.iter().map(|e| (e.id, e.vfs.root_identity())));
        self.exports.store(next.clone());
        next
    }

    /// Removes the records of purged clients from stable storage, if any
    /// wait for it.
    pub async fn settle_records(self: &Arc<Self>) {
        if !self.records.has_pending() {
            return;
        }
        let srv = self.clone();
        match crate::handoff::off_thread(move || srv.records.settle()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!("cannot remove client records: {e}"),
            Err(e) => tracing::error!("removing client records: {e}"),
        }
    }

    /// Ends the grace period if it is due (every recorded client has
    /// reclaimed, or its time is up): the earlier instances' records go
    /// first, durably, so that a restart from here on offers no reclaim
    /// to a client that missed this grace period (RFC 8881 §8.4.3).
    pub async fn end_grace_if_due(self: &Arc<Self>) {
        if !self.state.grace_due() {
            return;
        }
        let srv = self.clone();
        match crate::handoff::off_thread(move || srv.records.forget_previous()).await {
            Ok(Ok(())) => self.state.end_grace(),
            Ok(Err(e)) => tracing::error!("cannot remove earlier client records: {e}"),
            Err(e) => tracing::error!("removing earlier client records: {e}"),
        }
    }

    /// The NFSv4 state (clients, sessions, opens, locks).
    pub fn state(&self) -> &State {
        &self.state
    }

    pub fn now(&self) -> Duration {
        self.clock.now()
    }

    pub fn export(&self, id: u16) -> Option<Arc<Export>> {
        self.exports.load().get(id).cloned()
    }

    /// Sets what sends callbacks to clients (once; later calls are
    /// ignored).
    pub fn install_callbacks(&self, c: Arc<dyn Callbacks>) {
        let _ = self.callbacks.set(c);
    }

    /// Sets what moves exports to other servers (once).
    pub fn install_migrator(&self, m: &Arc<dyn Migrator>) {
        let _ = self.migrator.set(Arc::downgrade(m));
    }

    pub fn migrator(&self) -> Option<Arc<dyn Migrator>> {
        self.migrator.get()?.upgrade()
    }

    /// Sets the RPCSEC_GSS gate (once).
    pub fn install_gss(&self, g: Arc<rpc::gss::Gate>) {
        let _ = self.gss.set(g);
    }

    pub fn gss(&self) -> Option<&Arc<rpc::gss::Gate>> {
        self.gss.get()
    }

    pub fn install_tls(&self, t: Arc<rpc::tls::TlsServer>) {
        let _ = self.tls.set(t);
    }

    pub fn tls(&self) -> Option<&Arc<rpc::tls::TlsServer>> {
        self.tls.get()
    }

    /// The flavors the pseudo file system's nodes list in SECINFO (they
    /// accept every flavor): the Kerberos ones first when Kerberos is
    /// configured, so that a client choosing the first it can use picks
    /// the strongest (RFC 8881 §2.6.3.1.1).
    pub fn pseudo_flavors(&self) -> Vec<crate::exports::export::Flavor> {
        use crate::exports::export::Flavor;
        let mut v = Vec::new();
        if self.gss.get().is_some() {
            v.extend([Flavor::Krb5p, Flavor::Krb5i, Flavor::Krb5]);
        }
        v.extend([Flavor::Sys, Flavor::None]);
        v
    }

    /// Sends CB_NOTIFY_LOCKs to the NFSv4 waiters an unlock (any
    /// protocol's) made grantable.
    pub fn notify_locks(&self, notes: Vec<state::LockNotify>) {
        if notes.is_empty() {
            return;
        }
        if let Some(cb) = self.callbacks() {
            cb.notify_locks(notes);
        }
    }

    /// What sends callbacks to clients: none (every recall undelivered,
    /// so a conflict waits out its delegation) until installed.
    pub fn callbacks(&self) -> Option<&Arc<dyn Callbacks>> {
        self.callbacks.get()
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

/// What a server keeps for reboot recovery (RFC 8881 §8.4.2).
pub struct Recovery {
    pub records: crate::stable::records::Records,
    /// Where persistent sessions are kept (RFC 8881 §2.10.6.5).
    pub sessions: crate::stable::sessions::Sessions,
    /// Client owners recorded by earlier instances.
    pub previous: std::collections::HashSet<Bytes>,
    /// When this instance started (since the Unix epoch).
    pub started: Duration,
    /// The exports not served here (`crate::exports::away`).
    pub away: crate::exports::away::AwayExports,
}

impl Recovery {
    /// Nothing kept: no records, no grace period.
    pub fn none() -> Recovery {
        Recovery {
            records: crate::stable::records::Records::none(),
            sessions: crate::stable::sessions::Sessions::none(),
            previous: Default::default(),
            started: Recovery::now(),
            away: Default::default(),
        }
    }

    /// Client records and persistent sessions kept in `state_dir`. With
    /// no grace period (`grace` zero) the earlier instances' records are
    /// dropped at once: nobody reclaims. Their sessions are kept for two
    /// leases (`lease`), for retries.
    pub fn open(
        state_dir: &std::path::Path,
        grace: Duration,
        lease: Duration,
    ) -> std::io::Result<Recovery> {
        let started = Recovery::now();
        let (records, mut previous) =
            crate::stable::records::Records::open(state_dir, started.as_nanos())?;
        let sessions =
            crate::stable::sessions::Sessions::open(state_dir, started.as_nanos(), lease * 2)?;
        if grace.is_zero() && !previous.is_empty() {
            records.forget_previous()?;
            previous.clear();
        }
        Ok(Recovery {
            records,
            sessions,
            previous,
            started,
            away: Default::default(),
        })
    }

    fn now() -> Duration {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or(Duration::from_secs(1))
    }
}
