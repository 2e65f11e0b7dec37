//! Sparse file contents: fixed-size chunks in a map, so holes cost
//! nothing, and the byte budget they are charged to.

use std::collections::BTreeMap;

use crate::{Errno, Result};

/// Bytes per chunk: the unit of allocation, `used` and SEEK.
pub(super) const CHUNK: u64 = 4096;

/// The byte budget of a file system.
#[derive(Debug)]
pub(super) struct Space {
    pub(super) used: u64,
    pub(super) max: u64,
}

impl Space {
    /// Whether `n` more bytes fit.
    pub(super) fn fits(&self, n: u64) -> bool {
        self.used.checked_add(n).is_some_and(|u| u <= self.max)
    }

    /// Takes `n` bytes, or fails with ENOSPC taking nothing.
    pub(super) fn charge(&mut self, n: u64) -> Result<()> {
        if !self.fits(n) {
            return Err(Errno(libc::ENOSPC));
        }
        self.used += n;
        Ok(())
    }

    pub(super) fn refund(&mut self, n: u64) {
        self.used = self.used.saturating_sub(n);
    }
}

/// A regular file's bytes. Chunks never lie wholly past the file's size
/// (callers truncate through [`Data::truncate`]).
#[derive(Debug, Default)]
pub(super) struct Data {
    chunks: BTreeMap<u64, Box<[u8]>>,
}

/// The chunk indexes `[first, last]` touching the non-empty byte range
/// `[start, end)`.
fn span(start: u64, end: u64) -> (u64, u64) {
    (start / CHUNK, (end - 1) / CHUNK)
}

impl Data {
    /// Bytes allocated.
    pub(super) fn used(&self) -> u64 {
        self.chunks.len() as u64 * CHUNK
    }

    /// Chunks of `[start, end)` not allocated yet.
    fn missing(&self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        let (first, last) = span(start, end);
        (last - first + 1) - self.chunks.range(first..=last).count() as u64
    }

    /// `len` bytes from `off`, holes as zeros.
    pub(super) fn read(&self, off: u64, len: usize) -> Vec<u8> {
        let mut out = vec![0u8; len];
        if len == 0 {
            return out;
        }
        let end = off + len as u64;
        let (first, last) = span(off, end);
        for (&i, c) in self.chunks.range(first..=last) {
            let cs = i * CHUNK;
            let from = off.max(cs);
            let to = end.min(cs + CHUNK);
            out[(from - off) as usize..(to - off) as usize]
                .copy_from_slice(&c[(from - cs) as usize..(to - cs) as usize]);
        }
        out
    }

    /// Writes `data` at `off`, allocating chunks; ENOSPC changes nothing.
    /// The caller checked that the range fits the largest file size.
    pub(super) fn write(&mut self, off: u64, data: &[u8], space: &mut Space) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let end = off + data.len() as u64;
        space.charge(self.missing(off, end) * CHUNK)?;
        let (first, last) = span(off, end);
        for i in first..=last {
            let cs = i * CHUNK;
            let from = off.max(cs);
            let to = end.min(cs + CHUNK);
            let c = self
                .chunks
                .entry(i)
                .or_insert_with(|| vec![0u8; CHUNK as usize].into_boxed_slice());
            c[(from - cs) as usize..(to - cs) as usize]
                .copy_from_slice(&data[(from - off) as usize..(to - off) as usize]);
        }
        Ok(())
    }

    /// Allocates zeroed chunks over `[start, end)`; ENOSPC changes nothing.
    pub(super) fn allocate(&mut self, start: u64, end: u64, space: &mut Space) -> Result<()> {
        let missing = self.missing(start, end);
        if missing == 0 {
            return Ok(());
        }
        space.charge(missing * CHUNK)?;
        // The charge bounds the loop: every index is either present or
        // one of `missing`, both limited by the budget.
        let (first, last) = span(start, end);
        for i in first..=last {
            self.chunks
                .entry(i)
                .or_insert_with(|| vec![0u8; CHUNK as usize].into_boxed_slice());
        }
        Ok(())
    }

    /// Zeroes `[start, end)`, freeing the chunks it covers whole.
    pub(super) fn punch(&mut self, start: u64, end: u64, space: &mut Space) {
        if start >= end {
            return;
        }
        let (first, last) = span(start, end);
        let touched: Vec<u64> = self.chunks.range(first..=last).map(|(&i, _)| i).collect();
        for i in touched {
            let cs = i * CHUNK;
            let from = start.max(cs);
            let to = end.min(cs + CHUNK);
            if from == cs && to == cs + CHUNK {
                self.chunks.remove(&i);
                space.refund(CHUNK);
            } else if let Some(c) = self.chunks.get_mut(&i) {
                c[(from - cs) as usize..(to - cs) as usize].fill(0);
            }
        }
    }

    /// Drops everything at or past `size`.
    pub(super) fn truncate(&mut self, size: u64, space: &mut Space) {
        let keep = size.div_ceil(CHUNK);
        let gone = self.chunks.split_off(&keep);
        space.refund(gone.len() as u64 * CHUNK);
        if !size.is_multiple_of(CHUNK) {
            if let Some(c) = self.chunks.get_mut(&(size / CHUNK)) {
                c[(size % CHUNK) as usize..].fill(0);
            }
        }
    }

    /// Frees everything.
    pub(super) fn clear(&mut self, space: &mut Space) {
        space.refund(self.used());
        self.chunks.clear();
    }

    /// The allocated range `[start, end)` holding `pos` or the first one
    /// after it, cut to start at `pos`.
    pub(super) fn data_from(&self, pos: u64) -> Option<(u64, u64)> {
        let (&i, _) = self.chunks.range(pos / CHUNK..).next()?;
        Some((pos.max(i * CHUNK), (i + 1) * CHUNK))
    }

    /// SEEK_DATA in a file of `size` bytes.
    pub(super) fn seek_data(&self, off: u64, size: u64) -> Option<u64> {
        if off >= size {
            return None;
        }
        self.data_from(off)
            .map(|(start, _)| start)
            .filter(|&s| s < size)
    }

    /// SEEK_HOLE in a file of `size` bytes (its end is a hole).
    pub(super) fn seek_hole(&self, off: u64, size: u64) -> Option<u64> {
        if off >= size {
            return None;
        }
        let mut next = off / CHUNK;
        for (&i, _) in self.chunks.range(next..) {
            if i != next {
                break;
            }
            next += 1;
        }
        Some(off.max(next.saturating_mul(CHUNK)).min(size))
    }

    /// Allocated chunks of `[start, end)`, as chunk indexes.
    pub(super) fn chunks_in(&self, start: u64, end: u64) -> Vec<u64> {
        if start >= end {
            return Vec::new();
        }
        let (first, last) = span(start, end);
        self.chunks.range(first..=last).map(|(&i, _)| i).collect()
    }

    pub(super) fn has_chunk(&self, i: u64) -> bool {
        self.chunks.contains_key(&i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space() -> Space {
        Space {
            used: 0,
            max: 16 * CHUNK,
        }
    }

    #[test]
    fn holes_cost_nothing_and_read_as_zeros() {
        let mut s = space();
        let mut d = Data::default();
        d.write(1 << 40, b"far", &mut s).unwrap();
        assert_eq!(d.used(), CHUNK);
        assert_eq!(s.used, CHUNK);
        assert_eq!(d.read((1 << 40) - 2, 5), b"\0\0far");
        assert_eq!(d.read(0, 3), b"\0\0\0");
        // straddling two chunks
        d.write(CHUNK - 1, b"ab", &mut s).unwrap();
        assert_eq!(d.used(), 3 * CHUNK);
        assert_eq!(d.read(CHUNK - 2, 4), b"\0ab\0");
    }

    #[test]
    fn the_budget_refuses_whole_writes() {
        let mut s = space();
        let mut d = Data::default();
        let big = vec![1u8; 17 * CHUNK as usize];
        assert_eq!(d.write(0, &big, &mut s), Err(Errno(libc::ENOSPC)));
        assert_eq!((d.used(), s.used), (0, 0));
        d.write(0, &big[..16 * CHUNK as usize], &mut s).unwrap();
        assert_eq!(d.write(16 * CHUNK, b"x", &mut s), Err(Errno(libc::ENOSPC)));
        // overwriting needs no new chunk
        d.write(5, b"y", &mut s).unwrap();
        d.clear(&mut s);
        assert_eq!(s.used, 0);
        // a huge allocation is refused without iterating over it
        assert_eq!(d.allocate(0, 1 << 62, &mut s), Err(Errno(libc::ENOSPC)));
    }

    #[test]
    fn punch_truncate_and_seek() {
        let mut s = space();
        let mut d = Data::default();
        d.write(0, &[7u8; 3 * CHUNK as usize], &mut s).unwrap();
        d.punch(10, 2 * CHUNK, &mut s);
        assert_eq!(d.used(), 2 * CHUNK, "the middle chunk is freed");
        assert_eq!(d.read(8, 4), b"\x07\x07\0\0");
        assert_eq!(d.seek_data(0, 3 * CHUNK), Some(0));
        assert_eq!(d.seek_hole(0, 3 * CHUNK), Some(CHUNK));
        assert_eq!(d.seek_data(CHUNK, 3 * CHUNK), Some(2 * CHUNK));
        assert_eq!(d.seek_hole(2 * CHUNK, 3 * CHUNK), Some(3 * CHUNK));
        assert_eq!(d.seek_data(3 * CHUNK, 3 * CHUNK), None);
        // the end of the file is a hole even inside a chunk
        assert_eq!(d.seek_hole(2 * CHUNK, 2 * CHUNK + 5), Some(2 * CHUNK + 5));
        d.truncate(2 * CHUNK + 3, &mut s);
        assert_eq!(d.used(), 2 * CHUNK);
        assert_eq!(d.read(2 * CHUNK, 5), b"\x07\x07\x07\0\0");
        d.truncate(0, &mut s);
        assert_eq!((d.used(), s.used), (0, 0));
        assert_eq!(d.seek_data(0, 10), None);
        assert_eq!(d.seek_hole(0, 10), Some(0));
        d.allocate(CHUNK + 1, CHUNK + 2, &mut s).unwrap();
        assert_eq!(d.chunks_in(0, 4 * CHUNK), vec![1]);
    }
}
