//! The transport's floor: the null server ([`crate::nullserver`]) behind
//! the simplest RPC transport there is, one thread per connection that
//! reads, answers and writes with blocking system calls (`ferrite bench
//! null-server --threaded`). With one request in flight it makes exactly
//! one `recvfrom`, one `sendto` and one sleep per call: no event loop, no
//! tasks, no hand-offs. Its CPU per call is, nearly all, what loopback TCP
//! and the scheduler cost on this machine: the floor under any server
//! that sleeps while it waits for a request (docs/benchmarks.md compares
//! it with Ferrite and NFS-Ganesha at one thread).
//!
//! Bounded as a measuring instrument on loopback must be: records of at
//! most [`MAX_RECORD`] bytes (a larger one closes its connection), at most
//! [`MAX_CONNECTIONS`] connections (more are closed at once), replies
//! written before the next read.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use proto::nfs4::{NFS_PROGRAM, NFS_V4};
use rpc::{Reply, ReplyError};
use xdr::Decoder;

use crate::nullserver::NullServer;
use crate::Result;

/// The largest record taken (a 1 MiB WRITE and its headers fit).
pub const MAX_RECORD: usize = 4 << 20;
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 256;
/// RPC message type of a call (RFC 5531 §9).
const CALL: u32 = 0;

/// `ferrite bench null-server --threaded`: binds `listen`, prints the
/// address and the target URL, and serves until the process is stopped.
pub fn run(listen: SocketAddr) -> Result<()> {
    let listener = TcpListener::bind(listen)?;
    let addr = listener.local_addr()?;
    let mut out = std::io::stdout();
    let _ = writeln!(
        out,
        "ferrite null server (NFSv4.1, canned replies, stores nothing; a thread per \
         connection, blocking I/O) listening on {addr}\ntarget: nfs4://{addr}/"
    );
    let _ = out.flush();
    serve(listener)
}

/// Serves `listener` for ever, a thread per connection.
pub fn serve(listener: TcpListener) -> Result<()> {
    let server = Arc::new(NullServer::new());
    let live = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        if live.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            live.fetch_sub(1, Ordering::AcqRel);
            continue;
        }
        let (server, done) = (server.clone(), live.clone());
        let spawned = std::thread::Builder::new()
            .name("null-conn".into())
            .spawn(move || {
                let _ = connection(&server, stream);
                done.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            live.fetch_sub(1, Ordering::AcqRel);
        }
    }
    Ok(())
}

/// One connection: read what is there, answer every whole record in it,
/// write the answers in one call, and again.
fn connection(server: &NullServer, mut s: TcpStream) -> std::io::Result<()> {
    s.set_nodelay(true)?;
    let mut buf = vec![0u8; 64 << 10];
    let mut have = 0;
    let mut out = Vec::with_capacity(64 << 10);
    loop {
        if have == buf.len() {
            // Only a record still incomplete fills the buffer; it may
            // grow to the largest record and its fragment headers.
            let bigger = (buf.len() * 2).min(MAX_RECORD + (64 << 10));
            if bigger == buf.len() {
                return Err(std::io::ErrorKind::InvalidData.into());
            }
            buf.resize(bigger, 0);
        }
        let n = s.read(&mut buf[have..])?;
        if n == 0 {
            return Ok(());
        }
        have += n;
        let mut at = 0;
        while let Some((record, used)) = whole_record(&buf[at..have])? {
            at += used;
            answer(server, record, &mut out);
        }
        buf.copy_within(at..have, 0);
        have -= at;
        if !out.is_empty() {
            s.write_all(&out)?;
            out.clear();
        }
    }
}

/// The first whole record at the start of `data` (its fragments joined,
/// RFC 5531 §11) and the bytes it took, or none yet.
fn whole_record(data: &[u8]) -> std::io::Result<Option<(Bytes, usize)>> {
    let mut at = 0;
    let mut record = Vec::new();
    loop {
        let Some(head) = data.get(at..at + 4) else {
            return Ok(None);
        };
        let mark = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        let len = (mark & 0x7fff_ffff) as usize;
        if record.len() + len > MAX_RECORD {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
        let Some(fragment) = data.get(at + 4..at + 4 + len) else {
            return Ok(None);
        };
        record.extend_from_slice(fragment);
        at += 4 + len;
        if mark & 0x8000_0000 != 0 {
            return Ok(Some((Bytes::from(record), at)));
        }
    }
}

/// Answers one record into `out`, record-marked; a record that is not a
/// call, or too short for one, is ignored.
fn answer(server: &NullServer, record: Bytes, out: &mut Vec<u8>) {
    let mut d = Decoder::new(record);
    let (Ok(xid), Ok(CALL)) = (d.u32(), d.u32()) else {
        return;
    };
    let reply = match rpc::parse_call(&mut d) {
        Ok((prog, _, _, _)) if prog != NFS_PROGRAM => Reply::Error(ReplyError::ProgUnavail),
        Ok((_, vers, _, _)) if vers != NFS_V4 => Reply::Error(ReplyError::ProgMismatch {
            low: NFS_V4,
            high: NFS_V4,
        }),
        // NULL (RFC 5531 §12.1), then COMPOUND (RFC 8881 §16.2).
        Ok((_, _, 0, _)) => Reply::Success(Vec::new()),
        Ok((_, _, 1, _)) => server.compound(d),
        Ok(_) => Reply::Error(ReplyError::ProcUnavail),
        Err(e) => Reply::Error(e),
    };
    let Some((head, body)) = rpc::reply_message(xid, reply) else {
        return;
    };
    let head = head.finish();
    let len: usize = head.iter().chain(body.iter()).map(Bytes::len).sum();
    out.extend_from_slice(&(0x8000_0000 | len as u32).to_be_bytes());
    for piece in head.iter().chain(body.iter()) {
        out.extend_from_slice(piece);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marked(fragments: &[(&[u8], bool)]) -> Vec<u8> {
        let mut v = Vec::new();
        for (f, last) in fragments {
            let mark = f.len() as u32 | if *last { 0x8000_0000 } else { 0 };
            v.extend_from_slice(&mark.to_be_bytes());
            v.extend_from_slice(f);
        }
        v
    }

    #[test]
    fn records_are_joined_from_fragments_and_bounded() {
        let data = marked(&[(b"abcd", false), (b"efgh", true), (b"next", true)]);
        let (r, used) = whole_record(&data).unwrap().unwrap();
        assert_eq!(&r[..], b"abcdefgh");
        assert_eq!(used, 16);
        // Incomplete: a header cut short, a fragment cut short, no last one.
        assert!(whole_record(&data[..2]).unwrap().is_none());
        assert!(whole_record(&data[..6]).unwrap().is_none());
        assert!(whole_record(&data[..8]).unwrap().is_none());
        let huge = ((MAX_RECORD + 1) as u32 | 0x8000_0000).to_be_bytes();
        assert!(whole_record(&huge).is_err());
    }
}
