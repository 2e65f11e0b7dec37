//! `compound_run`: the input as a small program of steps run against one
//! fresh in-process server over `vfs::mem` (with a session set up first),
//! so that state transitions are fuzzed, not only parsing.
//!
//! Steps are COMPOUNDs built from the input (operations with small
//! parameters: names from a short list, offsets near edges, filehandles,
//! stateids, clients and sessions picked among those earlier results
//! returned), raw COMPOUND bytes, clock advances past the lease, reaper
//! runs and answers to the server's callbacks. The input is read a byte
//! at a time and reads as zeros once it runs out, so that every input is
//! a program and small changes make small changes to it; `Input` and the
//! step functions document the order bytes are read in, which
//! [`crate::seeds`] follows.
//!
//! Besides panics, a run fails when a reply does not decode as
//! COMPOUND4res, its status is not its last result's, it has more
//! results than operations, or a task is left running after the
//! connection closes. Set `FERRITE_FUZZ_TRACE=1` to print every step.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use proto::nfs4::*;
use rpc::{Auth, Reply};
use server::nfs4::inproc::{ClientOpts, InProcess};
use tokio::runtime::{Builder, Runtime};
use vfs::mem::{Limits, MemFs};
use xdr::{Decoder, Encoder, Pack, Unpack};

/// The server's lease.
pub const LEASE: Duration = Duration::from_secs(90);
/// Most steps one input runs.
pub const MAX_STEPS: usize = 48;
/// Most operations after SEQUENCE in one generated COMPOUND.
pub const MAX_OPS: usize = 12;
/// Filehandles and stateids remembered for later operations.
const REMEMBERED: usize = 16;

/// What the in-memory file system may hold: small, so that running out is
/// reached and nothing an input does allocates much.
pub const FS_LIMITS: Limits = Limits {
    max_bytes: 16 << 20,
    max_inodes: 10_000,
    max_links: 1_000,
};

/// Step kinds (the first byte of a step, modulo [`STEPS`]).
pub mod step {
    /// A COMPOUND with SEQUENCE (usually) and generated operations.
    pub const COMPOUND: u8 = 0;
    /// A COMPOUND of one session-less operation (EXCHANGE_ID, ...).
    pub const SESSIONLESS: u8 = 9;
    /// Moves the clock on.
    pub const ADVANCE: u8 = 10;
    /// Runs the reaper.
    pub const REAP: u8 = 11;
    /// Answers what the server sent on the back channel.
    pub const CALLBACKS: u8 = 12;
    /// Raw COMPOUND argument bytes.
    pub const RAW: u8 = 13;
    /// A generated COMPOUND followed by raw operation bytes.
    pub const RAW_TAIL: u8 = 14;
    /// A new client: EXCHANGE_ID, CREATE_SESSION, RECLAIM_COMPLETE.
    pub const NEW_CLIENT: u8 = 15;
}
const STEPS: u8 = 16;

/// Operation kinds (the first byte of an operation, modulo [`OPS`]).
pub mod op {
    pub const PUTROOTFH: u8 = 0;
    pub const PUTFH: u8 = 1;
    pub const GETFH: u8 = 2;
    pub const LOOKUP: u8 = 3;
    pub const GETATTR: u8 = 4;
    pub const SAVEFH: u8 = 5;
    pub const RESTOREFH: u8 = 6;
    pub const LOOKUPP: u8 = 7;
    pub const ACCESS: u8 = 8;
    pub const READDIR: u8 = 9;
    pub const CREATE: u8 = 10;
    pub const OPEN: u8 = 11;
    pub const CLOSE: u8 = 12;
    pub const OPEN_DOWNGRADE: u8 = 13;
    pub const READ: u8 = 14;
    pub const WRITE: u8 = 15;
    pub const COMMIT: u8 = 16;
    pub const LOCK: u8 = 17;
    pub const LOCKT: u8 = 18;
    pub const LOCKU: u8 = 19;
    pub const REMOVE: u8 = 20;
    pub const RENAME: u8 = 21;
    pub const LINK: u8 = 22;
    pub const READLINK: u8 = 23;
    pub const SETATTR: u8 = 24;
    pub const VERIFY: u8 = 25;
    pub const NVERIFY: u8 = 26;
    pub const SECINFO: u8 = 27;
    pub const SECINFO_NO_NAME: u8 = 28;
    pub const TEST_STATEID: u8 = 29;
    pub const FREE_STATEID: u8 = 30;
    pub const DELEGRETURN: u8 = 31;
    pub const SEEK: u8 = 32;
    pub const ALLOCATE: u8 = 33;
    pub const DEALLOCATE: u8 = 34;
    pub const COPY: u8 = 35;
    pub const CLONE: u8 = 36;
    pub const OFFLOAD_STATUS: u8 = 37;
    pub const OFFLOAD_CANCEL: u8 = 38;
    pub const RECLAIM_COMPLETE: u8 = 39;
    pub const BACKCHANNEL_CTL: u8 = 40;
    pub const SESSIONLESS: u8 = 41;
    pub const SEQUENCE: u8 = 42;
    pub const PUTPUBFH: u8 = 43;
    pub const UNSUPPORTED: u8 = 44;
}
const OPS: u8 = 45;

/// Names operations use; the first ones most often.
const NAMES: [&[u8]; 12] = [
    b"a",
    b"b",
    b"c",
    b"d",
    b"sub",
    b".",
    b"..",
    b"",
    b"x/y",
    b"\xff\xfe",
    b"n\0",
    b"long",
];

/// Entry point of the `compound_run` target.
pub fn compound_run(data: &[u8]) {
    let rt = runtime();
    let mut w = rt.block_on(World::new());
    let mut inp = Input::new(data);
    for _ in 0..MAX_STEPS {
        if inp.is_empty() {
            break;
        }
        rt.block_on(w.step(&mut inp));
    }
    // Close the connection: callbacks waiting for an answer fail, and
    // every task the server spawned must then end.
    w.h.conn.close();
    rt.block_on(async {
        for _ in 0..10_000 {
            if rt.metrics().num_alive_tasks() == 0 {
                break;
            }
            tokio::task::yield_now().await;
        }
    });
    assert_eq!(
        rt.metrics().num_alive_tasks(),
        0,
        "server tasks still running after the connection closed"
    );
}

/// One current-thread runtime for the process; each input starts with
/// no task alive on it.
fn runtime() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime")
    })
}

fn trace() -> bool {
    static T: OnceLock<bool> = OnceLock::new();
    *T.get_or_init(|| std::env::var_os("FERRITE_FUZZ_TRACE").is_some())
}

/// The input, read as small numbers (big-endian); zeros once it runs out.
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Input { data }
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.u8(), self.u8()])
    }

    pub fn u32(&mut self) -> u32 {
        u32::from(self.u16()) << 16 | u32::from(self.u16())
    }

    pub fn u64(&mut self) -> u64 {
        u64::from(self.u32()) << 32 | u64::from(self.u32())
    }

    /// Up to `n` bytes (fewer when the input runs out).
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (b, rest) = self.data.split_at(n.min(self.data.len()));
        self.data = rest;
        b
    }

    /// One of `choices`, by the next byte.
    pub fn pick<T: Clone>(&mut self, choices: &[T]) -> T {
        choices[usize::from(self.u8()) % choices.len()].clone()
    }
}

/// A session the harness knows, with the last sequence id of each slot.
struct SessionRec {
    id: SessionId4,
    clientid: ClientId4,
    slots: Vec<u32>,
}

/// The server under test and what earlier results returned.
struct World {
    h: InProcess,
    sessions: Vec<SessionRec>,
    /// Client ids from EXCHANGE_ID, with the sequence id CREATE_SESSION
    /// takes next.
    clients: Vec<(ClientId4, SequenceId4)>,
    fhs: Vec<NfsFh4>,
    sids: Vec<StateId4>,
    /// The client of the session the COMPOUND being built runs in.
    cur_client: ClientId4,
    /// The client id a CREATE_SESSION of the COMPOUND being built names.
    creating: Option<ClientId4>,
    /// Results seen, for replacing remembered items in turn.
    seen: usize,
}

/// A file-system clock that moves on by a millisecond a call, so that
/// times and change attributes differ without reading the real clock.
pub(crate) fn fs_clock() -> vfs::mem::Clock {
    let t = Arc::new(AtomicI64::new(1_700_000_000_000));
    Arc::new(move || {
        let ms = t.fetch_add(1, Ordering::Relaxed);
        vfs::Timespec {
            sec: ms / 1000,
            nsec: (ms % 1000) as u32 * 1_000_000,
        }
    })
}

impl World {
    async fn new() -> World {
        let fs = Arc::new(MemFs::new(FS_LIMITS, fs_clock()));
        let h = InProcess::new(fs, LEASE);
        let s = h.client("fuzz").await;
        let mut slots = vec![0; 8];
        slots[0] = s.seqids().first().copied().unwrap_or(0);
        World {
            sessions: vec![SessionRec {
                id: s.sessionid,
                clientid: s.clientid,
                slots,
            }],
            clients: Vec::new(),
            fhs: Vec::new(),
            sids: Vec::new(),
            cur_client: s.clientid,
            creating: None,
            seen: 0,
            h,
        }
    }

    async fn step(&mut self, inp: &mut Input<'_>) {
        match inp.u8() % STEPS {
            step::SESSIONLESS => {
                let auth = auth(inp);
                let mut ops = vec![self.sessionless(inp)];
                // Rarely, another operation after it (NOT_ONLY_OP).
                if inp.u8() == 0xff {
                    ops.push(self.op(inp));
                }
                self.send(&auth, 1, &ops, &[], 0).await;
            }
            step::ADVANCE => {
                let secs = match inp.u8() % 6 {
                    0 => 1,
                    1 => LEASE.as_secs() / 2,
                    2 => LEASE.as_secs() + 1,
                    3 => 2 * LEASE.as_secs() + 1,
                    4 => u64::from(inp.u8()),
                    _ => u64::from(inp.u16()),
                };
                self.h.advance(Duration::from_secs(secs));
                if trace() {
                    eprintln!("advance {secs}s");
                }
            }
            step::REAP => {
                let n = self.h.srv.state().reap();
                if trace() {
                    eprintln!("reap: {n} clients");
                }
            }
            step::CALLBACKS => self.callbacks(inp).await,
            step::RAW => {
                let auth = auth(inp);
                let len = usize::from(inp.u16() % 1024);
                let raw = Bytes::copy_from_slice(inp.bytes(len));
                let reply = self.h.call(&auth, raw).await;
                self.absorb(reply, u32::MAX as usize, true);
            }
            step::NEW_CLIENT => {
                let auth = auth(inp);
                let eid = self.exchange_id(inp);
                self.send(&auth, 1, &[eid], &[], 0).await;
                let Some(&(clientid, seq)) = self.clients.last() else {
                    return;
                };
                let cs = self.create_session_for(inp, clientid, seq);
                let before = self.sessions.len();
                self.send(&auth, 1, &[cs], &[], 0).await;
                // As a client does next: RECLAIM_COMPLETE, ending its grace.
                if self.sessions.len() > before {
                    let s = &self.sessions[before];
                    let seq = NfsArgOp4::Sequence(Sequence4Args {
                        sessionid: s.id,
                        sequenceid: s.slots[0].wrapping_add(1),
                        slotid: 0,
                        highest_slotid: 0,
                        cachethis: false,
                    });
                    let rc = NfsArgOp4::ReclaimComplete(ReclaimComplete4Args { one_fs: false });
                    self.send(&auth, 1, &[seq, rc], &[], 0).await;
                }
            }
            kind => {
                let flags = inp.u8();
                let minor = match flags & 7 {
                    0 => 2,
                    1..=4 => 1 + u32::from(flags & 1),
                    5 => 2,
                    6 => 0,
                    _ => 3,
                };
                let auth = auth_by(flags >> 3 & 3);
                let mut ops = Vec::new();
                if flags & 0x20 == 0 {
                    ops.push(NfsArgOp4::Sequence(self.sequence(inp)));
                }
                let n = usize::from(inp.u8()) % (MAX_OPS + 1);
                for _ in 0..n {
                    ops.push(self.op(inp));
                }
                let (tail, extra) = if kind == step::RAW_TAIL {
                    let extra = u32::from(inp.u8() % 3) + 1;
                    let len = usize::from(inp.u8());
                    (inp.bytes(len), extra)
                } else {
                    (&[][..], 0)
                };
                self.send(&auth, minor, &ops, tail, extra).await;
            }
        }
    }

    /// Sends one COMPOUND: `ops`, then `tail` counted as `extra` more
    /// operations.
    async fn send(&mut self, auth: &Auth, minor: u32, ops: &[NfsArgOp4], tail: &[u8], extra: u32) {
        let mut e = Encoder::new();
        Compound4ArgsHeader {
            tag: Bytes::from_static(b"fuzz"),
            minorversion: minor,
        }
        .pack(&mut e);
        e.u32(ops.len() as u32 + extra);
        for op in ops {
            op.pack(&mut e);
        }
        e.raw(tail);
        let args = e.to_bytes();
        if trace() {
            eprintln!("COMPOUND v4.{minor} {auth:?}");
            for op in ops {
                eprintln!("  {op:?}");
            }
            if extra > 0 {
                eprintln!("  + {extra} raw: {tail:02x?}");
            }
        }
        let reply = self.h.call(auth, args).await;
        // Raw bytes may make the header undecodable (a count the bytes
        // cannot hold): GARBAGE_ARGS is then right.
        self.absorb(reply, ops.len() + extra as usize, extra > 0);
        self.creating = None;
    }

    /// Checks a reply and remembers what its results return.
    fn absorb(&mut self, reply: Reply, nops: usize, raw: bool) {
        let chunks = match reply.in_memory() {
            Reply::Success(chunks) => chunks,
            Reply::Error(e) => {
                if trace() {
                    eprintln!("  => RPC error {e:?}");
                }
                assert!(raw, "generated COMPOUND rejected: {e:?}");
                return;
            }
            Reply::Drop => panic!("COMPOUND dropped"),
            Reply::Pieces(_) => unreachable!("in_memory leaves no pieces"),
        };
        let bytes: Bytes = chunks.concat().into();
        let res = match xdr::from_bytes::<Compound4Res>(bytes.clone()) {
            Ok(r) => r,
            Err(e) => panic!("reply does not decode: {e}: {bytes:02x?}"),
        };
        if trace() {
            eprintln!("  => {:?}", res.status);
            for r in &res.resarray {
                eprintln!("     {r:?}");
            }
        }
        assert!(res.resarray.len() <= nops, "more results than operations");
        if let Some(last) = res.resarray.last() {
            assert_eq!(res.status, last.status(), "status is not the last result's");
        }
        for r in &res.resarray {
            match r {
                NfsResOp4::GetFh(Res4::Ok(ok)) => {
                    let fh = ok.object.clone();
                    if !self.fhs.contains(&fh) {
                        self.seen += 1;
                        remember(&mut self.fhs, fh, self.seen);
                    }
                }
                NfsResOp4::Open(Res4::Ok(ok)) => self.add_sid(ok.stateid),
                NfsResOp4::Lock(Lock4Res::Ok(ok)) => self.add_sid(ok.lock_stateid),
                NfsResOp4::LockU(Res4::Ok(s)) | NfsResOp4::Close(Res4::Ok(s)) => self.add_sid(*s),
                NfsResOp4::OpenDowngrade(Res4::Ok(ok)) => self.add_sid(ok.open_stateid),
                NfsResOp4::ExchangeId(Res4::Ok(ok)) => {
                    let rec = (ok.clientid, ok.sequenceid);
                    match self.clients.iter().position(|c| c.0 == ok.clientid) {
                        Some(i) => self.clients[i] = rec,
                        None if self.clients.len() < 8 => self.clients.push(rec),
                        None => {
                            let i = self.seen % self.clients.len();
                            self.clients[i] = rec;
                        }
                    }
                }
                NfsResOp4::CreateSession(Res4::Ok(ok)) => {
                    let clientid = self.creating.unwrap_or(0);
                    if let Some(c) = self.clients.iter_mut().find(|c| c.0 == clientid) {
                        c.1 = ok.sequence.wrapping_add(1);
                    }
                    if !self.sessions.iter().any(|s| s.id == ok.sessionid) {
                        let rec = SessionRec {
                            id: ok.sessionid,
                            clientid,
                            slots: vec![0; ok.fore_chan_attrs.maxrequests.clamp(1, 16) as usize],
                        };
                        if self.sessions.len() < 8 {
                            self.sessions.push(rec);
                        } else {
                            let i = 1 + self.seen % 7;
                            self.sessions[i] = rec;
                        }
                    }
                }
                NfsResOp4::Sequence(Res4::Ok(ok)) => {
                    if let Some(s) = self.sessions.iter_mut().find(|s| s.id == ok.sessionid) {
                        if let Some(slot) = s.slots.get_mut(ok.slotid as usize) {
                            *slot = ok.sequenceid;
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn add_sid(&mut self, sid: StateId4) {
        match self.sids.iter_mut().find(|s| s.other == sid.other) {
            Some(s) => *s = sid,
            None => {
                self.seen += 1;
                remember(&mut self.sids, sid, self.seen);
            }
        }
    }

    /// SEQUENCE: session, slot, and how the sequence id relates to the
    /// slot's last (mostly the next one).
    fn sequence(&mut self, inp: &mut Input<'_>) -> Sequence4Args {
        let which = inp.u8();
        let slotid = u32::from(inp.u8() % 10);
        let how = inp.u8();
        let (sessionid, last) = match self.sessions.get(usize::from(which) % 9) {
            Some(s) if which < 0xf0 => {
                self.cur_client = s.clientid;
                (s.id, s.slots.get(slotid as usize).copied().unwrap_or(0))
            }
            _ => ([which; 16], 0),
        };
        let sequenceid = match how & 7 {
            0..=4 => last.wrapping_add(1),
            5 => last,
            6 => last.wrapping_add(2),
            _ => inp.u32(),
        };
        Sequence4Args {
            sessionid,
            sequenceid,
            slotid,
            highest_slotid: u32::from(how >> 3 & 7).max(slotid),
            cachethis: how & 0x80 != 0,
        }
    }

    /// One operation to follow SEQUENCE.
    fn op(&mut self, inp: &mut Input<'_>) -> NfsArgOp4 {
        use NfsArgOp4 as A;
        match inp.u8() % OPS {
            op::PUTROOTFH => A::PutRootFh,
            op::PUTFH => A::PutFh(PutFh4Args {
                object: self.fh(inp),
            }),
            op::GETFH => A::GetFh,
            op::LOOKUP => A::Lookup(Lookup4Args { objname: name(inp) }),
            op::GETATTR => A::GetAttr(GetAttr4Args {
                attr_request: mask(inp),
            }),
            op::SAVEFH => A::SaveFh,
            op::RESTOREFH => A::RestoreFh,
            op::LOOKUPP => A::LookupP,
            op::ACCESS => A::Access(Access4Args {
                access: u32::from(inp.u8()) | u32::from(inp.u8() & 1) << 8,
            }),
            op::READDIR => A::ReadDir(ReadDir4Args {
                cookie: inp.pick(&[0, 1, 2, 3, 4, 100, u64::MAX]),
                cookieverf: [inp.u8() & 1; 8],
                dircount: count(inp),
                maxcount: count(inp),
                attr_request: mask(inp),
            }),
            op::CREATE => A::Create(Create4Args {
                objtype: match inp.u8() % 9 {
                    0 | 1 => CreateType4::Dir,
                    2 => CreateType4::Link(name(inp)),
                    3 => CreateType4::Fifo,
                    4 => CreateType4::Sock,
                    5 => CreateType4::Blk(SpecData4 {
                        specdata1: 8,
                        specdata2: 1,
                    }),
                    6 => CreateType4::Chr(SpecData4::default()),
                    7 => CreateType4::Other(1),
                    _ => CreateType4::Other(inp.u32()),
                },
                objname: name(inp),
                createattrs: attrs(inp),
            }),
            op::OPEN => self.open(inp),
            op::CLOSE => A::Close(Close4Args {
                seqid: 0,
                open_stateid: self.sid(inp),
            }),
            op::OPEN_DOWNGRADE => A::OpenDowngrade(OpenDowngrade4Args {
                open_stateid: self.sid(inp),
                seqid: 0,
                share_access: share_access(inp),
                share_deny: u32::from(inp.u8() % 5),
            }),
            op::READ => A::Read(Read4Args {
                stateid: self.sid(inp),
                offset: offset(inp),
                count: count(inp),
            }),
            op::WRITE => {
                let stateid = self.sid(inp);
                let offset = offset(inp);
                let stable = inp.pick(&[
                    StableHow4::Unstable4,
                    StableHow4::DataSync4,
                    StableHow4::FileSync4,
                ]);
                let len = inp.pick(&[1usize, 10, 0, 100, 4096, 4097, 65536]);
                let fill = inp.u8();
                A::Write(Write4Args {
                    stateid,
                    offset,
                    stable,
                    data: Bytes::from(vec![fill; len]),
                })
            }
            op::COMMIT => A::Commit(Commit4Args {
                offset: offset(inp),
                count: count(inp),
            }),
            op::LOCK => {
                let locktype = lock_type(inp);
                let reclaim = inp.u8() == 0xff;
                let offset = offset(inp);
                let length = length(inp);
                let locker = if inp.u8() & 1 == 0 {
                    Locker4::OpenOwner(OpenToLockOwner4 {
                        open_seqid: 0,
                        open_stateid: self.sid(inp),
                        lock_seqid: 0,
                        lock_owner: self.owner(inp),
                    })
                } else {
                    Locker4::LockOwner(ExistLockOwner4 {
                        lock_stateid: self.sid(inp),
                        lock_seqid: 0,
                    })
                };
                A::Lock(Lock4Args {
                    locktype,
                    reclaim,
                    offset,
                    length,
                    locker,
                })
            }
            op::LOCKT => A::LockT(LockT4Args {
                locktype: lock_type(inp),
                offset: offset(inp),
                length: length(inp),
                owner: self.owner(inp),
            }),
            op::LOCKU => A::LockU(LockU4Args {
                locktype: lock_type(inp),
                seqid: 0,
                lock_stateid: self.sid(inp),
                offset: offset(inp),
                length: length(inp),
            }),
            op::REMOVE => A::Remove(Remove4Args { target: name(inp) }),
            op::RENAME => A::Rename(Rename4Args {
                oldname: name(inp),
                newname: name(inp),
            }),
            op::LINK => A::Link(Link4Args { newname: name(inp) }),
            op::READLINK => A::ReadLink,
            op::SETATTR => A::SetAttr(SetAttr4Args {
                stateid: self.sid(inp),
                obj_attributes: attrs(inp),
            }),
            op::VERIFY => A::Verify(Verify4Args {
                obj_attributes: attrs(inp),
            }),
            op::NVERIFY => A::NVerify(NVerify4Args {
                obj_attributes: attrs(inp),
            }),
            op::SECINFO => A::SecInfo(SecInfo4Args { name: name(inp) }),
            op::SECINFO_NO_NAME => A::SecInfoNoName(if inp.u8() & 1 == 0 {
                SecInfoStyle4::CurrentFh
            } else {
                SecInfoStyle4::Parent
            }),
            op::TEST_STATEID => {
                let n = inp.u8() % 5;
                A::TestStateId(TestStateId4Args {
                    stateids: (0..n).map(|_| self.sid(inp)).collect(),
                })
            }
            op::FREE_STATEID => A::FreeStateId(FreeStateId4Args {
                stateid: self.sid(inp),
            }),
            op::DELEGRETURN => A::DelegReturn(DelegReturn4Args {
                deleg_stateid: self.sid(inp),
            }),
            op::SEEK => A::Seek(Seek4Args {
                stateid: self.sid(inp),
                offset: offset(inp),
                what: if inp.u8() & 1 == 0 {
                    DataContent4::Nfs4ContentData
                } else {
                    DataContent4::Nfs4ContentHole
                },
            }),
            op::ALLOCATE => A::Allocate(Allocate4Args {
                stateid: self.sid(inp),
                offset: offset(inp),
                length: length(inp),
            }),
            op::DEALLOCATE => A::Deallocate(Deallocate4Args {
                stateid: self.sid(inp),
                offset: offset(inp),
                length: length(inp),
            }),
            op::COPY => {
                let src_stateid = self.sid(inp);
                let dst_stateid = self.sid(inp);
                let flags = inp.u8();
                A::Copy(Copy4Args {
                    src_stateid,
                    dst_stateid,
                    src_offset: offset(inp),
                    dst_offset: offset(inp),
                    count: length(inp),
                    consecutive: flags & 1 != 0,
                    synchronous: flags & 2 == 0,
                    source_server: if flags & 4 == 0 {
                        Vec::new()
                    } else {
                        vec![NetLoc4::Name("elsewhere".into())]
                    },
                })
            }
            op::CLONE => A::Clone(Clone4Args {
                src_stateid: self.sid(inp),
                dst_stateid: self.sid(inp),
                src_offset: offset(inp),
                dst_offset: offset(inp),
                count: length(inp),
            }),
            op::OFFLOAD_STATUS => A::OffloadStatus(OffloadStatus4Args {
                stateid: self.sid(inp),
            }),
            op::OFFLOAD_CANCEL => A::OffloadCancel(OffloadCancel4Args {
                stateid: self.sid(inp),
            }),
            op::RECLAIM_COMPLETE => A::ReclaimComplete(ReclaimComplete4Args {
                one_fs: inp.u8() & 1 != 0,
            }),
            op::BACKCHANNEL_CTL => A::BackchannelCtl(BackchannelCtl4Args {
                cb_program: inp.pick(&[0x4000_0000, 0, u32::MAX]),
                sec_parms: sec_parms(inp),
            }),
            op::SESSIONLESS => self.sessionless(inp),
            op::SEQUENCE => A::Sequence(self.sequence(inp)),
            op::PUTPUBFH => A::PutPubFh,
            _ => match inp.u8() % 8 {
                0 => A::Illegal,
                1 => A::Unknown(inp.pick(&[0, 1, 2, 77, 10044, u32::MAX])),
                2 => A::OpenAttr(OpenAttr4Args { createdir: true }),
                3 => A::Renew(Renew4Args {
                    clientid: self.cur_client,
                }),
                4 => A::DelegPurge(DelegPurge4Args {
                    clientid: self.cur_client,
                }),
                5 => A::WantDelegation(WantDelegation4Args {
                    want: OPEN4_SHARE_ACCESS_WANT_ANY_DELEG,
                    claim: DelegClaim4::Fh,
                }),
                6 => A::ReadPlus(ReadPlus4Args {
                    stateid: self.sid(inp),
                    offset: offset(inp),
                    count: count(inp),
                }),
                _ => A::IoAdvise(IoAdvise4Args {
                    stateid: self.sid(inp),
                    offset: offset(inp),
                    count: length(inp),
                    hints: Bitmap4(vec![inp.u32()]),
                }),
            },
        }
    }

    fn open(&mut self, inp: &mut Input<'_>) -> NfsArgOp4 {
        let share_access = share_access(inp);
        let share_deny = u32::from(inp.u8() % 5);
        let owner = self.owner(inp);
        let how = inp.u8();
        let openhow = match how & 7 {
            2 => OpenFlag4::NoCreate,
            3 => OpenFlag4::Create(CreateHow4::Guarded(attrs(inp))),
            4 => OpenFlag4::Create(CreateHow4::Exclusive41(CreatVerfAttr {
                verf: [inp.u8() % 3; 8],
                attrs: attrs(inp),
            })),
            5 => OpenFlag4::Create(CreateHow4::Exclusive([inp.u8() % 3; 8])),
            _ => OpenFlag4::Create(CreateHow4::Unchecked(attrs(inp))),
        };
        let claim = match how >> 3 & 7 {
            0..=3 => OpenClaim4::Null(name(inp)),
            4 => OpenClaim4::Fh,
            5 => OpenClaim4::Previous(OpenDelegationType4::OpenDelegateNone),
            6 => OpenClaim4::DelegCurFh(self.sid(inp)),
            _ => match inp.u8() % 3 {
                0 => OpenClaim4::DelegateCur(OpenClaimDelegateCur4 {
                    delegate_stateid: self.sid(inp),
                    file: name(inp),
                }),
                1 => OpenClaim4::DelegatePrev(name(inp)),
                _ => OpenClaim4::DelegPrevFh,
            },
        };
        NfsArgOp4::Open(Open4Args {
            seqid: 0,
            share_access,
            share_deny,
            owner,
            openhow,
            claim,
        })
    }

    /// EXCHANGE_ID, CREATE_SESSION, DESTROY_SESSION, DESTROY_CLIENTID or
    /// BIND_CONN_TO_SESSION.
    fn sessionless(&mut self, inp: &mut Input<'_>) -> NfsArgOp4 {
        match inp.u8() % 5 {
            0 => self.exchange_id(inp),
            1 => {
                let (clientid, seq) = match self.clients.get(usize::from(inp.u8()) % 9) {
                    Some(&c) => c,
                    None => (self.sessions[0].clientid, 1),
                };
                self.create_session_for(inp, clientid, seq)
            }
            2 => NfsArgOp4::DestroySession(DestroySession4Args {
                sessionid: self.session_id(inp),
            }),
            3 => NfsArgOp4::DestroyClientId(DestroyClientId4Args {
                clientid: self.client_id(inp),
            }),
            _ => NfsArgOp4::BindConnToSession(BindConnToSession4Args {
                sessid: self.session_id(inp),
                dir: inp.pick(&[
                    ChannelDirFromClient4::Cdfc4ForeOrBoth,
                    ChannelDirFromClient4::Cdfc4Fore,
                    ChannelDirFromClient4::Cdfc4Back,
                    ChannelDirFromClient4::Cdfc4BackOrBoth,
                ]),
                use_conn_in_rdma_mode: inp.u8() == 0xff,
            }),
        }
    }

    fn exchange_id(&mut self, inp: &mut Input<'_>) -> NfsArgOp4 {
        let owner: &[u8] = inp.pick(&[b"c1", b"c2", b"fuzz", b"c3"]);
        let verifier = [inp.u8() % 3; 8];
        let flags = inp.pick(&[
            0,
            EXCHGID4_FLAG_USE_NON_PNFS,
            EXCHGID4_FLAG_UPD_CONFIRMED_REC_A,
            EXCHGID4_FLAG_SUPP_MOVED_REFER | EXCHGID4_FLAG_BIND_PRINC_STATEID,
            EXCHGID4_FLAG_USE_PNFS_MDS,
            EXCHGID4_FLAG_CONFIRMED_R,
            u32::MAX,
        ]);
        let state_protect = match inp.u8() % 8 {
            6 => StateProtect4A::MachCred(StateProtectOps4 {
                must_enforce: Bitmap4(vec![1 << 2]),
                must_allow: Bitmap4::default(),
            }),
            7 => StateProtect4A::Ssv(SsvSpParms4 {
                ops: StateProtectOps4 {
                    must_enforce: Bitmap4::default(),
                    must_allow: Bitmap4::default(),
                },
                hash_algs: Vec::new(),
                encr_algs: Vec::new(),
                window: 1,
                num_gss_handles: 1,
            }),
            _ => StateProtect4A::None,
        };
        NfsArgOp4::ExchangeId(ExchangeId4Args {
            clientowner: ClientOwner4 {
                verifier,
                ownerid: Bytes::from_static(owner),
            },
            flags,
            state_protect,
            client_impl_id: None,
        })
    }

    fn create_session_for(
        &mut self,
        inp: &mut Input<'_>,
        clientid: ClientId4,
        seq: SequenceId4,
    ) -> NfsArgOp4 {
        let how = inp.u8();
        let sequence = match how & 7 {
            0..=4 => seq,
            5 => seq.wrapping_sub(1),
            6 => seq.wrapping_add(1),
            _ => inp.u32(),
        };
        let flags = match how >> 3 & 3 {
            0 => 0,
            1 => CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
            2 => CREATE_SESSION4_FLAG_PERSIST | CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
            _ => u32::MAX,
        };
        // The in-process harness's own client's channel.
        let normal = ClientOpts::default().fore;
        let fore = match how >> 5 {
            0..=3 => normal,
            4 => ChannelAttrs4 {
                maxrequestsize: 200,
                maxresponsesize: 300,
                maxresponsesize_cached: 0,
                maxoperations: 2,
                maxrequests: 1,
                ..normal
            },
            5 => ChannelAttrs4 {
                maxrequests: 0,
                maxoperations: 0,
                ..normal
            },
            6 => ChannelAttrs4 {
                headerpadsize: u32::MAX,
                maxrequestsize: u32::MAX,
                maxresponsesize: u32::MAX,
                maxresponsesize_cached: u32::MAX,
                maxoperations: u32::MAX,
                maxrequests: u32::MAX,
                rdma_ird: Some(1),
            },
            _ => ChannelAttrs4 {
                maxresponsesize_cached: 600,
                maxrequests: 2,
                ..normal
            },
        };
        self.creating = Some(clientid);
        NfsArgOp4::CreateSession(CreateSession4Args {
            clientid,
            sequence,
            flags,
            fore_chan_attrs: fore,
            back_chan_attrs: normal,
            cb_program: 0x4000_0000,
            sec_parms: sec_parms(inp),
        })
    }

    fn session_id(&self, inp: &mut Input<'_>) -> SessionId4 {
        let v = inp.u8();
        match self.sessions.get(usize::from(v) % 9) {
            Some(s) => s.id,
            None => [v; 16],
        }
    }

    fn client_id(&self, inp: &mut Input<'_>) -> ClientId4 {
        let v = inp.u8();
        match v % 10 {
            0 => self.sessions[0].clientid,
            9 => u64::from(v) << 32 | 7,
            i => self
                .clients
                .get(usize::from(i - 1))
                .map_or(self.cur_client, |c| c.0),
        }
    }

    /// A filehandle a result returned (usually), a damaged one, or junk.
    fn fh(&self, inp: &mut Input<'_>) -> NfsFh4 {
        let v = inp.u8();
        if self.fhs.is_empty() || v >= 0xf0 {
            return NfsFh4(match v & 3 {
                0 => Bytes::new(),
                1 => Bytes::from(vec![0xab; NFS4_FHSIZE]),
                2 => Bytes::from(vec![v; 40]),
                _ => Bytes::from_static(&[1, 2, 3]),
            });
        }
        let fh = &self.fhs[usize::from(v) % self.fhs.len()];
        if v < 0xe0 {
            return fh.clone();
        }
        // One byte changed.
        let mut b = fh.0.to_vec();
        if !b.is_empty() {
            let i = usize::from(inp.u8()) % b.len();
            b[i] ^= 1 << (v & 7);
        }
        NfsFh4(Bytes::from(b))
    }

    /// A stateid a result returned (usually, some with its seqid moved), a
    /// special one, or a damaged one.
    fn sid(&self, inp: &mut Input<'_>) -> StateId4 {
        let v = inp.u8();
        let special = match v {
            0xfc => Some(StateId4::ANONYMOUS),
            0xfd => Some(StateId4::BYPASS),
            0xfe => Some(StateId4::INVALID),
            0xff => Some(StateId4::CURRENT),
            _ => None,
        };
        if let Some(s) = special {
            return s;
        }
        let Some(&s) = self
            .sids
            .get(usize::from(v & 0x1f) % self.sids.len().max(1))
        else {
            return StateId4::CURRENT;
        };
        match v >> 5 {
            0..=3 => s,
            4 => StateId4 { seqid: 0, ..s },
            5 => StateId4 {
                seqid: s.seqid.wrapping_add(1),
                ..s
            },
            6 => StateId4 {
                seqid: s.seqid.wrapping_sub(1),
                ..s
            },
            _ => {
                let mut other = s.other;
                other[usize::from(v) % 12] ^= 0x40;
                StateId4 { other, ..s }
            }
        }
    }

    fn owner(&self, inp: &mut Input<'_>) -> StateOwner4 {
        let v = inp.u8();
        let names: [&'static [u8]; 4] = [b"o1", b"o2", b"o3", b""];
        StateOwner4 {
            clientid: match v >> 6 {
                0..=2 => self.cur_client,
                _ => self.client_id(inp),
            },
            owner: Bytes::from_static(names[usize::from(v & 3)]),
        }
    }

    /// Takes what the server sent on the back channel and answers it, in a
    /// way the input chooses.
    async fn callbacks(&mut self, inp: &mut Input<'_>) {
        let how = inp.u8();
        // Let spawned tasks (probes, CB_NOTIFY_LOCK) reach their calls.
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        while let Ok(msg) = self.h.sent.lock().await.try_recv() {
            let msg: Bytes = msg.concat().into();
            let mut d = Decoder::new(msg.slice(4.min(msg.len())..));
            let (Ok(xid), Ok(rpc::CALL)) = (d.u32(), d.u32()) else {
                panic!("back-channel message is not a call: {msg:02x?}");
            };
            let Ok((_prog, _vers, proc_, _auth)) = rpc::conn::parse_call(&mut d) else {
                panic!("back-channel call header does not decode: {msg:02x?}");
            };
            let mut e = Encoder::new();
            match how % 5 {
                // Answer properly.
                0 | 1 => {
                    accepted(&mut e, rpc::AcceptStat::Success);
                    if proc_ == 1 {
                        let args = CbCompound4Args::unpack(&mut d)
                            .expect("the server's CB_COMPOUND decodes");
                        cb_reply(&args, how & 0x80 != 0).pack(&mut e);
                    }
                }
                2 => accepted(&mut e, rpc::AcceptStat::ProgUnavail),
                3 => {
                    accepted(&mut e, rpc::AcceptStat::Success);
                    let n = usize::from(inp.u8() % 32);
                    e.raw(inp.bytes(n));
                }
                // No answer: the call waits until the connection closes.
                _ => continue,
            }
            let delivered = self.h.conn.deliver_reply(xid, e.to_bytes());
            if trace() {
                eprintln!("callback proc {proc_} answered ({how}): {delivered}");
            }
        }
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
    }
}

/// Puts `v` into a list of at most [`REMEMBERED`], replacing in turn.
fn remember<T>(list: &mut Vec<T>, v: T, seen: usize) {
    if list.len() < REMEMBERED {
        list.push(v);
    } else {
        list[seen % REMEMBERED] = v;
    }
}

fn accepted(e: &mut Encoder, stat: rpc::AcceptStat) {
    e.u32(rpc::MSG_ACCEPTED);
    rpc::OpaqueAuth::none().pack(e);
    stat.pack(e);
}

/// A client's answer to a CB_COMPOUND: CB_SEQUENCE accepted (or
/// refused), then success for CB_NOTIFY_LOCK.
fn cb_reply(args: &CbCompound4Args, refuse: bool) -> CbCompound4Res {
    let mut resarray = Vec::new();
    for op in &args.argarray {
        resarray.push(match op {
            NfsCbArgOp4::CbSequence(_) if refuse => {
                NfsCbResOp4::CbSequence(Res4::Err(NfsStat4::Nfs4errBadsession))
            }
            NfsCbArgOp4::CbSequence(s) => NfsCbResOp4::CbSequence(Res4::Ok(CbSequence4ResOk {
                sessionid: s.sessionid,
                sequenceid: s.sequenceid,
                slotid: s.slotid,
                highest_slotid: s.highest_slotid,
                target_highest_slotid: s.highest_slotid,
            })),
            NfsCbArgOp4::CbNotifyLock(_) => NfsCbResOp4::CbNotifyLock(Res4::Ok(())),
            _ => break,
        });
        if refuse {
            break;
        }
    }
    let status = resarray
        .last()
        .map_or(NfsStat4::Nfs4Ok, NfsCbResOp4::status);
    CbCompound4Res {
        status,
        tag: args.tag.clone(),
        resarray,
    }
}

fn auth(inp: &mut Input<'_>) -> Auth {
    auth_by(inp.u8() & 3)
}

/// Root (mostly), an ordinary user, or AUTH_NONE.
fn auth_by(v: u8) -> Auth {
    match v & 3 {
        0 | 1 => Auth::sys(0, 0, Vec::new(), "fuzz"),
        2 => Auth::sys(1000, 1000, vec![1000, 10], "fuzz"),
        _ => Auth::None,
    }
}

fn name(inp: &mut Input<'_>) -> Bytes {
    let v = usize::from(inp.u8());
    // The first four names three times as often as the rest.
    let i = if v < 192 { v % 4 } else { v % NAMES.len() };
    match NAMES[i] {
        b"long" => Bytes::from(vec![b'l'; 256]),
        n => Bytes::from_static(n),
    }
}

fn offset(inp: &mut Input<'_>) -> u64 {
    match inp.u8() % 13 {
        0 => 0,
        1 => 1,
        2 => 100,
        3 => 4095,
        4 => 4096,
        5 => 8192,
        6 => 1 << 20,
        7 => 1 << 32,
        8 => 1 << 62,
        9 => u64::MAX - 1,
        10 => u64::MAX,
        11 => i64::MAX as u64,
        _ => inp.u64(),
    }
}

fn length(inp: &mut Input<'_>) -> u64 {
    match inp.u8() % 9 {
        0 => u64::MAX,
        1 => 1,
        2 => 10,
        3 => 0,
        4 => 4096,
        5 => 1 << 20,
        6 => u64::MAX - 1,
        7 => 1 << 63,
        _ => inp.u64(),
    }
}

fn count(inp: &mut Input<'_>) -> u32 {
    match inp.u8() % 9 {
        0 => 4096,
        1 => 0,
        2 => 1,
        3 => 100,
        4 => 600,
        5 => 1 << 20,
        6 => 2 << 20,
        7 => u32::MAX,
        _ => inp.u32(),
    }
}

fn lock_type(inp: &mut Input<'_>) -> NfsLockType4 {
    inp.pick(&[
        NfsLockType4::WriteLt,
        NfsLockType4::ReadLt,
        NfsLockType4::WritewLt,
        NfsLockType4::ReadwLt,
    ])
}

fn share_access(inp: &mut Input<'_>) -> u32 {
    let v = inp.u8();
    let base = u32::from(v & 3);
    match v >> 2 & 7 {
        0..=4 => base,
        5 => base | OPEN4_SHARE_ACCESS_WANT_NO_DELEG,
        6 => base | OPEN4_SHARE_ACCESS_WANT_ANY_DELEG,
        _ => base | 4,
    }
}

/// An attribute mask for GETATTR and READDIR.
fn mask(inp: &mut Input<'_>) -> Bitmap4 {
    match inp.u8() % 7 {
        0 => Bitmap4::from_attrs(&[FATTR4_TYPE, FATTR4_SIZE, FATTR4_FILEID, FATTR4_MODE]),
        1 => {
            // Every attribute that can be read.
            let mut all = Attrs::supported();
            all.remove(FATTR4_TIME_ACCESS_SET);
            all.remove(FATTR4_TIME_MODIFY_SET);
            all
        }
        2 => Bitmap4::default(),
        6 => Attrs::supported(),
        3 => Bitmap4::from_attrs(&[
            FATTR4_SUPPORTED_ATTRS,
            FATTR4_FILEHANDLE,
            FATTR4_RDATTR_ERROR,
            FATTR4_OWNER,
            FATTR4_OWNER_GROUP,
            FATTR4_ACL,
            FATTR4_FS_LOCATIONS,
        ]),
        4 => Bitmap4::from_attrs(&[
            FATTR4_SPACE_USED,
            FATTR4_TIME_MODIFY,
            FATTR4_MOUNTED_ON_FILEID,
            FATTR4_CHANGE,
            FATTR4_NUMLINKS,
            FATTR4_SUPPATTR_EXCLCREAT,
        ]),
        _ => Bitmap4(vec![inp.u32(), inp.u32(), inp.u32()]),
    }
}

/// Attributes to set or verify: a few settable ones with edge values, a
/// read-only one, or raw bytes behind a raw mask.
fn attrs(inp: &mut Input<'_>) -> Fattr4 {
    let which = inp.u8();
    if which == 0xff {
        let attrmask = Bitmap4(vec![inp.u32(), inp.u32()]);
        let n = usize::from(inp.u8() % 64);
        return Fattr4 {
            attrmask,
            attr_vals: Bytes::copy_from_slice(inp.bytes(n)),
        };
    }
    let owners: [&'static [u8]; 7] = [b"0", b"1000", b"65534", b"root", b"nobody@x", b"", b"x@y"];
    let mut a = Attrs::default();
    if which & 1 != 0 {
        a.mode = Some(inp.pick(&[
            0o644,
            0o755,
            0o600,
            0o777,
            0o4755,
            0o1777,
            0,
            0o7777,
            u32::MAX,
        ]));
    }
    if which & 2 != 0 {
        a.size = Some(match inp.u8() % 5 {
            0 => 0,
            1 => 1,
            2 => 5000,
            3 => 1 << 40,
            _ => u64::MAX,
        });
    }
    if which & 4 != 0 {
        a.owner = Some(Bytes::from_static(inp.pick(&owners)));
    }
    if which & 8 != 0 {
        a.owner_group = Some(Bytes::from_static(inp.pick(&owners)));
    }
    if which & 16 != 0 {
        a.time_modify_set = Some(time_set(inp));
    }
    if which & 32 != 0 {
        a.time_access_set = Some(time_set(inp));
    }
    if which & 64 != 0 {
        match inp.u8() % 4 {
            0 => a.type_ = Some(NfsFtype4::Nf4Reg),
            1 => a.acl = Some(Vec::new()),
            2 => a.hidden = Some(true),
            _ => {
                a.mode_umask = Some(ModeUmask4 {
                    mode: 0o777,
                    umask: 0o22,
                })
            }
        }
    }
    a.encode()
}

fn time_set(inp: &mut Input<'_>) -> SetTime4 {
    match inp.u8() % 4 {
        0 => SetTime4::SetToServerTime4,
        1 => SetTime4::SetToClientTime4(NfsTime4 {
            seconds: 1_000_000_000,
            nseconds: 0,
        }),
        2 => SetTime4::SetToClientTime4(NfsTime4 {
            seconds: -1,
            nseconds: 1_000_000_000,
        }),
        _ => SetTime4::SetToClientTime4(NfsTime4 {
            seconds: i64::MAX,
            nseconds: 999_999_999,
        }),
    }
}

fn sec_parms(inp: &mut Input<'_>) -> Vec<CallbackSecParms4> {
    match inp.u8() % 4 {
        0 => vec![CallbackSecParms4::AuthNone],
        1 => vec![CallbackSecParms4::AuthSys(AuthSysParms {
            stamp: 1,
            machinename: Bytes::from_static(b"cb"),
            uid: 0,
            gid: 0,
            gids: Vec::new(),
        })],
        2 => Vec::new(),
        _ => vec![CallbackSecParms4::RpcSecGss(GssCbHandles4 {
            service: RpcGssSvc::RpcGssSvcNone,
            handle_from_server: Bytes::new(),
            handle_from_client: Bytes::new(),
        })],
    }
}
