//! Group commit of a file's stable writes: one `fsync` covers every write
//! to the file that finished before it began.
//!
//! A FILE_SYNC WRITE or a COMMIT (RFC 8881 §18.32.3, §18.3.3) may be
//! answered once its data is on stable storage. With many such requests
//! to one file in flight, one `fsync` started after all of them finished
//! makes all of them stable: each request takes a ticket once its write is
//! done, and waits until a sync begun after its ticket was issued has
//! completed, starting one itself if none is running.
//!
//! A failed sync fails every ticket not yet covered, then and from then
//! on, for this descriptor: Linux reports a writeback error once per open
//! file description, so a later sync could succeed with the data lost.

use std::fs::File;
use std::io;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// A file opened for I/O (read, or read and write) and kept in the cache,
/// with the group commits of its `fsync` and `fdatasync`.
#[derive(Debug)]
pub(crate) struct OpenFile {
    /// Shared with replies that send a range of it from the page cache
    /// ([`xdr::FileSlice`]), which keep it open until they are sent.
    file: Arc<File>,
    /// Opened for writing.
    pub(crate) write: bool,
    /// `fsync`: FILE_SYNC writes and COMMIT.
    pub(crate) all: SyncGroup,
    /// `fdatasync`: DATA_SYNC writes.
    pub(crate) data: SyncGroup,
}

impl OpenFile {
    pub(crate) fn new(file: File, write: bool) -> OpenFile {
        OpenFile {
            file: Arc::new(file),
            write,
            all: SyncGroup::default(),
            data: SyncGroup::default(),
        }
    }

    /// The open file, to send a range of it later.
    pub(crate) fn shared(&self) -> Arc<File> {
        self.file.clone()
    }

    /// Everything written to the file before this call is on stable
    /// storage (data and metadata) when it returns `Ok`.
    pub(crate) fn sync_all(&self) -> io::Result<()> {
        self.all.sync(|| self.file.sync_all())
    }

    /// As [`Self::sync_all`], for data and the metadata needed to read it.
    pub(crate) fn sync_data(&self) -> io::Result<()> {
        self.data.sync(|| self.file.sync_data())
    }
}

impl Deref for OpenFile {
    type Target = File;
    fn deref(&self) -> &File {
        &self.file
    }
}

#[derive(Debug, Default)]
struct Progress {
    /// Every ticket up to this one is stable.
    done: u64,
    /// A sync is under way.
    running: bool,
    /// A sync failed with this error: every ticket not yet done fails.
    failed: Option<i32>,
}

/// Tickets and the sync that covers them.
#[derive(Debug, Default)]
pub(crate) struct SyncGroup {
    issued: AtomicU64,
    progress: Mutex<Progress>,
    cv: Condvar,
    /// Syncs run.
    runs: AtomicU64,
}

impl SyncGroup {
    /// Takes a ticket (the caller's writes are done) and returns once a
    /// sync begun after it has completed, running `sync` if no sync is
    /// under way.
    pub(crate) fn sync(&self, sync: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
        let mine = self.issued.fetch_add(1, Ordering::SeqCst) + 1;
        let mut p = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if p.done >= mine {
                return Ok(());
            }
            if let Some(errno) = p.failed {
                return Err(io::Error::from_raw_os_error(errno));
            }
            if !p.running {
                break;
            }
            p = self.cv.wait(p).unwrap_or_else(|e| e.into_inner());
        }
        // Every ticket issued so far belongs to a finished write: this
        // sync covers them all.
        p.running = true;
        let upto = self.issued.load(Ordering::SeqCst);
        drop(p);
        self.runs.fetch_add(1, Ordering::Relaxed);
        let r = sync();
        let mut p = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        p.running = false;
        match &r {
            Ok(()) => p.done = p.done.max(upto),
            Err(e) => p.failed = Some(e.raw_os_error().unwrap_or(libc::EIO)),
        }
        drop(p);
        self.cv.notify_all();
        r
    }

    /// Syncs run so far.
    #[cfg(test)]
    pub(crate) fn runs(&self) -> u64 {
        self.runs.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::{Arc, Barrier};

    /// Concurrent callers share syncs, and each returns only after a sync
    /// that began once its write was done.
    #[test]
    fn concurrent_tickets_share_syncs_begun_after_them() {
        let g = Arc::new(SyncGroup::default());
        // Writes done so far; the most writes a finished sync saw at its start.
        let written = Arc::new(AtomicUsize::new(0));
        let covered = Arc::new(AtomicUsize::new(0));
        let (threads, rounds) = (16, 50);
        let barrier = Arc::new(Barrier::new(threads));
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                let (g, written, covered, barrier) =
                    (g.clone(), written.clone(), covered.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    for _ in 0..rounds {
                        let mine = written.fetch_add(1, Ordering::SeqCst) + 1;
                        g.sync(|| {
                            let seen = written.load(Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_micros(200));
                            covered.fetch_max(seen, Ordering::SeqCst);
                            Ok(())
                        })
                        .unwrap();
                        assert!(covered.load(Ordering::SeqCst) >= mine);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        let runs = g.runs() as usize;
        eprintln!("{runs} syncs for {} tickets", threads * rounds);
        // Some 100 syncs measured, idle or with four busy loops beside the
        // test on two cores: the threads queue while a sync sleeps, and a
        // busier machine only lengthens the sleep. Half the tickets is
        // four times that.
        assert!(
            runs >= 1 && runs < threads * rounds / 2,
            "{runs} syncs for {} tickets",
            threads * rounds
        );
        assert_eq!(g.progress.lock().unwrap().done as usize, threads * rounds);
    }

    /// Starts a sync (that succeeds) on another thread and returns once it
    /// is running; it completes when the barrier returned is passed.
    fn held_sync(g: &Arc<SyncGroup>) -> (std::thread::JoinHandle<io::Result<()>>, Arc<Barrier>) {
        let started = Arc::new(Barrier::new(2));
        let release = Arc::new(Barrier::new(2));
        let (g, s, r) = (g.clone(), started.clone(), release.clone());
        let first = std::thread::spawn(move || {
            g.sync(|| {
                s.wait();
                r.wait();
                Ok(())
            })
        });
        started.wait();
        (first, release)
    }

    /// A ticket is never covered by a sync that began before it.
    #[test]
    fn a_sync_under_way_does_not_cover_a_later_ticket() {
        let g = Arc::new(SyncGroup::default());
        let (first, release) = held_sync(&g); // the first sync is running
        let g2 = g.clone();
        let second = std::thread::spawn(move || {
            let mut ran = false;
            g2.sync(|| {
                ran = true;
                Ok(())
            })
            .unwrap();
            ran
        });
        // The second ticket is taken while the first sync runs.
        while g.issued.load(Ordering::SeqCst) < 2 {
            std::thread::yield_now();
        }
        release.wait();
        first.join().unwrap().unwrap();
        assert!(
            second.join().unwrap(),
            "the later ticket ran a sync of its own"
        );
        assert_eq!(g.runs(), 2);
    }

    /// A failed sync fails the tickets waiting for it, and every later
    /// one: none is answered as stable once the descriptor lost data.
    #[test]
    fn a_failed_sync_fails_its_waiters_and_every_later_ticket() {
        let g = Arc::new(SyncGroup::default());
        let (first, release) = held_sync(&g); // sync 1 runs; two more tickets wait behind it
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let g = g.clone();
                std::thread::spawn(move || g.sync(|| Err(io::Error::from_raw_os_error(libc::EIO))))
            })
            .collect();
        while g.issued.load(Ordering::SeqCst) < 3 {
            std::thread::yield_now();
        }
        release.wait();
        first.join().unwrap().unwrap();
        for w in waiters {
            assert_eq!(
                w.join().unwrap().unwrap_err().raw_os_error(),
                Some(libc::EIO)
            );
        }
        assert_eq!(g.runs(), 2, "one sync for both waiters");
        // Later tickets fail too, without a sync.
        assert!(g.sync(|| Ok(())).is_err());
        assert_eq!(g.runs(), 2);
    }
}
