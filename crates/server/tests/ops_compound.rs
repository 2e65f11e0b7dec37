//! COMPOUND-level rules in process (RFC 8881 §16.2, §2.10.6.4, §15.1):
//! minor versions, operations outside a session, OP_ILLEGAL, undecodable
//! arguments, evaluation stopping at the first error, reply size limits
//! checked before a modifying operation runs, and NFS4ERR_NOTSUPP for
//! every operation the server does not implement.

mod common;

use common::*;
use rpc::Reply;
use server::nfs4::inproc::encode_compound;
use server::nfs4::ops::OPS;
use xdr::{Encoder, Pack};

fn decode(r: Reply) -> Compound4Res {
    match r {
        Reply::Success(chunks) => xdr::from_bytes(chunks.concat().into())
            .unwrap_or_else(|e| panic!("undecodable reply: {e}")),
        _ => panic!("COMPOUND not answered"),
    }
}

/// A session whose replies may be at most `max` bytes, `cached` of them
/// kept in the reply cache.
async fn small_replies(h: &InProcess, max: u32, cached: u32) -> Session {
    let opts = ClientOpts {
        fore: ChannelAttrs4 {
            maxresponsesize: max,
            maxresponsesize_cached: cached,
            ..ClientOpts::default().fore
        },
        ..Default::default()
    };
    let s = h.client_with("small", opts).await;
    assert_eq!(s.fore.maxresponsesize, max);
    s
}

#[tokio::test]
async fn an_empty_compound_succeeds() {
    let h = server();
    let r = h.compound(&root_auth(), &[]).await;
    assert_eq!((r.status, r.resarray.len()), (NfsStat4::Nfs4Ok, 0));
}

#[tokio::test]
async fn the_tag_comes_back() {
    let h = server();
    let mut e = Encoder::new();
    Compound4ArgsHeader {
        tag: b("my tag"),
        minorversion: 1,
    }
    .pack(&mut e);
    e.u32(0);
    let r = decode(h.call(&root_auth(), e.finish().concat().into()).await);
    assert_eq!(r.tag, b("my tag"));
}

#[tokio::test]
async fn other_minor_versions_are_a_mismatch() {
    let h = server();
    let s = h.client("c").await;
    for minor in [3, 100] {
        let ops = s.with_sequence(0, 99, false, &[putroot()]);
        let r = h.compound_v(&root_auth(), minor, &ops).await;
        // §16.2.3: no operation is evaluated.
        assert_eq!(r.status, NfsStat4::Nfs4errMinorVersMismatch, "{minor}");
        assert!(r.resarray.is_empty());
    }
    // NFSv4.0 is served, but SEQUENCE is not one of its operations (RFC
    // 7530 §15.2).
    let ops = s.with_sequence(0, 99, false, &[putroot()]);
    let r = h.compound_v(&root_auth(), 0, &ops).await;
    assert_eq!(r.status, NfsStat4::Nfs4errOpIllegal, "{r:?}");
    assert_eq!(r.resarray.len(), 1);
    ok(&h.seq(&s, &[putroot()]).await);
}

#[tokio::test]
async fn operations_outside_a_session() {
    let h = server();
    let r = h.compound(&root_auth(), &[putroot(), getfh()]).await;
    fails(&r, OpNum4::PutRootFh, NfsStat4::Nfs4errOpNotInSession);
    assert_eq!(r.resarray.len(), 1);
    // Those allowed without SEQUENCE must be alone (§18.46.3 and each
    // operation's description).
    let destroy = NfsArgOp4::DestroySession(DestroySession4Args { sessionid: [1; 16] });
    let r = h.compound(&root_auth(), &[destroy, putroot()]).await;
    fails(&r, OpNum4::DestroySession, NfsStat4::Nfs4errNotOnlyOp);
}

#[tokio::test]
async fn sequence_anywhere_but_first_is_sequence_pos() {
    let h = server();
    let s = h.client("c").await;
    let ops = [putroot(), s.with_sequence(0, 2, false, &[]).remove(0)];
    let r = h.compound(&root_auth(), &ops).await;
    // Not first: the compound has no session for PUTROOTFH already.
    fails(&r, OpNum4::PutRootFh, NfsStat4::Nfs4errOpNotInSession);
    let r = h
        .seq(
            &s,
            &[putroot(), s.with_sequence(0, 9, false, &[]).remove(0)],
        )
        .await;
    fails(&r, OpNum4::Sequence, NfsStat4::Nfs4errSequencePos);
}

#[tokio::test]
async fn illegal_and_unknown_operations_are_op_illegal() {
    let h = server();
    let s = h.client("c").await;
    for op in [
        NfsArgOp4::Illegal,
        NfsArgOp4::Unknown(9999),
        NfsArgOp4::Unknown(2),
    ] {
        let r = h.seq(&s, &[putroot(), op.clone(), mkdir("never")]).await;
        assert_eq!(r.status, NfsStat4::Nfs4errOpIllegal, "{r:?}");
        let last = r.resarray.last().unwrap_or_else(|| panic!("{r:?}"));
        assert_eq!(last.opnum(), OpNum4::Illegal as u32);
        assert_eq!(r.resarray.len(), 3);
        // Alone, without a session, too.
        let r = h.compound(&root_auth(), &[op]).await;
        assert_eq!(r.status, NfsStat4::Nfs4errOpIllegal, "{r:?}");
    }
    let root = root_fh(&h, &s).await;
    assert_eq!(
        lookup_status(&h, &s, &root, "never").await,
        NfsStat4::Nfs4errNoent
    );
}

#[tokio::test]
async fn undecodable_arguments_are_badxdr() {
    let h = server();
    let s = h.client("c").await;
    let seqid = s.next_seqid(0);
    let ops = s.with_sequence(0, seqid, false, &[putroot()]);
    let mut args = encode_compound(1, &ops).to_vec();
    // One operation more than encoded: PUTFH whose handle is cut short.
    let count_at = 8;
    args[count_at..count_at + 4].copy_from_slice(&3u32.to_be_bytes());
    args.extend_from_slice(&(OpNum4::PutFh as u32).to_be_bytes());
    args.extend_from_slice(&64u32.to_be_bytes());
    args.extend_from_slice(&[0; 8]);
    let r = decode(h.call(&root_auth(), args.into()).await);
    fails(&r, OpNum4::PutFh, NfsStat4::Nfs4errBadxdr);
    assert_eq!(r.resarray.len(), 3);
}

#[tokio::test]
async fn evaluation_stops_at_the_first_error() {
    let h = server();
    let s = h.client("c").await;
    let r = h
        .seq(&s, &[putroot(), lookup("missing"), putroot(), mkdir("d")])
        .await;
    fails(&r, OpNum4::Lookup, NfsStat4::Nfs4errNoent);
    assert_eq!(r.resarray.len(), 3);
    let root = root_fh(&h, &s).await;
    assert_eq!(
        lookup_status(&h, &s, &root, "d").await,
        NfsStat4::Nfs4errNoent
    );
}

// ---------------------------------------------------------------------
// Reply size limits (§2.10.6.4, §18.46.3)
// ---------------------------------------------------------------------

/// PUTFH, a READ of `n` bytes of `fh`, then CREATE of directory "d".
fn read_then_mkdir(fh: &NfsFh4, n: u32) -> Vec<NfsArgOp4> {
    vec![
        putfh(fh),
        read(StateId4::ANONYMOUS, 0, n),
        putroot(),
        mkdir("d"),
    ]
}

#[tokio::test]
async fn a_modifying_operation_whose_reply_cannot_fit_is_not_run() {
    let h = server();
    let s = h.client("c").await;
    let fh = new_file(&h, &s, "f", 0o644, &[b'x'; 1000]).await;
    let root = root_fh(&h, &s).await;
    let small = small_replies(&h, 512, 512).await;
    // Reply so far: RPC and COMPOUND headers (36), SEQUENCE (44), PUTFH
    // (8), READ (16 + n), PUTROOTFH (8); CREATE's result may take 44.
    let r = h.seq(&small, &read_then_mkdir(&fh, 372)).await;
    fails(&r, OpNum4::Create, NfsStat4::Nfs4errRepTooBig);
    assert_eq!(resok!(r, 2, Read).data.len(), 372);
    assert_eq!(
        lookup_status(&h, &s, &root, "d").await,
        NfsStat4::Nfs4errNoent
    );
    // With a shorter READ before it, it fits and runs.
    ok(&h.seq(&small, &read_then_mkdir(&fh, 300)).await);
    ok(&h.seq(&s, &[putfh(&root), lookup("d")]).await);
}

#[tokio::test]
async fn a_result_larger_than_the_reply_limit_is_rep_too_big() {
    let h = server();
    let s = h.client("c").await;
    let fh = new_file(&h, &s, "f", 0o644, &[b'x'; 1000]).await;
    let small = small_replies(&h, 512, 512).await;
    let r = h
        .seq(&small, &[putfh(&fh), read(StateId4::ANONYMOUS, 0, 1000)])
        .await;
    fails(&r, OpNum4::Read, NfsStat4::Nfs4errRepTooBig);
    // The session goes on.
    ok(&h
        .seq(&small, &[putfh(&fh), read(StateId4::ANONYMOUS, 0, 100)])
        .await);
}

#[tokio::test]
async fn a_modifying_operation_whose_reply_cannot_be_cached_is_not_run() {
    let h = server();
    let s = h.client("c").await;
    let root = root_fh(&h, &s).await;
    let small = small_replies(&h, 4096, 100).await;
    // 36 + 44 + 8 so far, and CREATE's 44 exceed the 100 the client
    // asked to have cached.
    let r = h.seq_slot(&small, 0, true, &[putroot(), mkdir("d")]).await;
    fails(&r, OpNum4::Create, NfsStat4::Nfs4errRepTooBigToCache);
    assert_eq!(
        lookup_status(&h, &s, &root, "d").await,
        NfsStat4::Nfs4errNoent
    );
    // Not asked to cache it, the server runs it.
    ok(&h.seq_slot(&small, 0, false, &[putroot(), mkdir("d")]).await);
    ok(&h.seq(&s, &[putfh(&root), lookup("d")]).await);
}

// ---------------------------------------------------------------------
// NFS4ERR_NOTSUPP (§15.1.1.5)
// ---------------------------------------------------------------------

/// One instance of each operation an NFSv4.1 or 4.2 COMPOUND refuses with
/// NFS4ERR_NOTSUPP: those the server does not implement, and NFSv4.0's own
/// (RFC 8881 §18: "MUST NOT implement" in NFSv4.1).
fn unsupported(sid: StateId4, clientid: ClientId4) -> Vec<NfsArgOp4> {
    let owner = StateOwner4 {
        clientid,
        owner: b("o"),
    };
    vec![
        NfsArgOp4::OpenAttr(OpenAttr4Args { createdir: false }),
        NfsArgOp4::OpenConfirm(OpenConfirm4Args {
            open_stateid: sid,
            seqid: 1,
        }),
        NfsArgOp4::Renew(Renew4Args { clientid }),
        NfsArgOp4::SetClientId(SetClientId4Args {
            client: NfsClientId4 {
                verifier: [1; 8],
                id: b("c"),
            },
            callback: CbClient4 {
                cb_program: 1,
                cb_location: NetAddr4 {
                    netid: "tcp".into(),
                    addr: "127.0.0.1.8.1".into(),
                },
            },
            callback_ident: 1,
        }),
        NfsArgOp4::SetClientIdConfirm(SetClientIdConfirm4Args {
            clientid,
            setclientid_confirm: [1; 8],
        }),
        NfsArgOp4::ReleaseLockOwner(ReleaseLockOwner4Args {
            lock_owner: owner.clone(),
        }),
        NfsArgOp4::SetSsv(SetSsv4Args {
            ssv: b("ssv"),
            digest: b("digest"),
        }),
        NfsArgOp4::WantDelegation(WantDelegation4Args {
            want: OPEN4_SHARE_ACCESS_WANT_READ_DELEG,
            claim: DelegClaim4::Fh,
        }),
        NfsArgOp4::CopyNotify(CopyNotify4Args {
            src_stateid: sid,
            destination_server: NetLoc4::Name(b("elsewhere")),
        }),
        NfsArgOp4::IoAdvise(IoAdvise4Args {
            stateid: sid,
            offset: 0,
            count: 1,
            hints: Bitmap4::default(),
        }),
        NfsArgOp4::ReadPlus(ReadPlus4Args {
            stateid: sid,
            offset: 0,
            count: 10,
        }),
        NfsArgOp4::WriteSame(WriteSame4Args {
            stateid: sid,
            stable: StableHow4::FileSync4,
            adb: AppDataBlock4 {
                offset: 0,
                block_size: 4,
                block_count: 1,
                reloff_blocknum: 0,
                block_num: 0,
                reloff_pattern: 0,
                pattern: b("abcd"),
            },
        }),
    ]
}

/// The pNFS operations (RFC 8881 §18.40-§18.44, RFC 7862 §15.6-§15.7),
/// each with what it answers on an export without data servers (or, for
/// one naming a layout, a stateid that is not a layout's).
fn pnfs_ops(sid: StateId4) -> Vec<(NfsArgOp4, NfsStat4)> {
    let update = LayoutUpdate4 {
        layout_type: LAYOUT4_FLEX_FILES,
        body: Bytes::new(),
    };
    let expect = [
        NfsStat4::Nfs4errNoent,
        NfsStat4::Nfs4errLayoutunavailable,
        NfsStat4::Nfs4errBadlayout,
        NfsStat4::Nfs4errLayoutunavailable,
        NfsStat4::Nfs4Ok,
        NfsStat4::Nfs4errBadStateid,
        // An empty body is no ff_layoutupdate4.
        NfsStat4::Nfs4errBadxdr,
    ];
    let ops = vec![
        NfsArgOp4::GetDeviceInfo(GetDeviceInfo4Args {
            device_id: [1; 16],
            layout_type: LAYOUT4_FLEX_FILES,
            maxcount: 1024,
            notify_types: Bitmap4::default(),
        }),
        NfsArgOp4::GetDeviceList(GetDeviceList4Args {
            layout_type: LAYOUT4_FLEX_FILES,
            maxdevices: 1,
            cookie: 0,
            cookieverf: [0; 8],
        }),
        NfsArgOp4::LayoutCommit(LayoutCommit4Args {
            offset: 0,
            length: 1,
            reclaim: false,
            stateid: sid,
            last_write_offset: None,
            time_modify: None,
            layoutupdate: update.clone(),
        }),
        NfsArgOp4::LayoutGet(LayoutGet4Args {
            signal_layout_avail: false,
            layout_type: LAYOUT4_FLEX_FILES,
            iomode: LayoutIoMode4::Read,
            offset: 0,
            length: 1,
            minlength: 1,
            stateid: sid,
            maxcount: 1024,
        }),
        NfsArgOp4::LayoutReturn(LayoutReturn4Args {
            reclaim: false,
            layout_type: LAYOUT4_FLEX_FILES,
            iomode: LayoutIoMode4::Any,
            layoutreturn: LayoutReturn4::All,
        }),
        NfsArgOp4::LayoutError(LayoutError4Args {
            offset: 0,
            length: 1,
            stateid: sid,
            errors: vec![],
        }),
        NfsArgOp4::LayoutStats(LayoutStats4Args {
            offset: 0,
            length: 1,
            stateid: sid,
            read: IoInfo4::default(),
            write: IoInfo4::default(),
            deviceid: [1; 16],
            layoutupdate: update,
        }),
    ];
    ops.into_iter().zip(expect).collect()
}

/// On an export without data servers, each pNFS operation gives the
/// protocol's answer and changes nothing (RFC 8881 §18.43.3: LAYOUTGET is
/// NFS4ERR_LAYOUTUNAVAILABLE; a device id that is not the server's is
/// NFS4ERR_NOENT; an open stateid is no layout stateid).
#[tokio::test]
async fn pnfs_operations_without_data_servers() {
    let h = server();
    let s = client42(&h, "c").await;
    let (fh, sid) = open_new(&h, &s, "f", 0o644, b"abcd").await;
    for (op, want) in pnfs_ops(sid) {
        let num = op.opnum();
        let r = h.seq(&s, &[putfh(&fh), op]).await;
        assert_eq!(r.status, want, "{num}: {r:?}");
    }
    assert_eq!(&content(&h, &s, &fh).await[..], b"abcd", "nothing written");
}

#[tokio::test]
async fn every_operation_without_a_handler_is_notsupp() {
    let h = server();
    let s = client42(&h, "c").await;
    let (fh, sid) = open_new(&h, &s, "f", 0o644, b"abcd").await;
    let ops = unsupported(sid, s.clientid);
    // The list is the operation table's unimplemented entries, no more
    // and no less.
    let mut listed: Vec<u32> = ops.iter().map(NfsArgOp4::opnum).collect();
    let mut table: Vec<u32> = OPS
        .iter()
        .filter(|d| d.handler.is_none() || d.v40())
        .map(|d| d.num as u32)
        .collect();
    listed.sort_unstable();
    table.sort_unstable();
    assert_eq!(listed, table);
    for op in ops {
        let num = op.opnum();
        // With a current filehandle, in an NFSv4.2 compound: nothing but
        // support stands in the way.
        let r = h.seq(&s, &[putfh(&fh), op]).await;
        assert_eq!(r.status, NfsStat4::Nfs4errNotsupp, "{num}: {r:?}");
        let last = r.resarray.last().unwrap_or_else(|| panic!("{r:?}"));
        assert_eq!((last.opnum(), r.resarray.len()), (num, 3), "{r:?}");
    }
    assert_eq!(&content(&h, &s, &fh).await[..], b"abcd", "nothing written");
}
