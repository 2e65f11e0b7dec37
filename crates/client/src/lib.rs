//! Ferrite's userspace NFSv4.1/4.2 client (RFC 8881, RFC 7862), and
//! NFSv4.0 (RFC 7530) with `minorversion` 0 ([`v40`]).
//!
//! [`Client::connect`] opens one TCP connection, establishes a client ID
//! and a session with a back channel on the same connection (RFC 8881
//! §2.10.3.1), and then sends COMPOUNDs under SEQUENCE with a real slot
//! table ([`slots`]); over NFSv4.0 a client ID from SETCLIENTID and no
//! session, each owner's sequence ids filled in. The typed helpers in [`ops`] are thin wrappers that
//! build one COMPOUND each. Callbacks (CB_SEQUENCE, CB_RECALL) are answered
//! by [`callback`].
//!
//! The client talks to servers only over the wire: it depends on the wire
//! types (`proto`) and the RPC transport (`rpc`), never on server code.

pub mod callback;
mod error;
pub mod observe;
pub mod ops;
pub mod portmap;
pub mod slots;
pub mod v3;
pub mod v40;

/// Test support: serves `programs` on a fresh loopback port for the rest of
/// the test process and returns the port's address.
#[cfg(test)]
pub(crate) async fn serve_loopback(programs: rpc::Programs) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        rpc::serve(listener, Arc::new(programs), rpc::ConnConfig::default(), rx).await;
        drop(tx);
    });
    addr
}

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use proto::nfs4::*;
use rpc::{Connection, OpaqueAuth};
use tracing::debug;
use xdr::{Decoder, Encoder, Pack, Unpack};

pub use error::{Error, Result};
pub use ops::{DirEntry, Open, OpenCreate, OpenOpts, WriteResult};
pub use slots::{Slot, SlotOutcome, SlotStats, SlotTable};

/// NFSPROC4_NULL and NFSPROC4_COMPOUND (RFC 8881 §16.1, §16.2).
pub const NFSPROC4_NULL: u32 = 0;
pub const NFSPROC4_COMPOUND: u32 = 1;

/// The callback program number this client registers (RFC 8881 §18.36).
pub const CB_PROGRAM: u32 = 0x4000_0000;

/// How a client connects and behaves.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// The RPC credential sent with every call (normally AUTH_SYS).
    pub auth: rpc::Auth,
    /// `co_ownerid` of the client owner (RFC 8881 §2.4): unique per client.
    pub owner: Bytes,
    /// `co_verifier`; `None` picks one from the clock (a new incarnation).
    pub verifier: Option<Verifier4>,
    /// Fore-channel slots asked for (`ca_maxrequests`).
    pub slots: u32,
    /// NFSv4 minor version: 1 or 2, or 0 for NFSv4.0 (RFC 7530: no
    /// session; [`v40`]).
    pub minorversion: u32,
    /// How long to keep retrying a COMPOUND answered with NFS4ERR_DELAY
    /// before giving up with that error. Zero: never retry.
    pub delay_retry: Duration,
    /// Connection limits.
    pub conn: rpc::ConnConfig,
    /// Send RECLAIM_COMPLETE once connected. Off for a client that first
    /// reclaims its state after a server restart (RFC 8881 §8.4.2.1),
    /// then sends it itself.
    pub reclaim_complete: bool,
    /// Ask for a persistent session (CREATE_SESSION4_FLAG_PERSIST, RFC
    /// 8881 §2.10.6.5); [`Client::session_flags`] says if it was granted.
    pub persist: bool,
    /// Give a recalled delegation back (DELEGRETURN) at once, as a client
    /// should; off to play a client that keeps it (tests of revocation).
    pub return_delegations: bool,
    /// Use RPCSEC_GSS with Kerberos instead of `auth` (RFC 2203).
    pub gss: Option<GssOptions>,
    /// Run RPC inside TLS (RFC 9289): probe, handshake, then the session.
    pub tls: Option<rpc::tls::TlsClient>,
}

/// RPCSEC_GSS with Kerberos V5: whom to authenticate to and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GssOptions {
    /// The server's service name, GSS_C_NT_HOSTBASED_SERVICE style:
    /// `nfs@server.example` (its key: `nfs/server.example@REALM`).
    pub target: String,
    /// The credential cache holding the user's ticket; none: the default
    /// (KRB5CCNAME).
    pub ccache: Option<String>,
    /// krb5, krb5i or krb5p.
    pub service: rpc::gss::GssService,
}

/// A Kerberos initiator towards `g.target` (reading the credential cache
/// on the blocking pool).
#[cfg(feature = "kerberos")]
async fn initiator(g: &GssOptions) -> Result<Box<dyn rpc::gss::mech::MechContext>> {
    let (target, ccache) = (g.target.clone(), g.ccache.clone());
    tokio::task::spawn_blocking(move || rpc::gss::krb5::initiator(&target, ccache.as_deref()))
        .await
        .map_err(|e| Error::Unexpected(format!("GSS: {e}")))?
        .map_err(|e| Error::Rpc(rpc::CallError::Security(e.to_string())))
}

#[cfg(not(feature = "kerberos"))]
async fn initiator(_: &GssOptions) -> Result<Box<dyn rpc::gss::mech::MechContext>> {
    Err(Error::Rpc(rpc::CallError::Security(
        "this build has no Kerberos (the `kerberos` feature)".into(),
    )))
}

/// The security of a client's calls: a plain credential, or an
/// RPCSEC_GSS context.
#[derive(Clone)]
pub enum Sec {
    Plain(OpaqueAuth),
    Gss(Arc<rpc::gss::ClientContext>),
}

impl Sec {
    /// Makes the context for `opts` over `conn` if it asks for GSS.
    pub async fn establish(conn: &Connection, opts: &ClientOptions) -> Result<Sec> {
        let Some(g) = &opts.gss else {
            return Ok(Sec::Plain(opts.auth.to_opaque()));
        };
        let mech = initiator(g).await?;
        let ctx =
            rpc::gss::ClientContext::establish(conn, NFS_PROGRAM, NFS_V4, mech, g.service).await?;
        Ok(Sec::Gss(Arc::new(ctx)))
    }

    /// One call with this security.
    pub async fn call(
        &self,
        conn: &Connection,
        prog: u32,
        vers: u32,
        proc_: u32,
        args: Vec<Bytes>,
    ) -> std::result::Result<Decoder, rpc::CallError> {
        match self {
            Sec::Plain(cred) => conn.call(prog, vers, proc_, cred, args).await,
            Sec::Gss(ctx) => conn.call_gss(prog, vers, proc_, ctx, args).await,
        }
    }

    /// The credential plain calls carry (AUTH_NONE's for GSS).
    pub fn plain(&self) -> OpaqueAuth {
        match self {
            Sec::Plain(c) => c.clone(),
            Sec::Gss(_) => OpaqueAuth::none(),
        }
    }
}

impl ClientOptions {
    /// Defaults: AUTH_SYS as uid/gid 0, 64 slots, NFSv4.1, 30 s of DELAY
    /// retries.
    pub fn new(owner: impl Into<Bytes>) -> Self {
        ClientOptions {
            auth: rpc::Auth::sys(0, 0, Vec::new(), "ferrite-client"),
            owner: owner.into(),
            verifier: None,
            slots: 64,
            minorversion: 1,
            delay_retry: Duration::from_secs(30),
            conn: rpc::ConnConfig::default(),
            reclaim_complete: true,
            persist: false,
            gss: None,
            tls: None,
            return_delegations: true,
        }
    }

    /// Connects without sending RECLAIM_COMPLETE: the client reclaims.
    pub fn reclaiming(mut self) -> Self {
        self.reclaim_complete = false;
        self
    }

    pub fn auth(mut self, auth: rpc::Auth) -> Self {
        self.auth = auth;
        self
    }

    pub fn slots(mut self, n: u32) -> Self {
        self.slots = n;
        self
    }

    pub fn minorversion(mut self, v: u32) -> Self {
        self.minorversion = v;
        self
    }
}

/// The fore-channel attributes the client asks for (RFC 8881 §18.36.1).
pub fn fore_channel_attrs(slots: u32) -> ChannelAttrs4 {
    ChannelAttrs4 {
        headerpadsize: 0,
        maxrequestsize: 1024 * 1024 + 64 * 1024,
        maxresponsesize: 1024 * 1024 + 64 * 1024,
        maxresponsesize_cached: 64 * 1024,
        maxoperations: 64,
        maxrequests: slots.max(1),
        rdma_ird: None,
    }
}

/// The back-channel attributes the client offers.
pub fn back_channel_attrs() -> ChannelAttrs4 {
    ChannelAttrs4 {
        headerpadsize: 0,
        maxrequestsize: 64 * 1024,
        maxresponsesize: 64 * 1024,
        maxresponsesize_cached: 0,
        maxoperations: 8,
        maxrequests: 4,
        rdma_ird: None,
    }
}

/// An NFSv4.1 client with one session. Cheap to clone; clones share the
/// session.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    conn: Arc<Connection>,
    cred: Sec,
    opts: ClientOptions,
    clientid: ClientId4,
    sessionid: SessionId4,
    /// `csr_flags` of the session.
    session_flags: u32,
    /// `eir_flags` of EXCHANGE_ID.
    exchange_flags: u32,
    fore: ChannelAttrs4,
    back: ChannelAttrs4,
    slots: Arc<SlotTable>,
    status_flags: AtomicU32,
    next_owner: AtomicU64,
    callbacks: Arc<callback::CallbackState>,
    /// NFSv4.0: the owners' sequence ids (none under a session).
    v40: Option<Arc<v40::Owners>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.conn.close();
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("clientid", &format_args!("{:#x}", self.inner.clientid))
            .field("conn", &self.inner.conn)
            .finish()
    }
}

/// Sends one COMPOUND (already encoded after the RPC header) on `conn` and
/// decodes the reply, whatever its status.
pub async fn send_compound_bytes(
    conn: &Connection,
    cred: &OpaqueAuth,
    args: Vec<Bytes>,
) -> Result<Compound4Res> {
    send_compound_sec(conn, &Sec::Plain(cred.clone()), args).await
}

/// [`send_compound_bytes`] with any [`Sec`].
pub async fn send_compound_sec(
    conn: &Connection,
    sec: &Sec,
    args: Vec<Bytes>,
) -> Result<Compound4Res> {
    let mut d: Decoder = sec
        .call(conn, NFS_PROGRAM, NFS_V4, NFSPROC4_COMPOUND, args)
        .await?;
    Ok(Compound4Res::unpack(&mut d)?)
}

/// Sends `ops` as one COMPOUND exactly as given (no SEQUENCE added) on
/// `conn` and decodes the reply, whatever its status.
pub async fn send_compound(
    conn: &Connection,
    cred: &OpaqueAuth,
    tag: &[u8],
    minorversion: u32,
    ops: &[NfsArgOp4],
) -> Result<Compound4Res> {
    send_ops(conn, &Sec::Plain(cred.clone()), tag, minorversion, ops).await
}

/// [`send_compound`] with any [`Sec`].
pub async fn send_ops(
    conn: &Connection,
    cred: &Sec,
    tag: &[u8],
    minorversion: u32,
    ops: &[NfsArgOp4],
) -> Result<Compound4Res> {
    let mut e = Encoder::with_capacity(256);
    Compound4ArgsHeader {
        tag: Bytes::copy_from_slice(tag),
        minorversion,
    }
    .pack(&mut e);
    e.u32(ops.len() as u32);
    for op in ops {
        op.pack(&mut e);
    }
    send_compound_sec(conn, cred, e.finish()).await
}

/// The only result of a session-less COMPOUND of one operation.
fn single_result(res: Compound4Res) -> Result<NfsResOp4> {
    if res.status != NfsStat4::Nfs4Ok {
        return Err(Error::from_compound(res.status, res.resarray));
    }
    res.resarray
        .into_iter()
        .next()
        .ok_or_else(|| Error::Unexpected("empty result array".into()))
}

fn clock_verifier() -> Verifier4 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    static N: AtomicU64 = AtomicU64::new(0);
    (t ^ N.fetch_add(1, Ordering::Relaxed).rotate_left(40)).to_be_bytes()
}

impl Client {
    /// Connects to `addr`: EXCHANGE_ID, CREATE_SESSION (with the back
    /// channel on this connection) and RECLAIM_COMPLETE.
    pub async fn connect(addr: SocketAddr, opts: ClientOptions) -> Result<Client> {
        if let Some(tls) = &opts.tls {
            let service = Self::callback_service();
            let conn = rpc::tls::connect(
                addr,
                NFS_PROGRAM,
                NFS_V4,
                tls,
                Some(service.1),
                opts.conn.clone(),
            )
            .await?;
            return Self::start_on(conn, service.0, opts).await;
        }
        let stream = tokio::net::TcpStream::connect(addr).await?;
        Self::connect_stream(stream, opts).await
    }

    fn callback_service() -> (Arc<callback::CallbackState>, Arc<dyn rpc::Service>) {
        let callbacks = callback::CallbackState::new(CB_PROGRAM);
        let service: Arc<dyn rpc::Service> = Arc::new(callback::CallbackService {
            state: callbacks.clone(),
        });
        (callbacks, service)
    }

    /// [`Client::connect`] over a TCP connection already made (for
    /// example from a chosen local port).
    pub async fn connect_stream(
        stream: tokio::net::TcpStream,
        opts: ClientOptions,
    ) -> Result<Client> {
        let (callbacks, service) = Self::callback_service();
        let conn = rpc::start(stream, Some(service), opts.conn.clone())?;
        Self::start_on(conn, callbacks, opts).await
    }

    /// The session on a connection made.
    async fn start_on(
        conn: Arc<Connection>,
        callbacks: Arc<callback::CallbackState>,
        opts: ClientOptions,
    ) -> Result<Client> {
        let cred = Sec::establish(&conn, &opts).await?;
        let minor = opts.minorversion;
        if minor == 0 {
            return Self::start40(conn, callbacks, cred, opts).await;
        }

        let eid = ExchangeId4Args {
            clientowner: ClientOwner4 {
                verifier: opts.verifier.unwrap_or_else(clock_verifier),
                ownerid: opts.owner.clone(),
            },
            flags: 0,
            state_protect: StateProtect4A::None,
            client_impl_id: None,
        };
        let res = send_ops(
            &conn,
            &cred,
            b"exchange_id",
            minor,
            &[NfsArgOp4::ExchangeId(eid)],
        )
        .await?;
        let eid = match single_result(res)? {
            NfsResOp4::ExchangeId(Res4::Ok(ok)) => ok,
            other => return Err(Error::unexpected(&other)),
        };

        let cs = CreateSession4Args {
            clientid: eid.clientid,
            sequence: eid.sequenceid,
            flags: CREATE_SESSION4_FLAG_CONN_BACK_CHAN
                | if opts.persist {
                    CREATE_SESSION4_FLAG_PERSIST
                } else {
                    0
                },
            fore_chan_attrs: fore_channel_attrs(opts.slots),
            back_chan_attrs: back_channel_attrs(),
            cb_program: CB_PROGRAM,
            sec_parms: vec![CallbackSecParms4::AuthNone],
        };
        let res = send_ops(
            &conn,
            &cred,
            b"create_session",
            minor,
            &[NfsArgOp4::CreateSession(cs)],
        )
        .await?;
        let cs = match single_result(res)? {
            NfsResOp4::CreateSession(Res4::Ok(ok)) => ok,
            other => return Err(Error::unexpected(&other)),
        };
        callbacks.set_session(cs.sessionid, cs.back_chan_attrs);

        let inner = Arc::new(Inner {
            conn,
            cred,
            slots: SlotTable::new(cs.fore_chan_attrs.maxrequests),
            opts,
            clientid: eid.clientid,
            sessionid: cs.sessionid,
            session_flags: cs.flags,
            exchange_flags: eid.flags,
            fore: cs.fore_chan_attrs,
            back: cs.back_chan_attrs,
            status_flags: AtomicU32::new(0),
            next_owner: AtomicU64::new(1),
            callbacks: callbacks.clone(),
            v40: None,
        });
        let client = Client { inner };
        if client.inner.opts.return_delegations {
            callback::spawn_recall_returner(&client, callbacks);
        }
        if client.inner.opts.reclaim_complete {
            client.reclaim_complete().await?;
        }
        Ok(client)
    }

    /// NFSv4.0 (RFC 7530 §16.33, §16.34): SETCLIENTID with no callback
    /// path (the universal address 0.0.0.0.0.0: the server grants no
    /// delegations), SETCLIENTID_CONFIRM, and a task that sends RENEW
    /// (§16.29) when a third of the lease passed with nothing renewing it.
    async fn start40(
        conn: Arc<Connection>,
        callbacks: Arc<callback::CallbackState>,
        cred: Sec,
        opts: ClientOptions,
    ) -> Result<Client> {
        let set = SetClientId4Args {
            client: NfsClientId4 {
                verifier: opts.verifier.unwrap_or_else(clock_verifier),
                id: opts.owner.clone(),
            },
            callback: CbClient4 {
                cb_program: CB_PROGRAM,
                cb_location: NetAddr4 {
                    netid: "tcp".into(),
                    addr: "0.0.0.0.0.0".into(),
                },
            },
            callback_ident: 0,
        };
        let res = send_ops(
            &conn,
            &cred,
            b"setclientid",
            0,
            &[NfsArgOp4::SetClientId(set)],
        )
        .await?;
        let ok = match single_result(res)? {
            NfsResOp4::SetClientId(SetClientId4Res::Ok(ok)) => ok,
            other => return Err(Error::unexpected(&other)),
        };
        let confirm = NfsArgOp4::SetClientIdConfirm(SetClientIdConfirm4Args {
            clientid: ok.clientid,
            setclientid_confirm: ok.setclientid_confirm,
        });
        single_result(send_ops(&conn, &cred, b"setclientid_confirm", 0, &[confirm]).await?)?;
        let owners = Arc::new(v40::Owners::new());
        owners.renewed();
        let inner = Arc::new(Inner {
            conn,
            cred,
            slots: SlotTable::new(opts.slots.max(1)),
            opts,
            clientid: ok.clientid,
            sessionid: [0; 16],
            session_flags: 0,
            exchange_flags: 0,
            fore: fore_channel_attrs(1),
            back: back_channel_attrs(),
            status_flags: AtomicU32::new(0),
            next_owner: AtomicU64::new(1),
            callbacks,
            v40: Some(owners),
        });
        let client = Client { inner };
        let lease = client
            .compound(vec![
                NfsArgOp4::PutRootFh,
                ops::getattr_op(&[FATTR4_LEASE_TIME]),
            ])
            .await?;
        let lease = match lease.get(1) {
            Some(NfsResOp4::GetAttr(Res4::Ok(ok))) => Attrs::decode(&ok.obj_attributes)
                .ok()
                .and_then(|a| a.lease_time),
            _ => None,
        };
        let lease = Duration::from_secs(u64::from(lease.unwrap_or(90).max(3)));
        v40::spawn_renewer(client.downgrade(), lease);
        Ok(client)
    }

    /// NFSv4.0: the owners' sequence ids, for a caller that sends its own
    /// COMPOUNDs; `None` under a session.
    pub fn v40(&self) -> Option<&Arc<v40::Owners>> {
        self.inner.v40.as_ref()
    }

    /// RECLAIM_COMPLETE for the whole client (RFC 8881 §18.51).
    pub async fn reclaim_complete(&self) -> Result<()> {
        self.compound(vec![NfsArgOp4::ReclaimComplete(ReclaimComplete4Args {
            one_fs: false,
        })])
        .await?;
        Ok(())
    }

    fn downgrade(&self) -> std::sync::Weak<Inner> {
        Arc::downgrade(&self.inner)
    }

    fn upgrade(w: &std::sync::Weak<Inner>) -> Option<Client> {
        w.upgrade().map(|inner| Client { inner })
    }

    /// The connection the session runs on.
    pub fn connection(&self) -> &Arc<Connection> {
        &self.inner.conn
    }

    /// The credential plain calls carry (AUTH_NONE's under GSS: see
    /// [`Client::sec`]).
    pub fn cred(&self) -> OpaqueAuth {
        self.inner.cred.plain()
    }

    /// The security every call of this client has.
    pub fn sec(&self) -> &Sec {
        &self.inner.cred
    }

    pub fn options(&self) -> &ClientOptions {
        &self.inner.opts
    }

    pub fn clientid(&self) -> ClientId4 {
        self.inner.clientid
    }

    pub fn sessionid(&self) -> SessionId4 {
        self.inner.sessionid
    }

    /// The flags EXCHANGE_ID answered (`eir_flags`).
    pub fn exchange_flags(&self) -> u32 {
        self.inner.exchange_flags
    }

    /// The flags CREATE_SESSION granted (`csr_flags`).
    pub fn session_flags(&self) -> u32 {
        self.inner.session_flags
    }

    pub fn minorversion(&self) -> u32 {
        self.inner.opts.minorversion
    }

    /// The fore-channel attributes the server granted.
    pub fn fore_attrs(&self) -> ChannelAttrs4 {
        self.inner.fore
    }

    /// The back-channel attributes the server granted.
    pub fn back_attrs(&self) -> ChannelAttrs4 {
        self.inner.back
    }

    /// The fore-channel slot table.
    pub fn slots(&self) -> &Arc<SlotTable> {
        &self.inner.slots
    }

    /// Slot wait statistics.
    pub fn slot_stats(&self) -> SlotStats {
        self.inner.slots.stats()
    }

    /// `sr_status_flags` of the latest SEQUENCE reply.
    pub fn status_flags(&self) -> u32 {
        self.inner.status_flags.load(Ordering::Relaxed)
    }

    /// Callback bookkeeping (recalls seen, CB_SEQUENCE counts).
    pub fn callbacks(&self) -> &Arc<callback::CallbackState> {
        &self.inner.callbacks
    }

    /// A fresh state owner name, unique within this client.
    pub fn new_owner(&self, prefix: &str) -> StateOwner4 {
        let n = self.inner.next_owner.fetch_add(1, Ordering::Relaxed);
        StateOwner4 {
            clientid: self.inner.clientid,
            owner: Bytes::from(format!("{prefix}-{n}")),
        }
    }

    /// The RPC NULL procedure.
    pub async fn null(&self) -> Result<()> {
        self.inner
            .cred
            .call(
                &self.inner.conn,
                NFS_PROGRAM,
                NFS_V4,
                NFSPROC4_NULL,
                Vec::new(),
            )
            .await?;
        Ok(())
    }

    /// Takes a slot for a hand-built SEQUENCE (tests of replay and
    /// misordering). The slot goes back when released or dropped.
    pub async fn take_slot(&self) -> Slot {
        self.inner.slots.acquire().await
    }

    /// SEQUENCE arguments for a request on `slot`.
    pub fn sequence_args(&self, slot: &Slot, cachethis: bool) -> Sequence4Args {
        Sequence4Args {
            sessionid: self.inner.sessionid,
            sequenceid: slot.seqid(),
            slotid: slot.id(),
            highest_slotid: slot.highest_slotid(),
            cachethis,
        }
    }

    /// Sends `ops` as one COMPOUND exactly as given: no SEQUENCE is added
    /// and the status is not checked.
    pub async fn compound_raw(
        &self,
        tag: &[u8],
        minorversion: u32,
        ops: &[NfsArgOp4],
    ) -> Result<Compound4Res> {
        send_ops(&self.inner.conn, &self.inner.cred, tag, minorversion, ops).await
    }

    /// Sends pre-encoded COMPOUND arguments (anything at all) and decodes
    /// the reply.
    pub async fn compound_raw_bytes(&self, args: Vec<Bytes>) -> Result<Compound4Res> {
        send_compound_sec(&self.inner.conn, &self.inner.cred, args).await
    }

    /// Runs `ops` under SEQUENCE; the SEQUENCE result is stripped. A
    /// status other than NFS4_OK is an [`Error::Status`] with the index of
    /// the failing op (in `ops`) and the results up to it.
    pub async fn compound(&self, ops: Vec<NfsArgOp4>) -> Result<Vec<NfsResOp4>> {
        self.compound_with(b"", false, ops).await
    }

    /// [`Client::compound`] with a tag and `sa_cachethis`.
    pub async fn compound_with(
        &self,
        tag: &[u8],
        cachethis: bool,
        ops: Vec<NfsArgOp4>,
    ) -> Result<Vec<NfsResOp4>> {
        if let Some(owners) = &self.inner.v40 {
            let mut r = self.run40(owners, tag, ops).await?;
            // An owner's first OPEN is confirmed (RFC 7530 §16.18).
            for (i, fh, sid) in owners.unconfirmed(&r) {
                let c = self
                    .run40(owners, b"open_confirm", v40::confirm_ops(&fh, sid))
                    .await?;
                let sid = v40::confirmed(&c)
                    .ok_or_else(|| Error::Unexpected(format!("OPEN_CONFIRM: {c:?}")))?;
                v40::patch_open(&mut r, i, sid);
            }
            return Ok(r);
        }
        let nops = ops.len();
        let mut e = Encoder::with_capacity(128 * nops.max(1));
        for op in &ops {
            op.pack(&mut e);
        }
        let body = e.finish();
        let started = Instant::now();
        let mut backoff = Duration::from_millis(5);
        loop {
            let slot = self.inner.slots.acquire().await;
            let seq = self.sequence_args(&slot, cachethis);
            let mut h = Encoder::with_capacity(96 + tag.len());
            Compound4ArgsHeader {
                tag: Bytes::copy_from_slice(tag),
                minorversion: self.inner.opts.minorversion,
            }
            .pack(&mut h);
            h.u32(nops as u32 + 1);
            NfsArgOp4::Sequence(seq).pack(&mut h);
            let mut args = h.finish();
            args.extend(body.iter().cloned());
            let res = match self.compound_raw_bytes(args).await {
                Ok(r) => r,
                Err(e) => {
                    // Unknown whether the server saw it; assume so.
                    slot.release(SlotOutcome::Processed, None);
                    return Err(e);
                }
            };
            let mut results = res.resarray.into_iter();
            let delayed = match results.next() {
                Some(NfsResOp4::Sequence(Res4::Ok(ok))) => {
                    slot.release(SlotOutcome::Processed, Some(ok.target_highest_slotid));
                    self.inner
                        .status_flags
                        .store(ok.status_flags, Ordering::Relaxed);
                    let rest: Vec<NfsResOp4> = results.collect();
                    if res.status == NfsStat4::Nfs4Ok {
                        return Ok(rest);
                    }
                    if res.status != NfsStat4::Nfs4errDelay {
                        return Err(Error::from_compound(res.status, rest));
                    }
                    rest
                }
                Some(NfsResOp4::Sequence(Res4::Err(NfsStat4::Nfs4errDelay))) => {
                    slot.release(SlotOutcome::NotProcessed, None);
                    Vec::new()
                }
                Some(NfsResOp4::Sequence(Res4::Err(s))) => {
                    slot.release(SlotOutcome::NotProcessed, None);
                    return Err(Error::Sequence(s));
                }
                Some(other) => {
                    slot.release(SlotOutcome::NotProcessed, None);
                    return Err(Error::unexpected(&other));
                }
                None => {
                    slot.release(SlotOutcome::NotProcessed, None);
                    return Err(Error::Status {
                        index: 0,
                        opnum: OpNum4::Sequence as u32,
                        status: res.status,
                        results: Vec::new(),
                    });
                }
            };
            if started.elapsed() + backoff > self.inner.opts.delay_retry {
                return Err(if delayed.is_empty() {
                    Error::Sequence(NfsStat4::Nfs4errDelay)
                } else {
                    Error::from_compound(NfsStat4::Nfs4errDelay, delayed)
                });
            }
            debug!(?backoff, "NFS4ERR_DELAY; retrying");
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_millis(500));
        }
    }

    /// NFSv4.0: `ops` as one COMPOUND with their owners' sequence ids
    /// (RFC 7530 §9.1.7), NFS4ERR_DELAY retried as under a session.
    async fn run40(
        &self,
        owners: &v40::Owners,
        tag: &[u8],
        mut sent: Vec<NfsArgOp4>,
    ) -> Result<Vec<NfsResOp4>> {
        let started = Instant::now();
        let mut backoff = Duration::from_millis(5);
        loop {
            let slot = self.inner.slots.acquire().await;
            let begun = owners.begin(&mut sent).await;
            let res = self.compound_raw(tag, 0, &sent).await;
            slot.release(SlotOutcome::Processed, None);
            let res = match res {
                Ok(r) => r,
                Err(e) => {
                    owners.end(begun, &sent, None);
                    return Err(e);
                }
            };
            owners.end(begun, &sent, Some(&res));
            if res.status == NfsStat4::Nfs4Ok {
                return Ok(res.resarray);
            }
            if res.status != NfsStat4::Nfs4errDelay
                || started.elapsed() + backoff > self.inner.opts.delay_retry
            {
                return Err(Error::from_compound(res.status, res.resarray));
            }
            debug!(?backoff, "NFS4ERR_DELAY; retrying");
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_millis(500));
        }
    }

    /// Ends the session and the client ID (DESTROY_SESSION,
    /// DESTROY_CLIENTID). NFSv4.0 has neither: its client ID ends a lease
    /// after the last request.
    pub async fn destroy(&self) -> Result<()> {
        if self.inner.v40.is_some() {
            return Ok(());
        }
        let res = self
            .compound_raw(
                b"destroy_session",
                self.minorversion(),
                &[NfsArgOp4::DestroySession(DestroySession4Args {
                    sessionid: self.inner.sessionid,
                })],
            )
            .await?;
        single_result(res)?;
        let res = self
            .compound_raw(
                b"destroy_clientid",
                self.minorversion(),
                &[NfsArgOp4::DestroyClientId(DestroyClientId4Args {
                    clientid: self.inner.clientid,
                })],
            )
            .await?;
        single_result(res)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
