//! The entry point and the world it runs: the in-process server under
//! test, what earlier results returned, the steps of a program and the
//! checks on every reply.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use proto::nfs4::*;
use rpc::{Auth, Reply};
use server::nfs4::inproc::InProcess;
use tokio::runtime::{Builder, Runtime};
use vfs::mem::{Limits, MemFs};
use xdr::{Encoder, Pack};

use super::args::{auth, auth_by};
use super::program::{step, Input, MAX_OPS, MAX_STEPS, STEPS};

/// The server's lease.
pub const LEASE: Duration = Duration::from_secs(90);
/// Filehandles and stateids remembered for later operations.
const REMEMBERED: usize = 16;

/// What the in-memory file system may hold: small, so that running out is
/// reached and nothing an input does allocates much.
pub const FS_LIMITS: Limits = Limits {
    max_bytes: 16 << 20,
    max_inodes: 10_000,
    max_links: 1_000,
};

/// Entry point of the `compound_run` target.
pub fn compound_run(data: &[u8]) {
    run_program(data, false)
}

/// Entry point of the `pnfs_run` target: the same programs against a
/// server whose export is a pNFS metadata server (flexible-file layouts,
/// two mirrors) over a Ferrite data server on loopback.
pub fn pnfs_run(data: &[u8]) {
    run_program(data, true)
}

fn run_program(data: &[u8], pnfs: bool) {
    // One input at a time in a process (tests replay from several
    // threads): the runtime, its task count and the data server's
    // directory are shared.
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
    let rt = runtime();
    let mut w = rt.block_on(World::new(pnfs));
    let mut inp = Input::new(data);
    for _ in 0..MAX_STEPS {
        if inp.is_empty() {
            break;
        }
        rt.block_on(w.step(&mut inp));
    }
    // Close the connection: callbacks waiting for an answer fail, and
    // every task the server spawned must then end.
    // With data servers, work the server started (fencing, probing, its
    // own I/O) may still be talking to them: their answers take real
    // time, and each ends by closing the connections it made.
    w.h.conn.close();
    let pnfs = w.pnfs.clone();
    rt.block_on(async {
        for _ in 0..10_000 {
            if rt.metrics().num_alive_tasks() == 0 {
                break;
            }
            match &pnfs {
                Some(p) => {
                    p.disconnect().await;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                None => tokio::task::yield_now().await,
            }
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
        ignore_sigpipe();
        Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime")
    })
}

/// A write to a connection its peer closed must fail with EPIPE, not
/// kill the process: what Rust's `main` arranges for every binary, and
/// what a libFuzzer target (whose `main` is libFuzzer's) must do itself.
/// Without it, `pnfs_run`'s metadata server writing to its loopback data
/// server as that connection closed ended a run with SIGPIPE.
fn ignore_sigpipe() {
    // SAFETY: setting a signal's disposition to SIG_IGN has no
    // preconditions and installs no handler code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

pub(super) fn trace() -> bool {
    static T: OnceLock<bool> = OnceLock::new();
    *T.get_or_init(|| std::env::var_os("FERRITE_FUZZ_TRACE").is_some())
}

/// A session the harness knows, with the last sequence id of each slot.
pub(super) struct SessionRec {
    pub(super) id: SessionId4,
    pub(super) clientid: ClientId4,
    pub(super) slots: Vec<u32>,
}

/// The server under test and what earlier results returned.
pub(super) struct World {
    pub(super) h: InProcess,
    /// The export's pNFS side (the `pnfs_run` target).
    pub(super) pnfs: Option<Arc<server::pnfs::Pnfs>>,
    pub(super) sessions: Vec<SessionRec>,
    /// Client ids from EXCHANGE_ID, with the sequence id CREATE_SESSION
    /// takes next.
    pub(super) clients: Vec<(ClientId4, SequenceId4)>,
    /// NFSv4.0 client ids from SETCLIENTID, with their confirm verifiers.
    pub(super) clients40: Vec<(ClientId4, Verifier4)>,
    pub(super) fhs: Vec<NfsFh4>,
    pub(super) sids: Vec<StateId4>,
    /// The client of the session the COMPOUND being built runs in.
    pub(super) cur_client: ClientId4,
    /// The client id a CREATE_SESSION of the COMPOUND being built names.
    pub(super) creating: Option<ClientId4>,
    /// Results seen, for replacing remembered items in turn.
    pub(super) seen: usize,
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
    async fn new(with_pnfs: bool) -> World {
        let fs: Arc<dyn vfs::Vfs> = Arc::new(MemFs::new(FS_LIMITS, fs_clock()));
        let (h, pnfs) = if with_pnfs {
            let (ds, dir) = data_server();
            // Each input starts with no data file left by the one before.
            if let Ok(rd) = std::fs::read_dir(&dir) {
                for e in rd.flatten() {
                    let _ = std::fs::remove_file(e.path());
                }
            }
            let cfg = server::pnfs::PnfsConfig {
                servers: vec![ds.clone(), ds],
                stripe_unit: 64 << 10,
                mirrors: 1,
            };
            let p = Arc::new(server::pnfs::Pnfs::new(
                0,
                fs.clone(),
                &cfg,
                tokio::runtime::Handle::current(),
            ));
            let export = server::exports::export::Export {
                id: 0,
                path: "/".into(),
                vfs: Arc::new(server::pnfs::vfs::DataVfs::new(fs, p.clone())),
                fsid: (0x4645_5252, 1),
                rules: server::exports::export::ExportRules::open(),
                log: None,
                delegations: false,
                shared_locks: false,
                pnfs: Some(p.clone()),
            };
            (InProcess::with_exports(vec![export], LEASE), Some(p))
        } else {
            (InProcess::new(fs, LEASE), None)
        };
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
            clients40: Vec::new(),
            fhs: Vec::new(),
            sids: Vec::new(),
            cur_client: s.clientid,
            creating: None,
            seen: 0,
            h,
            pnfs,
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
                // NFSv4.0's own operations go in NFSv4.0 COMPOUNDs.
                let minor = match ops[0] {
                    NfsArgOp4::SetClientId(_)
                    | NfsArgOp4::SetClientIdConfirm(_)
                    | NfsArgOp4::Renew(_) => 0,
                    _ => 1,
                };
                self.send(&auth, minor, &ops, &[], 0).await;
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
            step::NEW_CLIENT if inp.u8() & 1 == 1 => {
                // An NFSv4.0 client: SETCLIENTID, SETCLIENTID_CONFIRM, its
                // callback path this connection; its COMPOUNDs are then
                // the generated ones of minor version 0.
                let auth = auth(inp);
                let set = self.setclientid(inp);
                self.send(&auth, 0, &[set], &[], 0).await;
                let Some(&(clientid, verf)) = self.clients40.last() else {
                    return;
                };
                let confirm = NfsArgOp4::SetClientIdConfirm(SetClientIdConfirm4Args {
                    clientid,
                    setclientid_confirm: verf,
                });
                self.send(&auth, 0, &[confirm], &[], 0).await;
                if self.h.callbacks40(clientid) {
                    self.cur_client = clientid;
                }
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
                NfsResOp4::LayoutGet(LayoutGet4Res::Ok(ok)) => self.add_sid(ok.stateid),
                NfsResOp4::LayoutReturn(Res4::Ok(Some(s))) => self.add_sid(*s),
                NfsResOp4::SetClientId(SetClientId4Res::Ok(ok)) => {
                    let rec = (ok.clientid, ok.setclientid_confirm);
                    match self.clients40.iter().position(|c| c.0 == ok.clientid) {
                        Some(i) => self.clients40[i] = rec,
                        None if self.clients40.len() < 8 => self.clients40.push(rec),
                        None => {
                            let i = self.seen % self.clients40.len();
                            self.clients40[i] = rec;
                        }
                    }
                }
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
}

/// Puts `v` into a list of at most [`REMEMBERED`], replacing in turn.
fn remember<T>(list: &mut Vec<T>, v: T, seen: usize) {
    if list.len() < REMEMBERED {
        list.push(v);
    } else {
        list[seen % REMEMBERED] = v;
    }
}

/// The `pnfs_run` target's data server: a Ferrite serving a directory of
/// its own on loopback, started once per process on a thread of its own
/// (never stopped); its address as a data server, and its directory.
fn data_server() -> (server::pnfs::dataserver::DataServerAddr, std::path::PathBuf) {
    static DS: OnceLock<(std::net::SocketAddr, std::path::PathBuf)> = OnceLock::new();
    let (addr, dir) = DS.get_or_init(|| {
        ignore_sigpipe();
        let base = std::env::temp_dir().join(format!("ferrite-fuzz-ds-{}", std::process::id()));
        let (dir, state) = (base.join("export"), base.join("state"));
        std::fs::create_dir_all(&dir).expect("data server directory");
        std::fs::create_dir_all(&state).expect("data server state directory");
        let (tx, rx) = std::sync::mpsc::channel();
        let d = dir.clone();
        std::thread::spawn(move || {
            let rt = Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("data server runtime");
            rt.block_on(async move {
                let cfg = server::config::ServerConfig::new(
                    "127.0.0.1:0".parse().expect("address"),
                    state,
                    vec![server::config::ExportConfig::open("/", d)],
                );
                let r = server::run::start(cfg).await.expect("data server starts");
                let _ = tx.send(r.addr);
                std::future::pending::<()>().await;
            });
        });
        (rx.recv().expect("data server address"), dir)
    });
    (
        server::pnfs::dataserver::DataServerAddr {
            addr: *addr,
            path: "/".into(),
        },
        dir.clone(),
    )
}
