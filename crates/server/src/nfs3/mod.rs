//! NFS version 3 (RFC 1813) beside NFSv4, on the same port, over the same
//! exports, rules and backends. Filehandles are NFSv4's
//! ([`crate::nfs4::filehandle`]: persistent, bound to their export's root,
//! authenticated), made without the parent hint so that they fit
//! NFS3_FHSIZE (64 bytes); the pseudo filesystem does not exist here: the
//! MOUNT protocol ([`crate::mount`]) hands out each export's root.
//!
//! One procedure per file in `procs`; this module holds what they share:
//! the call's context (the client's address and credential, the export's
//! rule for it), backend calls on the blocking pool, and the conversions
//! of attributes and errors.
//!
//! First step of issue 13: the procedures that read (GETATTR, LOOKUP,
//! ACCESS, READLINK, READ, READDIR, READDIRPLUS, FSSTAT, FSINFO,
//! PATHCONF). The others answer NFS3ERR_NOTSUPP for now.

pub mod procs;

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use proto::nfs3::*;
use rpc::{Call, Reply, ReplyError, ReplyFuture, Service};
use tracing::warn;
use xdr::Unpack;

use crate::export::{Export, Flavor};
use crate::nfs4::filehandle::FhTarget;
use crate::nfs4::Nfs4Server;

/// Bad requests logged at most this often.
static BAD_LOG: rpc::RateLimit = rpc::RateLimit::per_secs(10);

/// The NFSv3 program's service, on the server NFSv4 runs.
pub struct Nfs3Service(pub Arc<Nfs4Server>);

/// One NFSv3 call: the server, the caller's credential and address.
pub struct Ctx {
    pub srv: Arc<Nfs4Server>,
    pub auth: rpc::Auth,
    pub peer: SocketAddr,
}

/// An object a filehandle names: its export and backend handle.
#[derive(Debug, Clone)]
pub struct Obj {
    pub export: u16,
    pub handle: vfs::Handle,
}

impl Ctx {
    /// The export `id`.
    pub fn export(&self, id: u16) -> Result<&Export, NfsStat3> {
        self.srv.export(id).ok_or(NfsStat3::Stale)
    }

    /// The object `fh` names, if this server minted it for an export the
    /// caller may use.
    pub fn obj(&self, fh: &NfsFh3) -> Result<Obj, NfsStat3> {
        match self.srv.fh.decode(&fh.data) {
            Ok(FhTarget::Object { export, handle, .. }) => {
                self.creds(export)?;
                Ok(Obj { export, handle })
            }
            Ok(FhTarget::Pseudo(_)) => Err(NfsStat3::BadHandle),
            Err(crate::nfs4::filehandle::FhError::Stale) => Err(NfsStat3::Stale),
            Err(_) => Err(NfsStat3::BadHandle),
        }
    }

    /// The filehandle of `handle` in `export`.
    pub fn fh(&self, export: u16, handle: vfs::Handle) -> NfsFh3 {
        NfsFh3 {
            data: self.srv.fh.encode(&FhTarget::Object {
                export,
                handle,
                parent: None,
            }),
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
        if !e.rules.allows(Flavor::of(&self.auth)) {
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
        match crate::nfs4::compound::off_thread(move || f(fs.as_ref(), &creds)).await {
            Ok(r) => r.map_err(from_errno),
            Err(e) => {
                warn!("backend call failed: {e}");
                Err(NfsStat3::ServerFault)
            }
        }
    }

    /// The attributes of `o` for a reply's `post_op_attr`: none when they
    /// cannot be had (RFC 1813 §2.6).
    pub async fn post_op(&self, o: &Obj) -> PostOpAttr {
        let h = o.handle.clone();
        let fsid = self.export(o.export).ok()?.fsid;
        let a = self.vfs(o.export, move |v, _| v.getattr(&h)).await.ok()?;
        Some(fattr3(&a, fsid))
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
        libc::EAGAIN => Jukebox,
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

impl Service for Nfs3Service {
    fn call(&self, mut call: Call) -> ReplyFuture {
        let cx = Ctx {
            srv: self.0.clone(),
            auth: call.auth.clone(),
            peer: call.conn.peer(),
        };
        Box::pin(async move { procs::run(&cx, &mut call).await })
    }
}

/// The NFS program, both versions: 3 here, 4 to NFSv4.
pub struct NfsVersions {
    pub v3: Nfs3Service,
    pub v4: crate::nfs4::Nfs4Service,
}

impl Service for NfsVersions {
    fn call(&self, call: Call) -> ReplyFuture {
        if call.vers == NFS_V3 {
            self.v3.call(call)
        } else {
            self.v4.call(call)
        }
    }

    fn disconnected(&self, conn: &Arc<rpc::Connection>) {
        self.v4.disconnected(conn);
    }
}
