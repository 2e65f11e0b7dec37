//! Starting and stopping a server: listener, programs, exports.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::{TcpListener, UdpSocket};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use rpc::{Call, ReplyFuture, Service};

use crate::config::{export_ids, open_export, PortmapMode, ServerConfig};
use crate::exports::filehandle::FhKey;
use crate::instance::Server;
use crate::nfs4::Nfs4Service;
use crate::observe::admin::{ReloadRequest, ReloadSlot};
use state::clock::SystemClock;

/// A running server.
pub struct Running {
    pub addr: SocketAddr,
    pub nfs4: Arc<Server>,
    pub nlm: Arc<crate::v3::nlm::Nlm>,
    /// Where each program is, one line each, for the start-up message.
    pub programs: Vec<String>,
    /// The port mapper's address, if Ferrite answers as one.
    pub portmap: Option<SocketAddr>,
    /// Where the Prometheus metrics are served, if they are.
    pub metrics: Option<SocketAddr>,
    /// The system port mapper Ferrite registered with, and what.
    registered: Option<(SocketAddr, Vec<crate::v3::portmap::Entry>)>,
    /// The configuration being served; held through a reload, so that
    /// reloads happen one at a time.
    applied: tokio::sync::Mutex<ServerConfig>,
    /// Where the administration socket sends the reloads asked for
    /// ([`Running::reload_requests`]).
    reload_slot: ReloadSlot,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    /// This server's hold on its state directory.
    _serving: crate::stable::serving::Serving,
}

impl Running {
    /// Applies `new` to the exports and their rules while serving
    /// ([`crate::observe::reload`]): what changed, or why nothing did.
    pub async fn reload(
        &self,
        new: ServerConfig,
    ) -> Result<crate::observe::reload::ReloadReport, String> {
        let mut applied = self.applied.lock().await;
        let outcome = crate::observe::reload::apply(&self.nfs4, &applied, &new).await;
        self.nfs4
            .stats
            .note_reload(outcome.as_ref().map(|_| ()).map_err(|e| e.as_str()));
        let report = outcome?;
        applied.exports = new.exports;
        Ok(report)
    }

    /// The reloads asked for with `ferrite reload` (the administration
    /// socket) from now on: whoever takes them re-reads the configuration
    /// and answers each. Until then, and once the receiver is dropped,
    /// the socket answers that this server does not reload.
    pub fn reload_requests(&self) -> tokio::sync::mpsc::Receiver<ReloadRequest> {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        *self.reload_slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx);
        rx
    }

    /// Stops serving as a crash would, for tests and harnesses: the
    /// listener ends (clients drop their connections themselves), and
    /// every export's write log stops as it is, with nothing applied (the
    /// next start replays it).
    pub async fn crash(self) {
        for log in self.nfs4.exports().iter().filter_map(|e| e.log.as_ref()) {
            log.halt();
        }
        // Its locks go with it, as with its process.
        for e in self.nfs4.exports().iter() {
            e.vfs.share_release_all();
        }
        for t in &self.tasks {
            t.abort();
        }
        for t in self.tasks {
            let _ = t.await;
        }
    }

    /// Stops accepting connections, waits for the listener to finish and
    /// applies every export's write log (nothing left to replay).
    pub async fn stop(self) {
        let _ = self.shutdown.send(true);
        for t in self.tasks {
            let _ = t.await;
        }
        // Its byte-range locks go with it, as with its process.
        for e in self.nfs4.exports().iter() {
            e.vfs.share_release_all();
        }
        if let Some((at, entries)) = &self.registered {
            crate::v3::portmap::register_with(*at, entries, true).await;
        }
        let logs: Vec<_> = self
            .nfs4
            .exports()
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
    // One server on it at a time (a standby waits here).
    let dir = cfg.state_dir.clone();
    let standby = cfg.nfs4.standby;
    let serving = tokio::task::spawn_blocking(move || crate::stable::serving::take(&dir, standby))
        .await
        .map_err(std::io::Error::other)??;
    let key = FhKey::load_or_create(&cfg.state_dir)?;
    let ids = export_ids(&cfg.exports)?;
    let away_of: Vec<_> = cfg
        .exports
        .iter()
        .zip(&ids)
        .map(|(e, id)| (*id, e.path.clone(), e.served_by.clone()))
        .collect();
    let mut exports = Vec::new();
    for (e, id) in cfg.exports.iter().zip(ids) {
        exports.push(open_export(e, id, &cfg.state_dir).await?);
    }
    // NLM hosts recorded before a restart reclaim in the grace period too.
    let (nsm, nsm_previous) = crate::v3::nsm::Nsm::open(&cfg.state_dir)?;
    let mut recovery =
        crate::instance::Recovery::open(&cfg.state_dir, cfg.nfs4.grace_period(), cfg.nfs4.lease)?;
    recovery
        .previous
        .extend(nsm_previous.iter().map(crate::v3::nsm::grace_owner));
    recovery.away = crate::exports::away::AwayExports::load(Some(&cfg.state_dir), &away_of)?;
    for (id, a) in recovery.away.all() {
        if let (Some((_, path, _)), crate::exports::away::Away::Elsewhere(to)) =
            (away_of.iter().find(|x| x.0 == id), a)
        {
            tracing::info!(export = %path, "export served by {to}: NFSv4 clients are sent there");
        }
    }
    let nfs4 = Server::recovering(
        cfg.nfs4.clone(),
        key,
        exports,
        Arc::new(SystemClock::default()),
        recovery,
    );
    crate::nfs4::install(&nfs4);
    crate::pnfs::fence::install(&nfs4);
    let gss = match &cfg.kerberos {
        Some(k) => {
            let k = k.clone();
            let gate = tokio::task::spawn_blocking(move || crate::security::kerberos::gate(&k))
                .await
                .map_err(std::io::Error::other)?
                .map_err(|why| std::io::Error::new(std::io::ErrorKind::InvalidInput, why))?;
            nfs4.install_gss(gate.clone());
            tracing::info!("RPCSEC_GSS: Kerberos V5 (krb5, krb5i, krb5p)");
            Some(gate)
        }
        None => None,
    };
    let tls = match &cfg.tls {
        Some(t) => {
            let t = t.clone();
            let server = tokio::task::spawn_blocking(move || t.load())
                .await
                .map_err(std::io::Error::other)?
                .map_err(|why| {
                    std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("[tls]: {why}"))
                })?;
            tracing::info!(
                "RPC-over-TLS offered on the NFS port{}",
                if server.mutual {
                    " (client certificates verified)"
                } else {
                    ""
                }
            );
            let server = Arc::new(server);
            nfs4.install_tls(server.clone());
            Some(server)
        }
        None => None,
    };
    spawn_heap_trim();
    let nlm = crate::v3::nlm::Nlm::new(nfs4.clone(), Arc::new(nsm), cfg.aux.client_portmap_port);
    nlm.start();
    use crate::observe::stats::{counted, Program};
    let stats = &nfs4.stats;
    let mount = counted(
        crate::v3::mount::MountService::new(nfs4.clone()),
        stats,
        Program::Mount,
    );
    let nlm_svc = counted(crate::v3::nlm::NlmService(nlm.clone()), stats, Program::Nlm);
    let nsm_svc = counted(
        crate::v3::nsm::service::NsmService(nlm.clone()),
        stats,
        Program::Nsm,
    );
    // MOUNT, NLM and NSM: on every port, over TCP and UDP.
    let aux = |p: rpc::Programs| {
        p.add(
            proto::mount::MOUNT_PROGRAM,
            proto::mount::MOUNT_V3,
            proto::mount::MOUNT_V3,
            mount.clone(),
        )
        .add(
            proto::nlm::NLM_PROG,
            proto::nlm::NLM4_VERS,
            proto::nlm::NLM4_VERS,
            nlm_svc.clone(),
        )
        .add(
            proto::nsm::SM_PROG,
            proto::nsm::SM_VERS,
            proto::nsm::SM_VERS,
            nsm_svc.clone(),
        )
    };
    // NFS versions 3 and 4 on the NFS port, TCP only.
    let nfs = NfsVersions {
        v3: counted(
            crate::v3::nfs3::Nfs3Service(nfs4.clone()),
            stats,
            Program::Nfs3,
        ),
        v4: Nfs4Service(nfs4.clone()),
    };
    // The peer program of migrations (`crate::migrate`), on the NFS port.
    let peer = crate::migrate::Peer::new(nfs4.clone());
    let as_migrator: Arc<dyn crate::instance::Migrator> = peer.clone();
    nfs4.install_migrator(&as_migrator);
    crate::migrate::outgoing::resolve(&peer);
    let programs = aux(rpc::Programs::new())
        .add(
            proto::nfs4::NFS_PROGRAM,
            proto::nfs3::NFS_V3,
            proto::nfs4::NFS_V4,
            Arc::new(nfs),
        )
        .add(
            proto::migrate::FERRITE_PEER_PROGRAM,
            proto::migrate::FERRITE_PEER_V1,
            proto::migrate::FERRITE_PEER_V1,
            Arc::new(crate::migrate::service::PeerService(peer)),
        )
        .with_gss(gss)
        .with_tls(tls);
    let listener = TcpListener::bind(cfg.listen).await?;
    let addr = listener.local_addr()?;
    let (tx, rx) = watch::channel(false);
    let rpc_cfg = cfg.rpc.clone();
    let mut tasks = vec![tokio::spawn(rpc::serve(
        listener,
        Arc::new(programs),
        rpc_cfg.clone(),
        rx.clone(),
    ))];
    let udp_slots = 256;
    let aux_svc: Arc<dyn rpc::Service> = Arc::new(aux(rpc::Programs::new()));
    let mut udp_at = None;
    match UdpSocket::bind(addr).await {
        Ok(u) => {
            udp_at = Some(addr);
            tasks.push(tokio::spawn(rpc::serve_udp(
                u,
                aux_svc.clone(),
                udp_slots,
                rx.clone(),
            )));
        }
        Err(e) => tracing::warn!("MOUNT, NLM and NSM over UDP not served on {addr}: {e}"),
    }
    // Their own ports, if given.
    let own_port = |port: Option<u16>| match port {
        Some(p) if p != addr.port() => (p, true),
        _ => (addr.port(), udp_at.is_some()),
    };
    let (mount_port, mount_udp) = own_port(cfg.aux.mount_port);
    let (nlm_port, nlm_udp) = own_port(cfg.aux.nlm_port);
    let mut extra: Vec<u16> = [mount_port, nlm_port]
        .into_iter()
        .filter(|&p| p != addr.port())
        .collect();
    extra.dedup();
    for port in extra {
        let at = SocketAddr::new(addr.ip(), port);
        let l = TcpListener::bind(at).await?;
        let u = UdpSocket::bind(at).await?;
        tasks.push(tokio::spawn(rpc::serve(
            l,
            aux_svc.clone(),
            rpc_cfg.clone(),
            rx.clone(),
        )));
        tasks.push(tokio::spawn(rpc::serve_udp(
            u,
            aux_svc.clone(),
            udp_slots,
            rx.clone(),
        )));
    }
    use proto::{mount::*, nfs3::NFS_V3, nfs4::*, nlm::*, nsm::*};
    let mut own = Vec::new();
    let mut map = |prog: u32, versions: &[u32], port: u16, udp: bool| {
        for &vers in versions {
            for tcp in [true, false] {
                if tcp || udp {
                    let a = SocketAddr::new(addr.ip(), port);
                    own.push(crate::v3::portmap::Entry {
                        prog,
                        vers,
                        netid: crate::v3::portmap::netid(tcp, &a),
                        addr: a,
                        owner: crate::v3::portmap::OWNER.to_string(),
                    });
                }
            }
        }
    };
    map(NFS_PROGRAM, &[NFS_V3, NFS_V4], addr.port(), false);
    map(MOUNT_PROGRAM, &[MOUNT_V3], mount_port, mount_udp);
    map(NLM_PROG, &[NLM4_VERS], nlm_port, nlm_udp);
    map(SM_PROG, &[SM_VERS], nlm_port, nlm_udp);
    let udp_note = |u: bool| if u { "TCP and UDP" } else { "TCP" };
    let mut lines = vec![
        format!("NFS versions 3 and 4 on {addr} (TCP)"),
        format!(
            "MOUNT version 3 on port {mount_port} ({})",
            udp_note(mount_udp)
        ),
        format!(
            "NLM version 4 and NSM on port {nlm_port} ({})",
            udp_note(nlm_udp)
        ),
    ];
    let mut portmap = None;
    let mut registered = None;
    let pm_at = match &cfg.aux.portmap {
        PortmapMode::Off => None,
        PortmapMode::Auto => Some((SocketAddr::new(addr.ip(), proto::portmap::PMAP_PORT), false)),
        PortmapMode::At(a) => Some((*a, true)),
    };
    if let Some((at, required)) = pm_at {
        let pm_entries = |a: SocketAddr| {
            [
                proto::portmap::PMAP_VERS,
                proto::portmap::RPCBVERS,
                proto::portmap::RPCBVERS4,
            ]
            .into_iter()
            .flat_map(move |vers| {
                [true, false].map(|tcp| crate::v3::portmap::Entry {
                    prog: proto::portmap::PMAP_PROG,
                    vers,
                    netid: crate::v3::portmap::netid(tcp, &a),
                    addr: a,
                    owner: crate::v3::portmap::OWNER.to_string(),
                })
            })
            .collect::<Vec<_>>()
        };
        match (TcpListener::bind(at).await, UdpSocket::bind(at).await) {
            (Ok(l), Ok(u)) => {
                let a = l.local_addr()?;
                let mut entries = own.clone();
                entries.extend(pm_entries(a));
                let pm = crate::v3::portmap::Portmap::new(entries);
                let svc: Arc<dyn rpc::Service> = Arc::new(rpc::Programs::new().add(
                    proto::portmap::PMAP_PROG,
                    proto::portmap::PMAP_VERS,
                    proto::portmap::RPCBVERS4,
                    Arc::new(crate::v3::portmap::PortmapService(pm)),
                ));
                tasks.push(tokio::spawn(rpc::serve(
                    l,
                    svc.clone(),
                    rpc_cfg.clone(),
                    rx.clone(),
                )));
                tasks.push(tokio::spawn(rpc::serve_udp(u, svc, udp_slots, rx.clone())));
                lines.push(format!(
                    "port mapper (versions 2 to 4) on {a} (TCP and UDP)"
                ));
                portmap = Some(a);
            }
            (Err(e), _) | (_, Err(e)) if required => return Err(e),
            (Err(e), _) | (_, Err(e)) if e.kind() == std::io::ErrorKind::AddrInUse => {
                // A system port mapper, perhaps: register there.
                let sys = SocketAddr::new(
                    if at.ip().is_unspecified() {
                        [127, 0, 0, 1].into()
                    } else {
                        at.ip()
                    },
                    at.port(),
                );
                let n = crate::v3::portmap::register_with(sys, &own, false).await;
                if n > 0 {
                    lines.push(format!(
                        "programs registered with the port mapper on {sys} ({n} mappings)"
                    ));
                    registered = Some((sys, own.clone()));
                } else {
                    lines.push(format!(
                        "no port mapper: {at} is taken and took no registration"
                    ));
                }
            }
            (Err(e), _) | (_, Err(e)) => {
                lines.push(format!("no port mapper: cannot listen on {at}: {e}"));
            }
        }
    }
    let reload_slot = ReloadSlot::default();
    if let Some(path) = &cfg.admin.socket {
        match crate::observe::admin::bind(path) {
            Ok(l) => {
                tasks.push(tokio::spawn(crate::observe::admin::serve(
                    l,
                    path.clone(),
                    nfs4.clone(),
                    reload_slot.clone(),
                    rx.clone(),
                )));
                lines.push(format!("administration socket {}", path.display()));
            }
            Err(e) => lines.push(format!(
                "no administration socket (`ferrite stat` will not reach this server): {}: {e}",
                path.display()
            )),
        }
    }
    tasks.push(spawn_housekeeping(&nfs4, &cfg, rx.clone()));
    crate::conflicts::local_locks::install(&nfs4);
    crate::conflicts::local_locks::spawn_poll(&nfs4, rx.clone());
    let mut metrics = None;
    if let Some(at) = cfg.admin.metrics {
        let l = TcpListener::bind(at).await?;
        let at = l.local_addr()?;
        tasks.push(tokio::spawn(crate::observe::metrics::serve(
            l,
            nfs4.clone(),
            rx.clone(),
        )));
        lines.push(crate::observe::metrics::describe(at));
        metrics = Some(at);
    }
    crate::v3::nsm::notify_all(
        nlm.nsm.clone(),
        nsm_previous,
        cfg.aux.client_portmap_port,
        nlm.machine.clone(),
    );
    Ok(Running {
        addr,
        nfs4,
        nlm,
        programs: lines,
        portmap,
        metrics,
        registered,
        applied: tokio::sync::Mutex::new(cfg),
        reload_slot,
        shutdown: tx,
        tasks,
        _serving: serving,
    })
}

/// The server's once-a-second work, in one task so that an idle server
/// wakes once a second for all of it: the load sample
/// ([`crate::observe::sampler`]), then the reaper
/// ([`crate::nfs4::reaper`]). Ends at `shutdown` or when the server is
/// gone.
fn spawn_housekeeping(
    nfs4: &Arc<Server>,
    cfg: &ServerConfig,
    mut shutdown: watch::Receiver<bool>,
) -> JoinHandle<()> {
    let mut sampler = crate::observe::sampler::LoadSampler::new(nfs4, cfg.admin.link_bytes_per_s);
    let mut reaper = crate::nfs4::reaper::Reaper::new(nfs4);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = shutdown.wait_for(|s| *s) => break,
            }
            sampler.step().await;
            if !reaper.step().await {
                break;
            }
        }
    })
}

/// Gives memory glibc's allocator holds but no longer uses back to the
/// system every few seconds. Without it, glibc keeps the buffers freed
/// when a burst of large records or replies ends (a slow reader's queue,
/// hundreds of partial records), and the server stays that large long
/// after. (The `ferrite` binary allocates with mimalloc, which returns
/// freed memory by itself; this serves embedders on glibc's malloc.)
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

/// The NFS program, both versions on one port: 3 to NFSv3, 4 to NFSv4.
pub struct NfsVersions {
    /// NFSv3 (counted: [`crate::observe::stats::counted`]).
    pub v3: Arc<dyn Service>,
    pub v4: Nfs4Service,
}

impl Service for NfsVersions {
    fn call(&self, call: Call) -> ReplyFuture {
        if call.vers == proto::nfs3::NFS_V3 {
            self.v3.call(call)
        } else {
            self.v4.call(call)
        }
    }

    fn disconnected(&self, conn: &Arc<rpc::Connection>) {
        self.v4.disconnected(conn);
    }
}
