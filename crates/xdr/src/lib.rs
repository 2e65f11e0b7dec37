//! XDR, the External Data Representation (RFC 4506).
//!
//! Decoding works on a [`Bytes`] receive buffer: variable-length opaque data
//! comes back as a zero-copy slice of it. Encoding builds a gather list: small
//! items are copied into a growing buffer, large payloads (READ data) are
//! appended as their own [`Bytes`] chunk so they are never copied.
//!
//! Every variable-length item is bounded on decode: its declared length must
//! fit in what remains of the message and under an optional explicit maximum,
//! so a hostile peer cannot make us allocate more than it sent.

extern crate self as xdr;

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use bytes::{Buf, BufMut, Bytes, BytesMut};

pub use xdr_derive::{Pack, Unpack};

/// Payloads at least this long are appended to the gather list by reference.
pub const ZERO_COPY_THRESHOLD: usize = 1024;

/// Why a decode failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("message ends early: needed {needed} bytes, {left} left")]
    Short { needed: usize, left: usize },
    #[error("length {len} exceeds the bound {max}")]
    TooLong { len: usize, max: usize },
    #[error("invalid discriminant {0} for {1}")]
    BadDiscriminant(u32, &'static str),
    #[error("invalid boolean {0}")]
    BadBool(u32),
    #[error("string is not valid UTF-8")]
    BadUtf8,
    #[error("nonzero padding")]
    BadPadding,
}

pub type Result<T> = std::result::Result<T, Error>;

/// Padding needed after `len` bytes of opaque data (RFC 4506 §3.9).
pub fn pad_len(len: usize) -> usize {
    (4 - (len & 3)) & 3
}

/// A cursor over a received message.
#[derive(Debug, Clone)]
pub struct Decoder {
    buf: Bytes,
}

impl Decoder {
    pub fn new(buf: Bytes) -> Self {
        Decoder { buf }
    }

    /// Bytes not yet consumed.
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    /// The unconsumed rest of the message, without consuming it.
    pub fn rest(&self) -> &Bytes {
        &self.buf
    }

    /// Consumes and returns everything that is left.
    pub fn take_rest(&mut self) -> Bytes {
        std::mem::take(&mut self.buf)
    }

    fn need(&self, n: usize) -> Result<()> {
        if self.buf.len() < n {
            Err(Error::Short {
                needed: n,
                left: self.buf.len(),
            })
        } else {
            Ok(())
        }
    }

    pub fn u32(&mut self) -> Result<u32> {
        self.need(4)?;
        // Read in place and advance: `split_to` would take and drop a
        // reference to the shared buffer for every word.
        Ok(self.buf.get_u32())
    }

    pub fn u64(&mut self) -> Result<u64> {
        let hi = self.u32()? as u64;
        let lo = self.u32()? as u64;
        Ok(hi << 32 | lo)
    }

    pub fn bool(&mut self) -> Result<bool> {
        match self.u32()? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(Error::BadBool(v)),
        }
    }

    /// Fixed-length opaque data (RFC 4506 §4.9), zero-copy.
    pub fn fixed(&mut self, len: usize) -> Result<Bytes> {
        let padded = len.checked_add(pad_len(len)).ok_or(Error::TooLong {
            len,
            max: usize::MAX,
        })?;
        self.need(padded)?;
        if self.buf[len..padded].iter().any(|&b| b != 0) {
            return Err(Error::BadPadding);
        }
        let data = self.buf.split_to(len);
        self.buf.advance(padded - len);
        Ok(data)
    }

    /// Variable-length opaque data (RFC 4506 §4.10), zero-copy, at most `max` bytes.
    pub fn opaque(&mut self, max: usize) -> Result<Bytes> {
        let len = self.u32()? as usize;
        if len > max {
            return Err(Error::TooLong { len, max });
        }
        self.fixed(len)
    }

    /// The element count of a variable-length array, checked against `max`
    /// and against what the rest of the message could hold (every XDR item
    /// is at least `min_wire` bytes), so callers may pre-allocate it.
    pub fn count(&mut self, max: usize, min_wire: usize) -> Result<usize> {
        let n = self.u32()? as usize;
        if n > max {
            return Err(Error::TooLong { len: n, max });
        }
        if n.saturating_mul(min_wire.max(1)) > self.buf.len() {
            return Err(Error::Short {
                needed: n.saturating_mul(min_wire.max(1)),
                left: self.buf.len(),
            });
        }
        Ok(n)
    }
}

/// A range of a file, as reply data sent from the page cache without
/// passing through user memory (`sendfile`); [`Encoder::finish`] reads it
/// instead where the message must be in memory.
#[derive(Debug, Clone)]
pub struct FileSlice {
    pub file: Arc<File>,
    pub offset: u64,
    pub len: usize,
}

impl PartialEq for FileSlice {
    fn eq(&self, o: &FileSlice) -> bool {
        Arc::ptr_eq(&self.file, &o.file) && self.offset == o.offset && self.len == o.len
    }
}
impl Eq for FileSlice {}

impl FileSlice {
    /// Its bytes, read now; an error if the file no longer holds them all
    /// (it was truncated since).
    pub fn read(&self) -> std::io::Result<Bytes> {
        let mut buf = vec![0u8; self.len];
        self.file.read_exact_at(&mut buf, self.offset)?;
        Ok(Bytes::from(buf))
    }
}

/// One piece of a gather list: bytes in memory or a range of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Mem(Bytes),
    File(FileSlice),
}

impl Piece {
    pub fn len(&self) -> usize {
        match self {
            Piece::Mem(b) => b.len(),
            Piece::File(f) => f.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keeps the first `n` bytes.
    fn truncate(&mut self, n: usize) {
        match self {
            Piece::Mem(b) => b.truncate(n),
            Piece::File(f) => f.len = f.len.min(n),
        }
    }

    /// The piece in memory (a file's range read now); a range the file no
    /// longer holds reads as an error.
    pub fn into_mem(self) -> std::io::Result<Bytes> {
        match self {
            Piece::Mem(b) => Ok(b),
            Piece::File(f) => f.read(),
        }
    }
}

/// A gather list in memory: each range of a file read now (this blocks);
/// an error if one can no longer be read in full.
pub fn in_memory(pieces: Vec<Piece>) -> std::io::Result<Vec<Bytes>> {
    pieces.into_iter().map(Piece::into_mem).collect()
}

/// Opaque reply data: bytes in memory, or a range of a file that the
/// connection sends from the page cache ([`FileSlice`]). Decoding always
/// gives bytes in memory.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Payload {
    mem: Bytes,
    file: Option<FileSlice>,
}

impl Payload {
    /// Data to be sent from `slice` of a file.
    pub fn file(slice: FileSlice) -> Payload {
        Payload {
            mem: Bytes::new(),
            file: Some(slice),
        }
    }

    pub fn len(&self) -> usize {
        self.file.as_ref().map_or(self.mem.len(), |f| f.len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes, if in memory (always for a decoded payload).
    pub fn bytes(&self) -> Option<&Bytes> {
        self.file.is_none().then_some(&self.mem)
    }

    /// The bytes in memory, a file's range read now.
    pub fn into_mem(self) -> std::io::Result<Bytes> {
        match self.file {
            None => Ok(self.mem),
            Some(f) => f.read(),
        }
    }
}

/// `&payload[..]`: the bytes in memory, which are all of a decoded
/// payload's (what clients and tests look at); a range of a file, which
/// only a server builds to send, has none here ([`Payload::into_mem`]
/// reads it).
impl std::ops::Index<std::ops::RangeFull> for Payload {
    type Output = [u8];
    fn index(&self, _: std::ops::RangeFull) -> &[u8] {
        &self.mem
    }
}

impl From<Bytes> for Payload {
    fn from(mem: Bytes) -> Payload {
        Payload { mem, file: None }
    }
}

impl Pack for Payload {
    fn pack(&self, e: &mut Encoder) {
        match &self.file {
            None => e.opaque_bytes(&self.mem),
            Some(f) => e.opaque_file(f.clone()),
        }
    }
}
impl Unpack for Payload {
    fn unpack(d: &mut Decoder) -> Result<Self> {
        Ok(Payload::from(d.opaque(u32::MAX as usize)?))
    }
}

/// Builds an encoded message as a gather list of [`Bytes`] (and, for
/// [`Encoder::finish_pieces`], ranges of files).
#[derive(Debug, Default)]
pub struct Encoder {
    buf: BytesMut,
    chunks: Vec<Piece>,
    len: usize,
}

impl Encoder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_capacity(n: usize) -> Self {
        Encoder {
            buf: BytesMut::with_capacity(n),
            chunks: Vec::new(),
            len: 0,
        }
    }

    /// Total encoded length so far.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn u32(&mut self, v: u32) {
        self.buf.put_u32(v);
        self.len += 4;
    }

    pub fn u64(&mut self, v: u64) {
        self.buf.put_u64(v);
        self.len += 8;
    }

    pub fn bool(&mut self, v: bool) {
        self.u32(v as u32);
    }

    fn padding(&mut self, len: usize) {
        let p = pad_len(len);
        self.buf.put_bytes(0, p);
        self.len += p;
    }

    /// Fixed-length opaque data, copied.
    pub fn fixed(&mut self, data: &[u8]) {
        self.buf.put_slice(data);
        self.len += data.len();
        self.padding(data.len());
    }

    /// Variable-length opaque data, copied.
    pub fn opaque(&mut self, data: &[u8]) {
        self.u32(data.len() as u32);
        self.fixed(data);
    }

    /// Ends the buffered bytes' chunk, so that a piece can follow it.
    fn cut(&mut self) {
        if !self.buf.is_empty() {
            self.chunks.push(Piece::Mem(self.buf.split().freeze()));
        }
    }

    /// Variable-length opaque data; large payloads join the gather list
    /// without being copied.
    pub fn opaque_bytes(&mut self, data: &Bytes) {
        self.u32(data.len() as u32);
        if data.len() < ZERO_COPY_THRESHOLD {
            self.fixed(data);
            return;
        }
        self.cut();
        self.chunks.push(Piece::Mem(data.clone()));
        self.len += data.len();
        self.padding(data.len());
    }

    /// Variable-length opaque data that is a range of a file.
    pub fn opaque_file(&mut self, slice: FileSlice) {
        let n = slice.len;
        self.u32(n as u32);
        self.cut();
        self.chunks.push(Piece::File(slice));
        self.len += n;
        self.padding(n);
    }

    /// Appends an already encoded message (for example a cached reply).
    pub fn raw(&mut self, data: &[u8]) {
        self.buf.put_slice(data);
        self.len += data.len();
    }

    /// Cuts the message back to its first `len` bytes (a length
    /// [`Encoder::len`] returned earlier), dropping what was encoded
    /// after, zero-copy chunks and file ranges included. Longer than the
    /// message: no-op.
    pub fn truncate(&mut self, len: usize) {
        if len >= self.len {
            return;
        }
        let in_chunks: usize = self.chunks.iter().map(Piece::len).sum();
        if len >= in_chunks {
            self.buf.truncate(len - in_chunks);
        } else {
            self.buf.clear();
            let mut kept = 0;
            let mut n = 0;
            for c in &mut self.chunks {
                if kept + c.len() >= len {
                    c.truncate(len - kept);
                    n += usize::from(!c.is_empty());
                    break;
                }
                kept += c.len();
                n += 1;
            }
            self.chunks.truncate(n);
        }
        self.len = len;
    }

    /// Whether a piece is a range of a file.
    pub fn has_files(&self) -> bool {
        self.chunks.iter().any(|c| matches!(c, Piece::File(_)))
    }

    /// The gather list, in order, ranges of files included as such.
    pub fn finish_pieces(mut self) -> Vec<Piece> {
        self.cut();
        self.chunks
    }

    /// The gather list, in order, in memory: ranges of files are read
    /// (blocking), and one the file no longer holds in full is read as
    /// zeros. Use [`Encoder::finish_pieces`] to keep them as ranges.
    pub fn finish(self) -> Vec<Bytes> {
        self.finish_pieces()
            .into_iter()
            .map(|p| match p {
                Piece::Mem(b) => b,
                Piece::File(f) => {
                    let n = f.len;
                    f.read().unwrap_or_else(|_| Bytes::from(vec![0u8; n]))
                }
            })
            .collect()
    }

    /// The message as one contiguous buffer (copies large payloads).
    pub fn to_bytes(self) -> Bytes {
        let chunks = self.finish();
        match chunks.len() {
            0 => Bytes::new(),
            1 => chunks.into_iter().next().unwrap_or_default(),
            _ => {
                let mut all = BytesMut::with_capacity(chunks.iter().map(|c| c.len()).sum());
                for c in chunks {
                    all.put_slice(&c);
                }
                all.freeze()
            }
        }
    }
}

/// A type with an XDR encoding.
pub trait Pack {
    fn pack(&self, e: &mut Encoder);
}

/// A type that can be decoded from XDR.
pub trait Unpack: Sized {
    fn unpack(d: &mut Decoder) -> Result<Self>;
    /// The least number of bytes any encoding of this type occupies, used to
    /// bound array counts before allocating.
    const MIN_WIRE: usize = 4;
}

/// Variable-length items that take an explicit bound (`<N>` in XDR).
pub trait UnpackBounded: Sized {
    fn unpack_bounded(d: &mut Decoder, max: usize) -> Result<Self>;
}

/// Encodes a value into a fresh contiguous buffer.
pub fn to_bytes<T: Pack + ?Sized>(v: &T) -> Bytes {
    let mut e = Encoder::new();
    v.pack(&mut e);
    e.to_bytes()
}

/// Decodes a value from a buffer; trailing bytes are an error.
pub fn from_bytes<T: Unpack>(b: Bytes) -> Result<T> {
    let mut d = Decoder::new(b);
    let v = T::unpack(&mut d)?;
    if d.remaining() != 0 {
        return Err(Error::TooLong {
            len: d.remaining(),
            max: 0,
        });
    }
    Ok(v)
}

macro_rules! int_impl {
    ($t:ty, $enc:ident, $dec:ident, $as:ty, $min:expr) => {
        impl Pack for $t {
            fn pack(&self, e: &mut Encoder) {
                e.$enc(*self as $as);
            }
        }
        impl Unpack for $t {
            fn unpack(d: &mut Decoder) -> Result<Self> {
                Ok(d.$dec()? as $t)
            }
            const MIN_WIRE: usize = $min;
        }
    };
}
int_impl!(u32, u32, u32, u32, 4);
int_impl!(i32, u32, u32, u32, 4);
int_impl!(u64, u64, u64, u64, 8);
int_impl!(i64, u64, u64, u64, 8);

impl Pack for bool {
    fn pack(&self, e: &mut Encoder) {
        e.bool(*self)
    }
}
impl Unpack for bool {
    fn unpack(d: &mut Decoder) -> Result<Self> {
        d.bool()
    }
}

/// `void`.
impl Pack for () {
    fn pack(&self, _: &mut Encoder) {}
}
impl Unpack for () {
    fn unpack(_: &mut Decoder) -> Result<Self> {
        Ok(())
    }
    const MIN_WIRE: usize = 0;
}

/// Fixed-length opaque `opaque x[N]`.
impl<const N: usize> Pack for [u8; N] {
    fn pack(&self, e: &mut Encoder) {
        e.fixed(self)
    }
}
impl<const N: usize> Unpack for [u8; N] {
    fn unpack(d: &mut Decoder) -> Result<Self> {
        let b = d.fixed(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(&b);
        Ok(out)
    }
    const MIN_WIRE: usize = N + ((4 - (N & 3)) & 3);
}

/// Variable-length opaque `opaque x<>`, zero-copy.
impl Pack for Bytes {
    fn pack(&self, e: &mut Encoder) {
        e.opaque_bytes(self)
    }
}
impl Unpack for Bytes {
    fn unpack(d: &mut Decoder) -> Result<Self> {
        d.opaque(u32::MAX as usize)
    }
}
impl UnpackBounded for Bytes {
    fn unpack_bounded(d: &mut Decoder, max: usize) -> Result<Self> {
        d.opaque(max)
    }
}

/// `string x<>`, which must be UTF-8.
impl Pack for String {
    fn pack(&self, e: &mut Encoder) {
        e.opaque(self.as_bytes())
    }
}
impl Pack for str {
    fn pack(&self, e: &mut Encoder) {
        e.opaque(self.as_bytes())
    }
}
impl Unpack for String {
    fn unpack(d: &mut Decoder) -> Result<Self> {
        Self::unpack_bounded(d, u32::MAX as usize)
    }
}
impl UnpackBounded for String {
    fn unpack_bounded(d: &mut Decoder, max: usize) -> Result<Self> {
        let b = d.opaque(max)?;
        String::from_utf8(b.to_vec()).map_err(|_| Error::BadUtf8)
    }
}

/// Variable-length array `T x<>`.
impl<T: Pack> Pack for Vec<T> {
    fn pack(&self, e: &mut Encoder) {
        self.as_slice().pack(e)
    }
}
impl<T: Pack> Pack for [T] {
    fn pack(&self, e: &mut Encoder) {
        e.u32(self.len() as u32);
        for v in self {
            v.pack(e);
        }
    }
}
impl<T: Unpack> Unpack for Vec<T> {
    fn unpack(d: &mut Decoder) -> Result<Self> {
        Self::unpack_bounded(d, u32::MAX as usize)
    }
}
impl<T: Unpack> UnpackBounded for Vec<T> {
    fn unpack_bounded(d: &mut Decoder, max: usize) -> Result<Self> {
        let n = d.count(max, T::MIN_WIRE)?;
        let mut v = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            v.push(T::unpack(d)?);
        }
        Ok(v)
    }
}

/// Optional data `T *x` (RFC 4506 §4.19).
impl<T: Pack> Pack for Option<T> {
    fn pack(&self, e: &mut Encoder) {
        match self {
            None => e.bool(false),
            Some(v) => {
                e.bool(true);
                v.pack(e)
            }
        }
    }
}
impl<T: Unpack> Unpack for Option<T> {
    fn unpack(d: &mut Decoder) -> Result<Self> {
        if d.bool()? {
            Ok(Some(T::unpack(d)?))
        } else {
            Ok(None)
        }
    }
}

impl<T: Pack + ?Sized> Pack for Box<T> {
    fn pack(&self, e: &mut Encoder) {
        (**self).pack(e)
    }
}
impl<T: Unpack> Unpack for Box<T> {
    fn unpack(d: &mut Decoder) -> Result<Self> {
        Ok(Box::new(T::unpack(d)?))
    }
    const MIN_WIRE: usize = T::MIN_WIRE;
}

impl<T: Pack + ?Sized> Pack for &T {
    fn pack(&self, e: &mut Encoder) {
        (**self).pack(e)
    }
}

#[cfg(test)]
mod tests;

/// A value carried as an XDR discriminant (C-like enums, and `u32`).
pub trait Discriminant: Sized {
    fn from_u32(v: u32) -> Result<Self>;
    fn to_u32(&self) -> u32;
}

/// A discriminated union (RFC 4506 §4.15); `#[derive(Pack)]` implements
/// it for every union.
pub trait Union {
    /// The discriminant the value is sent with.
    fn discriminant(&self) -> u32;
}

impl Discriminant for u32 {
    fn from_u32(v: u32) -> Result<Self> {
        Ok(v)
    }
    fn to_u32(&self) -> u32 {
        *self
    }
}
