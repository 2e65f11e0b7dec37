//! The *null server*: an NFSv4.1 server that does no file-system work, so
//! that the throughput `ferrite bench` reaches against it is the ceiling of
//! the benchmark's own client, the RPC transport and loopback TCP — the
//! yardstick for "is the client the bottleneck?" (`ferrite bench
//! null-server`, `crates/ferrite/benches/client_overhead.rs`).
//!
//! It is a measuring instrument, not a server. **It stores nothing**: no
//! client records, sessions, open or lock state, files or data. Every
//! COMPOUND (RFC 8881 §16.2) is answered from its own arguments, and what
//! a reply needs later is carried by the identifiers the server hands out:
//!
//! * a session ID is `clientid (8) | granted slots (4) | "FNUL"`, so
//!   SEQUENCE can answer a slot table's bounds without a session table;
//! * a filehandle is `"FNUL" | nfs_ftype4 (4) | fileid (8)`: the object's
//!   type and number travel with it.
//!
//! The RPC side is the workspace's `rpc` crate (`rpc::serve`,
//! [`rpc::Programs`], which also answers the NULL procedure); calls whose
//! COMPOUND arguments do not decode get GARBAGE_ARGS (RFC 5531 §9), as do
//! call headers the `rpc` crate cannot parse.
//!
//! What each operation returns (anything not listed: NFS4ERR_NOTSUPP; an
//! undefined operation number: NFS4ERR_OP_ILLEGAL, RFC 8881 §18.52). As
//! usual the COMPOUND stops at the first operation that fails (§16.2.3):
//!
//! | operation | reply |
//! | --- | --- |
//! | EXCHANGE_ID (§18.35) | a new client ID (boot time ‖ counter), sequence ID 1, `EXCHGID4_FLAG_USE_NON_PNFS`, no state protection, server owner and scope `ferrite-null` |
//! | CREATE_SESSION (§18.36) | grants exactly the fore- and back-channel attributes asked for (at least one slot; header padding and RDMA none); `csa_sequence` echoed; CONN_BACK_CHAN echoed if asked (the server never calls back) |
//! | SEQUENCE (§18.46) | echoes session, sequence ID and slot; highest and target highest slot = granted slots − 1 (taken from the session ID), no status flags. No replay cache: every request is new. NFS4ERR_BADSESSION for a session ID this server did not make, NFS4ERR_BADSLOT beyond the grant |
//! | RECLAIM_COMPLETE, DESTROY_SESSION, DESTROY_CLIENTID | NFS4_OK |
//! | BIND_CONN_TO_SESSION (§18.34) | a session ID this server made: bound in the direction asked, both when either may be; else NFS4ERR_BADSESSION |
//! | PUTROOTFH | the root directory (fileid 1) |
//! | PUTFH | any handle this server made; otherwise NFS4ERR_BADHANDLE |
//! | LOOKUP (§18.13) | always found: a *directory* whose fileid hashes the parent's and the name (so the benchmark's prepared-set marker is always there) |
//! | GETFH, GETATTR (§18.7) | the handle; the attributes asked for among type, size (regular files [`FILE_SIZE`] = 1 TiB, directories 4096), fileid, mode, change (1), fsid, lease time and the other constant ones in [`attrs`]. Write-only attributes: NFS4ERR_INVAL |
//! | OPEN (§18.16) | CLAIM_NULL: the named child as a *regular file*, which becomes the current filehandle (CLAIM_FH: the current one); open stateid `seqid 1, other = fileid ‖ "OPEN"`, change info 1 → 1 (→ 2 when creating), POSIX locks, no delegation (OPEN_DELEGATE_NONE). Other claims: NFS4ERR_NOTSUPP |
//! | CLOSE (§18.2) | the invalid special stateid, as §18.2.4 suggests |
//! | READ (§18.22) | `count` zero bytes (at most [`MAX_IO`], stopping at [`FILE_SIZE`]), sliced without copying from one static zeroed buffer; eof only at the end of the 1 TiB file |
//! | WRITE (§18.32) | count = bytes sent, committed = the stability asked for, the boot verifier; the data is dropped |
//! | COMMIT (§18.3) | the boot verifier |
//! | LOCK, LOCKU (§18.10, §18.12) | granted: a new lock stateid `seqid 1, other = fileid ‖ "LOCK"`, or the given one with seqid + 1 |
//! | READDIR (§18.23) | an empty directory: no entries, eof |
//! | CREATE (§18.4) | the child of the type asked for (NFS4ERR_BADTYPE for regular files and unknown types), change info 1 → 2, no attributes set |
//! | REMOVE (§18.25) | change info 1 → 2 |
//! | SETATTR (§18.30) | every attribute given reported as set; nothing is kept |
//!
//! Operations that need a current filehandle answer NFS4ERR_NOFILEHANDLE
//! without one; directory operations on a file NFS4ERR_NOTDIR, READ/WRITE
//! on a directory NFS4ERR_ISDIR, an empty name NFS4ERR_INVAL. Position
//! rules (§2.10.6, §18.46.3): a SEQUENCE that is not first is
//! NFS4ERR_SEQUENCE_POS; a COMPOUND that does not start with SEQUENCE may
//! only be one EXCHANGE_ID,
//! CREATE_SESSION, DESTROY_SESSION, DESTROY_CLIENTID or
//! BIND_CONN_TO_SESSION (NFS4ERR_NOT_ONLY_OP / NFS4ERR_OP_NOT_IN_SESSION).

use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use proto::nfs4::*;
use rpc::{Call, ConnConfig, Reply, ReplyError, ReplyFuture, Service};
use tokio::net::TcpListener;
use tokio::sync::watch;
use xdr::{Decoder, Encoder, Pack, Unpack};

use crate::Result;

/// The size every regular file has: 1 TiB.
pub const FILE_SIZE: u64 = 1 << 40;
/// The largest READ answered in full (larger ones are short reads).
pub const MAX_IO: usize = 1 << 20;
/// The lease time reported in GETATTR (nothing ever expires).
pub const LEASE_SECONDS: u32 = 90;

/// What every READ reply's data is sliced from.
static ZEROS: [u8; MAX_IO] = [0; MAX_IO];

/// Marks session IDs and filehandles this server made.
const MAGIC: [u8; 4] = *b"FNUL";
/// Length of a filehandle: magic, type, fileid.
const FH_LEN: usize = 16;
const ROOT_FILEID: u64 = 1;
const FSID_MAJOR: u64 = 0x4e55_4c4c;

/// The NFSv4.1 program of the null server (NFS version 4 only).
pub struct NullServer {
    /// Seconds since the epoch at start: high half of client IDs, and the
    /// write verifier.
    boot: u32,
    next_client: AtomicU32,
}

impl Default for NullServer {
    fn default() -> Self {
        Self::new()
    }
}

impl NullServer {
    pub fn new() -> NullServer {
        let boot = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as u32)
            .unwrap_or(1);
        NullServer {
            boot,
            next_client: AtomicU32::new(1),
        }
    }

    /// The RPC programs to serve: NFS version 4 (NULL and COMPOUND).
    pub fn programs(self: Arc<Self>) -> rpc::Programs {
        rpc::Programs::new().add(NFS_PROGRAM, NFS_V4, NFS_V4, self)
    }

    fn verifier(&self) -> Verifier4 {
        let mut v = [0; 8];
        v[..4].copy_from_slice(&self.boot.to_be_bytes());
        v[4..].copy_from_slice(&MAGIC);
        v
    }

    /// One COMPOUND (RFC 8881 §16.2): decode the header, then each
    /// operation in turn, answering until one fails.
    pub fn compound(&self, mut args: Decoder) -> Reply {
        let Ok(head) = Compound4ArgsHeader::unpack(&mut args) else {
            return Reply::Error(ReplyError::GarbageArgs);
        };
        let Ok(nops) = args.count(u32::MAX as usize, 4) else {
            return Reply::Error(ReplyError::GarbageArgs);
        };
        let mut status = NfsStat4::Nfs4Ok;
        let mut body = Encoder::with_capacity(128);
        let mut nres = 0u32;
        // §16.2.3: an unsupported minor version gets no results.
        if !(1..=2).contains(&head.minorversion) {
            status = NfsStat4::Nfs4errMinorVersMismatch;
        } else {
            let mut cfh: Option<Bytes> = None;
            for i in 0..nops {
                let Ok(op) = NfsArgOp4::unpack(&mut args) else {
                    return Reply::Error(ReplyError::GarbageArgs);
                };
                let opnum = match op {
                    NfsArgOp4::Illegal | NfsArgOp4::Unknown(_) => OpNum4::Illegal as u32,
                    _ => op.opnum(),
                };
                status = match self.op(&mut cfh, i, nops, op) {
                    Ok(r) => {
                        r.pack(&mut body);
                        r.status()
                    }
                    Err(s) => {
                        pack_error(&mut body, opnum, s);
                        s
                    }
                };
                nres += 1;
                if status != NfsStat4::Nfs4Ok {
                    break;
                }
            }
        }
        let mut e = Encoder::with_capacity(16 + head.tag.len());
        status.pack(&mut e);
        head.tag.pack(&mut e);
        e.u32(nres);
        let mut out = e.finish();
        out.extend(body.finish());
        Reply::Success(out)
    }

    /// Operation `i` of `nops`: its result, or the error it fails with.
    fn op(
        &self,
        cfh: &mut Option<Bytes>,
        i: usize,
        nops: usize,
        op: NfsArgOp4,
    ) -> Result<NfsResOp4, NfsStat4> {
        use NfsArgOp4 as A;
        use NfsResOp4 as R;
        use NfsStat4::*;
        if matches!(op, A::Illegal | A::Unknown(_)) {
            return Err(Nfs4errOpIllegal);
        }
        // RFC 8881 §2.10.6.2, §18.46.3: SEQUENCE first, or one session-less
        // operation alone.
        let sessionless = matches!(
            op,
            A::ExchangeId(_)
                | A::CreateSession(_)
                | A::DestroySession(_)
                | A::DestroyClientId(_)
                | A::BindConnToSession(_)
        );
        match (i, &op) {
            (0, A::Sequence(_)) => {}
            (0, _) if !sessionless => return Err(Nfs4errOpNotInSession),
            (0, _) if nops != 1 => return Err(Nfs4errNotOnlyOp),
            (1.., A::Sequence(_)) => return Err(Nfs4errSequencePos),
            _ => {}
        }
        Ok(match op {
            A::Sequence(a) => R::Sequence(Res4::Ok(sequence(&a)?)),
            A::ExchangeId(_) => {
                let n = self.next_client.fetch_add(1, Ordering::Relaxed);
                R::ExchangeId(Res4::Ok(ExchangeId4ResOk {
                    clientid: (u64::from(self.boot) << 32) | u64::from(n),
                    sequenceid: 1,
                    flags: EXCHGID4_FLAG_USE_NON_PNFS,
                    state_protect: StateProtect4R::None,
                    server_owner: ServerOwner4 {
                        minor_id: 0,
                        major_id: Bytes::from_static(b"ferrite-null"),
                    },
                    server_scope: Bytes::from_static(b"ferrite-null"),
                    server_impl_id: None,
                }))
            }
            A::CreateSession(a) => R::CreateSession(Res4::Ok(create_session(&a))),
            A::DestroySession(_) => R::DestroySession(Res4::Ok(())),
            A::DestroyClientId(_) => R::DestroyClientId(Res4::Ok(())),
            A::ReclaimComplete(_) => R::ReclaimComplete(Res4::Ok(())),
            A::BindConnToSession(a) => R::BindConnToSession(Res4::Ok(bind_conn(&a)?)),
            A::PutRootFh => {
                *cfh = Some(fh(NfsFtype4::Nf4Dir as u32, ROOT_FILEID));
                R::PutRootFh(Res4::Ok(()))
            }
            A::PutFh(a) => {
                parse_fh(&a.object.0).ok_or(Nfs4errBadhandle)?;
                *cfh = Some(a.object.0);
                R::PutFh(Res4::Ok(()))
            }
            A::GetFh => R::GetFh(Res4::Ok(GetFh4ResOk {
                object: NfsFh4(cfh.clone().ok_or(Nfs4errNofilehandle)?),
            })),
            A::Lookup(a) => {
                let child = child(dir(cfh)?, name(&a.objname)?, NfsFtype4::Nf4Dir);
                *cfh = Some(child);
                R::Lookup(Res4::Ok(()))
            }
            A::GetAttr(a) => {
                let f = cfh.as_ref().ok_or(Nfs4errNofilehandle)?;
                if WRITE_ONLY_ATTRS.iter().any(|&w| a.attr_request.contains(w)) {
                    return Err(Nfs4errInval);
                }
                R::GetAttr(Res4::Ok(GetAttr4ResOk {
                    obj_attributes: attrs(f).encode_only(&a.attr_request),
                }))
            }
            A::Open(a) => {
                let file = match &a.claim {
                    OpenClaim4::Null(n) => child(dir(cfh)?, name(n)?, NfsFtype4::Nf4Reg),
                    OpenClaim4::Fh => file(cfh)?.clone(),
                    _ => return Err(Nfs4errNotsupp),
                };
                let stateid = stateid(&file, *b"OPEN");
                *cfh = Some(file);
                R::Open(Res4::Ok(Open4ResOk {
                    stateid,
                    cinfo: cinfo(matches!(a.openhow, OpenFlag4::Create(_))),
                    rflags: OPEN4_RESULT_LOCKTYPE_POSIX,
                    attrset: Bitmap4::new(),
                    delegation: OpenDelegation4::None,
                }))
            }
            A::Close(_) => {
                cfh.as_ref().ok_or(Nfs4errNofilehandle)?;
                R::Close(Res4::Ok(StateId4::INVALID))
            }
            A::Read(a) => {
                file(cfh)?;
                let (len, eof) = read_extent(a.offset, a.count);
                R::Read(Res4::Ok(Read4ResOk {
                    eof,
                    data: Bytes::from_static(&ZEROS[..len]).into(),
                }))
            }
            A::Write(a) => {
                file(cfh)?;
                R::Write(Res4::Ok(Write4ResOk {
                    count: a.data.len() as u32,
                    committed: a.stable,
                    writeverf: self.verifier(),
                }))
            }
            A::Commit(_) => {
                file(cfh)?;
                R::Commit(Res4::Ok(Commit4ResOk {
                    writeverf: self.verifier(),
                }))
            }
            A::Lock(a) => {
                let f = file(cfh)?;
                let lock_stateid = match &a.locker {
                    Locker4::OpenOwner(_) => stateid(f, *b"LOCK"),
                    Locker4::LockOwner(o) => next(o.lock_stateid),
                };
                R::Lock(Lock4Res::Ok(Lock4ResOk { lock_stateid }))
            }
            A::LockU(a) => {
                file(cfh)?;
                R::LockU(Res4::Ok(next(a.lock_stateid)))
            }
            A::ReadDir(_) => {
                dir(cfh)?;
                R::ReadDir(Res4::Ok(ReadDir4ResOk {
                    cookieverf: [0; 8],
                    reply: DirList4 {
                        entries: Vec::new(),
                        eof: true,
                    },
                }))
            }
            A::Create(a) => {
                let ftype = match a.objtype {
                    CreateType4::Dir => NfsFtype4::Nf4Dir,
                    CreateType4::Link(_) => NfsFtype4::Nf4Lnk,
                    CreateType4::Blk(_) => NfsFtype4::Nf4Blk,
                    CreateType4::Chr(_) => NfsFtype4::Nf4Chr,
                    CreateType4::Sock => NfsFtype4::Nf4Sock,
                    CreateType4::Fifo => NfsFtype4::Nf4Fifo,
                    CreateType4::Other(_) => return Err(Nfs4errBadtype),
                };
                let child = child(dir(cfh)?, name(&a.objname)?, ftype);
                *cfh = Some(child);
                R::Create(Res4::Ok(Create4ResOk {
                    cinfo: cinfo(true),
                    attrset: Bitmap4::new(),
                }))
            }
            // Every attribute given is taken as set and none is kept.
            A::SetAttr(a) => {
                cfh.as_ref().ok_or(Nfs4errNofilehandle)?;
                R::SetAttr(SetAttr4Res {
                    status: Nfs4Ok,
                    attrsset: a.obj_attributes.attrmask,
                })
            }
            A::Remove(a) => {
                dir(cfh)?;
                name(&a.target)?;
                R::Remove(Res4::Ok(Remove4ResOk { cinfo: cinfo(true) }))
            }
            _ => return Err(Nfs4errNotsupp),
        })
    }
}

impl Service for NullServer {
    fn call(&self, call: Call) -> ReplyFuture {
        // NULL (procedure 0) is answered by `rpc::Programs`.
        let reply = match call.proc_ {
            1 => self.compound(call.args),
            _ => Reply::Error(ReplyError::ProcUnavail),
        };
        Box::pin(std::future::ready(reply))
    }
}

/// Encodes a failed operation's `nfs_resop4`: the operation number and
/// the status, plus an empty `attrsset` for SETATTR (RFC 8881 §18.30.2).
fn pack_error(e: &mut Encoder, opnum: u32, status: NfsStat4) {
    e.u32(opnum);
    status.pack(e);
    if opnum == OpNum4::SetAttr as u32 {
        Bitmap4::new().pack(e);
    }
}

/// SEQUENCE (RFC 8881 §18.46): the bounds of the slot table come from the
/// session ID ([`create_session`]).
fn sequence(a: &Sequence4Args) -> Result<Sequence4ResOk, NfsStat4> {
    if a.sessionid[12..] != MAGIC {
        return Err(NfsStat4::Nfs4errBadsession);
    }
    let slots = u32::from_be_bytes([
        a.sessionid[8],
        a.sessionid[9],
        a.sessionid[10],
        a.sessionid[11],
    ])
    .max(1);
    if a.slotid >= slots {
        return Err(NfsStat4::Nfs4errBadslot);
    }
    Ok(Sequence4ResOk {
        sessionid: a.sessionid,
        sequenceid: a.sequenceid,
        slotid: a.slotid,
        highest_slotid: slots - 1,
        target_highest_slotid: slots - 1,
        status_flags: 0,
    })
}

/// BIND_CONN_TO_SESSION (RFC 8881 §18.34): a session this server made;
/// the connection is bound in the direction asked, both where either may
/// be (§18.34.3), though the server never calls back.
fn bind_conn(a: &BindConnToSession4Args) -> Result<BindConnToSession4ResOk, NfsStat4> {
    use ChannelDirFromClient4 as C;
    use ChannelDirFromServer4 as S;
    if a.sessid[12..] != MAGIC {
        return Err(NfsStat4::Nfs4errBadsession);
    }
    Ok(BindConnToSession4ResOk {
        sessid: a.sessid,
        dir: match a.dir {
            C::Cdfc4Fore => S::Cdfs4Fore,
            C::Cdfc4Back => S::Cdfs4Back,
            C::Cdfc4ForeOrBoth | C::Cdfc4BackOrBoth => S::Cdfs4Both,
        },
        use_conn_in_rdma_mode: false,
    })
}

/// CREATE_SESSION (RFC 8881 §18.36): grants what was asked; the session
/// ID records the client ID and the number of fore-channel slots.
fn create_session(a: &CreateSession4Args) -> CreateSession4ResOk {
    let mut fore = a.fore_chan_attrs;
    fore.maxrequests = fore.maxrequests.max(1);
    fore.headerpadsize = 0;
    fore.rdma_ird = None;
    let mut back = a.back_chan_attrs;
    back.headerpadsize = 0;
    back.rdma_ird = None;
    let mut sessionid = [0u8; 16];
    sessionid[..8].copy_from_slice(&a.clientid.to_be_bytes());
    sessionid[8..12].copy_from_slice(&fore.maxrequests.to_be_bytes());
    sessionid[12..].copy_from_slice(&MAGIC);
    CreateSession4ResOk {
        sessionid,
        sequence: a.sequence,
        flags: a.flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
        fore_chan_attrs: fore,
        back_chan_attrs: back,
    }
}

/// A filehandle: magic, `nfs_ftype4`, fileid.
fn fh(ftype: u32, fileid: u64) -> Bytes {
    let mut b = [0u8; FH_LEN];
    b[..4].copy_from_slice(&MAGIC);
    b[4..8].copy_from_slice(&ftype.to_be_bytes());
    b[8..].copy_from_slice(&fileid.to_be_bytes());
    Bytes::copy_from_slice(&b)
}

/// (type, fileid) of a filehandle this server made.
fn parse_fh(b: &[u8]) -> Option<(u32, u64)> {
    if b.len() != FH_LEN || b[..4] != MAGIC {
        return None;
    }
    let ty = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
    let mut id = [0u8; 8];
    id.copy_from_slice(&b[8..]);
    Some((ty, u64::from_be_bytes(id)))
}

fn is_dir(f: &[u8]) -> bool {
    parse_fh(f).is_some_and(|(t, _)| t == NfsFtype4::Nf4Dir as u32)
}

/// The current filehandle, which must be a directory.
fn dir(cfh: &Option<Bytes>) -> Result<&Bytes, NfsStat4> {
    match cfh {
        None => Err(NfsStat4::Nfs4errNofilehandle),
        Some(f) if is_dir(f) => Ok(f),
        Some(_) => Err(NfsStat4::Nfs4errNotdir),
    }
}

/// The current filehandle, which must not be a directory.
fn file(cfh: &Option<Bytes>) -> Result<&Bytes, NfsStat4> {
    match cfh {
        None => Err(NfsStat4::Nfs4errNofilehandle),
        Some(f) if is_dir(f) => Err(NfsStat4::Nfs4errIsdir),
        Some(f) => Ok(f),
    }
}

/// The handle of `name` in `parent`: FNV-1a of the parent's fileid and
/// the name (never the root's number).
fn child(parent: &[u8], name: &[u8], ftype: NfsFtype4) -> Bytes {
    let (_, pid) = parse_fh(parent).unwrap_or((0, ROOT_FILEID));
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in pid.to_be_bytes().iter().chain(name) {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    fh(ftype as u32, h.max(ROOT_FILEID + 1))
}

/// A component name: empty is NFS4ERR_INVAL (RFC 8881 §18.13.3).
fn name(n: &Bytes) -> Result<&[u8], NfsStat4> {
    if n.is_empty() {
        return Err(NfsStat4::Nfs4errInval);
    }
    Ok(n)
}

/// `seqid 1, other = fileid ‖ kind`.
fn stateid(f: &[u8], kind: [u8; 4]) -> StateId4 {
    let mut other = [0u8; NFS4_OTHER_SIZE];
    other[..8].copy_from_slice(&parse_fh(f).map(|(_, id)| id).unwrap_or(0).to_be_bytes());
    other[8..].copy_from_slice(&kind);
    StateId4 { seqid: 1, other }
}

/// The same stateid, one seqid on (RFC 8881 §8.2.2), skipping 0.
fn next(s: StateId4) -> StateId4 {
    StateId4 {
        seqid: s.seqid.wrapping_add(1).max(1),
        other: s.other,
    }
}

fn cinfo(changed: bool) -> ChangeInfo4 {
    ChangeInfo4 {
        atomic: true,
        before: 1,
        after: if changed { 2 } else { 1 },
    }
}

/// Bytes a READ at `offset` for `count` returns, and whether it reaches
/// the end of the [`FILE_SIZE`] file (RFC 8881 §18.22.3).
fn read_extent(offset: u64, count: u32) -> (usize, bool) {
    let left = FILE_SIZE.saturating_sub(offset);
    let len = (count as usize).min(MAX_IO).min(left as usize);
    (len, len as u64 >= left)
}

/// The attributes of an object (GETATTR answers those requested).
pub fn attrs(f: &Bytes) -> Attrs {
    let (ty, fileid) = parse_fh(f).unwrap_or((NfsFtype4::Nf4Dir as u32, ROOT_FILEID));
    let (ftype, size, mode, links) = match ty {
        1 => (NfsFtype4::Nf4Reg, FILE_SIZE, 0o644, 1),
        2 => (NfsFtype4::Nf4Dir, 4096, 0o755, 2),
        3 => (NfsFtype4::Nf4Blk, 0, 0o644, 1),
        4 => (NfsFtype4::Nf4Chr, 0, 0o644, 1),
        5 => (NfsFtype4::Nf4Lnk, 0, 0o777, 1),
        6 => (NfsFtype4::Nf4Sock, 0, 0o644, 1),
        _ => (NfsFtype4::Nf4Fifo, 0, 0o644, 1),
    };
    let t = NfsTime4 {
        seconds: 0,
        nseconds: 0,
    };
    let mut a = Attrs {
        type_: Some(ftype),
        fh_expire_type: Some(FH4_PERSISTENT),
        change: Some(1),
        size: Some(size),
        link_support: Some(true),
        symlink_support: Some(true),
        named_attr: Some(false),
        fsid: Some(FsId4 {
            major: FSID_MAJOR,
            minor: 0,
        }),
        unique_handles: Some(true),
        lease_time: Some(LEASE_SECONDS),
        filehandle: Some(NfsFh4(f.clone())),
        fileid: Some(fileid),
        maxfilesize: Some(FILE_SIZE),
        maxread: Some(MAX_IO as u64),
        maxwrite: Some(MAX_IO as u64),
        mode: Some(mode),
        numlinks: Some(links),
        owner: Some(Bytes::from_static(b"0")),
        owner_group: Some(Bytes::from_static(b"0")),
        space_used: Some(0),
        time_access: Some(t),
        time_metadata: Some(t),
        time_modify: Some(t),
        mounted_on_fileid: Some(fileid),
        ..Default::default()
    };
    let mut supported = a.mask();
    supported.insert(FATTR4_SUPPORTED_ATTRS);
    a.supported_attrs = Some(supported);
    a
}

/// Serves the null server on `listener` until `shutdown` turns true.
pub async fn serve_until(listener: TcpListener, shutdown: watch::Receiver<bool>) {
    let programs = Arc::new(NullServer::new()).programs();
    rpc::serve(
        listener,
        Arc::new(programs),
        ConnConfig::default(),
        shutdown,
    )
    .await
}

/// Serves the null server on `listener` for ever.
pub async fn serve(listener: TcpListener) -> Result<()> {
    let (_keep, rx) = watch::channel(false);
    serve_until(listener, rx).await;
    Ok(())
}

/// `ferrite bench null-server`: binds `listen`, prints the address and
/// the target URL, and serves until SIGINT or SIGTERM.
pub async fn run(listen: SocketAddr) -> Result<()> {
    let listener = TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;
    let mut out = std::io::stdout();
    let _ = writeln!(
        out,
        "ferrite null server (NFSv4.1, canned replies, stores nothing) listening on {addr}\n\
         target: nfs4://{addr}/"
    );
    let _ = out.flush();
    let (tx, rx) = watch::channel(false);
    let task = tokio::spawn(serve_until(listener, rx));
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    let _ = tx.send(true);
    let _ = task.await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_and_extents() {
        let root = fh(NfsFtype4::Nf4Dir as u32, ROOT_FILEID);
        assert_eq!(parse_fh(&root), Some((2, 1)));
        let a = child(&root, b"a", NfsFtype4::Nf4Reg);
        assert_eq!(a, child(&root, b"a", NfsFtype4::Nf4Reg));
        assert_ne!(a, child(&root, b"b", NfsFtype4::Nf4Reg));
        assert!(!is_dir(&a) && is_dir(&root));
        assert!(parse_fh(b"not ours").is_none());
        assert_eq!(read_extent(0, 4096), (4096, false));
        assert_eq!(read_extent(0, 4 << 20), (MAX_IO, false));
        assert_eq!(read_extent(FILE_SIZE - 10, 4096), (10, true));
        assert_eq!(read_extent(FILE_SIZE + 1, 4096), (0, true));
        let at = Attrs::decode(&attrs(&a).encode()).unwrap();
        assert_eq!(at.size, Some(FILE_SIZE));
        assert_eq!(at.type_, Some(NfsFtype4::Nf4Reg));
    }
}
