//! Small bounded caches and the change-attribute tracker.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard};

/// Locks a mutex, ignoring poisoning (no code holding these locks panics,
/// and the maps stay consistent regardless).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A map with a size cap. When full, an entry is evicted by the CLOCK
/// rule (second chance): entries are visited in the order they came in;
/// one used since its last visit is spared once, the first one that was
/// not goes. Entries in use stay; ones not touched since go first.
pub(crate) struct Bounded<K, V> {
    /// Value and whether it was used since the clock hand last passed.
    map: HashMap<K, (V, bool)>,
    /// The clock: keys in the order they entered. Keys removed since may
    /// linger (skipped when reached); compacted when it grows past twice
    /// the cap.
    ring: VecDeque<K>,
    cap: usize,
    hits: u64,
    misses: u64,
    /// What the cache holds, for its hit-rate log line.
    name: &'static str,
}

/// Lookups between two hit-rate log lines of a [`Bounded`] cache.
const REPORT_EVERY: u64 = 1 << 20;

impl<K: Hash + Eq + Clone, V: Clone> Bounded<K, V> {
    /// An empty cache of at most `cap` entries; every [`REPORT_EVERY`]
    /// lookups it logs its hit rate under `name`.
    pub(crate) fn new(name: &'static str, cap: usize) -> Self {
        Bounded {
            map: HashMap::new(),
            ring: VecDeque::new(),
            cap: cap.max(1),
            hits: 0,
            misses: 0,
            name,
        }
    }

    /// The value of `k`, marking it used.
    pub(crate) fn get(&mut self, k: &K) -> Option<V> {
        let got = match self.map.get_mut(k) {
            Some((v, used)) => {
                *used = true;
                self.hits += 1;
                Some(v.clone())
            }
            None => {
                self.misses += 1;
                None
            }
        };
        let (hits, misses) = (self.hits, self.misses);
        if (hits + misses) % REPORT_EVERY == 0 {
            tracing::info!(
                cache = self.name,
                hits,
                misses,
                entries = self.map.len(),
                entries_max = self.cap,
                "{} cache: {:.1}% hits",
                self.name,
                hits as f64 * 100.0 / (hits + misses) as f64
            );
        }
        got
    }

    /// The value of `k` to change in place, marking it used.
    pub(crate) fn get_mut(&mut self, k: &K) -> Option<&mut V> {
        self.map.get_mut(k).map(|(v, used)| {
            *used = true;
            v
        })
    }

    pub(crate) fn insert(&mut self, k: K, v: V) {
        if let Some(e) = self.map.get_mut(&k) {
            *e = (v, true);
            return;
        }
        while self.map.len() >= self.cap {
            self.evict_one();
        }
        if self.ring.len() >= 2 * self.cap {
            let map = &self.map;
            self.ring.retain(|k| map.contains_key(k));
        }
        self.ring.push_back(k.clone());
        self.map.insert(k, (v, false));
    }

    fn evict_one(&mut self) {
        while let Some(k) = self.ring.pop_front() {
            match self.map.get_mut(&k) {
                None => continue,
                Some((_, used)) if *used => {
                    *used = false;
                    self.ring.push_back(k);
                }
                Some(_) => {
                    self.map.remove(&k);
                    return;
                }
            }
        }
        // The ring lost track (cannot happen: every key is in it).
        if let Some(k) = self.map.keys().next().cloned() {
            self.map.remove(&k);
        }
    }

    pub(crate) fn remove(&mut self, k: &K) -> Option<V> {
        self.map.remove(k).map(|(v, _)| v)
    }

    #[cfg(test)]
    pub(crate) fn clear(&mut self) {
        self.map.clear();
        self.ring.clear();
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// (hits, misses) of [`Bounded::get`] so far.
    #[cfg(test)]
    pub(crate) fn hit_counts(&self) -> (u64, u64) {
        (self.hits, self.misses)
    }

    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (&K, &mut V)> {
        self.map.iter_mut().map(|(k, (v, _))| (k, v))
    }
}

/// Derives `Attr::change` from ctime plus a bump counter so the value moves
/// on every modification made through the backend, even several within one
/// ctime tick.
///
/// Per fileid it remembers `(ctime_ns, change)` for objects we modified.
/// Without an entry, change = ctime_ns. After a modification: same ctime as
/// the entry → change + 1; no entry → ctime + 1; a different ctime →
/// max(ctime, old change + 1) + 1. When a getattr sees a ctime that moved
/// (an outside modification), the entry becomes (ctime, max(ctime, old + 1)),
/// so values never repeat while the entry lives. The map is bounded; an
/// evicted entry falls back to plain ctime.
pub(crate) struct ChangeTracker {
    map: Mutex<Bounded<u64, (u64, u64)>>,
}

impl ChangeTracker {
    pub(crate) fn new(cap: usize) -> Self {
        ChangeTracker {
            map: Mutex::new(Bounded::new("change attribute", cap)),
        }
    }

    /// The change value for an object with this fileid and ctime.
    pub(crate) fn observe(&self, fileid: u64, ctime_ns: u64) -> u64 {
        let mut m = lock(&self.map);
        match m.get_mut(&fileid) {
            None => ctime_ns,
            Some(e) if e.0 == ctime_ns => e.1,
            Some(e) => {
                let v = ctime_ns.max(e.1.saturating_add(1));
                *e = (ctime_ns, v);
                v
            }
        }
    }

    /// Records a modification that left the object with this ctime.
    pub(crate) fn modified(&self, fileid: u64, ctime_ns: u64) {
        let mut m = lock(&self.map);
        let next = match m.get_mut(&fileid).copied() {
            None => ctime_ns.saturating_add(1),
            Some(e) if e.0 == ctime_ns => e.1.saturating_add(1),
            Some(e) => ctime_ns.max(e.1.saturating_add(1)).saturating_add(1),
        };
        m.insert(fileid, (ctime_ns, next));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_spares_entries_in_use() {
        let mut b = Bounded::new("test", 4);
        for k in 0..4u32 {
            b.insert(k, k * 10);
        }
        // 0 and 2 are in use; 1 and 3 are not.
        assert_eq!(b.get(&0), Some(0));
        assert_eq!(b.get(&2), Some(20));
        b.insert(4, 40);
        b.insert(5, 50);
        assert_eq!(b.len(), 4);
        assert_eq!(b.get(&1), None);
        assert_eq!(b.get(&3), None);
        for k in [0, 2, 4, 5] {
            assert_eq!(b.get(&k), Some(k * 10), "{k}");
        }
        assert_eq!(b.hit_counts(), (6, 2));
        // Replacing a value keeps one entry.
        b.insert(5, 55);
        assert_eq!(b.len(), 4);
        assert_eq!(b.get(&5), Some(55));
    }

    #[test]
    fn a_hot_set_stays_while_a_scan_passes_through() {
        let mut b = Bounded::new("test", 100);
        for round in 0..50u32 {
            for hot in 0..50u32 {
                if b.get(&hot).is_none() {
                    b.insert(hot, hot);
                }
            }
            // Keys seen once each, fewer than the cache holds per round
            // (CLOCK spares an entry used since the hand last passed).
            for cold in 0..40u32 {
                b.insert(1000 + round * 40 + cold, 0);
            }
        }
        let hot = (0..50u32).filter(|k| b.get(k).is_some()).count();
        assert_eq!(hot, 50, "every hot key survived the scans");
        assert!(b.len() <= 100);
    }

    #[test]
    fn removals_and_reinsertions_keep_the_ring_bounded() {
        let mut b = Bounded::new("test", 8);
        for i in 0..10_000u32 {
            b.insert(i % 16, i);
            b.remove(&((i + 3) % 16));
            assert!(b.len() <= 8);
            assert!(b.ring.len() <= 2 * 8 + 1, "{}", b.ring.len());
        }
    }
}
