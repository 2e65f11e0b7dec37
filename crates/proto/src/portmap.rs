//! Port mapper protocol, version 2, wire types (RFC 1833 §3), written from
//! the RFC text. The port mapper (program 100000 on port 111) maps an RPC
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
