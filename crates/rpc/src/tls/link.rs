//! A connection's socket, its reading and its writing side, plain until a
//! STARTTLS upgrades both, then through one TLS state they share.
//!
//! The writing side keeps the non-blocking style of the plain socket:
//! what the TLS state accepts counts as written (it is encrypted at once
//! and bounded by rustls's buffer limit), and what it holds goes out as
//! the socket takes it; `drain` reports what is left, so a flush knows
//! whether to wait for the socket.

use std::io::{self, IoSlice, Read, Write};
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt, Interest, ReadBuf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use xdr::FileSlice;

/// The TLS state of a connection, shared by its two sides.
pub type Tls = Arc<Mutex<rustls::Connection>>;

/// Ciphertext read at once: a TLS record at its largest.
const CIPHER_BUF: usize = 16 * 1024 + 256;

/// File bytes read into memory at once to be encrypted.
const FILE_CHUNK: usize = 64 * 1024;

pub(crate) fn lock(tls: &Tls) -> io::Result<MutexGuard<'_, rustls::Connection>> {
    tls.lock()
        .map_err(|_| io::Error::other("TLS state poisoned"))
}

fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// The reading side: the socket's (or, for tests and fuzzing, any
/// stream's) bytes, plain or, once upgraded, decrypted.
pub struct Input<R = OwnedReadHalf> {
    rd: R,
    tls: Option<Tls>,
    /// Ciphertext read but not yet taken by TLS: `cbuf[start..end]`.
    cbuf: Box<[u8]>,
    start: usize,
    end: usize,
    eof: bool,
}

impl<R: AsyncRead + Unpin> Input<R> {
    pub fn new(rd: R) -> Self {
        Input {
            rd,
            tls: None,
            cbuf: Box::new([]),
            start: 0,
            end: 0,
            eof: false,
        }
    }

    /// From now on, reads go through `tls`.
    pub fn upgrade(&mut self, tls: Tls) {
        self.tls = Some(tls);
        self.cbuf = vec![0u8; CIPHER_BUF].into_boxed_slice();
    }

    /// Hands the ciphertext held to TLS and processes it; false once TLS
    /// takes no more (its plaintext buffer is full).
    fn feed(&mut self, t: &mut rustls::Connection) -> io::Result<bool> {
        let n = t.read_tls(&mut &self.cbuf[self.start..self.end])?;
        self.start += n;
        t.process_new_packets().map_err(tls_error)?;
        Ok(n > 0)
    }

    /// For the handshake: reads ciphertext and hands it to TLS. False at
    /// the end of the stream.
    pub(crate) async fn pump(&mut self) -> io::Result<bool> {
        let Some(tls) = self.tls.clone() else {
            return Err(io::Error::other("no TLS on this connection"));
        };
        if self.start == self.end {
            let n = self.rd.read(&mut self.cbuf).await?;
            if n == 0 {
                return Ok(false);
            }
            (self.start, self.end) = (0, n);
        }
        let mut t = lock(&tls)?;
        while self.start < self.end && t.is_handshaking() {
            if !self.feed(&mut t)? {
                break;
            }
        }
        Ok(true)
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Input<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let Some(tls) = this.tls.clone() else {
            return Pin::new(&mut this.rd).poll_read(cx, buf);
        };
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            {
                let mut t = lock(&tls)?;
                match t.reader().read(buf.initialize_unfilled()) {
                    // Ok(0): the peer's close_notify, the end of the stream.
                    Ok(n) => {
                        buf.advance(n);
                        return Poll::Ready(Ok(()));
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Poll::Ready(Err(e)),
                }
                if this.start < this.end {
                    if !this.feed(&mut t)? {
                        return Poll::Ready(Err(io::Error::other("TLS took no input")));
                    }
                    continue;
                }
                if this.eof {
                    return Poll::Ready(Ok(()));
                }
            }
            let mut rb = ReadBuf::new(&mut this.cbuf);
            ready!(Pin::new(&mut this.rd).poll_read(cx, &mut rb))?;
            let n = rb.filled().len();
            (this.start, this.end) = (0, n);
            if n == 0 {
                this.eof = true;
                // Tells TLS the stream ended (a truncation unless the
                // peer sent close_notify, which the next read reports).
                let mut t = lock(&tls)?;
                let _ = t.read_tls(&mut &[][..]);
            }
        }
    }
}

/// Moves what `tls` has to send into `out` (for tests and fuzzing, where
/// no socket takes it).
pub fn take_output(tls: &Tls, out: &mut Vec<u8>) -> io::Result<()> {
    let mut t = lock(tls)?;
    while t.wants_write() {
        t.write_tls(out)?;
    }
    Ok(())
}

/// The socket's writing side, as `io::Write` for TLS: non-blocking.
struct Sock<'a>(&'a OwnedWriteHalf);

impl Write for Sock<'_> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.try_write(b)
    }
    fn write_vectored(&mut self, b: &[IoSlice<'_>]) -> io::Result<usize> {
        self.0.try_write_vectored(b)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The writing side.
pub(crate) struct Wire {
    wr: OwnedWriteHalf,
    tls: OnceLock<Tls>,
}

impl Wire {
    pub(crate) fn new(wr: OwnedWriteHalf) -> Self {
        Wire {
            wr,
            tls: OnceLock::new(),
        }
    }

    /// From now on, writes go through `tls`.
    pub(crate) fn upgrade(&self, tls: Tls) -> bool {
        self.tls.set(tls).is_ok()
    }

    pub(crate) fn tls(&self) -> Option<&Tls> {
        self.tls.get()
    }

    /// Writes what TLS holds while the socket takes it: WouldBlock if
    /// some is left.
    fn push_out(&self, t: &mut rustls::Connection) -> io::Result<()> {
        while t.wants_write() {
            if t.write_tls(&mut Sock(&self.wr))? == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
        }
        Ok(())
    }

    /// Sends what TLS holds (handshake messages, alerts, records already
    /// encrypted): Ok once all is on the wire, WouldBlock if not.
    pub(crate) fn drain(&self) -> io::Result<()> {
        match self.tls.get() {
            Some(tls) => self.push_out(&mut *lock(tls)?),
            None => Ok(()),
        }
    }

    /// Writes from `slices` what the socket (or TLS) takes now.
    pub(crate) fn try_write_vectored(&self, slices: &[IoSlice<'_>]) -> io::Result<usize> {
        let Some(tls) = self.tls.get() else {
            return self.wr.try_write_vectored(slices);
        };
        let mut t = lock(tls)?;
        // Older ciphertext first, so that TLS's buffer has room.
        self.push_out(&mut t)?;
        let n = t.writer().write_vectored(slices)?;
        match self.push_out(&mut t) {
            Err(e) if e.kind() != io::ErrorKind::WouldBlock => Err(e),
            _ if n == 0 => Err(io::ErrorKind::WouldBlock.into()),
            _ => Ok(n),
        }
    }

    /// Sends what the socket takes of the range `f` of a file without
    /// waiting: from the page cache (`sendfile(2)`) on a plain socket,
    /// read and encrypted under TLS. WouldBlock when the socket's buffer
    /// is full, 0 when the file ends before the range does.
    pub(crate) fn send_file(&self, f: &FileSlice) -> io::Result<usize> {
        if self.tls.get().is_some() {
            let mut chunk = vec![0u8; f.len.min(FILE_CHUNK)];
            let n = pread(f, &mut chunk)?;
            if n == 0 {
                return Ok(0);
            }
            return self.try_write_vectored(&[IoSlice::new(&chunk[..n])]);
        }
        let stream: &tokio::net::TcpStream = self.wr.as_ref();
        let sock = stream.as_raw_fd();
        let fd = f.file.as_raw_fd();
        stream.try_io(Interest::WRITABLE, || {
            let mut off =
                libc::off_t::try_from(f.offset).map_err(|_| io::ErrorKind::InvalidInput)?;
            // SAFETY: both descriptors are open (the socket half and the
            // file are borrowed for the call); `off` is a valid off_t the
            // call updates.
            let r = unsafe { libc::sendfile(sock, fd, &mut off, f.len) };
            if r < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(r as usize)
            }
        })
    }

    /// Waits until the socket can take more.
    pub(crate) async fn writable(&self) -> io::Result<()> {
        self.wr.writable().await
    }

    /// Tells a TLS peer the connection ends (close_notify), if the socket
    /// takes it now.
    pub(crate) fn close_notify(&self) {
        if let Some(tls) = self.tls.get() {
            if let Ok(mut t) = lock(tls) {
                t.send_close_notify();
                let _ = self.push_out(&mut t);
            }
        }
    }
}

/// Reads the start of range `f` of its file into `buf` (pread).
fn pread(f: &FileSlice, buf: &mut [u8]) -> io::Result<usize> {
    let off = libc::off_t::try_from(f.offset).map_err(|_| io::ErrorKind::InvalidInput)?;
    loop {
        // SAFETY: the file is open (borrowed for the call) and `buf` is
        // valid for writes of its length.
        let r = unsafe { libc::pread(f.file.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), off) };
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}
