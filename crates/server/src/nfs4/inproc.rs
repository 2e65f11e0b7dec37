//! COMPOUNDs run in process, without sockets: the server's own compound
//! loop over any backend (usually `vfs::mem`), a manual clock, and an
//! in-process connection whose back-channel calls the test can read.
//! Per-operation tests and the COMPOUND fuzzer drive the server this way
//! (models: nfs4j's OperationWRITETest, Buildbarn's nfs41_program_test).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use proto::nfs4::*;
use rpc::{Auth, Call, Connection, Reply};
use tokio::sync::mpsc;
use xdr::{Decoder, Encoder, Pack, Unpack};

use super::compound;
use crate::exports::export::{Export, ExportRules};
use crate::exports::filehandle::FhKey;
use crate::instance::{Nfs4Config, Recovery, Server};
use state::clock::{Clock, ManualClock};

/// A server and the connection a test speaks on.
pub struct InProcess {
    pub srv: Arc<Server>,
    pub clock: Arc<ManualClock>,
    pub conn: Arc<Connection>,
    /// What the server sent the client on the connection (callbacks).
    /// Read them with [`InProcess::next_back_call`].
    pub sent: tokio::sync::Mutex<mpsc::Receiver<Vec<Bytes>>>,
    next_xid: AtomicU32,
}

/// Where the in-process client appears to connect from: a privileged port
/// of loopback, which every rule of an open export admits.
pub const PEER: &str = "127.0.0.1:700";

/// Export 0 at "/" of `fs`, open to everyone.
fn open_root(fs: Arc<dyn vfs::Vfs>) -> Export {
    Export {
        id: 0,
        path: "/".into(),
        vfs: fs,
        fsid: (0x4645_5252, 1),
        rules: ExportRules::open(),
        log: None,
        delegations: false,
        shared_locks: true,
        pnfs: None,
    }
}

impl InProcess {
    /// A server with one export at "/" of `fs`, open to everyone
    /// (`ExportRules::open`), leases of `lease`.
    pub fn new(fs: Arc<dyn vfs::Vfs>, lease: Duration) -> InProcess {
        Self::with_exports(vec![open_root(fs)], lease)
    }

    pub fn with_exports(exports: Vec<Export>, lease: Duration) -> InProcess {
        Self::recovering(exports, lease, Recovery::none())
    }

    /// [`InProcess::new`] just after a restart: in its grace period (of a
    /// lease) for the clients named in `recorded` (their owners).
    pub fn after_restart(fs: Arc<dyn vfs::Vfs>, lease: Duration, recorded: &[&str]) -> InProcess {
        let exports = vec![open_root(fs)];
        let mut recovery = Recovery::none();
        recovery.previous = recorded
            .iter()
            .map(|n| Bytes::copy_from_slice(n.as_bytes()))
            .collect();
        Self::recovering(exports, lease, recovery)
    }

    fn recovering(exports: Vec<Export>, lease: Duration, recovery: Recovery) -> InProcess {
        let clock = Arc::new(ManualClock::default());
        let cfg = Nfs4Config {
            lease,
            ..Default::default()
        };
        let srv = Server::recovering(
            cfg,
            FhKey::from_key([7; 32]),
            exports,
            clock.clone() as Arc<dyn Clock>,
            recovery,
        );
        super::install(&srv);
        crate::pnfs::fence::install(&srv);
        let peer: SocketAddr = PEER.parse().unwrap_or(([127, 0, 0, 1], 700).into());
        let local: SocketAddr = ([127, 0, 0, 1], 2049).into();
        let (conn, sent) = Connection::in_process(peer, local);
        InProcess {
            srv,
            clock,
            conn,
            sent: tokio::sync::Mutex::new(sent),
            next_xid: AtomicU32::new(1),
        }
    }

    /// Runs one COMPOUND whose arguments (after the RPC header) are `args`,
    /// exactly as the RPC layer would hand it over.
    pub async fn call(&self, auth: &Auth, args: Bytes) -> Reply {
        let call = Call {
            xid: self.next_xid.fetch_add(1, Ordering::Relaxed),
            prog: NFS_PROGRAM,
            vers: NFS_V4,
            proc_: super::NFSPROC4_COMPOUND,
            auth: auth.clone(),
            args: Decoder::new(args),
            conn: self.conn.clone(),
        };
        compound::run(self.srv.clone(), call).await
    }

    /// Runs `ops` as one COMPOUND (minor version 1) and decodes the reply.
    pub async fn compound(&self, auth: &Auth, ops: &[NfsArgOp4]) -> Compound4Res {
        self.compound_v(auth, 1, ops).await
    }

    pub async fn compound_v(
        &self,
        auth: &Auth,
        minorversion: u32,
        ops: &[NfsArgOp4],
    ) -> Compound4Res {
        let args = encode_compound(minorversion, ops);
        match self.call(auth, args).await.in_memory() {
            Reply::Success(chunks) => {
                let mut d = Decoder::new(chunks.concat().into());
                Compound4Res::unpack(&mut d).unwrap_or_else(|e| panic!("undecodable reply: {e}"))
            }
            Reply::Error(e) => panic!("COMPOUND rejected: {e:?}"),
            Reply::Drop => panic!("COMPOUND dropped"),
            Reply::Pieces(_) => unreachable!("in_memory leaves no pieces"),
        }
    }

    /// A client with a confirmed session (EXCHANGE_ID, CREATE_SESSION,
    /// RECLAIM_COMPLETE, all through the compound loop).
    pub async fn client(&self, name: &str) -> Session {
        self.client_with(name, ClientOpts::default()).await
    }

    pub async fn client_as(&self, name: &str, auth: Auth) -> Session {
        self.client_with(
            name,
            ClientOpts {
                auth,
                ..Default::default()
            },
        )
        .await
    }

    /// A client set up as `opts` says: EXCHANGE_ID (verifier `[1; 8]`),
    /// CREATE_SESSION, the back channel's CB_NULL answered if one was
    /// asked for, and RECLAIM_COMPLETE unless left out.
    pub async fn client_with(&self, name: &str, opts: ClientOpts) -> Session {
        let auth = opts.auth.clone();
        let v = opts.minorversion;
        let eid = NfsArgOp4::ExchangeId(ExchangeId4Args {
            clientowner: ClientOwner4 {
                verifier: [1; 8],
                ownerid: Bytes::copy_from_slice(name.as_bytes()),
            },
            flags: 0,
            state_protect: StateProtect4A::None,
            client_impl_id: None,
        });
        let r = self.compound_v(&auth, v, &[eid]).await;
        let Some(NfsResOp4::ExchangeId(Res4::Ok(x))) = r.resarray.first() else {
            panic!("EXCHANGE_ID failed: {:?}", r.status);
        };
        let cs = NfsArgOp4::CreateSession(CreateSession4Args {
            clientid: x.clientid,
            sequence: x.sequenceid,
            flags: opts.flags,
            fore_chan_attrs: opts.fore,
            back_chan_attrs: ClientOpts::default().fore,
            cb_program: CB_PROGRAM,
            sec_parms: vec![CallbackSecParms4::AuthNone],
        });
        let r = self.compound_v(&auth, v, &[cs]).await;
        let Some(NfsResOp4::CreateSession(Res4::Ok(c))) = r.resarray.first() else {
            panic!("CREATE_SESSION failed: {:?}", r.status);
        };
        if c.flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN != 0 {
            let probe = self.next_back_call().await;
            assert_eq!(probe.header.proc_, 0, "CB_NULL first");
            self.answer(&probe, Vec::new());
        }
        let s = Session {
            clientid: x.clientid,
            sessionid: c.sessionid,
            seqids: Arc::new(Mutex::new(vec![0; c.fore_chan_attrs.maxrequests as usize])),
            auth,
            minorversion: v,
            fore: c.fore_chan_attrs,
        };
        if opts.reclaim_complete {
            let rc = NfsArgOp4::ReclaimComplete(ReclaimComplete4Args { one_fs: false });
            let r = self.seq(&s, &[rc]).await;
            assert_eq!(r.status, NfsStat4::Nfs4Ok, "RECLAIM_COMPLETE");
        }
        s
    }

    /// Runs `ops` after a SEQUENCE on slot 0 of `s`.
    pub async fn seq(&self, s: &Session, ops: &[NfsArgOp4]) -> Compound4Res {
        self.seq_slot(s, 0, false, ops).await
    }

    /// Runs `ops` after a SEQUENCE on `slot` of `s` with the slot's next
    /// sequence id, asking for the reply to be cached if `cachethis`. A
    /// SEQUENCE that fails leaves the slot as it was (RFC 8881 §18.46.3),
    /// so its sequence id is then taken back.
    pub async fn seq_slot(
        &self,
        s: &Session,
        slot: u32,
        cachethis: bool,
        ops: &[NfsArgOp4],
    ) -> Compound4Res {
        let sequenceid = s.next_seqid(slot);
        let all = s.with_sequence(slot, sequenceid, cachethis, ops);
        let r = self.compound_v(&s.auth, s.minorversion, &all).await;
        if let Some(NfsResOp4::Sequence(Res4::Err(_))) = r.resarray.first() {
            s.undo_seqid(slot);
        }
        r
    }

    /// Moves the manual clock on.
    pub fn advance(&self, d: Duration) {
        self.clock.advance(d);
    }

    /// Makes this connection NFSv4.0 client `clientid`'s callback path, as
    /// if the server had opened it to the address the client gave and
    /// CB_NULL had answered (`nfs4::callback::connect40`): its callbacks
    /// are then read with [`InProcess::next_back_call`]. False if the
    /// client is not a confirmed NFSv4.0 client.
    pub fn callbacks40(&self, clientid: ClientId4) -> bool {
        let Some(session) = self.srv.state().session40(clientid) else {
            return false;
        };
        let conn = super::session_io::CbConn::of(&self.conn);
        self.srv.state().bind_back(&session, &conn);
        true
    }

    /// The next call the server sent on the connection (CB_NULL, a
    /// CB_COMPOUND). Panics if none comes within 30 s (it takes
    /// microseconds; the rest is room for a busy machine): a callback that
    /// should have been sent was not.
    pub async fn next_back_call(&self) -> BackCall {
        let mut rx = self.sent.lock().await;
        let record = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .unwrap_or_else(|_| panic!("no back-channel call"))
            .unwrap_or_else(|| panic!("connection gone"));
        BackCall::parse(record)
    }

    /// A call the server sent and nobody has read yet, once tasks the
    /// server spawned have had their turn; `None` if there is none.
    pub async fn try_back_call(&self) -> Option<BackCall> {
        for _ in 0..32 {
            tokio::task::yield_now().await;
        }
        let mut rx = self.sent.lock().await;
        rx.try_recv().ok().map(BackCall::parse)
    }

    /// Answers a back-channel call (RFC 5531 §9: accepted, success) with
    /// `results`.
    pub fn answer(&self, call: &BackCall, results: Vec<Bytes>) -> bool {
        let mut e = Encoder::new();
        for w in [call.xid, rpc::REPLY, rpc::MSG_ACCEPTED, 0, 0, 0] {
            e.u32(w);
        }
        let mut msg = e.finish().concat();
        for r in results {
            msg.extend_from_slice(&r);
        }
        self.conn.deliver(msg.into())
    }
}

/// `COMPOUND4args` (RFC 8881 §16.2.1) with an empty tag, as
/// [`InProcess::call`] takes them.
pub fn encode_compound(minorversion: u32, ops: &[NfsArgOp4]) -> Bytes {
    let mut e = Encoder::new();
    Compound4ArgsHeader {
        tag: Bytes::new(),
        minorversion,
    }
    .pack(&mut e);
    e.u32(ops.len() as u32);
    for op in ops {
        op.pack(&mut e);
    }
    e.finish().concat().into()
}

/// The callback program number [`InProcess::client_with`] gives the server.
pub const CB_PROGRAM: u32 = 0x4000_0000;

/// How [`InProcess::client_with`] sets a client up.
#[derive(Debug, Clone)]
pub struct ClientOpts {
    pub auth: Auth,
    /// Fore channel attributes asked for (64 ops, 8 slots, 1 MiB).
    pub fore: ChannelAttrs4,
    /// CREATE_SESSION flags (e.g. CREATE_SESSION4_FLAG_CONN_BACK_CHAN).
    pub flags: u32,
    /// Whether to send RECLAIM_COMPLETE; without it the client may only
    /// reclaim (RFC 8881 §18.51.3).
    pub reclaim_complete: bool,
    pub minorversion: u32,
}

impl Default for ClientOpts {
    fn default() -> Self {
        ClientOpts {
            auth: Auth::sys(0, 0, Vec::new(), "inproc"),
            fore: ChannelAttrs4 {
                headerpadsize: 0,
                maxrequestsize: 1 << 20,
                maxresponsesize: 1 << 20,
                maxresponsesize_cached: 64 << 10,
                maxoperations: 64,
                maxrequests: 8,
                rdma_ird: None,
            },
            flags: 0,
            reclaim_complete: true,
            minorversion: 1,
        }
    }
}

/// A call the server made on the back channel.
#[derive(Debug, Clone)]
pub struct BackCall {
    pub xid: u32,
    pub header: rpc::CallHeader,
    /// The procedure's arguments.
    pub args: Bytes,
}

impl BackCall {
    fn parse(record: Vec<Bytes>) -> BackCall {
        let all: Bytes = record.concat().into();
        // The record mark, then the message (RFC 5531 §11).
        let mut d = Decoder::new(all.slice(4..));
        let xid = d.u32().unwrap_or_else(|e| panic!("bad call: {e}"));
        assert_eq!(d.u32().ok(), Some(rpc::CALL), "not a call");
        let header = rpc::CallHeader::unpack(&mut d).unwrap_or_else(|e| panic!("bad call: {e}"));
        BackCall {
            xid,
            header,
            args: d.take_rest(),
        }
    }

    /// The arguments of a CB_COMPOUND (RFC 8881 §20).
    pub fn cb_compound(&self) -> CbCompound4Args {
        assert_eq!(self.header.proc_, 1, "not CB_COMPOUND");
        xdr::from_bytes(self.args.clone()).unwrap_or_else(|e| panic!("bad CB_COMPOUND: {e}"))
    }
}

/// A client's session, as [`InProcess::client`] set it up. Its clones
/// are the same session: they share the slots' sequence ids.
#[derive(Debug, Clone)]
pub struct Session {
    pub clientid: ClientId4,
    pub sessionid: SessionId4,
    /// Sequence id of each slot's last request, by slot id.
    seqids: Arc<Mutex<Vec<u32>>>,
    pub auth: Auth,
    /// The minor version its compounds are sent with.
    pub minorversion: u32,
    /// The fore channel CREATE_SESSION granted.
    pub fore: ChannelAttrs4,
}

impl Session {
    fn slots(&self) -> std::sync::MutexGuard<'_, Vec<u32>> {
        self.seqids.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Moves `slot` on to its next sequence id and returns it.
    pub fn next_seqid(&self, slot: u32) -> u32 {
        let mut ids = self.slots();
        let i = slot as usize;
        if ids.len() <= i {
            ids.resize(i + 1, 0);
        }
        ids[i] = ids[i].wrapping_add(1);
        ids[i]
    }

    /// Takes back the sequence id [`Session::next_seqid`] gave `slot`.
    pub fn undo_seqid(&self, slot: u32) {
        if let Some(id) = self.slots().get_mut(slot as usize) {
            *id = id.wrapping_sub(1);
        }
    }

    /// The sequence id of each slot's last request, by slot id.
    pub fn seqids(&self) -> Vec<u32> {
        self.slots().clone()
    }

    /// `ops` after a SEQUENCE on `slot` with `sequenceid`, as sent.
    pub fn with_sequence(
        &self,
        slot: u32,
        sequenceid: u32,
        cachethis: bool,
        ops: &[NfsArgOp4],
    ) -> Vec<NfsArgOp4> {
        let mut all = Vec::with_capacity(ops.len() + 1);
        all.push(NfsArgOp4::Sequence(Sequence4Args {
            sessionid: self.sessionid,
            sequenceid,
            slotid: slot,
            highest_slotid: self.slots().len().saturating_sub(1) as u32,
            cachethis,
        }));
        all.extend_from_slice(ops);
        all
    }
}
