//! Client IDs, sessions and COMPOUND framing (RFC 8881 §2.10, §16.2,
//! §18.33–§18.37, §18.46, §18.50, §18.51).

mod common;

use std::sync::Arc;

use bytes::Bytes;
use client::{send_compound, Client, Error, SlotOutcome};
use common::*;
use proto::nfs4::*;
use xdr::{Encoder, Pack};

#[tokio::test]
async fn connect_runs_exchange_id_create_session_reclaim_complete() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        assert_ne!(c.clientid(), 0);
        let fore = c.fore_attrs();
        assert!(fore.maxrequests >= 1 && fore.maxrequests <= 64, "{fore:?}");
        assert!(fore.maxoperations >= 2 && fore.maxoperations <= 64);
        // SEQUENCE alone.
        assert!(c.compound(vec![]).await.unwrap().is_empty());
        // RECLAIM_COMPLETE was sent by connect: a second one is
        // NFS4ERR_COMPLETE_ALREADY (§18.51.3).
        let r = c
            .compound(vec![NfsArgOp4::ReclaimComplete(ReclaimComplete4Args {
                one_fs: false,
            })])
            .await;
        assert_eq!(status(r), NfsStat4::Nfs4errCompleteAlready);
        // The server probes the back channel with CB_NULL.
        assert!(
            eventually(|| (c.callbacks().cb_nulls() > 0).then_some(()))
                .await
                .is_some(),
            "no CB_NULL on the back channel"
        );
        c.compound(vec![]).await.unwrap();
        assert_eq!(
            c.status_flags() & (SEQ4_STATUS_CB_PATH_DOWN | SEQ4_STATUS_CB_PATH_DOWN_SESSION),
            0,
            "back channel reported down"
        );
    })
    .await
}

#[tokio::test]
async fn null_procedure_answers() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        c.null().await.unwrap();
    })
    .await
}

#[tokio::test]
async fn minorversion_2_session_works() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client_with(options().minorversion(2)).await;
        let root = c.root_fh().await.unwrap();
        let a = c.getattr(&root, &[FATTR4_TYPE]).await.unwrap();
        assert_eq!(a.type_, Some(NfsFtype4::Nf4Dir));
    })
    .await
}

async fn raw_conn(srv: &TestServer) -> Arc<rpc::Connection> {
    rpc::connect(srv.addr, None, rpc::ConnConfig::default())
        .await
        .unwrap()
}

fn cred() -> rpc::OpaqueAuth {
    rpc::Auth::sys(0, 0, vec![], "e2e").to_opaque()
}

fn exchange_id(owner: &[u8], verifier: Verifier4) -> NfsArgOp4 {
    NfsArgOp4::ExchangeId(ExchangeId4Args {
        clientowner: ClientOwner4 {
            verifier,
            ownerid: Bytes::copy_from_slice(owner),
        },
        flags: 0,
        state_protect: StateProtect4A::None,
        client_impl_id: None,
    })
}

fn create_session(clientid: ClientId4, sequence: u32) -> NfsArgOp4 {
    NfsArgOp4::CreateSession(CreateSession4Args {
        clientid,
        sequence,
        flags: 0,
        fore_chan_attrs: client::fore_channel_attrs(8),
        back_chan_attrs: client::back_channel_attrs(),
        cb_program: client::CB_PROGRAM,
        sec_parms: vec![CallbackSecParms4::AuthNone],
    })
}

async fn single(conn: &rpc::Connection, op: NfsArgOp4) -> NfsResOp4 {
    let r = send_compound(conn, &cred(), b"", 1, &[op]).await.unwrap();
    assert_eq!(r.resarray.len(), 1, "{r:?}");
    r.resarray.into_iter().next().unwrap()
}

#[tokio::test]
async fn exchange_id_is_idempotent_and_create_session_replays() {
    within(async {
        let srv = TestServer::start().await;
        let conn = raw_conn(&srv).await;
        let owner = b"raw-owner-1";
        let verf = [7; 8];
        let NfsResOp4::ExchangeId(Res4::Ok(e1)) = single(&conn, exchange_id(owner, verf)).await
        else {
            panic!("EXCHANGE_ID failed")
        };
        assert_eq!(e1.flags & EXCHGID4_FLAG_CONFIRMED_R, 0);
        let NfsResOp4::ExchangeId(Res4::Ok(e2)) = single(&conn, exchange_id(owner, verf)).await
        else {
            panic!("EXCHANGE_ID failed")
        };
        // An unconfirmed record may be replaced by a new one (§18.35.5
        // case 1); use the latest.
        assert_eq!(e2.flags & EXCHGID4_FLAG_CONFIRMED_R, 0);
        let e1 = e2;

        let NfsResOp4::CreateSession(Res4::Ok(s1)) =
            single(&conn, create_session(e1.clientid, e1.sequenceid)).await
        else {
            panic!("CREATE_SESSION failed")
        };
        // The same CREATE_SESSION again is a replay (§18.36.4): same session.
        let NfsResOp4::CreateSession(Res4::Ok(s2)) =
            single(&conn, create_session(e1.clientid, e1.sequenceid)).await
        else {
            panic!("CREATE_SESSION replay failed")
        };
        assert_eq!(s1.sessionid, s2.sessionid);
        // Skipping ahead is misordered.
        let r = single(&conn, create_session(e1.clientid, e1.sequenceid + 5)).await;
        assert_eq!(r.status(), NfsStat4::Nfs4errSeqMisordered);
        // Unknown client ID.
        let r = single(&conn, create_session(0xdead_beef_0000_0001, 1)).await;
        assert_eq!(r.status(), NfsStat4::Nfs4errStaleClientid);

        // Now confirmed: the same owner and verifier get the same client ID
        // back, flagged confirmed (§18.35.5 case 2).
        let NfsResOp4::ExchangeId(Res4::Ok(e3)) = single(&conn, exchange_id(owner, verf)).await
        else {
            panic!("EXCHANGE_ID failed")
        };
        assert_eq!(e3.clientid, e1.clientid);
        assert_ne!(e3.flags & EXCHGID4_FLAG_CONFIRMED_R, 0);
    })
    .await
}

#[tokio::test]
async fn exchange_id_rejects_bad_flags() {
    within(async {
        let srv = TestServer::start().await;
        let conn = raw_conn(&srv).await;
        let mut op = exchange_id(b"bad-flags", [1; 8]);
        if let NfsArgOp4::ExchangeId(a) = &mut op {
            // EXCHGID4_FLAG_CONFIRMED_R is a server-only flag.
            a.flags = EXCHGID4_FLAG_CONFIRMED_R;
        }
        assert_eq!(single(&conn, op).await.status(), NfsStat4::Nfs4errInval);
    })
    .await
}

#[tokio::test]
async fn destroy_session_and_clientid() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        // With a session alive, DESTROY_CLIENTID is CLIENTID_BUSY.
        let r = c
            .compound_raw(
                b"",
                1,
                &[NfsArgOp4::DestroyClientId(DestroyClientId4Args {
                    clientid: c.clientid(),
                })],
            )
            .await
            .unwrap();
        assert_eq!(r.status, NfsStat4::Nfs4errClientidBusy);
        c.destroy().await.unwrap();
        // The session is gone.
        assert_eq!(
            status(c.compound(vec![]).await),
            NfsStat4::Nfs4errBadsession
        );
        // So is the client.
        let r = c
            .compound_raw(
                b"",
                1,
                &[NfsArgOp4::DestroyClientId(DestroyClientId4Args {
                    clientid: c.clientid(),
                })],
            )
            .await
            .unwrap();
        assert_eq!(r.status, NfsStat4::Nfs4errStaleClientid);
        let r = c
            .compound_raw(
                b"",
                1,
                &[NfsArgOp4::DestroySession(DestroySession4Args {
                    sessionid: c.sessionid(),
                })],
            )
            .await
            .unwrap();
        assert_eq!(r.status, NfsStat4::Nfs4errBadsession);
    })
    .await
}

#[tokio::test]
async fn bind_conn_to_session_lets_a_second_connection_use_the_session() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        let conn2 = raw_conn(&srv).await;
        let r = single(
            &conn2,
            NfsArgOp4::BindConnToSession(BindConnToSession4Args {
                sessid: c.sessionid(),
                dir: ChannelDirFromClient4::Cdfc4Fore,
                use_conn_in_rdma_mode: false,
            }),
        )
        .await;
        match r {
            NfsResOp4::BindConnToSession(Res4::Ok(ok)) => {
                assert_eq!(ok.sessid, c.sessionid());
                assert_eq!(ok.dir, ChannelDirFromServer4::Cdfs4Fore);
                assert!(!ok.use_conn_in_rdma_mode);
            }
            other => panic!("BIND_CONN_TO_SESSION: {other:?}"),
        }
        // A SEQUENCE on the new connection, with a slot of the session.
        let slot = c.take_slot().await;
        let seq = c.sequence_args(&slot, false);
        let r = send_compound(
            &conn2,
            &c.cred(),
            b"",
            1,
            &[
                NfsArgOp4::Sequence(seq),
                NfsArgOp4::PutRootFh,
                NfsArgOp4::GetFh,
            ],
        )
        .await
        .unwrap();
        assert_eq!(r.status, NfsStat4::Nfs4Ok, "{r:?}");
        slot.release(SlotOutcome::Processed, None);
        // The original connection still works.
        c.compound(vec![NfsArgOp4::PutRootFh]).await.unwrap();

        // Unknown session.
        let r = single(
            &conn2,
            NfsArgOp4::BindConnToSession(BindConnToSession4Args {
                sessid: [0xee; 16],
                dir: ChannelDirFromClient4::Cdfc4ForeOrBoth,
                use_conn_in_rdma_mode: false,
            }),
        )
        .await;
        assert_eq!(r.status(), NfsStat4::Nfs4errBadsession);
    })
    .await
}

#[tokio::test]
async fn sequence_replay_returns_cached_reply_without_reexecuting() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        let slot = c.take_slot().await;
        let ops = vec![
            NfsArgOp4::Sequence(c.sequence_args(&slot, true)),
            NfsArgOp4::PutRootFh,
            NfsArgOp4::Create(Create4Args {
                objtype: CreateType4::Dir,
                objname: b("replayed"),
                createattrs: Attrs {
                    mode: Some(0o755),
                    ..Default::default()
                }
                .encode(),
            }),
            NfsArgOp4::GetFh,
        ];
        let first = c.compound_raw(b"replay", 1, &ops).await.unwrap();
        assert_eq!(first.status, NfsStat4::Nfs4Ok, "{first:?}");
        // The retransmission: same slot, same sequence id, same request.
        let again = c.compound_raw(b"replay", 1, &ops).await.unwrap();
        assert_eq!(again, first, "a replay must return the cached reply");
        assert!(srv.path("replayed").is_dir());
        drop(slot); // processed: the next request on it uses seqid + 1
                    // The slot carries on normally.
        for _ in 0..4 {
            c.compound(vec![NfsArgOp4::PutRootFh]).await.unwrap();
        }
        // And the directory exists exactly once: a fresh CREATE is EXIST.
        let root = c.root_fh().await.unwrap();
        let r = c.mkdir(&root, "replayed", 0o755).await;
        assert_eq!(status(r), NfsStat4::Nfs4errExist);
    })
    .await
}

#[tokio::test]
async fn sequence_retry_of_uncached_reply() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        let slot = c.take_slot().await;
        // cachethis false with a large reply: the server need not cache it;
        // a retry then gets the reply again or RETRY_UNCACHED_REP.
        let ops = vec![
            NfsArgOp4::Sequence(c.sequence_args(&slot, false)),
            NfsArgOp4::PutRootFh,
            getattr(&[FATTR4_SUPPORTED_ATTRS, FATTR4_TYPE, FATTR4_FILEID]),
        ];
        let first = c.compound_raw(b"", 1, &ops).await.unwrap();
        assert_eq!(first.status, NfsStat4::Nfs4Ok);
        let again = c.compound_raw(b"", 1, &ops).await.unwrap();
        assert!(
            again == first
                || (again.status == NfsStat4::Nfs4errRetryUncachedRep && again.resarray.len() == 1),
            "{again:?}"
        );
        drop(slot);
    })
    .await
}

#[tokio::test]
async fn sequence_misordered_badslot_and_false_retry() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client_with(options().slots(8)).await;
        let slot = c.take_slot().await;

        // A sequence id two ahead is misordered.
        let mut seq = c.sequence_args(&slot, true);
        seq.sequenceid = slot.seqid().wrapping_add(1);
        let r = c
            .compound_raw(b"", 1, &[NfsArgOp4::Sequence(seq), NfsArgOp4::PutRootFh])
            .await
            .unwrap();
        assert_eq!(r.status, NfsStat4::Nfs4errSeqMisordered);
        assert_eq!(r.resarray.len(), 1);
        // So is one far behind.
        let mut seq = c.sequence_args(&slot, true);
        seq.sequenceid = slot.seqid().wrapping_sub(5);
        let r = c
            .compound_raw(b"", 1, &[NfsArgOp4::Sequence(seq)])
            .await
            .unwrap();
        assert_eq!(r.status, NfsStat4::Nfs4errSeqMisordered);

        // A slot beyond the table.
        let mut seq = c.sequence_args(&slot, false);
        seq.slotid = c.fore_attrs().maxrequests;
        seq.sequenceid = 1;
        let r = c
            .compound_raw(b"", 1, &[NfsArgOp4::Sequence(seq)])
            .await
            .unwrap();
        assert_eq!(r.status, NfsStat4::Nfs4errBadslot);

        // An unknown session.
        let mut seq = c.sequence_args(&slot, false);
        seq.sessionid = [0x55; 16];
        let r = c
            .compound_raw(b"", 1, &[NfsArgOp4::Sequence(seq)])
            .await
            .unwrap();
        assert_eq!(r.status, NfsStat4::Nfs4errBadsession);

        // Now a real request, then a different request with the same slot
        // and sequence id: a false retry (§2.10.6.1.3.1).
        let seq = c.sequence_args(&slot, true);
        let r = c
            .compound_raw(b"", 1, &[NfsArgOp4::Sequence(seq), NfsArgOp4::PutRootFh])
            .await
            .unwrap();
        assert_eq!(r.status, NfsStat4::Nfs4Ok);
        let r = c
            .compound_raw(
                b"",
                1,
                &[
                    NfsArgOp4::Sequence(seq),
                    NfsArgOp4::PutRootFh,
                    NfsArgOp4::GetFh,
                ],
            )
            .await
            .unwrap();
        assert_eq!(r.status, NfsStat4::Nfs4errSeqFalseRetry);
        slot.release(SlotOutcome::Processed, None);
        c.compound(vec![NfsArgOp4::PutRootFh]).await.unwrap();
    })
    .await
}

#[tokio::test]
async fn operations_without_sequence_are_op_not_in_session() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        let r = c
            .compound_raw(b"nosession", 1, &[NfsArgOp4::PutRootFh, NfsArgOp4::GetFh])
            .await
            .unwrap();
        assert_eq!(r.status, NfsStat4::Nfs4errOpNotInSession);
        assert_eq!(r.resarray.len(), 1);
        assert_eq!(&r.tag[..], b"nosession");
        // A session-less operation that is not alone: NOT_ONLY_OP.
        let r = c
            .compound_raw(
                b"",
                1,
                &[
                    NfsArgOp4::DestroySession(DestroySession4Args {
                        sessionid: c.sessionid(),
                    }),
                    NfsArgOp4::PutRootFh,
                ],
            )
            .await
            .unwrap();
        assert_eq!(r.status, NfsStat4::Nfs4errNotOnlyOp);
        // SEQUENCE in the middle: SEQUENCE_POS.
        let slot_seq = Sequence4Args {
            sessionid: c.sessionid(),
            sequenceid: 1,
            slotid: 0,
            highest_slotid: 0,
            cachethis: false,
        };
        let r = c
            .compound(vec![NfsArgOp4::PutRootFh, NfsArgOp4::Sequence(slot_seq)])
            .await;
        assert_eq!(failed_at(r), (1, NfsStat4::Nfs4errSequencePos));
        // The session still works (the slot was used correctly).
        c.compound(vec![NfsArgOp4::PutRootFh]).await.unwrap();
        // An empty COMPOUND is fine (§16.2.3).
        let r = c.compound_raw(b"", 1, &[]).await.unwrap();
        assert_eq!(r.status, NfsStat4::Nfs4Ok);
        assert!(r.resarray.is_empty());
    })
    .await
}

#[tokio::test]
async fn unsupported_minor_version_is_minor_vers_mismatch() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        for minor in [3, 99, u32::MAX] {
            let r = c
                .compound_raw(b"mv", minor, &[NfsArgOp4::PutRootFh])
                .await
                .unwrap();
            assert_eq!(
                r.status,
                NfsStat4::Nfs4errMinorVersMismatch,
                "minor {minor}"
            );
            assert!(r.resarray.is_empty());
            assert_eq!(&r.tag[..], b"mv");
        }
    })
    .await
}

#[tokio::test]
async fn unknown_opcode_is_op_illegal() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        for opnum in [2u32, 9999, 76, OpNum4::Illegal as u32] {
            let op = if opnum == OpNum4::Illegal as u32 {
                NfsArgOp4::Illegal
            } else {
                NfsArgOp4::Unknown(opnum)
            };
            let r = c.compound(vec![NfsArgOp4::PutRootFh, op]).await;
            match r {
                Err(Error::Status {
                    index,
                    opnum: got,
                    status,
                    results,
                }) => {
                    assert_eq!(index, 1);
                    assert_eq!(status, NfsStat4::Nfs4errOpIllegal);
                    assert_eq!(got, OpNum4::Illegal as u32, "result opnum is OP_ILLEGAL");
                    assert_eq!(results.len(), 2);
                }
                other => panic!("opnum {opnum}: {other:?}"),
            }
        }
    })
    .await
}

#[tokio::test]
async fn too_many_operations_is_refused_by_sequence() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        let max = c.fore_attrs().maxoperations as usize;
        // SEQUENCE plus `max` more is one too many.
        let ops = vec![NfsArgOp4::PutRootFh; max];
        assert_eq!(status(c.compound(ops).await), NfsStat4::Nfs4errTooManyOps);
        let ops = vec![NfsArgOp4::PutRootFh; max - 1];
        c.compound(ops).await.unwrap();
    })
    .await
}

/// Encodes a COMPOUND header and `ops` by hand.
fn encode_ops(minor: u32, count: u32, ops: &[NfsArgOp4]) -> Encoder {
    let mut e = Encoder::new();
    Bytes::new().pack(&mut e);
    e.u32(minor);
    e.u32(count);
    for op in ops {
        op.pack(&mut e);
    }
    e
}

#[tokio::test]
async fn truncated_compound_is_garbage_args() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        // Tag length promising more than is there.
        let mut e = Encoder::new();
        e.u32(64);
        e.raw(b"abc");
        let r = c.compound_raw_bytes(e.finish()).await;
        assert!(
            matches!(
                r,
                Err(Error::Rpc(rpc::CallError::Rejected(
                    rpc::ReplyError::GarbageArgs
                )))
            ),
            "{r:?}"
        );
        // Header cut before the operation count.
        let mut e = Encoder::new();
        Bytes::new().pack(&mut e);
        e.u32(1);
        let r = c.compound_raw_bytes(e.finish()).await;
        assert!(
            matches!(
                r,
                Err(Error::Rpc(rpc::CallError::Rejected(
                    rpc::ReplyError::GarbageArgs
                )))
            ),
            "{r:?}"
        );
        // The connection survives.
        c.null().await.unwrap();
        c.compound(vec![NfsArgOp4::PutRootFh]).await.unwrap();
    })
    .await
}

#[tokio::test]
async fn truncated_operation_is_badxdr() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        let slot = c.take_slot().await;
        let seq = NfsArgOp4::Sequence(c.sequence_args(&slot, false));
        // SEQUENCE, then a PUTFH whose handle is cut short.
        let mut e = encode_ops(1, 2, &[seq]);
        e.u32(OpNum4::PutFh as u32);
        e.u32(100);
        e.raw(&[1, 2, 3, 4]);
        let r = c.compound_raw_bytes(e.finish()).await.unwrap();
        assert_eq!(r.status, NfsStat4::Nfs4errBadxdr, "{r:?}");
        assert_eq!(r.resarray.len(), 2);
        drop(slot);
        // More operations announced than sent: the missing one is BADXDR.
        let slot = c.take_slot().await;
        let seq = NfsArgOp4::Sequence(c.sequence_args(&slot, false));
        let e = encode_ops(1, 3, &[seq, NfsArgOp4::PutRootFh]);
        let r = c.compound_raw_bytes(e.finish()).await.unwrap();
        assert_eq!(r.status, NfsStat4::Nfs4errBadxdr, "{r:?}");
        assert_eq!(r.resarray.len(), 3);
        drop(slot);
        c.compound(vec![NfsArgOp4::PutRootFh]).await.unwrap();
    })
    .await
}

#[tokio::test]
async fn many_concurrent_compounds_share_the_slots() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client_with(options().slots(8)).await;
        let root = c.root_fh().await.unwrap();
        let mut tasks = Vec::new();
        for i in 0..400 {
            let c = c.clone();
            let root = root.clone();
            tasks.push(tokio::spawn(async move {
                if i % 10 == 0 {
                    c.mkdir(&root, &format!("d{i}"), 0o755).await.map(|_| ())
                } else {
                    c.getattr(&root, &[FATTR4_TYPE, FATTR4_CHANGE])
                        .await
                        .map(|a| assert_eq!(a.type_, Some(NfsFtype4::Nf4Dir)))
                }
            }));
        }
        for t in tasks {
            t.await.unwrap().unwrap();
        }
        let st = c.slot_stats();
        assert!(st.acquired >= 400, "{st:?}");
        assert!(
            st.waited > 0,
            "400 requests over 8 slots should have waited: {st:?}"
        );
        let names = c.readdir(&root, &[]).await.unwrap();
        assert_eq!(names.len(), 40);
    })
    .await
}

#[tokio::test]
async fn many_clients_at_once() {
    within(async {
        let srv = TestServer::start().await;
        let mut tasks = Vec::new();
        for i in 0..16 {
            let addr = srv.addr;
            tasks.push(tokio::spawn(async move {
                let c = Client::connect(addr, options()).await.unwrap();
                let root = c.root_fh().await.unwrap();
                let f = c
                    .open(&root, &format!("f{i}"), client::OpenOpts::create(0o600))
                    .await
                    .unwrap();
                c.write(
                    &f.fh,
                    f.stateid,
                    0,
                    Bytes::from(vec![i as u8; 100]),
                    StableHow4::FileSync4,
                )
                .await
                .unwrap();
                c.close(&f.fh, f.stateid).await.unwrap();
                c.destroy().await.unwrap();
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        for i in 0..16 {
            assert_eq!(
                std::fs::read(srv.path(&format!("f{i}"))).unwrap(),
                vec![i as u8; 100]
            );
        }
    })
    .await
}

/// A session on `conn` whose replies may be at most `max` bytes, and at
/// most `cached` bytes when the client asks for them to be cached.
async fn session_with_reply_limits(
    conn: &rpc::Connection,
    clientid: ClientId4,
    sequence: u32,
    max: u32,
    cached: u32,
) -> SessionId4 {
    let mut fore = client::fore_channel_attrs(1);
    fore.maxresponsesize = max;
    fore.maxresponsesize_cached = cached;
    let r = single(
        conn,
        NfsArgOp4::CreateSession(CreateSession4Args {
            clientid,
            sequence,
            flags: 0,
            fore_chan_attrs: fore,
            back_chan_attrs: client::back_channel_attrs(),
            cb_program: client::CB_PROGRAM,
            sec_parms: vec![CallbackSecParms4::AuthNone],
        }),
    )
    .await;
    let NfsResOp4::CreateSession(Res4::Ok(ok)) = r else {
        panic!("CREATE_SESSION failed: {r:?}")
    };
    assert_eq!(ok.fore_chan_attrs.maxresponsesize, max);
    assert_eq!(ok.fore_chan_attrs.maxresponsesize_cached, cached);
    ok.sessionid
}

/// SEQUENCE on slot 0 (first use), `PAD` PUTROOTFHs, then `last`.
fn padded(sessionid: SessionId4, cachethis: bool, last: &[NfsArgOp4]) -> Vec<NfsArgOp4> {
    let mut ops = vec![NfsArgOp4::Sequence(Sequence4Args {
        sessionid,
        sequenceid: 1,
        slotid: 0,
        highest_slotid: 0,
        cachethis,
    })];
    ops.extend(std::iter::repeat_n(NfsArgOp4::PutRootFh, PAD));
    ops.extend_from_slice(last);
    ops
}

/// PUTROOTFHs that bring small replies over the smallest session limit.
const PAD: usize = 25;

/// The reply before the last operations of [`padded`]: RPC header (24),
/// COMPOUND4res header with an empty tag (12), SEQUENCE (44), PUTROOTFHs.
const PADDED: u32 = 24 + 12 + 44 + 8 * PAD as u32;

#[tokio::test]
async fn modifying_operation_whose_reply_cannot_fit_is_not_run() {
    within(async {
        let srv = TestServer::start().await;
        let conn = raw_conn(&srv).await;
        let NfsResOp4::ExchangeId(Res4::Ok(eid)) =
            single(&conn, exchange_id(b"reply-limits", [3; 8])).await
        else {
            panic!("EXCHANGE_ID failed")
        };
        let (id, seq) = (eid.clientid, eid.sequenceid);
        let send = |ops: Vec<NfsArgOp4>| {
            let conn = conn.clone();
            async move { send_compound(&conn, &cred(), b"", 1, &ops).await.unwrap() }
        };
        std::fs::write(srv.path("victim"), b"x").unwrap();
        let remove = [NfsArgOp4::Remove(Remove4Args {
            target: b("victim"),
        })];
        // REMOVE4resok is 28 bytes: one byte short, it does not run
        // (RFC 8881 §2.10.6.4).
        let exact = PADDED + 28;
        let s = session_with_reply_limits(&conn, id, seq, exact - 1, 64 * 1024).await;
        let r = send(padded(s, false, &remove)).await;
        assert_eq!(r.status, NfsStat4::Nfs4errRepTooBig, "{r:?}");
        assert_eq!(r.resarray.len(), PAD + 2);
        assert!(srv.path("victim").exists(), "REMOVE ran");
        // Asked to be cached, with the cached limit one byte short.
        let s = session_with_reply_limits(&conn, id, seq + 1, 64 * 1024, exact - 1).await;
        let r = send(padded(s, true, &remove)).await;
        assert_eq!(r.status, NfsStat4::Nfs4errRepTooBigToCache, "{r:?}");
        assert!(srv.path("victim").exists(), "REMOVE ran");
        // Not asked to be cached, the cached limit does not matter.
        let s = session_with_reply_limits(&conn, id, seq + 2, exact, exact - 1).await;
        let r = send(padded(s, false, &remove)).await;
        assert_eq!(r.status, NfsStat4::Nfs4Ok, "{r:?}");
        assert!(!srv.path("victim").exists());

        // WRITE4resok is 24 bytes, after a LOOKUP's 8.
        std::fs::write(srv.path("data"), b"original").unwrap();
        let write = [
            NfsArgOp4::Lookup(Lookup4Args { objname: b("data") }),
            NfsArgOp4::Write(Write4Args {
                stateid: StateId4::ANONYMOUS,
                offset: 0,
                stable: StableHow4::FileSync4,
                data: b("changed!"),
            }),
        ];
        let exact = PADDED + 8 + 24;
        let s = session_with_reply_limits(&conn, id, seq + 3, exact - 1, exact - 1).await;
        let r = send(padded(s, false, &write)).await;
        assert_eq!(r.status, NfsStat4::Nfs4errRepTooBig, "{r:?}");
        assert_eq!(r.resarray.len(), PAD + 3);
        assert_eq!(std::fs::read(srv.path("data")).unwrap(), b"original");

        // A READ changes nothing: it runs, and only a reply that turns
        // out too big is refused. Its 1000 bytes asked for would not fit,
        // the 8 it gets do.
        let read = |count| {
            [
                NfsArgOp4::Lookup(Lookup4Args { objname: b("data") }),
                NfsArgOp4::Read(Read4Args {
                    stateid: StateId4::ANONYMOUS,
                    offset: 0,
                    count,
                }),
            ]
        };
        let s = session_with_reply_limits(&conn, id, seq + 4, exact, exact).await;
        let r = send(padded(s, false, &read(1000))).await;
        assert_eq!(r.status, NfsStat4::Nfs4Ok, "{r:?}");
        let Some(NfsResOp4::Read(Res4::Ok(ok))) = r.resarray.last() else {
            panic!("{r:?}")
        };
        assert_eq!(&ok.data[..], b"original");
        std::fs::write(srv.path("data"), vec![b'z'; 1000]).unwrap();
        let s = session_with_reply_limits(&conn, id, seq + 5, exact, exact).await;
        let r = send(padded(s, false, &read(1000))).await;
        assert_eq!(r.status, NfsStat4::Nfs4errRepTooBig, "{r:?}");
        assert_eq!(r.resarray.len(), PAD + 3);
    })
    .await
}
