//! Network Lock Manager version 4 wire types (RFC 1813 Appendix II), written
//! from the RFC text. NLM gives NFSv3 byte-range locks; version 4 is the
//! one used with NFSv3 (RFC 1813 §6).
//!
//! RFC 1813 §6.1.4 gives the data types that changed from NLM version 3
//! (64-bit offsets and lengths, new status codes) and §6.2 the procedures;
//! the argument and result structures it leaves unchanged apart from their
//! names, so they follow the NLM version 3 definitions of X/Open "Protocols
//! for X/Open PC Interworking: XNFS, Version 3W" (chapter 10), with the
//! version 4 types substituted. The constants `LM_MAXSTRLEN` and
//! `MAXNETOBJ_SZ` come from there too.
//!
//! Every variable-length item is bounded on decode: `netobj` by
//! [`MAXNETOBJ_SZ`], names by [`LM_MAXSTRLEN`] / [`LM_MAXNAMELEN`].

use bytes::Bytes;
use xdr::{Decoder, Encoder, Pack, Unpack};

// ---------------------------------------------------------------------------
// Program, version, procedures, constants
// ---------------------------------------------------------------------------

/// The NLM program number (XNFS ch. 10; the program that RFC 1813 §6.2
/// adds version 4 to).
pub const NLM_PROG: u32 = 100021;
/// RFC 1813 §6.2: `NLM4_VERS`.
pub const NLM4_VERS: u32 = 4;

/// RFC 1813 §6.2: procedure numbers of `NLM4_VERS`. The `_MSG` and `_RES`
/// procedures are asynchronous one-way messages (no reply).
pub const NLMPROC4_NULL: u32 = 0;
pub const NLMPROC4_TEST: u32 = 1;
pub const NLMPROC4_LOCK: u32 = 2;
pub const NLMPROC4_CANCEL: u32 = 3;
pub const NLMPROC4_UNLOCK: u32 = 4;
pub const NLMPROC4_GRANTED: u32 = 5;
pub const NLMPROC4_TEST_MSG: u32 = 6;
pub const NLMPROC4_LOCK_MSG: u32 = 7;
pub const NLMPROC4_CANCEL_MSG: u32 = 8;
pub const NLMPROC4_UNLOCK_MSG: u32 = 9;
pub const NLMPROC4_GRANTED_MSG: u32 = 10;
pub const NLMPROC4_TEST_RES: u32 = 11;
pub const NLMPROC4_LOCK_RES: u32 = 12;
pub const NLMPROC4_CANCEL_RES: u32 = 13;
pub const NLMPROC4_UNLOCK_RES: u32 = 14;
pub const NLMPROC4_GRANTED_RES: u32 = 15;
pub const NLMPROC4_SHARE: u32 = 20;
pub const NLMPROC4_UNSHARE: u32 = 21;
pub const NLMPROC4_NM_LOCK: u32 = 22;
pub const NLMPROC4_FREE_ALL: u32 = 23;

/// The RFC's name of an NLM version 4 procedure number ("?" if none).
pub fn nlmproc4_name(proc_: u32) -> &'static str {
    match proc_ {
        NLMPROC4_NULL => "NLMPROC4_NULL",
        NLMPROC4_TEST => "NLMPROC4_TEST",
        NLMPROC4_LOCK => "NLMPROC4_LOCK",
        NLMPROC4_CANCEL => "NLMPROC4_CANCEL",
        NLMPROC4_UNLOCK => "NLMPROC4_UNLOCK",
        NLMPROC4_GRANTED => "NLMPROC4_GRANTED",
        NLMPROC4_TEST_MSG => "NLMPROC4_TEST_MSG",
        NLMPROC4_LOCK_MSG => "NLMPROC4_LOCK_MSG",
        NLMPROC4_CANCEL_MSG => "NLMPROC4_CANCEL_MSG",
        NLMPROC4_UNLOCK_MSG => "NLMPROC4_UNLOCK_MSG",
        NLMPROC4_GRANTED_MSG => "NLMPROC4_GRANTED_MSG",
        NLMPROC4_TEST_RES => "NLMPROC4_TEST_RES",
        NLMPROC4_LOCK_RES => "NLMPROC4_LOCK_RES",
        NLMPROC4_CANCEL_RES => "NLMPROC4_CANCEL_RES",
        NLMPROC4_UNLOCK_RES => "NLMPROC4_UNLOCK_RES",
        NLMPROC4_GRANTED_RES => "NLMPROC4_GRANTED_RES",
        NLMPROC4_SHARE => "NLMPROC4_SHARE",
        NLMPROC4_UNSHARE => "NLMPROC4_UNSHARE",
        NLMPROC4_NM_LOCK => "NLMPROC4_NM_LOCK",
        NLMPROC4_FREE_ALL => "NLMPROC4_FREE_ALL",
        _ => "?",
    }
}

/// XNFS ch. 10: `LM_MAXSTRLEN`, the largest `caller_name`.
pub const LM_MAXSTRLEN: usize = 1024;
/// XNFS ch. 10: `MAXNAMELEN` (`LM_MAXSTRLEN + 1`), the largest name in
/// `nlm4_notify` (the FREE_ALL argument).
pub const LM_MAXNAMELEN: usize = LM_MAXSTRLEN + 1;
/// XNFS ch. 10: `MAXNETOBJ_SZ`, the largest `netobj`.
pub const MAXNETOBJ_SZ: usize = 1024;

// ---------------------------------------------------------------------------
// Data types
// ---------------------------------------------------------------------------

/// XNFS ch. 10: `netobj`, `opaque netobj<MAXNETOBJ_SZ>`: cookies, lock
/// owners (`oh`) and file handles. In NLM version 4 the file handle is the
/// NFSv3 `nfs_fh3` data, variable length (RFC 1813 §6.3.2).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct Netobj(#[xdr(max = MAXNETOBJ_SZ)] pub Bytes);

impl From<&[u8]> for Netobj {
    fn from(b: &[u8]) -> Self {
        Netobj(Bytes::copy_from_slice(b))
    }
}

/// RFC 1813 §6.1.4: `nlm4_stats`, the status of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum Nlm4Stats {
    /// The call completed successfully.
    Granted = 0,
    /// The lock conflicts with another; a retry later may succeed.
    Denied = 1,
    /// The server could not allocate the resources.
    DeniedNolocks = 2,
    /// A blocking request is queued; NLMPROC4_GRANTED will follow.
    Blocked = 3,
    /// The server is reclaiming locks after a reboot.
    DeniedGracePeriod = 4,
    /// Blocking would deadlock.
    Deadlck = 5,
    /// The file system is read-only.
    Rofs = 6,
    /// The file handle is stale.
    StaleFh = 7,
    /// The offset or length is too large.
    Fbig = 8,
    /// Failed for a reason not listed.
    Failed = 9,
}

/// RFC 1813 §6.1.4: `nlm4_holder`, who holds a conflicting lock (the
/// result of TEST).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct Nlm4Holder {
    pub exclusive: bool,
    pub svid: i32,
    pub oh: Netobj,
    pub l_offset: u64,
    pub l_len: u64,
}

/// RFC 1813 §6.1.4: `nlm4_lock`, a byte range of a file and its owner.
/// `caller_name` names the client host; `oh` and `svid` (the process id in
/// Unix clients) together identify the lock owner; `l_len` 0 means "to the
/// end of the file, however large it grows" (XNFS). Offsets and lengths
/// are 64-bit in version 4 (RFC 1813 §6.3.1).
/// `caller_name` is kept as bytes: a `string` need not be UTF-8.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct Nlm4Lock {
    #[xdr(max = LM_MAXSTRLEN)]
    pub caller_name: Bytes,
    pub fh: Netobj,
    pub oh: Netobj,
    pub svid: i32,
    pub l_offset: u64,
    pub l_len: u64,
}

/// `nlm4_lockargs` (XNFS `nlm_lockargs` with an [`Nlm4Lock`]): LOCK and
/// NM_LOCK. `state` is the client's NSM state number (its reboot count),
/// with which the server tells a client's old locks from new ones.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct Nlm4LockArgs {
    pub cookie: Netobj,
    pub block: bool,
    pub exclusive: bool,
    pub alock: Nlm4Lock,
    pub reclaim: bool,
    pub state: i32,
}

/// `nlm4_cancargs` (XNFS `nlm_cancargs`): CANCEL of a blocked LOCK.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct Nlm4CancArgs {
    pub cookie: Netobj,
    pub block: bool,
    pub exclusive: bool,
    pub alock: Nlm4Lock,
}

/// `nlm4_testargs` (XNFS `nlm_testargs`): TEST, and GRANTED (server to
/// client).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct Nlm4TestArgs {
    pub cookie: Netobj,
    pub exclusive: bool,
    pub alock: Nlm4Lock,
}

/// `nlm4_unlockargs` (XNFS `nlm_unlockargs`): UNLOCK.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct Nlm4UnlockArgs {
    pub cookie: Netobj,
    pub alock: Nlm4Lock,
}

/// `nlm4_res` (XNFS `nlm_res`): the result of LOCK, CANCEL, UNLOCK,
/// GRANTED and NM_LOCK. The RFC wraps the status in a one-field struct
/// `nlm4_stat`, which has the same encoding as the status itself.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct Nlm4Res {
    pub cookie: Netobj,
    pub stat: Nlm4Stats,
}

/// `nlm4_testrply` (XNFS `nlm_testrply`): `union switch (nlm4_stats stat)
/// { case NLM4_DENIED: nlm4_holder holder; default: void; }`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Nlm4TestRply {
    /// NLM4_DENIED and the holder of a conflicting lock.
    Denied(Nlm4Holder),
    /// Any other status (NLM4_GRANTED: no conflicting lock).
    Other(Nlm4Stats),
}

impl Nlm4TestRply {
    pub fn stat(&self) -> Nlm4Stats {
        match self {
            Nlm4TestRply::Denied(_) => Nlm4Stats::Denied,
            Nlm4TestRply::Other(s) => *s,
        }
    }
}

impl Pack for Nlm4TestRply {
    fn pack(&self, e: &mut Encoder) {
        match self {
            Nlm4TestRply::Denied(h) => {
                Nlm4Stats::Denied.pack(e);
                h.pack(e)
            }
            // DENIED without its holder would not decode; send FAILED.
            Nlm4TestRply::Other(Nlm4Stats::Denied) => Nlm4Stats::Failed.pack(e),
            Nlm4TestRply::Other(s) => s.pack(e),
        }
    }
}

impl Unpack for Nlm4TestRply {
    fn unpack(d: &mut Decoder) -> xdr::Result<Self> {
        match Nlm4Stats::unpack(d)? {
            Nlm4Stats::Denied => Ok(Nlm4TestRply::Denied(Nlm4Holder::unpack(d)?)),
            s => Ok(Nlm4TestRply::Other(s)),
        }
    }
}

/// `nlm4_testres` (XNFS `nlm_testres`): the result of TEST.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct Nlm4TestRes {
    pub cookie: Netobj,
    pub stat: Nlm4TestRply,
}

/// `nlm4_notify` (XNFS `nlm_notify`): FREE_ALL, which drops every lock of
/// the host `name` (sent by a client that does not run NSM, after it
/// restarts).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct Nlm4Notify {
    #[xdr(max = LM_MAXNAMELEN)]
    pub name: Bytes,
    pub state: i32,
}

/// XNFS ch. 10 `fsh_mode` (version 4 `fsh4_mode`): what a DOS share
/// reservation denies others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum Fsh4Mode {
    DenyNone = 0,
    DenyRead = 1,
    DenyWrite = 2,
    DenyReadWrite = 3,
}

/// XNFS ch. 10 `fsh_access` (`fsh4_access`): what the sharer will do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum Fsh4Access {
    None = 0,
    Read = 1,
    Write = 2,
    ReadWrite = 3,
}

/// `nlm4_share` (XNFS `nlm_share`): a share reservation on a file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct Nlm4Share {
    #[xdr(max = LM_MAXSTRLEN)]
    pub caller_name: Bytes,
    pub fh: Netobj,
    pub oh: Netobj,
    pub mode: Fsh4Mode,
    pub access: Fsh4Access,
}

/// `nlm4_shareargs` (XNFS `nlm_shareargs`): SHARE and UNSHARE.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct Nlm4ShareArgs {
    pub cookie: Netobj,
    pub share: Nlm4Share,
    pub reclaim: bool,
}

/// `nlm4_shareres` (XNFS `nlm_shareres`): the result of SHARE and UNSHARE.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct Nlm4ShareRes {
    pub cookie: Netobj,
    pub stat: Nlm4Stats,
    pub sequence: i32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock() -> Nlm4Lock {
        Nlm4Lock {
            caller_name: Bytes::from_static(b"host"),
            fh: Netobj(Bytes::from_static(&[9; 5])),
            oh: Netobj(Bytes::from_static(b"own")),
            svid: -2,
            l_offset: 0x1_0000_0000,
            l_len: 0,
        }
    }

    /// Decoding every proper prefix fails cleanly.
    fn prefixes_fail<T: Unpack + std::fmt::Debug>(b: &Bytes) {
        for n in 0..b.len() {
            assert!(xdr::from_bytes::<T>(b.slice(..n)).is_err(), "prefix {n}");
        }
    }

    #[test]
    fn lockargs_layout_and_roundtrip() {
        let a = Nlm4LockArgs {
            cookie: Netobj(Bytes::from_static(&[0, 0, 0, 7])),
            block: false,
            exclusive: true,
            alock: lock(),
            reclaim: false,
            state: 3,
        };
        let b = xdr::to_bytes(&a);
        #[rustfmt::skip]
        let want: &[u8] = &[
            0, 0, 0, 4, 0, 0, 0, 7, // cookie
            0, 0, 0, 0, // block
            0, 0, 0, 1, // exclusive
            0, 0, 0, 4, b'h', b'o', b's', b't', // caller_name
            0, 0, 0, 5, 9, 9, 9, 9, 9, 0, 0, 0, // fh
            0, 0, 0, 3, b'o', b'w', b'n', 0, // oh
            0xff, 0xff, 0xff, 0xfe, // svid -2
            0, 0, 0, 1, 0, 0, 0, 0, // l_offset (uint64)
            0, 0, 0, 0, 0, 0, 0, 0, // l_len
            0, 0, 0, 0, // reclaim
            0, 0, 0, 3, // state
        ];
        assert_eq!(&b[..], want);
        assert_eq!(xdr::from_bytes::<Nlm4LockArgs>(b.clone()).unwrap(), a);
        prefixes_fail::<Nlm4LockArgs>(&b);
    }

    #[test]
    fn other_args_roundtrip() {
        let u = Nlm4UnlockArgs {
            cookie: Netobj::default(),
            alock: lock(),
        };
        let b = xdr::to_bytes(&u);
        assert_eq!(xdr::from_bytes::<Nlm4UnlockArgs>(b.clone()).unwrap(), u);
        prefixes_fail::<Nlm4UnlockArgs>(&b);

        let t = Nlm4TestArgs {
            cookie: Netobj::from(&b"c"[..]),
            exclusive: false,
            alock: lock(),
        };
        let b = xdr::to_bytes(&t);
        assert_eq!(xdr::from_bytes::<Nlm4TestArgs>(b.clone()).unwrap(), t);
        prefixes_fail::<Nlm4TestArgs>(&b);

        let c = Nlm4CancArgs {
            cookie: Netobj::from(&b"c"[..]),
            block: true,
            exclusive: true,
            alock: lock(),
        };
        let b = xdr::to_bytes(&c);
        assert_eq!(xdr::from_bytes::<Nlm4CancArgs>(b.clone()).unwrap(), c);

        let n = Nlm4Notify {
            name: Bytes::from_static(b"client"),
            state: 5,
        };
        let b = xdr::to_bytes(&n);
        assert_eq!(xdr::from_bytes::<Nlm4Notify>(b).unwrap(), n);
    }

    #[test]
    fn res_roundtrip_and_every_status() {
        for (v, s) in [
            (0, Nlm4Stats::Granted),
            (1, Nlm4Stats::Denied),
            (2, Nlm4Stats::DeniedNolocks),
            (3, Nlm4Stats::Blocked),
            (4, Nlm4Stats::DeniedGracePeriod),
            (5, Nlm4Stats::Deadlck),
            (6, Nlm4Stats::Rofs),
            (7, Nlm4Stats::StaleFh),
            (8, Nlm4Stats::Fbig),
            (9, Nlm4Stats::Failed),
        ] {
            let r = Nlm4Res {
                cookie: Netobj::from(&b"ab"[..]),
                stat: s,
            };
            let b = xdr::to_bytes(&r);
            assert_eq!(&b[..], &[0, 0, 0, 2, b'a', b'b', 0, 0, 0, 0, 0, v]);
            assert_eq!(xdr::from_bytes::<Nlm4Res>(b.clone()).unwrap(), r);
            prefixes_fail::<Nlm4Res>(&b);
        }
        // An unknown status is an error, not a panic.
        let b = Bytes::from_static(&[0, 0, 0, 0, 0, 0, 0, 10]);
        assert!(xdr::from_bytes::<Nlm4Res>(b).is_err());
    }

    #[test]
    fn testres_denied_carries_the_holder() {
        let r = Nlm4TestRes {
            cookie: Netobj::from(&b"x"[..]),
            stat: Nlm4TestRply::Denied(Nlm4Holder {
                exclusive: true,
                svid: 42,
                oh: Netobj::from(&b"owner-a"[..]),
                l_offset: 10,
                l_len: u64::MAX,
            }),
        };
        let b = xdr::to_bytes(&r);
        assert_eq!(xdr::from_bytes::<Nlm4TestRes>(b.clone()).unwrap(), r);
        prefixes_fail::<Nlm4TestRes>(&b);
        assert_eq!(r.stat.stat(), Nlm4Stats::Denied);

        let g = Nlm4TestRes {
            cookie: Netobj::default(),
            stat: Nlm4TestRply::Other(Nlm4Stats::Granted),
        };
        let b = xdr::to_bytes(&g);
        assert_eq!(&b[..], &[0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(xdr::from_bytes::<Nlm4TestRes>(b).unwrap(), g);

        // DENIED without a holder never goes out as DENIED.
        let bad = Nlm4TestRply::Other(Nlm4Stats::Denied);
        let b = xdr::to_bytes(&bad);
        assert_eq!(
            xdr::from_bytes::<Nlm4TestRply>(b).unwrap(),
            Nlm4TestRply::Other(Nlm4Stats::Failed)
        );
    }

    #[test]
    fn oversized_items_are_rejected() {
        let mut e = Encoder::new();
        e.opaque(&[0u8; MAXNETOBJ_SZ + 1]);
        assert!(xdr::from_bytes::<Netobj>(e.to_bytes()).is_err());
        let mut e = Encoder::new();
        e.opaque(&[0u8; MAXNETOBJ_SZ]);
        assert!(xdr::from_bytes::<Netobj>(e.to_bytes()).is_ok());

        let mut l = lock();
        l.caller_name = Bytes::from(vec![b'a'; LM_MAXSTRLEN + 1]);
        assert!(xdr::from_bytes::<Nlm4Lock>(xdr::to_bytes(&l)).is_err());
        l.caller_name = Bytes::from(vec![b'a'; LM_MAXSTRLEN]);
        assert!(xdr::from_bytes::<Nlm4Lock>(xdr::to_bytes(&l)).is_ok());

        // A length word claiming 4 GiB fails without allocating it.
        let b = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4]);
        assert!(xdr::from_bytes::<Netobj>(b).is_err());
    }

    #[test]
    fn proc_names() {
        assert_eq!(nlmproc4_name(NLMPROC4_LOCK), "NLMPROC4_LOCK");
        assert_eq!(nlmproc4_name(NLMPROC4_FREE_ALL), "NLMPROC4_FREE_ALL");
        assert_eq!(nlmproc4_name(17), "?");
    }
}
