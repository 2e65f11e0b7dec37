//! Ferrite's peer program: how one Ferrite hands an export, with every
//! client's state on it, to another (transparent state migration, RFC 8881
//! §11.14). Not an IETF protocol: both ends are Ferrite, and the program
//! number is from the range RFC 5531 §7.3 leaves to local use
//! (0x20000000 to 0x3fffffff). It runs on the NFS port.
//!
//! Every call after HELLO carries a MAC over the peer session, a counter
//! and its body, under a key both servers derive from the filehandle key
//! they share (a migration pair must mint the same filehandles anyway):
//! a server that does not hold it can neither send state nor read a
//! reply as genuine. Every array and string is bounded on decode.

use bytes::Bytes;
use xdr::{Pack, Unpack};

/// The program number (local use range, RFC 5531 §7.3).
pub const FERRITE_PEER_PROGRAM: u32 = 0x2046_4552;
pub const FERRITE_PEER_V1: u32 = 1;

pub const PEER_NULL: u32 = 0;
pub const PEER_HELLO: u32 = 1;
pub const PEER_PREPARE: u32 = 2;
pub const PEER_TRANSFER: u32 = 3;
pub const PEER_COMMIT: u32 = 4;
pub const PEER_ABORT: u32 = 5;

/// Longest export path, owner name or handle carried.
pub const PEER_MAX_BYTES: usize = 1024;
/// The largest body of a call: what one RPC record carries (a server's
/// records are at most 4 MiB and a little).
pub const PEER_MAX_BODY: usize = 4 * 1024 * 1024 - 4096;
/// Most clients in one TRANSFER.
pub const PEER_MAX_CLIENTS: usize = 4096;
/// Most stateids of one client in one TRANSFER.
pub const PEER_MAX_STATES: usize = 65536;
/// Most lock ranges of one lock stateid.
pub const PEER_MAX_RANGES: usize = 4096;

/// HELLO's arguments: the caller's nonce.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct HelloArgs {
    pub nonce: [u8; 16],
}

/// HELLO's result: the peer session (the callee's nonce) and a MAC
/// proving the callee holds the key.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct HelloRes {
    pub session: [u8; 16],
    pub mac: [u8; 32],
}

/// What every call after HELLO sends: its peer session, its counter
/// (strictly increasing within the session), its body (the procedure's
/// arguments, XDR) and the MAC over all of them and the procedure.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Sealed {
    pub session: [u8; 16],
    pub counter: u64,
    #[xdr(max = PEER_MAX_BODY)]
    pub body: Bytes,
    pub mac: [u8; 32],
}

/// The answer to a sealed call: a status, a message and a body (both
/// empty unless they say something), MACed under the same session and
/// counter.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct SealedRes {
    pub status: PeerStatus,
    #[xdr(max = PEER_MAX_BYTES)]
    pub message: Bytes,
    #[xdr(max = 1024 * 1024)]
    pub body: Bytes,
    pub mac: [u8; 32],
}

/// What a peer answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
#[repr(u32)]
pub enum PeerStatus {
    Ok = 0,
    /// The call was not authentic (bad MAC, unknown session, replayed
    /// counter).
    Auth = 1,
    /// The destination will not take the export (the message says why).
    Refused = 2,
    /// The arguments were malformed.
    Garbage = 3,
    /// No migration of that id is staged here.
    Unknown = 4,
}

/// PREPARE: the export the source wants to hand over, and enough to check
/// that the destination serves the same files under the same
/// filehandles.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct PrepareArgs {
    /// Names this migration in the calls that follow.
    pub migration: [u8; 16],
    #[xdr(max = PEER_MAX_BYTES)]
    pub export_path: Bytes,
    pub export_id: u32,
    /// The export root's identity (`vfs::Vfs::root_identity`).
    #[xdr(max = PEER_MAX_BYTES)]
    pub root_identity: Bytes,
    /// The source's lease, in seconds: the destination's must be as long
    /// (RFC 8881 §11.14.1 lets a client assume the lease does not
    /// shrink).
    pub lease_secs: u32,
    /// The source's NFS address as "HOST:PORT", for the destination's
    /// records.
    #[xdr(max = PEER_MAX_BYTES)]
    pub source: Bytes,
}

/// A lock range held: start, end (exclusive, u64::MAX for "to the end")
/// and whether it is a write lock.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct PeerRange {
    pub start: u64,
    pub end: u64,
    pub write: bool,
}

pub const PEER_OPEN: u32 = 1;
pub const PEER_LOCK: u32 = 2;

/// An open stateid's share reservation.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct PeerOpen {
    #[xdr(max = PEER_MAX_BYTES)]
    pub owner: Bytes,
    pub access: u32,
    pub deny: u32,
}

/// A lock stateid: its owner, the open it came through, what it holds.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct PeerLock {
    #[xdr(max = PEER_MAX_BYTES)]
    pub owner: Bytes,
    pub open: [u8; 12],
    #[xdr(max = PEER_MAX_RANGES)]
    pub ranges: Vec<PeerRange>,
}

#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub enum PeerStateKind {
    #[xdr(value = PEER_OPEN)]
    Open(PeerOpen),
    #[xdr(value = PEER_LOCK)]
    Lock(PeerLock),
}

/// One stateid: its `other` and seqid as the client holds them, the
/// file (the backend's handle in the export), and what it stands for.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct PeerState {
    pub other: [u8; 12],
    pub seqid: u32,
    #[xdr(max = PEER_MAX_BYTES)]
    pub handle: Bytes,
    pub kind: PeerStateKind,
}

/// A client record (RFC 8881 §11.14.2: the destination answers the
/// client's EXCHANGE_ID with it, confirmed).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct PeerClient {
    /// Its client id at the source: the stateids carry it.
    pub clientid: u64,
    #[xdr(max = PEER_MAX_BYTES)]
    pub owner: Bytes,
    pub verifier: [u8; 8],
    /// 0: AUTH_NONE; 1: AUTH_SYS with `uid`, `gid`.
    pub principal: u32,
    pub uid: u32,
    pub gid: u32,
    pub flags: u32,
    pub minorversion: u32,
    /// The client ids its stateids may name besides `clientid`: those it
    /// had at servers the export was at before.
    #[xdr(max = 64)]
    pub aliases: Vec<u64>,
    #[xdr(max = PEER_MAX_STATES)]
    pub states: Vec<PeerState>,
}

/// TRANSFER: the export's whole state, at once.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct TransferArgs {
    pub migration: [u8; 16],
    #[xdr(max = PEER_MAX_CLIENTS)]
    pub clients: Vec<PeerClient>,
}

/// COMMIT and ABORT: the migration they end.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct MigrationId {
    pub migration: [u8; 16],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let t = TransferArgs {
            migration: [7; 16],
            clients: vec![PeerClient {
                clientid: 0x1234_5678_0000_0001,
                owner: Bytes::from_static(b"linux"),
                verifier: [1; 8],
                principal: 1,
                uid: 0,
                gid: 0,
                flags: 3,
                minorversion: 1,
                aliases: vec![5],
                states: vec![
                    PeerState {
                        other: [2; 12],
                        seqid: 1,
                        handle: Bytes::from_static(b"h"),
                        kind: PeerStateKind::Open(PeerOpen {
                            owner: Bytes::from_static(b"o"),
                            access: 3,
                            deny: 0,
                        }),
                    },
                    PeerState {
                        other: [3; 12],
                        seqid: 2,
                        handle: Bytes::from_static(b"h"),
                        kind: PeerStateKind::Lock(PeerLock {
                            owner: Bytes::from_static(b"l"),
                            open: [2; 12],
                            ranges: vec![PeerRange {
                                start: 0,
                                end: u64::MAX,
                                write: true,
                            }],
                        }),
                    },
                ],
            }],
        };
        let mut e = xdr::Encoder::new();
        t.pack(&mut e);
        let mut d = xdr::Decoder::new(e.to_bytes());
        assert_eq!(TransferArgs::unpack(&mut d).unwrap(), t);
    }
}
