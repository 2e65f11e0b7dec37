//! Group commit of metadata changes over a whole file system: one sync of
//! the file system makes every change made before it began durable.
//!
//! NFS answers a create, remove, rename, link or attribute change only
//! once it is on stable storage (RFC 1813 §3.3; RFC 8881 §18 "stable
//! storage"). One sync per change (the new object, or its directory) costs
//! a journal commit or, on ext4 without a journal, a write of the inode's
//! and the directory's blocks and a cache flush, each. With many changes
//! in flight, one `syncfs` begun after all of them were made covers them
//! all: each change takes a ticket once made and waits until a sync begun
//! after its ticket completes, leading one itself if none is under way.
//!
//! A leader alone (the only ticket not yet answered) syncs just its own
//! object, which costs less than the whole file system; two or more share
//! one `syncfs` and a flush, while that costs less than their own syncs
//! would: a `syncfs` also writes every other file's dirty data, so with
//! much of it about (a client streaming unstable writes) one can take far
//! longer than a few syncs of small objects. The group keeps a moving
//! average of how long each kind took; when the whole sync is the dearer
//! for the changes waiting, each syncs its own object, in parallel
//! ([`GroupOutcome::Retry`]), and one round in [`PROBE_EVERY`] tries the
//! whole sync again to see whether that changed. A failed whole sync fails nobody for good:
//! each change it was to cover falls back to its own object's sync, whose
//! error (if any) is that change's ([`GroupOutcome::Retry`]). A writeback
//! error somewhere else on the file system is no error of a create.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};

use super::cache::lock;

/// Of the rounds that would share a whole sync but find it dearer, one in
/// this many runs it anyway, to see whether it still is.
const PROBE_EVERY: u32 = 32;

#[derive(Debug, Default)]
struct Progress {
    /// Every ticket up to this one is answered: durable, or in a range of
    /// `retry`.
    done: u64,
    /// Ranges `(lo, hi]` of tickets sent back to their own syncs (a whole
    /// sync failed, or was not worth it), each with how many of its
    /// holders have yet to see it. A ticket looks here before `done`:
    /// a later round moves `done` past it without covering it.
    retry: Vec<(u64, u64, u64)>,
    /// A sync is under way.
    running: bool,
    /// Moving averages of how long a sync of one object and of the whole
    /// file system took, in nanoseconds (0: none yet).
    own_ns: u64,
    whole_ns: u64,
    /// Rounds sent back since the last whole sync.
    since_whole: u32,
}

impl Progress {
    /// Whether ticket `t` was sent back to its own sync; its holder has
    /// now seen it.
    fn claim_retry(&mut self, t: u64) -> bool {
        let Some(i) = self.retry.iter().position(|r| r.0 < t && t <= r.1) else {
            return false;
        };
        self.retry[i].2 -= 1;
        if self.retry[i].2 == 0 {
            self.retry.swap_remove(i);
        }
        true
    }

    /// Answers the tickets `(done, upto]` by sending them to their own
    /// syncs.
    fn send_back(&mut self, upto: u64) {
        if upto > self.done {
            self.retry.push((self.done, upto, upto - self.done));
            self.done = upto;
        }
    }
}

/// The moving average `avg` with one more sample (the first sets it).
fn average(avg: u64, sample: u64) -> u64 {
    if avg == 0 {
        sample.max(1)
    } else {
        (avg * 7 + sample) / 8
    }
}

/// What became of a ticket.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum GroupOutcome<E> {
    /// Durable.
    Done,
    /// The sync this ticket led failed with `E` (its own object's sync).
    Failed(E),
    /// A whole-file-system sync meant to cover it failed: sync the object
    /// itself.
    Retry,
}

/// The tickets of one file system and the syncs that cover them.
#[derive(Debug, Default)]
pub(crate) struct FsGroup {
    issued: AtomicU64,
    progress: Mutex<Progress>,
    cv: Condvar,
    /// Syncs run: of one object, and of the whole file system.
    own: AtomicU64,
    whole: AtomicU64,
    /// Rounds whose changes were sent to their own syncs, a whole sync
    /// costing more.
    split: AtomicU64,
}

/// How the leader of a round syncs: `own` its own object (it is the only
/// change to cover), `whole` the file system (several are).
pub(crate) struct Syncs<O, W> {
    pub own: O,
    pub whole: W,
}

impl FsGroup {
    /// Takes a ticket (the caller's change is made) and returns once a
    /// sync begun after it has covered it.
    pub(crate) fn sync<E, O, W>(&self, s: Syncs<O, W>) -> GroupOutcome<E>
    where
        O: FnOnce() -> Result<(), E>,
        W: FnOnce() -> Result<(), E>,
    {
        let mine = self.issued.fetch_add(1, Ordering::SeqCst) + 1;
        let mut p = lock(&self.progress);
        loop {
            if p.claim_retry(mine) {
                return GroupOutcome::Retry;
            }
            if p.done >= mine {
                return GroupOutcome::Done;
            }
            if !p.running {
                break;
            }
            p = self.cv.wait(p).unwrap_or_else(|e| e.into_inner());
        }
        // Every ticket issued so far belongs to a change already made.
        let upto = self.issued.load(Ordering::SeqCst);
        let waiting = upto - p.done;
        let alone = waiting == 1;
        if !alone && p.whole_ns > p.own_ns.saturating_mul(waiting) && p.since_whole < PROBE_EVERY {
            // Their own syncs, side by side, cost less than one whole.
            p.since_whole += 1;
            p.send_back(upto);
            p.claim_retry(mine);
            drop(p);
            self.split.fetch_add(1, Ordering::Relaxed);
            self.cv.notify_all();
            return GroupOutcome::Retry;
        }
        p.running = true;
        drop(p);
        let began = std::time::Instant::now();
        let r = if alone {
            self.own.fetch_add(1, Ordering::Relaxed);
            (s.own)()
        } else {
            self.whole.fetch_add(1, Ordering::Relaxed);
            (s.whole)()
        };
        let took = began.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
        let mut p = lock(&self.progress);
        p.running = false;
        if alone {
            p.own_ns = average(p.own_ns, took);
        } else {
            p.whole_ns = average(p.whole_ns, took);
            p.since_whole = 0;
        }
        let out = match r {
            Ok(()) => {
                p.done = p.done.max(upto);
                GroupOutcome::Done
            }
            // Its own sync: its error is the change's (no one else waits
            // for it).
            Err(e) if alone => {
                p.done = p.done.max(upto);
                GroupOutcome::Failed(e)
            }
            Err(_) => {
                p.send_back(upto);
                p.claim_retry(mine);
                GroupOutcome::Retry
            }
        };
        drop(p);
        self.cv.notify_all();
        out
    }

    /// A change sent back ([`GroupOutcome::Retry`]) synced its own object.
    pub(crate) fn count_own(&self) {
        self.own.fetch_add(1, Ordering::Relaxed);
    }

    /// Tickets taken, and syncs run (of one object, of the whole file
    /// system).
    pub(crate) fn counts(&self) -> (u64, u64, u64) {
        (
            self.issued.load(Ordering::Relaxed),
            self.own.load(Ordering::Relaxed),
            self.whole.load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::{Arc, Barrier};

    /// Concurrent changes share whole syncs; each returns only after a
    /// sync that began once its change was made; a change alone syncs its
    /// own object.
    #[test]
    fn concurrent_changes_share_syncs_begun_after_them() {
        let g = Arc::new(FsGroup::default());
        let made = Arc::new(AtomicUsize::new(0));
        let covered = Arc::new(AtomicUsize::new(0));
        let (threads, rounds) = (16, 40);
        let barrier = Arc::new(Barrier::new(threads));
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                let (g, made, covered, barrier) =
                    (g.clone(), made.clone(), covered.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    for _ in 0..rounds {
                        let mine = made.fetch_add(1, Ordering::SeqCst) + 1;
                        let own_ran = std::cell::Cell::new(false);
                        let own = || {
                            own_ran.set(true);
                            std::thread::sleep(std::time::Duration::from_micros(100));
                            Ok(())
                        };
                        let out = g.sync::<(), _, _>(Syncs {
                            own,
                            whole: || {
                                let seen = made.load(Ordering::SeqCst);
                                std::thread::sleep(std::time::Duration::from_micros(300));
                                covered.fetch_max(seen, Ordering::SeqCst);
                                Ok(())
                            },
                        });
                        // Sent back (the whole sync the dearer for few
                        // changes): its own sync, as the caller does.
                        if out == GroupOutcome::Retry {
                            own().unwrap();
                        }
                        assert!(out != GroupOutcome::Failed(()));
                        assert!(own_ran.get() || covered.load(Ordering::SeqCst) >= mine);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        let (tickets, own, whole) = g.counts();
        assert_eq!(tickets, (threads * rounds) as u64);
        assert!(whole > 0, "no change ever shared a sync");
        assert!(
            own + whole < tickets,
            "{own} + {whole} syncs for {tickets} changes"
        );
    }

    /// Where a whole sync has cost more than the waiting changes' own
    /// syncs would, the changes are sent to their own syncs; one round in
    /// PROBE_EVERY tries the whole sync again.
    #[test]
    fn a_dear_whole_sync_sends_the_changes_to_their_own() {
        let g = FsGroup::default();
        {
            let mut p = lock(&g.progress);
            p.own_ns = 1_000_000;
            p.whole_ns = 50_000_000;
        }
        let mut rounds = Vec::new();
        for _ in 0..PROBE_EVERY + 1 {
            // Two other changes made and waiting (their tickets taken).
            g.issued.fetch_add(2, Ordering::SeqCst);
            let mut whole_ran = false;
            let out = g.sync::<i32, _, _>(Syncs {
                own: || unreachable!("three changes wait"),
                whole: || {
                    whole_ran = true;
                    Ok(())
                },
            });
            rounds.push((out, whole_ran));
        }
        let split = rounds
            .iter()
            .filter(|r| **r == (GroupOutcome::Retry, false))
            .count();
        assert_eq!(split, PROBE_EVERY as usize, "{rounds:?}");
        assert_eq!(
            rounds.last(),
            Some(&(GroupOutcome::Done, true)),
            "the probe"
        );
        assert_eq!(g.split.load(Ordering::Relaxed), u64::from(PROBE_EVERY));
    }

    /// Changes sent back to their own syncs stay sent back when a later
    /// change, alone, syncs its own object and moves the group past them
    /// before their holders look.
    #[test]
    fn changes_sent_back_are_not_taken_as_covered_by_a_later_round() {
        let g = FsGroup::default();
        {
            let mut p = lock(&g.progress);
            p.own_ns = 1_000_000;
            p.whole_ns = 50_000_000;
        }
        // Tickets 1 and 2: changes made, their holders not yet looking.
        g.issued.fetch_add(2, Ordering::SeqCst);
        let out = g.sync::<i32, _, _>(Syncs {
            own: || unreachable!("three changes wait"),
            whole: || unreachable!("dearer than their own"),
        });
        assert_eq!(out, GroupOutcome::Retry);
        // Ticket 4, alone, syncs its own object.
        let mut own_ran = false;
        let out = g.sync::<i32, _, _>(Syncs {
            own: || {
                own_ran = true;
                Ok(())
            },
            whole: || unreachable!("alone"),
        });
        assert_eq!((out, own_ran), (GroupOutcome::Done, true));
        // Now tickets 1 and 2 look: sent back, not covered.
        let mut p = lock(&g.progress);
        assert!(p.done >= 2);
        assert!(p.claim_retry(1) && p.claim_retry(2));
        assert!(p.retry.is_empty(), "{:?}", p.retry);
        assert!(!p.claim_retry(4));
    }

    /// A whole sync that fails sends the changes it was to cover to their
    /// own objects' syncs, and later changes are not failed by it.
    #[test]
    fn a_failed_whole_sync_sends_its_changes_to_their_own_syncs() {
        let g = Arc::new(FsGroup::default());
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let (started_tx, started) = std::sync::mpsc::channel::<()>();
        // A leader alone, held in its own sync while two more changes queue.
        let g1 = g.clone();
        let leader = std::thread::spawn(move || {
            g1.sync::<i32, _, _>(Syncs {
                own: move || {
                    started_tx.send(()).unwrap();
                    wait.recv().unwrap();
                    Ok(())
                },
                whole: || unreachable!("the first change is alone"),
            })
        });
        started.recv().unwrap();
        let queued = Arc::new(AtomicUsize::new(0));
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let (g, queued) = (g.clone(), queued.clone());
                std::thread::spawn(move || {
                    queued.fetch_add(1, Ordering::SeqCst);
                    g.sync::<i32, _, _>(Syncs {
                        own: || Ok(()),
                        whole: || Err(libc::EIO),
                    })
                })
            })
            .collect();
        // Both have taken their tickets once the counter shows three.
        while g.counts().0 < 3 {
            std::thread::yield_now();
        }
        go.send(()).unwrap();
        assert_eq!(leader.join().unwrap(), GroupOutcome::Done);
        let outs: Vec<_> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
        // One of them led the whole sync for both, which failed: both retry.
        assert_eq!(outs, [GroupOutcome::Retry, GroupOutcome::Retry]);
        assert_eq!(queued.load(Ordering::SeqCst), 2);
        // A later change is not failed by it.
        let later = g.sync::<i32, _, _>(Syncs {
            own: || Ok(()),
            whole: || Ok(()),
        });
        assert_eq!(later, GroupOutcome::Done);
        // A change alone whose own sync fails gets that error.
        let alone = g.sync::<i32, _, _>(Syncs {
            own: || Err(libc::ENOSPC),
            whole: || Ok(()),
        });
        assert_eq!(alone, GroupOutcome::Failed(libc::ENOSPC));
    }
}
