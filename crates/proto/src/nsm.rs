//! Network Status Monitor version 1 wire types (X/Open XNFS, chapter 11
//! "Status Monitor Protocol"), written from that text. NSM tells lock
//! managers that a host restarted: each host keeps a state number, odd
//! while it is up, that goes up at every restart, and sends SM_NOTIFY with
//! it to the hosts it held locks with (a client) or granted locks to (a
//! server).
//!
//! Every string is bounded on decode by [`SM_MAXSTRLEN`].

use bytes::Bytes;
use xdr::{Pack, Unpack};

/// XNFS ch. 11: the program number of the status monitor.
pub const SM_PROG: u32 = 100024;
/// XNFS ch. 11: `SM_VERS`.
pub const SM_VERS: u32 = 1;

/// XNFS ch. 11: procedures of `SM_VERS`.
pub const SM_NULL: u32 = 0;
pub const SM_STAT: u32 = 1;
pub const SM_MON: u32 = 2;
pub const SM_UNMON: u32 = 3;
pub const SM_UNMON_ALL: u32 = 4;
pub const SM_SIMU_CRASH: u32 = 5;
pub const SM_NOTIFY: u32 = 6;

/// XNFS ch. 11: `SM_MAXSTRLEN`, the longest host name.
pub const SM_MAXSTRLEN: usize = 1024;

/// `sm_name`: the argument of SM_STAT.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct SmName {
    #[xdr(max = SM_MAXSTRLEN)]
    pub mon_name: Bytes,
}

/// `res`: whether the monitor can do what was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum SmRes {
    StatSucc = 0,
    StatFail = 1,
}

/// `sm_stat_res`: the result of SM_STAT and SM_MON, with the monitor's
/// own state number.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct SmStatRes {
    pub res_stat: SmRes,
    pub state: i32,
}

/// `sm_stat`: the result of SM_UNMON and SM_UNMON_ALL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct SmStat {
    pub state: i32,
}

/// `my_id`: the local program to call back when a monitored host
/// restarts.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct MyId {
    #[xdr(max = SM_MAXSTRLEN)]
    pub my_name: Bytes,
    pub my_prog: i32,
    pub my_vers: i32,
    pub my_proc: i32,
}

/// `mon_id`: a host to monitor and who to tell (SM_UNMON).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct MonId {
    #[xdr(max = SM_MAXSTRLEN)]
    pub mon_name: Bytes,
    pub my_id: MyId,
}

/// `mon`: the argument of SM_MON.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct Mon {
    pub mon_id: MonId,
    pub priv_: [u8; 16],
}

/// `stat_chge`: the argument of SM_NOTIFY: `mon_name` restarted and is
/// now in `state`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct StatChge {
    #[xdr(max = SM_MAXSTRLEN)]
    pub mon_name: Bytes,
    pub state: i32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notify_layout_and_bounds() {
        let n = StatChge {
            mon_name: Bytes::from_static(b"guest"),
            state: 3,
        };
        let b = xdr::to_bytes(&n);
        assert_eq!(
            &b[..],
            &[0, 0, 0, 5, b'g', b'u', b'e', b's', b't', 0, 0, 0, 0, 0, 0, 3]
        );
        assert_eq!(xdr::from_bytes::<StatChge>(b.clone()).unwrap(), n);
        for k in 0..b.len() {
            assert!(xdr::from_bytes::<StatChge>(b.slice(..k)).is_err());
        }
        let long = StatChge {
            mon_name: Bytes::from(vec![b'a'; SM_MAXSTRLEN + 1]),
            state: 1,
        };
        assert!(xdr::from_bytes::<StatChge>(xdr::to_bytes(&long)).is_err());
        let m = Mon {
            mon_id: MonId {
                mon_name: Bytes::from_static(b"h"),
                my_id: MyId {
                    my_name: Bytes::from_static(b"localhost"),
                    my_prog: 100021,
                    my_vers: 4,
                    my_proc: 16,
                },
            },
            priv_: [7; 16],
        };
        let b = xdr::to_bytes(&m);
        assert_eq!(xdr::from_bytes::<Mon>(b).unwrap(), m);
    }
}
