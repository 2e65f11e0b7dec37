//! Accepting connections and routing calls to programs (RFC 5531 §9).

use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::{debug, info, warn};

use crate::admit::{self, Admit, Over};
use crate::conn::{
    start_shared, Call, ConnConfig, Connection, Reply, ReplyFuture, Service, Shared,
};
use crate::msg::ReplyError;
use crate::ratelimit::RateLimit;

/// One registered program: its version range and the service behind it.
struct Program {
    low: u32,
    high: u32,
    service: Arc<dyn Service>,
}

/// Routes calls by program number; answers PROG_UNAVAIL, PROG_MISMATCH and
/// the NULL procedure (procedure 0 of every version) itself.
#[derive(Default)]
pub struct Programs {
    programs: HashMap<u32, Program>,
    gss: Option<Arc<crate::gss::Gate>>,
    tls: Option<Arc<crate::tls::TlsServer>>,
}

impl Programs {
    pub fn new() -> Self {
        Self::default()
    }

    /// Serves versions `low..=high` of program `prog` with `service`.
    pub fn add(mut self, prog: u32, low: u32, high: u32, service: Arc<dyn Service>) -> Self {
        self.programs.insert(prog, Program { low, high, service });
        self
    }

    /// Takes RPCSEC_GSS calls through `gate` (RFC 2203).
    pub fn with_gss(mut self, gate: Option<Arc<crate::gss::Gate>>) -> Self {
        self.gss = gate;
        self
    }

    /// Answers AUTH_TLS probes and runs TLS with `tls` (RFC 9289).
    pub fn with_tls(mut self, tls: Option<Arc<crate::tls::TlsServer>>) -> Self {
        self.tls = tls;
        self
    }
}

impl Service for Programs {
    fn call(&self, call: Call) -> ReplyFuture {
        let Some(p) = self.programs.get(&call.prog) else {
            return Box::pin(async { Reply::Error(ReplyError::ProgUnavail) });
        };
        if call.vers < p.low || call.vers > p.high {
            let (low, high) = (p.low, p.high);
            return Box::pin(async move { Reply::Error(ReplyError::ProgMismatch { low, high }) });
        }
        if call.proc_ == 0 {
            return Box::pin(async { Reply::Success(Vec::new()) });
        }
        p.service.call(call)
    }

    fn disconnected(&self, conn: &Arc<Connection>) {
        for p in self.programs.values() {
            p.service.disconnected(conn);
        }
    }

    fn gss(&self) -> Option<Arc<crate::gss::Gate>> {
        self.gss.clone()
    }

    fn tls(&self) -> Option<Arc<crate::tls::TlsServer>> {
        self.tls.clone()
    }
}

/// The soft and hard limits on open descriptors (RLIMIT_NOFILE).
#[allow(clippy::unnecessary_cast)] // rlim_t is not u64 on every target
pub fn nofile_limit() -> io::Result<(u64, u64)> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct we pass and nothing else.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((r.rlim_cur as u64, r.rlim_max as u64))
}

/// Raises the soft limit on open descriptors to the hard limit, or, where
/// the process may (root), both to the kernel's ceiling `fs.nr_open` (at
/// most 2^20): each connection is a descriptor, and so is each object a
/// backend keeps open. Returns the limit before and after.
#[allow(clippy::unnecessary_cast)] // rlim_t is not u64 on every target
pub fn raise_nofile_limit() -> io::Result<(u64, u64)> {
    let (soft, hard) = nofile_limit()?;
    // With the privilege to (root), past the hard limit too, up to the
    // kernel's own ceiling (fs.nr_open) or 2^20: descriptors hold
    // connections and the backends' caches of open objects.
    let ceiling = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(0)
        .min(1 << 20);
    for target in [ceiling, hard] {
        if target <= soft {
            continue;
        }
        let r = libc::rlimit {
            rlim_cur: target as libc::rlim_t,
            rlim_max: target.max(hard) as libc::rlim_t,
        };
        // SAFETY: setrlimit reads the struct we pass and nothing else.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) } == 0 {
            return Ok((soft, target));
        }
    }
    if soft >= hard {
        Ok((soft, soft))
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The connection cap: `max_connections`, but at most three quarters of
/// the descriptor limit (the rest is for files).
fn connection_cap(cfg: &ConnConfig) -> usize {
    let wanted = cfg.max_connections.max(1);
    match nofile_limit() {
        Ok((soft, _)) => {
            let room = usize::try_from(soft - soft / 4)
                .unwrap_or(usize::MAX)
                .max(1);
            if room < wanted {
                info!(
                    "serving at most {room} connections (descriptor limit {soft}; \
                     max_connections {wanted})"
                );
            }
            wanted.min(room)
        }
        Err(_) => wanted,
    }
}

/// Connections one source address may hold: as configured, else a
/// quarter of the cap but at least 16 (or the whole cap when it is
/// smaller), so that a host behind which several clients sit still has
/// room while one host cannot fill the table.
fn per_source_cap(cfg: &ConnConfig, cap: usize) -> usize {
    match cfg.max_connections_per_source {
        Some(n) => n.clamp(1, cap),
        None => (cap / 4).max(16).min(cap),
    }
}

/// Connections whose sockets may stay open at once: the cap, plus room for
/// those closed to make way whose tasks have not yet dropped their socket.
/// Beyond it new connections are refused (the descriptor limit's guard).
fn live_ceiling(cap: usize) -> usize {
    cap.saturating_add(cap / 4).saturating_add(8)
}

/// Accept errors that concern one connection only: try the next at once.
/// Others (out of descriptors, of memory) last until something is freed.
fn per_connection(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ECONNABORTED | libc::ECONNRESET | libc::EPROTO | libc::EPERM | libc::EINTR)
    )
}

/// Accepts connections until `shutdown` turns true. At the connection cap,
/// or at its source address's cap, a new connection is accepted and an
/// idle one closed in its place (`admit`: never one with calls in flight;
/// if all are busy, the new one is closed). When accepting fails for want
/// of descriptors or memory the listener backs off (up to 1 s).
pub async fn serve(
    listener: TcpListener,
    service: Arc<dyn Service>,
    cfg: ConnConfig,
    mut shutdown: watch::Receiver<bool>,
) {
    let shared = Shared::new(&cfg);
    let cap = connection_cap(&cfg);
    let per_source = per_source_cap(&cfg, cap);
    let cap_log = RateLimit::per_secs(10);
    let evict_log = RateLimit::per_secs(10);
    let accept_log = RateLimit::per_secs(10);
    let mut backoff = Duration::ZERO;
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.wait_for(|s| *s) => break,
        };
        match accepted {
            Ok((stream, peer)) => {
                backoff = Duration::ZERO;
                // Sockets closed to make room but not yet dropped: past
                // this, refuse before closing anyone else for nothing.
                if shared.live() >= live_ceiling(cap) {
                    drop(stream);
                    if let Some(n) = cap_log.allow() {
                        warn!(
                            %peer,
                            "{} sockets still open: closing a new connection \
                             ({n} more refused since the last report)",
                            shared.live()
                        );
                    }
                    continue;
                }
                let admit = admit::lock(&shared.table).admit(peer.ip(), cap, per_source);
                let limit = |over| match over {
                    Over::Total => format!("{cap} connections open"),
                    Over::Source => format!("{per_source} connections open from {}", peer.ip()),
                };
                match admit {
                    Admit::Room => {}
                    Admit::Evict(victim, over) => {
                        let idle = victim.last_active().elapsed();
                        let kind = if victim.proven() {
                            "idle"
                        } else {
                            "idle and never sent a valid call"
                        };
                        if let Some(n) = evict_log.allow() {
                            warn!(
                                %peer,
                                "{}: closing the connection idle longest ({}, {kind} for \
                                 {:.0?}) for a new one ({n} more since the last report)",
                                limit(over),
                                victim.peer(),
                                idle
                            );
                        }
                        victim.close();
                    }
                    Admit::Refuse(over) => {
                        drop(stream);
                        if let Some(n) = cap_log.allow() {
                            warn!(
                                %peer,
                                "{}, all busy: closing a new connection \
                                 ({n} more refused since the last report)",
                                limit(over)
                            );
                        }
                        continue;
                    }
                }
                if let Err(e) =
                    start_shared(stream, Some(service.clone()), cfg.clone(), shared.clone())
                {
                    debug!(%peer, "could not start connection: {e}");
                }
            }
            Err(e) if per_connection(&e) => debug!("accept failed: {e}"),
            Err(e) => {
                backoff = (backoff * 2).clamp(Duration::from_millis(10), Duration::from_secs(1));
                if let Some(n) = accept_log.allow() {
                    warn!(
                        "accept failed: {e}; retrying in up to 1 s \
                         ({n} more failures not logged)"
                    );
                }
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = shutdown.wait_for(|s| *s) => break,
                }
            }
        }
    }
    info!("listener stopped");
}
