//! Record marking (RFC 5531 §11): a record is one or more fragments, each
//! preceded by a 4-byte header whose top bit marks the last fragment and
//! whose low 31 bits give the fragment length.

use bytes::{Buf, Bytes, BytesMut};
use std::io::{self, IoSlice};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

const LAST_FRAGMENT: u32 = 0x8000_0000;

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("record of at least {size} bytes exceeds the limit of {max}")]
    TooLarge { size: usize, max: usize },
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Reads whole records from a byte stream, reassembling fragments.
pub struct RecordReader<R> {
    inner: R,
    buf: BytesMut,
    max: usize,
}

impl<R: AsyncRead + Unpin> RecordReader<R> {
    pub fn new(inner: R, max: usize) -> Self {
        RecordReader {
            inner,
            buf: BytesMut::with_capacity(64 * 1024),
            max,
        }
    }

    /// Makes at least `n` bytes available in the buffer. `Ok(false)` on a
    /// clean end of stream before any byte of a new record.
    async fn fill(&mut self, n: usize, at_record_start: bool) -> Result<bool, RecordError> {
        while self.buf.len() < n {
            if self.buf.capacity() - self.buf.len() < n - self.buf.len() {
                self.buf.reserve((n - self.buf.len()).max(64 * 1024));
            }
            let got = self.inner.read_buf(&mut self.buf).await?;
            if got == 0 {
                if at_record_start && self.buf.is_empty() {
                    return Ok(false);
                }
                return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into());
            }
        }
        Ok(true)
    }

    /// The next complete record, or `None` at end of stream. A record that
    /// arrives as a single fragment is returned without copying.
    pub async fn next(&mut self) -> Result<Option<Bytes>, RecordError> {
        let mut assembled: Option<BytesMut> = None;
        loop {
            if !self.fill(4, assembled.is_none()).await? {
                return Ok(None);
            }
            let header = self.buf.get_u32();
            let len = (header & !LAST_FRAGMENT) as usize;
            let last = header & LAST_FRAGMENT != 0;
            let so_far = assembled.as_ref().map_or(0, |a| a.len());
            if so_far + len > self.max {
                return Err(RecordError::TooLarge {
                    size: so_far + len,
                    max: self.max,
                });
            }
            self.fill(len, false).await?;
            let frag = self.buf.split_to(len);
            match (&mut assembled, last) {
                (None, true) => return Ok(Some(frag.freeze())),
                (None, false) => assembled = Some(frag),
                (Some(a), _) => a.extend_from_slice(&frag),
            }
            if last {
                return Ok(assembled.take().map(BytesMut::freeze));
            }
        }
    }
}

/// The record-marking header for a one-fragment record of `len` bytes.
pub fn record_header(len: usize) -> Bytes {
    Bytes::copy_from_slice(&(LAST_FRAGMENT | len as u32).to_be_bytes())
}

/// Writes a gather list in full with vectored writes.
pub async fn write_all_vectored<W: AsyncWrite + Unpin>(
    w: &mut W,
    mut chunks: &mut [Bytes],
) -> io::Result<()> {
    while !chunks.is_empty() {
        let slices: Vec<IoSlice<'_>> = chunks.iter().take(64).map(|c| IoSlice::new(c)).collect();
        let mut n = w.write_vectored(&slices).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        while n > 0 {
            let first = &mut chunks[0];
            if n >= first.len() {
                n -= first.len();
                chunks = &mut chunks[1..];
            } else {
                first.advance(n);
                n = 0;
            }
        }
        while chunks.first().is_some_and(|c| c.is_empty()) {
            chunks = &mut chunks[1..];
        }
    }
    w.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

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
    async fn vectored_write_handles_partial_writes() {
        let (mut a, mut b) = tokio::io::duplex(7);
        let mut chunks = vec![
            Bytes::from_static(b"0123456789"),
            Bytes::new(),
            Bytes::from_static(b"abc"),
        ];
        let writer = tokio::spawn(async move {
            write_all_vectored(&mut a, &mut chunks).await.unwrap();
        });
        let mut got = vec![0u8; 13];
        b.read_exact(&mut got).await.unwrap();
        writer.await.unwrap();
        assert_eq!(&got, b"0123456789abc");
    }
}
