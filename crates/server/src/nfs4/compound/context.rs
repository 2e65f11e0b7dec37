//! What an operation works with (RFC 8881 §16.2.3): the COMPOUND's
//! context ([`Compound`]: current and saved filehandles, stateid, session,
//! the exports snapshot, the client's rule and identity) and the backend
//! calls made through it.

use crate::exports::export::{ClientRule, Export, Flavor};
use crate::exports::filehandle::parent_hint;
use crate::exports::filehandle::{FhError, FhTarget};
use crate::exports::namespace::PSEUDO_EXPORT;
use crate::exports::Exports;
use crate::handoff::off_thread;
use crate::instance::Server;
use bytes::Bytes;
use proto::nfs4::*;
use rpc::Connection;
use state::session::Session;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use tracing::warn;

use super::slot::{now_and_then, SlotUse};

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
    /// The referral this is the root of: an absent file system (RFC 8881
    /// §11.3), where nearly every operation is NFS4ERR_MOVED. Such a
    /// filehandle never reaches a client ([`Compound::referral_fh`]).
    pub absent: Option<u16>,
}

impl Fh {
    pub fn key(&self) -> state::FileKey {
        (self.export, self.handle.0.clone())
    }
}

/// Everything an operation sees of its compound.
pub struct Compound {
    pub srv: Arc<Server>,
    /// The exports as the compound began: a reload meanwhile does not
    /// change them under it.
    pub exports: Arc<Exports>,
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
    /// NFSv4.0 (no session): the client the running operation named,
    /// by client id or stateid (`compound::v40::identify`).
    pub client40: Option<ClientId4>,
    /// NFSv4.0: the running OPEN's owner is new or not yet confirmed
    /// (OPEN4_RESULT_CONFIRM, RFC 7530 §16.16.5).
    pub open_confirm: bool,
}

/// How attributes are built for one request: the minor version, and
/// whether owners go out as names (`user@domain`, RFC 8881 §5.9) or as
/// numeric strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct View {
    pub minor: u32,
    pub names: bool,
}

impl View {
    /// Numeric owners, for `minor`.
    pub fn numeric(minor: u32) -> View {
        View {
            minor,
            names: false,
        }
    }
}

pub(crate) fn creds_of(auth: &rpc::Auth) -> vfs::Creds {
    // AUTH_NONE callers, and principals without a local user, are
    // treated as nobody.
    let nobody = || vfs::Creds {
        uid: 65534,
        gid: 65534,
        groups: Vec::new(),
    };
    match auth {
        rpc::Auth::Sys(p) => vfs::Creds {
            uid: p.uid,
            gid: p.gid,
            groups: p.gids.clone(),
        },
        rpc::Auth::Gss(g) => match &g.principal.ids {
            Some(i) => vfs::Creds {
                uid: i.uid,
                gid: i.gid,
                groups: i.groups.clone(),
            },
            None => nobody(),
        },
        rpc::Auth::None => nobody(),
    }
}

impl Compound {
    /// Who the client is, as the call's credential says (RFC 8881
    /// §2.4.3).
    pub fn principal(&self) -> state::Principal {
        match &self.auth {
            rpc::Auth::None => state::Principal::None,
            rpc::Auth::Sys(p) => state::Principal::Sys {
                uid: p.uid,
                gid: p.gid,
            },
            rpc::Auth::Gss(g) => state::Principal::Gss(g.principal.name.clone()),
        }
    }

    /// How this request's attributes are built: owners as names when the
    /// server reports names to all (`numeric_owners` off), or, with an
    /// owner domain configured, to Kerberos callers and to clients that
    /// have sent names themselves (RFC 8881 §5.9).
    pub fn view(&self) -> View {
        let cfg = &self.srv.cfg;
        let names = !cfg.numeric_owners
            || (cfg.owner_domain.is_some()
                && (matches!(self.auth, rpc::Auth::Gss(_))
                    || self.session.as_ref().is_some_and(|s| {
                        s.owner_names.load(std::sync::atomic::Ordering::Relaxed)
                    })));
        View {
            minor: self.minorversion,
            names,
        }
    }

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

    pub fn export(&self, id: u16) -> Result<&Arc<Export>, NfsStat4> {
        self.exports.get(id).ok_or(NfsStat4::Nfs4errStale)
    }

    /// A filehandle for a directory of an export (or an object reached
    /// other than by name).
    pub fn make_fh(&self, export: u16, handle: vfs::Handle) -> Fh {
        self.fh_with(export, handle, None)
    }

    /// A filehandle for the object `handle` with attributes `attr`,
    /// reached as an entry of the directory `dir`: a non-directory's
    /// handle names `dir` where the backend wants it ([`parent_hint`]).
    pub fn make_child_fh(
        &self,
        export: u16,
        handle: vfs::Handle,
        attr: &vfs::Attr,
        dir: &vfs::Handle,
    ) -> Fh {
        let parent = self
            .exports
            .get(export)
            .and_then(|e| parent_hint(&*e.vfs, attr, dir));
        self.fh_with(export, handle, parent)
    }

    pub(crate) fn fh_with(
        &self,
        export: u16,
        handle: vfs::Handle,
        parent: Option<vfs::Handle>,
    ) -> Fh {
        let wire = self.srv.fh.encode(&FhTarget::Object {
            export,
            handle: handle.clone(),
            parent,
        });
        Fh {
            export,
            handle,
            wire,
            pseudo: None,
            absent: None,
        }
    }

    /// The filehandle of pseudo node `node`.
    pub fn pseudo_fh(&self, node: u16) -> Fh {
        Fh {
            export: PSEUDO_EXPORT,
            handle: vfs::Handle(Bytes::new()),
            wire: self.srv.fh.encode(&FhTarget::Pseudo(node)),
            pseudo: Some(node),
            absent: None,
        }
    }

    /// The root of referral `r` (RFC 8881 §11.15.1): LOOKUP may make it
    /// current, but GETFH of it is NFS4ERR_MOVED ("filehandles within an
    /// absent file system cannot be transferred to the client", §11.3),
    /// so it has no wire form.
    pub fn referral_fh(&self, r: u16) -> Fh {
        Fh {
            export: PSEUDO_EXPORT,
            handle: vfs::Handle(Bytes::new()),
            wire: Bytes::new(),
            pseudo: None,
            absent: Some(r),
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
        if let Some(id) = self.exports.ns.root_export {
            return self.export_root_fh(id);
        }
        if self.exports.ns.active() {
            return Ok(self.pseudo_fh(0));
        }
        Err(NfsStat4::Nfs4errNoent)
    }

    /// Decodes a filehandle a client presented, checking the client may
    /// use its export.
    pub fn parse_fh(&self, wire: &Bytes) -> Result<Fh, NfsStat4> {
        match self.srv.fh.decode(wire) {
            Ok(FhTarget::Object {
                export,
                handle,
                parent,
            }) => {
                self.admit(export)?;
                if let Some(p) = parent {
                    self.export(export)?.vfs.note_parent(&handle, &p);
                }
                Ok(Fh {
                    export,
                    handle,
                    wire: wire.clone(),
                    pseudo: None,
                    absent: None,
                })
            }
            // A pseudo node of another configuration.
            Ok(FhTarget::Pseudo(n)) if self.exports.ns.node(n).is_none() => {
                Err(NfsStat4::Nfs4errStale)
            }
            Ok(FhTarget::Pseudo(n)) => Ok(self.pseudo_fh(n)),
            // Ours, for an export that is gone or now another directory.
            Err(FhError::Stale) => Err(NfsStat4::Nfs4errStale),
            Err(FhError::Bad) => {
                tracing::debug!(
                    len = wire.len(),
                    handle = ?&wire[..],
                    op = self.index,
                    nops = self.nops,
                    minor = self.minorversion,
                    "a filehandle not ours"
                );
                Err(NfsStat4::Nfs4errBadhandle)
            }
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

    /// NFS4ERR_WRONGSEC unless the credential's flavor, and the
    /// connection's transport security (RFC 9289), are ones `fh`'s export
    /// accepts; pseudo nodes and referrals accept every flavor.
    pub fn check_flavor(&self, fh: &Fh) -> Result<(), NfsStat4> {
        if fh.pseudo.is_some() || fh.absent.is_some() {
            return Ok(());
        }
        let rules = &self.export(fh.export)?.rules;
        if rules.allows(Flavor::of(&self.auth)) && rules.allows_xprt(self.conn.xprt()) {
            Ok(())
        } else {
            Err(NfsStat4::Nfs4errWrongsec)
        }
    }

    /// The flavors `fh`'s export accepts, as SECINFO lists them.
    pub fn flavors(&self, fh: &Fh) -> Result<Vec<SecInfo4>, NfsStat4> {
        let sec = if fh.pseudo.is_some() || fh.absent.is_some() {
            self.srv.pseudo_flavors()
        } else {
            self.export(fh.export)?.rules.sec.clone()
        };
        Ok(sec.into_iter().map(Flavor::secinfo).collect())
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
        let rules = &self.export(export)?.rules;
        if !rules.allows(Flavor::of(&self.auth)) || !rules.allows_xprt(self.conn.xprt()) {
            return Err(NfsStat4::Nfs4errWrongsec);
        }
        Ok(rule.creds(&self.auth))
    }

    /// Runs a backend call that never blocks ([`vfs::Vfs::read_nowait`]
    /// and the like) right here, on the async thread, with the identity
    /// [`Compound::vfs`] would use; `None` if the backend cannot answer
    /// without blocking (or `export` is a pseudo node), for the caller to
    /// go through [`Compound::vfs`].
    pub fn vfs_nowait<T, F>(&self, export: u16, f: F) -> Option<Result<T, NfsStat4>>
    where
        F: FnOnce(&dyn vfs::Vfs, &vfs::Creds) -> Option<vfs::Result<T>>,
    {
        if export == PSEUDO_EXPORT {
            return None;
        }
        let fs = match self.export(export) {
            Ok(e) => &e.vfs,
            Err(s) => return Some(Err(s)),
        };
        let creds = match self.creds_for(export) {
            Ok(c) => c,
            Err(s) => return Some(Err(s)),
        };
        f(fs.as_ref(), &creds).map(|r| r.map_err(crate::errors::from_errno))
    }

    /// The backend's attributes of `fh`: without blocking when the backend
    /// can say ([`vfs::Vfs::getattr_nowait`]), else on the blocking pool.
    pub async fn attr_of(&self, fh: &Fh) -> Result<vfs::Attr, NfsStat4> {
        if let Some(a) = self.vfs_nowait(fh.export, |v, _| v.getattr_nowait(&fh.handle)) {
            return a;
        }
        let handle = fh.handle.clone();
        self.vfs(fh.export, move |v, _| v.getattr(&handle)).await
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
        match off_thread(move || f(fs.as_ref(), &creds)).await {
            Ok(r) => r.map_err(crate::errors::from_errno),
            Err(e) => {
                warn!("backend call failed: {e}");
                Err(NfsStat4::Nfs4errServerfault)
            }
        }
    }

    /// Writes client `id`'s record (its owner, `co_ownerid` or the
    /// NFSv4.0 id string) to stable storage, on the blocking pool: from
    /// then on it may hold state it can reclaim after a restart (RFC 8881
    /// §8.4.2.1, RFC 7530 §9.6.3).
    pub async fn record_client(&self, id: ClientId4, owner: bytes::Bytes) -> Result<(), NfsStat4> {
        let srv = self.srv.clone();
        match off_thread(move || srv.records.add(id, &owner)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => {
                tracing::error!("cannot record client {id:#x} on stable storage: {e}");
                Err(NfsStat4::Nfs4errServerfault)
            }
            Err(_) => Err(NfsStat4::Nfs4errServerfault),
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
    /// The client of this compound's session; in NFSv4.0, the client the
    /// running operation named (`compound::v40::identify`).
    pub fn clientid(&self) -> Result<ClientId4, NfsStat4> {
        if self.minorversion == 0 {
            return self.client40.ok_or(NfsStat4::Nfs4errStaleClientid);
        }
        self.session
            .as_ref()
            .map(|s| s.client)
            .ok_or(NfsStat4::Nfs4errOpNotInSession)
    }

    /// The client this compound most likely comes from, for choices
    /// that are no error when wrong (whose write delegation a GETATTR
    /// must ask about): [`Compound::clientid`], else, in NFSv4.0, the
    /// client the last request on this connection named (a client sends
    /// its requests over one connection).
    pub fn client_hint(&self) -> Option<ClientId4> {
        self.clientid().ok().or_else(|| {
            let tag = self.conn.tag();
            (self.minorversion == 0 && tag != 0).then_some(tag)
        })
    }

    /// Whether this compound's client can be called back now (a
    /// delegation is only as good as its recall): its session's back
    /// channel, or an NFSv4.0 client's callback path.
    pub fn callable(&self) -> bool {
        if self.minorversion == 0 {
            return self
                .client40
                .and_then(|c| self.srv.state().session40(c))
                .is_some_and(|s| s.callable());
        }
        self.session.as_ref().is_some_and(|s| s.callable())
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
pub(crate) fn refusal_warning(export: &str, peer: std::net::SocketAddr, status: NfsStat4) {
    static LAST: AtomicU64 = AtomicU64::new(0);
    if !now_and_then(&LAST) {
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
