//! Ferrite's userspace NFSv3 client (RFC 1813), for benchmarks and tests.
//!
//! [`Client::connect`] asks the MOUNT server for the export's root file
//! handle (MNT over TCP, [`mount`]) and opens one TCP connection to the
//! NFS server. Every method sends one procedure; any number may be in
//! flight at once on the connection (clone the client, or join futures).
//! Each call is counted per procedure in [`Stats3`] (calls, errors, bytes,
//! round-trip times).
//!
//! A status other than NFS3_OK is an [`Error::Status`]. Nothing is retried:
//! NFS3ERR_JUKEBOX reaches the caller like any other status.

mod error;
pub mod mount;
pub mod nlm;
mod stats;

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use bytes::Bytes;
use proto::nfs3::*;
use rpc::{Connection, OpaqueAuth};
use xdr::{Decoder, Encoder, Pack, Unpack};

pub use error::{proc_name, Error, Result};
pub use stats::{ProcStats, Stats3};

use stats::StatsTable;

use crate::observe::{CallInfo, Observer};

/// READDIR `count` and READDIRPLUS `maxcount` asked for by
/// [`Client::readdir`] and [`Client::readdirplus`].
pub const READDIR_MAXCOUNT: u32 = 64 * 1024;
/// READDIRPLUS `dircount` asked for by [`Client::readdirplus`].
pub const READDIR_DIRCOUNT: u32 = 16 * 1024;

/// An object made by CREATE, MKDIR, SYMLINK or MKNOD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Created {
    pub fh: NfsFh3,
    pub attrs: PostOpAttr,
    pub dir_wcc: WccData,
}

/// An NFSv3 client on one connection. Cheap to clone; clones share the
/// connection and the statistics.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    conn: Arc<Connection>,
    auth: rpc::Auth,
    cred: OpaqueAuth,
    root: NfsFh3,
    auth_flavors: Vec<u32>,
    mount_addr: Option<SocketAddr>,
    export: String,
    stats: StatsTable,
    observer: OnceLock<Observer>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.conn.close();
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("v3::Client")
            .field("conn", &self.inner.conn)
            .field("export", &self.inner.export)
            .finish()
    }
}

/// Splits a path into its components, skipping empty ones and `.`.
fn components(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|c| !c.is_empty() && *c != ".")
}

fn diropargs(dir: &NfsFh3, name: &str) -> DirOpArgs3 {
    DirOpArgs3 {
        dir: dir.clone(),
        name: Bytes::copy_from_slice(name.as_bytes()),
    }
}

impl Client {
    /// Mounts `export_path` from the MOUNT server at `mount_addr` and
    /// connects to the NFS server at `nfs_addr`, sending `auth` with every
    /// call.
    pub async fn connect(
        nfs_addr: SocketAddr,
        mount_addr: SocketAddr,
        export_path: &str,
        auth: rpc::Auth,
    ) -> Result<Client> {
        Self::connect_with(
            nfs_addr,
            mount_addr,
            export_path,
            auth,
            rpc::ConnConfig::default(),
        )
        .await
    }

    /// [`Client::connect`] with explicit connection limits.
    pub async fn connect_with(
        nfs_addr: SocketAddr,
        mount_addr: SocketAddr,
        export_path: &str,
        auth: rpc::Auth,
        cfg: rpc::ConnConfig,
    ) -> Result<Client> {
        let m = mount::mnt(mount_addr, export_path, &auth).await?;
        let conn = rpc::connect(nfs_addr, None, cfg).await?;
        Ok(Self::new(
            conn,
            auth,
            NfsFh3 { data: m.fhandle.0 },
            m.auth_flavors,
            Some(mount_addr),
            export_path,
        ))
    }

    /// A client on an existing connection, starting from a root handle
    /// obtained elsewhere (no MOUNT involved).
    pub fn from_handle(conn: Arc<Connection>, root: NfsFh3, auth: rpc::Auth) -> Client {
        Self::new(conn, auth, root, Vec::new(), None, "")
    }

    fn new(
        conn: Arc<Connection>,
        auth: rpc::Auth,
        root: NfsFh3,
        auth_flavors: Vec<u32>,
        mount_addr: Option<SocketAddr>,
        export: &str,
    ) -> Client {
        Client {
            inner: Arc::new(Inner {
                conn,
                cred: auth.to_opaque(),
                auth,
                root,
                auth_flavors,
                mount_addr,
                export: export.to_owned(),
                stats: StatsTable::default(),
                observer: OnceLock::new(),
            }),
        }
    }

    /// The export's root file handle, from MNT.
    pub fn root(&self) -> &NfsFh3 {
        &self.inner.root
    }

    /// The authentication flavors MNT said the export accepts.
    pub fn auth_flavors(&self) -> &[u32] {
        &self.inner.auth_flavors
    }

    /// The NFS connection.
    pub fn connection(&self) -> &Arc<Connection> {
        &self.inner.conn
    }

    /// The credential sent with every call.
    pub fn cred(&self) -> &OpaqueAuth {
        &self.inner.cred
    }

    /// A snapshot of the per-procedure statistics.
    pub fn stats(&self) -> Stats3 {
        self.inner.stats.snapshot()
    }

    /// Sets the observer told of every counted call (once per client;
    /// later calls are ignored and return false).
    pub fn set_observer(&self, o: Observer) -> bool {
        self.inner.observer.set(o).is_ok()
    }

    fn observe(
        &self,
        proc_: u32,
        args_len: usize,
        results_len: usize,
        rtt: std::time::Duration,
        ok: bool,
    ) {
        if let Some(o) = self.inner.observer.get() {
            o(&CallInfo {
                program: NFS_PROGRAM,
                proc_,
                args_len: args_len as u64,
                results_len: results_len as u64,
                rtt,
                ok,
            });
        }
    }

    /// Zeroes the statistics.
    pub fn reset_stats(&self) {
        self.inner.stats.reset()
    }

    /// UMNT of the export (when the client was made by [`Client::connect`])
    /// and closes the NFS connection.
    pub async fn unmount(&self) -> Result<()> {
        let r = match self.inner.mount_addr {
            Some(addr) => mount::umnt(addr, &self.inner.export, &self.inner.auth).await,
            None => Ok(()),
        };
        self.inner.conn.close();
        r
    }

    /// Sends procedure `proc_` with pre-encoded arguments and returns the
    /// decoder at its results. Not counted in the statistics.
    pub async fn call_raw(&self, proc_: u32, args: Vec<Bytes>) -> Result<Decoder> {
        Ok(self
            .inner
            .conn
            .call(NFS_PROGRAM, NFS_V3, proc_, &self.inner.cred, args)
            .await?)
    }

    /// Sends procedure `proc_` and decodes its result as `R`, counting it.
    pub async fn call<A: Pack, R: Unpack>(&self, proc_: u32, args: &A) -> Result<R> {
        let mut e = Encoder::new();
        args.pack(&mut e);
        let sent = e.len();
        let stats = &self.inner.stats;
        let started = Instant::now();
        let reply = self
            .inner
            .conn
            .call(NFS_PROGRAM, NFS_V3, proc_, &self.inner.cred, e.finish())
            .await;
        let rtt = started.elapsed();
        let mut d = match reply {
            Ok(d) => d,
            Err(err) => {
                stats.record(proc_, sent, 0, rtt);
                stats.error(proc_);
                self.observe(proc_, sent, 0, rtt, false);
                return Err(err.into());
            }
        };
        let received = d.remaining();
        stats.record(proc_, sent, received, rtt);
        // Every result but NULL's starts with its nfsstat3 (RFC 1813 §3.3).
        let status_ok = proc_ == NFSPROC3_NULL || d.clone().u32().is_ok_and(|s| s == 0);
        let r = R::unpack(&mut d).map_err(|err| {
            stats.error(proc_);
            Error::Xdr(err)
        });
        self.observe(proc_, sent, received, rtt, r.is_ok() && status_ok);
        r
    }

    /// [`Client::call`] for a `Res3`: the OK arm, or [`Error::Status`].
    async fn call_ok<A: Pack, T: Unpack, F: Unpack>(&self, proc_: u32, args: &A) -> Result<T> {
        match self.call::<A, Res3<T, F>>(proc_, args).await? {
            Res3::Ok(v) => Ok(v),
            Res3::Fail(status, _) => {
                self.inner.stats.error(proc_);
                Err(Error::Status { proc_, status })
            }
        }
    }

    /// NFSPROC3_NULL.
    pub async fn null(&self) -> Result<()> {
        self.call(NFSPROC3_NULL, &()).await
    }

    /// NFSPROC3_GETATTR.
    pub async fn getattr(&self, fh: &NfsFh3) -> Result<Fattr3> {
        let ok: GetAttr3ResOk = self
            .call_ok::<_, _, ()>(NFSPROC3_GETATTR, &GetAttr3Args { object: fh.clone() })
            .await?;
        Ok(ok.obj_attributes)
    }

    /// NFSPROC3_SETATTR, optionally guarded by the object's ctime.
    pub async fn setattr(&self, fh: &NfsFh3, attrs: Sattr3, guard: SattrGuard3) -> Result<WccData> {
        let ok: SetAttr3ResBody = self
            .call_ok::<_, _, SetAttr3ResBody>(
                NFSPROC3_SETATTR,
                &SetAttr3Args {
                    object: fh.clone(),
                    new_attributes: attrs,
                    guard,
                },
            )
            .await?;
        Ok(ok.obj_wcc)
    }

    /// NFSPROC3_LOOKUP of one name in `dir`.
    pub async fn lookup(&self, dir: &NfsFh3, name: &str) -> Result<Lookup3ResOk> {
        self.call_ok::<_, _, Lookup3ResFail>(
            NFSPROC3_LOOKUP,
            &Lookup3Args {
                what: diropargs(dir, name),
            },
        )
        .await
    }

    /// LOOKUPs each component of a `/`-separated path from the root (empty
    /// components and `.` are skipped; `..` is sent as a name).
    pub async fn lookup_path(&self, path: &str) -> Result<NfsFh3> {
        let mut fh = self.inner.root.clone();
        for c in components(path) {
            fh = self.lookup(&fh, c).await?.object;
        }
        Ok(fh)
    }

    /// NFSPROC3_ACCESS: which of the `ACCESS3_*` bits in `access` are
    /// granted.
    pub async fn access(&self, fh: &NfsFh3, access: u32) -> Result<u32> {
        let ok: Access3ResOk = self
            .call_ok::<_, _, ObjAttrFail3>(
                NFSPROC3_ACCESS,
                &Access3Args {
                    object: fh.clone(),
                    access,
                },
            )
            .await?;
        Ok(ok.access)
    }

    /// NFSPROC3_READLINK.
    pub async fn readlink(&self, fh: &NfsFh3) -> Result<Bytes> {
        let ok: ReadLink3ResOk = self
            .call_ok::<_, _, ObjAttrFail3>(
                NFSPROC3_READLINK,
                &ReadLink3Args {
                    symlink: fh.clone(),
                },
            )
            .await?;
        Ok(ok.data)
    }

    /// NFSPROC3_READ of up to `count` bytes at `offset`.
    pub async fn read(&self, fh: &NfsFh3, offset: u64, count: u32) -> Result<Read3ResOk> {
        self.call_ok::<_, _, ObjAttrFail3>(
            NFSPROC3_READ,
            &Read3Args {
                file: fh.clone(),
                offset,
                count,
            },
        )
        .await
    }

    /// NFSPROC3_WRITE of `data` at `offset`. The server may write less
    /// (`count` in the result) and may commit less durably than asked
    /// (`committed`).
    pub async fn write(
        &self,
        fh: &NfsFh3,
        offset: u64,
        data: Bytes,
        stable: StableHow,
    ) -> Result<Write3ResOk> {
        let count = u32::try_from(data.len())
            .map_err(|_| Error::Unexpected(format!("WRITE of {} bytes", data.len())))?;
        self.call_ok::<_, _, FileWccFail3>(
            NFSPROC3_WRITE,
            &Write3Args {
                file: fh.clone(),
                offset,
                count,
                stable,
                data,
            },
        )
        .await
    }

    /// NFSPROC3_COMMIT of `count` bytes at `offset` (0, 0: the whole file).
    pub async fn commit(&self, fh: &NfsFh3, offset: u64, count: u32) -> Result<Commit3ResOk> {
        self.call_ok::<_, _, FileWccFail3>(
            NFSPROC3_COMMIT,
            &Commit3Args {
                file: fh.clone(),
                offset,
                count,
            },
        )
        .await
    }

    /// The handle of a new object: from the reply, or by LOOKUP when the
    /// server left it out (RFC 1813 §3.3.8 allows that).
    async fn created(&self, dir: &NfsFh3, name: &str, ok: Create3ResOk) -> Result<Created> {
        let (fh, attrs) = match ok.obj {
            Some(fh) => (fh, ok.obj_attributes),
            None => {
                let l = self.lookup(dir, name).await?;
                (l.object, l.obj_attributes.or(ok.obj_attributes))
            }
        };
        Ok(Created {
            fh,
            attrs,
            dir_wcc: ok.dir_wcc,
        })
    }

    /// NFSPROC3_CREATE of a regular file: UNCHECKED, GUARDED (fails with
    /// NFS3ERR_EXIST if the name exists) or EXCLUSIVE (with a verifier).
    pub async fn create(&self, dir: &NfsFh3, name: &str, how: CreateHow3) -> Result<Created> {
        let ok = self
            .call_ok::<_, _, DirWcc3>(
                NFSPROC3_CREATE,
                &Create3Args {
                    where_: diropargs(dir, name),
                    how,
                },
            )
            .await?;
        self.created(dir, name, ok).await
    }

    /// NFSPROC3_MKDIR.
    pub async fn mkdir(&self, dir: &NfsFh3, name: &str, attrs: Sattr3) -> Result<Created> {
        let ok = self
            .call_ok::<_, _, DirWcc3>(
                NFSPROC3_MKDIR,
                &MkDir3Args {
                    where_: diropargs(dir, name),
                    attributes: attrs,
                },
            )
            .await?;
        self.created(dir, name, ok).await
    }

    /// NFSPROC3_SYMLINK: `name` in `dir` pointing at `target`.
    pub async fn symlink(
        &self,
        dir: &NfsFh3,
        name: &str,
        target: &str,
        attrs: Sattr3,
    ) -> Result<Created> {
        let ok = self
            .call_ok::<_, _, DirWcc3>(
                NFSPROC3_SYMLINK,
                &Symlink3Args {
                    where_: diropargs(dir, name),
                    symlink: SymlinkData3 {
                        symlink_attributes: attrs,
                        symlink_data: Bytes::copy_from_slice(target.as_bytes()),
                    },
                },
            )
            .await?;
        self.created(dir, name, ok).await
    }

    /// NFSPROC3_MKNOD.
    pub async fn mknod(&self, dir: &NfsFh3, name: &str, what: MknodData3) -> Result<Created> {
        let ok = self
            .call_ok::<_, _, DirWcc3>(
                NFSPROC3_MKNOD,
                &Mknod3Args {
                    where_: diropargs(dir, name),
                    what,
                },
            )
            .await?;
        self.created(dir, name, ok).await
    }

    /// NFSPROC3_REMOVE of a non-directory.
    pub async fn remove(&self, dir: &NfsFh3, name: &str) -> Result<WccData> {
        let ok: DirWcc3 = self
            .call_ok::<_, _, DirWcc3>(
                NFSPROC3_REMOVE,
                &Remove3Args {
                    object: diropargs(dir, name),
                },
            )
            .await?;
        Ok(ok.dir_wcc)
    }

    /// NFSPROC3_RMDIR.
    pub async fn rmdir(&self, dir: &NfsFh3, name: &str) -> Result<WccData> {
        let ok: DirWcc3 = self
            .call_ok::<_, _, DirWcc3>(
                NFSPROC3_RMDIR,
                &RmDir3Args {
                    object: diropargs(dir, name),
                },
            )
            .await?;
        Ok(ok.dir_wcc)
    }

    /// NFSPROC3_RENAME.
    pub async fn rename(
        &self,
        from_dir: &NfsFh3,
        from: &str,
        to_dir: &NfsFh3,
        to: &str,
    ) -> Result<Rename3ResBody> {
        self.call_ok::<_, _, Rename3ResBody>(
            NFSPROC3_RENAME,
            &Rename3Args {
                from: diropargs(from_dir, from),
                to: diropargs(to_dir, to),
            },
        )
        .await
    }

    /// NFSPROC3_LINK: a new name `name` in `dir` for `file`.
    pub async fn link(&self, file: &NfsFh3, dir: &NfsFh3, name: &str) -> Result<Link3ResBody> {
        self.call_ok::<_, _, Link3ResBody>(
            NFSPROC3_LINK,
            &Link3Args {
                file: file.clone(),
                link: diropargs(dir, name),
            },
        )
        .await
    }

    /// One NFSPROC3_READDIR request.
    pub async fn readdir_page(
        &self,
        dir: &NfsFh3,
        cookie: Cookie3,
        cookieverf: CookieVerf3,
        count: u32,
    ) -> Result<ReadDir3ResOk> {
        self.call_ok::<_, _, DirAttrFail3>(
            NFSPROC3_READDIR,
            &ReadDir3Args {
                dir: dir.clone(),
                cookie,
                cookieverf,
                count,
            },
        )
        .await
    }

    /// Every entry of `dir` (including `.` and `..` if the server lists
    /// them), READDIR after READDIR, following the cookies to eof.
    pub async fn readdir(&self, dir: &NfsFh3) -> Result<Vec<Entry3>> {
        self.readdir_all(dir, READDIR_MAXCOUNT).await
    }

    /// [`Client::readdir`] asking for `count` bytes a request.
    pub async fn readdir_all(&self, dir: &NfsFh3, count: u32) -> Result<Vec<Entry3>> {
        let (mut cookie, mut verf) = (0, [0; NFS3_COOKIEVERFSIZE]);
        let mut all = Vec::new();
        loop {
            let page = self.readdir_page(dir, cookie, verf, count).await?;
            verf = page.cookieverf;
            let eof = page.reply.eof;
            let entries = page.reply.entries.0;
            match entries.last() {
                Some(last) => cookie = last.cookie,
                None if !eof => {
                    return Err(Error::Unexpected("READDIR: no entries and not eof".into()))
                }
                None => {}
            }
            all.extend(entries);
            if eof {
                return Ok(all);
            }
        }
    }

    /// One NFSPROC3_READDIRPLUS request.
    pub async fn readdirplus_page(
        &self,
        dir: &NfsFh3,
        cookie: Cookie3,
        cookieverf: CookieVerf3,
        dircount: u32,
        maxcount: u32,
    ) -> Result<ReadDirPlus3ResOk> {
        self.call_ok::<_, _, DirAttrFail3>(
            NFSPROC3_READDIRPLUS,
            &ReadDirPlus3Args {
                dir: dir.clone(),
                cookie,
                cookieverf,
                dircount,
                maxcount,
            },
        )
        .await
    }

    /// Every entry of `dir` with attributes and handles, READDIRPLUS after
    /// READDIRPLUS, following the cookies to eof.
    pub async fn readdirplus(&self, dir: &NfsFh3) -> Result<Vec<EntryPlus3>> {
        self.readdirplus_all(dir, READDIR_DIRCOUNT, READDIR_MAXCOUNT)
            .await
    }

    /// [`Client::readdirplus`] asking for `dircount` and `maxcount` bytes a
    /// request.
    pub async fn readdirplus_all(
        &self,
        dir: &NfsFh3,
        dircount: u32,
        maxcount: u32,
    ) -> Result<Vec<EntryPlus3>> {
        let (mut cookie, mut verf) = (0, [0; NFS3_COOKIEVERFSIZE]);
        let mut all = Vec::new();
        loop {
            let page = self
                .readdirplus_page(dir, cookie, verf, dircount, maxcount)
                .await?;
            verf = page.cookieverf;
            let eof = page.reply.eof;
            let entries = page.reply.entries.0;
            match entries.last() {
                Some(last) => cookie = last.cookie,
                None if !eof => {
                    return Err(Error::Unexpected(
                        "READDIRPLUS: no entries and not eof".into(),
                    ))
                }
                None => {}
            }
            all.extend(entries);
            if eof {
                return Ok(all);
            }
        }
    }

    /// NFSPROC3_FSSTAT.
    pub async fn fsstat(&self, fh: &NfsFh3) -> Result<FsStat3ResOk> {
        self.call_ok::<_, _, ObjAttrFail3>(NFSPROC3_FSSTAT, &FsRoot3Args { fsroot: fh.clone() })
            .await
    }

    /// NFSPROC3_FSINFO: transfer sizes and properties.
    pub async fn fsinfo(&self, fh: &NfsFh3) -> Result<FsInfo3ResOk> {
        self.call_ok::<_, _, ObjAttrFail3>(NFSPROC3_FSINFO, &FsRoot3Args { fsroot: fh.clone() })
            .await
    }

    /// NFSPROC3_PATHCONF.
    pub async fn pathconf(&self, fh: &NfsFh3) -> Result<PathConf3ResOk> {
        self.call_ok::<_, _, ObjAttrFail3>(NFSPROC3_PATHCONF, &PathConf3Args { object: fh.clone() })
            .await
    }
}

#[cfg(test)]
mod tests;
