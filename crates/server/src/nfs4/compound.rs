//! COMPOUND processing (RFC 8881 §16.2, §2.10.6 for sessions).
//!
//! Operations are decoded one at a time, so a malformed or unknown
//! operation gets its own error result (NFS4ERR_BADXDR, NFS4ERR_OP_ILLEGAL)
//! after the ones before it have run. The first operation decides the
//! compound's kind: SEQUENCE (the normal case), or one of the operations
//! allowed alone outside a session.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use bytes::Bytes;
use proto::nfs4::*;
use rpc::{Call, Connection, Reply};
use tracing::{debug, warn};
use xdr::{Encoder, Pack, Unpack};

use super::filehandle::FhTarget;
use super::ops;
use super::pseudo::PSEUDO_EXPORT;
use super::state::session::Session;
use super::Nfs4Server;
use crate::export::{ClientRule, Export, Flavor};

/// The current (or saved) filehandle: an object of an export, or a node
/// of the pseudo filesystem (`pseudo` set, `export` = [`PSEUDO_EXPORT`],
/// empty `handle`).
#[derive(Debug, Clone)]
pub struct Fh {
    pub export: u16,
    pub handle: vfs::Handle,
    /// The filehandle as the client sees it.
    pub wire: Bytes,
    /// The pseudo node this is (RFC 8881 §7.3).
    pub pseudo: Option<u16>,
}

impl Fh {
    pub fn key(&self) -> super::state::FileKey {
        (self.export, self.handle.clone())
    }
}

/// The SEQUENCE this compound runs under.
pub struct SlotUse {
    pub slotid: u32,
    pub digest: u64,
    pub cachethis: bool,
}

/// Everything an operation sees of its compound.
pub struct Compound {
    pub srv: Arc<Nfs4Server>,
    pub conn: Arc<Connection>,
    pub auth: rpc::Auth,
    /// The credential's identity as sent, before any export's squashing;
    /// backend calls use [`Compound::creds_for`] instead.
    pub creds: vfs::Creds,
    pub minorversion: u32,
    pub cfh: Option<Fh>,
    pub sfh: Option<Fh>,
    pub cur_stateid: Option<StateId4>,
    pub saved_stateid: Option<StateId4>,
    pub session: Option<Arc<Session>>,
    pub slot: Option<SlotUse>,
    /// Number of operations in the request, and the index of the one running.
    pub nops: usize,
    pub index: usize,
    /// Size of the request's COMPOUND arguments.
    pub request_size: usize,
    /// Digest of the request, for false-retry detection.
    pub digest: u64,
    /// Set by SEQUENCE when the request is a retransmission: the reply to
    /// send again as it was.
    pub replay: Option<Vec<Bytes>>,
    /// The previous operation set the current filehandle (PUTFH,
    /// PUTROOTFH, PUTPUBFH, RESTOREFH) without checking its security
    /// flavor (RFC 8881 §2.6.3.1.1).
    pub sec_pending: bool,
}

/// The result of one operation: typed, or just an opcode and error status
/// (for an operation that could not be decoded). Results are built and
/// encoded one at a time, so the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum OpResult {
    Typed(NfsResOp4),
    Error(u32, NfsStat4),
}

impl OpResult {
    pub fn status(&self) -> NfsStat4 {
        match self {
            OpResult::Typed(r) => r.status(),
            OpResult::Error(_, s) => *s,
        }
    }
}

impl Pack for OpResult {
    fn pack(&self, e: &mut Encoder) {
        match self {
            OpResult::Typed(r) => r.pack(e),
            OpResult::Error(op, s) => {
                e.u32(*op);
                s.pack(e);
                // SETATTR4res carries its attrsset bitmap whatever the
                // status (RFC 8881 §18.30.2): an empty one.
                if *op == OpNum4::SetAttr as u32 {
                    Bitmap4::default().pack(e);
                }
            }
        }
    }
}

/// Operations allowed as the only operation of a compound without SEQUENCE
/// (RFC 8881 §2.6.3.1.1.8 / §18.35.3 etc.).
fn sessionless(op: &NfsArgOp4) -> bool {
    matches!(
        op,
        NfsArgOp4::ExchangeId(_)
            | NfsArgOp4::CreateSession(_)
            | NfsArgOp4::DestroySession(_)
            | NfsArgOp4::DestroyClientId(_)
            | NfsArgOp4::BindConnToSession(_)
    )
}

/// Operations that check the security flavor themselves, so a put-
/// filehandle operation before them does not (RFC 8881 §2.6.3.1.1.1 -
/// §2.6.3.1.1.5; OPEN of an existing name like LOOKUP).
fn handles_wrongsec(op: &NfsArgOp4) -> bool {
    matches!(
        op,
        NfsArgOp4::PutFh(_)
            | NfsArgOp4::PutRootFh
            | NfsArgOp4::PutPubFh
            | NfsArgOp4::RestoreFh
            | NfsArgOp4::SaveFh
            | NfsArgOp4::Lookup(_)
            | NfsArgOp4::LookupP
            | NfsArgOp4::SecInfo(_)
            | NfsArgOp4::SecInfoNoName(_)
            | NfsArgOp4::Open(_)
    )
}

/// Operations that modify the current filehandle's object and do not
/// check for a read-only export or pseudo directory themselves (their
/// results are unions on the status, so an error result is just it).
fn modifies_cfh(op: &NfsArgOp4) -> bool {
    matches!(
        op,
        NfsArgOp4::Copy(_)
            | NfsArgOp4::Clone(_)
            | NfsArgOp4::WriteSame(_)
            | NfsArgOp4::SetXattr(_)
            | NfsArgOp4::RemoveXattr(_)
    )
}

fn puts_fh(op: &NfsArgOp4) -> bool {
    matches!(
        op,
        NfsArgOp4::PutFh(_) | NfsArgOp4::PutRootFh | NfsArgOp4::PutPubFh | NfsArgOp4::RestoreFh
    )
}

fn digest(b: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    b.hash(&mut h);
    h.finish()
}

fn creds_of(auth: &rpc::Auth) -> vfs::Creds {
    match auth {
        rpc::Auth::Sys(p) => vfs::Creds {
            uid: p.uid,
            gid: p.gid,
            groups: p.gids.clone(),
        },
        // AUTH_NONE callers are treated as nobody.
        rpc::Auth::None => vfs::Creds {
            uid: 65534,
            gid: 65534,
            groups: Vec::new(),
        },
    }
}

fn encode_reply(status: NfsStat4, tag: &Bytes, results: &[OpResult]) -> Vec<Bytes> {
    let mut e = Encoder::with_capacity(512);
    status.pack(&mut e);
    tag.pack(&mut e);
    e.u32(results.len() as u32);
    for r in results {
        r.pack(&mut e);
    }
    e.finish()
}

fn encoded_len(r: &OpResult) -> usize {
    let mut e = Encoder::new();
    r.pack(&mut e);
    e.len()
}

/// Runs one COMPOUND call.
pub async fn run(srv: Arc<Nfs4Server>, call: Call) -> Reply {
    let Call {
        mut args,
        auth,
        conn,
        xid,
        ..
    } = call;
    let request_size = args.remaining();
    let req_digest = digest(args.rest());
    let tag = match Bytes::unpack(&mut args) {
        Ok(t) => t,
        Err(e) => {
            warn!(xid, "COMPOUND header undecodable: {e}");
            return Reply::Error(rpc::ReplyError::GarbageArgs);
        }
    };
    let (minorversion, nops) = match (args.u32(), args.count(u32::MAX as usize, 4)) {
        (Ok(m), Ok(n)) => (m, n),
        _ => return Reply::Error(rpc::ReplyError::GarbageArgs),
    };
    if !(1..=2).contains(&minorversion) {
        return Reply::Success(encode_reply(NfsStat4::Nfs4errMinorVersMismatch, &tag, &[]));
    }
    let mut cx = Compound {
        creds: creds_of(&auth),
        srv,
        conn,
        auth,
        minorversion,
        cfh: None,
        sfh: None,
        cur_stateid: None,
        saved_stateid: None,
        session: None,
        slot: None,
        nops,
        index: 0,
        request_size,
        digest: req_digest,
        replay: None,
        sec_pending: false,
    };
    let mut results: Vec<OpResult> = Vec::with_capacity(nops.min(64));
    let mut status = NfsStat4::Nfs4Ok;
    let mut resp_size = 12 + tag.len() + 4;
    let mut last_opnum = 0;
    for i in 0..nops {
        cx.index = i;
        // The opcode, for the error result if the arguments do not decode.
        let peeked = args
            .rest()
            .get(..4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            .filter(|n| <OpNum4 as xdr::Discriminant>::from_u32(*n).is_ok())
            .unwrap_or(OpNum4::Illegal as u32);
        let op = match NfsArgOp4::unpack(&mut args) {
            Ok(op) => op,
            Err(e) => {
                debug!(xid, op = i, "undecodable operation: {e}");
                results.push(OpResult::Error(peeked, NfsStat4::Nfs4errBadxdr));
                status = NfsStat4::Nfs4errBadxdr;
                break;
            }
        };
        let opnum = match op {
            NfsArgOp4::Illegal | NfsArgOp4::Unknown(_) => OpNum4::Illegal as u32,
            _ => op.opnum(),
        };
        // §2.6.3.1.1.7: a put-filehandle operation followed by one that
        // uses the filehandle fails with NFS4ERR_WRONGSEC itself when the
        // flavor is not one the filehandle's export accepts.
        if std::mem::take(&mut cx.sec_pending) && !handles_wrongsec(&op) {
            if let Some(fh) = &cx.cfh {
                if let (Err(s), Some(last)) = (cx.check_flavor(fh), results.last_mut()) {
                    *last = OpResult::Error(last_opnum, s);
                    status = s;
                    break;
                }
            }
        }
        let puts = puts_fh(&op);
        last_opnum = opnum;
        let readonly = match &cx.cfh {
            Some(fh) if i > 0 && cx.session.is_some() && modifies_cfh(&op) => {
                cx.check_writable(fh).err()
            }
            _ => None,
        };
        let r = if let NfsArgOp4::Illegal | NfsArgOp4::Unknown(_) = op {
            OpResult::Error(OpNum4::Illegal as u32, NfsStat4::Nfs4errOpIllegal)
        } else if let Some(s) = readonly {
            OpResult::Error(opnum, s)
        } else if i == 0 {
            match &op {
                NfsArgOp4::Sequence(_) => ops::dispatch(&mut cx, op).await,
                _ if sessionless(&op) && nops == 1 => ops::dispatch(&mut cx, op).await,
                _ if sessionless(&op) => OpResult::Error(op.opnum(), NfsStat4::Nfs4errNotOnlyOp),
                _ => OpResult::Error(op.opnum(), NfsStat4::Nfs4errOpNotInSession),
            }
        } else if let NfsArgOp4::Sequence(_) = op {
            OpResult::Error(op.opnum(), NfsStat4::Nfs4errSequencePos)
        } else if cx.session.is_none() {
            OpResult::Error(op.opnum(), NfsStat4::Nfs4errOpNotInSession)
        } else {
            ops::dispatch(&mut cx, op).await
        };
        // A replayed SEQUENCE answers with the cached reply as it was.
        if let Some(cached) = cx.replay.take() {
            return Reply::Success(cached);
        }
        let mut r = r;
        if let Some(sess) = &cx.session {
            resp_size += encoded_len(&r);
            let limit = sess.fore.maxresponsesize as usize;
            let cache_limit = sess.fore.maxresponsesize_cached as usize;
            let cachethis = cx.slot.as_ref().is_some_and(|s| s.cachethis);
            if resp_size > limit {
                r = OpResult::Error(opnum, NfsStat4::Nfs4errRepTooBig);
            } else if cachethis && resp_size > cache_limit {
                r = OpResult::Error(opnum, NfsStat4::Nfs4errRepTooBigToCache);
            }
        }
        status = r.status();
        cx.sec_pending = puts && status == NfsStat4::Nfs4Ok;
        results.push(r);
        if status != NfsStat4::Nfs4Ok {
            break;
        }
    }
    let reply = encode_reply(status, &tag, &results);
    if let (Some(sess), Some(slot)) = (&cx.session, &cx.slot) {
        let size: usize = reply.iter().map(Bytes::len).sum();
        let keep =
            size <= sess.fore.maxresponsesize_cached as usize && (slot.cachethis || size <= 2048);
        let mut t = sess.slots.lock().unwrap_or_else(|p| p.into_inner());
        t.complete(slot.slotid, slot.digest, keep.then(|| reply.clone()));
    }
    Reply::Success(reply)
}

impl Compound {
    /// The current filehandle (NFS4ERR_NOFILEHANDLE without one).
    pub fn cfh(&self) -> Result<&Fh, NfsStat4> {
        self.cfh.as_ref().ok_or(NfsStat4::Nfs4errNofilehandle)
    }

    /// Replaces the current filehandle; the current stateid goes with the
    /// old one (RFC 8881 §16.2.3.1.2).
    pub fn set_cfh(&mut self, fh: Fh) {
        self.cfh = Some(fh);
        self.cur_stateid = None;
    }

    /// Leaves no current filehandle, as SECINFO and SECINFO_NO_NAME do
    /// (RFC 8881 §2.6.3.1.1.8).
    pub fn consume_cfh(&mut self) {
        self.cfh = None;
        self.cur_stateid = None;
    }

    /// Makes the root of the namespace the current filehandle (PUTROOTFH,
    /// and PUTPUBFH, whose public filehandle is the root here: RFC 8881
    /// §18.20, §18.21).
    pub fn put_root_fh(&mut self) -> Result<(), NfsStat4> {
        let fh = self.root_fh()?;
        self.set_cfh(fh);
        Ok(())
    }

    pub fn export(&self, id: u16) -> Result<&Export, NfsStat4> {
        self.srv.export(id).ok_or(NfsStat4::Nfs4errStale)
    }

    /// A filehandle for an object of an export.
    pub fn make_fh(&self, export: u16, handle: vfs::Handle) -> Fh {
        let wire = self.srv.fh.encode(&FhTarget::Object {
            export,
            handle: handle.clone(),
        });
        Fh {
            export,
            handle,
            wire,
            pseudo: None,
        }
    }

    /// The filehandle of pseudo node `node`.
    pub fn pseudo_fh(&self, node: u16) -> Fh {
        Fh {
            export: PSEUDO_EXPORT,
            handle: vfs::Handle(Bytes::new()),
            wire: self.srv.fh.encode(&FhTarget::Pseudo(node)),
            pseudo: Some(node),
        }
    }

    /// The root of an export, for a client entering it: checked against
    /// the export's client rules (but not its flavors: see
    /// [`Compound::check_flavor`]).
    pub fn export_root_fh(&self, export: u16) -> Result<Fh, NfsStat4> {
        self.admit(export)?;
        let e = self.export(export)?;
        Ok(self.make_fh(e.id, e.vfs.root()))
    }

    /// The root of the server's namespace: the pseudo root, or the export
    /// at "/".
    pub fn root_fh(&self) -> Result<Fh, NfsStat4> {
        if let Some(id) = self.srv.ns.root_export {
            return self.export_root_fh(id);
        }
        if self.srv.ns.active() {
            return Ok(self.pseudo_fh(0));
        }
        Err(NfsStat4::Nfs4errNoent)
    }

    /// Decodes a filehandle a client presented, checking the client may
    /// use its export.
    pub fn parse_fh(&self, wire: &Bytes) -> Result<Fh, NfsStat4> {
        match self.srv.fh.decode(wire) {
            Ok(FhTarget::Object { export, handle }) => {
                self.admit(export)?;
                Ok(Fh {
                    export,
                    handle,
                    wire: wire.clone(),
                    pseudo: None,
                })
            }
            // A pseudo node of another configuration.
            Ok(FhTarget::Pseudo(n)) if self.srv.ns.node(n).is_none() => Err(NfsStat4::Nfs4errStale),
            Ok(FhTarget::Pseudo(n)) => Ok(self.pseudo_fh(n)),
            Err(_) => Err(NfsStat4::Nfs4errBadhandle),
        }
    }

    /// The client rule this compound's client is under for `export`:
    /// NFS4ERR_ACCESS without one, NFS4ERR_PERM from an unprivileged port
    /// when the rule asks for a privileged one.
    pub fn admit(&self, export: u16) -> Result<&ClientRule, NfsStat4> {
        let e = self.export(export)?;
        let peer = self.conn.peer();
        e.rules
            .admit(peer)
            .inspect_err(|s| refusal_warning(&e.path, peer, *s))
    }

    /// NFS4ERR_WRONGSEC unless the credential's flavor is one `fh`'s
    /// export accepts; pseudo nodes accept every flavor.
    pub fn check_flavor(&self, fh: &Fh) -> Result<(), NfsStat4> {
        if fh.pseudo.is_some() {
            return Ok(());
        }
        if self.export(fh.export)?.rules.allows(Flavor::of(&self.auth)) {
            Ok(())
        } else {
            Err(NfsStat4::Nfs4errWrongsec)
        }
    }

    /// The flavors `fh`'s export accepts, as SECINFO lists them.
    pub fn flavors(&self, fh: &Fh) -> Result<Vec<SecInfo4>, NfsStat4> {
        let sec = match fh.pseudo {
            Some(_) => vec![Flavor::Sys, Flavor::None],
            None => self.export(fh.export)?.rules.sec.clone(),
        };
        Ok(sec
            .into_iter()
            .map(|f| SecInfo4::Flavor(f.number()))
            .collect())
    }

    /// NFS4ERR_ROFS if `fh` may not be modified by this client: a pseudo
    /// node, or an object of an export it may only read.
    pub fn check_writable(&self, fh: &Fh) -> Result<(), NfsStat4> {
        if fh.pseudo.is_some() || self.admit(fh.export)?.read_only {
            return Err(NfsStat4::Nfs4errRofs);
        }
        Ok(())
    }

    /// The identity backend calls on `export` act with: the credential's,
    /// squashed as the client's rule says.
    pub fn creds_for(&self, export: u16) -> Result<vfs::Creds, NfsStat4> {
        let rule = self.admit(export)?;
        if !self.export(export)?.rules.allows(Flavor::of(&self.auth)) {
            return Err(NfsStat4::Nfs4errWrongsec);
        }
        Ok(rule.creds(&self.auth))
    }

    /// Runs a backend call for `fh`'s export on the blocking pool, with the
    /// identity the export's rules give this compound's client. A pseudo
    /// node has no backend: such calls answer NFS4ERR_ISDIR (operations
    /// that mean something for a pseudo directory handle it before).
    pub async fn vfs<T, F>(&self, export: u16, f: F) -> Result<T, NfsStat4>
    where
        T: Send + 'static,
        F: FnOnce(&dyn vfs::Vfs, &vfs::Creds) -> vfs::Result<T> + Send + 'static,
    {
        if export == PSEUDO_EXPORT {
            return Err(NfsStat4::Nfs4errIsdir);
        }
        let fs = self.export(export)?.vfs.clone();
        let creds = self.creds_for(export)?;
        self.blocking(fs, creds, f).await
    }

    /// Runs a backend call on the blocking pool with `creds`, no rules
    /// applied.
    pub async fn blocking<T, F>(
        &self,
        fs: std::sync::Arc<dyn vfs::Vfs>,
        creds: vfs::Creds,
        f: F,
    ) -> Result<T, NfsStat4>
    where
        T: Send + 'static,
        F: FnOnce(&dyn vfs::Vfs, &vfs::Creds) -> vfs::Result<T> + Send + 'static,
    {
        match tokio::task::spawn_blocking(move || f(fs.as_ref(), &creds)).await {
            Ok(r) => r.map_err(super::errors::from_errno),
            Err(e) => {
                warn!("backend call failed: {e}");
                Err(NfsStat4::Nfs4errServerfault)
            }
        }
    }

    /// Resolves the special "current stateid" (RFC 8881 §16.2.3.1.2).
    pub fn resolve_stateid(&self, sid: &StateId4) -> Result<StateId4, NfsStat4> {
        if *sid == StateId4::CURRENT {
            self.cur_stateid.ok_or(NfsStat4::Nfs4errBadStateid)
        } else {
            Ok(*sid)
        }
    }

    /// Checks the stateid of an I/O operation on the current filehandle
    /// for `access` (RFC 8881 §8.2); returns whether the file still has
    /// to be checked to be a regular file (a special stateid was used).
    pub fn check_io(&self, sid: &StateId4, access: u32) -> Result<bool, NfsStat4> {
        self.check_io_of(self.cfh()?, sid, access)
    }

    /// [`Compound::check_io`] for the object `fh`.
    pub fn check_io_of(&self, fh: &Fh, sid: &StateId4, access: u32) -> Result<bool, NfsStat4> {
        let client = self.clientid()?;
        let sid = self.resolve_stateid(sid)?;
        self.srv.state().check_io(client, &sid, &fh.key(), access)
    }

    /// The client this compound's session belongs to.
    pub fn clientid(&self) -> Result<ClientId4, NfsStat4> {
        self.session
            .as_ref()
            .map(|s| s.client)
            .ok_or(NfsStat4::Nfs4errOpNotInSession)
    }
}

/// Checks a component name (RFC 8881 §14.2): empty or not UTF-8 (or
/// containing the non-characters U+FFFE, U+FFFF) is
/// NFS4ERR_INVAL, "." and ".." are NFS4ERR_BADNAME, '/' or NUL is
/// NFS4ERR_BADCHAR, longer than 255 bytes is NFS4ERR_NAMETOOLONG.
pub fn check_name(name: &Bytes) -> Result<Bytes, NfsStat4> {
    match std::str::from_utf8(name) {
        // U+FFFE and U+FFFF are not characters (RFC 8881 §14.4 requires
        // valid UTF-8 names; pynfs RNM8/RNM9 treat these as invalid).
        Ok(s) if !s.is_empty() && !s.contains(['\u{fffe}', '\u{ffff}']) => {}
        _ => return Err(NfsStat4::Nfs4errInval),
    }
    if &name[..] == b"." || &name[..] == b".." {
        return Err(NfsStat4::Nfs4errBadname);
    }
    if name.iter().any(|&c| c == b'/' || c == 0) {
        return Err(NfsStat4::Nfs4errBadchar);
    }
    if name.len() > 255 {
        return Err(NfsStat4::Nfs4errNametoolong);
    }
    Ok(name.clone())
}

/// Says in the log why a client was refused an export (at most every ten
/// seconds, so a client retrying in a loop cannot flood it): otherwise the
/// user only sees "Operation not permitted" from mount.
fn refusal_warning(export: &str, peer: std::net::SocketAddr, status: NfsStat4) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let last = LAST.load(Ordering::Relaxed);
    if now < last + 10
        || LAST
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
    {
        return;
    }
    let why = match status {
        NfsStat4::Nfs4errPerm => {
            "its source port is not privileged and the export's rule has secure = true"
        }
        NfsStat4::Nfs4errAccess => "no client rule of the export matches its address",
        _ => "refused",
    };
    warn!(%peer, export, "client refused: {why}");
}
