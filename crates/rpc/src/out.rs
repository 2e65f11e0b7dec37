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

use bytes::{Buf, Bytes};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::Notify;

/// Slices handed to one `writev` (Linux allows 1024).
const MAX_SLICES: usize = 64;

/// A record to send, with whatever it holds until it has been sent (its
/// bytes in the connection's flow budget and its in-flight slot).
pub(crate) struct Queued<H> {
    pub(crate) chunks: Vec<Bytes>,
    pub(crate) hold: H,
}

struct State<H> {
    /// Records in order; the first may be partly written (its written
    /// bytes advanced out of its chunks).
    queue: VecDeque<Queued<H>>,
    socket: Option<Arc<OwnedWriteHalf>>,
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
    pub(crate) fn new(socket: OwnedWriteHalf) -> Self {
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
    pub(crate) fn socket(&self) -> Option<Arc<OwnedWriteHalf>> {
        self.state.lock().ok().and_then(|s| s.socket.clone())
    }

    /// Forgets the socket and drops what is queued (releasing what it
    /// holds); the descriptor closes once the reader has let go too.
    pub(crate) fn shut(&self) {
        let dropped = match self.state.lock() {
            Ok(mut s) => {
                s.socket = None;
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
            let written = {
                let mut slices = [IoSlice::new(&[]); MAX_SLICES];
                let mut n = 0;
                'gather: for q in &s.queue {
                    for c in q.chunks.iter().filter(|c| !c.is_empty()) {
                        if n == MAX_SLICES {
                            break 'gather;
                        }
                        slices[n] = IoSlice::new(c);
                        n += 1;
                    }
                }
                socket.try_write_vectored(&slices[..n])
            };
            let mut n = match written {
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
                    c.advance(k);
                    n -= k;
                    if n == 0 {
                        break;
                    }
                }
                if first.chunks.iter().all(Bytes::is_empty) {
                    if let Some(done) = s.queue.pop_front() {
                        sent.push(done.hold);
                    }
                }
            }
            while s
                .queue
                .front()
                .is_some_and(|q| q.chunks.iter().all(Bytes::is_empty))
            {
                if let Some(done) = s.queue.pop_front() {
                    sent.push(done.hold);
                }
            }
        }
        Flushed::All
    }
}

#[cfg(test)]
mod tests {
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

    /// Record `i`: a few chunks, one empty, filled with its number.
    fn record(i: usize) -> Vec<Bytes> {
        let b = (i % 251) as u8;
        vec![
            Bytes::from(vec![b; 3]),
            Bytes::new(),
            Bytes::from(vec![b; 64 * 1024 + i]),
        ]
    }

    #[tokio::test]
    async fn a_full_socket_keeps_records_whole_and_in_order() {
        let (server, mut peer) = pair().await;
        let (_rd, wr) = server.into_split();
        let out = Out::new(wr);
        let released = Arc::new(AtomicUsize::new(0));
        let n = 256;
        for i in 0..n {
            let hold = Hold(released.clone());
            assert!(out.push(Queued {
                chunks: record(i),
                hold
            }));
        }
        // Far more than the socket holds: the first flush stops part way,
        // having released exactly the records it finished.
        assert_eq!(out.flush(), Flushed::Blocked);
        let early = released.load(Ordering::Acquire);
        assert!(early < n, "{early} of {n} written at once");
        let want: Vec<u8> = (0..n).flat_map(record).flatten().collect();
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
        let out = Out::new(wr);
        let released = Arc::new(AtomicUsize::new(0));
        for i in 0..3 {
            let hold = Hold(released.clone());
            assert!(out.push(Queued {
                chunks: record(i),
                hold
            }));
        }
        out.shut();
        assert_eq!(released.load(Ordering::Acquire), 3);
        let hold = Hold(released.clone());
        assert!(!out.push(Queued {
            chunks: record(9),
            hold
        }));
        assert_eq!(released.load(Ordering::Acquire), 4);
        assert_eq!(out.flush(), Flushed::Closed);
        assert!(out.socket().is_none());
    }
}
