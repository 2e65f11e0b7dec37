//! The client side of a session's fore-channel slot table (RFC 8881
//! §2.10.6.1).
//!
//! Every request on a session occupies one slot from SEQUENCE until its
//! reply; a slot carries one request at a time, each with the slot's next
//! sequence id. Requests beyond the free slots wait. The server may lower
//! `target_highest_slotid` in any SEQUENCE reply; slots above it are then
//! retired as they come back, and revived if the target grows again.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

/// How a request on a slot ended, for the slot's sequence id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotOutcome {
    /// SEQUENCE was executed (whatever the later operations did): the
    /// server now holds this sequence id; the next request uses one more.
    Processed,
    /// SEQUENCE was refused (DELAY, BADSLOT, SEQ_MISORDERED, ...) or the
    /// request never reached the server: the sequence id is reused.
    NotProcessed,
}

#[derive(Debug)]
struct SlotState {
    /// Last sequence id the server has seen on each slot (the next
    /// request uses one more). Index = slot id.
    seqids: Vec<u32>,
    /// Slots that are usable and not carrying a request.
    free: BTreeSet<u32>,
    /// Slots carrying a request.
    busy: BTreeSet<u32>,
    /// Slots above the server's target, held back.
    retired: BTreeSet<u32>,
    /// The server's latest `target_highest_slotid`.
    target: u32,
}

/// Wait-time statistics of a slot table (for benchmarks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SlotStats {
    /// Slots acquired.
    pub acquired: u64,
    /// Acquisitions that had to wait for a free slot.
    pub waited: u64,
    /// Total time spent waiting for slots.
    pub wait_total: Duration,
    /// Longest single wait.
    pub wait_max: Duration,
}

/// A session's fore-channel slots.
#[derive(Debug)]
pub struct SlotTable {
    state: Mutex<SlotState>,
    /// One permit per free usable slot.
    permits: Semaphore,
    acquired: AtomicU64,
    waited: AtomicU64,
    wait_nanos: AtomicU64,
    wait_max_nanos: AtomicU64,
}

/// A slot held by one request; give it back with [`SlotTable::release`].
/// Dropping it unreleased assumes the request reached the server.
#[derive(Debug)]
pub struct Slot {
    table: Arc<SlotTable>,
    id: u32,
    seqid: u32,
    released: bool,
}

impl Slot {
    /// The slot id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The sequence id the request on this slot carries.
    pub fn seqid(&self) -> u32 {
        self.seqid
    }

    /// The highest slot id in use by this client right now (SEQUENCE's
    /// `sa_highest_slotid`).
    pub fn highest_slotid(&self) -> u32 {
        self.table.highest_busy().max(self.id)
    }

    /// Records the request as processed and moves to the next sequence id
    /// while keeping the slot (for tests that send several requests on one
    /// slot by hand).
    pub fn advance(&mut self) {
        self.table.set_seqid(self.id, self.seqid);
        self.seqid = self.seqid.wrapping_add(1);
    }

    /// Gives the slot back: `outcome` says whether the server consumed the
    /// sequence id; `target` is the server's `target_highest_slotid` when
    /// the reply carried one.
    pub fn release(mut self, outcome: SlotOutcome, target: Option<u32>) {
        self.released = true;
        self.table.put_back(self.id, self.seqid, outcome, target);
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if !self.released {
            self.table
                .put_back(self.id, self.seqid, SlotOutcome::Processed, None);
        }
    }
}

impl SlotTable {
    /// A table of `count` slots (the server's granted `ca_maxrequests`).
    pub fn new(count: u32) -> Arc<Self> {
        let count = count.max(1);
        Arc::new(SlotTable {
            state: Mutex::new(SlotState {
                seqids: vec![0; count as usize],
                free: (0..count).collect(),
                busy: BTreeSet::new(),
                retired: BTreeSet::new(),
                target: count - 1,
            }),
            permits: Semaphore::new(count as usize),
            acquired: AtomicU64::new(0),
            waited: AtomicU64::new(0),
            wait_nanos: AtomicU64::new(0),
            wait_max_nanos: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Number of slots in the table.
    pub fn len(&self) -> u32 {
        self.lock().seqids.len() as u32
    }

    /// True if the table has no slots (never: it has at least one).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Slots usable now (at or below the server's target).
    pub fn usable(&self) -> u32 {
        let s = self.lock();
        s.seqids.len() as u32 - s.retired.len() as u32
    }

    /// The server's latest `target_highest_slotid`.
    pub fn target(&self) -> u32 {
        self.lock().target
    }

    fn highest_busy(&self) -> u32 {
        self.lock().busy.iter().next_back().copied().unwrap_or(0)
    }

    fn set_seqid(&self, id: u32, seqid: u32) {
        if let Some(s) = self.lock().seqids.get_mut(id as usize) {
            *s = seqid;
        }
    }

    /// Takes the lowest free slot, waiting while none is free.
    pub async fn acquire(self: &Arc<Self>) -> Slot {
        let start = Instant::now();
        let permit = match self.permits.try_acquire() {
            Ok(p) => p,
            Err(_) => {
                // The semaphore is never closed.
                let p = self.permits.acquire().await;
                let waited = start.elapsed();
                let ns = waited.as_nanos().min(u64::MAX as u128) as u64;
                self.waited.fetch_add(1, Ordering::Relaxed);
                self.wait_nanos.fetch_add(ns, Ordering::Relaxed);
                self.wait_max_nanos.fetch_max(ns, Ordering::Relaxed);
                match p {
                    Ok(p) => p,
                    Err(_) => unreachable!("slot semaphore closed"),
                }
            }
        };
        permit.forget();
        self.acquired.fetch_add(1, Ordering::Relaxed);
        let mut s = self.lock();
        // A permit guarantees a free slot.
        let id = match s.free.pop_first() {
            Some(id) => id,
            None => unreachable!("slot permit without a free slot"),
        };
        s.busy.insert(id);
        let seqid = s.seqids[id as usize].wrapping_add(1);
        Slot {
            table: self.clone(),
            id,
            seqid,
            released: false,
        }
    }

    fn put_back(&self, id: u32, seqid: u32, outcome: SlotOutcome, target: Option<u32>) {
        let mut s = self.lock();
        if outcome == SlotOutcome::Processed {
            s.seqids[id as usize] = seqid;
        }
        s.busy.remove(&id);
        let mut add = 0;
        if let Some(t) = target {
            let max = s.seqids.len() as u32 - 1;
            let t = t.min(max);
            if t > s.target {
                // The target grew: revive retired slots up to it.
                let revive: Vec<u32> = s.retired.range(..=t).copied().collect();
                for r in revive {
                    s.retired.remove(&r);
                    s.free.insert(r);
                    add += 1;
                }
            } else if t < s.target {
                // Shrunk: retire free slots above it now; busy ones as they
                // come back.
                let retire: Vec<u32> = s.free.range(t + 1..).copied().collect();
                for r in retire {
                    s.free.remove(&r);
                    s.retired.insert(r);
                    // Their permits are still in the semaphore: take them.
                    match self.permits.try_acquire() {
                        Ok(p) => p.forget(),
                        Err(_) => {
                            // All remaining permits are claimed by waiters
                            // about to pop a slot; give this one back.
                            s.retired.remove(&r);
                            s.free.insert(r);
                        }
                    }
                }
            }
            s.target = t;
        }
        if id > s.target {
            s.retired.insert(id);
        } else {
            s.free.insert(id);
            add += 1;
        }
        drop(s);
        self.permits.add_permits(add);
    }

    /// Wait statistics so far.
    pub fn stats(&self) -> SlotStats {
        SlotStats {
            acquired: self.acquired.load(Ordering::Relaxed),
            waited: self.waited.load(Ordering::Relaxed),
            wait_total: Duration::from_nanos(self.wait_nanos.load(Ordering::Relaxed)),
            wait_max: Duration::from_nanos(self.wait_max_nanos.load(Ordering::Relaxed)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sequence_ids_advance_per_slot() {
        let t = SlotTable::new(2);
        let a = t.acquire().await;
        assert_eq!((a.id(), a.seqid()), (0, 1));
        let b = t.acquire().await;
        assert_eq!((b.id(), b.seqid()), (1, 1));
        assert_eq!(a.highest_slotid(), 1);
        a.release(SlotOutcome::Processed, None);
        let a = t.acquire().await;
        assert_eq!((a.id(), a.seqid()), (0, 2));
        // Not processed: the same sequence id again.
        a.release(SlotOutcome::NotProcessed, None);
        let a = t.acquire().await;
        assert_eq!((a.id(), a.seqid()), (0, 2));
        a.release(SlotOutcome::Processed, None);
        b.release(SlotOutcome::Processed, None);
        let b = t.acquire().await;
        assert_eq!((b.id(), b.seqid()), (0, 3));
    }

    #[tokio::test]
    async fn advance_keeps_the_slot() {
        let t = SlotTable::new(1);
        let mut s = t.acquire().await;
        assert_eq!(s.seqid(), 1);
        s.advance();
        assert_eq!(s.seqid(), 2);
        drop(s); // dropped unreleased: assumed processed
        let s = t.acquire().await;
        assert_eq!(s.seqid(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn waits_for_a_free_slot_and_records_it() {
        let t = SlotTable::new(1);
        let s = t.acquire().await;
        let t2 = t.clone();
        let waiter = tokio::spawn(async move { t2.acquire().await.seqid() });
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(!waiter.is_finished());
        s.release(SlotOutcome::Processed, None);
        assert_eq!(waiter.await.unwrap(), 2);
        let st = t.stats();
        assert_eq!(st.acquired, 2);
        assert_eq!(st.waited, 1);
    }

    #[tokio::test]
    async fn target_shrinks_and_grows() {
        let t = SlotTable::new(4);
        let slots: Vec<Slot> = vec![t.acquire().await, t.acquire().await];
        assert_eq!(t.usable(), 4);
        let mut it = slots.into_iter();
        // Server says: stay at or below slot 0. Free slots 2 and 3 retire
        // now, slot 1 when it comes back.
        it.next().unwrap().release(SlotOutcome::Processed, Some(0));
        assert_eq!(t.target(), 0);
        assert_eq!(t.usable(), 2);
        it.next().unwrap().release(SlotOutcome::Processed, Some(0));
        assert_eq!(t.usable(), 1);
        let a = t.acquire().await;
        assert_eq!(a.id(), 0);
        assert!(t.permits.try_acquire().is_err(), "only one usable slot");
        // Grows back to 2: slots 1 and 2 revive, with their sequence ids.
        a.release(SlotOutcome::Processed, Some(2));
        assert_eq!(t.usable(), 3);
        let x = t.acquire().await;
        let y = t.acquire().await;
        let z = t.acquire().await;
        assert_eq!((x.id(), y.id(), z.id()), (0, 1, 2));
        assert_eq!(y.seqid(), 2);
        assert_eq!(z.seqid(), 1);
        assert!(t.permits.try_acquire().is_err());
    }

    #[tokio::test]
    async fn many_tasks_never_share_a_slot() {
        let t = SlotTable::new(3);
        let in_use = Arc::new(Mutex::new(BTreeSet::new()));
        let mut tasks = Vec::new();
        for _ in 0..32 {
            let t = t.clone();
            let in_use = in_use.clone();
            tasks.push(tokio::spawn(async move {
                for _ in 0..20 {
                    let s = t.acquire().await;
                    assert!(in_use.lock().unwrap().insert(s.id()));
                    tokio::task::yield_now().await;
                    assert!(in_use.lock().unwrap().remove(&s.id()));
                    s.release(SlotOutcome::Processed, None);
                }
            }));
        }
        for x in tasks {
            x.await.unwrap();
        }
        let s = t.lock();
        let total: u32 = s.seqids.iter().sum();
        assert_eq!(total, 32 * 20);
    }
}
