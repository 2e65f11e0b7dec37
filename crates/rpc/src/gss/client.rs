//! The caller's side of RPCSEC_GSS (RFC 2203 §5.2, §5.3): a context made
//! over a connection, each call's credential, verifier and arguments, and
//! the checks on each reply. The project's own client uses it (tests,
//! benchmarks); the Linux client has its own.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use xdr::{Decoder, Unpack};

use super::body::Unopened;
use super::mech::{MechContext, MechError, Step};
use super::wire::*;
use crate::conn::{CallError, Connection};
use crate::msg::{AuthStat, OpaqueAuth, ReplyError, RPCSEC_GSS};

/// An established context, as its caller holds it.
pub struct ClientContext {
    mech: Mutex<Box<dyn MechContext>>,
    handle: Bytes,
    next_seq: AtomicU32,
    /// Calls in flight at most: the server's window. A call takes its
    /// place before its sequence number and keeps it until answered, so
    /// that no call reaches the server more than a window behind the
    /// highest number it has seen (it would be dropped unanswered,
    /// RFC 2203 §5.3.3.1).
    in_flight: Arc<tokio::sync::Semaphore>,
    /// The server's window (RFC 2203 §5.2.3.1).
    pub window: u32,
    pub service: GssService,
    /// A call unanswered this long is sent again under a new sequence
    /// number ([`Connection::call_gss`]).
    pub retransmit_after: std::time::Duration,
    retransmits: std::sync::atomic::AtomicU64,
}

fn failed(e: MechError) -> CallError {
    CallError::Security(e.to_string())
}

/// One step of the mechanism on the blocking pool (a Kerberos client's
/// may ask the KDC for a ticket); the context comes back with the result.
async fn step_off(
    mut mech: Box<dyn MechContext>,
    input: Option<Vec<u8>>,
) -> Result<(Box<dyn MechContext>, Result<Step, CallError>), CallError> {
    tokio::task::spawn_blocking(move || {
        let s = mech.step(input.as_deref()).map_err(failed);
        (mech, s)
    })
    .await
    .map_err(|_| CallError::Closed)
}

fn lock(m: &Mutex<Box<dyn MechContext>>) -> std::sync::MutexGuard<'_, Box<dyn MechContext>> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl ClientContext {
    /// Makes a context with the server at the other end of `conn`, for
    /// program `prog` version `vers` (RFC 2203 §5.2.2): INIT, then
    /// CONTINUE_INIT as long as the mechanism needs. The mechanism's
    /// steps may block (a Kerberos client asks the KDC for a ticket), so
    /// they run on the blocking pool.
    pub async fn establish(
        conn: &Connection,
        prog: u32,
        vers: u32,
        mech: Box<dyn MechContext>,
        service: GssService,
    ) -> Result<ClientContext, CallError> {
        let mut mech = mech;
        let mut input: Option<Vec<u8>> = None;
        let mut handle = Bytes::new();
        loop {
            let (m, step) = step_off(mech, input.take()).await?;
            mech = m;
            let token = match step? {
                Step::More(t) => t,
                Step::Done(Some(t)) if handle.is_empty() => t,
                Step::Done(_) => {
                    return Err(failed(MechError::new(
                        0,
                        "server did not complete the context",
                    )))
                }
            };
            let cred = GssCred {
                proc_: if handle.is_empty() {
                    GssProc::Init
                } else {
                    GssProc::ContinueInit
                },
                seq_num: 0,
                service,
                handle: handle.clone(),
            };
            let mut e = xdr::Encoder::new();
            e.opaque(&token);
            let (verf, mut d) = conn
                .call_raw(
                    prog,
                    vers,
                    0,
                    &cred.opaque(),
                    |_| OpaqueAuth::none(),
                    e.finish(),
                )
                .await?;
            let res = InitRes::unpack(&mut d)?;
            match res.gss_major {
                GSS_S_COMPLETE => {
                    if !res.gss_token.is_empty() {
                        let (m, step) = step_off(mech, Some(res.gss_token.to_vec())).await?;
                        mech = m;
                        step?;
                    }
                    // RFC 2203 §5.2.3.1.1: the verifier checksums the window.
                    verify(&mut *mech, &be32(res.seq_window), &verf)?;
                    return Ok(ClientContext {
                        mech: Mutex::new(mech),
                        handle: res.handle,
                        next_seq: AtomicU32::new(1),
                        in_flight: Arc::new(tokio::sync::Semaphore::new(
                            res.seq_window.clamp(1, 1024) as usize,
                        )),
                        window: res.seq_window,
                        service,
                        retransmit_after: std::time::Duration::from_secs(2),
                        retransmits: std::sync::atomic::AtomicU64::new(0),
                    });
                }
                GSS_S_CONTINUE_NEEDED => {
                    handle = res.handle;
                    input = Some(res.gss_token.to_vec());
                }
                major => {
                    return Err(failed(MechError {
                        major,
                        minor: res.gss_minor,
                        what: "server refused the context".into(),
                    }))
                }
            }
        }
    }

    /// A place among the calls in flight (see `in_flight`); take it
    /// before [`ClientContext::next_seq`], hold it until the answer.
    pub async fn place(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.in_flight.clone().acquire_owned().await.ok()
    }

    /// Calls sent again after going unanswered.
    pub fn retransmits(&self) -> u64 {
        self.retransmits.load(Ordering::Relaxed)
    }

    pub(crate) fn retransmitted(&self) {
        self.retransmits.fetch_add(1, Ordering::Relaxed);
    }

    /// The next sequence number.
    pub fn next_seq(&self) -> u32 {
        self.next_seq.fetch_add(1, Ordering::Relaxed)
    }

    /// The credential of a call with sequence number `seq`.
    pub fn cred(&self, proc_: GssProc, seq: u32, service: GssService) -> OpaqueAuth {
        GssCred {
            proc_,
            seq_num: seq,
            service,
            handle: self.handle.clone(),
        }
        .opaque()
    }

    /// The verifier of a call: the checksum of its header.
    pub fn verifier(&self, header: &[u8]) -> OpaqueAuth {
        let mic = lock(&self.mech).get_mic(header).unwrap_or_default();
        OpaqueAuth {
            flavor: RPCSEC_GSS,
            body: Bytes::from(mic),
        }
    }

    /// The arguments sealed for `service` (RFC 2203 §5.3.2).
    pub fn seal_args(
        &self,
        seq: u32,
        service: GssService,
        args: Vec<Bytes>,
    ) -> Result<Vec<Bytes>, CallError> {
        super::body::seal(&mut **lock(&self.mech), seq, service, args).map_err(failed)
    }

    /// Checks a reply's verifier (the checksum of `seq`) and unseals its
    /// results (RFC 2203 §5.3.3.2).
    pub fn open_reply(
        &self,
        seq: u32,
        service: GssService,
        verf: &OpaqueAuth,
        d: Decoder,
    ) -> Result<Decoder, CallError> {
        let mut m = lock(&self.mech);
        verify(&mut **m, &be32(seq), verf)?;
        super::body::open(&mut **m, seq, service, d).map_err(|e| match e {
            Unopened::Xdr(e) => CallError::Garbage(e),
            Unopened::Mech(e) => failed(e),
            Unopened::Seq => CallError::Rejected(ReplyError::GarbageArgs),
        })
    }

    /// Ends the context on the server (RFC 2203 §5.4).
    pub async fn destroy(
        self: &Arc<Self>,
        conn: &Connection,
        prog: u32,
        vers: u32,
    ) -> Result<(), CallError> {
        let seq = self.next_seq();
        let cred = self.cred(GssProc::Destroy, seq, self.service);
        let me = self.clone();
        let (verf, d) = conn
            .call_raw(prog, vers, 0, &cred, move |h| me.verifier(h), Vec::new())
            .await?;
        self.open_reply(seq, GssService::None, &verf, d).map(|_| ())
    }
}

fn verify(m: &mut dyn MechContext, msg: &[u8], verf: &OpaqueAuth) -> Result<(), CallError> {
    if verf.flavor != RPCSEC_GSS {
        return Err(CallError::Rejected(ReplyError::Auth(AuthStat::InvalidResp)));
    }
    m.verify_mic(msg, &verf.body)
        .map_err(|_| CallError::Rejected(ReplyError::Auth(AuthStat::InvalidResp)))
}
