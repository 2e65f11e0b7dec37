//! RPCSEC_GSS with a toy mechanism: the gate on a manual clock, and a
//! client and server over a loopback connection.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::net::TcpListener;
use xdr::{Decoder, Encoder, Pack, Unpack};

use super::toy::{fnv, initiator, key_of, ToyMech};
use super::wire::*;
use super::*;
use crate::msg::*;
use crate::{Auth, Call, ConnConfig, Programs, Reply, ReplyFuture, Service};

fn pair(d: &mut Decoder) -> (u32, u32) {
    (d.u32().unwrap(), d.u32().unwrap())
}

fn flat(b: &[Bytes]) -> Bytes {
    Bytes::from(b.concat())
}

/// alice@TEST is uid 1000; others are unknown.
fn names() -> Arc<NameMap> {
    Arc::new(|p: &str| {
        (p == "alice@TEST").then(|| Ids {
            uid: 1000,
            gid: 1000,
            groups: vec![10],
        })
    })
}

fn gate(max: usize, life: Option<Duration>) -> Gate {
    Gate::new(Arc::new(ToyMech { life }), max, names())
}

fn cred(proc_: GssProc, seq: u32, service: GssService, handle: &[u8]) -> OpaqueAuth {
    GssCred {
        proc_,
        seq_num: seq,
        service,
        handle: Bytes::copy_from_slice(handle),
    }
    .opaque()
}

/// Makes a context for `p` through the gate; returns its handle.
fn establish(g: &Gate, p: &str, now: Instant) -> Vec<u8> {
    let c = GssCred::decode(cred(GssProc::Init, 0, GssService::None, b"").body).unwrap();
    let (reply, seal, _) = g.init(&c, p.as_bytes(), now);
    let Reply::Success(body) = reply else {
        panic!("init failed")
    };
    let res = InitRes::unpack(&mut Decoder::new(flat(&body))).unwrap();
    assert_eq!(res.gss_major, GSS_S_COMPLETE);
    assert_eq!(res.seq_window, SEQ_WINDOW);
    // The verifier is the checksum of the window, under the client's key.
    let Seal::Verf(v) = seal else {
        panic!("no verifier")
    };
    assert_eq!(
        &v.body[..],
        &fnv(key_of(p), &be32(SEQ_WINDOW)).to_be_bytes()[..]
    );
    res.handle.to_vec()
}

/// A call header (xid through credential) and the toy verifier of it.
fn header(xid: u32, c: &OpaqueAuth, key: u64) -> (Vec<u8>, OpaqueAuth) {
    let mut e = Encoder::new();
    e.u32(xid);
    e.u32(CALL);
    e.u32(RPC_VERSION);
    e.u32(1);
    e.u32(1);
    e.u32(1);
    c.pack(&mut e);
    let h = e.to_bytes().to_vec();
    let v = OpaqueAuth {
        flavor: RPCSEC_GSS,
        body: Bytes::copy_from_slice(&fnv(key, &h).to_be_bytes()),
    };
    (h, v)
}

fn data_call(g: &Gate, handle: &[u8], seq: u32, key: u64, now: Instant) -> Verdict {
    let c = cred(GssProc::Data, seq, GssService::None, handle);
    let (h, v) = header(seq, &c, key);
    g.check(
        &h,
        c.body,
        &v,
        1,
        Decoder::new(Bytes::from_static(&[0, 0, 0, 5])),
        now,
    )
}

fn verdict(v: &Verdict) -> String {
    match v {
        Verdict::Call { .. } => "call".into(),
        Verdict::Init { .. } => "init".into(),
        Verdict::Answer(Reply::Error(e), _) => format!("answer {e:?}"),
        Verdict::Answer(..) => "answer".into(),
        Verdict::Deny(s, _) => format!("deny {s:?}"),
        Verdict::Drop(_) => "drop".into(),
    }
}

#[test]
fn window_accepts_each_number_once_and_drops_the_old() {
    let mut w = Window::new();
    assert_eq!(w.check(10), Seen::Fresh);
    assert_eq!(w.check(10), Seen::Replay);
    assert_eq!(w.check(8), Seen::Fresh);
    assert_eq!(w.check(8), Seen::Replay);
    assert_eq!(w.check(10 + SEQ_WINDOW), Seen::Fresh);
    // 10 is now exactly one window behind: too old.
    assert_eq!(w.check(10), Seen::Old);
    assert_eq!(w.check(11), Seen::Fresh);
    assert_eq!(w.check(11), Seen::Replay);
    // A jump past the window forgets everything behind it.
    assert_eq!(w.check(1_000_000), Seen::Fresh);
    assert_eq!(w.check(1_000_000 - 1), Seen::Fresh);
    assert_eq!(w.check(1_000_000 - SEQ_WINDOW), Seen::Old);
}

#[test]
fn calls_are_checked_for_context_checksum_and_replay() {
    let g = gate(16, None);
    let now = Instant::now();
    let h = establish(&g, "alice@TEST", now);
    let k = key_of("alice@TEST");
    let Verdict::Call { auth, mut args, .. } = data_call(&g, &h, 1, k, now) else {
        panic!("call refused")
    };
    assert_eq!(u32::unpack(&mut args).unwrap(), 5);
    let Auth::Gss(a) = auth else {
        panic!("not GSS")
    };
    assert_eq!(a.principal.name, "alice@TEST");
    assert_eq!(a.principal.ids.as_ref().unwrap().uid, 1000);
    assert_eq!(a.service, GssService::None);
    // The same sequence number again: dropped silently (a replay).
    assert_eq!(verdict(&data_call(&g, &h, 1, k, now)), "drop");
    // A forged checksum (the wrong key): RPCSEC_GSS_CREDPROBLEM, and the
    // forger's sequence number is not consumed.
    assert_eq!(
        verdict(&data_call(&g, &h, 2, k ^ 1, now)),
        "deny GssCredProblem"
    );
    assert_eq!(verdict(&data_call(&g, &h, 2, k, now)), "call");
    // Below the window: dropped.
    assert_eq!(verdict(&data_call(&g, &h, 2 + SEQ_WINDOW, k, now)), "call");
    assert_eq!(verdict(&data_call(&g, &h, 2, k, now)), "drop");
    // An unknown handle.
    assert_eq!(
        verdict(&data_call(&g, b"12345678", 3, k, now)),
        "deny GssCredProblem"
    );
    assert_eq!(
        verdict(&data_call(&g, b"x", 3, k, now)),
        "deny GssCredProblem"
    );
    // Sequence numbers at MAXSEQ end the context.
    assert_eq!(
        verdict(&data_call(&g, &h, MAXSEQ, k, now)),
        "deny GssCtxProblem"
    );
    assert_eq!(
        verdict(&data_call(&g, &h, 4, k, now)),
        "deny GssCredProblem"
    );
}

#[test]
fn contexts_expire_on_the_clock() {
    let g = gate(16, Some(Duration::from_secs(600)));
    let t0 = Instant::now();
    let h = establish(&g, "alice@TEST", t0);
    let k = key_of("alice@TEST");
    assert_eq!(
        verdict(&data_call(&g, &h, 1, k, t0 + Duration::from_secs(599))),
        "call"
    );
    assert_eq!(
        verdict(&data_call(&g, &h, 2, k, t0 + Duration::from_secs(600))),
        "deny GssCtxProblem"
    );
    // Gone: the client must make a new one.
    assert!(g.contexts().is_empty());
    assert_eq!(g.contexts().sweep(t0), 0);
}

#[test]
fn the_table_is_bounded_and_drops_the_context_idle_longest() {
    let g = gate(4, None);
    let t0 = Instant::now();
    let k = key_of("alice@TEST");
    let first = establish(&g, "alice@TEST", t0);
    let mut later = Vec::new();
    for i in 1..4 {
        later.push(establish(&g, "alice@TEST", t0 + Duration::from_secs(i)));
    }
    // The first is used again, so the second is idle longest.
    assert_eq!(
        verdict(&data_call(&g, &first, 1, k, t0 + Duration::from_secs(10))),
        "call"
    );
    for i in 0..100 {
        establish(&g, "bob@TEST", t0 + Duration::from_secs(20 + i));
        assert!(g.contexts().len() <= 4);
    }
    assert_eq!(g.contexts().len(), 4);
    assert_eq!(
        verdict(&data_call(
            &g,
            &later[0],
            1,
            k,
            t0 + Duration::from_secs(200)
        )),
        "deny GssCredProblem"
    );
    assert!(g.contexts().evicted() >= 100);
}

#[test]
fn context_creation_is_refused_with_the_mechanisms_status() {
    let g = gate(16, None);
    let c = GssCred::decode(cred(GssProc::Init, 0, GssService::None, b"").body).unwrap();
    let (reply, seal, note) = g.init(&c, b"forged@TEST", Instant::now());
    let Reply::Success(body) = reply else {
        panic!()
    };
    let res = InitRes::unpack(&mut Decoder::new(flat(&body))).unwrap();
    assert_eq!(res.gss_major, GSS_S_DEFECTIVE_TOKEN);
    assert!(res.handle.is_empty());
    assert!(matches!(seal, Seal::None));
    assert!(note.unwrap().contains("forged"));
    assert!(g.contexts().is_empty());
    // CONTINUE_INIT under a handle that is not being established.
    let c = GssCred::decode(cred(GssProc::ContinueInit, 0, GssService::None, b"12345678").body)
        .unwrap();
    let (reply, _, _) = g.init(&c, b"x", Instant::now());
    let Reply::Success(body) = reply else {
        panic!()
    };
    let res = InitRes::unpack(&mut Decoder::new(flat(&body))).unwrap();
    assert_ne!(res.gss_major, GSS_S_COMPLETE);
    // INIT on a procedure other than NULL; a credential that is garbage.
    let c = cred(GssProc::Init, 0, GssService::None, b"");
    let (h, v) = header(1, &c, 0);
    let d = Decoder::new(Bytes::from_static(&[0, 0, 0, 0]));
    assert_eq!(
        verdict(&g.check(&h, c.body, &v, 1, d.clone(), Instant::now())),
        "deny BadCred"
    );
    assert_eq!(
        verdict(&g.check(
            &h,
            Bytes::from_static(&[0, 0, 0, 2, 0]),
            &v,
            0,
            d,
            Instant::now()
        )),
        "deny BadCred"
    );
}

/// Procedure 1 answers the caller's uid and the u32 it was sent; 2
/// answers 256 KiB.
struct WhoAmI;

impl Service for WhoAmI {
    fn call(&self, mut call: Call) -> ReplyFuture {
        Box::pin(async move {
            let uid = match &call.auth {
                Auth::Gss(g) => g.principal.ids.as_ref().map_or(u32::MAX - 1, |i| i.uid),
                _ => u32::MAX,
            };
            match call.proc_ {
                1 => match u32::unpack(&mut call.args) {
                    Ok(v) => Reply::Success(vec![Bytes::copy_from_slice(
                        &[uid.to_be_bytes(), v.to_be_bytes()].concat(),
                    )]),
                    Err(_) => Reply::Error(ReplyError::GarbageArgs),
                },
                2 => Reply::Success(vec![Bytes::from(vec![7u8; 256 << 10])]),
                _ => Reply::Error(ReplyError::ProcUnavail),
            }
        })
    }
}

const PROG: u32 = 400_001;

async fn server(g: Arc<Gate>) -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let svc: Arc<dyn Service> = Arc::new(
        Programs::new()
            .add(PROG, 1, 1, Arc::new(WhoAmI))
            .with_gss(Some(g)),
    );
    let (tx, rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        let _keep = tx;
        crate::serve(l, svc, ConnConfig::default(), rx).await
    });
    addr
}

#[tokio::test]
async fn all_three_services_round_trip_over_a_connection() {
    let g = Arc::new(gate(16, None));
    let addr = server(g.clone()).await;
    let conn = crate::connect(addr, None, ConnConfig::default())
        .await
        .unwrap();
    for service in [GssService::None, GssService::Integrity, GssService::Privacy] {
        let ctx = Arc::new(
            ClientContext::establish(&conn, PROG, 1, initiator("alice@TEST"), service)
                .await
                .unwrap(),
        );
        for i in 0..50u32 {
            let mut e = Encoder::new();
            i.pack(&mut e);
            let mut d = conn.call_gss(PROG, 1, 1, &ctx, e.finish()).await.unwrap();
            assert_eq!(pair(&mut d), (1000, i), "{service:?}");
        }
        let mut d = conn.call_gss(PROG, 1, 2, &ctx, Vec::new()).await.unwrap();
        let big = d.take_rest();
        assert_eq!(big.len(), 256 << 10);
        assert!(big.iter().all(|b| *b == 7));
        ctx.destroy(&conn, PROG, 1).await.unwrap();
        // Destroyed: the next call is refused.
        let err = conn
            .call_gss(PROG, 1, 1, &ctx, vec![Bytes::from_static(&[0, 0, 0, 1])])
            .await;
        assert_eq!(
            err.err(),
            Some(crate::CallError::Rejected(ReplyError::Auth(
                AuthStat::GssCredProblem
            )))
        );
    }
    assert!(g.contexts().is_empty());
    // An unknown principal acts as nobody (the export decides who that is).
    let ctx = ClientContext::establish(&conn, PROG, 1, initiator("mallory@TEST"), GssService::None)
        .await
        .unwrap();
    let mut d = conn
        .call_gss(PROG, 1, 1, &ctx, vec![Bytes::from_static(&[0, 0, 0, 9])])
        .await
        .unwrap();
    assert_eq!(pair(&mut d), (u32::MAX - 1, 9));
    // A forged ticket: no context.
    let err =
        ClientContext::establish(&conn, PROG, 1, initiator("forged@TEST"), GssService::None).await;
    assert!(matches!(err, Err(crate::CallError::Security(_))));
}

#[tokio::test]
async fn a_replayed_call_gets_no_answer_and_a_tampered_one_is_garbage() {
    let g = Arc::new(gate(16, None));
    let addr = server(g.clone()).await;
    let conn = crate::connect(addr, None, ConnConfig::default())
        .await
        .unwrap();
    let ctx = Arc::new(
        ClientContext::establish(
            &conn,
            PROG,
            1,
            initiator("alice@TEST"),
            GssService::Integrity,
        )
        .await
        .unwrap(),
    );
    // Build one integrity call by hand and send it twice.
    let seq = ctx.next_seq();
    let c = ctx.cred(GssProc::Data, seq, GssService::Integrity);
    let args = ctx
        .seal_args(
            seq,
            GssService::Integrity,
            vec![Bytes::from_static(&[0, 0, 0, 3])],
        )
        .expect("sealed");
    let first = conn
        .call_raw(PROG, 1, 1, &c, |h| ctx.verifier(h), args.clone())
        .await
        .unwrap();
    let mut d = ctx
        .open_reply(seq, GssService::Integrity, &first.0, first.1)
        .unwrap();
    assert_eq!(pair(&mut d), (1000, 3));
    // The same call again, then a fresh one: calls on a connection are
    // read in order, so once the fresh one is answered the replay has
    // been dropped, not answered.
    let replay = {
        let conn = conn.clone();
        let ctx = ctx.clone();
        tokio::spawn(async move {
            conn.call_raw(PROG, 1, 1, &c, |h| ctx.verifier(h), args)
                .await
                .is_ok()
        })
    };
    while g
        .counts()
        .dropped
        .load(std::sync::atomic::Ordering::Relaxed)
        == 0
    {
        tokio::task::yield_now().await;
    }
    let mut d = conn
        .call_gss(PROG, 1, 1, &ctx, vec![Bytes::from_static(&[0, 0, 0, 8])])
        .await
        .unwrap();
    assert_eq!(pair(&mut d), (1000, 8));
    assert!(!replay.is_finished(), "a replay was answered");
    replay.abort();
    // Arguments changed after their checksum: GARBAGE_ARGS.
    let seq = ctx.next_seq();
    let c = ctx.cred(GssProc::Data, seq, GssService::Integrity);
    let mut args = ctx
        .seal_args(
            seq,
            GssService::Integrity,
            vec![Bytes::from_static(&[0, 0, 0, 3])],
        )
        .expect("sealed");
    let mut flat = flat(&args).to_vec();
    flat[11] ^= 1;
    args = vec![Bytes::from(flat)];
    let r = conn
        .call_raw(PROG, 1, 1, &c, |h| ctx.verifier(h), args)
        .await;
    assert_eq!(
        r.err(),
        Some(crate::CallError::Rejected(ReplyError::GarbageArgs))
    );
    // The connection still serves.
    let mut d = conn
        .call_gss(PROG, 1, 1, &ctx, vec![Bytes::from_static(&[0, 0, 0, 4])])
        .await
        .unwrap();
    assert_eq!(pair(&mut d), (1000, 4));
}
