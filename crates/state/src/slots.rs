//! The session slot table and reply cache (RFC 8881 §2.10.6).
//!
//! Each slot holds the sequence id of the last request it carried and that
//! request's reply. A request with the next sequence id executes; one with
//! the same sequence id is a retransmission and gets the cached reply back
//! without executing again (exactly-once semantics); anything else is
//! misordered. A retransmission whose arguments differ from the original is
//! a false retry (§2.10.6.1.3.1), detected by a digest of the request.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;

/// Why SEQUENCE refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotError {
    /// Slot id beyond the table (NFS4ERR_BADSLOT).
    BadSlot,
    /// The original request is still executing (NFS4ERR_DELAY).
    InProgress,
    /// Neither the next nor the current sequence id (NFS4ERR_SEQ_MISORDERED).
    Misordered,
    /// A retransmission whose reply was not cached (NFS4ERR_RETRY_UNCACHED_REP).
    Uncached,
    /// Same slot and sequence id, different request (NFS4ERR_SEQ_FALSE_RETRY).
    FalseRetry,
}

/// What the caller does with a request.
#[derive(Debug, PartialEq, Eq)]
pub enum SlotDecision {
    /// Execute it, then call [`SlotTable::complete`].
    Execute,
    /// Send this cached reply again.
    Replay(Vec<Bytes>),
}

#[derive(Debug, Default)]
enum Cached {
    /// The slot has never completed a request.
    #[default]
    Empty,
    Uncached {
        digest: u64,
    },
    Reply {
        digest: u64,
        reply: Vec<Bytes>,
        size: usize,
    },
}

#[derive(Debug, Default)]
struct Slot {
    seqid: u32,
    busy: bool,
    cached: Cached,
}

/// Reply-cache memory shared by every session of a server.
#[derive(Debug, Default)]
pub struct CacheMemory {
    used: AtomicUsize,
    /// Budget in bytes; above it sessions are asked to use fewer slots.
    pub budget: usize,
}

impl CacheMemory {
    pub fn new(budget: usize) -> Arc<Self> {
        Arc::new(CacheMemory {
            used: AtomicUsize::new(0),
            budget,
        })
    }
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }
    pub fn under_pressure(&self) -> bool {
        self.used() > self.budget
    }
}

/// One channel's slots.
#[derive(Debug)]
pub struct SlotTable {
    slots: Vec<Slot>,
    memory: Arc<CacheMemory>,
    /// Highest slot id a request has used.
    highest_used: u32,
}

impl SlotTable {
    pub fn new(count: u32, memory: Arc<CacheMemory>) -> Self {
        let mut slots = Vec::with_capacity(count.max(1) as usize);
        slots.resize_with(count.max(1) as usize, Slot::default);
        SlotTable {
            slots,
            memory,
            highest_used: 0,
        }
    }

    /// Highest slot id granted.
    pub fn highest_slotid(&self) -> u32 {
        self.slots.len() as u32 - 1
    }

    /// The slot id the client should stay under: all slots normally, fewer
    /// when the server's reply cache is over its memory budget.
    pub fn target_highest_slotid(&self) -> u32 {
        if self.memory.under_pressure() {
            (self.highest_used / 2).max(1).min(self.highest_slotid())
        } else {
            self.highest_slotid()
        }
    }

    /// Admits a request on `slotid` with `seqid`; `digest` identifies the
    /// request's content for false-retry detection.
    pub fn begin(
        &mut self,
        slotid: u32,
        seqid: u32,
        digest: u64,
    ) -> Result<SlotDecision, SlotError> {
        let slot = self
            .slots
            .get_mut(slotid as usize)
            .ok_or(SlotError::BadSlot)?;
        if seqid == slot.seqid.wrapping_add(1) {
            if slot.busy {
                // The previous request on this slot has not finished: the
                // client broke the one-outstanding-request rule.
                return Err(SlotError::Misordered);
            }
            slot.busy = true;
            slot.seqid = seqid;
            self.highest_used = self.highest_used.max(slotid);
            return Ok(SlotDecision::Execute);
        }
        if seqid == slot.seqid {
            if slot.busy {
                return Err(SlotError::InProgress);
            }
            return match &slot.cached {
                Cached::Empty => Err(SlotError::Misordered),
                Cached::Uncached { digest: d } if *d != digest => Err(SlotError::FalseRetry),
                Cached::Uncached { .. } => Err(SlotError::Uncached),
                Cached::Reply { digest: d, .. } if *d != digest => Err(SlotError::FalseRetry),
                Cached::Reply { reply, .. } => Ok(SlotDecision::Replay(reply.clone())),
            };
        }
        Err(SlotError::Misordered)
    }

    /// Records the reply of the request admitted on `slotid`; `reply` is
    /// `None` when it is not to be cached.
    pub fn complete(&mut self, slotid: u32, digest: u64, reply: Option<Vec<Bytes>>) {
        let Some(slot) = self.slots.get_mut(slotid as usize) else {
            return;
        };
        slot.busy = false;
        if let Cached::Reply { size, .. } = slot.cached {
            self.memory.used.fetch_sub(size, Ordering::Relaxed);
        }
        slot.cached = match reply {
            Some(reply) => {
                let size = reply.iter().map(Bytes::len).sum();
                self.memory.used.fetch_add(size, Ordering::Relaxed);
                Cached::Reply {
                    digest,
                    reply,
                    size,
                }
            }
            None => Cached::Uncached { digest },
        };
    }

    /// Bytes of replies this table holds.
    pub fn cached_bytes(&self) -> usize {
        self.slots
            .iter()
            .map(|s| match s.cached {
                Cached::Reply { size, .. } => size,
                _ => 0,
            })
            .sum()
    }
}

impl Drop for SlotTable {
    fn drop(&mut self) {
        self.memory
            .used
            .fetch_sub(self.cached_bytes(), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(s: &'static str) -> Vec<Bytes> {
        vec![Bytes::from_static(s.as_bytes())]
    }

    #[test]
    fn execute_then_replay_exactly_once() {
        let mem = CacheMemory::new(1 << 20);
        let mut t = SlotTable::new(4, mem.clone());
        assert_eq!(t.begin(0, 1, 7), Ok(SlotDecision::Execute));
        // a retransmission while the original runs
        assert_eq!(t.begin(0, 1, 7), Err(SlotError::InProgress));
        t.complete(0, 7, Some(reply("r1")));
        assert_eq!(mem.used(), 2);
        assert_eq!(t.begin(0, 1, 7), Ok(SlotDecision::Replay(reply("r1"))));
        assert_eq!(t.begin(0, 1, 7), Ok(SlotDecision::Replay(reply("r1"))));
        assert_eq!(t.begin(0, 1, 8), Err(SlotError::FalseRetry));
        assert_eq!(t.begin(0, 2, 9), Ok(SlotDecision::Execute));
        t.complete(0, 9, None);
        assert_eq!(mem.used(), 0);
        assert_eq!(t.begin(0, 2, 9), Err(SlotError::Uncached));
        assert_eq!(t.begin(0, 2, 1), Err(SlotError::FalseRetry));
    }

    #[test]
    fn misordered_and_bad_slot() {
        let mut t = SlotTable::new(2, CacheMemory::new(1 << 20));
        assert_eq!(t.begin(2, 1, 0), Err(SlotError::BadSlot));
        assert_eq!(t.begin(1, 2, 0), Err(SlotError::Misordered));
        assert_eq!(t.begin(1, 0, 0), Err(SlotError::Misordered));
        assert_eq!(t.begin(1, 1, 0), Ok(SlotDecision::Execute));
        t.complete(1, 0, Some(reply("x")));
        assert_eq!(t.begin(1, 3, 0), Err(SlotError::Misordered));
    }

    #[test]
    fn seqid_wraps() {
        let mut t = SlotTable::new(1, CacheMemory::new(1 << 20));
        t.slots[0].seqid = u32::MAX;
        assert_eq!(t.begin(0, 0, 0), Ok(SlotDecision::Execute));
    }

    #[test]
    fn slots_are_independent_and_many() {
        let mut t = SlotTable::new(2048, CacheMemory::new(1 << 30));
        for s in 0..2048 {
            assert_eq!(t.begin(s, 1, s as u64), Ok(SlotDecision::Execute));
        }
        for s in 0..2048 {
            t.complete(s, s as u64, Some(reply("ok")));
        }
        assert_eq!(t.cached_bytes(), 4096);
        assert_eq!(t.target_highest_slotid(), 2047);
    }

    #[test]
    fn memory_pressure_lowers_target_and_drop_releases() {
        let mem = CacheMemory::new(10);
        {
            let mut t = SlotTable::new(64, mem.clone());
            for s in 0..40 {
                t.begin(s, 1, 0).unwrap();
                t.complete(s, 0, Some(reply("abc")));
            }
            assert!(mem.under_pressure());
            assert_eq!(t.target_highest_slotid(), 19);
        }
        assert_eq!(mem.used(), 0);
    }
}
