//! Seed inputs for each target: valid messages for the decoders and
//! programs for `compound_run` that reach opens, locks, directories,
//! lease expiry, callbacks and session handling. `tests/corpus.rs`
//! checks that `fuzz/corpus/<target>/seed-*` are exactly these, and
//! writes them when `FERRITE_WRITE_SEEDS` is set.

use bytes::Bytes;
use proto::nfs4::*;
use xdr::{Encoder, Pack};

use crate::run::{op, step};

/// The seeds of `target` by name.
pub fn seeds(target: &str) -> Vec<(&'static str, Vec<u8>)> {
    match target {
        "rpc_record" => rpc_record(),
        "compound_decode" => compound_decode(),
        "compound_run" => compound_run(),
        "pnfs_run" => pnfs_run(),
        "nfs3_run" => nfs3_run(),
        "gss_call" => gss_call(),
        "tls_probe" => tls_probe(),
        _ => Vec::new(),
    }
}

// ---------------------------------------------------------------------------
// rpc_record
// ---------------------------------------------------------------------------

fn frag(body: &[u8], last: bool) -> Vec<u8> {
    let mut v = (body.len() as u32 | if last { 0x8000_0000 } else { 0 })
        .to_be_bytes()
        .to_vec();
    v.extend_from_slice(body);
    v
}

fn call(xid: u32, prog: u32, proc_: u32, cred: rpc::OpaqueAuth, args: &[u8]) -> Vec<u8> {
    let mut e = Encoder::new();
    e.u32(xid);
    e.u32(rpc::CALL);
    rpc::CallHeader {
        rpcvers: rpc::RPC_VERSION,
        prog,
        vers: 4,
        proc_,
        cred,
        verf: rpc::OpaqueAuth::none(),
    }
    .pack(&mut e);
    e.raw(args);
    e.to_bytes().to_vec()
}

fn rpc_record() -> Vec<(&'static str, Vec<u8>)> {
    let sys = rpc::Auth::sys(1000, 100, vec![100, 4, 24], "client.example").to_opaque();
    let null = call(1, NFS_PROGRAM, 0, rpc::OpaqueAuth::none(), &[]);
    let compound = call(2, NFS_PROGRAM, 1, sys.clone(), &sample_compound());
    let mut two = frag(&compound[..20], false);
    two.extend(frag(&compound[20..], true));
    let mut reply = Encoder::new();
    reply.u32(3);
    reply.u32(rpc::REPLY);
    reply.u32(rpc::MSG_ACCEPTED);
    rpc::OpaqueAuth::none().pack(&mut reply);
    reply.u32(0);
    let reply = reply.to_bytes().to_vec();
    let mut denied = Encoder::new();
    denied.u32(4);
    denied.u32(rpc::REPLY);
    denied.u32(rpc::MSG_DENIED);
    denied.u32(rpc::AUTH_ERROR);
    denied.u32(1);
    let denied = denied.to_bytes().to_vec();
    let mut bad_vers = null.clone();
    bad_vers[11] = 3;
    let gss = call(
        5,
        NFS_PROGRAM,
        1,
        rpc::OpaqueAuth {
            flavor: rpc::RPCSEC_GSS,
            body: Bytes::from_static(&[0; 24]),
        },
        &[],
    );
    let mut several = frag(&null, true);
    several.extend(frag(&reply, true));
    several.extend(frag(&gss, true));
    several.extend(frag(&[], false));
    several.extend(frag(&bad_vers, true));
    let with = |cfg: u8, stream: Vec<u8>| {
        let mut v = vec![cfg];
        v.extend(stream);
        v
    };
    vec![
        ("seed-null-none", with(3, frag(&null, true))),
        ("seed-compound-sys", with(3, frag(&compound, true))),
        // Two fragments read a byte at a time, the read dropped at every
        // pending poll.
        ("seed-two-fragments-trickled", with(3 | 0x20, two)),
        ("seed-reply-accepted", with(1, frag(&reply, true))),
        ("seed-reply-denied", with(1 | 2 << 2, frag(&denied, true))),
        ("seed-several", with(3 | 4 << 2, several)),
        ("seed-too-large", with(0, frag(&null, true))),
        ("seed-truncated", with(2, frag(&null, true)[..30].to_vec())),
    ]
}

// ---------------------------------------------------------------------------
// compound_decode
// ---------------------------------------------------------------------------

fn sample_compound() -> Vec<u8> {
    let sid = StateId4 {
        seqid: 1,
        other: [3; 12],
    };
    let fh = NfsFh4(Bytes::from_static(&[9; 40]));
    let owner = StateOwner4 {
        clientid: 1,
        owner: Bytes::from_static(b"o"),
    };
    let attrs = Attrs {
        mode: Some(0o644),
        size: Some(5),
        owner: Some(Bytes::from_static(b"1000")),
        time_modify_set: Some(SetTime4::SetToServerTime4),
        ..Default::default()
    }
    .encode();
    xdr::to_bytes(&Compound4Args {
        tag: Bytes::from_static(b"seed"),
        minorversion: 2,
        argarray: vec![
            NfsArgOp4::Sequence(Sequence4Args {
                sessionid: [1; 16],
                sequenceid: 1,
                slotid: 0,
                highest_slotid: 0,
                cachethis: true,
            }),
            NfsArgOp4::PutFh(PutFh4Args { object: fh }),
            NfsArgOp4::Open(Open4Args {
                seqid: 0,
                share_access: OPEN4_SHARE_ACCESS_BOTH,
                share_deny: 0,
                owner: owner.clone(),
                openhow: OpenFlag4::Create(CreateHow4::Exclusive41(CreatVerfAttr {
                    verf: [1; 8],
                    attrs: attrs.clone(),
                })),
                claim: OpenClaim4::Null(Bytes::from_static(b"file")),
            }),
            NfsArgOp4::Write(Write4Args {
                stateid: StateId4::CURRENT,
                offset: 0,
                stable: StableHow4::FileSync4,
                data: Bytes::from_static(b"some data"),
            }),
            NfsArgOp4::Lock(Lock4Args {
                locktype: NfsLockType4::WriteLt,
                reclaim: false,
                offset: 0,
                length: u64::MAX,
                locker: Locker4::OpenOwner(OpenToLockOwner4 {
                    open_seqid: 0,
                    open_stateid: sid,
                    lock_seqid: 0,
                    lock_owner: owner,
                }),
            }),
            NfsArgOp4::SetAttr(SetAttr4Args {
                stateid: sid,
                obj_attributes: attrs,
            }),
            NfsArgOp4::Create(Create4Args {
                objtype: CreateType4::Link(Bytes::from_static(b"target")),
                objname: Bytes::from_static(b"l"),
                createattrs: Fattr4::default(),
            }),
            NfsArgOp4::ReadDir(ReadDir4Args {
                cookie: 0,
                cookieverf: [0; 8],
                dircount: 1000,
                maxcount: 4000,
                attr_request: Bitmap4::from_attrs(&[FATTR4_TYPE, FATTR4_FILEID]),
            }),
            NfsArgOp4::Copy(Copy4Args {
                src_stateid: sid,
                dst_stateid: sid,
                src_offset: 0,
                dst_offset: 4096,
                count: 0,
                consecutive: true,
                synchronous: true,
                source_server: vec![NetLoc4::Name("srv".into())],
            }),
            NfsArgOp4::TestStateId(TestStateId4Args {
                stateids: vec![sid, StateId4::ANONYMOUS],
            }),
            NfsArgOp4::Unknown(10044),
        ],
    })
    .to_vec()
}

fn session_setup() -> Vec<u8> {
    let attrs = ChannelAttrs4 {
        headerpadsize: 0,
        maxrequestsize: 1 << 20,
        maxresponsesize: 1 << 20,
        maxresponsesize_cached: 4096,
        maxoperations: 16,
        maxrequests: 4,
        rdma_ird: None,
    };
    xdr::to_bytes(&Compound4Args {
        tag: Bytes::new(),
        minorversion: 1,
        argarray: vec![
            NfsArgOp4::ExchangeId(ExchangeId4Args {
                clientowner: ClientOwner4 {
                    verifier: [7; 8],
                    ownerid: Bytes::from_static(b"seed client"),
                },
                flags: EXCHGID4_FLAG_USE_NON_PNFS,
                state_protect: StateProtect4A::MachCred(StateProtectOps4 {
                    must_enforce: Bitmap4(vec![4]),
                    must_allow: Bitmap4::default(),
                }),
                client_impl_id: Some(NfsImplId4 {
                    domain: Bytes::from_static(b"example.org"),
                    name: Bytes::from_static(b"seed"),
                    date: NfsTime4::default(),
                }),
            }),
            NfsArgOp4::CreateSession(CreateSession4Args {
                clientid: 5,
                sequence: 1,
                flags: CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
                fore_chan_attrs: attrs,
                back_chan_attrs: attrs,
                cb_program: 0x4000_0000,
                sec_parms: vec![
                    CallbackSecParms4::AuthNone,
                    CallbackSecParms4::AuthSys(AuthSysParms {
                        stamp: 1,
                        machinename: Bytes::from_static(b"m"),
                        uid: 0,
                        gid: 0,
                        gids: vec![1, 2],
                    }),
                ],
            }),
            NfsArgOp4::BindConnToSession(BindConnToSession4Args {
                sessid: [2; 16],
                dir: ChannelDirFromClient4::Cdfc4BackOrBoth,
                use_conn_in_rdma_mode: false,
            }),
            NfsArgOp4::DestroySession(DestroySession4Args { sessionid: [2; 16] }),
            NfsArgOp4::DestroyClientId(DestroyClientId4Args { clientid: 5 }),
        ],
    })
    .to_vec()
}

fn sample_reply() -> Vec<u8> {
    xdr::to_bytes(&Compound4Res {
        status: NfsStat4::Nfs4errDenied,
        tag: Bytes::from_static(b"seed"),
        resarray: vec![
            NfsResOp4::Sequence(Res4::Ok(Sequence4ResOk {
                sessionid: [1; 16],
                sequenceid: 1,
                slotid: 0,
                highest_slotid: 0,
                target_highest_slotid: 0,
                status_flags: SEQ4_STATUS_CB_PATH_DOWN_SESSION,
            })),
            NfsResOp4::GetAttr(Res4::Ok(GetAttr4ResOk {
                obj_attributes: Attrs {
                    type_: Some(NfsFtype4::Nf4Reg),
                    size: Some(1),
                    ..Default::default()
                }
                .encode(),
            })),
            NfsResOp4::ReadDir(Res4::Ok(ReadDir4ResOk {
                cookieverf: [0; 8],
                reply: DirList4 {
                    entries: vec![Entry4 {
                        cookie: 3,
                        name: Bytes::from_static(b"x"),
                        attrs: Fattr4::default(),
                    }],
                    eof: true,
                },
            })),
            NfsResOp4::Lock(Lock4Res::Denied(Lock4Denied {
                offset: 0,
                length: 10,
                locktype: NfsLockType4::WriteLt,
                owner: StateOwner4 {
                    clientid: 1,
                    owner: Bytes::from_static(b"other"),
                },
            })),
        ],
    })
    .to_vec()
}

fn cb_compound() -> (Vec<u8>, Vec<u8>) {
    let args = CbCompound4Args {
        tag: Bytes::new(),
        minorversion: 1,
        callback_ident: 0,
        argarray: vec![
            NfsCbArgOp4::CbSequence(CbSequence4Args {
                sessionid: [4; 16],
                sequenceid: 1,
                slotid: 0,
                highest_slotid: 0,
                cachethis: false,
                referring_call_lists: Vec::new(),
            }),
            NfsCbArgOp4::CbNotifyLock(CbNotifyLock4Args {
                fh: NfsFh4(Bytes::from_static(&[5; 24])),
                lock_owner: StateOwner4 {
                    clientid: 9,
                    owner: Bytes::from_static(b"w"),
                },
            }),
        ],
    };
    let res = CbCompound4Res {
        status: NfsStat4::Nfs4Ok,
        tag: Bytes::new(),
        resarray: vec![
            NfsCbResOp4::CbSequence(Res4::Ok(CbSequence4ResOk {
                sessionid: [4; 16],
                sequenceid: 1,
                slotid: 0,
                highest_slotid: 0,
                target_highest_slotid: 0,
            })),
            NfsCbResOp4::CbNotifyLock(Res4::Ok(())),
        ],
    };
    (xdr::to_bytes(&args).to_vec(), xdr::to_bytes(&res).to_vec())
}

fn compound_decode() -> Vec<(&'static str, Vec<u8>)> {
    let (cb_args, cb_res) = cb_compound();
    // The server's reading: a count larger than the operations present.
    let mut short = sample_compound();
    short[15] = 40;
    vec![
        ("seed-compound", sample_compound()),
        ("seed-session-setup", session_setup()),
        ("seed-reply", sample_reply()),
        ("seed-cb-compound", cb_args),
        ("seed-cb-reply", cb_res),
        ("seed-count-too-large", short),
    ]
}

// ---------------------------------------------------------------------------
// compound_run: programs in the byte order `run/` reads them
// ---------------------------------------------------------------------------

/// Stateid picks (`World::sid`).
const SID_CURRENT: u8 = 0xff;
const SID_ANONYMOUS: u8 = 0xfc;
/// Name picks (`run::args::name`): "a", "b", "c", "d", "sub".
const A: u8 = 0;
const B: u8 = 1;
const SUB: u8 = 196;

/// A program for `compound_run`.
#[derive(Default)]
struct Prog(Vec<u8>);

impl Prog {
    /// A COMPOUND of `ops` after SEQUENCE on `session`'s `slot` with the
    /// next sequence id, minor version 2, as root.
    fn compound(mut self, session: u8, slot: u8, ops: &[&[u8]]) -> Self {
        self.0
            .extend([step::COMPOUND, 0, session, slot, 0, ops.len() as u8]);
        for o in ops {
            self.0.extend_from_slice(o);
        }
        self
    }

    /// The same with SEQUENCE's `how` byte (sequence id choice, cachethis).
    fn compound_how(mut self, how: u8, ops: &[&[u8]]) -> Self {
        self.0
            .extend([step::COMPOUND, 0, 0, 0, how, ops.len() as u8]);
        for o in ops {
            self.0.extend_from_slice(o);
        }
        self
    }

    fn raw(mut self, bytes: &[u8]) -> Self {
        self.0.extend([step::RAW, 0]);
        self.0.extend((bytes.len() as u16).to_be_bytes());
        self.0.extend_from_slice(bytes);
        self
    }

    fn bytes(mut self, b: &[u8]) -> Self {
        self.0.extend_from_slice(b);
        self
    }
}

/// OPEN creating `name` (mode 0644) for read and write, owner "o1".
fn open_create(name: u8) -> Vec<u8> {
    vec![op::OPEN, 3, 0, 0, 0, 1, 0, name]
}

fn write(sid: u8, offset: u8, len: u8) -> Vec<u8> {
    vec![op::WRITE, sid, offset, 0, len, b'x']
}

fn compound_run() -> Vec<(&'static str, Vec<u8>)> {
    let putroot: &[u8] = &[op::PUTROOTFH];
    let getfh: &[u8] = &[op::GETFH];
    let savefh: &[u8] = &[op::SAVEFH];
    // GETATTR of every supported attribute.
    let getattr_all: &[u8] = &[op::GETATTR, 1];
    let readdir: &[u8] = &[op::READDIR, 0, 0, 0, 0, 1];
    let close_cur: &[u8] = &[op::CLOSE, SID_CURRENT];

    let open_write_read = Prog::default().compound(
        0,
        0,
        &[
            putroot,
            &open_create(A),
            getfh,
            &write(SID_CURRENT, 0, 4),
            &write(SID_CURRENT, 6, 1),
            &[op::READ, SID_CURRENT, 0, 0],
            getattr_all,
            &[op::COMMIT, 0, 0],
            close_cur,
        ],
    );

    let dirs = Prog::default()
        // mkdir sub; in it a symlink "b" -> "a" and a fifo "c"
        .compound(0, 0, &[putroot, getfh, &[op::CREATE, 0, SUB, 0], getfh])
        .compound(
            0,
            0,
            &[
                &[op::PUTFH, 1],
                &[op::CREATE, 2, A, B, 0],
                &[op::PUTFH, 1],
                &[op::CREATE, 3, 2, 0],
                &[op::PUTFH, 1],
                readdir,
                &[op::LOOKUP, B],
                &[op::READLINK],
            ],
        )
        .compound(
            0,
            0,
            &[
                // rename sub/b to sub/d, remove sub/c
                &[op::PUTFH, 1],
                savefh,
                &[op::PUTFH, 1],
                &[op::RENAME, B, 3],
                &[op::REMOVE, 2],
                &[op::LOOKUPP],
                &[op::SECINFO, SUB],
                &[op::PUTFH, 1],
                &[op::SECINFO_NO_NAME, 1],
            ],
        );

    // An open, a byte-range lock, a conflicting LOCKT by another owner,
    // an unlock, then the lock owner's stateid freed.
    let locks = Prog::default()
        .compound(0, 0, &[putroot, &open_create(A), getfh])
        // LOCK write 0..10 as a new lock owner "o2" of open 0
        .compound(0, 0, &[&[op::PUTFH, 0], &[op::LOCK, 0, 0, 0, 2, 0, 0, 1]])
        // LOCKT by "o1": denied
        .compound(0, 0, &[&[op::PUTFH, 0], &[op::LOCKT, 0, 0, 1, 0]])
        .compound(
            0,
            0,
            &[
                &[op::PUTFH, 0],
                &[op::LOCKU, 0, 1, 0, 0],
                &[op::TEST_STATEID, 3, 0, 1, SID_ANONYMOUS],
                &[op::FREE_STATEID, SID_CURRENT],
                &[op::CLOSE, 0],
            ],
        );

    // Two clients: the second is refused a conflicting blocking lock and
    // waits; the first unlocks, the server sends CB_NOTIFY_LOCK over the
    // second's back channel, and the harness answers.
    let contention = Prog::default()
        .compound(0, 0, &[putroot, &open_create(A), getfh])
        .compound(0, 0, &[&[op::PUTFH, 0], &[op::LOCK, 0, 0, 0, 0, 0, 0, 0]])
        // new client "c1", CREATE_SESSION with a back channel
        .bytes(&[step::NEW_CLIENT, 0, 0, 0, 0, 0, 1 << 3, 0])
        .bytes(&[step::CALLBACKS, 0])
        .compound(
            1,
            0,
            &[
                &[op::PUTFH, 0],
                // OPEN of the current filehandle (CLAIM_FH), no create
                &[op::OPEN, 3, 0, 0, 2 | 4 << 3],
                &[op::LOCK, 2, 0, 0, 0, 0, SID_CURRENT, 0],
            ],
        )
        .compound(0, 1, &[&[op::PUTFH, 0], &[op::LOCKU, 0, 1, 0, 0]])
        .bytes(&[step::CALLBACKS, 0])
        .compound(1, 1, &[&[op::PUTFH, 0], &[op::LOCKT, 0, 0, 0, 0]]);

    // A client whose lease runs out: its open survives as a courtesy
    // until the reaper removes it; then its session is gone.
    let expiry = Prog::default()
        .compound(0, 0, &[putroot, &open_create(A), getfh])
        .bytes(&[step::ADVANCE, 2])
        .bytes(&[step::NEW_CLIENT, 0, 1, 0, 0, 0, 0, 0])
        .compound(1, 0, &[&[op::PUTFH, 0], &[op::OPEN, 3, 3, 0, 2 | 4 << 3]])
        .bytes(&[step::ADVANCE, 3, step::REAP])
        .compound(0, 0, &[&[op::PUTFH, 0], &[op::READ, 0, 0, 0]])
        .compound(1, 1, &[&[op::PUTFH, 0], &[op::READ, 0, 0, 0]]);

    // Session handling: EXCHANGE_ID, CREATE_SESSION (a replay of it),
    // BIND_CONN_TO_SESSION, DESTROY_SESSION, DESTROY_CLIENTID.
    let sessions = Prog::default()
        .bytes(&[step::SESSIONLESS, 0, 0, 0, 0, 0, 8, 0])
        .bytes(&[step::SESSIONLESS, 0, 1, 0, 1 << 3, 0, 0])
        .bytes(&[step::SESSIONLESS, 0, 1, 0, 5, 0, 0])
        .bytes(&[step::SESSIONLESS, 0, 4, 1, 1, 0, 0])
        .bytes(&[step::CALLBACKS, 2])
        .compound(1, 0, &[putroot, &[op::RECLAIM_COMPLETE, 0]])
        .compound(1, 1, &[&[op::BACKCHANNEL_CTL, 0, 1]])
        .bytes(&[step::SESSIONLESS, 0, 2, 1, 0])
        .bytes(&[step::SESSIONLESS, 0, 3, 1, 0])
        .bytes(&[step::SESSIONLESS, 0, 2, 0, 0])
        .compound(0, 0, &[putroot]);

    // Replays: the same sequence id again (cached reply), a false retry,
    // a sequence id too far ahead, a bad slot.
    let replay = Prog::default()
        .compound_how(0x80, &[putroot, getfh])
        .compound_how(0x85, &[putroot, getfh])
        .compound_how(0x05, &[putroot])
        .compound_how(0x06, &[putroot])
        .compound(0, 9, &[putroot])
        .bytes(&[step::COMPOUND, 0x20, 1, op::PUTROOTFH]);

    // NFSv4.2: ALLOCATE, SEEK, DEALLOCATE, COPY and CLONE within a file.
    let v42 = Prog::default().compound(
        0,
        0,
        &[
            putroot,
            &open_create(A),
            &write(SID_CURRENT, 4, 4),
            &[op::ALLOCATE, SID_CURRENT, 0, 5],
            &[op::SEEK, SID_CURRENT, 0, 1],
            &[op::DEALLOCATE, SID_CURRENT, 0, 4],
            savefh,
            &[op::COPY, SID_CURRENT, SID_CURRENT, 0, 0, 6, 4],
            &[op::CLONE, SID_CURRENT, SID_CURRENT, 0, 5, 4],
            &[op::GETATTR, 4],
            &[op::OFFLOAD_STATUS, SID_CURRENT],
        ],
    );

    // SETATTR of size, mode, owner and times; VERIFY and NVERIFY; an
    // ordinary user denied.
    let attrs = Prog::default()
        .compound(
            0,
            0,
            &[
                putroot,
                &open_create(A),
                &[op::SETATTR, SID_CURRENT, 0x1f, 2, 2, 1, 1, 0],
                &[op::VERIFY, 1, 2],
                &[op::NVERIFY, 2, 1],
                &[op::ACCESS, 0x3f, 0],
                &[op::SETATTR, SID_ANONYMOUS, 0x40, 0],
            ],
        )
        .bytes(&[step::COMPOUND, 2 << 3, 0, 0, 0, 2, op::PUTROOTFH])
        .bytes(&[op::CREATE, 0, B, 0]);

    // Raw COMPOUND bytes: a sample request, and a generated one followed
    // by an undecodable operation.
    let raw = Prog::default()
        .raw(&sample_compound())
        .bytes(&[step::RAW_TAIL, 0, 0, 0, 0, 2])
        .bytes(&[op::PUTROOTFH, op::GETFH, 0, 8])
        .bytes(&[0, 0, 0, 9, 0xff, 0xff, 0xff, 0xff]);

    vec![
        ("seed-open-write-read", open_write_read.0),
        ("seed-dirs", dirs.0),
        ("seed-locks", locks.0),
        ("seed-lock-contention-callbacks", contention.0),
        ("seed-lease-expiry", expiry.0),
        ("seed-sessions", sessions.0),
        ("seed-replay", replay.0),
        ("seed-v42", v42.0),
        ("seed-attrs", attrs.0),
        ("seed-raw", raw.0),
    ]
}

// ---------------------------------------------------------------------------
// nfs3_run
// ---------------------------------------------------------------------------

fn nfs3_run() -> Vec<(&'static str, Vec<u8>)> {
    use crate::nfs3_run::step as s;
    // NLM steps: procedure (0 TEST, 1 LOCK, 2 CANCEL, 3 UNLOCK, 8 SHARE,
    // 9 UNSHARE, 11 FREE_ALL, 6 LOCK_MSG), host, file (1 and 2 are
    // files, 0 the root), svid, offset, length, bits (1 block,
    // 2 exclusive, 4 reclaim, then share mode and access).
    let nlm = |p: u8, host: u8, file: u8, svid: u8, bits: u8| {
        vec![s::NLM, p, host, file, svid, 0, 2, bits]
    };
    let mut contend = Vec::new();
    for step in [
        nlm(1, 0, 1, 1, 2),    // A locks f1 [0,10) exclusively
        nlm(0, 1, 1, 1, 2),    // B tests: denied
        nlm(1, 1, 1, 1, 3),    // B blocks
        nlm(3, 0, 1, 1, 0),    // A unlocks: B granted, NLM_GRANTED fails
        nlm(1, 0, 1, 2, 3),    // A blocks behind B
        nlm(2, 0, 1, 2, 3),    // A cancels
        nlm(6, 0, 2, 1, 2),    // LOCK_MSG on f2
        nlm(11, 1, 0, 0, 0),   // FREE_ALL of B
        nlm(8, 0, 1, 0, 0x2a), // SHARE
        nlm(9, 0, 1, 0, 0x2a), // UNSHARE
        vec![s::NSM, 6, 0],    // SM_NOTIFY from A
        vec![s::ADVANCE],
        nlm(1, 2, 3, 0, 7), // junk filehandle, reclaim
    ] {
        contend.extend(step);
    }
    let mut io = Vec::new();
    for step in [
        vec![s::NFS3, 2, 1, 0, 2],            // WRITE f1 at 100
        vec![s::NFS3, 1, 1, 0, 0],            // READ f1
        vec![s::NFS3, 3, 2, 0, 3],            // SETATTR size of f2
        vec![s::NFS3, 5, 0, 0, 0],            // CREATE a
        vec![s::NFS3, 7, 0, 0, 0],            // READDIRPLUS of /
        vec![s::NFS3, 6, 0, 0, 0],            // REMOVE a
        vec![s::NLM, 8, 0, 1, 0, 0, 0, 0x16], // SHARE f1 deny write
        vec![s::NFS3, 2, 1, 0, 0],            // WRITE f1: denied
    ] {
        io.extend(step);
    }
    let mut pmap = Vec::new();
    for step in [
        vec![s::PORTMAP, 0, 1, 9, 1, 8, 1],     // v2 SET
        vec![s::PORTMAP, 0, 3, 9, 1, 8, 1],     // v2 GETPORT
        vec![s::PORTMAP, 0, 4, 0, 0, 0, 0],     // v2 DUMP
        vec![s::PORTMAP, 1, 1, 9, 2, 0, 3, 0],  // v3 SET
        vec![s::PORTMAP, 2, 9, 9, 2, 0, 3, 0],  // v4 GETVERSADDR
        vec![s::PORTMAP, 2, 11, 9, 2, 0, 3, 0], // v4 GETADDRLIST
        vec![s::PORTMAP, 2, 12, 0, 0, 0, 0, 0], // v4 GETSTAT
        vec![s::PORTMAP, 1, 7, 0, 0, 0, 0, 0],  // UADDR2TADDR
        vec![s::PORTMAP, 1, 2, 9, 2, 0, 3, 4],  // v3 UNSET
    ] {
        pmap.extend(step);
    }
    // Raw arguments: NLM LOCK cut short, MOUNT EXPORT, a program nobody
    // serves, NFSv3 FSINFO of nothing.
    let raw = [
        vec![s::RAW, 2, 4, 2, 6, 0, 0, 0, 4, 1, 2],
        vec![s::RAW, 1, 3, 5, 0],
        vec![s::RAW, 5, 1, 1, 0],
        vec![s::RAW, 0, 3, 19, 4, 0, 0, 0, 0],
        vec![s::RAW, 3, 1, 1, 8, 0, 0, 0, 1, b'x', 0, 0, 0],
    ]
    .concat();
    // The status monitor's procedures 0 to 7, each with a host name.
    let nsm: Vec<u8> = (0..8u8).flat_map(|p| [s::NSM, p, p % 4]).collect();
    vec![
        ("seed-nlm-contend", contend),
        ("seed-nsm", nsm),
        ("seed-nfs3-io", io),
        ("seed-portmap", pmap),
        ("seed-raw", raw),
    ]
}

// ---------------------------------------------------------------------------
// pnfs_run: the same programs, against a pNFS metadata server
// ---------------------------------------------------------------------------

fn pnfs_run() -> Vec<(&'static str, Vec<u8>)> {
    let putroot: &[u8] = &[op::PUTROOTFH];
    let getfh: &[u8] = &[op::GETFH];
    // LAYOUTGET: flex files, RW, no signal, offset 0, length all,
    // minlength 0, the current stateid, maxcount 4096.
    let layoutget_rw: &[u8] = &[op::LAYOUTGET, 0, 0, 0, 0, 0, 0, SID_CURRENT, 0];
    let layoutget_read: &[u8] = &[op::LAYOUTGET, 0, 1, 0, 4, 0, 0, SID_CURRENT, 0];
    // GETDEVICEINFO of data server 0 of this generation; then 1.
    let devinfo0: &[u8] = &[op::GETDEVICEINFO, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    let devinfo1: &[u8] = &[op::GETDEVICEINFO, 0, 0, 1, 0, 0, 0, 0, 0, 6];
    // LAYOUTCOMMIT of everything, last byte 4095, no time, empty body.
    let commit: &[u8] = &[op::LAYOUTCOMMIT, 0, 0, 0, 0, 1, SID_CURRENT, 2, 0, 1];
    // LAYOUTRETURN of the file, whole, with an ff_layoutreturn4 body
    // reporting an error on data server 0.
    let ret_file: &[u8] = &[op::LAYOUTRETURN, 0, 2, 1, 2, 0, 0, SID_CURRENT, 1, 0, 0];
    let ret_all: &[u8] = &[op::LAYOUTRETURN, 0, 2, 1, 1];
    let list: &[u8] = &[op::GETDEVICELIST, 0, 0, 0, 1, 0, 0];
    let stats_bad: &[u8] = &[op::LAYOUTSTATS, 0, 0, 0, 0, SID_CURRENT, 2, 3, 3, 1, 2, 3];
    let layouts = Prog::default()
        .compound(
            0,
            0,
            &[
                putroot,
                &open_create(A),
                getfh,
                &write(SID_CURRENT, 0, 4),
                layoutget_rw,
                devinfo0,
                devinfo1,
                commit,
            ],
        )
        .compound(
            0,
            0,
            &[&[op::PUTFH, 0], layoutget_read, list, stats_bad, ret_file],
        )
        .compound(0, 0, &[&[op::PUTFH, 0], layoutget_rw, ret_all]);
    // A second client writes through the metadata server: the first's
    // layout is recalled; the callback is answered, then the lease runs
    // out and the reaper fences it.
    let recall = Prog::default()
        .compound(0, 0, &[putroot, &open_create(A), getfh, layoutget_rw])
        .bytes(&[step::NEW_CLIENT, 0])
        .compound(
            1,
            0,
            &[&[op::PUTFH, 0], &open_create(B), &write(SID_CURRENT, 0, 4)],
        )
        .bytes(&[step::CALLBACKS, 0])
        .bytes(&[step::ADVANCE, 3, step::REAP, 0, step::CALLBACKS, 0]);
    // And every compound_run program, its file I/O now through the data
    // server.
    let mut v = vec![("seed-layouts", layouts.0), ("seed-recall", recall.0)];
    v.extend(compound_run());
    v
}

// ---------------------------------------------------------------------------
// gss_call
// ---------------------------------------------------------------------------

fn gss_call() -> Vec<(&'static str, Vec<u8>)> {
    // Mode 1: NULL calls under each service, a replay, then DESTROY.
    let mut calls = vec![1u8];
    for (seq, sp, args) in [
        (1u32, 0u8, &[][..]),
        (
            2,
            2,
            &[0, 0, 0, 4, 0, 0, 0, 2, 0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8][..],
        ),
        (
            3,
            3,
            &[0, 0, 0, 12, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12][..],
        ),
        (2, 0, &[][..]),
        (4, 8, &[][..]),
    ] {
        calls.extend(seq.to_be_bytes());
        calls.push(sp);
        calls.push(args.len() as u8);
        calls.extend_from_slice(args);
    }
    // Mode 0: a credential of version 1 with alice's shape, a verifier.
    let mut raw = vec![0u8, 20];
    raw.extend([0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0]);
    raw.extend([8, 1, 2, 3, 4, 5, 6, 7, 8, 0]);
    vec![
        ("seed-calls", calls),
        ("seed-raw", raw),
        ("seed-init", b"\x02alice@TEST".to_vec()),
        ("seed-continue", b"\x02\x01".to_vec()),
        ("seed-forged", b"\x02forged@TEST".to_vec()),
    ]
}

// ---------------------------------------------------------------------------
// tls_probe
// ---------------------------------------------------------------------------

/// A ClientHello rustls sent once (TLS 1.3, SNI "localhost", ALPN
/// "sunrpc"), kept as it was so that the seeds stay the same.
const CLIENT_HELLO: &[&str] = &[
    "16030100ec010000e803032a87be6066b20fcdad64dc6cdea8779392210b42a7fe6eedd7f73871c5",
    "8221d720f859a516b0b5c38f948a300e8b2be6c9572dd39726ef5541f1fe981f14736ade00121302",
    "13011303c02cc02bcca9c030c02fcca80100008d002b0003020304000d0014001205030403080708",
    "0608050804060105010401002d000201010010000900070673756e7270630000000e000c0000096c",
    "6f63616c686f737400170000003300260024001d002095a9ba82b6f0152397d2e407886bf691828f",
    "ed006d006b92c63d116c3e454650000a00080006001d00170018000500050100000000000b000201",
    "00",
];

fn tls_probe() -> Vec<(&'static str, Vec<u8>)> {
    let hello: Vec<u8> = CLIENT_HELLO
        .concat()
        .as_bytes()
        .chunks(2)
        .map(|h| u8::from_str_radix(std::str::from_utf8(h).expect("hex"), 16).expect("hex"))
        .collect();
    let with = |cfg: u8, body: &[u8]| {
        let mut v = vec![cfg];
        v.extend_from_slice(body);
        v
    };
    let reply = |stat: u32, verf: &[u8]| {
        let mut e = Encoder::new();
        for w in [7u32, rpc::REPLY, stat, 0] {
            e.u32(w);
        }
        Bytes::copy_from_slice(verf).pack(&mut e);
        e.u32(0);
        e.to_bytes().to_vec()
    };
    let mut garbage = hello.clone();
    garbage.extend_from_slice(&[0x17, 3, 3, 0, 5, 1, 2, 3, 4, 5]);
    vec![
        ("seed-hello", with(6, &hello)),
        ("seed-hello-trickled", with(8, &hello)),
        ("seed-hello-then-garbage", with(5, &garbage)),
        ("seed-http", with(4, b"GET / HTTP/1.1\r\n\r\n")),
        ("seed-half-header", with(2, &[0x16, 3, 1])),
        (
            "seed-probe-starttls",
            with(0x80, &reply(0, rpc::tls::STARTTLS)),
        ),
        ("seed-probe-denied", with(0x80, &reply(1, b""))),
    ]
}
