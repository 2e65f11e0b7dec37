//! `nfs3_run`: the input as a small program of calls to NFSv3 and its
//! companions, MOUNT, NLM, NSM and the port mapper, run against one fresh
//! in-process server over `vfs::mem`, through the same program router
//! the server listens with (so PROG_UNAVAIL, PROG_MISMATCH and NULL are
//! the RPC layer's, as on the wire).
//!
//! Before the program: MNT of "/" and two files made with NFSv3 CREATE,
//! whose filehandles the steps use. Each step is (read in this order):
//! a kind byte (modulo [`STEPS`]), then
//! * RAW: a program byte, a version byte, a procedure byte, a length byte
//!   and that many argument bytes, as they are;
//! * NLM: a procedure byte (modulo the procedures), then the lock: host
//!   name, filehandle (one of the three, or junk), svid, offset and
//!   length from short lists, and the block, exclusive and reclaim bits;
//! * NSM: a procedure byte and a host name;
//! * PORTMAP: a version byte, a procedure byte, then program, version and
//!   port bytes and a universal address from a short list;
//! * NFS3: a procedure byte (GETATTR, READ, WRITE, SETATTR of the size,
//!   LOOKUP, CREATE, REMOVE, READDIRPLUS) with a filehandle and a name;
//! * ADVANCE: the clock moves on by a lease.
//!
//! A run fails on a panic (the server's or the harness's) and when a
//! structured NLM call's reply does not decode as its result with the
//! cookie sent. The input reads as zeros once it runs out.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use proto::nfs3::*;
use proto::nlm::*;
use proto::nsm::*;
use proto::portmap::*;
use rpc::{Auth, Call, Reply, Service};
use server::nfs4::inproc::InProcess;
use tokio::runtime::Builder;
use vfs::mem::MemFs;
use xdr::{Decoder, Encoder, Pack, Unpack};

use crate::run::{fs_clock, Input, FS_LIMITS, LEASE};

/// Step kinds.
pub mod step {
    pub const RAW: u8 = 0;
    pub const NLM: u8 = 1;
    pub const NSM: u8 = 2;
    pub const PORTMAP: u8 = 3;
    pub const NFS3: u8 = 4;
    pub const ADVANCE: u8 = 5;
}
const STEPS: u8 = 6;
/// Most steps one input runs.
pub const MAX_STEPS: usize = 48;

const PROGRAMS: [u32; 6] = [
    NFS_PROGRAM_NUMBER,
    proto::mount::MOUNT_PROGRAM,
    NLM_PROG,
    SM_PROG,
    PMAP_PROG,
    12345,
];
const NFS_PROGRAM_NUMBER: u32 = 100003;
const HOSTS: [&[u8]; 4] = [b"guest-a", b"guest-b", b"", b"\xffodd"];
const OFFSETS: [u64; 6] = [0, 1, 100, 4096, u64::MAX - 1, u64::MAX];
const LENGTHS: [u64; 5] = [0, 1, 10, u64::MAX, 1 << 40];
const NAMES: [&str; 5] = ["a", "b", "..", "", "f1"];
const UADDRS: [&str; 5] = [
    "127.0.0.1.8.1",
    "0.0.0.0.0.111",
    "",
    "::1.2.3",
    "1.2.3.4.5.6.7",
];

/// Entry point of the `nfs3_run` target.
pub fn nfs3_run(data: &[u8]) {
    // A runtime per input: tasks the lock manager leaves behind (callback
    // retries) go with it.
    let rt = Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(run(data));
}

struct World {
    h: InProcess,
    programs: rpc::Programs,
    fhs: Vec<Bytes>,
    xid: u32,
}

impl World {
    async fn call(&mut self, prog: u32, vers: u32, proc_: u32, args: Bytes) -> Reply {
        self.xid = self.xid.wrapping_add(1);
        let call = Call {
            xid: self.xid,
            prog,
            vers,
            proc_,
            auth: Auth::sys(0, 0, Vec::new(), "fuzz"),
            args: Decoder::new(args),
            conn: self.h.conn.clone(),
        };
        self.programs.call(call).await
    }

    async fn typed<A: Pack>(&mut self, prog: u32, vers: u32, proc_: u32, a: &A) -> Reply {
        self.call(prog, vers, proc_, xdr::to_bytes(a)).await
    }
}

fn results(r: Reply) -> Option<Decoder> {
    match r.in_memory() {
        Reply::Success(chunks) => {
            let mut v = Vec::new();
            for c in chunks {
                v.extend_from_slice(&c);
            }
            Some(Decoder::new(Bytes::from(v)))
        }
        _ => None,
    }
}

async fn run(data: &[u8]) {
    let fs = Arc::new(MemFs::new(FS_LIMITS, fs_clock()));
    let h = InProcess::new(fs, LEASE);
    let srv = h.srv.clone();
    // Callbacks go to port 0 of loopback: refused at once.
    let nlm =
        server::v3::nlm::Nlm::new(srv.clone(), Arc::new(server::v3::nsm::Nsm::in_memory()), 0);
    nlm.start();
    let pm = server::v3::portmap::Portmap::new(Vec::new());
    use server::observe::stats::{counted, Program};
    let stats = &srv.stats;
    let nfs = server::run::NfsVersions {
        v3: counted(
            server::v3::nfs3::Nfs3Service(srv.clone()),
            stats,
            Program::Nfs3,
        ),
        v4: server::nfs4::Nfs4Service(srv.clone()),
    };
    let programs = rpc::Programs::new()
        .add(NFS_PROGRAM_NUMBER, NFS_V3, 4, Arc::new(nfs))
        .add(
            proto::mount::MOUNT_PROGRAM,
            3,
            3,
            counted(
                server::v3::mount::MountService::new(srv.clone()),
                stats,
                Program::Mount,
            ),
        )
        .add(
            NLM_PROG,
            NLM4_VERS,
            NLM4_VERS,
            counted(
                server::v3::nlm::NlmService(nlm.clone()),
                stats,
                Program::Nlm,
            ),
        )
        .add(
            SM_PROG,
            SM_VERS,
            SM_VERS,
            counted(
                server::v3::nsm::service::NsmService(nlm),
                stats,
                Program::Nsm,
            ),
        )
        .add(
            PMAP_PROG,
            PMAP_VERS,
            RPCBVERS4,
            Arc::new(server::v3::portmap::PortmapService(pm)),
        );
    let mut w = World {
        h,
        programs,
        fhs: Vec::new(),
        xid: 0,
    };
    setup(&mut w).await;
    let mut inp = Input::new(data);
    for _ in 0..MAX_STEPS {
        if inp.is_empty() {
            break;
        }
        match inp.u8() % STEPS {
            step::RAW => {
                let prog = inp.pick(&PROGRAMS);
                let vers = u32::from(inp.u8() % 6);
                let proc_ = u32::from(inp.u8() % 32);
                let n = usize::from(inp.u8());
                let args = Bytes::copy_from_slice(inp.bytes(n));
                w.call(prog, vers, proc_, args).await;
            }
            step::NLM => nlm_step(&mut w, &mut inp).await,
            step::NSM => {
                let proc_ = u32::from(inp.u8() % 8);
                let name = Bytes::from_static(inp.pick(&HOSTS));
                let a = StatChge {
                    mon_name: name,
                    state: 3,
                };
                w.typed(SM_PROG, SM_VERS, proc_, &a).await;
            }
            step::PORTMAP => {
                let vers = 2 + u32::from(inp.u8() % 3);
                let proc_ = u32::from(inp.u8() % 14);
                let (prog, pv, port) = (
                    100_000 + u32::from(inp.u8()),
                    u32::from(inp.u8() % 5),
                    u32::from(inp.u16()),
                );
                let r = if vers == PMAP_VERS {
                    let m = Mapping {
                        prog,
                        vers: pv,
                        prot: if port % 2 == 0 {
                            IPPROTO_TCP
                        } else {
                            IPPROTO_UDP
                        },
                        port,
                    };
                    w.typed(PMAP_PROG, vers, proc_, &m).await
                } else {
                    let r = Rpcb {
                        r_prog: prog,
                        r_vers: pv,
                        r_netid: ["tcp", "udp", ""][(port % 3) as usize].into(),
                        r_addr: inp.pick(&UADDRS).into(),
                        r_owner: "fuzz".into(),
                    };
                    w.typed(PMAP_PROG, vers, proc_, &r).await
                };
                drop(r);
            }
            step::NFS3 => nfs3_step(&mut w, &mut inp).await,
            _ => w.h.advance(LEASE + Duration::from_secs(1)),
        }
    }
}

/// MNT "/" and two files.
async fn setup(w: &mut World) {
    let path = proto::mount::DirPath(Bytes::from_static(b"/"));
    let r = w
        .typed(
            proto::mount::MOUNT_PROGRAM,
            3,
            proto::mount::MOUNTPROC3_MNT,
            &path,
        )
        .await;
    let root = match results(r).map(|mut d| proto::mount::MountRes3::unpack(&mut d)) {
        Some(Ok(proto::mount::MountRes3::Ok(ok))) => ok.fhandle.0,
        other => panic!("MNT of / failed: {other:?}"),
    };
    w.fhs.push(root.clone());
    for name in ["f1", "f2"] {
        let a = Create3Args {
            where_: DirOpArgs3 {
                dir: NfsFh3 { data: root.clone() },
                name: Bytes::from_static(name.as_bytes()),
            },
            how: CreateHow3::Unchecked(Sattr3::default()),
        };
        let r = w.typed(NFS_PROGRAM_NUMBER, 3, NFSPROC3_CREATE, &a).await;
        match results(r).map(|mut d| Create3Res::unpack(&mut d)) {
            Some(Ok(Res3::Ok(ok))) => {
                if let Some(fh) = ok.obj {
                    w.fhs.push(fh.data);
                }
            }
            other => panic!("CREATE {name} failed: {other:?}"),
        }
    }
}

fn fh(w: &World, inp: &mut Input) -> Bytes {
    let i = usize::from(inp.u8() % 4);
    match w.fhs.get(i) {
        Some(f) => f.clone(),
        None => Bytes::from_static(&[7; 24]),
    }
}

async fn nlm_step(w: &mut World, inp: &mut Input<'_>) {
    const PROCS: [u32; 14] = [
        NLMPROC4_TEST,
        NLMPROC4_LOCK,
        NLMPROC4_CANCEL,
        NLMPROC4_UNLOCK,
        NLMPROC4_GRANTED,
        NLMPROC4_TEST_MSG,
        NLMPROC4_LOCK_MSG,
        NLMPROC4_UNLOCK_MSG,
        NLMPROC4_SHARE,
        NLMPROC4_UNSHARE,
        NLMPROC4_NM_LOCK,
        NLMPROC4_FREE_ALL,
        NLMPROC4_LOCK_RES,
        NLMPROC4_NULL,
    ];
    let proc_ = inp.pick(&PROCS);
    let name = Bytes::from_static(inp.pick(&HOSTS));
    let file = fh(w, inp);
    let svid = i32::from(inp.u8() % 4) - 1;
    let (off, len) = (inp.pick(&OFFSETS), inp.pick(&LENGTHS));
    let bits = inp.u8();
    let (block, exclusive, reclaim) = (bits & 1 != 0, bits & 2 != 0, bits & 4 != 0);
    let cookie = Netobj(Bytes::copy_from_slice(&[bits, 1, 2]));
    let alock = Nlm4Lock {
        caller_name: name.clone(),
        fh: Netobj(file.clone()),
        oh: Netobj(Bytes::copy_from_slice(&svid.to_be_bytes())),
        svid,
        l_offset: off,
        l_len: len,
    };
    let mut e = Encoder::new();
    match proc_ {
        NLMPROC4_LOCK | NLMPROC4_LOCK_MSG | NLMPROC4_NM_LOCK => Nlm4LockArgs {
            cookie: cookie.clone(),
            block,
            exclusive,
            alock,
            reclaim,
            state: 1,
        }
        .pack(&mut e),
        NLMPROC4_CANCEL => Nlm4CancArgs {
            cookie: cookie.clone(),
            block,
            exclusive,
            alock,
        }
        .pack(&mut e),
        NLMPROC4_UNLOCK | NLMPROC4_UNLOCK_MSG => Nlm4UnlockArgs {
            cookie: cookie.clone(),
            alock,
        }
        .pack(&mut e),
        NLMPROC4_SHARE | NLMPROC4_UNSHARE => Nlm4ShareArgs {
            cookie: cookie.clone(),
            share: Nlm4Share {
                caller_name: name,
                fh: Netobj(file),
                oh: Netobj(Bytes::from_static(b"o")),
                mode: [
                    Fsh4Mode::DenyNone,
                    Fsh4Mode::DenyRead,
                    Fsh4Mode::DenyWrite,
                    Fsh4Mode::DenyReadWrite,
                ][usize::from(bits >> 3 & 3)],
                access: [
                    Fsh4Access::None,
                    Fsh4Access::Read,
                    Fsh4Access::Write,
                    Fsh4Access::ReadWrite,
                ][usize::from(bits >> 5 & 3)],
            },
            reclaim,
        }
        .pack(&mut e),
        NLMPROC4_FREE_ALL => Nlm4Notify { name, state: 1 }.pack(&mut e),
        NLMPROC4_LOCK_RES => Nlm4Res {
            cookie: cookie.clone(),
            stat: Nlm4Stats::Granted,
        }
        .pack(&mut e),
        NLMPROC4_NULL => {}
        _ => Nlm4TestArgs {
            cookie: cookie.clone(),
            exclusive,
            alock,
        }
        .pack(&mut e),
    }
    let args: Vec<u8> = e.finish().iter().flat_map(|c| c.iter().copied()).collect();
    let r = w.call(NLM_PROG, NLM4_VERS, proc_, Bytes::from(args)).await;
    let Some(mut d) = results(r) else {
        panic!("NLM {} was not answered SUCCESS", nlmproc4_name(proc_));
    };
    // The synchronous procedures' results decode, with the cookie sent.
    let echoed = match proc_ {
        NLMPROC4_TEST => Nlm4TestRes::unpack(&mut d).map(|r| r.cookie),
        NLMPROC4_LOCK | NLMPROC4_CANCEL | NLMPROC4_UNLOCK | NLMPROC4_GRANTED | NLMPROC4_NM_LOCK => {
            Nlm4Res::unpack(&mut d).map(|r| r.cookie)
        }
        NLMPROC4_SHARE | NLMPROC4_UNSHARE => Nlm4ShareRes::unpack(&mut d).map(|r| r.cookie),
        _ => return,
    };
    match echoed {
        Ok(c) => assert_eq!(
            c,
            cookie,
            "NLM {} echoed another cookie",
            nlmproc4_name(proc_)
        ),
        Err(e) => panic!("NLM {} result does not decode: {e}", nlmproc4_name(proc_)),
    }
    assert_eq!(
        d.remaining(),
        0,
        "NLM {} result has trailing bytes",
        nlmproc4_name(proc_)
    );
}

async fn nfs3_step(w: &mut World, inp: &mut Input<'_>) {
    let which = inp.u8() % 8;
    let file = NfsFh3 { data: fh(w, inp) };
    let name = Bytes::from_static(inp.pick(&NAMES).as_bytes());
    let off = inp.pick(&OFFSETS);
    let dir = || DirOpArgs3 {
        dir: NfsFh3 {
            data: w.fhs[0].clone(),
        },
        name: name.clone(),
    };
    let r = match which {
        0 => {
            w.typed(NFS_PROGRAM_NUMBER, 3, NFSPROC3_GETATTR, &file)
                .await
        }
        1 => {
            let a = Read3Args {
                file,
                offset: off,
                count: 4096,
            };
            w.typed(NFS_PROGRAM_NUMBER, 3, NFSPROC3_READ, &a).await
        }
        2 => {
            let a = Write3Args {
                file,
                offset: off,
                count: 5,
                stable: StableHow::FileSync,
                data: Bytes::from_static(b"hello"),
            };
            w.typed(NFS_PROGRAM_NUMBER, 3, NFSPROC3_WRITE, &a).await
        }
        3 => {
            let a = SetAttr3Args {
                object: file,
                new_attributes: Sattr3 {
                    size: Some(off.min(1 << 20)),
                    ..Default::default()
                },
                guard: None,
            };
            w.typed(NFS_PROGRAM_NUMBER, 3, NFSPROC3_SETATTR, &a).await
        }
        4 => {
            w.typed(NFS_PROGRAM_NUMBER, 3, NFSPROC3_LOOKUP, &dir())
                .await
        }
        5 => {
            let a = Create3Args {
                where_: dir(),
                how: CreateHow3::Guarded(Sattr3::default()),
            };
            w.typed(NFS_PROGRAM_NUMBER, 3, NFSPROC3_CREATE, &a).await
        }
        6 => {
            w.typed(NFS_PROGRAM_NUMBER, 3, NFSPROC3_REMOVE, &dir())
                .await
        }
        _ => {
            let a = ReadDirPlus3Args {
                dir: file,
                cookie: 0,
                cookieverf: Default::default(),
                dircount: 512,
                maxcount: 4096,
            };
            w.typed(NFS_PROGRAM_NUMBER, 3, NFSPROC3_READDIRPLUS, &a)
                .await
        }
    };
    drop(r);
}
