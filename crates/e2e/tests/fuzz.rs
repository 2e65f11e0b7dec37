//! Hostile input over the wire: random bytes, random records, random RPC
//! bodies and mutated valid COMPOUNDs. The server must never panic and
//! must keep answering NULL on a fresh connection afterwards.
//!
//! Case counts default to a few thousand in total; set
//! `FERRITE_FUZZ_CASES` to change the count per strategy.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

use bytes::Bytes;
use client::Client;
use common::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use proto::nfs4::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use xdr::{Decoder, Encoder, Pack, Unpack};

static PANICS: AtomicUsize = AtomicUsize::new(0);
static PANIC_MSGS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static HOOK: Once = Once::new();

/// Counts panics anywhere in the process (server tasks included).
fn count_panics() {
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            if let Ok(mut m) = PANIC_MSGS.lock() {
                m.push(info.to_string());
            }
            prev(info);
        }));
    });
}

fn assert_no_panics() {
    let n = PANICS.load(Ordering::SeqCst);
    let msgs = PANIC_MSGS.lock().map(|m| m.clone()).unwrap_or_default();
    assert_eq!(n, 0, "panics during fuzzing: {msgs:#?}");
}

fn cases(default: u32) -> u32 {
    std::env::var("FERRITE_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn runner(n: u32) -> TestRunner {
    TestRunner::new(Config {
        cases: cases(n),
        failure_persistence: None,
        ..Config::default()
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Sends `bytes` on a fresh connection, closes our side and reads
/// whatever comes back until the server closes. Returns the bytes read.
async fn send_raw(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    let _ = s.write_all(bytes).await;
    let _ = s.shutdown().await;
    let mut out = Vec::new();
    let r = tokio::time::timeout(PATIENCE, s.read_to_end(&mut out)).await;
    assert!(r.is_ok(), "server did not close the connection after EOF");
    out
}

/// Sends one record and reads one reply record (marker included); empty
/// if the server closed the connection instead.
async fn call_raw(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    let _ = s.write_all(bytes).await;
    let read = async {
        let mut marker = [0u8; 4];
        if s.read_exact(&mut marker).await.is_err() {
            return Vec::new();
        }
        let len = (u32::from_be_bytes(marker) & 0x7fff_ffff) as usize;
        let mut out = marker.to_vec();
        out.resize(4 + len.min(16 << 20), 0);
        if s.read_exact(&mut out[4..]).await.is_err() {
            return Vec::new();
        }
        out
    };
    tokio::time::timeout(PATIENCE, read)
        .await
        .expect("server answered (or closed) in time")
}

fn record(body: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(body.len() + 4);
    v.extend_from_slice(&(0x8000_0000u32 | body.len() as u32).to_be_bytes());
    v.extend_from_slice(body);
    v
}

/// An RPC CALL header for NFSv4 `proc` with an AUTH_SYS credential.
fn call_header(xid: u32, proc_: u32) -> Vec<u8> {
    let mut e = Encoder::new();
    e.u32(xid);
    e.u32(rpc::CALL);
    rpc::CallHeader {
        rpcvers: 2,
        prog: NFS_PROGRAM,
        vers: NFS_V4,
        proc_,
        cred: rpc::Auth::sys(0, 0, vec![], "fuzz").to_opaque(),
        verf: rpc::OpaqueAuth::none(),
    }
    .pack(&mut e);
    e.to_bytes().to_vec()
}

/// Checks the server still answers: NULL on a fresh connection, and a
/// new session doing real work.
async fn assert_alive(addr: SocketAddr) {
    let conn = rpc::connect(addr, None, rpc::ConnConfig::default())
        .await
        .expect("fresh connection");
    tokio::time::timeout(
        PATIENCE,
        conn.call(NFS_PROGRAM, NFS_V4, 0, &rpc::OpaqueAuth::none(), Vec::new()),
    )
    .await
    .expect("NULL answered in time")
    .expect("NULL succeeds");
    let c = Client::connect(addr, options()).await.expect("new session");
    c.root_fh().await.expect("PUTROOTFH works");
}

#[test]
fn random_bytes_streams() {
    count_panics();
    let rt = runtime();
    let srv = rt.block_on(TestServer::start());
    let addr = srv.addr;
    runner(2000)
        .run(&proptest::collection::vec(any::<u8>(), 0..4096), |bytes| {
            rt.block_on(send_raw(addr, &bytes));
            Ok(())
        })
        .unwrap();
    // A record header claiming a huge record, then nothing.
    rt.block_on(send_raw(addr, &0xffff_ffffu32.to_be_bytes()));
    rt.block_on(send_raw(addr, &0x7fff_ffffu32.to_be_bytes()));
    // Many empty non-final fragments.
    let frags: Vec<u8> = std::iter::repeat_n([0u8, 0, 0, 0], 10_000)
        .flatten()
        .collect();
    rt.block_on(send_raw(addr, &frags));
    rt.block_on(assert_alive(addr));
    assert_no_panics();
}

#[test]
fn random_records_and_rpc_bodies() {
    count_panics();
    let rt = runtime();
    let srv = rt.block_on(TestServer::start());
    let addr = srv.addr;
    // Framed random records.
    runner(1000)
        .run(&proptest::collection::vec(any::<u8>(), 0..2048), |body| {
            rt.block_on(send_raw(addr, &record(&body)));
            Ok(())
        })
        .unwrap();
    // A valid CALL header for COMPOUND (or another procedure), random args.
    let strat = (
        any::<u32>(),
        prop_oneof![Just(1u32), Just(0u32), any::<u32>()],
        proptest::collection::vec(any::<u8>(), 0..2048),
    );
    runner(1000)
        .run(&strat, |(xid, proc_, body)| {
            let mut msg = call_header(xid, proc_);
            msg.extend_from_slice(&body);
            rt.block_on(send_raw(addr, &record(&msg)));
            Ok(())
        })
        .unwrap();
    // COMPOUND headers with random operation words (many ops, odd opnums).
    let strat = (
        0u32..4,
        proptest::collection::vec(prop_oneof![0u32..80, Just(10044u32), any::<u32>()], 0..64),
    );
    runner(1000)
        .run(&strat, |(minor, words)| {
            let mut e = Encoder::new();
            Bytes::from_static(b"fuzz").pack(&mut e);
            e.u32(minor);
            e.u32(words.len() as u32);
            for w in &words {
                e.u32(*w);
            }
            let mut msg = call_header(1, 1);
            msg.extend_from_slice(&e.to_bytes());
            rt.block_on(send_raw(addr, &record(&msg)));
            Ok(())
        })
        .unwrap();
    rt.block_on(assert_alive(addr));
    assert_no_panics();
}

/// Valid operation lists to mutate (SEQUENCE is added per case).
fn templates(root: &NfsFh4, file: &NfsFh4, owner: &StateOwner4) -> Vec<Vec<NfsArgOp4>> {
    let attrs = Attrs {
        mode: Some(0o644),
        size: Some(3),
        ..Default::default()
    }
    .encode();
    vec![
        vec![
            NfsArgOp4::PutRootFh,
            getattr(&[
                FATTR4_TYPE,
                FATTR4_SIZE,
                FATTR4_FILEID,
                FATTR4_OWNER,
                FATTR4_ACL,
            ]),
            NfsArgOp4::ReadDir(ReadDir4Args {
                cookie: 0,
                cookieverf: [0; 8],
                dircount: 1024,
                maxcount: 4096,
                attr_request: Bitmap4::from_attrs(&[FATTR4_TYPE, FATTR4_FILEID]),
            }),
        ],
        vec![
            NfsArgOp4::PutRootFh,
            NfsArgOp4::Open(Open4Args {
                seqid: 0,
                share_access: OPEN4_SHARE_ACCESS_BOTH,
                share_deny: 0,
                owner: owner.clone(),
                openhow: OpenFlag4::Create(CreateHow4::Unchecked(attrs.clone())),
                claim: OpenClaim4::Null(b("fz")),
            }),
            NfsArgOp4::Write(Write4Args {
                stateid: StateId4::CURRENT,
                offset: 0,
                stable: StableHow4::Unstable4,
                data: Bytes::from_static(b"fuzzed data"),
            }),
            NfsArgOp4::Read(Read4Args {
                stateid: StateId4::CURRENT,
                offset: 0,
                count: 100,
            }),
            NfsArgOp4::Close(Close4Args {
                seqid: 0,
                open_stateid: StateId4::CURRENT,
            }),
        ],
        vec![
            putfh(root),
            NfsArgOp4::Create(Create4Args {
                objtype: CreateType4::Dir,
                objname: b("fzdir"),
                createattrs: attrs.clone(),
            }),
            NfsArgOp4::SaveFh,
            putfh(root),
            NfsArgOp4::Rename(Rename4Args {
                oldname: b("fzdir"),
                newname: b("fzdir2"),
            }),
            NfsArgOp4::Remove(Remove4Args {
                target: b("fzdir2"),
            }),
        ],
        vec![
            putfh(file),
            NfsArgOp4::SetAttr(SetAttr4Args {
                stateid: StateId4::ANONYMOUS,
                obj_attributes: attrs.clone(),
            }),
            NfsArgOp4::Verify(Verify4Args {
                obj_attributes: attrs,
            }),
            NfsArgOp4::LockT(LockT4Args {
                locktype: NfsLockType4::WriteLt,
                offset: 0,
                length: 10,
                owner: owner.clone(),
            }),
            NfsArgOp4::Access(Access4Args { access: 0x3f }),
            NfsArgOp4::SecInfoNoName(SecInfoStyle4::Parent),
        ],
        vec![
            putfh(root),
            lookup("target"),
            NfsArgOp4::SaveFh,
            putfh(root),
            NfsArgOp4::Link(Link4Args {
                newname: b("fzlink"),
            }),
            NfsArgOp4::Create(Create4Args {
                objtype: CreateType4::Link(b("target")),
                objname: b("fzsym"),
                createattrs: Fattr4::default(),
            }),
            NfsArgOp4::ReadLink,
            NfsArgOp4::TestStateId(TestStateId4Args {
                stateids: vec![StateId4::ANONYMOUS, StateId4::BYPASS],
            }),
        ],
    ]
}

/// Whether the reply shows SEQUENCE executed (so the slot moved on).
fn sequence_processed(reply: &[u8]) -> bool {
    // record marker, xid, REPLY, MSG_ACCEPTED, verifier, accept_stat
    if reply.len() < 4 {
        return false;
    }
    let mut d = Decoder::new(Bytes::copy_from_slice(&reply[4..]));
    let head = (|| -> xdr::Result<bool> {
        let _xid = d.u32()?;
        let _reply = d.u32()?;
        let accepted = d.u32()? == rpc::MSG_ACCEPTED;
        let _verf = rpc::OpaqueAuth::unpack(&mut d)?;
        Ok(accepted && d.u32()? == 0)
    })();
    if !matches!(head, Ok(true)) {
        return false;
    }
    // Only the first result matters, so decode the header and that one:
    // a later result the test cannot decode must not hide that SEQUENCE
    // ran (the slot's sequence id would fall out of step).
    let first = (|| -> xdr::Result<Option<NfsResOp4>> {
        let _status = NfsStat4::unpack(&mut d)?;
        let _tag = Bytes::unpack(&mut d)?;
        if d.u32()? == 0 {
            return Ok(None);
        }
        Ok(Some(NfsResOp4::unpack(&mut d)?))
    })();
    matches!(first, Ok(Some(NfsResOp4::Sequence(Res4::Ok(_)))))
}

#[derive(Debug, Clone)]
enum Mutation {
    /// Overwrite one byte.
    Byte(usize, u8),
    /// Overwrite an aligned word with an edge value.
    Word(usize, u32),
    /// Cut the message.
    Truncate(usize),
    /// Insert bytes.
    Insert(usize, Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Byte(i, b)),
        3 => (
            any::<usize>(),
            prop_oneof![
                Just(0u32),
                Just(1),
                Just(u32::MAX),
                Just(0x7fff_ffff),
                Just(0x8000_0000),
                Just(128),
                Just(129),
                Just(1025),
                any::<u32>()
            ]
        )
            .prop_map(|(i, w)| Mutation::Word(i, w)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
        1 => (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(i, v)| Mutation::Insert(i, v)),
    ]
}

fn apply(msg: &mut Vec<u8>, start: usize, m: &Mutation) {
    let len = msg.len() - start;
    if len == 0 {
        return;
    }
    match m {
        Mutation::Byte(i, b) => msg[start + i % len] = *b,
        Mutation::Word(i, w) => {
            let words = len / 4;
            if words > 0 {
                let at = start + (i % words) * 4;
                msg[at..at + 4].copy_from_slice(&w.to_be_bytes());
            }
        }
        Mutation::Truncate(i) => msg.truncate(start + i % len),
        Mutation::Insert(i, v) => {
            let at = start + i % len;
            msg.splice(at..at, v.iter().copied());
        }
    }
}

#[test]
fn mutated_valid_compounds() {
    count_panics();
    let rt = runtime();
    let srv = rt.block_on(TestServer::start());
    put_file(&srv, "target", b"target file");
    let addr = srv.addr;
    let (c, tmpl) = rt.block_on(async {
        let c = srv.client_with(options().slots(4)).await;
        let root = c.root_fh().await.unwrap();
        let file = c.lookup(&root, "target").await.unwrap();
        let owner = c.new_owner("fuzz");
        let t = templates(&root, &file, &owner);
        // Each template is valid as it stands.
        for ops in &t {
            if let Err(e) = c.compound(ops.clone()).await {
                // Rename/remove templates may legitimately fail on state;
                // they must at least decode.
                assert!(e.status().is_some(), "{e}");
            }
        }
        (c, t)
    });
    let strat = (
        0..tmpl.len(),
        proptest::collection::vec(mutation(), 1..4),
        any::<bool>(),
    );
    let processed = AtomicUsize::new(0);
    runner(3000)
        .run(&strat, |(which, muts, keep_sequence)| {
            rt.block_on(async {
                let slot = c.take_slot().await;
                let mut e = Encoder::new();
                Bytes::from_static(b"mut").pack(&mut e);
                e.u32(1);
                e.u32(tmpl[which].len() as u32 + 1);
                NfsArgOp4::Sequence(c.sequence_args(&slot, false)).pack(&mut e);
                let seq_end = e.len();
                for op in &tmpl[which] {
                    op.pack(&mut e);
                }
                let body = e.to_bytes().to_vec();
                let mut msg = call_header(0x1234_5678, 1);
                let args_start = msg.len();
                msg.extend_from_slice(&body);
                // Mostly mutate after SEQUENCE so the operations run.
                let start = if keep_sequence {
                    args_start + seq_end
                } else {
                    args_start
                };
                for m in &muts {
                    apply(&mut msg, start, m);
                }
                let reply = call_raw(addr, &record(&msg)).await;
                if sequence_processed(&reply) {
                    processed.fetch_add(1, Ordering::Relaxed);
                    slot.release(client::SlotOutcome::Processed, None);
                } else {
                    slot.release(client::SlotOutcome::NotProcessed, None);
                }
            });
            Ok(())
        })
        .unwrap();
    eprintln!(
        "mutated compounds past SEQUENCE: {}",
        processed.load(Ordering::Relaxed)
    );
    assert!(
        processed.load(Ordering::Relaxed) > 0,
        "no mutated compound got past SEQUENCE: the fuzzer is not reaching the operations"
    );
    rt.block_on(assert_alive(addr));
    assert_no_panics();
    drop(c);
}
