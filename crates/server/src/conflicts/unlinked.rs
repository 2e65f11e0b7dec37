//! Files removed while clients hold state on them, whichever protocol
//! removes them: kept reachable through their handles, with nlink 0, until
//! the last state on them goes, as an open file is on a local file system
//! (what NFSv4's OPEN4_RESULT_PRESERVE_UNLINKED promises, RFC 8881
//! §18.16.3: a client told so removes the name at once instead of renaming
//! the file to a hidden `.nfs` name). The backend keeps the file
//! ([`vfs::Vfs::remove_keeping`]); this remembers which files it may have
//! kept and lets each go once no open, lock or delegation of it is left
//! ([`Unlinked::sweep`], after a CLOSE or DELEGRETURN and on every reaper
//! tick, which covers expired clients).
//!
//! Not across a restart: the kernel frees a file with no name when its
//! last descriptor closes, so a server that stops loses the kept files,
//! and a client reclaiming an open of one gets NFS4ERR_STALE
//! (docs/state.md, "Removed open files").

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use state::FileKey;

use crate::instance::Server;

/// The files the backends may be keeping for their holders.
#[derive(Debug, Default)]
pub struct Unlinked {
    kept: Mutex<HashSet<FileKey>>,
    any: AtomicBool,
}

impl Unlinked {
    fn kept(&self) -> std::sync::MutexGuard<'_, HashSet<FileKey>> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What to pass [`vfs::Vfs::remove_keeping`] for a removal in
    /// `export`: yes for a file some client holds state on, remembered
    /// here to be let go later.
    pub fn keeper<'a>(
        &'a self,
        srv: &'a Server,
        export: u16,
    ) -> impl Fn(&vfs::Handle) -> bool + 'a {
        move |h| {
            let key = (export, h.0.clone());
            if !srv.state().file_held(&key) {
                return false;
            }
            self.kept().insert(key);
            self.any.store(true, Ordering::Release);
            true
        }
    }

    /// Remembers that the backend may keep `key` on its own (a file a
    /// local process removed while delegated), to be let go like the
    /// others.
    pub fn note(&self, key: FileKey) {
        self.kept().insert(key);
        self.any.store(true, Ordering::Release);
    }

    /// How many files are being kept (or may be).
    pub fn count(&self) -> usize {
        if !self.any.load(Ordering::Acquire) {
            return 0;
        }
        self.kept().len()
    }

    /// Lets go of every kept file no client holds state on any more (off
    /// the reactor: closing the last descriptor of a removed file frees
    /// its blocks).
    pub async fn sweep(&self, srv: &std::sync::Arc<Server>) {
        if !self.any.load(Ordering::Acquire) {
            return;
        }
        let free: Vec<FileKey> = {
            let mut kept = self.kept();
            let free: Vec<FileKey> = kept
                .iter()
                .filter(|k| !srv.state().file_held(k))
                .cloned()
                .collect();
            for k in &free {
                kept.remove(k);
            }
            self.any.store(!kept.is_empty(), Ordering::Release);
            free
        };
        if free.is_empty() {
            return;
        }
        let s = srv.clone();
        let _ = crate::handoff::off_thread(move || {
            for (export, h) in free {
                if let Some(e) = s.export(export) {
                    e.vfs.release_unlinked(&vfs::Handle(h));
                }
            }
        })
        .await;
    }
}
