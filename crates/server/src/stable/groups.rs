//! Group commit for stable WRITEs and COMMIT: one sync of a file answers
//! every request for it whose data was written before the sync began.
//!
//! A FILE_SYNC or DATA_SYNC WRITE (RFC 8881 §18.32.3) is answered once its
//! data and the metadata to reach it are on stable storage; a COMMIT
//! (§18.3.3) once every earlier unstable write is. Each request takes a
//! ticket after its write is done and waits, on the async thread (no
//! blocking thread held), until a sync begun after the ticket completes;
//! if none is under way it runs one on the blocking pool itself. With
//! sixteen stable writes to a file in flight a handful of syncs serve
//! them all, where one per request would each flush the same pages.
//!
//! A failed sync fails its waiters and every later request to the file
//! through this group: the kernel reports a writeback error once per open
//! file description, so a later sync could succeed with the data lost.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use proto::nfs4::NfsStat4;

use tokio::sync::watch;

/// Groups at most, beyond those in use (a group is in use while a
/// request holds it, so in-flight requests bound the rest).
const KEEP: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Progress<E> {
    /// Every ticket up to this one is stable.
    done: u64,
    /// A sync is under way.
    running: bool,
    /// A sync failed with this status: every ticket not done fails.
    failed: Option<E>,
}

impl<E> Default for Progress<E> {
    fn default() -> Self {
        Progress {
            done: 0,
            running: false,
            failed: None,
        }
    }
}

/// The tickets of one file (or one write log) and the syncs that cover
/// them; `E` is the error a failed sync reports.
#[derive(Debug)]
pub struct Group<E = NfsStat4> {
    issued: AtomicU64,
    progress: watch::Sender<Progress<E>>,
    syncs: AtomicU64,
}

impl<E> Default for Group<E> {
    fn default() -> Self {
        Group {
            issued: AtomicU64::new(0),
            progress: watch::Sender::new(Progress::default()),
            syncs: AtomicU64::new(0),
        }
    }
}

impl<E: Copy> Group<E> {
    /// Takes a ticket (the caller's data is written) and returns once a
    /// sync begun after it has succeeded, running `sync` if none is under
    /// way; the sync's error if one failed.
    pub async fn stable<F, Fut>(&self, sync: F) -> Result<(), E>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<(), E>>,
    {
        let mine = self.issued.fetch_add(1, Ordering::SeqCst) + 1;
        let mut rx = self.progress.subscribe();
        loop {
            let mut lead = false;
            self.progress.send_if_modified(|p| {
                if p.done < mine && p.failed.is_none() && !p.running {
                    p.running = true;
                    lead = true;
                    return true;
                }
                false
            });
            if lead {
                break;
            }
            let p = *rx.borrow_and_update();
            if p.done >= mine {
                return Ok(());
            }
            if let Some(e) = p.failed {
                return Err(e);
            }
            if p.running {
                // The sender lives in `self`: changed() cannot fail here.
                let _ = rx.changed().await;
            }
        }
        // Every ticket issued so far belongs to a finished write.
        let upto = self.issued.load(Ordering::SeqCst);
        self.syncs.fetch_add(1, Ordering::Relaxed);
        let r = sync().await;
        self.progress.send_modify(|p| {
            p.running = false;
            match r {
                Ok(()) => p.done = p.done.max(upto),
                Err(e) => p.failed = Some(e),
            }
        });
        r
    }

    /// Syncs run.
    pub fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::Relaxed)
    }
}

/// The groups of the files stable requests are made to, by export and
/// backend handle.
#[derive(Debug, Default)]
pub struct Groups {
    map: Mutex<HashMap<(u16, vfs::Handle), Arc<Group>>>,
}

impl Groups {
    /// The group of `handle` in `export`.
    pub fn of(&self, export: u16, handle: &vfs::Handle) -> Arc<Group> {
        let mut m = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(g) = m.get(&(export, handle.clone())) {
            return g.clone();
        }
        if m.len() >= KEEP {
            // Only groups no request holds: a new group for such a file
            // is as good (its first ticket runs a sync of its own).
            m.retain(|_, g| Arc::strong_count(g) > 1);
        }
        let g = Arc::new(Group::default());
        m.insert((export, handle.clone()), g.clone());
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Many concurrent requests share few syncs, and each returns after
    /// a sync that began once its data was written.
    #[tokio::test(flavor = "current_thread")]
    async fn concurrent_requests_share_syncs_begun_after_them() {
        let g = Arc::new(Group::<NfsStat4>::default());
        let written = Arc::new(AtomicUsize::new(0));
        let covered = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..64)
            .map(|_| {
                let (g, written, covered) = (g.clone(), written.clone(), covered.clone());
                tokio::spawn(async move {
                    for _ in 0..20 {
                        let mine = written.fetch_add(1, Ordering::SeqCst) + 1;
                        tokio::task::yield_now().await;
                        g.stable(|| async {
                            let seen = written.load(Ordering::SeqCst);
                            tokio::time::sleep(std::time::Duration::from_micros(300)).await;
                            covered.fetch_max(seen, Ordering::SeqCst);
                            Ok(())
                        })
                        .await
                        .unwrap();
                        assert!(covered.load(Ordering::SeqCst) >= mine);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        assert!(g.syncs() < 64 * 20 / 4, "{} syncs", g.syncs());
    }

    /// A failed sync fails its waiters and every later request.
    #[tokio::test(flavor = "current_thread")]
    async fn a_failed_sync_fails_waiters_and_later_requests() {
        let g = Arc::new(Group::default());
        let (go, wait) = tokio::sync::oneshot::channel::<()>();
        let g1 = g.clone();
        let leader = tokio::spawn(async move {
            g1.stable(|| async {
                let _ = wait.await;
                Err(NfsStat4::Nfs4errIo)
            })
            .await
        });
        tokio::task::yield_now().await; // the leader's sync is running
        let g2 = g.clone();
        let waiter = tokio::spawn(async move { g2.stable(|| async { Ok(()) }).await });
        tokio::task::yield_now().await;
        go.send(()).unwrap();
        assert_eq!(leader.await.unwrap(), Err(NfsStat4::Nfs4errIo));
        // The waiter's ticket came after the failed sync began: it is not
        // covered, but the file's group has failed, so it fails too.
        assert_eq!(waiter.await.unwrap(), Err(NfsStat4::Nfs4errIo));
        assert_eq!(
            g.stable(|| async { Ok(()) }).await,
            Err(NfsStat4::Nfs4errIo)
        );
        assert_eq!(g.syncs(), 1);
    }
}
