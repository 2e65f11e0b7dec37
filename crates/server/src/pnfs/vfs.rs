//! The metadata server's own I/O on a pNFS export: a [`Vfs`] over the
//! export's local directory whose regular files' bytes live in their
//! data files on the data servers ([`super::Pnfs`]). Names, attributes,
//! directories, links and permissions are the local directory's; the
//! local file is sparse and keeps the size and times, which reads are
//! cut to and writes move on. So a client with no layout (NFSv3, NFSv4
//! without pNFS) reads and writes the same bytes as one writing to the
//! data servers under a layout. Calls to data servers block the calling
//! thread (a blocking-pool thread; never the async reactor's: every
//! `_nowait` answer of a regular file's data is `None`).

use std::sync::Arc;

use bytes::Bytes;
use proto::nfs3::StableHow;
use vfs::*;

use super::Pnfs;

/// A pNFS export's backend: `inner` for everything but regular files'
/// data, which is on the data servers.
pub struct DataVfs {
    inner: Arc<dyn Vfs>,
    pub pnfs: Arc<Pnfs>,
}

impl DataVfs {
    pub fn new(inner: Arc<dyn Vfs>, pnfs: Arc<Pnfs>) -> DataVfs {
        DataVfs { inner, pnfs }
    }

    /// The local directory's backend (sizes and times the metadata
    /// server keeps: LAYOUTCOMMIT sets them there).
    pub fn inner(&self) -> &Arc<dyn Vfs> {
        &self.inner
    }

    fn ds<T: Send + 'static>(
        &self,
        f: impl std::future::Future<Output = std::result::Result<T, super::dataserver::DsError>>
            + Send
            + 'static,
    ) -> Result<T> {
        match self.pnfs.block_on(f) {
            Some(Ok(v)) => Ok(v),
            Some(Err(e)) => Err(e.errno()),
            None => Err(Errno(libc::EIO)),
        }
    }

    fn regular(&self, h: &Handle) -> Result<Attr> {
        let a = self.inner.getattr(h)?;
        match a.ftype {
            FileType::Regular => Ok(a),
            FileType::Directory => Err(Errno(libc::EISDIR)),
            _ => Err(Errno(libc::EINVAL)),
        }
    }

    /// Removes the data files of `h` if `attr` was its last link.
    fn forget_if_last(&self, h: &Handle, attr: &Attr) {
        if attr.ftype == FileType::Regular && attr.nlink <= 1 {
            let (p, key) = (self.pnfs.clone(), h.0.clone());
            let _ = self.pnfs.block_on(async move { p.remove(&key).await });
        }
    }
}

fn stability(s: StableHow) -> Stability {
    match s {
        StableHow::Unstable => Stability::Unstable,
        StableHow::DataSync => Stability::DataSync,
        StableHow::FileSync => Stability::FileSync,
    }
}

impl Vfs for DataVfs {
    fn root(&self) -> Handle {
        self.inner.root()
    }
    fn root_identity(&self) -> Bytes {
        self.inner.root_identity()
    }
    fn describe(&self) -> String {
        let servers: Vec<String> = self
            .pnfs
            .servers
            .iter()
            .map(|s| s.addr.to_string())
            .collect();
        format!(
            "{} (pNFS: data on {}, stripe unit {}, {} mirror(s))",
            self.inner.describe(),
            servers.join(","),
            self.pnfs.geometry.stripe_unit,
            self.pnfs.geometry.mirrors
        )
    }
    fn note_parent(&self, h: &Handle, parent: &Handle) {
        self.inner.note_parent(h, parent)
    }
    fn wants_parent_hints(&self) -> bool {
        self.inner.wants_parent_hints()
    }
    fn getattr(&self, h: &Handle) -> Result<Attr> {
        self.inner.getattr(h)
    }
    fn getattr_nowait(&self, h: &Handle) -> Option<Result<Attr>> {
        self.inner.getattr_nowait(h)
    }
    fn lookup(&self, c: &Creds, dir: &Handle, name: &[u8]) -> Result<(Handle, Attr)> {
        self.inner.lookup(c, dir, name)
    }
    fn lookup_nowait(
        &self,
        c: &Creds,
        dir: &Handle,
        name: &[u8],
    ) -> Option<Result<(Handle, Attr)>> {
        self.inner.lookup_nowait(c, dir, name)
    }
    fn lookup_parent(&self, c: &Creds, dir: &Handle) -> Result<(Handle, Attr)> {
        self.inner.lookup_parent(c, dir)
    }
    fn lookup_parent_nowait(&self, c: &Creds, dir: &Handle) -> Option<Result<(Handle, Attr)>> {
        self.inner.lookup_parent_nowait(c, dir)
    }
    fn access(&self, c: &Creds, h: &Handle, mask: i32) -> Result<bool> {
        self.inner.access(c, h, mask)
    }
    fn access_nowait(&self, c: &Creds, h: &Handle, mask: i32) -> Option<Result<bool>> {
        self.inner.access_nowait(c, h, mask)
    }

    /// A size change reaches the data files first (a truncation must not
    /// leave old bytes to reappear when the file grows again).
    fn setattr(&self, c: &Creds, h: &Handle, set: &SetAttr) -> Result<Attr> {
        if let Some(size) = set.size {
            self.regular(h)?;
            if !self.inner.access(c, h, libc::W_OK)? && c.uid != 0 {
                return Err(Errno(libc::EACCES));
            }
            let (p, key) = (self.pnfs.clone(), h.0.clone());
            self.ds(async move { p.truncate(&key, size).await })?;
        }
        self.inner.setattr(c, h, set)
    }

    fn read(&self, c: &Creds, h: &Handle, offset: u64, count: u32) -> Result<(Bytes, bool)> {
        let a = self.regular(h)?;
        if !self.inner.access(c, h, libc::R_OK)? && c.uid != a.uid {
            return Err(Errno(libc::EACCES));
        }
        if offset >= a.size {
            return Ok((Bytes::new(), true));
        }
        let (p, key, size) = (self.pnfs.clone(), h.0.clone(), a.size);
        let data = self.ds(async move { p.read(&key, offset, count, size).await })?;
        let eof = offset + data.len() as u64 >= a.size;
        Ok((Bytes::from(data), eof))
    }

    fn write(
        &self,
        c: &Creds,
        h: &Handle,
        offset: u64,
        data: &[u8],
        stable: Stability,
    ) -> Result<Stability> {
        let a = self.regular(h)?;
        if !range_fits(offset, data.len() as u64) {
            return Err(Errno(libc::EFBIG));
        }
        if !self.inner.access(c, h, libc::W_OK)? && c.uid != a.uid {
            return Err(Errno(libc::EACCES));
        }
        if data.is_empty() {
            return Ok(stable);
        }
        // FILE_SYNC whatever was asked: the write verifier clients see is
        // the metadata server's, which does not change when a data server
        // restarts and loses unstable data, so nothing is left for a
        // COMMIT to find lost.
        let _ = stable;
        let (p, key, buf) = (self.pnfs.clone(), h.0.clone(), Bytes::copy_from_slice(data));
        let done = self.ds(async move { p.write(&key, offset, buf, StableHow::FileSync).await })?;
        let end = offset + data.len() as u64;
        let mut set = SetAttr {
            mtime: Some(SetTime::ServerNow),
            ..SetAttr::default()
        };
        if end > a.size {
            set.size = Some(end);
        }
        self.inner.setattr(&Creds::root(), h, &set)?;
        Ok(stability(done))
    }

    fn commit(&self, h: &Handle) -> Result<()> {
        if self.inner.getattr(h)?.ftype != FileType::Regular {
            return self.inner.commit(h);
        }
        let (p, key) = (self.pnfs.clone(), h.0.clone());
        self.ds(async move { p.commit(&key).await })?;
        self.inner.commit(h)
    }

    fn create_file(
        &self,
        c: &Creds,
        dir: &Handle,
        name: &[u8],
        how: CreateMode,
        set: &SetAttr,
    ) -> Result<(Handle, Attr, bool)> {
        let (h, attr, created) = self.inner.create_file(c, dir, name, how, set)?;
        // An existing file opened with a size (O_TRUNC): its data files
        // too.
        if let (false, Some(size)) = (created, set.size) {
            let (p, key) = (self.pnfs.clone(), h.0.clone());
            self.ds(async move { p.truncate(&key, size).await })?;
        }
        Ok((h, attr, created))
    }

    fn create(
        &self,
        c: &Creds,
        dir: &Handle,
        name: &[u8],
        kind: &CreateKind,
        set: &SetAttr,
    ) -> Result<(Handle, Attr)> {
        self.inner.create(c, dir, name, kind, set)
    }

    fn remove(&self, c: &Creds, dir: &Handle, name: &[u8]) -> Result<()> {
        let gone = self.inner.lookup(c, dir, name).ok();
        self.inner.remove(c, dir, name)?;
        if let Some((h, a)) = gone {
            self.forget_if_last(&h, &a);
        }
        Ok(())
    }

    fn rename(
        &self,
        c: &Creds,
        from: &Handle,
        from_name: &[u8],
        to: &Handle,
        to_name: &[u8],
    ) -> Result<()> {
        let over = self.inner.lookup(c, to, to_name).ok();
        let moving = self.inner.lookup(c, from, from_name).ok();
        self.inner.rename(c, from, from_name, to, to_name)?;
        if let Some((h, a)) = over {
            // Renamed onto itself (another link of the same file): no file went.
            if moving.as_ref().is_none_or(|(m, _)| m != &h) {
                self.forget_if_last(&h, &a);
            }
        }
        Ok(())
    }

    fn link(&self, c: &Creds, file: &Handle, dir: &Handle, name: &[u8]) -> Result<()> {
        self.inner.link(c, file, dir, name)
    }
    fn readlink(&self, c: &Creds, h: &Handle) -> Result<Bytes> {
        self.inner.readlink(c, h)
    }
    fn readdir(
        &self,
        c: &Creds,
        dir: &Handle,
        cookie: u64,
        with_attrs: bool,
        each: &mut dyn FnMut(DirEntry) -> bool,
    ) -> Result<bool> {
        self.inner.readdir(c, dir, cookie, with_attrs, each)
    }
    fn readdir_nowait(
        &self,
        c: &Creds,
        dir: &Handle,
        cookie: u64,
        each: &mut dyn FnMut(DirEntry) -> bool,
    ) -> Option<Result<bool>> {
        self.inner.readdir_nowait(c, dir, cookie, each)
    }
    fn list_dir_nowait(
        &self,
        c: &Creds,
        dir: &Handle,
        cookie: u64,
        each: &mut dyn FnMut(DirEntry) -> bool,
    ) -> Option<Result<DirListed>> {
        self.inner.list_dir_nowait(c, dir, cookie, each)
    }
    fn fsstat(&self, h: &Handle) -> Result<FsStat> {
        self.inner.fsstat(h)
    }
    fn guard_local_writes(&self, h: &Handle, on_break: lease::OnBreak) -> Result<bool> {
        self.inner.guard_local_writes(h, on_break)
    }
    fn watch_local_changes(
        &self,
        h: &Handle,
        hold_opens: bool,
        on_change: vfs::watch::OnChange,
    ) -> Result<bool> {
        self.inner.watch_local_changes(h, hold_opens, on_change)
    }
    fn unwatch_local_changes(&self, h: &Handle) {
        self.inner.unwatch_local_changes(h)
    }
    // Removed by a local process while watched, the inner backend keeps
    // it: let go through here.
    fn kept_unlinked(&self) -> Vec<Handle> {
        self.inner.kept_unlinked()
    }
    fn release_unlinked(&self, h: &Handle) {
        self.inner.release_unlinked(h)
    }
    fn unguard_local_writes(&self, h: &Handle) {
        self.inner.unguard_local_writes(h)
    }
    fn local_dir(&self) -> Option<std::path::PathBuf> {
        self.inner.local_dir()
    }
    fn set_metadata_async(&self, on: bool) -> bool {
        self.inner.set_metadata_async(on)
    }
    fn xattrs(&self) -> bool {
        self.inner.xattrs()
    }
    fn acls(&self) -> bool {
        self.inner.acls()
    }
    fn get_acl(&self, c: &Creds, h: &Handle, default: bool) -> Result<Option<vfs::acl::PosixAcl>> {
        self.inner.get_acl(c, h, default)
    }
    fn set_acl(
        &self,
        c: &Creds,
        h: &Handle,
        default: bool,
        acl: Option<&vfs::acl::PosixAcl>,
    ) -> Result<()> {
        self.inner.set_acl(c, h, default, acl)
    }
    fn getxattr(&self, c: &Creds, h: &Handle, name: &[u8]) -> Result<Bytes> {
        self.inner.getxattr(c, h, name)
    }
    fn setxattr(
        &self,
        c: &Creds,
        h: &Handle,
        name: &[u8],
        value: &[u8],
        how: XattrHow,
    ) -> Result<()> {
        self.inner.setxattr(c, h, name, value, how)
    }
    fn listxattrs(&self, c: &Creds, h: &Handle) -> Result<Vec<Bytes>> {
        self.inner.listxattrs(c, h)
    }
    fn removexattr(&self, c: &Creds, h: &Handle, name: &[u8]) -> Result<()> {
        self.inner.removexattr(c, h, name)
    }
}
