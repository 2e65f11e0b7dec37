//! The sending side of a connection's socket: records queued in order and
//! written with non-blocking vectored writes by whoever flushes.
//!
//! A connection's reader flushes the replies of the calls it finished
//! itself before it waits for more input, so a call answered without
//! waiting costs one `writev` and no task switch; the writer task flushes
//! the rest (replies of calls that had to wait, back-channel calls) and
//! waits for the socket to drain when the peer is slow to read. Every
//! write happens under one lock, so records never interleave, and a record
//! cut short by a full socket buffer is finished before the next begins.

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::sync::{Arc, Mutex};

use bytes::Buf;
use tokio::sync::Notify;
use xdr::{FileSlice, Piece};

use crate::tls::link::Wire;

/// Slices handed to one `writev` (Linux allows 1024).
const MAX_SLICES: usize = 64;

/// A record to send, with whatever it holds until it has been sent (its
/// bytes in the connection's flow budget and its in-flight slot).
pub(crate) struct Queued<H> {
    /// Bytes in memory, written with `writev`, and ranges of files, sent
    /// from the page cache with `sendfile`.
    pub(crate) chunks: Vec<Piece>,
    pub(crate) hold: H,
}

struct State<H> {
    /// Records in order; the first may be partly written (its written
    /// bytes advanced out of its chunks).
    queue: VecDeque<Queued<H>>,
    socket: Option<Arc<Wire>>,
}

/// What a flush came to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Flushed {
    /// Everything queued is on the wire.
    All,
    /// The socket's buffer is full; the rest waits for it to drain.
    Blocked,
    /// The socket is gone (closed, or a write failed).
    Closed,
}

pub(crate) struct Out<H> {
    state: Mutex<State<H>>,
    /// Wakes the writer task: records queued for it, or the socket to watch.
    pub(crate) wake: Notify,
}

impl<H> Out<H> {
    pub(crate) fn new(socket: Wire) -> Self {
        Out {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                socket: Some(Arc::new(socket)),
            }),
            wake: Notify::new(),
        }
    }

    /// Queues a record; false once the socket is gone.
    pub(crate) fn push(&self, q: Queued<H>) -> bool {
        let Ok(mut s) = self.state.lock() else {
            return false;
        };
        if s.socket.is_none() {
            return false;
        }
        s.queue.push_back(q);
        true
    }

    /// The socket, for waiting until it can take more.
    pub(crate) fn socket(&self) -> Option<Arc<Wire>> {
        self.state.lock().ok().and_then(|s| s.socket.clone())
    }

    /// Forgets the socket and drops what is queued (releasing what it
    /// holds); the descriptor closes once the reader has let go too.
    pub(crate) fn shut(&self) {
        let dropped = match self.state.lock() {
            Ok(mut s) => {
                if let Some(w) = s.socket.take() {
                    w.close_notify();
                }
                std::mem::take(&mut s.queue)
            }
            Err(_) => VecDeque::new(),
        };
        drop(dropped);
    }

    /// Writes what is queued, in order, without waiting: until all of it
    /// is written or the socket's buffer is full. A failed write shuts
    /// the socket.
    pub(crate) fn flush(&self) -> Flushed {
        let mut sent = Vec::new();
        let result = self.flush_into(&mut sent);
        // What the sent records held is released outside the lock.
        drop(sent);
        if result == Flushed::Closed {
            self.shut();
        }
        result
    }

    fn flush_into(&self, sent: &mut Vec<H>) -> Flushed {
        let Ok(mut s) = self.state.lock() else {
            return Flushed::Closed;
        };
        let Some(socket) = s.socket.clone() else {
            return Flushed::Closed;
        };
        while !s.queue.is_empty() {
            // The memory pieces up to the first range of a file, or that
            // range when it comes first.
            let mut file: Option<FileSlice> = None;
            let written = {
                let mut slices = [IoSlice::new(&[]); MAX_SLICES];
                let mut n = 0;
                'gather: for q in &s.queue {
                    for c in q.chunks.iter().filter(|c| !c.is_empty()) {
                        match c {
                            Piece::Mem(b) => {
                                if n == MAX_SLICES {
                                    break 'gather;
                                }
                                slices[n] = IoSlice::new(b);
                                n += 1;
                            }
                            Piece::File(f) => {
                                if n == 0 {
                                    file = Some(f.clone());
                                }
                                break 'gather;
                            }
                        }
                    }
                }
                match (&file, n) {
                    (Some(f), _) => socket.send_file(f),
                    (None, 0) => Ok(0),
                    (None, _) => socket.try_write_vectored(&slices[..n]),
                }
            };
            let mut n = match written {
                // Only empty pieces were left: the records are done.
                Ok(0) if file.is_none() => 0,
                // A file shorter than its range (truncated since the READ
                // was answered): the record cannot be completed.
                Ok(0) => return Flushed::Closed,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Flushed::Blocked,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    tracing::debug!("write failed: {e}");
                    return Flushed::Closed;
                }
            };
            // Consume what was written: whole records leave the queue.
            while n > 0 {
                let Some(first) = s.queue.front_mut() else {
                    break;
                };
                for c in first.chunks.iter_mut() {
                    let k = n.min(c.len());
                    match c {
                        Piece::Mem(b) => b.advance(k),
                        Piece::File(f) => {
                            f.offset += k as u64;
                            f.len -= k;
                        }
                    }
                    n -= k;
                    if n == 0 {
                        break;
                    }
                }
                if first.chunks.iter().all(Piece::is_empty) {
                    if let Some(done) = s.queue.pop_front() {
                        sent.push(done.hold);
                    }
                }
            }
            while s
                .queue
                .front()
                .is_some_and(|q| q.chunks.iter().all(Piece::is_empty))
            {
                if let Some(done) = s.queue.pop_front() {
                    sent.push(done.hold);
                }
            }
        }
        // What TLS still holds of the records it took.
        match socket.drain() {
            Ok(()) => Flushed::All,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Flushed::Blocked,
            Err(e) => {
                tracing::debug!("write failed: {e}");
                Flushed::Closed
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::AsyncReadExt;

    /// Counts the records whose hold has been released.
    struct Hold(Arc<AtomicUsize>);
    impl Drop for Hold {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::AcqRel);
        }
    }

    async fn pair() -> (tokio::net::TcpStream, tokio::net::TcpStream) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let c = tokio::net::TcpStream::connect(l.local_addr().unwrap());
        let (c, a) = tokio::join!(c, l.accept());
        (a.unwrap().0, c.unwrap())
    }

    use bytes::Bytes;
    use std::fs::File;
    use std::io::Write;

    /// A file of `len` bytes, byte `k` being `k % 253`, its name removed
    /// (also for the TLS tests' ranges of files).
    pub(crate) fn numbered_file(len: usize) -> Arc<File> {
        let path = std::env::temp_dir().join(format!(
            "rpc-out-test-{}-{len}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let mut f = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        let data: Vec<u8> = (0..len).map(|k| (k % 253) as u8).collect();
        f.write_all(&data).unwrap();
        std::fs::remove_file(&path).unwrap();
        Arc::new(f)
    }

    /// Record `i`: a few chunks, one empty, filled with its number; every
    /// third record also has a range of `file` (from offset `i`) between
    /// two of them, every fifth an empty range.
    fn record(i: usize, file: &Arc<File>) -> Vec<Piece> {
        let b = (i % 251) as u8;
        let mut r = vec![
            Piece::Mem(Bytes::from(vec![b; 3])),
            Piece::Mem(Bytes::new()),
        ];
        if i.is_multiple_of(3) {
            r.push(Piece::File(FileSlice {
                file: file.clone(),
                offset: i as u64,
                len: 40 * 1024 + i,
            }));
        }
        if i.is_multiple_of(5) {
            r.push(Piece::File(FileSlice {
                file: file.clone(),
                offset: 0,
                len: 0,
            }));
        }
        r.push(Piece::Mem(Bytes::from(vec![b; 64 * 1024 + i])));
        r
    }

    /// What `record(i)` puts on the wire.
    fn record_bytes(i: usize, file: &Arc<File>) -> Vec<u8> {
        record(i, file)
            .into_iter()
            .flat_map(|p| p.into_mem().unwrap().to_vec())
            .collect()
    }

    #[tokio::test]
    async fn a_full_socket_keeps_records_whole_and_in_order() {
        let (server, mut peer) = pair().await;
        let (_rd, wr) = server.into_split();
        let out = Out::new(Wire::new(wr));
        let released = Arc::new(AtomicUsize::new(0));
        let n = 256;
        let file = numbered_file(64 * 1024 + n);
        for i in 0..n {
            let hold = Hold(released.clone());
            assert!(out.push(Queued {
                chunks: record(i, &file),
                hold
            }));
        }
        // Far more than the socket holds: the first flush stops part way,
        // having released exactly the records it finished.
        assert_eq!(out.flush(), Flushed::Blocked);
        let early = released.load(Ordering::Acquire);
        assert!(early < n, "{early} of {n} written at once");
        let want: Vec<u8> = (0..n).flat_map(|i| record_bytes(i, &file)).collect();
        let reader = tokio::spawn(async move {
            let mut got = vec![0u8; want.len()];
            peer.read_exact(&mut got).await.unwrap();
            assert!(got == want, "bytes differ from the records in order");
        });
        loop {
            match out.flush() {
                Flushed::All => break,
                Flushed::Blocked => out.socket().unwrap().writable().await.unwrap(),
                Flushed::Closed => panic!("socket closed"),
            }
        }
        assert_eq!(released.load(Ordering::Acquire), n);
        reader.await.unwrap();
    }

    #[tokio::test]
    async fn shut_releases_what_is_queued_and_refuses_more() {
        let (server, _peer) = pair().await;
        let (_rd, wr) = server.into_split();
        let out = Out::new(Wire::new(wr));
        let released = Arc::new(AtomicUsize::new(0));
        let file = numbered_file(128 * 1024);
        for i in 0..3 {
            let hold = Hold(released.clone());
            assert!(out.push(Queued {
                chunks: record(i, &file),
                hold
            }));
        }
        out.shut();
        assert_eq!(released.load(Ordering::Acquire), 3);
        let hold = Hold(released.clone());
        assert!(!out.push(Queued {
            chunks: record(9, &file),
            hold
        }));
        assert_eq!(released.load(Ordering::Acquire), 4);
        assert_eq!(out.flush(), Flushed::Closed);
        assert!(out.socket().is_none());
    }

    /// A range the file no longer holds in full (truncated after the READ
    /// was answered) cannot complete its record: the connection closes
    /// rather than send the record short or with bytes that are not the
    /// file's.
    #[tokio::test]
    async fn a_truncated_file_closes_the_connection() {
        let (server, mut peer) = pair().await;
        let (_rd, wr) = server.into_split();
        let out = Out::new(Wire::new(wr));
        let file = numbered_file(1000);
        let released = Arc::new(AtomicUsize::new(0));
        let hold = Hold(released.clone());
        assert!(out.push(Queued {
            chunks: vec![
                Piece::Mem(Bytes::from_static(b"head")),
                Piece::File(FileSlice {
                    file: file.clone(),
                    offset: 900,
                    len: 200,
                }),
                Piece::Mem(Bytes::from_static(b"tail")),
            ],
            hold
        }));
        assert_eq!(out.flush(), Flushed::Closed);
        assert_eq!(
            released.load(Ordering::Acquire),
            1,
            "the record is released"
        );
        drop(_rd);
        let mut got = Vec::new();
        peer.read_to_end(&mut got).await.unwrap();
        let mut want = b"head".to_vec();
        want.extend((900..1000).map(|k| (k % 253) as u8));
        assert_eq!(got, want, "what was sent before the file ended");
    }
}
