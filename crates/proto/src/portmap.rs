//! Port mapper protocol, version 2 (RFC 1833 §3), and RPCBIND versions 3
//! and 4 (§2), wire types written from the RFC text. The port mapper (program 100000 on port 111) maps an RPC
//! program and version on TCP or UDP to the port it listens on; NFSv3
//! clients ask it where MOUNT and NLM are.

use xdr::{Pack, Unpack};

use crate::nfs3::List;

/// RFC 1833 §3.1: the port mapper's well-known port.
pub const PMAP_PORT: u16 = 111;

/// RFC 1833 §3.1: the port mapper program number (`PMAP_PROG`).
pub const PMAP_PROG: u32 = 100000;
/// RFC 1833 §3.1: `PMAP_VERS`.
pub const PMAP_VERS: u32 = 2;

/// RFC 1833 §3.1: procedure numbers of `PMAP_VERS` (what each does:
/// §3.2).
pub const PMAPPROC_NULL: u32 = 0;
pub const PMAPPROC_SET: u32 = 1;
pub const PMAPPROC_UNSET: u32 = 2;
pub const PMAPPROC_GETPORT: u32 = 3;
pub const PMAPPROC_DUMP: u32 = 4;
pub const PMAPPROC_CALLIT: u32 = 5;

/// RFC 1833 §3.1: `IPPROTO_TCP`, the `prot` of a mapping over TCP.
pub const IPPROTO_TCP: u32 = 6;
/// RFC 1833 §3.1: `IPPROTO_UDP`.
pub const IPPROTO_UDP: u32 = 17;

/// RFC 1833 §3.1: `mapping`, a (program, version, protocol) and its port.
/// The argument of SET, UNSET and GETPORT (whose `port` is ignored); the
/// result of GETPORT is the port alone, an `unsigned int` that is 0 when
/// the program is not registered (§3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct Mapping {
    pub prog: u32,
    pub vers: u32,
    pub prot: u32,
    pub port: u32,
}

/// RFC 1833 §3.1: `pmaplist`, the result of DUMP (the `next` pointers as a
/// [`List`]).
pub type PmapList = List<Mapping>;

// ---------------------------------------------------------------------------
// RPCBIND versions 3 and 4 (RFC 1833 §2)
// ---------------------------------------------------------------------------

/// RFC 1833 §2.1: `RPCBVERS` (3) and `RPCBVERS4` (4) of program 100000.
pub const RPCBVERS: u32 = 3;
pub const RPCBVERS4: u32 = 4;

/// RFC 1833 §2.2: procedure numbers of versions 3 and 4 (`RPCBPROC_BCAST`
/// is version 4's name for 5, CALLIT).
pub const RPCBPROC_NULL: u32 = 0;
pub const RPCBPROC_SET: u32 = 1;
pub const RPCBPROC_UNSET: u32 = 2;
pub const RPCBPROC_GETADDR: u32 = 3;
pub const RPCBPROC_DUMP: u32 = 4;
pub const RPCBPROC_CALLIT: u32 = 5;
pub const RPCBPROC_GETTIME: u32 = 6;
pub const RPCBPROC_UADDR2TADDR: u32 = 7;
pub const RPCBPROC_TADDR2UADDR: u32 = 8;
pub const RPCBPROC_GETVERSADDR: u32 = 9;
pub const RPCBPROC_INDIRECT: u32 = 10;
pub const RPCBPROC_GETADDRLIST: u32 = 11;
pub const RPCBPROC_GETSTAT: u32 = 12;

/// RFC 1833 §2.1: `RPCBSTAT_HIGHPROC`, the procedures counted by GETSTAT,
/// and `RPCBVERS_STAT`, the versions it counts them for (2, 3, 4).
pub const RPCBSTAT_HIGHPROC: usize = 13;
pub const RPCBVERS_STAT: usize = 3;

/// The longest netid, universal address or owner accepted (RFC 1833
/// leaves the strings unbounded; these are far past any real one).
pub const RPCB_MAXSTR: usize = 256;

/// RFC 1833 §2.1: `rpcb`, a program, version and transport (`r_netid`,
/// "tcp" or "udp"), its universal address (`r_addr`, "h1.h2.h3.h4.p1.p2"
/// for IPv4) and who registered it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct Rpcb {
    pub r_prog: u32,
    pub r_vers: u32,
    #[xdr(max = RPCB_MAXSTR)]
    pub r_netid: String,
    #[xdr(max = RPCB_MAXSTR)]
    pub r_addr: String,
    #[xdr(max = RPCB_MAXSTR)]
    pub r_owner: String,
}

/// RFC 1833 §2.1: `rpcblist_ptr`, the result of DUMP.
pub type RpcbList = List<Rpcb>;

/// RFC 1833 §2.1: `rpcb_entry`, one address of a program (GETADDRLIST).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct RpcbEntry {
    #[xdr(max = RPCB_MAXSTR)]
    pub r_maddr: String,
    #[xdr(max = RPCB_MAXSTR)]
    pub r_nc_netid: String,
    /// `NC_TPI_COTS_ORD` (3) for TCP, `NC_TPI_CLTS` (1) for UDP.
    pub r_nc_semantics: u32,
    #[xdr(max = RPCB_MAXSTR)]
    pub r_nc_protofmly: String,
    #[xdr(max = RPCB_MAXSTR)]
    pub r_nc_proto: String,
}

/// RFC 1833 §2.1: `rpcb_entry_list_ptr`, the result of GETADDRLIST.
pub type RpcbEntryList = List<RpcbEntry>;

/// RFC 1833 §2.1: transport semantics of an [`RpcbEntry`].
pub const NC_TPI_CLTS: u32 = 1;
pub const NC_TPI_COTS_ORD: u32 = 3;

/// RFC 1833 §2.1: `netbuf`, a transport address (UADDR2TADDR,
/// TADDR2UADDR).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct Netbuf {
    pub maxlen: u32,
    #[xdr(max = RPCB_MAXSTR)]
    pub buf: bytes::Bytes,
}

/// RFC 1833 §2.1: `rpcb_stat`, the counts of one version (GETSTAT). The
/// address and remote-call lists are sent empty.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct RpcbStat {
    /// Calls of each procedure.
    pub info: [i32; RPCBSTAT_HIGHPROC],
    pub setinfo: i32,
    pub unsetinfo: i32,
}

impl Pack for RpcbStat {
    fn pack(&self, e: &mut xdr::Encoder) {
        for n in self.info {
            n.pack(e);
        }
        self.setinfo.pack(e);
        self.unsetinfo.pack(e);
        e.bool(false); // addrinfo: rpcbs_addrlist_ptr, empty
        e.bool(false); // rmtinfo: rpcbs_rmtcalllist_ptr, empty
    }
}

impl Unpack for RpcbStat {
    fn unpack(d: &mut xdr::Decoder) -> xdr::Result<Self> {
        let mut s = RpcbStat::default();
        for n in s.info.iter_mut() {
            *n = i32::unpack(d)?;
        }
        s.setinfo = i32::unpack(d)?;
        s.unsetinfo = i32::unpack(d)?;
        // Only empty lists are understood.
        if d.bool()? || d.bool()? {
            return Err(xdr::Error::BadDiscriminant(1, "rpcbs list"));
        }
        Ok(s)
    }
}

/// The universal address of an IPv4 or IPv6 socket address (RFC 5665
/// §5.2.3.3, §5.2.3.4): the host, then the port's two bytes in decimal.
pub fn uaddr(a: &std::net::SocketAddr) -> String {
    format!("{}.{}.{}", a.ip(), a.port() >> 8, a.port() & 0xff)
}

/// The socket address of a universal address, if it is one.
pub fn parse_uaddr(s: &str) -> Option<std::net::SocketAddr> {
    let (rest, lo) = s.rsplit_once('.')?;
    let (host, hi) = rest.rsplit_once('.')?;
    let (hi, lo): (u8, u8) = (hi.parse().ok()?, lo.parse().ok()?);
    let ip: std::net::IpAddr = host.parse().ok()?;
    Some(std::net::SocketAddr::new(
        ip,
        u16::from(hi) << 8 | u16::from(lo),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_layout_and_roundtrip() {
        let m = Mapping {
            prog: 100021,
            vers: 4,
            prot: IPPROTO_TCP,
            port: 0,
        };
        let b = xdr::to_bytes(&m);
        assert_eq!(
            &b[..],
            &[0, 1, 0x86, 0xb5, 0, 0, 0, 4, 0, 0, 0, 6, 0, 0, 0, 0] // 100021 = 0x186b5
        );
        assert_eq!(xdr::from_bytes::<Mapping>(b.clone()).unwrap(), m);
        for n in 0..b.len() {
            assert!(xdr::from_bytes::<Mapping>(b.slice(..n)).is_err());
        }
    }

    #[test]
    fn rpcb_roundtrip_and_uaddr() {
        let r = Rpcb {
            r_prog: 100005,
            r_vers: 3,
            r_netid: "tcp".into(),
            r_addr: "127.0.0.1.8.1".into(),
            r_owner: "ferrite".into(),
        };
        let b = xdr::to_bytes(&r);
        assert_eq!(xdr::from_bytes::<Rpcb>(b.clone()).unwrap(), r);
        for n in 0..b.len() {
            assert!(xdr::from_bytes::<Rpcb>(b.slice(..n)).is_err());
        }
        let a: std::net::SocketAddr = "10.0.2.2:2049".parse().unwrap();
        assert_eq!(uaddr(&a), "10.0.2.2.8.1");
        assert_eq!(parse_uaddr("10.0.2.2.8.1"), Some(a));
        let a6: std::net::SocketAddr = "[::1]:111".parse().unwrap();
        assert_eq!(parse_uaddr(&uaddr(&a6)), Some(a6));
        for bad in ["", "1.2.3.4", "1.2.3.4.5", "1.2.3.4.256.1", "x.1.2"] {
            assert_eq!(parse_uaddr(bad), None, "{bad}");
        }
        let st = RpcbStat {
            info: [1; RPCBSTAT_HIGHPROC],
            setinfo: 2,
            unsetinfo: 3,
        };
        let b = xdr::to_bytes(&st);
        assert_eq!(b.len(), 4 * (RPCBSTAT_HIGHPROC + 4));
        assert_eq!(xdr::from_bytes::<RpcbStat>(b).unwrap(), st);
    }

    #[test]
    fn dump_list() {
        let l: PmapList = List(vec![
            Mapping {
                prog: PMAP_PROG,
                vers: PMAP_VERS,
                prot: IPPROTO_TCP,
                port: PMAP_PORT as u32,
            },
            Mapping {
                prog: 100003,
                vers: 3,
                prot: IPPROTO_UDP,
                port: 2049,
            },
        ]);
        let b = xdr::to_bytes(&l);
        assert_eq!(xdr::from_bytes::<PmapList>(b.clone()).unwrap(), l);
        for n in 0..b.len() {
            assert!(xdr::from_bytes::<PmapList>(b.slice(..n)).is_err());
        }
    }
}
