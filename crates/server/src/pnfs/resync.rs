//! Bringing a data server that was down back up to date (issue 30, point
//! 3). While it was down, the metadata server noted each file whose data
//! files changed without it (writes to its mirror, truncations, fences,
//! removals: [`Pnfs::note_stale`]) and recorded durably that it is behind
//! (a marker in `STATE_DIR/pnfs`). Once it answers again, each such file
//! is made whole on it: its data file re-owned to the file's fence
//! generation, cut to the file's size, and every stripe it holds copied
//! from a mirror that did not miss the change; a file removed meanwhile
//! has its data file removed. A marker found at start (the metadata server
//! stopped while a server was behind) or a list too long to keep makes the
//! resync go over every file of the export. The marker goes once the
//! resync has finished without error.

use std::sync::Arc;

use bytes::Bytes;
use proto::nfs3::{Sattr3, StableHow};

use super::datafiles;
use super::dataserver::DsError;
use super::Pnfs;

impl Pnfs {
    /// Whether data server `i` has changes to catch up on.
    pub fn behind(&self, i: usize) -> bool {
        self.full_resync
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&i)
            || self
                .stale
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains_key(&i)
    }

    /// Brings data server `i` up to date (one resync at a time; a file
    /// that fails stays on the list for the next round).
    pub async fn resync(self: Arc<Self>, i: usize) {
        let Ok(_one) = self.resyncing.try_lock() else {
            return;
        };
        let full = self
            .full_resync
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&i);
        let (files, overflow) = self
            .stale
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&i)
            .unwrap_or_default();
        let files: Vec<Bytes> = if full || overflow {
            match self.all_files().await {
                Some(v) => v,
                None => {
                    self.requeue(i, files, true);
                    return;
                }
            }
        } else {
            files.into_iter().collect()
        };
        tracing::info!(data_server = %self.servers[i].addr, files = files.len(), "bringing the data server up to date");
        let mut failed = Vec::new();
        for h in &files {
            if let Err(e) = self.resync_file(i, h).await {
                tracing::warn!(data_server = %self.servers[i].addr, "resync of a file failed: {e}");
                failed.push(h.clone());
            }
        }
        if failed.is_empty() {
            self.full_resync
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&i);
            if !self
                .stale
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains_key(&i)
            {
                self.clear_behind(i).await;
            }
            tracing::info!(data_server = %self.servers[i].addr, files = files.len(), "data server up to date");
        } else {
            self.requeue(i, failed.into_iter().collect(), full || overflow);
        }
    }

    fn requeue(&self, i: usize, files: std::collections::HashSet<Bytes>, full: bool) {
        if full {
            self.full_resync
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(i);
        }
        let mut s = self.stale.lock().unwrap_or_else(|p| p.into_inner());
        s.entry(i).or_default().0.extend(files);
    }

    /// Every regular file of the export (their handles), by walking its
    /// directories; `None` if the walk failed.
    async fn all_files(&self) -> Option<Vec<Bytes>> {
        let meta = self.meta.clone();
        let r = tokio::task::spawn_blocking(move || {
            let c = ::vfs::Creds::root();
            let mut out = Vec::new();
            let mut dirs = vec![meta.root()];
            while let Some(d) = dirs.pop() {
                let mut cookie = 0;
                loop {
                    let mut last = cookie;
                    let mut batch = Vec::new();
                    let eof = meta.readdir(&c, &d, cookie, true, &mut |e| {
                        last = e.cookie;
                        batch.push(e);
                        batch.len() < 1024
                    })?;
                    for e in batch {
                        match e.obj {
                            Some((h, a)) if a.ftype == ::vfs::FileType::Directory => dirs.push(h),
                            Some((h, a)) if a.ftype == ::vfs::FileType::Regular => out.push(h.0),
                            _ => {}
                        }
                    }
                    if eof || last == cookie {
                        break;
                    }
                    cookie = last;
                }
            }
            Ok::<_, ::vfs::Errno>(out)
        })
        .await;
        match r {
            Ok(Ok(v)) => Some(v),
            other => {
                tracing::warn!("listing the export's files for a resync failed: {other:?}");
                None
            }
        }
    }

    /// Makes the file `h` whole on data server `i`.
    async fn resync_file(&self, i: usize, h: &Bytes) -> Result<(), DsError> {
        let meta = self.meta.clone();
        let handle = ::vfs::Handle(h.clone());
        let attr = tokio::task::spawn_blocking(move || meta.getattr(&handle))
            .await
            .map_err(|e| DsError::Down(e.to_string()))?;
        let size = match attr {
            Ok(a) => a.size,
            Err(::vfs::Errno(libc::ESTALE | libc::ENOENT)) => {
                // Removed while the server was down.
                let root = self.root_of(i).await?;
                return datafiles::remove(&self.servers[i], &root, &self.data_name(h)).await;
            }
            Err(e) => return Err(DsError::Down(format!("metadata: {e:?}"))),
        };
        let g = &self.geometry;
        let base = self.base(h);
        let holds = |k: u64| g.servers_of(base, k).contains(&i);
        let stripes = size.div_ceil(g.stripe_unit);
        if !(0..stripes).any(holds) {
            // Nothing of it there: at most an old data file to cut.
            if let Some(fh) = self.fh_on(h, i, false).await? {
                let a = Sattr3 {
                    size: Some(0),
                    ..Sattr3::default()
                };
                datafiles::setattr(&self.servers[i], &fh, a).await?;
            }
            return Ok(());
        }
        let gen = self.gen(h).await?;
        let Some(fh) = self.fh_on(h, i, true).await? else {
            return Err(DsError::Down("no data file".into()));
        };
        let mut a = datafiles::owner_attrs(gen, true);
        a.size = Some(size);
        datafiles::setattr(&self.servers[i], &fh, a).await?;
        for k in (0..stripes).filter(|k| holds(*k)) {
            let start = k * g.stripe_unit;
            let end = (start + g.stripe_unit).min(size);
            let sources: Vec<usize> = g
                .servers_of(base, k)
                .into_iter()
                .filter(|s| *s != i && self.servers[*s].is_up())
                .collect();
            let Some(&src) = sources.first() else {
                return Err(DsError::Down("no other mirror to copy from".into()));
            };
            let mut at = start;
            while at < end {
                let n = (end - at).min(super::dataserver::IO_SIZE as u64) as u32;
                let data = self.read_from(h, src, at, n).await?;
                datafiles::write(
                    &self.servers[i],
                    &fh,
                    at,
                    Bytes::from(data),
                    StableHow::FileSync,
                )
                .await?;
                at += n as u64;
            }
        }
        Ok(())
    }
}
