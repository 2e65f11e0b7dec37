//! Client and session operations in process (RFC 8881 §18.33–§18.38,
//! §18.46, §18.48, §18.50, §18.51): EXCHANGE_ID, CREATE_SESSION,
//! SEQUENCE, DESTROY_SESSION, DESTROY_CLIENTID, BIND_CONN_TO_SESSION,
//! BACKCHANNEL_CTL, RECLAIM_COMPLETE, TEST_STATEID, FREE_STATEID.

mod common;

use std::time::Duration;

use common::*;
use rpc::Reply;
use server::nfs4::inproc::{encode_compound, CB_PROGRAM};

fn exchange_id(name: &str, verifier: u8, flags: u32) -> NfsArgOp4 {
    NfsArgOp4::ExchangeId(ExchangeId4Args {
        clientowner: ClientOwner4 {
            verifier: [verifier; 8],
            ownerid: b(name),
        },
        flags,
        state_protect: StateProtect4A::None,
        client_impl_id: None,
    })
}

fn channel() -> ChannelAttrs4 {
    ClientOpts::default().fore
}

fn create_session(clientid: ClientId4, sequence: u32) -> CreateSession4Args {
    CreateSession4Args {
        clientid,
        sequence,
        flags: 0,
        fore_chan_attrs: channel(),
        back_chan_attrs: channel(),
        cb_program: CB_PROGRAM,
        sec_parms: vec![CallbackSecParms4::AuthNone],
    }
}

/// EXCHANGE_ID alone, as a new client sends it.
async fn exchange(h: &InProcess, auth: &rpc::Auth, name: &str, verf: u8) -> ExchangeId4ResOk {
    let r = h.compound(auth, &[exchange_id(name, verf, 0)]).await;
    ok(&r);
    resok!(r, 0, ExchangeId)
}

async fn session_of(h: &InProcess, auth: &rpc::Auth, x: &ExchangeId4ResOk) -> CreateSession4ResOk {
    let cs = NfsArgOp4::CreateSession(create_session(x.clientid, x.sequenceid));
    let r = h.compound(auth, &[cs]).await;
    ok(&r);
    resok!(r, 0, CreateSession)
}

fn sequence_op(sessionid: SessionId4, sequenceid: u32, slotid: u32) -> NfsArgOp4 {
    NfsArgOp4::Sequence(Sequence4Args {
        sessionid,
        sequenceid,
        slotid,
        highest_slotid: 0,
        cachethis: false,
    })
}

fn bytes_of(r: Reply) -> Vec<u8> {
    match r {
        Reply::Success(chunks) => chunks.concat(),
        _ => panic!("COMPOUND not answered"),
    }
}

fn destroy_session(id: SessionId4) -> NfsArgOp4 {
    NfsArgOp4::DestroySession(DestroySession4Args { sessionid: id })
}

fn destroy_clientid(id: ClientId4) -> NfsArgOp4 {
    NfsArgOp4::DestroyClientId(DestroyClientId4Args { clientid: id })
}

// ---------------------------------------------------------------------
// EXCHANGE_ID (§18.35)
// ---------------------------------------------------------------------

#[tokio::test]
async fn exchange_id_new_client_is_confirmed_by_create_session() {
    let h = server();
    let x = exchange(&h, &root_auth(), "c", 1).await;
    assert_eq!(x.flags & EXCHGID4_FLAG_CONFIRMED_R, 0, "new record");
    assert_ne!(x.flags & EXCHGID4_FLAG_USE_NON_PNFS, 0);
    assert!(matches!(x.state_protect, StateProtect4R::None));
    assert!(!x.server_owner.major_id.is_empty());
    session_of(&h, &root_auth(), &x).await;
    // Case 2 (§18.35.4): the same owner and verifier again get the
    // confirmed record.
    let again = exchange(&h, &root_auth(), "c", 1).await;
    assert_eq!(again.clientid, x.clientid);
    assert_ne!(again.flags & EXCHGID4_FLAG_CONFIRMED_R, 0);
}

#[tokio::test]
async fn exchange_id_new_verifier_replaces_the_record_once_confirmed() {
    let h = server();
    let old = h.client("c").await;
    // Case 5: the client rebooted. The old record lives on until the new
    // one is confirmed.
    let x = exchange(&h, &root_auth(), "c", 2).await;
    assert_ne!(x.clientid, old.clientid);
    assert_eq!(x.flags & EXCHGID4_FLAG_CONFIRMED_R, 0);
    ok(&h.seq(&old, &[]).await);
    session_of(&h, &root_auth(), &x).await;
    let r = h.seq(&old, &[]).await;
    fails(&r, OpNum4::Sequence, NfsStat4::Nfs4errBadsession);
}

#[tokio::test]
async fn exchange_id_refuses_unknown_flags_and_state_protection() {
    let h = server();
    // EXCHGID4_FLAG_CONFIRMED_R is the server's to set (§18.35.3).
    let r = h
        .compound(
            &root_auth(),
            &[exchange_id("c", 1, EXCHGID4_FLAG_CONFIRMED_R)],
        )
        .await;
    fails(&r, OpNum4::ExchangeId, NfsStat4::Nfs4errInval);
    let mach_cred = NfsArgOp4::ExchangeId(ExchangeId4Args {
        clientowner: ClientOwner4 {
            verifier: [1; 8],
            ownerid: b("c"),
        },
        flags: 0,
        state_protect: StateProtect4A::MachCred(StateProtectOps4 {
            must_enforce: Bitmap4::default(),
            must_allow: Bitmap4::default(),
        }),
        client_impl_id: None,
    });
    let r = h.compound(&root_auth(), &[mach_cred]).await;
    fails(&r, OpNum4::ExchangeId, NfsStat4::Nfs4errEncrAlgUnsupp);
    assert_eq!(h.srv.state().client_count(), 0, "nothing recorded");
}

#[tokio::test]
async fn exchange_id_update_cases() {
    let h = server();
    let upd = EXCHGID4_FLAG_UPD_CONFIRMED_REC_A;
    // Case 7: no confirmed record to update.
    let r = h.compound(&root_auth(), &[exchange_id("c", 1, upd)]).await;
    fails(&r, OpNum4::ExchangeId, NfsStat4::Nfs4errNoent);
    let s = h.client("c").await;
    // Case 8: the wrong verifier.
    let r = h.compound(&root_auth(), &[exchange_id("c", 9, upd)]).await;
    fails(&r, OpNum4::ExchangeId, NfsStat4::Nfs4errNotSame);
    // Case 9: another principal.
    let r = h.compound(&user_auth(), &[exchange_id("c", 1, upd)]).await;
    fails(&r, OpNum4::ExchangeId, NfsStat4::Nfs4errPerm);
    // Case 6: a real update keeps the client id.
    let r = h.compound(&root_auth(), &[exchange_id("c", 1, upd)]).await;
    ok(&r);
    assert_eq!(resok!(r, 0, ExchangeId).clientid, s.clientid);
}

#[tokio::test]
async fn exchange_id_of_a_busy_owner_from_another_principal_is_clid_inuse() {
    let h = server();
    let s = h.client("c").await;
    let r = h.compound(&user_auth(), &[exchange_id("c", 1, 0)]).await;
    fails(&r, OpNum4::ExchangeId, NfsStat4::Nfs4errClidInuse);
    let again = exchange(&h, &root_auth(), "c", 1).await;
    assert_eq!(again.clientid, s.clientid, "the record is untouched");
}

#[tokio::test]
async fn exchange_id_must_be_alone_outside_a_session() {
    let h = server();
    let r = h
        .compound(&root_auth(), &[exchange_id("c", 1, 0), putroot()])
        .await;
    fails(&r, OpNum4::ExchangeId, NfsStat4::Nfs4errNotOnlyOp);
    assert_eq!(h.srv.state().client_count(), 0);
}

// ---------------------------------------------------------------------
// CREATE_SESSION (§18.36)
// ---------------------------------------------------------------------

#[tokio::test]
async fn create_session_grants_a_usable_session_within_server_limits() {
    let h = server();
    let x = exchange(&h, &root_auth(), "c", 1).await;
    let mut args = create_session(x.clientid, x.sequenceid);
    args.fore_chan_attrs.maxrequests = 100_000;
    args.fore_chan_attrs.maxoperations = 100_000;
    let r = h
        .compound(&root_auth(), &[NfsArgOp4::CreateSession(args)])
        .await;
    ok(&r);
    let c = resok!(r, 0, CreateSession);
    assert_eq!(c.sequence, x.sequenceid);
    let fore = c.fore_chan_attrs;
    assert!(
        fore.maxrequests >= 1 && fore.maxrequests < 100_000,
        "{fore:?}"
    );
    assert!(fore.maxoperations < 100_000, "{fore:?}");
    assert_eq!(h.srv.state().session_count(), 1);
    let r = h
        .compound(&root_auth(), &[sequence_op(c.sessionid, 1, 0), putroot()])
        .await;
    ok(&r);
}

#[tokio::test]
async fn create_session_retransmission_gets_the_same_session() {
    let h = server();
    let x = exchange(&h, &root_auth(), "c", 1).await;
    let first = session_of(&h, &root_auth(), &x).await;
    let again = session_of(&h, &root_auth(), &x).await;
    assert_eq!(again, first);
    assert_eq!(h.srv.state().session_count(), 1);
}

#[tokio::test]
async fn create_session_errors() {
    let h = server();
    let x = exchange(&h, &root_auth(), "c", 1).await;
    let cs = |a: CreateSession4Args| NfsArgOp4::CreateSession(a);
    // A sequence id ahead of the next one (§18.36.4).
    let r = h
        .compound(
            &root_auth(),
            &[cs(create_session(x.clientid, x.sequenceid + 1))],
        )
        .await;
    fails(&r, OpNum4::CreateSession, NfsStat4::Nfs4errSeqMisordered);
    // An unknown client.
    let r = h
        .compound(&root_auth(), &[cs(create_session(x.clientid ^ 0xff, 1))])
        .await;
    fails(&r, OpNum4::CreateSession, NfsStat4::Nfs4errStaleClientid);
    // Channels smaller than any request.
    let mut small = create_session(x.clientid, x.sequenceid);
    small.fore_chan_attrs.maxrequestsize = 16;
    let r = h.compound(&root_auth(), &[cs(small)]).await;
    fails(&r, OpNum4::CreateSession, NfsStat4::Nfs4errToosmall);
    // A flag §18.36.1 does not define.
    let mut flags = create_session(x.clientid, x.sequenceid);
    flags.flags = 0x100;
    let r = h.compound(&root_auth(), &[cs(flags)]).await;
    fails(&r, OpNum4::CreateSession, NfsStat4::Nfs4errInval);
    // Another principal confirming the record (§18.35.4 case 4).
    let r = h
        .compound(
            &user_auth(),
            &[cs(create_session(x.clientid, x.sequenceid))],
        )
        .await;
    fails(&r, OpNum4::CreateSession, NfsStat4::Nfs4errClidInuse);
    // Not alone outside a session.
    let r = h
        .compound(
            &root_auth(),
            &[cs(create_session(x.clientid, x.sequenceid)), putroot()],
        )
        .await;
    fails(&r, OpNum4::CreateSession, NfsStat4::Nfs4errNotOnlyOp);
    assert_eq!(h.srv.state().session_count(), 0, "no session made");
}

#[tokio::test]
async fn create_session_for_an_unconfirmed_client_past_its_lease_is_stale() {
    let h = server();
    let x = exchange(&h, &root_auth(), "c", 1).await;
    h.advance(LEASE + Duration::from_secs(1));
    let cs = NfsArgOp4::CreateSession(create_session(x.clientid, x.sequenceid));
    let r = h.compound(&root_auth(), &[cs]).await;
    fails(&r, OpNum4::CreateSession, NfsStat4::Nfs4errStaleClientid);
}

#[tokio::test]
async fn create_session_with_back_channel_probes_it() {
    let h = server();
    let opts = ClientOpts {
        flags: CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
        ..Default::default()
    };
    // client_with sees the CB_NULL and answers it.
    let s = h.client_with("c", opts).await;
    let r = h.seq(&s, &[]).await;
    ok(&r);
    let flags = resok!(r, 0, Sequence).status_flags;
    assert_eq!(flags & SEQ4_STATUS_CB_PATH_DOWN_SESSION, 0, "{flags:#x}");
}

// ---------------------------------------------------------------------
// SEQUENCE (§18.46) and the slot table (§2.10.6)
// ---------------------------------------------------------------------

#[tokio::test]
async fn sequence_reports_the_slot_and_renews_the_lease() {
    let h = server();
    let s = h.client("c").await;
    let r = h.seq_slot(&s, 3, false, &[]).await;
    ok(&r);
    let q = resok!(r, 0, Sequence);
    assert_eq!((q.sessionid, q.sequenceid, q.slotid), (s.sessionid, 1, 3));
    assert_eq!(q.highest_slotid, s.fore.maxrequests - 1);
    assert_eq!(q.target_highest_slotid, q.highest_slotid);
    // Renewed every half lease, the client outlives three leases...
    for _ in 0..6 {
        h.advance(LEASE / 2);
        ok(&h.seq(&s, &[]).await);
    }
    assert_eq!(h.srv.state().reap(), 0);
    // ...is kept as a courtesy client once silent past its lease...
    h.advance(LEASE * 2 + Duration::from_secs(1));
    assert_eq!(h.srv.state().reap(), 0);
    // ...and forgotten after the courtesy period.
    h.advance(state::DEFAULT_COURTESY);
    assert_eq!(h.srv.state().reap(), 1);
    let r = h.seq(&s, &[]).await;
    fails(&r, OpNum4::Sequence, NfsStat4::Nfs4errBadsession);
}

#[tokio::test]
async fn a_failed_sequence_does_not_renew_the_lease() {
    let h = server();
    let a = h.client("a").await;
    let b_ = h.client("b").await;
    let fh = new_file(&h, &a, "f", 0o666, b"").await;
    let deny = OPEN4_SHARE_DENY_BOTH;
    open_existing(&h, &a, &fh, "o", OPEN4_SHARE_ACCESS_READ, deny).await;
    h.advance(LEASE / 2 + Duration::from_secs(1));
    // §18.46.3: a SEQUENCE that fails renews nothing.
    let slots = a.fore.maxrequests;
    let seqid = a.seqids()[0];
    let too_many = vec![putroot(); a.fore.maxoperations as usize];
    let failing = [
        vec![sequence_op(a.sessionid, 1, slots)],
        vec![sequence_op(a.sessionid, seqid + 2, 0)],
        a.with_sequence(0, seqid + 1, false, &too_many),
    ];
    for ops in failing {
        let r = h.compound(&root_auth(), &ops).await;
        assert_ne!(r.status, NfsStat4::Nfs4Ok, "{r:?}");
    }
    h.advance(LEASE / 2 + Duration::from_secs(1));
    // a last renewed more than a lease ago: its reservation yields.
    open_existing(&h, &b_, &fh, "o", OPEN4_SHARE_ACCESS_READ, 0).await;
}

#[tokio::test]
async fn sequence_errors_of_session_and_slot() {
    let h = server();
    let s = h.client("c").await;
    let r = h
        .compound(&root_auth(), &[sequence_op([9; 16], 1, 0), putroot()])
        .await;
    fails(&r, OpNum4::Sequence, NfsStat4::Nfs4errBadsession);
    let slots = s.fore.maxrequests;
    let r = h
        .compound(&root_auth(), &[sequence_op(s.sessionid, 1, slots)])
        .await;
    fails(&r, OpNum4::Sequence, NfsStat4::Nfs4errBadslot);
    // Slot 1 has carried nothing: sequence id 2 skips one.
    let r = h
        .compound(&root_auth(), &[sequence_op(s.sessionid, 2, 1)])
        .await;
    fails(&r, OpNum4::Sequence, NfsStat4::Nfs4errSeqMisordered);
    // Slot 0 carried RECLAIM_COMPLETE as 1: 0 is behind it.
    let r = h
        .compound(&root_auth(), &[sequence_op(s.sessionid, 0, 0)])
        .await;
    fails(&r, OpNum4::Sequence, NfsStat4::Nfs4errSeqMisordered);
}

#[tokio::test]
async fn sequence_replay_returns_the_cached_reply_without_running_again() {
    let h = server();
    let s = h.client("c").await;
    let root = root_fh(&h, &s).await;
    let seqid = s.next_seqid(0);
    let ops = s.with_sequence(0, seqid, false, &[putfh(&root), mkdir("d"), getfh()]);
    let args = encode_compound(1, &ops);
    let first = bytes_of(h.call(&s.auth, args.clone()).await);
    let retry = bytes_of(h.call(&s.auth, args).await);
    assert_eq!(retry, first, "the reply as it was");
    // Run twice, CREATE would have failed with NFS4ERR_EXIST.
    let r = h.seq(&s, &[putfh(&root), readdir(0, &[])]).await;
    ok(&r);
    let names: Vec<Bytes> = resok!(r, 2, ReadDir)
        .reply
        .entries
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, vec![b("d")]);
}

#[tokio::test]
async fn sequence_false_retry_and_uncached_retry() {
    let h = server();
    let s = h.client("c").await;
    let fh = new_file(&h, &s, "f", 0o644, b"data").await;
    // A READ's reply is kept only when the client asks (§2.10.6.1.3).
    let seqid = s.next_seqid(0);
    let ops = s.with_sequence(
        0,
        seqid,
        false,
        &[putfh(&fh), read(StateId4::ANONYMOUS, 0, 4)],
    );
    ok(&h.compound(&s.auth, &ops).await);
    let r = h.compound(&s.auth, &ops).await;
    fails(&r, OpNum4::Sequence, NfsStat4::Nfs4errRetryUncachedRep);
    // The same slot and sequence id with other operations.
    let other = s.with_sequence(0, seqid, false, &[putfh(&fh), getfh()]);
    let r = h.compound(&s.auth, &other).await;
    fails(&r, OpNum4::Sequence, NfsStat4::Nfs4errSeqFalseRetry);
    // Asked to, the server keeps a READ's reply.
    let seqid = s.next_seqid(0);
    let ops = s.with_sequence(
        0,
        seqid,
        true,
        &[putfh(&fh), read(StateId4::ANONYMOUS, 0, 4)],
    );
    ok(&h.compound(&s.auth, &ops).await);
    let r = h.compound(&s.auth, &ops).await;
    ok(&r);
    assert_eq!(&resok!(r, 2, Read).data[..], b"data");
}

#[tokio::test]
async fn sequence_slots_are_independent() {
    let h = server();
    let s = h.client("c").await;
    ok(&h.seq_slot(&s, 1, false, &[putroot()]).await);
    ok(&h.seq_slot(&s, 2, false, &[putroot()]).await);
    ok(&h.seq_slot(&s, 1, false, &[putroot()]).await);
    ok(&h.seq(&s, &[putroot()]).await);
    assert_eq!(s.seqids()[..3], [2, 2, 1]);
}

#[tokio::test]
async fn sequence_must_come_first_and_once() {
    let h = server();
    let s = h.client("c").await;
    let again = sequence_op(s.sessionid, 7, 1);
    let r = h.seq(&s, &[putroot(), again]).await;
    fails(&r, OpNum4::Sequence, NfsStat4::Nfs4errSequencePos);
    assert_eq!(r.resarray.len(), 3);
}

#[tokio::test]
async fn sequence_too_many_operations() {
    let h = server();
    let s = h.client("c").await;
    let max = s.fore.maxoperations as usize;
    let ops = vec![putroot(); max];
    let r = h.seq(&s, &ops).await;
    fails(&r, OpNum4::Sequence, NfsStat4::Nfs4errTooManyOps);
    assert_eq!(r.resarray.len(), 1);
    // One fewer fits (SEQUENCE counts).
    let r = h.seq(&s, &ops[1..]).await;
    ok(&r);
    // Far more than any session may have (the server decodes no more of
    // them than that): the same single error.
    let many = vec![putroot(); 100_000];
    let r = h.seq(&s, &many).await;
    fails(&r, OpNum4::Sequence, NfsStat4::Nfs4errTooManyOps);
    assert_eq!(r.resarray.len(), 1);
    // Without SEQUENCE first, the first operation says so.
    let r = h.compound(&root_auth(), &many).await;
    assert_eq!(r.status, NfsStat4::Nfs4errOpNotInSession);
    assert_eq!(r.resarray.len(), 1);
}

#[tokio::test]
async fn sequence_request_too_big() {
    let h = server();
    let opts = ClientOpts {
        fore: ChannelAttrs4 {
            maxrequestsize: 512,
            ..ClientOpts::default().fore
        },
        ..Default::default()
    };
    let s = h.client_with("c", opts).await;
    let (fh, sid) = open_new(&h, &s, "f", 0o644, b"").await;
    let r = h.seq(&s, &[putfh(&fh), write(sid, 0, &[7; 600])]).await;
    fails(&r, OpNum4::Sequence, NfsStat4::Nfs4errReqTooBig);
    assert_eq!(content(&h, &s, &fh).await.len(), 0, "not written");
}

// ---------------------------------------------------------------------
// DESTROY_SESSION (§18.37)
// ---------------------------------------------------------------------

#[tokio::test]
async fn destroy_session_alone_ends_the_session() {
    let h = server();
    let s = h.client("c").await;
    let r = h
        .compound(&root_auth(), &[destroy_session(s.sessionid)])
        .await;
    ok(&r);
    assert_eq!(h.srv.state().session_count(), 0);
    let r = h.seq(&s, &[]).await;
    fails(&r, OpNum4::Sequence, NfsStat4::Nfs4errBadsession);
    // Once gone, it is unknown.
    let r = h
        .compound(&root_auth(), &[destroy_session(s.sessionid)])
        .await;
    fails(&r, OpNum4::DestroySession, NfsStat4::Nfs4errBadsession);
}

#[tokio::test]
async fn destroy_session_as_last_operation_of_its_own_session() {
    let h = server();
    let s = h.client("c").await;
    let id = s.sessionid;
    let r = h.seq(&s, &[destroy_session(id)]).await;
    ok(&r);
    let r = h.seq(&s, &[]).await;
    fails(&r, OpNum4::Sequence, NfsStat4::Nfs4errBadsession);
}

#[tokio::test]
async fn destroy_session_must_be_alone_outside_a_session() {
    let h = server();
    let s = h.client("c").await;
    let r = h
        .compound(&root_auth(), &[destroy_session(s.sessionid), putroot()])
        .await;
    fails(&r, OpNum4::DestroySession, NfsStat4::Nfs4errNotOnlyOp);
    ok(&h.seq(&s, &[]).await);
}

// ---------------------------------------------------------------------
// DESTROY_CLIENTID (§18.50)
// ---------------------------------------------------------------------

#[tokio::test]
async fn destroy_clientid_forgets_a_client_without_sessions() {
    let h = server();
    let s = h.client("c").await;
    let r = h
        .compound(&root_auth(), &[destroy_clientid(s.clientid)])
        .await;
    fails(&r, OpNum4::DestroyClientId, NfsStat4::Nfs4errClientidBusy);
    ok(&h
        .compound(&root_auth(), &[destroy_session(s.sessionid)])
        .await);
    ok(&h
        .compound(&root_auth(), &[destroy_clientid(s.clientid)])
        .await);
    assert_eq!(h.srv.state().client_count(), 0);
    let cs = NfsArgOp4::CreateSession(create_session(s.clientid, 2));
    let r = h.compound(&root_auth(), &[cs]).await;
    fails(&r, OpNum4::CreateSession, NfsStat4::Nfs4errStaleClientid);
    let r = h
        .compound(&root_auth(), &[destroy_clientid(s.clientid)])
        .await;
    fails(&r, OpNum4::DestroyClientId, NfsStat4::Nfs4errStaleClientid);
}

#[tokio::test]
async fn destroy_clientid_of_an_unconfirmed_client() {
    let h = server();
    let x = exchange(&h, &root_auth(), "c", 1).await;
    ok(&h
        .compound(&root_auth(), &[destroy_clientid(x.clientid)])
        .await);
    let cs = NfsArgOp4::CreateSession(create_session(x.clientid, x.sequenceid));
    let r = h.compound(&root_auth(), &[cs]).await;
    fails(&r, OpNum4::CreateSession, NfsStat4::Nfs4errStaleClientid);
}

// ---------------------------------------------------------------------
// BIND_CONN_TO_SESSION (§18.34), BACKCHANNEL_CTL (§18.33)
// ---------------------------------------------------------------------

fn bind(id: SessionId4, dir: ChannelDirFromClient4) -> NfsArgOp4 {
    NfsArgOp4::BindConnToSession(BindConnToSession4Args {
        sessid: id,
        dir,
        use_conn_in_rdma_mode: false,
    })
}

#[tokio::test]
async fn bind_conn_to_session_for_both_channels_probes_the_back_channel() {
    let h = server();
    let s = h.client("c").await;
    let r = h
        .compound(
            &root_auth(),
            &[bind(s.sessionid, ChannelDirFromClient4::Cdfc4ForeOrBoth)],
        )
        .await;
    ok(&r);
    let ok_ = resok!(r, 0, BindConnToSession);
    assert_eq!(ok_.sessid, s.sessionid);
    assert_eq!(ok_.dir, ChannelDirFromServer4::Cdfs4Both);
    let probe = h.next_back_call().await;
    assert_eq!((probe.header.prog, probe.header.proc_), (CB_PROGRAM, 0));
    assert!(h.answer(&probe, Vec::new()));
}

#[tokio::test]
async fn bind_conn_to_session_fore_only_sends_nothing() {
    let h = server();
    let s = h.client("c").await;
    let r = h
        .compound(
            &root_auth(),
            &[bind(s.sessionid, ChannelDirFromClient4::Cdfc4Fore)],
        )
        .await;
    ok(&r);
    let dir = resok!(r, 0, BindConnToSession).dir;
    assert_eq!(dir, ChannelDirFromServer4::Cdfs4Fore);
    assert!(h.try_back_call().await.is_none());
}

#[tokio::test]
async fn bind_conn_to_session_errors() {
    let h = server();
    let s = h.client("c").await;
    let r = h
        .compound(
            &root_auth(),
            &[bind([3; 16], ChannelDirFromClient4::Cdfc4Back)],
        )
        .await;
    fails(&r, OpNum4::BindConnToSession, NfsStat4::Nfs4errBadsession);
    let r = h
        .compound(
            &root_auth(),
            &[
                bind(s.sessionid, ChannelDirFromClient4::Cdfc4Back),
                putroot(),
            ],
        )
        .await;
    fails(&r, OpNum4::BindConnToSession, NfsStat4::Nfs4errNotOnlyOp);
    assert!(h.try_back_call().await.is_none(), "nothing bound");
}

#[tokio::test]
async fn backchannel_ctl_changes_program_and_credential_of_callbacks() {
    let h = server();
    let s = h.client("c").await;
    let ctl = NfsArgOp4::BackchannelCtl(BackchannelCtl4Args {
        cb_program: 0x4000_0077,
        sec_parms: vec![CallbackSecParms4::AuthSys(AuthSysParms {
            stamp: 1,
            machinename: b("srv"),
            uid: 4,
            gid: 5,
            gids: vec![],
        })],
    });
    ok(&h.seq(&s, &[ctl]).await);
    let r = h
        .compound(
            &root_auth(),
            &[bind(s.sessionid, ChannelDirFromClient4::Cdfc4Back)],
        )
        .await;
    ok(&r);
    let probe = h.next_back_call().await;
    assert_eq!(probe.header.prog, 0x4000_0077);
    assert_eq!(probe.header.cred.flavor, AUTH_SYS);
    h.answer(&probe, Vec::new());
}

#[tokio::test]
async fn backchannel_ctl_needs_a_session() {
    let h = server();
    let ctl = NfsArgOp4::BackchannelCtl(BackchannelCtl4Args {
        cb_program: 1,
        sec_parms: vec![],
    });
    let r = h.compound(&root_auth(), &[ctl]).await;
    fails(&r, OpNum4::BackchannelCtl, NfsStat4::Nfs4errOpNotInSession);
}

// ---------------------------------------------------------------------
// RECLAIM_COMPLETE (§18.51)
// ---------------------------------------------------------------------

#[tokio::test]
async fn reclaim_complete_ends_the_clients_grace() {
    let h = server();
    let opts = ClientOpts {
        reclaim_complete: false,
        ..Default::default()
    };
    let s = h.client_with("c", opts).await;
    let r = h.seq(&s, &[putroot(), open_create(&s, "f", 0o644)]).await;
    fails(&r, OpNum4::Open, NfsStat4::Nfs4errGrace);
    let rc = NfsArgOp4::ReclaimComplete(ReclaimComplete4Args { one_fs: false });
    ok(&h.seq(&s, std::slice::from_ref(&rc)).await);
    let r = h.seq(&s, &[putroot(), open_create(&s, "f", 0o644)]).await;
    ok(&r);
    let r = h.seq(&s, &[rc]).await;
    fails(
        &r,
        OpNum4::ReclaimComplete,
        NfsStat4::Nfs4errCompleteAlready,
    );
}

#[tokio::test]
async fn reclaim_complete_errors() {
    let h = server();
    let s = h.client("c").await;
    // For one file system: of the current filehandle's.
    let one = NfsArgOp4::ReclaimComplete(ReclaimComplete4Args { one_fs: true });
    let r = h.seq(&s, std::slice::from_ref(&one)).await;
    fails(&r, OpNum4::ReclaimComplete, NfsStat4::Nfs4errNofilehandle);
    ok(&h.seq(&s, &[putroot(), one]).await);
    let all = NfsArgOp4::ReclaimComplete(ReclaimComplete4Args { one_fs: false });
    let r = h.compound(&root_auth(), &[all]).await;
    fails(&r, OpNum4::ReclaimComplete, NfsStat4::Nfs4errOpNotInSession);
}

// ---------------------------------------------------------------------
// TEST_STATEID (§18.48), FREE_STATEID (§18.38)
// ---------------------------------------------------------------------

fn test_stateid(sids: &[StateId4]) -> NfsArgOp4 {
    NfsArgOp4::TestStateId(TestStateId4Args {
        stateids: sids.to_vec(),
    })
}

fn free_stateid(sid: StateId4) -> NfsArgOp4 {
    NfsArgOp4::FreeStateId(FreeStateId4Args { stateid: sid })
}

#[tokio::test]
async fn test_stateid_judges_each_stateid() {
    let h = server();
    let s = h.client("a").await;
    let other = h.client("b").await;
    let (fh, sid1) = open_new(&h, &s, "f", 0o644, b"").await;
    // Opened again by the same owner: seqid 2, and 1 is old.
    let sid2 = open_existing(&h, &s, &fh, "o", OPEN4_SHARE_ACCESS_READ, 0).await;
    assert_eq!((sid2.other, sid2.seqid), (sid1.other, 2));
    let (_, theirs) = open_new(&h, &other, "g", 0o644, b"").await;
    let sids = [
        sid2,
        StateId4 { seqid: 0, ..sid2 },
        sid1,
        seq_moved(sid2, 1),
        unknown(sid2),
        stale(sid2),
        StateId4::ANONYMOUS,
        theirs,
    ];
    let r = h.seq(&s, &[test_stateid(&sids)]).await;
    ok(&r);
    use NfsStat4::*;
    assert_eq!(
        resok!(r, 1, TestStateId).status_codes,
        vec![
            Nfs4Ok,
            Nfs4Ok,
            Nfs4errOldStateid,
            Nfs4errBadStateid,
            Nfs4errBadStateid,
            Nfs4errStaleStateid,
            Nfs4errBadStateid,
            Nfs4errBadStateid,
        ]
    );
    let r = h.seq(&s, &[test_stateid(&[])]).await;
    ok(&r);
    assert!(resok!(r, 1, TestStateId).status_codes.is_empty());
}

#[tokio::test]
async fn free_stateid_of_a_lock_stateid_without_locks() {
    let h = server();
    let s = h.client("c").await;
    let (fh, open_sid) = open_new(&h, &s, "f", 0o644, b"").await;
    let r = h
        .seq(
            &s,
            &[
                putfh(&fh),
                lock_new(&s, NfsLockType4::WriteLt, 0, 10, open_sid, "l"),
            ],
        )
        .await;
    let lsid = lock_sid_at(&r, 2);
    // Still holding a lock.
    let r = h.seq(&s, &[free_stateid(lsid)]).await;
    fails(&r, OpNum4::FreeStateId, NfsStat4::Nfs4errLocksHeld);
    let r = h.seq(&s, &[putfh(&fh), locku(lsid, 0, 10)]).await;
    ok(&r);
    let lsid = resok!(r, 2, LockU);
    // Out of date: frees nothing.
    let r = h.seq(&s, &[free_stateid(seq_moved(lsid, -1))]).await;
    fails(&r, OpNum4::FreeStateId, NfsStat4::Nfs4errOldStateid);
    ok(&h.seq(&s, &[free_stateid(lsid)]).await);
    let r = h.seq(&s, &[test_stateid(&[lsid, open_sid])]).await;
    assert_eq!(
        resok!(r, 1, TestStateId).status_codes,
        vec![NfsStat4::Nfs4errBadStateid, NfsStat4::Nfs4Ok]
    );
    let r = h.seq(&s, &[putfh(&fh), locku(lsid, 0, 10)]).await;
    fails(&r, OpNum4::LockU, NfsStat4::Nfs4errBadStateid);
}

#[tokio::test]
async fn free_stateid_errors() {
    let h = server();
    let s = h.client("a").await;
    let other = h.client("b").await;
    let (_, open_sid) = open_new(&h, &s, "f", 0o644, b"").await;
    // An open stateid is freed by CLOSE, not FREE_STATEID.
    let r = h.seq(&s, &[free_stateid(open_sid)]).await;
    fails(&r, OpNum4::FreeStateId, NfsStat4::Nfs4errLocksHeld);
    let r = h.seq(&s, &[free_stateid(unknown(open_sid))]).await;
    fails(&r, OpNum4::FreeStateId, NfsStat4::Nfs4errBadStateid);
    let r = h.seq(&s, &[free_stateid(stale(open_sid))]).await;
    fails(&r, OpNum4::FreeStateId, NfsStat4::Nfs4errStaleStateid);
    let r = h.seq(&other, &[free_stateid(open_sid)]).await;
    fails(&r, OpNum4::FreeStateId, NfsStat4::Nfs4errBadStateid);
    let r = h.seq(&s, &[test_stateid(&[open_sid])]).await;
    assert_eq!(
        resok!(r, 1, TestStateId).status_codes,
        vec![NfsStat4::Nfs4Ok],
        "still open"
    );
}
