//! What an NFSv4.0 COMPOUND (RFC 7530) needs around its operations, which
//! have no SEQUENCE: the client each operation names (by client id or by
//! stateid), whose lease that renews (§9.5), and the sequence ids of open
//! and lock owners, which order their requests and answer a
//! retransmission with its first reply (§9.1.7). The rules are the
//! state's (`state::v40`); this carries them out for the compound loop.

use std::sync::Arc;

use bytes::Bytes;
use proto::nfs4::*;
use state::v40::OwnerName;
use state::SeqStart;

use super::context::Compound;
use super::reply::OpResult;
use crate::instance::Server;

/// The client an operation names, when it names one by a stateid this
/// server does not know (or a special stateid): no client has it, so the
/// operation's own stateid check answers (NFS4ERR_BAD_STATEID,
/// NFS4ERR_STALE_STATEID) rather than NFS4ERR_STALE_CLIENTID.
pub const NO_CLIENT: ClientId4 = 0;

/// The last operation number of NFSv4.0 (RFC 7530 §16): higher ones are
/// NFSv4.1's and illegal here (NFS4ERR_OP_ILLEGAL, §15.2).
pub const LAST_OP: u32 = OpNum4::ReleaseLockOwner as u32;

/// Sets the client `op` names as the compound's (`Compound::client40`),
/// renewing its lease. A client id that names no confirmed NFSv4.0
/// client is NFS4ERR_STALE_CLIENTID for the operations that carry one.
pub fn identify(cx: &mut Compound, op: &NfsArgOp4) -> Result<(), NfsStat4> {
    let state = cx.srv.state();
    let by_id = |id: ClientId4| state.renew40(id).map(|()| id);
    let by_sid = |sid: &StateId4| state.client_of40(sid).map(|c| c.unwrap_or(NO_CLIENT));
    let client = match op {
        NfsArgOp4::Open(a) => by_id(a.owner.clientid)?,
        NfsArgOp4::LockT(a) => by_id(a.owner.clientid)?,
        NfsArgOp4::Lock(a) => match &a.locker {
            Locker4::OpenOwner(o) => by_id(o.lock_owner.clientid)?,
            Locker4::LockOwner(l) => by_sid(&l.lock_stateid)?,
        },
        NfsArgOp4::LockU(a) => by_sid(&a.lock_stateid)?,
        NfsArgOp4::Close(a) => by_sid(&a.open_stateid)?,
        NfsArgOp4::OpenDowngrade(a) => by_sid(&a.open_stateid)?,
        NfsArgOp4::OpenConfirm(a) => by_sid(&a.open_stateid)?,
        NfsArgOp4::DelegReturn(a) => by_sid(&a.deleg_stateid)?,
        NfsArgOp4::Read(a) => by_sid(&a.stateid)?,
        NfsArgOp4::Write(a) => by_sid(&a.stateid)?,
        NfsArgOp4::SetAttr(a) => by_sid(&a.stateid)?,
        _ => return Ok(()),
    };
    cx.client40 = Some(client);
    if client != NO_CLIENT {
        cx.conn.set_tag(client);
    }
    Ok(())
}

/// An owner's request under way, ended by [`Sequenced::end`]; dropped
/// without it (the compound cancelled, a bug unwinding), the owner is
/// freed with its sequence where it was.
pub struct Sequenced {
    srv: Arc<Server>,
    client: ClientId4,
    name: OwnerName,
    seqid: u32,
    opnum: u32,
    /// The stateid the request names.
    named: Option<StateId4>,
    /// A LOCK making a lock owner: its name and first sequence id.
    new_lock: Option<(Bytes, u32)>,
    done: bool,
}

/// What [`begin`] found.
pub enum Begun {
    /// Not an operation of an owner: run it.
    Plain,
    /// Run it, then end it.
    Run(Sequenced),
    /// A retransmission: its encoded result.
    Replay(Bytes),
}

/// The owner, sequence id and stateid of an operation that has them
/// (OPEN, OPEN_CONFIRM, OPEN_DOWNGRADE, CLOSE, LOCK, LOCKU), and whether
/// it is an OPEN or an OPEN_CONFIRM.
type OwnerOp = (
    Result<(ClientId4, OwnerName), NfsStat4>,
    u32,
    Option<StateId4>,
    Option<(Bytes, u32)>,
);

/// A lock stateid's owner: a lock owner (an open stateid where a lock
/// stateid belongs is NFS4ERR_BAD_STATEID).
fn lock_owner(found: (ClientId4, OwnerName)) -> Result<(ClientId4, OwnerName), NfsStat4> {
    match found {
        (c, n @ OwnerName::Lock(_)) => Ok((c, n)),
        _ => Err(NfsStat4::Nfs4errBadStateid),
    }
}

fn owner_op(cx: &Compound, op: &NfsArgOp4) -> Option<OwnerOp> {
    let state = cx.srv.state();
    let by_sid = |sid: &StateId4| {
        if state::stateid::is_special(&sid.other) {
            return Err(NfsStat4::Nfs4errBadStateid);
        }
        state.owner_of(sid)
    };
    Some(match op {
        NfsArgOp4::Open(a) => (
            Ok((a.owner.clientid, OwnerName::Open(a.owner.owner.clone()))),
            a.seqid,
            None,
            None,
        ),
        NfsArgOp4::OpenConfirm(a) => (by_sid(&a.open_stateid), a.seqid, Some(a.open_stateid), None),
        NfsArgOp4::OpenDowngrade(a) => {
            (by_sid(&a.open_stateid), a.seqid, Some(a.open_stateid), None)
        }
        NfsArgOp4::Close(a) => (by_sid(&a.open_stateid), a.seqid, Some(a.open_stateid), None),
        NfsArgOp4::Lock(a) => match &a.locker {
            Locker4::OpenOwner(o) => (
                by_sid(&o.open_stateid).and_then(|(c, n)| match n {
                    OwnerName::Open(_) if c == o.lock_owner.clientid => Ok((c, n)),
                    _ => Err(NfsStat4::Nfs4errBadStateid),
                }),
                o.open_seqid,
                Some(o.open_stateid),
                Some((o.lock_owner.owner.clone(), o.lock_seqid)),
            ),
            Locker4::LockOwner(l) => (
                by_sid(&l.lock_stateid).and_then(lock_owner),
                l.lock_seqid,
                Some(l.lock_stateid),
                None,
            ),
        },
        NfsArgOp4::LockU(a) => (
            by_sid(&a.lock_stateid).and_then(lock_owner),
            a.seqid,
            Some(a.lock_stateid),
            None,
        ),
        _ => return None,
    })
}

/// Checks an NFSv4.0 operation's place in its owner's sequence (RFC 7530
/// §9.1.7) before it runs; an error is the operation's result (and does
/// not move the sequence on). An OPEN of an owner not yet confirmed sets
/// `Compound::open_confirm` (OPEN4_RESULT_CONFIRM).
pub fn begin(cx: &mut Compound, op: &NfsArgOp4) -> Result<Begun, NfsStat4> {
    let Some((owner, seqid, named, new_lock)) = owner_op(cx, op) else {
        return Ok(Begun::Plain);
    };
    let (client, name) = owner?;
    let opnum = op.opnum();
    let open = matches!(op, NfsArgOp4::Open(_));
    let confirming = matches!(op, NfsArgOp4::OpenConfirm(_));
    match cx
        .srv
        .state()
        .seq_begin(client, &name, seqid, opnum, open, confirming)?
    {
        SeqStart::Replay(r) => Ok(Begun::Replay(r)),
        SeqStart::Run { confirm } => {
            // A reclaim (CLAIM_PREVIOUS) is of an owner confirmed before
            // the restart: no OPEN_CONFIRM (the Linux client sends none).
            let reclaim =
                matches!(op, NfsArgOp4::Open(a) if matches!(a.claim, OpenClaim4::Previous(_)));
            if confirm && reclaim {
                cx.srv.state().confirm_owner(client, &name);
            }
            cx.open_confirm = confirm && !reclaim;
            Ok(Begun::Run(Sequenced {
                srv: cx.srv.clone(),
                client,
                name,
                seqid,
                opnum,
                named,
                new_lock,
                done: false,
            }))
        }
    }
}

impl Sequenced {
    /// Ends the request with its status and encoded result; `current`:
    /// the compound's current stateid after it (the stateid it returned).
    pub fn end(mut self, status: NfsStat4, reply: Bytes, current: Option<StateId4>) {
        self.done = true;
        let other = current
            .filter(|s| status == NfsStat4::Nfs4Ok && *s != StateId4::INVALID)
            .or(self.named)
            .map(|s| s.other);
        self.srv.state().seq_end(
            self.client,
            &self.name,
            self.seqid,
            self.opnum,
            status,
            reply,
            other,
            self.new_lock.take(),
        );
    }
}

impl Drop for Sequenced {
    fn drop(&mut self) {
        if !self.done {
            self.srv.state().seq_abandon(self.client, &self.name);
        }
    }
}

/// The last error NFSv4.0 defines (RFC 7530 §13): NFSv4.1's come after.
const LAST_ERROR: u32 = NfsStat4::Nfs4errCbPathDown as u32;

/// An operation's result as an NFSv4.0 client may be told it: NFSv4.1's
/// errors have no meaning to it. A file that is not a regular file is
/// NFS4ERR_SYMLINK for OPEN and NFS4ERR_INVAL otherwise (RFC 7530
/// §16.16.5, §16.23.5: NFS4ERR_WRONG_TYPE is NFSv4.1's), a revoked
/// delegation's stateid NFS4ERR_BAD_STATEID, anything else of NFSv4.1's
/// NFS4ERR_INVAL.
pub fn result40(opnum: u32, r: OpResult) -> OpResult {
    let s = r.status();
    if (s as u32) <= LAST_ERROR {
        return r;
    }
    let s40 = match s {
        NfsStat4::Nfs4errWrongType if opnum == OpNum4::Open as u32 => NfsStat4::Nfs4errSymlink,
        NfsStat4::Nfs4errDelegRevoked => NfsStat4::Nfs4errBadStateid,
        _ => NfsStat4::Nfs4errInval,
    };
    OpResult::Error(opnum, s40)
}

/// The status of an encoded operation result (its second word).
pub fn status_of(reply: &[u8]) -> NfsStat4 {
    reply
        .get(4..8)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        .and_then(|n| <NfsStat4 as xdr::Discriminant>::from_u32(n).ok())
        .unwrap_or(NfsStat4::Nfs4errServerfault)
}

/// Replies kept at most in [`Drc`], how long, and the largest kept (at
/// most 64 MiB in all; a COMPOUND that changes something has a small
/// reply, unless it also reads).
const DRC_ENTRIES: usize = 4096;
const DRC_TTL: std::time::Duration = std::time::Duration::from_secs(120);
const DRC_REPLY_MAX: usize = 16 * 1024;

/// NFSv4.0's duplicate request cache (RFC 7530 §3.1.1 lets a
/// retransmission over a new or the same connection reach the server
/// again; without sessions only such a cache answers it as the first
/// time): the replies of COMPOUNDs that changed something, by the
/// caller's address and port, the xid and a digest of the request.
/// Bounded in entries, age and reply size. Owners' sequence ids answer
/// retransmissions with new xids (OPEN, CLOSE, LOCK...); this answers
/// the others (CREATE, REMOVE, RENAME, WRITE...).
pub struct Drc(crate::cache::Cache<(std::net::SocketAddr, u32, u64), Vec<Bytes>>);

impl Drc {
    pub fn new() -> Drc {
        Drc(crate::cache::Cache::new(
            "NFSv4.0 duplicate request",
            DRC_ENTRIES,
            DRC_TTL,
        ))
    }

    pub fn get(&self, peer: std::net::SocketAddr, xid: u32, digest: u64) -> Option<Vec<Bytes>> {
        self.0.get(&(peer, xid, digest))
    }

    pub fn keep(&self, peer: std::net::SocketAddr, xid: u32, digest: u64, reply: &[Bytes]) {
        if reply.iter().map(Bytes::len).sum::<usize>() <= DRC_REPLY_MAX {
            self.0.insert((peer, xid, digest), reply.to_vec());
        }
    }
}

impl Default for Drc {
    fn default() -> Self {
        Drc::new()
    }
}
