//! A built-in port mapper: PMAP version 2 (RFC 1833 §3) and RPCBIND
//! versions 3 and 4 (§2), so that an NFSv3 client finds MOUNT, NLM and
//! NSM (`mount -t nfs -o vers=3 SERVER:/ /mnt` with no port options),
//! and `rpcinfo` and `showmount` work, on a host that runs no rpcbind.
//!
//! It maps Ferrite's own programs, and takes SET and UNSET from local
//! callers (loopback) for other programs, at most [`MAX_ENTRIES`]; the
//! programs Ferrite serves cannot be changed by them. CALLIT, INDIRECT
//! and BCAST (calls forwarded on the caller's behalf, a traffic amplifier)
//! are not answered.
//!
//! Where a system rpcbind already holds port 111, Ferrite registers its
//! programs with it instead ([`register_with`]) and takes them off at
//! stop.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};

use bytes::{BufMut, Bytes, BytesMut};
use proto::nfs3::List;
use proto::portmap::*;
use rpc::{Call, Reply, ReplyError, ReplyFuture, Service};
use tracing::warn;
use xdr::Unpack;

/// Mappings of other programs kept at most.
pub const MAX_ENTRIES: usize = 1024;

static PMAP_LOG: rpc::RateLimit = rpc::RateLimit::per_secs(10);

/// One mapping: a program, version and transport ("tcp", "udp", "tcp6",
/// "udp6") and where it listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub prog: u32,
    pub vers: u32,
    pub netid: String,
    pub addr: SocketAddr,
    pub owner: String,
}

/// The mapping table.
#[derive(Default)]
pub struct Portmap {
    own: Vec<Entry>,
    others: Mutex<Vec<Entry>>,
    /// Calls per version (2, 3, 4) and procedure, SETs and UNSETs
    /// (GETSTAT).
    calls: [[AtomicI32; RPCBSTAT_HIGHPROC]; RPCBVERS_STAT],
    sets: [AtomicI32; RPCBVERS_STAT],
    unsets: [AtomicI32; RPCBVERS_STAT],
}

/// The owner name of Ferrite's own mappings.
pub const OWNER: &str = "ferrite";

/// The netid of a transport at `addr` ("tcp"/"udp", "6" for IPv6).
pub fn netid(tcp: bool, addr: &SocketAddr) -> String {
    let base = if tcp { "tcp" } else { "udp" };
    if addr.is_ipv6() {
        format!("{base}6")
    } else {
        base.to_string()
    }
}

fn prot_of(netid: &str) -> Option<u32> {
    match netid {
        "tcp" => Some(IPPROTO_TCP),
        "udp" => Some(IPPROTO_UDP),
        _ => None,
    }
}

/// The IPv4 netid of a PMAP version 2 protocol number.
fn netid_of(prot: u32) -> Option<&'static str> {
    match prot {
        IPPROTO_TCP => Some("tcp"),
        IPPROTO_UDP => Some("udp"),
        _ => None,
    }
}

impl Entry {
    /// This mapping as PMAP version 2 has it (IPv4 TCP and UDP only).
    fn mapping(&self) -> Option<Mapping> {
        Some(Mapping {
            prog: self.prog,
            vers: self.vers,
            prot: prot_of(&self.netid)?,
            port: u32::from(self.addr.port()),
        })
    }
}

impl Portmap {
    /// A port mapper for Ferrite's programs `own`.
    pub fn new(own: Vec<Entry>) -> Arc<Portmap> {
        Arc::new(Portmap {
            own,
            ..Default::default()
        })
    }

    /// Every mapping, Ferrite's first.
    pub fn entries(&self) -> Vec<Entry> {
        let o = self.others.lock().unwrap_or_else(|p| p.into_inner());
        self.own.iter().chain(o.iter()).cloned().collect()
    }

    fn serves(&self, prog: u32) -> bool {
        self.own.iter().any(|e| e.prog == prog)
    }

    /// SET: false if Ferrite serves the program, it is mapped already on
    /// that transport, or the table is full.
    fn set(&self, e: Entry) -> bool {
        if self.serves(e.prog) {
            return false;
        }
        let mut o = self.others.lock().unwrap_or_else(|p| p.into_inner());
        if o.len() >= MAX_ENTRIES
            || o.iter()
                .any(|x| x.prog == e.prog && x.vers == e.vers && x.netid == e.netid)
        {
            return false;
        }
        o.push(e);
        true
    }

    /// UNSET of `prog`/`vers` on `netid` (every transport if none).
    fn unset(&self, prog: u32, vers: u32, netid: Option<&str>) -> bool {
        if self.serves(prog) {
            return false;
        }
        let mut o = self.others.lock().unwrap_or_else(|p| p.into_inner());
        let before = o.len();
        o.retain(|x| !(x.prog == prog && x.vers == vers && netid.is_none_or(|n| n == x.netid)));
        o.len() != before
    }

    /// Where `prog` listens on `netid`: version `vers` exactly, or (`any`)
    /// any version if that one is not mapped (RFC 1833 §2.2.3: the client
    /// then learns the versions from PROG_MISMATCH).
    fn find(&self, prog: u32, vers: u32, netid: &str, any: bool) -> Option<SocketAddr> {
        let all = self.entries();
        let on = |e: &&Entry| e.prog == prog && e.netid == netid;
        all.iter()
            .filter(on)
            .find(|e| e.vers == vers)
            .or_else(|| if any { all.iter().find(on) } else { None })
            .map(|e| e.addr)
    }
}

/// An address as the caller should use it: an unspecified (wildcard) one
/// becomes the address the call arrived on.
fn as_seen(addr: SocketAddr, local: SocketAddr) -> SocketAddr {
    if addr.ip().is_unspecified() {
        SocketAddr::new(local.ip(), addr.port())
    } else {
        addr
    }
}

/// RFC 1833 §2.1 `netbuf` of an IPv4 address: a `struct sockaddr_in`
/// (family in host order, port and address in network order).
fn taddr(a: &SocketAddr) -> Option<Bytes> {
    let SocketAddr::V4(v4) = a else { return None };
    let mut b = BytesMut::with_capacity(16);
    b.put_u16_le(libc::AF_INET as u16);
    b.put_u16(v4.port());
    b.put_slice(&v4.ip().octets());
    b.put_bytes(0, 8);
    Some(b.freeze())
}

fn from_taddr(b: &[u8]) -> Option<SocketAddr> {
    if b.len() < 8 || u16::from_le_bytes([b[0], b[1]]) != libc::AF_INET as u16 {
        return None;
    }
    let port = u16::from_be_bytes([b[2], b[3]]);
    let ip = std::net::Ipv4Addr::new(b[4], b[5], b[6], b[7]);
    Some(SocketAddr::new(IpAddr::V4(ip), port))
}

/// The port mapper program's service (100000, versions 2 to 4).
pub struct PortmapService(pub Arc<Portmap>);

impl Service for PortmapService {
    fn call(&self, mut call: Call) -> ReplyFuture {
        let pm = self.0.clone();
        let r = answer(&pm, &mut call);
        Box::pin(async move { r })
    }
}

fn args<T: Unpack>(call: &mut Call) -> Result<T, Reply> {
    T::unpack(&mut call.args).map_err(|e| {
        if let Some(n) = PMAP_LOG.allow() {
            warn!(peer = %call.conn.peer(), "undecodable port mapper arguments: {e} ({n} more not logged)");
        }
        Reply::Error(ReplyError::GarbageArgs)
    })
}

/// Only local callers change the table (RFC 1833 §2.2.1: "only the owner
/// of the service" may; a remote caller is nobody's owner here).
fn local(call: &Call) -> bool {
    call.conn.peer().ip().is_loopback()
}

fn answer(pm: &Portmap, call: &mut Call) -> Reply {
    let vi = (call.vers as usize).wrapping_sub(2);
    if let Some(n) = pm.calls.get(vi).and_then(|v| v.get(call.proc_ as usize)) {
        n.fetch_add(1, Ordering::Relaxed);
    }
    macro_rules! arg {
        ($t:ty) => {
            match args::<$t>(call) {
                Ok(a) => a,
                Err(r) => return r,
            }
        };
    }
    let here = call.conn.local();
    if call.vers == PMAP_VERS {
        return match call.proc_ {
            PMAPPROC_SET | PMAPPROC_UNSET => {
                let m = arg!(Mapping);
                let Some(netid) = netid_of(m.prot) else {
                    return Reply::success(&false);
                };
                let ok = local(call)
                    && if call.proc_ == PMAPPROC_SET {
                        let port = u16::try_from(m.port).unwrap_or(0);
                        port != 0
                            && pm.set(Entry {
                                prog: m.prog,
                                vers: m.vers,
                                netid: netid.to_string(),
                                addr: SocketAddr::new(IpAddr::from([0, 0, 0, 0]), port),
                                owner: "unknown".to_string(),
                            })
                    } else {
                        // Every transport: "the protocol and port number
                        // fields of the argument are ignored" (§3.2).
                        pm.unset(m.prog, m.vers, None)
                    };
                count(pm, vi, call.proc_, ok);
                Reply::success(&ok)
            }
            PMAPPROC_GETPORT => {
                let m = arg!(Mapping);
                let Some(netid) = netid_of(m.prot) else {
                    return Reply::success(&0u32);
                };
                let port = pm
                    .find(m.prog, m.vers, netid, false)
                    .map_or(0, |a| a.port());
                Reply::success(&u32::from(port))
            }
            PMAPPROC_DUMP => {
                let l: PmapList = List(pm.entries().iter().filter_map(Entry::mapping).collect());
                Reply::success(&l)
            }
            PMAPPROC_CALLIT => Reply::Drop,
            _ => Reply::Error(ReplyError::ProcUnavail),
        };
    }
    match call.proc_ {
        RPCBPROC_SET | RPCBPROC_UNSET => {
            let r = arg!(Rpcb);
            let ok = local(call)
                && if call.proc_ == RPCBPROC_SET {
                    match parse_uaddr(&r.r_addr) {
                        Some(addr) if addr.port() != 0 && !r.r_netid.is_empty() => pm.set(Entry {
                            prog: r.r_prog,
                            vers: r.r_vers,
                            netid: r.r_netid.clone(),
                            addr,
                            owner: r.r_owner.clone(),
                        }),
                        _ => false,
                    }
                } else {
                    let netid = (!r.r_netid.is_empty()).then_some(r.r_netid.as_str());
                    pm.unset(r.r_prog, r.r_vers, netid)
                };
            count(pm, vi, call.proc_, ok);
            Reply::success(&ok)
        }
        RPCBPROC_GETADDR | RPCBPROC_GETVERSADDR => {
            let r = arg!(Rpcb);
            // No netid: the transport the call came on.
            let netid = if r.r_netid.is_empty() {
                netid(!call.conn.is_datagram(), &here)
            } else {
                r.r_netid.clone()
            };
            let exact = call.proc_ == RPCBPROC_GETVERSADDR;
            let addr = pm
                .find(r.r_prog, r.r_vers, &netid, !exact)
                .map(|a| uaddr(&as_seen(a, here)))
                .unwrap_or_default();
            Reply::success(&addr)
        }
        RPCBPROC_DUMP => {
            let l: RpcbList = List(
                pm.entries()
                    .into_iter()
                    .map(|e| Rpcb {
                        r_prog: e.prog,
                        r_vers: e.vers,
                        r_addr: uaddr(&e.addr),
                        r_netid: e.netid,
                        r_owner: e.owner,
                    })
                    .collect(),
            );
            Reply::success(&l)
        }
        RPCBPROC_GETTIME => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as u32);
            Reply::success(&now)
        }
        RPCBPROC_UADDR2TADDR => {
            let s: String = arg!(String);
            let buf = parse_uaddr(&s).and_then(|a| taddr(&a)).unwrap_or_default();
            Reply::success(&Netbuf {
                maxlen: buf.len() as u32,
                buf,
            })
        }
        RPCBPROC_TADDR2UADDR => {
            let n = arg!(Netbuf);
            Reply::success(&from_taddr(&n.buf).map(|a| uaddr(&a)).unwrap_or_default())
        }
        RPCBPROC_GETADDRLIST if call.vers == RPCBVERS4 => {
            let r = arg!(Rpcb);
            let l: RpcbEntryList = List(
                pm.entries()
                    .into_iter()
                    .filter(|e| e.prog == r.r_prog && e.vers == r.r_vers)
                    .map(|e| RpcbEntry {
                        r_maddr: uaddr(&as_seen(e.addr, here)),
                        r_nc_semantics: if e.netid.starts_with("tcp") {
                            NC_TPI_COTS_ORD
                        } else {
                            NC_TPI_CLTS
                        },
                        r_nc_protofmly: if e.addr.is_ipv6() { "inet6" } else { "inet" }.into(),
                        r_nc_proto: if e.netid.starts_with("tcp") {
                            "tcp"
                        } else {
                            "udp"
                        }
                        .into(),
                        r_nc_netid: e.netid,
                    })
                    .collect(),
            );
            Reply::success(&l)
        }
        RPCBPROC_GETSTAT if call.vers == RPCBVERS4 => {
            let mut e = xdr::Encoder::new();
            for v in 0..RPCBVERS_STAT {
                let mut st = RpcbStat {
                    setinfo: pm.sets[v].load(Ordering::Relaxed),
                    unsetinfo: pm.unsets[v].load(Ordering::Relaxed),
                    ..Default::default()
                };
                for (i, n) in st.info.iter_mut().enumerate() {
                    *n = pm.calls[v][i].load(Ordering::Relaxed);
                }
                xdr::Pack::pack(&st, &mut e);
            }
            Reply::Success(e.finish())
        }
        RPCBPROC_CALLIT | RPCBPROC_INDIRECT => Reply::Drop,
        _ => Reply::Error(ReplyError::ProcUnavail),
    }
}

fn count(pm: &Portmap, vi: usize, proc_: u32, ok: bool) {
    if !ok {
        return;
    }
    let c = if proc_ == PMAPPROC_SET {
        &pm.sets
    } else {
        &pm.unsets
    };
    if let Some(n) = c.get(vi) {
        n.fetch_add(1, Ordering::Relaxed);
    }
}

/// Registers (or, `unset`, takes off) `entries` with the port mapper at
/// `at` (a system rpcbind), with PMAP version 2 SET and UNSET: how many
/// it accepted. Stale mappings of an earlier run go first; UNSET takes
/// off every transport of a program and version (RFC 1833 §3.2), so all
/// of them are cleared before any is set.
pub async fn register_with(at: SocketAddr, entries: &[Entry], unset: bool) -> usize {
    let call = |proc_: u32, m: Mapping| async move {
        crate::v3::nlm::callback::call(at, PMAP_PROG, PMAP_VERS, proc_, OWNER, &m).await
    };
    let mappings: Vec<Mapping> = entries.iter().filter_map(Entry::mapping).collect();
    let mut cleared = std::collections::HashSet::new();
    let mut n = 0;
    for m in &mappings {
        if cleared.insert((m.prog, m.vers)) && call(PMAPPROC_UNSET, *m).await.is_ok() && unset {
            n += 1;
        }
    }
    if unset {
        return n;
    }
    for m in mappings {
        match call(PMAPPROC_SET, m).await {
            Ok(mut d) => {
                if bool::unpack(&mut d).unwrap_or(false) {
                    n += 1;
                } else {
                    warn!(
                        prog = m.prog,
                        vers = m.vers,
                        prot = m.prot,
                        "the system port mapper refused a mapping"
                    );
                }
            }
            Err(err) => warn!(
                prog = m.prog,
                "registering with the system port mapper: {err}"
            ),
        }
    }
    n
}
