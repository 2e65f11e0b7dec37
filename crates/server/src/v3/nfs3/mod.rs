//! NFS version 3 (RFC 1813) beside NFSv4, on the same port, over the same
//! exports, rules and backends. Filehandles are NFSv4's
//! ([`crate::exports::filehandle`]: persistent, bound to their export's root,
//! authenticated), made without the parent hint so that they fit
//! NFS3_FHSIZE (64 bytes); the pseudo filesystem does not exist here: the
//! MOUNT protocol ([`crate::v3::mount`]) hands out each export's root.
//!
//! One procedure per file in `procs`; this module holds what they share:
//! the call's context (the client's address and credential, the export's
//! rule for it), backend calls on the blocking pool, and the conversions
//! of attributes and errors.
//!
//! All 22 procedures. Changes are durable before they are answered as
//! NFSv4's are (the backend syncs metadata; stable WRITEs go through the
//! write log or a grouped sync), recall the NFSv4 delegations they
//! conflict with (NFS3ERR_JUKEBOX if one is not returned in time), and
//! tell NFSv4 directory delegations of entries added, removed and renamed
//! and of directory attributes changed.

pub mod procs;

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use proto::nfs3::*;
use rpc::{Call, Reply, ReplyError};
use tracing::warn;
use xdr::Unpack;

use crate::conflicts::directories::Changer;
use crate::exports::export::{Export, Flavor};
use crate::exports::filehandle::FhTarget;
use crate::exports::Exports;
use crate::instance::Server;

/// Bad requests logged at most this often.
static BAD_LOG: rpc::RateLimit = rpc::RateLimit::per_secs(10);

/// The NFSv3 program's service, on the server NFSv4 runs.
pub struct Nfs3Service(pub Arc<Server>);

/// One NFSv3 call: the server, the caller's credential and address.
pub struct Ctx {
    pub srv: Arc<Server>,
    /// The exports as the call began ([`crate::exports`]).
    pub exports: Arc<Exports>,
    pub auth: rpc::Auth,
    pub peer: SocketAddr,
    /// The connection's transport security (RFC 9289) where the export's
    /// `xprtsec` governs the program: NFS, not MOUNT or NLM (as with the
    /// Linux server, whose mountd and lockd do not see it).
    pub xprt: Option<rpc::tls::Xprt>,
}

/// An object a filehandle names: its export and backend handle.
#[derive(Debug, Clone)]
pub struct Obj {
    pub export: u16,
    pub handle: vfs::Handle,
}

impl Ctx {
    /// The export `id`.
    /// One served elsewhere is stale (NFSv3 has no way to send a client
    /// to another server); one arriving by migration is not ready yet.
    pub fn export(&self, id: u16) -> Result<&Arc<Export>, NfsStat3> {
        match self.srv.away.get(id) {
            Some(crate::exports::away::Away::Elsewhere(_)) => return Err(NfsStat3::Stale),
            Some(
                crate::exports::away::Away::Arriving | crate::exports::away::Away::Uncertain(_),
            ) => return Err(NfsStat3::Jukebox),
            _ => {}
        }
        self.exports.get(id).ok_or(NfsStat3::Stale)
    }

    /// The object `fh` names, if this server minted it for an export the
    /// caller may use.
    pub fn obj(&self, fh: &NfsFh3) -> Result<Obj, NfsStat3> {
        match self.srv.fh.decode(&fh.data) {
            Ok(FhTarget::Object {
                export,
                handle,
                parent,
            }) => {
                self.creds(export)?;
                if let Some(p) = parent {
                    self.export(export)?.vfs.note_parent(&handle, &p);
                }
                Ok(Obj { export, handle })
            }
            Ok(FhTarget::Pseudo(_)) => Err(NfsStat3::BadHandle),
            Err(crate::exports::filehandle::FhError::Stale) => Err(NfsStat3::Stale),
            Err(_) => Err(NfsStat3::BadHandle),
        }
    }

    /// The filehandle of `handle` (with attributes `attr`) in `export`,
    /// naming the directory `dir` it was reached in where the backend
    /// wants that hint and it fits NFS3_FHSIZE (to find an object the
    /// kernel has forgotten, `exports::filehandle`).
    pub fn fh(
        &self,
        export: u16,
        handle: vfs::Handle,
        attr: &vfs::Attr,
        dir: Option<&vfs::Handle>,
    ) -> NfsFh3 {
        let parent = match (self.exports.get(export), dir) {
            (Some(e), Some(d)) => crate::exports::filehandle::parent_hint(&*e.vfs, attr, d),
            _ => None,
        };
        let t = FhTarget::Object {
            export,
            handle,
            parent,
        };
        NfsFh3 {
            data: self.srv.fh.encode_within(&t, NFS3_FHSIZE),
        }
    }

    /// The identity backend calls on `export` act with (the export's rule
    /// for this client, RFC 1813 leaves the policy to the server): a
    /// client no rule admits, or one from an unprivileged port where the
    /// rule asks for a privileged one, or a flavor the export does not
    /// accept, is refused NFS3ERR_ACCES (NFS3ERR_PERM for the port).
    pub fn creds(&self, export: u16) -> Result<vfs::Creds, NfsStat3> {
        let e = self.export(export)?;
        let rule = e.rules.admit(self.peer).map_err(|s| match s {
            proto::nfs4::NfsStat4::Nfs4errPerm => NfsStat3::Perm,
            _ => NfsStat3::Acces,
        })?;
        if !e.rules.allows(Flavor::of(&self.auth))
            || self.xprt.is_some_and(|x| !e.rules.allows_xprt(x))
        {
            return Err(NfsStat3::Acces);
        }
        Ok(rule.creds(&self.auth))
    }

    /// Runs a backend call for `export` on the blocking pool with the
    /// identity the export's rule gives this client.
    pub async fn vfs<T, F>(&self, export: u16, f: F) -> Result<T, NfsStat3>
    where
        T: Send + 'static,
        F: FnOnce(&dyn vfs::Vfs, &vfs::Creds) -> vfs::Result<T> + Send + 'static,
    {
        let fs = self.export(export)?.vfs.clone();
        let creds = self.creds(export)?;
        match crate::handoff::off_thread(move || f(fs.as_ref(), &creds)).await {
            Ok(r) => r.map_err(from_errno),
            Err(e) => {
                warn!("backend call failed: {e}");
                Err(NfsStat3::ServerFault)
            }
        }
    }

    /// The file system figures of `o`'s export (FSSTAT, PATHCONF) and
    /// `o`'s attributes for the reply.
    pub async fn fsstat(&self, o: &Obj) -> (Result<vfs::FsStat, NfsStat3>, PostOpAttr) {
        let h = o.handle.clone();
        let r = self.vfs(o.export, move |v, _| v.fsstat(&h)).await;
        (r, self.post_op(o).await)
    }

    /// The attributes of `o` for a reply's `post_op_attr`: none when they
    /// cannot be had (RFC 1813 §2.6).
    pub async fn post_op(&self, o: &Obj) -> PostOpAttr {
        let fsid = self.export(o.export).ok()?.fsid;
        let a = self.attr_of(o).await.ok()?;
        Some(fattr3(&a, fsid))
    }

    /// The backend's attributes of `o`: without a thread hand-off when the
    /// backend can say ([`vfs::Vfs::getattr_nowait`]), else on the
    /// blocking pool.
    pub async fn attr_of(&self, o: &Obj) -> Result<vfs::Attr, NfsStat3> {
        if let Some(a) = self.vfs_nowait(o.export, |v, _| v.getattr_nowait(&o.handle)) {
            return a;
        }
        let h = o.handle.clone();
        self.vfs(o.export, move |v, _| v.getattr(&h)).await
    }

    /// Runs a backend call that never blocks ([`vfs::Vfs::read_nowait`]
    /// and the like) here, on the async thread, with the identity
    /// [`Ctx::vfs`] would use; `None` when the backend cannot answer
    /// without blocking, for the caller to go through [`Ctx::vfs`].
    pub fn vfs_nowait<T, F>(&self, export: u16, f: F) -> Option<Result<T, NfsStat3>>
    where
        F: FnOnce(&dyn vfs::Vfs, &vfs::Creds) -> Option<vfs::Result<T>>,
    {
        let fs = match self.export(export) {
            Ok(e) => &e.vfs,
            Err(s) => return Some(Err(s)),
        };
        let creds = match self.creds(export) {
            Ok(c) => c,
            Err(s) => return Some(Err(s)),
        };
        f(fs.as_ref(), &creds).map(|r| r.map_err(from_errno))
    }
}

/// The parent of the directory `h` (attributes `a`) for "..": the export's
/// root is its own, so that a client cannot climb out of the export.
pub fn parent_of(
    v: &dyn vfs::Vfs,
    c: &vfs::Creds,
    h: &vfs::Handle,
    a: vfs::Attr,
) -> vfs::Result<(vfs::Handle, vfs::Attr)> {
    if *h == v.root() {
        Ok((h.clone(), a))
    } else {
        v.lookup_parent(c, h)
    }
}

/// `fattr3` (RFC 1813 §2.6) of a backend's attributes in the export with
/// `fsid`.
pub fn fattr3(a: &vfs::Attr, fsid: (u64, u64)) -> Fattr3 {
    let t = |t: vfs::Timespec| NfsTime3 {
        seconds: t.sec.clamp(0, u32::MAX as i64) as u32,
        nseconds: t.nsec,
    };
    Fattr3 {
        type_: match a.ftype {
            vfs::FileType::Regular => Ftype3::Reg,
            vfs::FileType::Directory => Ftype3::Dir,
            vfs::FileType::Block => Ftype3::Blk,
            vfs::FileType::Char => Ftype3::Chr,
            vfs::FileType::Symlink => Ftype3::Lnk,
            vfs::FileType::Socket => Ftype3::Sock,
            vfs::FileType::Fifo => Ftype3::Fifo,
        },
        mode: a.mode & 0o7777,
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        size: a.size,
        used: a.used,
        rdev: SpecData3 {
            specdata1: a.rdev.0,
            specdata2: a.rdev.1,
        },
        // One 64-bit fsid per export (NFSv4 has major and minor).
        fsid: fsid.0 ^ fsid.1.rotate_left(32),
        fileid: a.fileid,
        atime: t(a.atime),
        mtime: t(a.mtime),
        ctime: t(a.ctime),
    }
}

/// The NFSv3 status of a backend error (RFC 1813 §2.6).
pub fn from_errno(e: vfs::Errno) -> NfsStat3 {
    use NfsStat3::*;
    match e.0 {
        libc::EPERM => Perm,
        libc::ENOENT => Noent,
        libc::EIO => Io,
        libc::ENXIO => Nxio,
        libc::EACCES => Acces,
        libc::EEXIST => Exist,
        libc::EXDEV => Xdev,
        libc::ENODEV => Nodev,
        libc::ENOTDIR => Notdir,
        libc::EISDIR => Isdir,
        libc::EINVAL => Inval,
        libc::EFBIG | libc::EOVERFLOW => Fbig,
        libc::ENOSPC => Nospc,
        libc::EROFS => Rofs,
        libc::EMLINK => Mlink,
        libc::ENAMETOOLONG => NameTooLong,
        libc::ENOTEMPTY => NotEmpty,
        libc::EDQUOT => Dquot,
        libc::ESTALE | libc::EBADF => Stale,
        libc::EOPNOTSUPP => NotSupp,
        libc::EAGAIN | libc::EMFILE | libc::ENFILE | libc::ENOMEM => Jukebox,
        // A symbolic link where a directory was needed.
        libc::ELOOP => Notdir,
        _ => ServerFault,
    }
}

/// A name from a request: one path component (RFC 1813 §2.5 leaves the
/// rest to the server): not empty, no '/' or NUL, not "." or "..".
pub fn check_name(name: &Bytes) -> Result<Bytes, NfsStat3> {
    if name.is_empty() {
        return Err(NfsStat3::Noent);
    }
    if name.len() > 255 {
        return Err(NfsStat3::NameTooLong);
    }
    if name.contains(&b'/') || name.contains(&0) {
        return Err(NfsStat3::Inval);
    }
    if &name[..] == b"." || &name[..] == b".." {
        return Err(NfsStat3::Inval);
    }
    Ok(name.clone())
}

/// Decodes a call's arguments, or answers GARBAGE_ARGS (logged, rate
/// limited).
pub fn args<T: Unpack>(call: &mut Call) -> Result<T, Reply> {
    T::unpack(&mut call.args).map_err(|e| {
        if let Some(n) = BAD_LOG.allow() {
            warn!(peer = %call.conn.peer(), "undecodable NFSv3 arguments: {e} ({n} more not logged)");
        }
        Reply::Error(ReplyError::GarbageArgs)
    })
}

impl Ctx {
    /// NFS3ERR_ROFS unless this client's rule lets it change `export`.
    pub fn check_writable(&self, export: u16) -> Result<(), NfsStat3> {
        let e = self.export(export)?;
        match e.rules.rule_for(self.peer.ip()) {
            Some(r) if !r.read_only => Ok(()),
            Some(_) => Err(NfsStat3::Rofs),
            None => Err(NfsStat3::Acces),
        }
    }

    /// Who makes this call's changes, for NFSv4 directory delegations: an
    /// NFSv3 client (every holder is told, or recalled).
    pub fn changer(&self) -> Changer<'_> {
        Changer {
            srv: &self.srv,
            client: crate::conflicts::directories::NFSV3,
        }
    }

    /// The export's `fsid`.
    pub fn fsid(&self, export: u16) -> (u64, u64) {
        self.export(export).map(|e| e.fsid).unwrap_or_default()
    }

    /// Recalls the NFSv4 delegations of `o` a change (or, `reads`, a read)
    /// conflicts with, and waits for their return; NFS3ERR_JUKEBOX when the
    /// wait is over (the client retries later).
    pub async fn settle(&self, o: &Obj, reads: bool) -> Result<(), NfsStat3> {
        let key = (o.export, o.handle.0.clone());
        crate::conflicts::delegations::settle_anyone(&self.srv, &key, reads)
            .await
            .map_err(from_v4)
    }

    /// NFS3ERR_ACCES if a share reservation denies I/O of `access`
    /// (NFSv4's read 1, write 2) on `o`: an NFSv4 open's deny mode, or an
    /// NLM share's (RFC 8881 §9.7 leaves NFSv3 I/O to the server; it
    /// would break what the reservation promises its holder).
    pub fn check_share(&self, o: &Obj, access: u32) -> Result<(), NfsStat3> {
        let st = self.srv.state();
        if st.deny_seen() && st.io_denied_by_share(&(o.export, o.handle.0.clone()), access) {
            return Err(NfsStat3::Acces);
        }
        Ok(())
    }

    /// [`Ctx::settle`] for the object `name` in `dir`, if there is one and
    /// some delegation is held.
    pub async fn settle_name(&self, dir: &Obj, name: &Bytes) -> Result<(), NfsStat3> {
        if !self.srv.state().delegations_outstanding() {
            return Ok(());
        }
        let (h, n) = (dir.handle.clone(), name.clone());
        let found = self
            .vfs(dir.export, move |v, c| Ok(v.lookup(c, &h, &n).ok()))
            .await?;
        match found {
            Some((handle, _)) => {
                let o = Obj {
                    export: dir.export,
                    handle,
                };
                self.settle(&o, false).await
            }
            None => Ok(()),
        }
    }

    /// Makes the data written to `o` stable: through the export's write
    /// log if it holds records of the file, else with a sync grouped with
    /// the other stable requests to the file (NFSv4's too:
    /// `stable::groups`).
    pub async fn make_stable(&self, o: &Obj) -> Result<(), NfsStat3> {
        let e = self.export(o.export)?;
        if let Some(log) = e.log.clone() {
            if log.is_logged(&o.handle) {
                let h = o.handle.clone();
                return match crate::handoff::off_thread_urgent(move || log.barrier(&h)).await {
                    Ok(r) => r.map(|_| ()).map_err(from_errno),
                    Err(_) => Err(NfsStat3::ServerFault),
                };
            }
        }
        let fs = e.vfs.clone();
        let group = self.srv.stable.of(o.export, &o.handle);
        group
            .stable(|| async {
                let h = o.handle.clone();
                match crate::handoff::off_thread_urgent(move || fs.commit(&h)).await {
                    Ok(r) => r.map_err(crate::errors::from_errno),
                    Err(_) => Err(proto::nfs4::NfsStat4::Nfs4errServerfault),
                }
            })
            .await
            .map_err(from_v4)
    }
}

/// The NFSv3 status of an NFSv4 one from shared machinery: NFS4ERR_DELAY
/// (a delegation not returned in time) is NFS3ERR_JUKEBOX.
pub fn from_v4(s: proto::nfs4::NfsStat4) -> NfsStat3 {
    use proto::nfs4::NfsStat4 as S;
    match s {
        S::Nfs4errDelay => NfsStat3::Jukebox,
        S::Nfs4errIo => NfsStat3::Io,
        S::Nfs4errNospc => NfsStat3::Nospc,
        S::Nfs4errDquot => NfsStat3::Dquot,
        S::Nfs4errStale => NfsStat3::Stale,
        _ => NfsStat3::ServerFault,
    }
}

/// `wcc_attr` (RFC 1813 §2.6) of attributes read before a change.
pub fn wcc_attr(a: &vfs::Attr) -> WccAttr {
    let f = fattr3(a, (0, 0));
    WccAttr {
        size: f.size,
        mtime: f.mtime,
        ctime: f.ctime,
    }
}

/// `wcc_data` from attributes before and after a change, where known.
pub fn wcc(before: Option<&vfs::Attr>, after: Option<&vfs::Attr>, fsid: (u64, u64)) -> WccData {
    WccData {
        before: before.map(wcc_attr),
        after: after.map(|a| fattr3(a, fsid)),
    }
}

/// The attributes a `sattr3` sets (RFC 1813 §2.6).
pub fn sattr(s: &Sattr3) -> vfs::SetAttr {
    let time = |t: SetTime3| match t {
        SetTime3::DontChange => None,
        SetTime3::ServerTime => Some(vfs::SetTime::ServerNow),
        SetTime3::ClientTime(t) => Some(vfs::SetTime::Client(vfs::Timespec {
            sec: t.seconds as i64,
            nsec: t.nseconds.min(999_999_999),
        })),
    };
    vfs::SetAttr {
        mode: s.mode.map(|m| m & 0o7777),
        uid: s.uid,
        gid: s.gid,
        size: s.size,
        atime: time(s.atime),
        mtime: time(s.mtime),
        acl: None,
    }
}

/// Attributes before and after a change of a directory, and its result.
pub type Changed<T> = (Option<vfs::Attr>, Option<vfs::Attr>, Result<T, NfsStat3>);

/// Runs a change `f` of the directory `dir` on the blocking pool, reading
/// its attributes before and after (for `wcc_data`). A change the backend
/// refuses still reports the attributes.
pub async fn change_dir<T, F>(cx: &Ctx, dir: &Obj, f: F) -> Changed<T>
where
    T: Send + 'static,
    F: FnOnce(&dyn vfs::Vfs, &vfs::Creds) -> Result<T, NfsStat3> + Send + 'static,
{
    let h = dir.handle.clone();
    let r = cx
        .vfs(dir.export, move |v, c| {
            let before = v.getattr(&h).ok();
            let r = match &before {
                Some(a) if a.ftype != vfs::FileType::Directory => Err(NfsStat3::Notdir),
                Some(_) => f(v, c),
                None => Err(NfsStat3::Stale),
            };
            let after = v.getattr(&h).ok();
            Ok((before, after, r))
        })
        .await;
    match r {
        Ok(x) => x,
        Err(s) => (None, None, Err(s)),
    }
}

/// What a create makes: the object, its attributes, and whether it is new
/// (an UNCHECKED or retried EXCLUSIVE CREATE may find it there).
pub type Made = (vfs::Handle, vfs::Attr, bool);

/// CREATE, MKDIR, SYMLINK and MKNOD: makes `name` in `where_`'s directory
/// with `f` (on the blocking pool), after the NFSv4 directory delegations
/// a new entry conflicts with are settled, and tells those that asked.
pub async fn create_in<F>(cx: &Ctx, where_: &DirOpArgs3, f: F) -> Create3Res
where
    F: FnOnce(&dyn vfs::Vfs, &vfs::Creds, &vfs::Handle, &Bytes) -> Result<Made, NfsStat3>
        + Send
        + 'static,
{
    let fail = |s, dir_wcc| Res3::Fail(s, DirWcc3 { dir_wcc });
    let dir = match cx.obj(&where_.dir) {
        Ok(d) => d,
        Err(s) => return fail(s, WccData::default()),
    };
    let fsid = cx.fsid(dir.export);
    let name = match check_name(&where_.name).and_then(|n| {
        cx.check_writable(dir.export)?;
        Ok(n)
    }) {
        Ok(n) => n,
        Err(s) => return fail(s, WccData::default()),
    };
    let key = (dir.export, dir.handle.0.clone());
    let who = cx.changer();
    if let Err(s) = crate::conflicts::directories::settle(who, &key, NotifyType4::AddEntry).await {
        return fail(from_v4(s), WccData::default());
    }
    let _order = crate::conflicts::directories::order(who, &[&key]).await;
    let (h, n) = (dir.handle.clone(), name.clone());
    let (before, after, r) = change_dir(cx, &dir, move |v, c| f(v, c, &h, &n)).await;
    let dir_wcc = wcc(before.as_ref(), after.as_ref(), fsid);
    match r {
        Ok((handle, a, created)) => {
            if created {
                crate::conflicts::directories::added(who, &key, &name);
            }
            Res3::Ok(Create3ResOk {
                obj: Some(cx.fh(dir.export, handle, &a, Some(&dir.handle))),
                obj_attributes: Some(fattr3(&a, fsid)),
                dir_wcc,
            })
        }
        Err(s) => fail(s, dir_wcc),
    }
}

use proto::nfs4::NotifyType4;

/// REMOVE (`dir` false) and RMDIR (`dir` true) of `what`: the object's
/// NFSv4 delegations are recalled, the directory's delegations told (the
/// entry named with its READDIR cookie, found before).
pub async fn remove_entry(cx: &Ctx, what: &DirOpArgs3, dir: bool) -> Res3<DirWcc3, DirWcc3> {
    let fail = |s, dir_wcc| Res3::Fail(s, DirWcc3 { dir_wcc });
    let parent = match cx.obj(&what.dir) {
        Ok(d) => d,
        Err(s) => return fail(s, WccData::default()),
    };
    let name = match check_name(&what.name).and_then(|n| {
        cx.check_writable(parent.export)?;
        Ok(n)
    }) {
        Ok(n) => n,
        Err(s) => return fail(s, WccData::default()),
    };
    if let Err(s) = cx.settle_name(&parent, &name).await {
        return fail(s, WccData::default());
    }
    let key = (parent.export, parent.handle.0.clone());
    let who = cx.changer();
    let kind = NotifyType4::RemoveEntry;
    if let Err(s) = crate::conflicts::directories::settle(who, &key, kind).await {
        return fail(from_v4(s), WccData::default());
    }
    let _order = crate::conflicts::directories::order(who, &[&key]).await;
    let cookie = crate::conflicts::directories::cookie_of(who, &key, &name, kind).await;
    let fsid = cx.fsid(parent.export);
    let (h, n) = (parent.handle.clone(), name.clone());
    let (srv, export) = (cx.srv.clone(), parent.export);
    let (before, after, r) = change_dir(cx, &parent, move |v, c| {
        let (_, a) = v.lookup(c, &h, &n).map_err(from_errno)?;
        match (a.ftype == vfs::FileType::Directory, dir) {
            (true, false) => return Err(NfsStat3::Isdir),
            (false, true) => return Err(NfsStat3::Notdir),
            _ => {}
        }
        // A file NFSv4 clients hold open stays theirs.
        v.remove_keeping(c, &h, &n, &crate::conflicts::unlinked::keeper(&srv, export))
            .map_err(from_errno)
    })
    .await;
    let dir_wcc = wcc(before.as_ref(), after.as_ref(), fsid);
    match r {
        Ok(()) => {
            crate::conflicts::directories::removed(who, &key, &name, cookie);
            Res3::Ok(DirWcc3 { dir_wcc })
        }
        Err(s) => fail(s, dir_wcc),
    }
}
