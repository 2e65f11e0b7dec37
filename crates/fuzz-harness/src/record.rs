//! `rpc_record`: a byte stream through [`RecordReader`] and each record
//! through the call-header and credential parse, as a connection reads
//! them.
//!
//! The first byte chooses the record limit and how the stream arrives:
//! whole, or in small pieces with a pending read between them and, if
//! asked, the `next()` future dropped at every pending read (the reader
//! claims to be cancel-safe). Every way must yield the same records and
//! the same error, and give its buffer budget back.

use std::future::Future;
use std::io;
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use rpc::conn::{parse_call, parse_reply};
use rpc::record::{BufferBudget, RecordError, RecordReader};
use rpc::Auth;
use tokio::io::{AsyncRead, ReadBuf};
use xdr::Decoder;

/// Record limits the first byte chooses among: small, so that both sides
/// of the limit are reached.
const MAX_RECORD: [usize; 4] = [8, 64, 512, 4096];
/// Read sizes for the trickled stream.
const CHUNK: [usize; 8] = [1, 2, 3, 4, 7, 16, 64, 4096];

pub fn rpc_record(data: &[u8]) {
    let Some((&cfg, stream)) = data.split_first() else {
        return;
    };
    let max = MAX_RECORD[usize::from(cfg & 3)];
    let chunk = CHUNK[usize::from(cfg >> 2 & 7)];
    let cancel = cfg & 0x20 != 0;
    let whole = read_all(Stream::new(stream, usize::MAX, false), max, false);
    let trickled = read_all(Stream::new(stream, chunk, true), max, cancel);
    assert_eq!(whole, trickled, "records differ when the stream trickles");
    for rec in whole.0 {
        message(rec);
    }
}

/// What a reader made of a stream: its records, then how it ended
/// (`None`: a clean end of stream).
#[derive(Debug, PartialEq)]
struct Outcome(Vec<Bytes>, Option<&'static str>);

fn read_all(stream: Stream<'_>, max: usize, cancel: bool) -> Outcome {
    let budget = BufferBudget::new(1 << 30);
    let mut r = RecordReader::with_budget(stream, max, budget.clone());
    let mut recs = Vec::new();
    // Every poll reads at least one byte or ends: more polls is a hang.
    let mut polls = 0usize;
    let end = loop {
        let got = {
            let mut next = pin!(r.next());
            loop {
                polls += 1;
                assert!(polls < 1_000_000, "record reader stopped making progress");
                match poll_once(next.as_mut()) {
                    Poll::Ready(v) => break Some(v),
                    Poll::Pending if cancel => break None,
                    Poll::Pending => {}
                }
            }
        };
        match got {
            None => continue,
            Some(Ok(Some(rec))) => {
                assert!(rec.len() <= max, "record of {} over {max}", rec.len());
                recs.push(rec);
            }
            Some(Ok(None)) => break None,
            Some(Err(RecordError::TooLarge { size, max: m })) => {
                assert!(size > m && m == max, "TooLarge {{ {size}, {m} }}");
                break Some("too large");
            }
            Some(Err(RecordError::Io(e))) => {
                assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{e}");
                break Some("truncated");
            }
        }
    };
    drop(r);
    assert_eq!(budget.used(), 0, "buffer budget not given back");
    Outcome(recs, end)
}

pub(crate) fn poll_once<F: Future>(f: Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(Waker::noop()))
}

/// One record as the connection's reader takes it (`conn/tasks.rs`): xid and
/// message type, then a call's header and credential or a reply's
/// status.
pub(crate) fn message(rec: Bytes) {
    let mut d = Decoder::new(rec);
    let (Ok(_xid), Ok(mtype)) = (d.u32(), d.u32()) else {
        return;
    };
    match mtype {
        rpc::CALL => {
            if let Ok((_prog, _vers, _proc, auth)) = parse_call(&mut d) {
                // The credential encodes back to what it was read as.
                if let Auth::Sys(p) = &auth {
                    let again: rpc::AuthSysParms =
                        xdr::from_bytes(xdr::to_bytes(p)).expect("AUTH_SYS re-encodes");
                    assert_eq!(&again, p);
                }
                let cred = auth.to_opaque();
                assert!(cred.body.len() <= rpc::MAX_AUTH_BYTES);
            }
        }
        rpc::REPLY => {
            let _ = parse_reply(d.take_rest());
        }
        _ => {}
    }
}

/// The input as a socket: reads of at most `chunk` bytes, each after a
/// pending read if `stall`.
pub(crate) struct Stream<'a> {
    data: &'a [u8],
    chunk: usize,
    stall: bool,
    stalled: bool,
}

impl<'a> Stream<'a> {
    pub(crate) fn new(data: &'a [u8], chunk: usize, stall: bool) -> Self {
        Stream {
            data,
            chunk,
            stall,
            stalled: false,
        }
    }
}

impl AsyncRead for Stream<'_> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.stall && !this.data.is_empty() {
            this.stalled = !this.stalled;
            if this.stalled {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
        }
        let n = this.chunk.min(this.data.len()).min(buf.remaining());
        buf.put_slice(&this.data[..n]);
        this.data = &this.data[n..];
        Poll::Ready(Ok(()))
    }
}
