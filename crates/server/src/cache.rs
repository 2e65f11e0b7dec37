//! A small bounded cache shared by the server's modules.

use std::borrow::Borrow;
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A bounded cache: the oldest entry goes first when it is full, and
/// entries older than the time to live are not answered.
pub(crate) struct Cache<K, V> {
    /// What it holds, for its hit-rate log line.
    name: &'static str,
    inner: Mutex<CacheInner<K, V>>,
    cap: usize,
    ttl: Duration,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// Lookups between two hit-rate log lines of a [`Cache`].
const REPORT_EVERY: u64 = 1 << 16;

struct CacheInner<K, V> {
    map: HashMap<K, (V, Instant)>,
    /// Keys in insertion order, for eviction.
    order: VecDeque<K>,
}

impl<K: Hash + Eq + Clone, V: Clone> Cache<K, V> {
    pub(crate) fn new(name: &'static str, cap: usize, ttl: Duration) -> Self {
        Cache {
            name,
            inner: Mutex::new(CacheInner {
                map: HashMap::new(),
                order: VecDeque::new(),
            }),
            cap: cap.max(1),
            ttl,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    pub(crate) fn get<Q: Hash + Eq + ?Sized>(&self, k: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        let got = {
            let m = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            m.map
                .get(k)
                .filter(|(_, at)| at.elapsed() < self.ttl)
                .map(|(v, _)| v.clone())
        };
        let counter = if got.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let (hits, misses) = (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        );
        if (hits + misses) % REPORT_EVERY == 0 {
            tracing::info!(
                cache = self.name,
                hits,
                misses,
                entries_max = self.cap,
                "{} cache: {:.1}% hits",
                self.name,
                hits as f64 * 100.0 / (hits + misses) as f64
            );
        }
        got
    }

    pub(crate) fn insert(&self, k: K, v: V) {
        let mut m = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if m.map.insert(k.clone(), (v, Instant::now())).is_none() {
            m.order.push_back(k);
            while m.map.len() > self.cap {
                let Some(old) = m.order.pop_front() else {
                    break;
                };
                m.map.remove(&old);
            }
        }
    }

    /// The cached answer for `k`, or `f`'s, then cached.
    pub(crate) fn get_or(&self, k: &K, f: impl FnOnce() -> V) -> V {
        if let Some(v) = self.get(k) {
            return v;
        }
        let v = f();
        self.insert(k.clone(), v.clone());
        v
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.inner.lock().map(|m| m.map.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_is_bounded_and_expires() {
        let c: Cache<u32, u32> = Cache::new("test", 16, Duration::from_secs(600));
        for k in 0..1000 {
            c.insert(k, k * 2);
        }
        assert_eq!(c.len(), 16);
        assert_eq!(c.get(&0), None);
        assert_eq!(c.get(&999), Some(1998));
        // Updating an entry keeps one copy.
        c.insert(999, 1);
        assert_eq!((c.len(), c.get(&999)), (16, Some(1)));

        let c: Cache<String, Option<u32>> = Cache::new("test", 16, Duration::ZERO);
        c.insert("x".into(), None);
        assert_eq!(c.get("x"), None);
        assert_eq!(c.get_or(&"x".to_string(), || Some(3)), Some(3));
    }
}
