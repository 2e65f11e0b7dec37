//! Calls to clients over a session's back channel (RFC 8881 §20): one
//! CB_COMPOUND at a time per session, on back-channel slot 0, always
//! starting with CB_SEQUENCE. Callers spawn these; the state lock is never
//! held across a callback.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use proto::nfs4::*;
use rpc::OpaqueAuth;
use tracing::debug;
use xdr::Unpack;

use super::session_io::{io, rpc_conn};
use crate::instance::Server;
use state::session::Session;
use state::{next_seqid, DelegRecall, LockNotify};

/// How long a callback may take before it counts as failed.
const CB_TIMEOUT: Duration = Duration::from_secs(10);

/// How many times a CB_RECALL is sent when the client does not answer.
const RECALL_TRIES: u32 = 3;

/// RFC 8881 §20: CB_COMPOUND is procedure 1 of the callback program.
const CB_COMPOUND: u32 = 1;

/// Why a callback got no usable answer.
#[derive(Debug, thiserror::Error)]
pub enum CbError {
    #[error("no back-channel connection")]
    NoConnection,
    #[error("callback timed out")]
    Timeout,
    #[error("callback failed: {0}")]
    Rpc(#[from] rpc::CallError),
    #[error("undecodable callback reply: {0}")]
    Xdr(#[from] xdr::Error),
    #[error("callback answered {0:?}")]
    Status(NfsStat4),
    #[error("undecodable attributes in a CB_GETATTR reply")]
    Attrs,
    #[error("a CB_GETATTR is under way, or the delegation is being recalled")]
    Busy,
    #[error("no such callback in NFSv4.0")]
    NotInV40,
}

/// The credential for callbacks: the first of the client's choices we can
/// produce (AUTH_SYS or AUTH_NONE; RPCSEC_GSS is not supported), from
/// CREATE_SESSION or BACKCHANNEL_CTL (RFC 8881 §18.36, §18.33).
pub fn cb_cred(sec: &[CallbackSecParms4]) -> OpaqueAuth {
    for s in sec {
        match s {
            CallbackSecParms4::AuthNone => return OpaqueAuth::none(),
            CallbackSecParms4::AuthSys(p) => {
                let parms = rpc::AuthSysParms {
                    stamp: p.stamp,
                    machinename: p.machinename.clone(),
                    uid: p.uid,
                    gid: p.gid,
                    gids: p.gids.clone(),
                };
                return OpaqueAuth {
                    flavor: rpc::AUTH_SYS,
                    body: xdr::to_bytes(&parms),
                };
            }
            CallbackSecParms4::RpcSecGss(_) => continue,
        }
    }
    OpaqueAuth::none()
}

/// Sends CB_NULL over the back channel (RFC 8881 §20); a failure marks
/// the session's callback path down (SEQ4_STATUS_CB_PATH_DOWN_SESSION).
pub async fn probe_back_channel(session: Arc<Session>) {
    let (conn, program, cred) = {
        let Ok(b) = session.back.lock() else { return };
        (b.conn(), b.program, cb_cred(&b.sec))
    };
    let Some(conn) = conn.as_ref().and_then(rpc_conn) else {
        session.cb_down.store(true, Ordering::Relaxed);
        return;
    };
    let call = conn.call(program, 1, 0, &cred, Vec::new());
    let ok = matches!(
        tokio::time::timeout(Duration::from_secs(5), call).await,
        Ok(Ok(_))
    );
    if !ok {
        debug!(session = ?session.id, "CB_NULL failed; back channel marked down");
    }
    session.cb_down.store(!ok, Ordering::Relaxed);
}

/// Sends CB_SEQUENCE followed by `ops` and returns the reply. The slot's
/// sequence id moves on once the client has answered CB_SEQUENCE; a
/// callback with no answer leaves it, so the next one is taken as a retry
/// of it rather than as out of order.
pub async fn cb_compound(
    session: &Session,
    ops: Vec<NfsCbArgOp4>,
) -> Result<CbCompound4Res, CbError> {
    let _slot = io(session).cb_slot.lock().await;
    let (conn, program, cred, seqid, ident) = {
        let b = session.back.lock().unwrap_or_else(|p| p.into_inner());
        (b.conn(), b.program, cb_cred(&b.sec), b.seqid, b.ident)
    };
    let conn = conn
        .as_ref()
        .and_then(rpc_conn)
        .ok_or(CbError::NoConnection)?;
    let minorversion = session.minorversion.load(Ordering::Relaxed);
    let mut argarray = Vec::with_capacity(ops.len() + 1);
    if minorversion == 0 {
        // NFSv4.0 (RFC 7530 §16.2 of the callback program): CB_GETATTR
        // and CB_RECALL only, no CB_SEQUENCE; the client is named by the
        // callback_ident it gave in SETCLIENTID.
        if !ops
            .iter()
            .all(|o| matches!(o, NfsCbArgOp4::CbGetattr(_) | NfsCbArgOp4::CbRecall(_)))
        {
            return Err(CbError::NotInV40);
        }
    } else {
        argarray.push(NfsCbArgOp4::CbSequence(CbSequence4Args {
            sessionid: session.id,
            sequenceid: seqid,
            slotid: 0,
            highest_slotid: 0,
            cachethis: false,
            referring_call_lists: Vec::new(),
        }));
    }
    argarray.extend(ops);
    let args = CbCompound4Args {
        tag: Default::default(),
        minorversion,
        callback_ident: ident,
        argarray,
    };
    let call = conn.call_with(program, 1, CB_COMPOUND, &cred, &args);
    let mut d = match tokio::time::timeout(CB_TIMEOUT, call).await {
        Ok(r) => r?,
        Err(_) => return Err(CbError::Timeout),
    };
    let res = CbCompound4Res::unpack(&mut d)?;
    if matches!(
        res.resarray.first(),
        Some(NfsCbResOp4::CbSequence(Res4::Ok(_)))
    ) {
        let mut b = session.back.lock().unwrap_or_else(|p| p.into_inner());
        if b.seqid == seqid {
            b.seqid = next_seqid(seqid);
        }
    }
    Ok(res)
}

/// The result of a callback's first operation after CB_SEQUENCE (which
/// an NFSv4.0 callback has not).
fn first_op(res: &CbCompound4Res) -> Option<&NfsCbResOp4> {
    res.resarray
        .iter()
        .find(|r| !matches!(r, NfsCbResOp4::CbSequence(_)))
}

/// Outgoing callback connections (to NFSv4.0 clients' callback
/// addresses) open at once, at most: a client table full of clients
/// naming addresses that never answer holds no more descriptors.
const MAX_DIALED: usize = 1024;

/// How long opening a connection to an NFSv4.0 client's callback address
/// may take.
const DIAL_TIMEOUT: Duration = Duration::from_secs(5);

static DIALED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Callback connections refused or failed, logged at most this often.
static DIAL_LOG: rpc::RateLimit = rpc::RateLimit::per_secs(10);

/// One place under [`MAX_DIALED`], given back when dropped.
#[derive(Debug)]
pub struct Dialed(());

impl Dialed {
    fn take() -> Option<Dialed> {
        DIALED
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_DIALED).then_some(n + 1)
            })
            .ok()
            .map(|_| Dialed(()))
    }
}

impl Drop for Dialed {
    fn drop(&mut self) {
        DIALED.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Opens the callback path of an NFSv4.0 client (RFC 7530 §3.3.3,
/// §16.33): a connection of the server's own to the address it gave in
/// SETCLIENTID, checked with CB_NULL, then the back channel of its
/// session. Only the callback program is ever called on it, and only a
/// program number of the transient range clients use for it
/// (0x40000000 to 0x5fffffff); the connection and the probe are bounded
/// in time, the connections in number. Until the probe answers, the
/// client gets no delegations; if it never does, it never gets any (and
/// RENEW tells it NFS4ERR_CB_PATH_DOWN once it holds some).
pub fn connect40(srv: Arc<Server>, session: Arc<Session>, cb: state::v40::Callback40) {
    tokio::spawn(async move {
        let why = match dial40(&srv, &session, &cb).await {
            Ok(()) => return,
            Err(why) => why,
        };
        session.cb_down.store(true, Ordering::Relaxed);
        if let Some(n) = DIAL_LOG.allow() {
            tracing::info!(
                client = format_args!("{:#x}", session.client),
                netid = %cb.netid,
                addr = %cb.addr,
                "NFSv4.0 callback path down: {why} ({n} more not logged)"
            );
        }
    });
}

async fn dial40(
    srv: &Arc<Server>,
    session: &Arc<Session>,
    cb: &state::v40::Callback40,
) -> Result<(), String> {
    if !(0x4000_0000..=0x5fff_ffff).contains(&cb.program) {
        return Err(format!(
            "program {:#x} is not a callback program",
            cb.program
        ));
    }
    let addr = match cb.netid.as_str() {
        "tcp" | "tcp6" => proto::portmap::parse_uaddr(&cb.addr),
        _ => None,
    }
    .ok_or_else(|| "not a TCP universal address".to_string())?;
    // "0.0.0.0.0.0" and the like: no callback (pynfs sends it), and not a
    // way to make the server call its own ports.
    if addr.ip().is_unspecified() || addr.ip().is_multicast() || addr.port() == 0 {
        return Err(format!("no callback address ({})", cb.addr));
    }
    let permit = Dialed::take().ok_or_else(|| "too many callback connections".to_string())?;
    let cfg = rpc::ConnConfig {
        // A recall may come long after the last: the client's lease, not
        // the connection's idleness, decides how long it lives.
        idle_timeout: None,
        ..rpc::ConnConfig::default()
    };
    let conn = match tokio::time::timeout(DIAL_TIMEOUT, rpc::connect(addr, None, cfg)).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return Err(format!("connecting: {e}")),
        Err(_) => return Err("connecting timed out".into()),
    };
    let cred = {
        let b = session.back.lock().unwrap_or_else(|p| p.into_inner());
        cb_cred(&b.sec)
    };
    let probe = conn.call(cb.program, 1, 0, &cred, Vec::new());
    match tokio::time::timeout(DIAL_TIMEOUT, probe).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => {
            conn.close();
            return Err(format!("CB_NULL failed: {e}"));
        }
        Err(_) => {
            conn.close();
            return Err("CB_NULL unanswered".into());
        }
    }
    // A newer SETCLIENTID_CONFIRM may have changed the callback since.
    let current = {
        let b = session.back.lock().unwrap_or_else(|p| p.into_inner());
        b.program == cb.program && b.ident == cb.ident
    };
    if !current {
        conn.close();
        return Ok(());
    }
    let back = super::session_io::CbConn::owned(conn, permit);
    srv.state().bind_back(session, &back);
    debug!(
        client = format_args!("{:#x}", session.client),
        "NFSv4.0 callback path up"
    );
    Ok(())
}

/// Sends CB_NOTIFY_LOCK (RFC 8881 §20.11) for `n.fh` in the background: a
/// hint that the waiter may retry now, so failures are only logged.
pub fn notify_lock(n: LockNotify) {
    tokio::spawn(async move {
        let fh = n.fh.clone();
        let op = NfsCbArgOp4::CbNotifyLock(CbNotifyLock4Args {
            fh,
            lock_owner: n.owner,
        });
        match cb_compound(&n.session, vec![op]).await {
            Ok(r) => debug!(session = ?n.session.id, status = ?r.status, "CB_NOTIFY_LOCK"),
            Err(e) => debug!(session = ?n.session.id, "CB_NOTIFY_LOCK failed: {e}"),
        }
    });
}

/// Sends the notifications an unlock produced.
pub fn notify_locks(notes: Vec<LockNotify>) {
    for n in notes {
        notify_lock(n);
    }
}

/// Sends CB_RECALL_ANY (RFC 8881 §20.6) in the background: the client may
/// keep `keep` of its read and write delegations and is asked to return the rest. A
/// hint: failures are only logged.
pub fn recall_any(session: std::sync::Arc<Session>, keep: u32) {
    tokio::spawn(async move {
        let op = NfsCbArgOp4::CbRecallAny(CbRecallAny4Args {
            objects_to_keep: keep,
            type_mask: Bitmap4::from_attrs(&[
                RCA4_TYPE_MASK_RDATA_DLG,
                RCA4_TYPE_MASK_WDATA_DLG,
                RCA4_TYPE_MASK_DIR_DLG,
            ]),
        });
        match cb_compound(&session, vec![op]).await {
            Ok(r) => debug!(session = ?session.id, status = ?r.status, keep, "CB_RECALL_ANY"),
            Err(e) => debug!(session = ?session.id, "CB_RECALL_ANY failed: {e}"),
        }
    });
}

/// Asks the holder of the write delegation `stateid` for the attributes
/// `want` of its file `fh` with CB_GETATTR (RFC 8881 §20.1), waiting at
/// most `wait` for the answer. The call itself runs on to its own timeout,
/// so the back channel's slot stays in step, and then ends the
/// delegation's CB_GETATTR (`State::begin_cb_getattr`): one at a time.
pub async fn getattr(
    srv: &Arc<Server>,
    session: Arc<Session>,
    stateid: StateId4,
    fh: NfsFh4,
    want: Bitmap4,
    wait: Duration,
) -> Result<Attrs, CbError> {
    let op = NfsCbArgOp4::CbGetattr(CbGetattr4Args {
        fh,
        attr_request: want,
    });
    let srv = Arc::downgrade(srv);
    let call = tokio::spawn(async move {
        let r = cb_compound(&session, vec![op]).await;
        if let Some(srv) = srv.upgrade() {
            srv.state().end_cb_getattr(&stateid);
        }
        r
    });
    let res = match tokio::time::timeout(wait, call).await {
        Ok(Ok(r)) => r?,
        Ok(Err(_)) | Err(_) => return Err(CbError::Timeout),
    };
    match first_op(&res) {
        Some(NfsCbResOp4::CbGetattr(Res4::Ok(ok))) => {
            Attrs::decode(&ok.obj_attributes).map_err(|_| CbError::Attrs)
        }
        Some(NfsCbResOp4::CbGetattr(Res4::Err(e))) => Err(CbError::Status(*e)),
        _ => Err(CbError::Status(res.status)),
    }
}

/// Sends the notifications queued for the directory delegation `other`
/// (CB_NOTIFY, RFC 8881 §20.4) from a task of its own, in order, as many
/// in each CB_NOTIFY as have queued by then, until none is left; `wait`:
/// first waits the delegation's attribute delay, so that later changes go
/// in the same call. A holder that cannot be reached has the delegation
/// revoked.
pub fn notify_dir(srv: &Arc<Server>, session: Arc<Session>, other: [u8; 12], wait: bool) {
    let srv = Arc::downgrade(srv);
    tokio::spawn(async move {
        if wait {
            let delay = match srv.upgrade() {
                Some(srv) => srv.state().dir_attr_delay(&other),
                None => return,
            };
            tokio::time::sleep(delay.min(crate::conflicts::directories::MAX_ATTR_DELAY)).await;
        }
        // What fits in the client's back-channel requests, beside the RPC
        // header, CB_SEQUENCE, the stateid and filehandle.
        let budget = {
            let b = session.back.lock().unwrap_or_else(|p| p.into_inner());
            (b.attrs.maxrequestsize as usize).saturating_sub(512)
        };
        loop {
            let next = srv
                .upgrade()
                .and_then(|s| s.state().take_dir_notes(&other, budget));
            let Some((stateid, fh, changes)) = next else {
                return;
            };
            let n = changes.len();
            let op = NfsCbArgOp4::CbNotify(CbNotify4Args {
                stateid,
                fh,
                changes,
            });
            let failed = match cb_compound(&session, vec![op]).await {
                Ok(r) if r.status == NfsStat4::Nfs4Ok => {
                    debug!(session = ?session.id, n, "CB_NOTIFY");
                    continue;
                }
                Ok(r) => format!("answered {:?}", r.status),
                Err(e @ (CbError::NoConnection | CbError::Rpc(_))) => {
                    session.cb_down.store(true, Ordering::Relaxed);
                    e.to_string()
                }
                Err(e) => e.to_string(),
            };
            // A holder that missed a notification cannot trust its cache:
            // the delegation is revoked (it sees
            // SEQ4_STATUS_RECALLABLE_STATE_REVOKED).
            debug!(session = ?session.id, "CB_NOTIFY {failed}; delegation revoked");
            if let Some(srv) = srv.upgrade() {
                srv.state().revoke_delegation(&stateid);
                // Drains the queue and ends this sender.
                srv.state().take_dir_notes(&other, 0);
            }
            return;
        }
    });
}

/// Sends CB_RECALL (RFC 8881 §20.2) in the background. A recall that
/// cannot reach the client (no back-channel connection, or the call
/// failed) revokes the delegation at once (§10.4.6: the server may revoke
/// when the client cannot be called back), so the conflicting request need
/// not wait a lease; one the client refuses or leaves unanswered is revoked
/// a lease after it was sent, if still held then. For an NFSv4.0 client
/// (RFC 7530 §16.29.4) a recall that fails or goes unanswered marks its
/// callback path down (RENEW says NFS4ERR_CB_PATH_DOWN) and the delegation
/// is revoked a lease after that, unless returned.
pub fn recall(srv: &std::sync::Arc<Server>, r: DelegRecall) {
    let srv = std::sync::Arc::downgrade(srv);
    tokio::spawn(async move {
        let op = NfsCbArgOp4::CbRecall(CbRecall4Args {
            stateid: r.stateid,
            truncate: false,
            fh: r.fh,
        });
        // A recall left unanswered is sent again (the same CB_SEQUENCE
        // slot and sequence ID: the client takes it for a retry), up to
        // RECALL_TRIES times; the reaper revokes the delegation a lease
        // after the first if it is still held.
        let mut tries = 1;
        let v40 = r.session.minorversion.load(Ordering::Relaxed) == 0;
        let answer = loop {
            match cb_compound(&r.session, vec![op.clone()]).await {
                Err(CbError::Timeout) if tries < RECALL_TRIES => {
                    // An NFSv4.0 callback path that does not answer is
                    // down (RFC 7530 §16.29.4): RENEW says so from now,
                    // and the holder has a lease from now to return it.
                    if v40 && !r.session.cb_down.swap(true, Ordering::Relaxed) {
                        if let Some(srv) = srv.upgrade() {
                            srv.state().recall_unanswered40(&r.stateid);
                        }
                    }
                    tries += 1
                }
                other => break other,
            }
        };
        match answer {
            Ok(res) => debug!(session = ?r.session.id, status = ?res.status, tries, "CB_RECALL"),
            // NFSv4.1 clients see SEQ4_STATUS_CB_PATH_DOWN at once, and
            // the delegation is revoked now (they see it with
            // SEQ4_STATUS_RECALLABLE_STATE_REVOKED).
            // An NFSv4.0 client learns its callback path is down from
            // RENEW (NFS4ERR_CB_PATH_DOWN) and may mend it (a new
            // SETCLIENTID) and return the delegation: it keeps it until
            // the reaper revokes it, a lease after the path failed.
            Err(e) if v40 => {
                debug!(session = ?r.session.id, tries, "CB_RECALL failed: {e}; NFSv4.0 callback path down");
                if !r.session.cb_down.swap(true, Ordering::Relaxed) {
                    if let Some(srv) = srv.upgrade() {
                        srv.state().recall_unanswered40(&r.stateid);
                    }
                }
            }
            Err(e @ (CbError::NoConnection | CbError::Rpc(_))) => {
                debug!(session = ?r.session.id, "CB_RECALL failed: {e}; delegation revoked");
                r.session.cb_down.store(true, Ordering::Relaxed);
                if let Some(srv) = srv.upgrade() {
                    srv.state().revoke_delegation(&r.stateid);
                }
            }
            Err(e) => debug!(session = ?r.session.id, "CB_RECALL: {e}"),
        }
    });
}

/// Sends CB_LAYOUTRECALL (RFC 8881 §20.3) in the background, of the
/// whole file (or file system, or everything) in the recall's mode. An
/// answer of NFS4ERR_NOMATCHING_LAYOUT (the client holds none of it)
/// counts as its return; one that cannot reach the client, or another
/// error, loses the layouts at once (to be fenced); one left unanswered
/// is lost a lease after it was sent (the reaper).
pub fn recall_layout(srv: &Arc<Server>, r: state::layouts::LayoutRecall) {
    use state::layouts::RecallScope;
    let recall = match &r.scope {
        RecallScope::File(stateid, fh) => LayoutRecall4::File(LayoutRecallFile4 {
            fh: NfsFh4(fh.clone()),
            offset: 0,
            length: u64::MAX,
            stateid: *stateid,
        }),
        RecallScope::Fsid(export) => match srv.exports().get(*export) {
            Some(e) => LayoutRecall4::Fsid(FsId4 {
                major: e.fsid.0,
                minor: e.fsid.1,
            }),
            None => LayoutRecall4::All,
        },
        RecallScope::All => LayoutRecall4::All,
    };
    let op = NfsCbArgOp4::CbLayoutRecall(CbLayoutRecall4Args {
        layout_type: LAYOUT4_FLEX_FILES,
        iomode: r.iomode,
        changed: true,
        recall,
    });
    let bulk = !matches!(r.scope, RecallScope::File(..));
    let lease = srv.cfg.lease;
    let srv = Arc::downgrade(srv);
    tokio::spawn(async move {
        let mut tries = 1;
        let started = std::time::Instant::now();
        let answer = loop {
            match cb_compound(&r.session, vec![op.clone()]).await {
                Err(CbError::Timeout) if tries < RECALL_TRIES => tries += 1,
                // A recall of a file system or of everything is answered
                // NFS4ERR_DELAY while the client is still giving the
                // layouts up, and NOMATCHING_LAYOUT once it has (it sends
                // no LAYOUTRETURN for them): asked again until then, for
                // up to a lease.
                Ok(res)
                    if bulk
                        && layout_recall_status(&res) == NfsStat4::Nfs4errDelay
                        && started.elapsed() < lease =>
                {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                other => break other,
            }
        };
        let status = match &answer {
            Ok(res) => layout_recall_status(res),
            Err(CbError::Timeout) => {
                debug!(session = ?r.session.id, "CB_LAYOUTRECALL unanswered");
                return;
            }
            Err(e) => {
                debug!(session = ?r.session.id, "CB_LAYOUTRECALL failed: {e}");
                if matches!(e, CbError::NoConnection | CbError::Rpc(_)) {
                    r.session.cb_down.store(true, Ordering::Relaxed);
                }
                NfsStat4::Nfs4errServerfault
            }
        };
        debug!(session = ?r.session.id, ?status, tries, "CB_LAYOUTRECALL");
        let Some(srv) = srv.upgrade() else { return };
        match status {
            // The client returns the layouts with LAYOUTRETURN.
            NfsStat4::Nfs4Ok | NfsStat4::Nfs4errDelay => {}
            NfsStat4::Nfs4errNomatchingLayout => {
                srv.state().layout_recall_nomatch(r.client, &r.scope);
                srv.deleg_gone.notify_waiters();
            }
            _ => {
                srv.state().layout_recall_failed(r.client, &r.scope);
                srv.deleg_gone.notify_waiters();
            }
        }
    });
}

/// What the client answered a CB_LAYOUTRECALL with.
fn layout_recall_status(res: &CbCompound4Res) -> NfsStat4 {
    match first_op(res) {
        Some(NfsCbResOp4::CbLayoutRecall(Res4::Err(e))) => *e,
        Some(NfsCbResOp4::CbLayoutRecall(Res4::Ok(()))) => NfsStat4::Nfs4Ok,
        _ => res.status,
    }
}

/// Sends CB_RECALL_ANY for flexible-file layouts (RFC 8435 §13.1): the
/// client may keep `keep` files' layouts. A hint: failures are logged.
pub fn recall_any_layouts(session: Arc<Session>, keep: u32) {
    tokio::spawn(async move {
        let op = NfsCbArgOp4::CbRecallAny(CbRecallAny4Args {
            objects_to_keep: keep,
            type_mask: Bitmap4::from_attrs(&[
                PNFS_FF_RCA4_TYPE_MASK_READ,
                PNFS_FF_RCA4_TYPE_MASK_RW,
            ]),
        });
        match cb_compound(&session, vec![op]).await {
            Ok(r) => {
                debug!(session = ?session.id, status = ?r.status, keep, "CB_RECALL_ANY (layouts)")
            }
            Err(e) => debug!(session = ?session.id, "CB_RECALL_ANY (layouts) failed: {e}"),
        }
    });
}

/// NFSv4's callbacks for one server instance, as it hands them to every
/// protocol's changes ([`crate::conflicts::Callbacks`]).
pub struct Nfs4Callbacks {
    pub srv: std::sync::Weak<Server>,
}

impl crate::conflicts::Callbacks for Nfs4Callbacks {
    fn recall(&self, r: DelegRecall) {
        if let Some(srv) = self.srv.upgrade() {
            recall(&srv, r);
        }
    }

    fn recall_layout(&self, r: state::layouts::LayoutRecall) {
        if let Some(srv) = self.srv.upgrade() {
            recall_layout(&srv, r);
        }
    }

    fn notify_locks(&self, notes: Vec<LockNotify>) {
        notify_locks(notes);
    }

    fn notify_dir(&self, session: Arc<Session>, other: [u8; 12], wait: bool) {
        if let Some(srv) = self.srv.upgrade() {
            notify_dir(&srv, session, other, wait);
        }
    }

    fn dir_attrs(
        &self,
        export: &crate::exports::export::Export,
        a: &vfs::Attr,
        want: &Bitmap4,
    ) -> Fattr4 {
        match self.srv.upgrade() {
            Some(srv) => super::attrs::build(
                &srv,
                super::attrs::View::numeric(1),
                export,
                &bytes::Bytes::new(),
                a,
                None,
                want,
            ),
            None => Fattr4::default(),
        }
    }
}
