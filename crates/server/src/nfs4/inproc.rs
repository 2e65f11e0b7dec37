//! COMPOUNDs run in process, without sockets: the server's own compound
//! loop over any backend (usually `vfs::mem`), a manual clock, and an
//! in-process connection whose back-channel calls the test can read.
//! Per-operation tests and the COMPOUND fuzzer drive the server this way
//! (models: nfs4j's OperationWRITETest, Buildbarn's nfs41_program_test).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use proto::nfs4::*;
use rpc::{Auth, Call, Connection, Reply};
use tokio::sync::mpsc;
use xdr::{Decoder, Encoder, Pack, Unpack};

use super::compound;
use super::filehandle::FhKey;
use super::state::clock::{Clock, ManualClock};
use super::{Nfs4Config, Nfs4Server};
use crate::export::{Export, ExportRules};

/// A server and the connection a test speaks on.
pub struct InProcess {
    pub srv: Arc<Nfs4Server>,
    pub clock: Arc<ManualClock>,
    pub conn: Arc<Connection>,
    /// What the server sent the client on the connection (callbacks).
    pub sent: mpsc::Receiver<Vec<Bytes>>,
    next_xid: AtomicU32,
}

/// Where the in-process client appears to connect from: a privileged port
/// of loopback, which every rule of an open export admits.
pub const PEER: &str = "127.0.0.1:700";

impl InProcess {
    /// A server with one export at "/" of `fs`, open to everyone
    /// (`ExportRules::open`), leases of `lease`.
    pub fn new(fs: Arc<dyn vfs::Vfs>, lease: Duration) -> InProcess {
        let exports = vec![Export {
            id: 0,
            path: "/".into(),
            vfs: fs,
            fsid: (0x4645_5252, 1),
            rules: ExportRules::open(),
        }];
        Self::with_exports(exports, lease)
    }

    pub fn with_exports(exports: Vec<Export>, lease: Duration) -> InProcess {
        let clock = Arc::new(ManualClock::default());
        let cfg = Nfs4Config {
            lease,
            ..Default::default()
        };
        let srv = Nfs4Server::new(
            cfg,
            FhKey::from_key([7; 32]),
            exports,
            clock.clone() as Arc<dyn Clock>,
        );
        let peer: SocketAddr = PEER.parse().unwrap_or(([127, 0, 0, 1], 700).into());
        let local: SocketAddr = ([127, 0, 0, 1], 2049).into();
        let (conn, sent) = Connection::in_process(peer, local);
        InProcess {
            srv,
            clock,
            conn,
            sent,
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
        let args: Bytes = e.finish().concat().into();
        match self.call(auth, args).await {
            Reply::Success(chunks) => {
                let mut d = Decoder::new(chunks.concat().into());
                Compound4Res::unpack(&mut d).unwrap_or_else(|e| panic!("undecodable reply: {e}"))
            }
            Reply::Error(e) => panic!("COMPOUND rejected: {e:?}"),
            Reply::Drop => panic!("COMPOUND dropped"),
        }
    }

    /// A client with a confirmed session (EXCHANGE_ID, CREATE_SESSION,
    /// RECLAIM_COMPLETE, all through the compound loop).
    pub async fn client(&self, name: &str) -> Session {
        self.client_as(name, Auth::sys(0, 0, Vec::new(), "inproc"))
            .await
    }

    pub async fn client_as(&self, name: &str, auth: Auth) -> Session {
        let eid = NfsArgOp4::ExchangeId(ExchangeId4Args {
            clientowner: ClientOwner4 {
                verifier: [1; 8],
                ownerid: Bytes::copy_from_slice(name.as_bytes()),
            },
            flags: 0,
            state_protect: StateProtect4A::None,
            client_impl_id: None,
        });
        let r = self.compound(&auth, &[eid]).await;
        let Some(NfsResOp4::ExchangeId(Res4::Ok(x))) = r.resarray.first() else {
            panic!("EXCHANGE_ID failed: {:?}", r.status);
        };
        let attrs = ChannelAttrs4 {
            headerpadsize: 0,
            maxrequestsize: 1 << 20,
            maxresponsesize: 1 << 20,
            maxresponsesize_cached: 64 << 10,
            maxoperations: 64,
            maxrequests: 8,
            rdma_ird: None,
        };
        let cs = NfsArgOp4::CreateSession(CreateSession4Args {
            clientid: x.clientid,
            sequence: x.sequenceid,
            flags: 0,
            fore_chan_attrs: attrs,
            back_chan_attrs: attrs,
            cb_program: 0x4000_0000,
            sec_parms: vec![CallbackSecParms4::AuthNone],
        });
        let r = self.compound(&auth, &[cs]).await;
        let Some(NfsResOp4::CreateSession(Res4::Ok(c))) = r.resarray.first() else {
            panic!("CREATE_SESSION failed: {:?}", r.status);
        };
        let mut s = Session {
            clientid: x.clientid,
            sessionid: c.sessionid,
            seqid: 0,
            auth,
        };
        let r = self
            .seq(
                &mut s,
                &[NfsArgOp4::ReclaimComplete(ReclaimComplete4Args {
                    one_fs: false,
                })],
            )
            .await;
        assert_eq!(r.status, NfsStat4::Nfs4Ok, "RECLAIM_COMPLETE");
        s
    }

    /// Runs `ops` after a SEQUENCE on slot 0 of `s`.
    pub async fn seq(&self, s: &mut Session, ops: &[NfsArgOp4]) -> Compound4Res {
        s.seqid = s.seqid.wrapping_add(1);
        let mut all = Vec::with_capacity(ops.len() + 1);
        all.push(NfsArgOp4::Sequence(Sequence4Args {
            sessionid: s.sessionid,
            sequenceid: s.seqid,
            slotid: 0,
            highest_slotid: 0,
            cachethis: false,
        }));
        all.extend_from_slice(ops);
        self.compound(&s.auth.clone(), &all).await
    }

    /// Moves the manual clock on.
    pub fn advance(&self, d: Duration) {
        self.clock.advance(d);
    }
}

/// A client's session, as [`InProcess::client`] set it up.
#[derive(Debug, Clone)]
pub struct Session {
    pub clientid: ClientId4,
    pub sessionid: SessionId4,
    /// Sequence id of slot 0's last request.
    pub seqid: u32,
    pub auth: Auth,
}
