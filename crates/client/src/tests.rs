//! The client against a scripted in-process server: session setup,
//! callbacks (CB_RECALL answered by DELEGRETURN), NFS4ERR_DELAY retries
//! and a shrinking slot target.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use proto::nfs4::*;
use rpc::{Call, Reply, ReplyFuture, Service};
use tokio::net::TcpListener;
use xdr::{Encoder, Pack, Unpack};

use crate::{Client, ClientOptions};

const SESSION: SessionId4 = [5; 16];
const RECALLED: StateId4 = StateId4 {
    seqid: 1,
    other: [0xde; 12],
};

#[derive(Default)]
struct Script {
    /// DELEGRETURNs received.
    delegreturns: Mutex<Vec<StateId4>>,
    /// The client's answer to our CB_COMPOUND.
    cb_reply: Mutex<Option<CbCompound4Res>>,
    /// SEQUENCE (slot, seqid) seen for PUTROOTFH compounds.
    putroot_seqs: Mutex<Vec<(u32, u32)>>,
    /// A SEQUENCE came: the client has its session, so it can take a
    /// callback.
    sequenced: tokio::sync::Notify,
}

struct Fake(Arc<Script>);

fn sequence_ok(a: &Sequence4Args) -> NfsResOp4 {
    NfsResOp4::Sequence(Res4::Ok(Sequence4ResOk {
        sessionid: a.sessionid,
        sequenceid: a.sequenceid,
        slotid: a.slotid,
        highest_slotid: 7,
        // Ask the client to use no more than slots 0..=3.
        target_highest_slotid: 3,
        status_flags: 0,
    }))
}

impl Fake {
    fn compound(&self, args: Compound4Args, call_conn: Arc<rpc::Connection>) -> Compound4Res {
        let mut res = Vec::new();
        let mut status = NfsStat4::Nfs4Ok;
        let putroot = args.argarray.contains(&NfsArgOp4::PutRootFh);
        for op in args.argarray {
            let r = match op {
                NfsArgOp4::ExchangeId(_) => NfsResOp4::ExchangeId(Res4::Ok(ExchangeId4ResOk {
                    clientid: 7,
                    sequenceid: 1,
                    flags: EXCHGID4_FLAG_USE_NON_PNFS,
                    state_protect: StateProtect4R::None,
                    server_owner: ServerOwner4 {
                        minor_id: 0,
                        major_id: Bytes::from_static(b"fake"),
                    },
                    server_scope: Bytes::from_static(b"fake"),
                    server_impl_id: None,
                })),
                NfsArgOp4::CreateSession(a) => {
                    let mut fore = a.fore_chan_attrs;
                    fore.maxrequests = fore.maxrequests.min(8);
                    let prog = a.cb_program;
                    let script = self.0.clone();
                    let conn = call_conn.clone();
                    tokio::spawn(async move {
                        // Sent once the client uses its session (it knows
                        // the session id then), not after a fixed time.
                        script.sequenced.notified().await;
                        let cb = CbCompound4Args {
                            tag: Bytes::new(),
                            minorversion: 1,
                            callback_ident: 0,
                            argarray: vec![
                                NfsCbArgOp4::CbSequence(CbSequence4Args {
                                    sessionid: SESSION,
                                    sequenceid: 1,
                                    slotid: 0,
                                    highest_slotid: 0,
                                    cachethis: false,
                                    referring_call_lists: vec![],
                                }),
                                NfsCbArgOp4::CbRecall(CbRecall4Args {
                                    stateid: RECALLED,
                                    truncate: false,
                                    fh: NfsFh4(Bytes::from_static(b"file")),
                                }),
                            ],
                        };
                        let mut e = Encoder::new();
                        cb.pack(&mut e);
                        let none = rpc::OpaqueAuth::none();
                        if let Ok(mut d) = conn.call(prog, 1, 1, &none, e.finish()).await {
                            *script.cb_reply.lock().unwrap() = CbCompound4Res::unpack(&mut d).ok();
                        }
                    });
                    NfsResOp4::CreateSession(Res4::Ok(CreateSession4ResOk {
                        sessionid: SESSION,
                        sequence: a.sequence,
                        flags: a.flags,
                        fore_chan_attrs: fore,
                        back_chan_attrs: a.back_chan_attrs,
                    }))
                }
                NfsArgOp4::Sequence(a) => {
                    self.0.sequenced.notify_one();
                    if putroot {
                        let mut seen = self.0.putroot_seqs.lock().unwrap();
                        seen.push((a.slotid, a.sequenceid));
                        // The first PUTROOTFH compound is delayed.
                        if seen.len() == 1 {
                            res.push(NfsResOp4::Sequence(Res4::Err(NfsStat4::Nfs4errDelay)));
                            status = NfsStat4::Nfs4errDelay;
                            break;
                        }
                    }
                    sequence_ok(&a)
                }
                NfsArgOp4::ReclaimComplete(_) => NfsResOp4::ReclaimComplete(Res4::Ok(())),
                NfsArgOp4::PutFh(_) => NfsResOp4::PutFh(Res4::Ok(())),
                NfsArgOp4::PutRootFh => NfsResOp4::PutRootFh(Res4::Ok(())),
                NfsArgOp4::DelegReturn(a) => {
                    self.0.delegreturns.lock().unwrap().push(a.deleg_stateid);
                    NfsResOp4::DelegReturn(Res4::Ok(()))
                }
                NfsArgOp4::GetFh => NfsResOp4::GetFh(Res4::Err(NfsStat4::Nfs4errNotsupp)),
                _ => NfsResOp4::Illegal(Res4::Err(NfsStat4::Nfs4errOpIllegal)),
            };
            let st = r.status();
            res.push(r);
            if st != NfsStat4::Nfs4Ok {
                status = st;
                break;
            }
        }
        Compound4Res {
            status,
            tag: args.tag,
            resarray: res,
        }
    }
}

impl Service for Fake {
    fn call(&self, mut call: Call) -> ReplyFuture {
        let reply = match call.proc_ {
            0 => Reply::Success(Vec::new()),
            1 => match Compound4Args::unpack(&mut call.args) {
                Ok(a) => Reply::success(&self.compound(a, call.conn.clone())),
                Err(_) => Reply::Error(rpc::ReplyError::GarbageArgs),
            },
            _ => Reply::Error(rpc::ReplyError::ProcUnavail),
        };
        Box::pin(async move { reply })
    }
}

async fn fake_server() -> (std::net::SocketAddr, Arc<Script>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let script = Arc::new(Script::default());
    let svc: Arc<dyn Service> = Arc::new(Fake(script.clone()));
    tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            let _ = rpc::start(s, Some(svc.clone()), rpc::ConnConfig::default());
        }
    });
    (addr, script)
}

#[tokio::test]
async fn session_setup_recall_delay_and_slot_target() {
    let (addr, script) = fake_server().await;
    let c = Client::connect(addr, ClientOptions::new("unit"))
        .await
        .unwrap();
    assert_eq!(c.clientid(), 7);
    assert_eq!(c.sessionid(), SESSION);
    assert_eq!(c.fore_attrs().maxrequests, 8);

    // The server's CB_RECALL is answered and the delegation returned: the
    // fake's record of the answer, its DELEGRETURN and the client's count
    // come in no set order, so all three are waited for (30 s at most:
    // milliseconds on an idle machine).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while script.delegreturns.lock().unwrap().is_empty()
        || script.cb_reply.lock().unwrap().is_none()
        || c.callbacks().delegreturns() == 0
    {
        assert!(tokio::time::Instant::now() < deadline, "no recall done");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(*script.delegreturns.lock().unwrap(), vec![RECALLED]);
    let cb = script.cb_reply.lock().unwrap().clone().expect("CB reply");
    assert_eq!(cb.status, NfsStat4::Nfs4Ok);
    assert_eq!(cb.resarray.len(), 2);
    assert_eq!(c.callbacks().recalls().len(), 1);
    assert_eq!(c.callbacks().delegreturns(), 1);

    // The target (3) shrank the usable slots from 8 to 4.
    assert_eq!(c.slots().target(), 3);
    assert_eq!(c.slots().usable(), 4);

    // NFS4ERR_DELAY on SEQUENCE: retried on the same slot and sequence id.
    c.compound(vec![NfsArgOp4::PutRootFh]).await.unwrap();
    let seen = script.putroot_seqs.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0], seen[1]);

    // Unknown operations surface with their index and status.
    let e = c
        .compound(vec![NfsArgOp4::PutRootFh, NfsArgOp4::GetFh])
        .await
        .unwrap_err();
    match e {
        crate::Error::Status {
            index,
            status,
            opnum,
            results,
        } => {
            assert_eq!(index, 1);
            assert_eq!(opnum, OpNum4::GetFh as u32);
            assert_eq!(status, NfsStat4::Nfs4errNotsupp);
            assert_eq!(results.len(), 2);
        }
        other => panic!("{other:?}"),
    }
}
