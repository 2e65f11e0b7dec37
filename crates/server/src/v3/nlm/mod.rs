//! The Network Lock Manager, version 4 (RFC 1813 Appendix II; the
//! procedures and their arguments as X/Open XNFS chapter 10 gives them for
//! version 3): byte-range locks and DOS share reservations for NFSv3
//! clients, held in the one lock table NFSv4 uses
//! ([`state::nlm`]), so that an NFSv3 and an NFSv4 client
//! contend for one range correctly.
//!
//! * Hosts ([`hosts`]) are client lock managers; a lock owner is a host's
//!   (`svid`, `oh`) pair.
//! * A blocking LOCK that is denied is queued (NLM4_BLOCKED); when it can
//!   be granted the server takes the lock for it and tells its host with
//!   NLM_GRANTED ([`Nlm::tell_granted`]). A host that says it no longer
//!   waits has the lock released; one that cannot be reached keeps it
//!   (its client retries the LOCK, which then finds it granted).
//! * The first lock or share of a host is recorded on stable storage
//!   before it is answered ([`crate::v3::nsm`]); after a restart the server
//!   sends SM_NOTIFY to each recorded host and only reclaims are granted
//!   for the grace period, which NFSv4 shares.
//! * The `_MSG` procedures do what their synchronous twins do and send the
//!   result back as the matching `_RES` call; `_RES` calls are taken and
//!   dropped (this server sends NLM_GRANTED synchronously).
//! * A lock, share or TEST on a file with NFSv4 delegations recalls them
//!   first (their holders take locks in their caches), and no delegation
//!   is granted of a file with NLM locks or shares.

pub mod callback;
pub mod hosts;
pub mod procs;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use proto::nfs3::{NfsFh3, NfsStat3, NFS3_FHSIZE};
use proto::nlm::*;
use rpc::{Call, Reply, ReplyError};
use tracing::{debug, info, warn};
use xdr::{Pack, Unpack};

use crate::instance::Server;
use crate::v3::nfs3::{Ctx, Obj};
use crate::v3::nsm::Nsm;
use hosts::{Host, Hosts};
use state::locks::{Held, LockKind};
use state::nlm::{is_nlm, NlmGrant};
use state::{FileKey, OwnerKey};

/// Bad requests logged at most this often.
static BAD_LOG: rpc::RateLimit = rpc::RateLimit::per_secs(10);

/// Blocked LOCK requests remembered at most (past it a blocking LOCK that
/// is denied is answered NLM4_DENIED, as a non-blocking one).
pub const MAX_BLOCKED: usize = 16384;

/// How often, and how far apart at first, NLM_GRANTED is tried.
const GRANTED_TRIES: u32 = 5;
const GRANTED_BACKOFF: Duration = Duration::from_secs(1);

/// The lock manager's shared state.
pub struct Nlm {
    pub srv: Arc<Server>,
    pub hosts: Hosts,
    pub nsm: Arc<Nsm>,
    /// Blocked LOCK requests by owner and file, as their client sent them
    /// (NLM_GRANTED names the lock so).
    blocked: Mutex<HashMap<(OwnerKey, FileKey), Nlm4LockArgs>>,
    /// Requests granted whose host has not yet accepted NLM_GRANTED: a
    /// CANCEL of one releases the lock.
    telling: Mutex<HashMap<(OwnerKey, FileKey), (u64, u64)>>,
    /// The port clients' port mappers listen on (111).
    pub client_pmap_port: u16,
    /// This server's name in the calls it makes.
    pub machine: String,
}

/// One NLM call: who made it and how it reached the server.
#[derive(Debug, Clone)]
pub struct NlmCall {
    pub auth: rpc::Auth,
    pub peer: SocketAddr,
    pub local: SocketAddr,
}

impl Nlm {
    /// A lock manager for `srv`'s exports; call [`Nlm::start`] to have
    /// granted requests told.
    pub fn new(srv: Arc<Server>, nsm: Arc<Nsm>, client_pmap_port: u16) -> Arc<Nlm> {
        Arc::new(Nlm {
            srv,
            hosts: Hosts::default(),
            nsm,
            blocked: Mutex::default(),
            telling: Mutex::default(),
            client_pmap_port,
            machine: hostname(),
        })
    }

    /// Takes the requests the lock table grants (on any unlock, NFSv4's
    /// too) and tells their hosts, each in a task of its own.
    pub fn start(self: &Arc<Self>) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<NlmGrant>>();
        self.srv.state().on_nlm_granted(Box::new(move |g| {
            let _ = tx.send(g);
        }));
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            while let Some(grants) = rx.recv().await {
                let Some(nlm) = weak.upgrade() else { break };
                for g in grants {
                    let nlm = nlm.clone();
                    tokio::spawn(async move { nlm.tell_granted(g).await });
                }
            }
        });
    }

    /// The NFSv3 context of a call (export rules, credentials).
    pub fn ctx(&self, c: &NlmCall) -> Ctx {
        Ctx {
            exports: self.srv.exports(),
            srv: self.srv.clone(),
            auth: c.auth.clone(),
            peer: c.peer,
            xprt: None,
        }
    }

    /// The file an NLM filehandle (an NFSv3 one) names, if the caller may
    /// use its export.
    pub fn file(&self, c: &NlmCall, fh: &Netobj) -> Result<(Obj, FileKey), Nlm4Stats> {
        if fh.0.len() > NFS3_FHSIZE {
            return Err(Nlm4Stats::StaleFh);
        }
        let o = self
            .ctx(c)
            .obj(&NfsFh3 { data: fh.0.clone() })
            .map_err(|s| match s {
                NfsStat3::Stale | NfsStat3::BadHandle => Nlm4Stats::StaleFh,
                _ => Nlm4Stats::Failed,
            })?;
        let key = (o.export, o.handle.0.clone());
        Ok((o, key))
    }

    /// The host making this call, added if new. Hosts forgotten to make
    /// room (they held nothing) lose their status monitor records too, so
    /// that a client cycling through names fills neither.
    pub fn host(&self, c: &NlmCall, caller_name: &Bytes) -> Result<Host, Nlm4Stats> {
        let st = self.srv.state();
        let (host, evicted) = self
            .hosts
            .get_or_add(c.peer.ip(), caller_name, c.local.ip(), |id| {
                st.nlm_host_busy(id)
            });
        if !evicted.is_empty() {
            let nsm = self.nsm.clone();
            tokio::spawn(crate::handoff::off_thread(move || {
                for h in &evicted {
                    let _ = nsm.unmonitor(h);
                }
            }));
        }
        host.ok_or_else(|| {
            if let Some(n) = BAD_LOG.allow() {
                warn!(peer = %c.peer, "NLM host table full: refusing a lock ({n} more not logged)");
            }
            Nlm4Stats::DeniedNolocks
        })
    }

    /// The host making this call, if known.
    pub fn known_host(&self, c: &NlmCall, caller_name: &[u8]) -> Option<Host> {
        self.hosts.named(c.peer.ip(), caller_name).pop()
    }

    /// Recalls other clients' NFSv4 delegations of `o`, read or write: a
    /// holder takes locks in its cache without telling the server (the
    /// Linux client does under either kind); false if they are not
    /// returned in time.
    pub async fn settle(&self, c: &NlmCall, o: &Obj) -> bool {
        self.ctx(c).settle(o, false).await.is_ok()
    }

    /// Records `host` with the status monitor (once), before its first
    /// lock or share is answered.
    pub async fn monitor(&self, host: &Host) -> bool {
        let nsm = self.nsm.clone();
        let h = host.clone();
        let done = crate::handoff::off_thread(move || nsm.monitor(&h)).await;
        match done
            .map_err(|e| std::io::Error::other(e.to_string()))
            .and_then(|r| r)
        {
            Ok(()) => true,
            Err(e) => {
                if let Some(n) = BAD_LOG.allow() {
                    warn!(host = %host.addr, "NSM: cannot record the host: {e} ({n} more not logged)");
                }
                false
            }
        }
    }

    /// Remembers a blocking request before it is queued; false when too
    /// many are.
    pub fn remember_blocked(&self, owner: &OwnerKey, file: &FileKey, a: &Nlm4LockArgs) -> bool {
        let mut b = self.blocked.lock().unwrap_or_else(|p| p.into_inner());
        let key = (owner.clone(), file.clone());
        if b.len() >= MAX_BLOCKED && !b.contains_key(&key) {
            return false;
        }
        b.insert(key, a.clone());
        true
    }

    /// Forgets `owner`'s blocked request on `file` and any grant being
    /// told: its LOCK was answered.
    pub fn forget_blocked(&self, owner: &OwnerKey, file: &FileKey) {
        let key = (owner.clone(), file.clone());
        self.blocked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&key);
        self.telling
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&key);
    }

    /// The range of a grant being told to `owner` on `file`, taken off
    /// the list (CANCEL undoes it).
    pub fn take_telling(&self, owner: &OwnerKey, file: &FileKey) -> Option<(u64, u64)> {
        self.telling
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(owner.clone(), file.clone()))
    }

    /// Tells the host of a request the lock table granted (NLM_GRANTED).
    async fn tell_granted(&self, g: NlmGrant) {
        let key = (g.owner.clone(), g.file.clone());
        let args = self
            .blocked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&key);
        let (Some(a), Some(host)) = (args, self.hosts.by_client(g.owner.0)) else {
            // Nobody to tell: the request is not known any more.
            debug!("NLM: granted a request no host waits for; releasing it");
            self.srv.notify_locks(
                self.srv
                    .state()
                    .nlm_unlock(&g.owner, &g.file, g.start, g.end),
            );
            return;
        };
        self.telling
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone(), (g.start, g.end));
        let targs = Nlm4TestArgs {
            cookie: a.cookie.clone(),
            exclusive: a.exclusive,
            alock: a.alock.clone(),
        };
        let mut wait = GRANTED_BACKOFF;
        for attempt in 1..=GRANTED_TRIES {
            if !self.is_telling(&key) {
                return; // cancelled, or the client's retry found it
            }
            match self.granted_call(&host, &targs).await {
                Ok(Nlm4Stats::Granted) => {
                    self.take_telling(&key.0, &key.1);
                    debug!(host = %host.addr, "NLM_GRANTED accepted");
                    return;
                }
                Ok(Nlm4Stats::DeniedGracePeriod) => {}
                Ok(stat) => {
                    // It no longer waits: release what was taken for it.
                    if self.take_telling(&key.0, &key.1).is_some() {
                        info!(host = %host.addr, ?stat, "NLM_GRANTED refused; releasing the lock");
                        self.srv.notify_locks(
                            self.srv
                                .state()
                                .nlm_unlock(&g.owner, &g.file, g.start, g.end),
                        );
                    }
                    return;
                }
                Err(e) => {
                    if let Some(n) = BAD_LOG.allow() {
                        warn!(host = %host.addr, attempt, "NLM_GRANTED failed: {e} ({n} more not logged)");
                    }
                }
            }
            tokio::time::sleep(wait).await;
            wait *= 2;
        }
        // Kept: the client's next LOCK of it is answered GRANTED.
        self.take_telling(&key.0, &key.1);
    }

    fn is_telling(&self, key: &(OwnerKey, FileKey)) -> bool {
        self.telling
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(key)
    }

    /// One NLM_GRANTED call to `host`'s lock manager.
    async fn granted_call(
        &self,
        host: &Host,
        args: &Nlm4TestArgs,
    ) -> Result<Nlm4Stats, callback::CallbackError> {
        let mut d = callback::call_host(
            host.addr,
            self.client_pmap_port,
            NLM_PROG,
            NLM4_VERS,
            NLMPROC4_GRANTED,
            "NLM",
            &self.machine,
            args,
        )
        .await?;
        Ok(Nlm4Res::unpack(&mut d)?.stat)
    }

    /// Forgets everything of the hosts at `addr` named `name` (they
    /// restarted): locks, queued requests, shares and their status
    /// monitor records. How many there were.
    pub async fn free_hosts(&self, addr: std::net::IpAddr, name: &[u8]) -> usize {
        let hosts = self.hosts.named(addr, name);
        for h in &hosts {
            info!(host = %h.addr, name = %String::from_utf8_lossy(&h.name), "NLM: host restarted; freeing its locks");
            self.srv
                .notify_locks(self.srv.state().nlm_free_host(h.client()));
            self.hosts.remove(h.id);
            let (nsm, h) = (self.nsm.clone(), h.clone());
            let _ = crate::handoff::off_thread(move || nsm.unmonitor(&h)).await;
        }
        hosts.len()
    }

    /// Sends the result of a `_MSG` call back as its `_RES` call.
    fn send_res<R: Pack + Send + Sync + 'static>(
        self: &Arc<Self>,
        c: &NlmCall,
        proc_: u32,
        res: R,
    ) {
        let nlm = self.clone();
        let peer = c.peer.ip();
        tokio::spawn(async move {
            let sent = callback::call_host(
                peer,
                nlm.client_pmap_port,
                NLM_PROG,
                NLM4_VERS,
                proc_,
                "NLM",
                &nlm.machine,
                &res,
            )
            .await;
            if let Err(e) = sent {
                debug!(%peer, "NLM: {} failed: {e}", nlmproc4_name(proc_));
            }
        });
    }
}

/// An NLM lock owner: the host's client id and (`svid`, `oh`).
pub fn owner(host: &Host, svid: i32, oh: &Netobj) -> OwnerKey {
    let mut b = BytesMut::with_capacity(4 + oh.0.len());
    b.put_i32(svid);
    b.put_slice(&oh.0);
    (host.client(), b.freeze())
}

/// A share owner: the host's client id and `oh` (XNFS: shares have no
/// `svid`), marked apart from lock owners.
pub fn share_owner(host: &Host, oh: &Netobj) -> OwnerKey {
    let mut b = BytesMut::with_capacity(5 + oh.0.len());
    b.put_slice(b"share");
    b.put_slice(&oh.0);
    (host.client(), b.freeze())
}

/// The half-open range of an NLM (offset, length): length 0 runs to the
/// end of the file, however far (XNFS); one past 2^64 is NLM4_FBIG.
pub fn range(offset: u64, len: u64) -> Result<(u64, u64), Nlm4Stats> {
    if len == 0 {
        return Ok((offset, u64::MAX));
    }
    offset
        .checked_add(len)
        .map(|end| (offset, end))
        .ok_or(Nlm4Stats::Fbig)
}

/// Who holds a conflicting lock, as NLM tells it: an NLM owner's `svid`
/// and `oh`, an NFSv4 owner's name as `oh` (svid 0).
pub fn holder(h: &Held<OwnerKey>) -> Nlm4Holder {
    let (svid, oh) = if is_nlm(h.owner.0) && h.owner.1.len() >= 4 {
        let b = &h.owner.1;
        (i32::from_be_bytes([b[0], b[1], b[2], b[3]]), b.slice(4..))
    } else {
        (0, h.owner.1.clone())
    };
    Nlm4Holder {
        exclusive: h.kind == LockKind::Write,
        svid,
        oh: Netobj(oh.slice(..oh.len().min(MAXNETOBJ_SZ))),
        l_offset: h.start,
        l_len: if h.end == u64::MAX {
            0
        } else {
            h.end - h.start
        },
    }
}

/// The lock kind of `exclusive`.
pub fn kind(exclusive: bool) -> LockKind {
    if exclusive {
        LockKind::Write
    } else {
        LockKind::Read
    }
}

/// The host's name (`caller_name` of the calls it makes).
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "ferrite".to_string())
}

/// The NLM program's service.
pub struct NlmService(pub Arc<Nlm>);

/// Decodes a call's arguments: GARBAGE_ARGS, logged, if they do not.
pub fn args<T: Unpack>(call: &mut Call) -> Result<T, Reply> {
    T::unpack(&mut call.args).map_err(|e| {
        if let Some(n) = BAD_LOG.allow() {
            warn!(peer = %call.conn.peer(), proc_ = nlmproc4_name(call.proc_), "undecodable NLM arguments: {e} ({n} more not logged)");
        }
        Reply::Error(ReplyError::GarbageArgs)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_holders() {
        assert_eq!(range(5, 0), Ok((5, u64::MAX)));
        assert_eq!(range(5, 10), Ok((5, 15)));
        assert_eq!(range(u64::MAX, 1), Err(Nlm4Stats::Fbig));
        let host = Host {
            id: 3,
            name: Bytes::from_static(b"g"),
            addr: "10.0.0.1".parse().unwrap(),
            server: "10.0.0.2".parse().unwrap(),
        };
        let o = owner(&host, -7, &Netobj(Bytes::from_static(b"7@g")));
        let h = holder(&Held {
            owner: o,
            start: 5,
            end: u64::MAX,
            kind: LockKind::Write,
        });
        assert_eq!(
            (h.svid, &h.oh.0[..], h.l_len, h.exclusive),
            (-7, &b"7@g"[..], 0, true)
        );
        let v4 = holder(&Held {
            owner: (7 << 32 | 1, Bytes::from_static(b"v4owner")),
            start: 5,
            end: 9,
            kind: LockKind::Read,
        });
        assert_eq!(
            (v4.svid, &v4.oh.0[..], v4.l_len, v4.exclusive),
            (0, &b"v4owner"[..], 4, false)
        );
    }
}
