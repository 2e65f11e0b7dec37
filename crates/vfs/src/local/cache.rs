//! Small bounded caches and the change-attribute tracker.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard};

/// Locks a mutex, ignoring poisoning (no code holding these locks panics,
/// and the maps stay consistent regardless).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A map with a size cap; when full, an arbitrary entry is evicted.
pub(crate) struct Bounded<K, V> {
    map: HashMap<K, V>,
    cap: usize,
}

impl<K: Hash + Eq + Clone, V: Clone> Bounded<K, V> {
    pub(crate) fn new(cap: usize) -> Self {
        Bounded {
            map: HashMap::new(),
            cap: cap.max(1),
        }
    }

    pub(crate) fn get(&self, k: &K) -> Option<V> {
        self.map.get(k).cloned()
    }

    pub(crate) fn insert(&mut self, k: K, v: V) {
        if self.map.len() >= self.cap && !self.map.contains_key(&k) {
            if let Some(victim) = self.map.keys().next().cloned() {
                self.map.remove(&victim);
            }
        }
        self.map.insert(k, v);
    }

    pub(crate) fn remove(&mut self, k: &K) -> Option<V> {
        self.map.remove(k)
    }

    #[cfg(test)]
    pub(crate) fn clear(&mut self) {
        self.map.clear();
    }

    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (&K, &mut V)> {
        self.map.iter_mut()
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
            map: Mutex::new(Bounded::new(cap)),
        }
    }

    /// The change value for an object with this fileid and ctime.
    pub(crate) fn observe(&self, fileid: u64, ctime_ns: u64) -> u64 {
        let mut m = lock(&self.map);
        match m.map.get_mut(&fileid) {
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
        let next = match m.map.get(&fileid) {
            None => ctime_ns.saturating_add(1),
            Some(e) if e.0 == ctime_ns => e.1.saturating_add(1),
            Some(e) => ctime_ns.max(e.1.saturating_add(1)).saturating_add(1),
        };
        m.insert(fileid, (ctime_ns, next));
    }
}
