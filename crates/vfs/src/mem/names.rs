//! Namespace calls: lookup, remove, rename, link and readdir, with the
//! kernel's checks in the kernel's order.

use bytes::Bytes;

use super::node::entry_cost;
use super::perm::{self, R, W, X};
use super::tree::{check_name, Tree, ROOT};
use crate::{Attr, Creds, DirEntry, Errno, Handle, Result};

/// Cookies are entry serials plus this, so never 0, 1 or 2.
const COOKIE_BASE: u64 = 3;

impl Tree {
    pub(super) fn lookup(
        &mut self,
        c: &Creds,
        dir: &Handle,
        name: &[u8],
    ) -> Result<(Handle, Attr)> {
        check_name(name)?;
        let d = self.resolve(dir)?;
        let ino = self
            .searchable(c, d)?
            .get(name)
            .ok_or(Errno(libc::ENOENT))?;
        Ok(self.obj(ino))
    }

    pub(super) fn lookup_parent(&mut self, c: &Creds, dir: &Handle) -> Result<(Handle, Attr)> {
        let d = self.resolve(dir)?;
        let n = self.node(d);
        let parent = n.dir().ok_or(Errno(libc::ENOTDIR))?.parent;
        if d == ROOT {
            return Err(Errno(libc::ENOENT));
        }
        perm::check(c, n, X)?;
        Ok(self.obj(parent))
    }

    pub(super) fn remove(&mut self, c: &Creds, dir: &Handle, name: &[u8]) -> Result<()> {
        check_name(name)?;
        let d = self.resolve(dir)?;
        let ino = self
            .searchable(c, d)?
            .get(name)
            .ok_or(Errno(libc::ENOENT))?;
        let victim = self.node(ino);
        perm::may_delete(c, self.node(d), victim)?;
        if victim.dir().is_some_and(|v| !v.is_empty()) {
            return Err(Errno(libc::ENOTEMPTY));
        }
        self.unlink(d, name);
        self.modified(d, true);
        Ok(())
    }

    pub(super) fn rename(
        &mut self,
        c: &Creds,
        from: &Handle,
        from_name: &[u8],
        to: &Handle,
        to_name: &[u8],
    ) -> Result<()> {
        check_name(from_name)?;
        check_name(to_name)?;
        let fd = self.resolve(from)?;
        let td = self.resolve(to)?;
        let s = self.searchable(c, fd)?.get(from_name);
        let t = self.searchable(c, td)?.get(to_name);
        let s = s.ok_or(Errno(libc::ENOENT))?;
        let s_dir = self.node(s).is_dir();
        // Moving a directory under itself, or over an ancestor of the source.
        if s_dir && self.is_ancestor(s, td) {
            return Err(Errno(libc::EINVAL));
        }
        if t.is_some_and(|t| self.node(t).is_dir() && self.is_ancestor(t, fd)) {
            return Err(Errno(libc::ENOTEMPTY));
        }
        if t == Some(s) {
            return Ok(());
        }
        perm::may_delete(c, self.node(fd), self.node(s))?;
        match t {
            None => perm::check(c, self.node(td), W | X)?,
            Some(t) => {
                let tn = self.node(t);
                perm::may_delete(c, self.node(td), tn)?;
                match (s_dir, tn.is_dir()) {
                    (true, false) => return Err(Errno(libc::ENOTDIR)),
                    (false, true) => return Err(Errno(libc::EISDIR)),
                    _ => {}
                }
            }
        }
        let moves_dir = s_dir && fd != td;
        if moves_dir {
            perm::check(c, self.node(s), W)?;
        }
        if let Some(t) = t {
            if self.node(t).dir().is_some_and(|d| !d.is_empty()) {
                return Err(Errno(libc::ENOTEMPTY));
            }
        }
        if moves_dir && t.is_none() && self.node(td).nlink >= self.limits.max_links {
            return Err(Errno(libc::EMLINK));
        }
        let grows = entry_cost(to_name).saturating_sub(entry_cost(from_name));
        if t.is_none() && !self.space.fits(grows) {
            return Err(Errno(libc::ENOSPC));
        }
        // Checked; now change.
        if t.is_some() {
            self.unlink(td, to_name);
        }
        self.node_mut(fd)
            .dir_mut()
            .expect("a directory")
            .remove(from_name);
        self.space.refund(entry_cost(from_name));
        self.space.used += entry_cost(to_name);
        self.node_mut(td)
            .dir_mut()
            .expect("a directory")
            .insert(to_name, s);
        if moves_dir {
            self.node_mut(fd).nlink -= 1;
            self.node_mut(td).nlink += 1;
            if let Some(d) = self.node_mut(s).dir_mut() {
                d.parent = td;
            }
        }
        self.modified(fd, true);
        if td != fd {
            self.modified(td, true);
        }
        self.modified(s, false);
        Ok(())
    }

    pub(super) fn link(
        &mut self,
        c: &Creds,
        file: &Handle,
        dir: &Handle,
        name: &[u8],
    ) -> Result<()> {
        check_name(name)?;
        let f = self.resolve(file)?;
        let d = self.resolve(dir)?;
        let n = self.node(f);
        if n.is_dir() {
            return Err(Errno(libc::EISDIR));
        }
        if self.searchable(c, d)?.get(name).is_some() {
            return Err(Errno(libc::EEXIST));
        }
        perm::may_link(c, n)?;
        perm::check(c, self.node(d), W | X)?;
        if n.nlink >= self.limits.max_links {
            return Err(Errno(libc::EMLINK));
        }
        if !self.space.fits(entry_cost(name)) {
            return Err(Errno(libc::ENOSPC));
        }
        self.space.used += entry_cost(name);
        self.node_mut(d)
            .dir_mut()
            .expect("a directory")
            .insert(name, f);
        self.node_mut(f).nlink += 1;
        self.modified(f, false);
        self.modified(d, true);
        Ok(())
    }

    /// Up to `max` entries after `cookie` and whether they reach the end.
    /// The `first` call of a listing checks permissions (read, and search
    /// for attributes) and moves the atime; later ones end quietly if the
    /// directory is gone.
    pub(super) fn readdir_batch(
        &mut self,
        c: &Creds,
        dir: &Handle,
        cookie: u64,
        with_attrs: bool,
        first: bool,
        max: usize,
    ) -> Result<(Vec<DirEntry>, bool)> {
        let d = match self.resolve(dir) {
            Ok(d) => d,
            Err(_) if !first => return Ok((Vec::new(), true)),
            Err(e) => return Err(e),
        };
        let n = self.node(d);
        let listing = n.dir().ok_or(Errno(libc::ENOTDIR))?;
        if first {
            perm::check(c, n, R)?;
        }
        // Describing entries takes search permission.
        let attrs = with_attrs && perm::permits(c, n, X);
        let from = if cookie < COOKIE_BASE {
            0
        } else {
            cookie - COOKIE_BASE + 1
        };
        let page = listing.list(from, max);
        let end = match page.last() {
            Some(&(_, serial, _)) => !listing.has_from(serial + 1),
            None => true,
        };
        let entries = page
            .into_iter()
            .map(|(name, serial, ino): (Bytes, u64, u64)| DirEntry {
                name,
                cookie: serial + COOKIE_BASE,
                fileid: ino,
                ftype: Some(self.attr(ino).ftype),
                obj: attrs.then(|| self.obj(ino)),
            })
            .collect();
        if first {
            self.accessed(d);
        }
        Ok((entries, end))
    }
}
