//! Record marking (RFC 5531 §11): a record is one or more fragments, each
//! preceded by a 4-byte header whose top bit marks the last fragment and
//! whose low 31 bits give the fragment length.

use bytes::{Buf, Bytes, BytesMut};
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::Notify;

const LAST_FRAGMENT: u32 = 0x8000_0000;

/// Most bytes taken from the socket by one read: a record's buffer grows
/// as its data arrives, never by what its header announces.
pub const READ_CHUNK: usize = 64 * 1024;

/// Bytes every connection may buffer without counting against its
/// [`BufferBudget`], so that small requests never wait for it.
pub const FREE_PER_CONN: usize = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("record of at least {size} bytes exceeds the limit of {max}")]
    TooLarge { size: usize, max: usize },
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Bytes buffered for records not yet complete, shared by several readers
/// (the connections of one listener). A reader holding more than
/// [`FREE_PER_CONN`] bytes waits for room before reading further, so the
/// total is at most `max` plus [`FREE_PER_CONN`] + [`READ_CHUNK`] per
/// reader.
#[derive(Debug)]
pub struct BufferBudget {
    used: AtomicUsize,
    max: usize,
    room: Notify,
}

impl BufferBudget {
    pub fn new(max: usize) -> Arc<Self> {
        Arc::new(BufferBudget {
            used: AtomicUsize::new(0),
            max,
            room: Notify::new(),
        })
    }

    /// Bytes counted now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// Resolves once the budget is not exhausted.
    async fn room(&self) {
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.used() < self.max.max(1) {
                return;
            }
            notified.await;
        }
    }

    fn add(&self, n: usize) {
        self.used.fetch_add(n, Ordering::AcqRel);
    }

    fn sub(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
        self.room.notify_waiters();
    }
}

/// Reads whole records from a byte stream, reassembling fragments.
pub struct RecordReader<R> {
    inner: R,
    buf: BytesMut,
    /// The fragments of a multi-fragment record received so far.
    assembled: Option<BytesMut>,
    max: usize,
    budget: Option<Arc<BufferBudget>>,
    /// Bytes counted against `budget`.
    charged: usize,
}

impl<R> Drop for RecordReader<R> {
    fn drop(&mut self) {
        if let Some(b) = &self.budget {
            if self.charged > 0 {
                b.sub(self.charged);
            }
        }
    }
}

impl<R: AsyncRead + Unpin> RecordReader<R> {
    pub fn new(inner: R, max: usize) -> Self {
        RecordReader {
            inner,
            buf: BytesMut::new(),
            assembled: None,
            max,
            budget: None,
            charged: 0,
        }
    }

    /// A reader whose buffered bytes count against `budget`.
    pub fn with_budget(inner: R, max: usize, budget: Arc<BufferBudget>) -> Self {
        let mut r = Self::new(inner, max);
        r.budget = Some(budget);
        r
    }

    /// The stream read from.
    pub fn inner_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// Bytes held for records not yet returned.
    pub fn buffered(&self) -> usize {
        self.buf.len() + self.assembled.as_ref().map_or(0, BytesMut::len)
    }

    /// Whether a whole record is buffered, so that [`Self::next`] returns
    /// it without reading.
    pub fn record_buffered(&self) -> bool {
        let mut at = 0usize;
        loop {
            let Some(h) = self.buf.get(at..at + 4) else {
                return false;
            };
            let header = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
            at = at.saturating_add(4 + (header & !LAST_FRAGMENT) as usize);
            if at > self.buf.len() {
                return false;
            }
            if header & LAST_FRAGMENT != 0 {
                return true;
            }
        }
    }

    /// Brings the budget's count in line with what is buffered.
    fn settle(&mut self) {
        let Some(b) = &self.budget else { return };
        let want = self.buffered().saturating_sub(FREE_PER_CONN);
        if want > self.charged {
            b.add(want - self.charged);
        } else if want < self.charged {
            b.sub(self.charged - want);
        }
        self.charged = want;
    }

    /// One read of at most [`READ_CHUNK`] bytes, after waiting for room in
    /// the budget if this reader holds more than its free share.
    async fn read_some(&mut self) -> io::Result<usize> {
        if let Some(b) = &self.budget {
            if self.buffered() >= FREE_PER_CONN {
                b.room().await;
            }
        }
        if self.buf.capacity() - self.buf.len() < READ_CHUNK {
            self.buf.reserve(READ_CHUNK);
        }
        let got = (&mut self.inner)
            .take(READ_CHUNK as u64)
            .read_buf(&mut self.buf)
            .await?;
        self.settle();
        Ok(got)
    }

    /// Makes at least `n` bytes available in the buffer. `Ok(false)` on a
    /// clean end of stream before any byte of a new record.
    async fn fill(&mut self, n: usize) -> Result<bool, RecordError> {
        while self.buf.len() < n {
            if self.read_some().await? == 0 {
                if self.buffered() == 0 {
                    return Ok(false);
                }
                return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into());
            }
        }
        Ok(true)
    }

    /// Waits until the next record has begun to arrive; `Ok(false)` at a
    /// clean end of stream. Cancel-safe.
    pub async fn ready(&mut self) -> Result<bool, RecordError> {
        self.fill(1).await
    }

    /// The next complete record, or `None` at end of stream. A record that
    /// arrives as a single fragment is returned without copying.
    /// Cancel-safe: a fragment is consumed only once it is complete.
    pub async fn next(&mut self) -> Result<Option<Bytes>, RecordError> {
        loop {
            if !self.fill(4).await? {
                return Ok(None);
            }
            let header = u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
            let len = (header & !LAST_FRAGMENT) as usize;
            let last = header & LAST_FRAGMENT != 0;
            let size = self
                .assembled
                .as_ref()
                .map_or(0, BytesMut::len)
                .saturating_add(len);
            if size > self.max {
                return Err(RecordError::TooLarge {
                    size,
                    max: self.max,
                });
            }
            self.fill(4 + len).await?;
            self.buf.advance(4);
            let frag = self.buf.split_to(len);
            let done = match (self.assembled.take(), last) {
                (None, true) => Some(frag.freeze()),
                (None, false) => {
                    self.assembled = Some(frag);
                    None
                }
                (Some(mut a), last) => {
                    a.extend_from_slice(&frag);
                    if last {
                        Some(a.freeze())
                    } else {
                        self.assembled = Some(a);
                        None
                    }
                }
            };
            self.settle();
            if let Some(rec) = done {
                return Ok(Some(rec));
            }
        }
    }
}

/// The record-marking header for a one-fragment record of `len` bytes.
pub fn record_header(len: usize) -> Bytes {
    Bytes::copy_from_slice(&(LAST_FRAGMENT | len as u32).to_be_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::AsyncWriteExt;

    async fn read_all(input: Vec<u8>, max: usize) -> Result<Vec<Bytes>, RecordError> {
        let mut r = RecordReader::new(&input[..], max);
        let mut out = Vec::new();
        while let Some(rec) = r.next().await? {
            out.push(rec);
        }
        Ok(out)
    }

    fn frag(data: &[u8], last: bool) -> Vec<u8> {
        let mut v = ((data.len() as u32) | if last { LAST_FRAGMENT } else { 0 })
            .to_be_bytes()
            .to_vec();
        v.extend_from_slice(data);
        v
    }

    #[tokio::test]
    async fn single_and_multi_fragment() {
        let mut input = frag(b"hello", true);
        input.extend(frag(b"ab", false));
        input.extend(frag(b"", false));
        input.extend(frag(b"cd", true));
        let recs = read_all(input, 100).await.unwrap();
        assert_eq!(recs, vec![Bytes::from("hello"), Bytes::from("abcd")]);
    }

    #[tokio::test]
    async fn many_small_fragments_like_pynfs() {
        let data: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        let mut input = Vec::new();
        let chunks: Vec<&[u8]> = data.chunks(2048).collect();
        for (i, c) in chunks.iter().enumerate() {
            input.extend(frag(c, i + 1 == chunks.len()));
        }
        let recs = read_all(input, 20_000).await.unwrap();
        assert_eq!(recs.len(), 1);
        assert_eq!(&recs[0][..], &data[..]);
    }

    #[tokio::test]
    async fn too_large_is_refused_before_reading_it() {
        let mut input = frag(&[0; 60], false);
        input.extend(frag(&[0; 60], true));
        match read_all(input, 100).await {
            Err(RecordError::TooLarge {
                size: 120,
                max: 100,
            }) => {}
            other => panic!("unexpected {other:?}"),
        }
        // a header announcing 2 GiB with nothing behind it
        let input = (LAST_FRAGMENT | 0x7fff_ffff).to_be_bytes().to_vec();
        assert!(matches!(
            read_all(input, 1 << 20).await,
            Err(RecordError::TooLarge { .. })
        ));
    }

    #[tokio::test]
    async fn truncated_record_is_an_error_clean_eof_is_not() {
        assert!(read_all(Vec::new(), 100).await.unwrap().is_empty());
        let mut input = frag(b"abcdef", true);
        input.truncate(7);
        assert!(matches!(
            read_all(input, 100).await,
            Err(RecordError::Io(_))
        ));
    }

    #[tokio::test]
    async fn buffer_grows_with_the_data_not_the_header() {
        // A header announcing 4 MiB followed by 10 bytes.
        let mut input = (LAST_FRAGMENT | (4 << 20)).to_be_bytes().to_vec();
        input.extend_from_slice(&[1; 10]);
        let (mut w, rd) = tokio::io::duplex(1 << 20);
        w.write_all(&input).await.unwrap();
        let mut r = RecordReader::new(rd, 8 << 20);
        assert!(
            tokio::time::timeout(Duration::from_millis(50), r.next())
                .await
                .is_err(),
            "the record is not complete"
        );
        assert_eq!(r.buffered(), 14);
        assert!(r.buf.capacity() <= 2 * READ_CHUNK, "{}", r.buf.capacity());
        // Cancel-safe: the rest arrives and the record is whole.
        let rest = vec![2u8; (4 << 20) - 10];
        let writer = tokio::spawn(async move {
            w.write_all(&rest).await.unwrap();
            w
        });
        let rec = r.next().await.unwrap().unwrap();
        assert_eq!(rec.len(), 4 << 20);
        assert_eq!(&rec[..11], &[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2]);
        drop(writer.await.unwrap());
    }

    #[tokio::test]
    async fn shared_budget_bounds_partial_records() {
        let budget = BufferBudget::new(256 * 1024);
        // Three readers each receiving 1 MiB of a record that never ends.
        let mut stalled = Vec::new();
        for _ in 0..3 {
            let (mut w, rd) = tokio::io::duplex(2 << 20);
            let mut input = (LAST_FRAGMENT | (2 << 20)).to_be_bytes().to_vec();
            input.extend(vec![0u8; 1 << 20]);
            tokio::spawn(async move {
                let _ = w.write_all(&input).await;
                // Keep the stream open.
                std::future::pending::<()>().await;
                drop(w);
            });
            let mut r = RecordReader::with_budget(rd, 4 << 20, budget.clone());
            stalled.push(tokio::spawn(async move { r.next().await.map(|_| ()) }));
        }
        // Until the budget is spent (the readers then wait for room),
        // however long this machine takes to get there.
        let spent = async {
            while budget.used() < 256 * 1024 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(30), spent)
            .await
            .expect("the readers spend the budget");
        let used = budget.used();
        assert!(
            (256 * 1024..=256 * 1024 + 3 * READ_CHUNK).contains(&used),
            "budget holds {used}"
        );
        assert!(stalled.iter().all(|t| !t.is_finished()));
        // Small records still get through on another connection.
        let mut input = frag(b"small", true);
        input.extend(frag(b"again", true));
        let mut r = RecordReader::with_budget(&input[..], 100, budget.clone());
        assert_eq!(r.next().await.unwrap().unwrap(), Bytes::from("small"));
        assert_eq!(r.next().await.unwrap().unwrap(), Bytes::from("again"));
        // Closing the stalled ones gives everything back.
        for t in stalled {
            t.abort();
            let _ = t.await;
        }
        assert_eq!(budget.used(), 0);
    }

    #[tokio::test]
    async fn record_buffered_sees_only_whole_records() {
        let (mut w, r) = tokio::io::duplex(1 << 16);
        let mut r = RecordReader::new(r, 1 << 20);
        assert!(!r.record_buffered());
        // A first fragment, then half of the last one.
        let mut input = frag(b"abc", false);
        input.extend(frag(b"defgh", true));
        w.write_all(&input[..input.len() - 2]).await.unwrap();
        assert!(r.ready().await.unwrap());
        assert!(!r.record_buffered());
        w.write_all(&input[input.len() - 2..]).await.unwrap();
        // Whatever arrived with the first read, the record is whole once
        // every byte has been read.
        while !r.record_buffered() {
            r.read_some().await.unwrap();
        }
        assert_eq!(&r.next().await.unwrap().unwrap()[..], b"abcdefgh");
        assert!(!r.record_buffered());
    }
}
