//! Byte-range locks on one file, shared by every front end (NFSv4 LOCK,
//! and NLM later) so their locks see each other.
//!
//! POSIX semantics (as fcntl(2) and RFC 8881 §9.5): a lock owner's locks
//! on a file never overlap each other; locking a range replaces whatever
//! the owner held there (upgrade or downgrade), splitting older ranges, and
//! adjacent ranges of the same type join. Unlocking punches a hole. Each
//! owner's ranges live in an ordered map, so every operation costs
//! O(log n + k) for k ranges touched, never a scan of all ranges.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

/// Read (shared) or write (exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockKind {
    Read,
    Write,
}

/// A held range: `start` inclusive, `end` exclusive; `end == u64::MAX`
/// means "to the end of the file".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held<O> {
    pub owner: O,
    pub start: u64,
    pub end: u64,
    pub kind: LockKind,
}

/// Converts an NFS (offset, length) to a half-open range, `None` when the
/// range is invalid (length 0, or it runs past 2^64 - 1 without being the
/// "to end of file" length). RFC 8881 §18.10.3.
pub fn range(offset: u64, length: u64) -> Option<(u64, u64)> {
    if length == 0 {
        return None;
    }
    if length == u64::MAX {
        return Some((offset, u64::MAX));
    }
    offset.checked_add(length).map(|end| (offset, end))
}

/// The NFS length of a half-open range.
pub fn length(start: u64, end: u64) -> u64 {
    if end == u64::MAX {
        u64::MAX
    } else {
        end - start
    }
}

/// All locks on one file.
#[derive(Debug)]
pub struct FileLocks<O> {
    owners: HashMap<O, BTreeMap<u64, (u64, LockKind)>>,
}

impl<O> Default for FileLocks<O> {
    fn default() -> Self {
        FileLocks {
            owners: HashMap::new(),
        }
    }
}

impl<O: Clone + Eq + Hash> FileLocks<O> {
    pub fn is_empty(&self) -> bool {
        self.owners.is_empty()
    }

    /// The first lock of another owner that conflicts with `kind` on
    /// `[start, end)`.
    pub fn test(&self, owner: &O, start: u64, end: u64, kind: LockKind) -> Option<Held<O>> {
        for (o, ranges) in &self.owners {
            if o == owner {
                continue;
            }
            if let Some((s, e, k)) = first_overlap(ranges, start, end, |k| {
                kind == LockKind::Write || k == LockKind::Write
            }) {
                return Some(Held {
                    owner: o.clone(),
                    start: s,
                    end: e,
                    kind: k,
                });
            }
        }
        None
    }

    /// Locks `[start, end)` for `owner` unless another owner's lock
    /// conflicts, in which case that lock is returned and nothing changes.
    pub fn lock(&mut self, owner: &O, start: u64, end: u64, kind: LockKind) -> Result<(), Held<O>> {
        if let Some(c) = self.test(owner, start, end, kind) {
            return Err(c);
        }
        let ranges = self.owners.entry(owner.clone()).or_default();
        punch(ranges, start, end);
        let (mut s, mut e) = (start, end);
        // Join with a same-kind neighbour ending exactly at `start`...
        if let Some((&ps, &(pe, pk))) = ranges.range(..s).next_back() {
            if pe == s && pk == kind {
                ranges.remove(&ps);
                s = ps;
            }
        }
        // ...and one starting exactly at `end`.
        if e != u64::MAX {
            if let Some(&(ne, nk)) = ranges.get(&e) {
                if nk == kind {
                    ranges.remove(&e);
                    e = ne;
                }
            }
        }
        ranges.insert(s, (e, kind));
        Ok(())
    }

    /// Releases `[start, end)` of `owner`'s locks (splitting as needed).
    pub fn unlock(&mut self, owner: &O, start: u64, end: u64) {
        if let Some(ranges) = self.owners.get_mut(owner) {
            punch(ranges, start, end);
            if ranges.is_empty() {
                self.owners.remove(owner);
            }
        }
    }

    /// Whether `owner`'s locks (of any kind) cover all of `[start, end)`.
    pub fn covers(&self, owner: &O, start: u64, end: u64) -> bool {
        let Some(ranges) = self.owners.get(owner) else {
            return false;
        };
        let mut pos = match ranges.range(..=start).next_back() {
            Some((_, &(e, _))) if e > start => e,
            _ => return false,
        };
        // Held ranges touching each other differ in kind (same kinds join).
        while pos < end {
            match ranges.get(&pos) {
                Some(&(e, _)) => pos = e,
                None => return false,
            }
        }
        true
    }

    /// Whether `owner` holds any lock here.
    pub fn holds_any(&self, owner: &O) -> bool {
        self.owners.get(owner).is_some_and(|r| !r.is_empty())
    }

    /// Whether some owner matching `f` holds a lock here.
    pub fn any_owner(&self, f: impl Fn(&O) -> bool) -> bool {
        self.owners.keys().any(f)
    }

    /// Drops every lock of `owner`.
    pub fn remove_owner(&mut self, owner: &O) {
        self.owners.remove(owner);
    }

    /// Drops every lock of owners matching `f`.
    pub fn retain_owners(&mut self, mut f: impl FnMut(&O) -> bool) {
        self.owners.retain(|o, _| f(o));
    }

    /// The owners holding locks here.
    pub fn owners(&self) -> impl Iterator<Item = &O> {
        self.owners.keys()
    }

    /// The parts of `[start, end)` where `owner` holds no lock, in order.
    pub fn gaps(&self, owner: &O, start: u64, end: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut pos = start;
        if let Some(ranges) = self.owners.get(owner) {
            let before = ranges.range(..start).next_back().map(|(&s, &v)| (s, v));
            let inside = ranges
                .range(start..)
                .take_while(|(&s, _)| s < end)
                .map(|(&s, &v)| (s, v));
            for (s, (e, _)) in before.into_iter().chain(inside) {
                if e <= pos {
                    continue;
                }
                if s > pos {
                    out.push((pos, s));
                }
                pos = e;
                if pos >= end {
                    return out;
                }
            }
        }
        if pos < end {
            out.push((pos, end));
        }
        out
    }

    /// `owner`'s ranges in order.
    pub fn held_by(&self, owner: &O) -> Vec<(u64, u64, LockKind)> {
        self.owners
            .get(owner)
            .map(|r| r.iter().map(|(&s, &(e, k))| (s, e, k)).collect())
            .unwrap_or_default()
    }
}

/// The first range overlapping `[start, end)` whose kind satisfies `pred`.
fn first_overlap(
    ranges: &BTreeMap<u64, (u64, LockKind)>,
    start: u64,
    end: u64,
    pred: impl Fn(LockKind) -> bool,
) -> Option<(u64, u64, LockKind)> {
    if let Some((&s, &(e, k))) = ranges.range(..start).next_back() {
        if e > start && pred(k) {
            return Some((s, e, k));
        }
    }
    ranges
        .range(start..)
        .take_while(|(&s, _)| s < end)
        .find(|(_, &(_, k))| pred(k))
        .map(|(&s, &(e, k))| (s, e, k))
}

/// Removes `[start, end)` from an owner's ranges, keeping what lies outside.
fn punch(ranges: &mut BTreeMap<u64, (u64, LockKind)>, start: u64, end: u64) {
    if let Some((&s, &(e, k))) = ranges.range(..start).next_back() {
        if e > start {
            ranges.insert(s, (start, k));
            if e > end {
                ranges.insert(end, (e, k));
                return;
            }
        }
    }
    let inside: Vec<u64> = ranges
        .range(start..)
        .take_while(|(&s, _)| s < end)
        .map(|(&s, _)| s)
        .collect();
    for s in inside {
        if let Some((e, k)) = ranges.remove(&s) {
            if e > end {
                ranges.insert(end, (e, k));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use LockKind::*;

    #[test]
    fn ranges_from_offset_length() {
        assert_eq!(range(0, 0), None);
        assert_eq!(range(5, u64::MAX), Some((5, u64::MAX)));
        assert_eq!(range(u64::MAX - 1, 2), None);
        assert_eq!(range(10, 5), Some((10, 15)));
        assert_eq!(length(10, 15), 5);
        assert_eq!(length(10, u64::MAX), u64::MAX);
    }

    #[test]
    fn conflicts_between_owners() {
        let mut f = FileLocks::default();
        f.lock(&1, 0, 100, Read).unwrap();
        f.lock(&2, 50, 150, Read).unwrap();
        let c = f.lock(&3, 90, 95, Write).unwrap_err();
        assert!(c.owner == 1 || c.owner == 2);
        assert!(f.lock(&3, 150, 200, Write).is_ok());
        assert_eq!(f.test(&1, 160, 161, Read).unwrap().owner, 3);
        // an owner never conflicts with itself
        assert!(f.lock(&1, 0, 10, Write).is_ok());
    }

    #[test]
    fn split_upgrade_join_like_posix() {
        let mut f = FileLocks::default();
        f.lock(&1, 0, 100, Read).unwrap();
        f.lock(&1, 40, 60, Write).unwrap();
        assert_eq!(
            f.held_by(&1),
            vec![(0, 40, Read), (40, 60, Write), (60, 100, Read)]
        );
        f.lock(&1, 40, 60, Read).unwrap();
        assert_eq!(f.held_by(&1), vec![(0, 100, Read)]);
        f.unlock(&1, 10, 20);
        assert_eq!(f.held_by(&1), vec![(0, 10, Read), (20, 100, Read)]);
        f.lock(&1, 10, 20, Read).unwrap();
        assert_eq!(f.held_by(&1), vec![(0, 100, Read)]);
        f.unlock(&1, 0, u64::MAX);
        assert!(!f.holds_any(&1));
        assert!(f.is_empty());
    }

    #[test]
    fn covering() {
        let mut f = FileLocks::default();
        f.lock(&1, 10, 20, Read).unwrap();
        f.lock(&1, 20, 30, Write).unwrap();
        f.lock(&1, 40, u64::MAX, Read).unwrap();
        assert!(f.covers(&1, 10, 30));
        assert!(f.covers(&1, 15, 25));
        assert!(!f.covers(&1, 5, 15));
        assert!(!f.covers(&1, 25, 45));
        assert!(f.covers(&1, 50, u64::MAX));
        assert!(!f.covers(&2, 10, 11));
    }

    #[test]
    fn gaps_in_an_owners_locks() {
        let mut f = FileLocks::default();
        assert_eq!(f.gaps(&1, 0, 10), vec![(0, 10)]);
        f.lock(&1, 10, 20, Read).unwrap();
        f.lock(&1, 30, 40, Write).unwrap();
        assert_eq!(f.gaps(&1, 0, 50), vec![(0, 10), (20, 30), (40, 50)]);
        assert_eq!(f.gaps(&1, 15, 35), vec![(20, 30)]);
        assert_eq!(f.gaps(&1, 12, 18), vec![]);
        assert_eq!(f.gaps(&1, 35, u64::MAX), vec![(40, u64::MAX)]);
        assert_eq!(f.gaps(&2, 5, 6), vec![(5, 6)]);
    }

    #[test]
    fn unlock_spanning_several_ranges() {
        let mut f = FileLocks::default();
        f.lock(&1, 0, 10, Read).unwrap();
        f.lock(&1, 20, 30, Write).unwrap();
        f.lock(&1, 40, u64::MAX, Read).unwrap();
        f.unlock(&1, 5, 45);
        assert_eq!(f.held_by(&1), vec![(0, 5, Read), (45, u64::MAX, Read)]);
    }

    #[test]
    fn thirty_thousand_holes_punched_from_a_whole_file_lock() {
        let mut f = FileLocks::default();
        f.lock(&1, 0, u64::MAX, Write).unwrap();
        for i in 0..30_000u64 {
            f.unlock(&1, i * 2000, i * 2000 + 1000);
        }
        assert_eq!(f.held_by(&1).len(), 30_000);
        assert!(f.lock(&2, 500, 600, Read).is_ok());
        assert!(f.lock(&2, 1500, 1600, Read).is_err());
    }
}
