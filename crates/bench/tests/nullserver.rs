//! The null server (`bench::nullserver`) in-process on loopback: the
//! benchmark's randread runs against it unprepared with exact accounting,
//! every operation the benchmark sends gets a well-formed canned reply,
//! and garbage gets GARBAGE_ARGS without ending the connection; each
//! behind both transports, the rpc crate's and the thread per connection
//! of `bench::floor` (`null-server --threaded`).

use std::net::SocketAddr;

use bench::nullserver::{self, FILE_SIZE};
use bench::runner;
use bench::workload::{Overrides, Params, Workload};
use bytes::Bytes;
use client::{Client, ClientOptions};
use proto::nfs4::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The null server on a port of its own, behind the rpc crate or, if
/// `threaded`, a thread per connection.
async fn start(threaded: bool) -> SocketAddr {
    if threaded {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || bench::floor::serve(l));
        return addr;
    }
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(nullserver::serve(l));
    addr
}

/// `$name` run against both transports, as `$name` (the rpc crate) and
/// `$name_threaded`.
macro_rules! both_transports {
    ($body:ident, $tokio:ident, $threaded:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $tokio() {
            $body(start(false).await).await
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $threaded() {
            $body(start(true).await).await
        }
    };
}

both_transports!(
    randread_unprepared,
    randread_runs_unprepared_with_exact_accounting,
    randread_runs_unprepared_with_exact_accounting_threaded
);
both_transports!(
    every_operation,
    every_operation_the_benchmark_sends_is_answered,
    every_operation_the_benchmark_sends_is_answered_threaded
);
both_transports!(
    garbage,
    garbage_gets_garbage_args_and_the_connection_keeps_serving,
    garbage_gets_garbage_args_and_the_connection_keeps_serving_threaded
);

async fn randread_unprepared(addr: SocketAddr) {
    let mut p = Params::new(
        Workload::Randread,
        format!("nfs4://{addr}/"),
        Overrides {
            io_size: Some(4096),
            file_size: Some(64 << 20),
            ..Default::default()
        },
    );
    // A number of reads, not a time: the same work however busy the
    // machine; the duration is only a cap no run near it reaches.
    p.ops = 200;
    p.duration_s = 120.0;
    p.warmup_s = 0.1;
    p.threads = 4;
    p.runs = 2;
    // No `prepare`: LOOKUP always succeeds, so the marker is "there".
    let res = runner::run(&p).await.unwrap();
    assert_eq!(res.runs.len(), 2);
    for r in &res.runs {
        assert!(r.completed);
        assert_eq!(r.ops, 200);
        assert_eq!(r.errors, 0);
        assert_eq!(r.bytes, r.ops * 4096);
        let m = &r.nfs["measure"];
        // Every unit is one COMPOUND: SEQUENCE, PUTFH, READ.
        assert_eq!(m.op("READ"), r.ops);
        assert_eq!(m.op("SEQUENCE"), r.ops);
        assert_eq!(m.op("PUTFH"), r.ops);
        assert_eq!(m.ops.len(), 3, "{:?}", m.ops);
        let c = &m.calls["READ"];
        assert_eq!((c.count, c.errors), (r.ops, 0));
        // Each reply: record marker + RPC reply header (28), COMPOUND4res
        // status, empty tag and count (12), SEQUENCE (opnum, status,
        // session, 5 words: 44), PUTFH (8), READ (opnum, status, eof,
        // length: 16) and the 4096 bytes.
        assert_eq!(c.bytes_recv, c.count * (28 + 12 + 44 + 8 + 16 + 4096));
        assert!(c.bytes_sent > c.count * 100);
        // Setup: the session, the root, ferrite-bench and the marker, one
        // OPEN per worker; teardown: their CLOSEs and the session.
        let s = &r.nfs["setup"];
        assert_eq!(s.op("EXCHANGE_ID"), 1);
        assert_eq!(s.op("CREATE_SESSION"), 1);
        assert_eq!(s.op("RECLAIM_COMPLETE"), 1);
        assert_eq!(s.op("LOOKUP"), 2);
        assert_eq!(s.op("OPEN"), 4);
        let t = &r.nfs["teardown"];
        assert_eq!(t.op("CLOSE"), 4);
        assert_eq!(t.op("DESTROY_SESSION"), 1);
        assert_eq!(t.op("DESTROY_CLIENTID"), 1);
        // The slot table was never cut down by the server.
        assert!(r.slot_wait.acquired >= r.ops);
        assert_eq!(r.slot_wait.waited, 0);
    }
}

fn putfh(f: &Bytes) -> NfsArgOp4 {
    NfsArgOp4::PutFh(PutFh4Args {
        object: NfsFh4(f.clone()),
    })
}

fn getfh(r: &NfsResOp4) -> Bytes {
    match r {
        NfsResOp4::GetFh(Res4::Ok(ok)) => ok.object.0.clone(),
        other => panic!("expected GETFH, got {other:?}"),
    }
}

fn attrs(r: &NfsResOp4) -> Attrs {
    match r {
        NfsResOp4::GetAttr(Res4::Ok(ok)) => Attrs::decode(&ok.obj_attributes).unwrap(),
        other => panic!("expected GETATTR, got {other:?}"),
    }
}

fn failed(e: client::Error) -> (usize, NfsStat4, usize) {
    match e {
        client::Error::Status {
            index,
            status,
            results,
            ..
        } => (index, status, results.len()),
        other => panic!("expected a failed COMPOUND, got {other}"),
    }
}

async fn every_operation(addr: SocketAddr) {
    let c = Client::connect(addr, ClientOptions::new(&b"null-test"[..]).slots(16))
        .await
        .unwrap();
    // CREATE_SESSION granted what was asked; SEQUENCE keeps it.
    assert_eq!(c.fore_attrs().maxrequests, 16);
    assert_eq!(c.back_attrs(), client::back_channel_attrs());
    c.null().await.unwrap();
    let type_size = GetAttr4Args {
        attr_request: Bitmap4::from_attrs(&[FATTR4_TYPE, FATTR4_SIZE, FATTR4_FILEID]),
    };

    let r = c
        .compound(vec![
            NfsArgOp4::PutRootFh,
            client::ops::lookup_op("ferrite-bench"),
            NfsArgOp4::GetFh,
            NfsArgOp4::GetAttr(type_size.clone()),
        ])
        .await
        .unwrap();
    assert_eq!(c.slots().target(), 15);
    let dir = getfh(&r[2]);
    let a = attrs(&r[3]);
    assert_eq!(a.type_, Some(NfsFtype4::Nf4Dir));
    assert_eq!(a.size, Some(4096));
    assert!(a.fileid.is_some() && a.mode.is_none());

    let r = c
        .compound(vec![
            putfh(&dir),
            NfsArgOp4::Open(Open4Args {
                seqid: 0,
                share_access: OPEN4_SHARE_ACCESS_READ,
                share_deny: OPEN4_SHARE_DENY_NONE,
                owner: c.new_owner("o"),
                openhow: OpenFlag4::NoCreate,
                claim: OpenClaim4::Null(Bytes::from_static(b"large-1")),
            }),
            NfsArgOp4::GetFh,
            NfsArgOp4::GetAttr(type_size),
        ])
        .await
        .unwrap();
    let open = match &r[1] {
        NfsResOp4::Open(Res4::Ok(ok)) => ok.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(open.stateid.seqid, 1);
    assert_eq!(open.delegation, OpenDelegation4::None);
    let file = getfh(&r[2]);
    let a = attrs(&r[3]);
    assert_eq!(a.type_, Some(NfsFtype4::Nf4Reg));
    assert_eq!(a.size, Some(FILE_SIZE));

    let read = |offset, count| {
        NfsArgOp4::Read(Read4Args {
            stateid: open.stateid,
            offset,
            count,
        })
    };
    let r = c
        .compound(vec![putfh(&file), read(4096, 8192)])
        .await
        .unwrap();
    match &r[1] {
        NfsResOp4::Read(Res4::Ok(ok)) => {
            assert_eq!(ok.data.len(), 8192);
            assert!(!ok.eof && ok.data.bytes().is_some_and(|d| d.iter().all(|b| *b == 0)));
        }
        other => panic!("{other:?}"),
    }
    let r = c
        .compound(vec![putfh(&file), read(FILE_SIZE - 100, 4096)])
        .await
        .unwrap();
    match &r[1] {
        NfsResOp4::Read(Res4::Ok(ok)) => assert!(ok.eof && ok.data.len() == 100),
        other => panic!("{other:?}"),
    }

    let r = c
        .compound(vec![
            putfh(&file),
            NfsArgOp4::Write(Write4Args {
                stateid: open.stateid,
                offset: 0,
                stable: StableHow4::FileSync4,
                data: Bytes::from(vec![7u8; 5000]),
            }),
            NfsArgOp4::Commit(Commit4Args {
                offset: 0,
                count: 0,
            }),
        ])
        .await
        .unwrap();
    let (w, cm) = match (&r[1], &r[2]) {
        (NfsResOp4::Write(Res4::Ok(w)), NfsResOp4::Commit(Res4::Ok(cm))) => (*w, *cm),
        other => panic!("{other:?}"),
    };
    assert_eq!((w.count, w.committed), (5000, StableHow4::FileSync4));
    assert_eq!(w.writeverf, cm.writeverf);

    let lock = |locker| {
        NfsArgOp4::Lock(Lock4Args {
            locktype: NfsLockType4::ReadLt,
            reclaim: false,
            offset: 0,
            length: u64::MAX,
            locker,
        })
    };
    let owner = c.new_owner("l");
    let r = c
        .compound(vec![putfh(&file), lock(c.new_locker(open.stateid, owner))])
        .await
        .unwrap();
    let ls = match &r[1] {
        NfsResOp4::Lock(Lock4Res::Ok(ok)) => ok.lock_stateid,
        other => panic!("{other:?}"),
    };
    assert_eq!(ls.seqid, 1);
    let r = c
        .compound(vec![
            putfh(&file),
            lock(c.existing_locker(ls)),
            NfsArgOp4::LockU(LockU4Args {
                locktype: NfsLockType4::ReadLt,
                seqid: 0,
                lock_stateid: ls,
                offset: 0,
                length: u64::MAX,
            }),
            NfsArgOp4::Close(Close4Args {
                seqid: 0,
                open_stateid: open.stateid,
            }),
        ])
        .await
        .unwrap();
    assert!(matches!(&r[1], NfsResOp4::Lock(Lock4Res::Ok(ok)) if ok.lock_stateid.seqid == 2));
    assert!(matches!(&r[2], NfsResOp4::LockU(Res4::Ok(s)) if s.seqid == 2));
    assert!(matches!(&r[3], NfsResOp4::Close(Res4::Ok(s)) if *s == StateId4::INVALID));

    let r = c
        .compound(vec![
            putfh(&dir),
            NfsArgOp4::ReadDir(ReadDir4Args {
                cookie: 0,
                cookieverf: [0; 8],
                dircount: 8192,
                maxcount: 32768,
                attr_request: Bitmap4::from_attrs(&[FATTR4_TYPE]),
            }),
            NfsArgOp4::Create(Create4Args {
                objtype: CreateType4::Dir,
                objname: Bytes::from_static(b"sub"),
                createattrs: Fattr4::default(),
            }),
            NfsArgOp4::GetFh,
            putfh(&dir),
            NfsArgOp4::Remove(Remove4Args {
                target: Bytes::from_static(b"sub"),
            }),
        ])
        .await
        .unwrap();
    assert!(
        matches!(&r[1], NfsResOp4::ReadDir(Res4::Ok(ok)) if ok.reply.eof && ok.reply.entries.is_empty())
    );
    assert_ne!(getfh(&r[3]), dir);
    assert!(matches!(&r[5], NfsResOp4::Remove(Res4::Ok(_))));

    // A COMPOUND stops at the first error: an unsupported operation, a
    // missing filehandle, a handle this server did not make, a READ of a
    // directory.
    let rename = NfsArgOp4::Rename(Rename4Args {
        oldname: Bytes::from_static(b"a"),
        newname: Bytes::from_static(b"b"),
    });
    let e = c
        .compound(vec![NfsArgOp4::PutRootFh, rename, NfsArgOp4::GetFh])
        .await
        .unwrap_err();
    assert_eq!(failed(e), (1, NfsStat4::Nfs4errNotsupp, 2));
    let e = c.compound(vec![read(0, 1)]).await.unwrap_err();
    assert_eq!(failed(e), (0, NfsStat4::Nfs4errNofilehandle, 1));
    let e = c
        .compound(vec![putfh(&Bytes::from_static(b"elsewhere"))])
        .await
        .unwrap_err();
    assert_eq!(failed(e).1, NfsStat4::Nfs4errBadhandle);
    let e = c.compound(vec![putfh(&dir), read(0, 1)]).await.unwrap_err();
    assert_eq!(failed(e), (1, NfsStat4::Nfs4errIsdir, 2));

    // SETATTR reports what it was given as set.
    let mode = Fattr4 {
        attrmask: Bitmap4::from_attrs(&[FATTR4_MODE]),
        attr_vals: Bytes::from_static(&[0, 0, 1, 0xa4]),
    };
    let r = c
        .compound(vec![
            putfh(&dir),
            NfsArgOp4::SetAttr(SetAttr4Args {
                stateid: StateId4::default(),
                obj_attributes: mode,
            }),
        ])
        .await
        .unwrap();
    assert!(
        matches!(&r[1], NfsResOp4::SetAttr(a) if a.status == NfsStat4::Nfs4Ok
            && a.attrsset == Bitmap4::from_attrs(&[FATTR4_MODE])),
        "{:?}",
        r[1]
    );

    // BIND_CONN_TO_SESSION, alone: this session, in the direction asked.
    let bind = |sessid| {
        NfsArgOp4::BindConnToSession(BindConnToSession4Args {
            sessid,
            dir: ChannelDirFromClient4::Cdfc4ForeOrBoth,
            use_conn_in_rdma_mode: false,
        })
    };
    let r = c
        .compound_raw(b"", 1, &[bind(c.sessionid())])
        .await
        .unwrap();
    assert!(
        matches!(&r.resarray[..], [NfsResOp4::BindConnToSession(Res4::Ok(ok))]
            if ok.sessid == c.sessionid() && ok.dir == ChannelDirFromServer4::Cdfs4Both),
        "{:?}",
        r.resarray
    );
    let r = c.compound_raw(b"", 1, &[bind([7; 16])]).await.unwrap();
    assert_eq!(r.status, NfsStat4::Nfs4errBadsession);

    // Outside a session only the session-less operations are allowed.
    let r = c
        .compound_raw(b"", 1, &[NfsArgOp4::PutRootFh])
        .await
        .unwrap();
    assert_eq!(r.status, NfsStat4::Nfs4errOpNotInSession);
    let r = c.compound_raw(b"t", 0, &[]).await.unwrap();
    assert_eq!(r.status, NfsStat4::Nfs4errMinorVersMismatch);
    assert_eq!(&r.tag[..], b"t");
    c.destroy().await.unwrap();
}

/// One RPC CALL record to NFSv4 `proc_` with AUTH_NONE and `args`.
fn call(xid: u32, proc_: u32, args: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    for w in [xid, 0, 2, NFS_PROGRAM, NFS_V4, proc_, 0, 0, 0, 0] {
        b.extend(w.to_be_bytes());
    }
    b.extend(args);
    record(b)
}

fn record(body: Vec<u8>) -> Vec<u8> {
    let mut r = (0x8000_0000u32 | body.len() as u32).to_be_bytes().to_vec();
    r.extend(body);
    r
}

/// The next reply record: (xid, accept_stat, results).
async fn reply(s: &mut TcpStream) -> (u32, u32, Vec<u8>) {
    let mut m = [0u8; 4];
    s.read_exact(&mut m).await.unwrap();
    let len = (u32::from_be_bytes(m) & 0x7fff_ffff) as usize;
    let mut b = vec![0u8; len];
    s.read_exact(&mut b).await.unwrap();
    let w = |i: usize| u32::from_be_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]);
    // xid, REPLY, MSG_ACCEPTED, verifier (AUTH_NONE, empty), accept_stat.
    assert_eq!((w(1), w(2)), (1, 0), "{b:?}");
    (w(0), w(5), b[24..].to_vec())
}

async fn garbage(addr: SocketAddr) {
    const GARBAGE_ARGS: u32 = 4;
    let mut s = TcpStream::connect(addr).await.unwrap();

    // COMPOUND whose tag claims 4 GB.
    s.write_all(&call(1, 1, &[0xff; 12])).await.unwrap();
    assert_eq!(reply(&mut s).await, (1, GARBAGE_ARGS, vec![]));
    // A well-formed header, then a PUTFH cut short.
    let mut args = Vec::new();
    for w in [0u32, 1, 1, OpNum4::PutFh as u32, 100] {
        args.extend(w.to_be_bytes());
    }
    args.extend([1, 2, 3, 4]);
    s.write_all(&call(2, 1, &args)).await.unwrap();
    assert_eq!(reply(&mut s).await, (2, GARBAGE_ARGS, vec![]));
    // A CALL whose RPC header is cut short: the rpc crate's answer.
    let mut junk = Vec::new();
    for w in [3u32, 0, 2, NFS_PROGRAM] {
        junk.extend(w.to_be_bytes());
    }
    s.write_all(&record(junk)).await.unwrap();
    assert_eq!(reply(&mut s).await, (3, GARBAGE_ARGS, vec![]));

    // Still serving: NULL, then a COMPOUND (minor version 0 is refused
    // with a COMPOUND status, not an RPC error).
    s.write_all(&call(4, 0, &[])).await.unwrap();
    assert_eq!(reply(&mut s).await, (4, 0, vec![]));
    s.write_all(&call(5, 1, &[0; 12])).await.unwrap();
    let (xid, stat, res) = reply(&mut s).await;
    assert_eq!((xid, stat), (5, 0));
    let want: Vec<u8> = [NfsStat4::Nfs4errMinorVersMismatch as u32, 0, 0]
        .iter()
        .flat_map(|w| w.to_be_bytes())
        .collect();
    assert_eq!(res, want);
}
