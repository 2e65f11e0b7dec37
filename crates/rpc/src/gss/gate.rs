//! The server side of RPCSEC_GSS (RFC 2203 §5): context creation and
//! destruction, the checks on each call's header (checksum, expiry,
//! sequence window), the arguments unwrapped, and the reply's verifier
//! and body sealed as the call's service asks.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use xdr::Decoder;

use super::mech::{MechError, Mechanism, Step};
use super::table::{
    handle_bytes, handle_of, Context, Contexts, MAX_CONTEXT_LIFETIME, PENDING_LIFETIME,
};
use super::window::{Seen, SEQ_WINDOW};
use super::wire::*;
use super::{GssAuth, Ids, Principal};
use crate::conn::{Auth, Reply};
use crate::msg::{AuthStat, OpaqueAuth, ReplyError, RPCSEC_GSS};

/// Maps a principal (`user@REALM`) to the local identity it acts as;
/// None: unknown, the export's anonymous identity. May block (the name
/// service): it runs with context creation, off the async threads.
pub type NameMap = dyn Fn(&str) -> Option<Ids> + Send + Sync;

/// The server's RPCSEC_GSS: the mechanism, the contexts, the name map.
pub struct Gate {
    mech: Arc<dyn Mechanism>,
    contexts: Contexts,
    names: Arc<NameMap>,
    counts: Counts,
}

/// What the gate has done since it started.
#[derive(Debug, Default)]
pub struct Counts {
    /// Contexts established.
    pub established: AtomicU64,
    /// Context creations the mechanism refused (bad or forged tokens).
    pub refused: AtomicU64,
    /// Calls refused with an auth_stat (unknown or expired context, bad
    /// checksum).
    pub denied: AtomicU64,
    /// Calls dropped: replays and calls below the window.
    pub dropped: AtomicU64,
    /// Calls whose sealed arguments did not check (GARBAGE_ARGS).
    pub garbage: AtomicU64,
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// What to do with a call whose credential is RPCSEC_GSS.
pub enum Verdict {
    /// Hand it to the program as `auth` with these arguments; seal the
    /// reply with `seal`.
    Call {
        auth: Auth,
        args: Decoder,
        seal: Seal,
    },
    /// Context creation: run [`Gate::init`] off the async threads and
    /// send what it returns.
    Init { cred: GssCred, token: Bytes },
    /// Send this now.
    Answer(Reply, Seal),
    /// Refuse (MSG_DENIED, AUTH_ERROR).
    Deny(AuthStat, &'static str),
    /// Send nothing: a replayed call or one below the window (RFC 2203
    /// §5.3.3.1 says to drop it silently).
    Drop(&'static str),
}

/// Why a call's header did not pass.
enum Refused {
    Deny(AuthStat, &'static str),
    Drop(&'static str),
}

/// How the reply is sealed (RFC 2203 §5.2.3.1, §5.3.3.2).
#[derive(Default)]
pub enum Seal {
    /// AUTH_NONE verifier, body as it is.
    #[default]
    None,
    /// This verifier, body as it is (context creation replies).
    Verf(OpaqueAuth),
    /// Verifier: the checksum of `seq`; body sealed per `service`.
    Data {
        ctx: Arc<Context>,
        seq: u32,
        service: GssService,
    },
}

impl Seal {
    /// Whether the body must be in memory to be sealed (checksummed or
    /// encrypted): such replies take no ranges of files.
    pub fn wraps_body(&self) -> bool {
        matches!(
            self,
            Seal::Data {
                service: GssService::Integrity | GssService::Privacy,
                ..
            }
        )
    }

    /// The reply's verifier, and its body sealed (None: no body to
    /// seal, an error reply).
    pub fn seal(
        &self,
        body: Option<Vec<Bytes>>,
    ) -> Result<(OpaqueAuth, Option<Vec<Bytes>>), MechError> {
        match self {
            Seal::None => Ok((OpaqueAuth::none(), body)),
            Seal::Verf(v) => Ok((v.clone(), body)),
            Seal::Data { ctx, seq, service } => {
                let mut inner = ctx.lock();
                let mic = inner.mech.get_mic(&be32(*seq))?;
                let verf = OpaqueAuth {
                    flavor: RPCSEC_GSS,
                    body: Bytes::from(mic),
                };
                let body = match body {
                    Some(b) => Some(super::body::seal(&mut *inner.mech, *seq, *service, b)?),
                    None => None,
                };
                Ok((verf, body))
            }
        }
    }
}

impl Gate {
    pub fn new(mech: Arc<dyn Mechanism>, max_contexts: usize, names: Arc<NameMap>) -> Gate {
        Gate {
            mech,
            contexts: Contexts::new(max_contexts, seed()),
            names,
            counts: Counts::default(),
        }
    }

    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    pub fn contexts(&self) -> &Contexts {
        &self.contexts
    }

    /// The mechanism's own name for a principal's local user.
    pub fn mechanism(&self) -> &Arc<dyn Mechanism> {
        &self.mech
    }

    /// Checks a call. `header` is the call's header from the xid through
    /// the credential (what the verifier checksums); `proc_` its
    /// procedure; `args` what follows the verifier.
    pub fn check(
        &self,
        header: &[u8],
        cred: Bytes,
        verf: &OpaqueAuth,
        proc_: u32,
        args: Decoder,
        now: Instant,
    ) -> Verdict {
        let v = self.check_call(header, cred, verf, proc_, args, now);
        match &v {
            Verdict::Deny(..) => bump(&self.counts.denied),
            Verdict::Drop(_) => bump(&self.counts.dropped),
            Verdict::Answer(Reply::Error(ReplyError::GarbageArgs), _) => bump(&self.counts.garbage),
            _ => {}
        }
        v
    }

    fn check_call(
        &self,
        header: &[u8],
        cred: Bytes,
        verf: &OpaqueAuth,
        proc_: u32,
        mut args: Decoder,
        now: Instant,
    ) -> Verdict {
        let Ok(cred) = GssCred::decode(cred) else {
            return Verdict::Deny(AuthStat::BadCred, "credential does not decode");
        };
        match cred.proc_ {
            GssProc::Init | GssProc::ContinueInit => {
                // RFC 2203 §5.2.2: context creation uses the NULL procedure.
                if proc_ != 0 {
                    return Verdict::Deny(
                        AuthStat::BadCred,
                        "context creation on a procedure not NULL",
                    );
                }
                match args.opaque(MAX_INIT_TOKEN) {
                    Ok(token) => Verdict::Init { cred, token },
                    Err(_) => Verdict::Answer(Reply::Error(ReplyError::GarbageArgs), Seal::None),
                }
            }
            GssProc::Data | GssProc::Destroy => {
                let ctx = match self.verify(&cred, header, verf, now) {
                    Ok(c) => c,
                    Err(Refused::Deny(stat, why)) => return Verdict::Deny(stat, why),
                    Err(Refused::Drop(why)) => return Verdict::Drop(why),
                };
                let seal = Seal::Data {
                    ctx: ctx.clone(),
                    seq: cred.seq_num,
                    service: cred.service,
                };
                if cred.proc_ == GssProc::Destroy {
                    // RFC 2203 §5.4: answered like a call, then gone.
                    self.contexts.remove(ctx.handle);
                    return Verdict::Answer(Reply::Success(Vec::new()), seal);
                }
                let Some(principal) = ctx.auth.clone() else {
                    return Verdict::Deny(AuthStat::GssCredProblem, "context not established");
                };
                let args = match self.unseal(&ctx, &cred, args) {
                    Some(a) => a,
                    None => {
                        return Verdict::Answer(Reply::Error(ReplyError::GarbageArgs), seal);
                    }
                };
                Verdict::Call {
                    auth: Auth::Gss(GssAuth {
                        principal,
                        service: cred.service,
                    }),
                    args,
                    seal,
                }
            }
        }
    }

    /// RFC 2203 §5.3.3.1: the context, its expiry, the sequence number's
    /// bound, the header's checksum, then the window.
    fn verify(
        &self,
        cred: &GssCred,
        header: &[u8],
        verf: &OpaqueAuth,
        now: Instant,
    ) -> Result<Arc<Context>, Refused> {
        let ctx = handle_of(&cred.handle)
            .and_then(|h| self.contexts.get(h, now))
            .ok_or(Refused::Deny(AuthStat::GssCredProblem, "unknown context"))?;
        if !ctx.established() {
            return Err(Refused::Deny(
                AuthStat::GssCredProblem,
                "context not established",
            ));
        }
        if ctx.expires <= now {
            self.contexts.remove(ctx.handle);
            return Err(Refused::Deny(AuthStat::GssCtxProblem, "context expired"));
        }
        if cred.seq_num >= MAXSEQ {
            self.contexts.remove(ctx.handle);
            return Err(Refused::Deny(
                AuthStat::GssCtxProblem,
                "sequence numbers used up",
            ));
        }
        if verf.flavor != RPCSEC_GSS {
            return Err(Refused::Deny(
                AuthStat::BadVerf,
                "verifier is not RPCSEC_GSS",
            ));
        }
        let mut inner = ctx.lock();
        if inner.mech.verify_mic(header, &verf.body).is_err() {
            return Err(Refused::Deny(
                AuthStat::GssCredProblem,
                "header checksum does not verify",
            ));
        }
        match inner.window.check(cred.seq_num) {
            Seen::Fresh => {}
            Seen::Replay => return Err(Refused::Drop("sequence number already used")),
            Seen::Old => return Err(Refused::Drop("sequence number below the window")),
        }
        drop(inner);
        Ok(ctx)
    }

    /// RFC 2203 §5.3.2: the arguments out of their integrity or privacy
    /// wrapping; None if they do not check (GARBAGE_ARGS).
    fn unseal(&self, ctx: &Context, cred: &GssCred, args: Decoder) -> Option<Decoder> {
        super::body::open(&mut *ctx.lock().mech, cred.seq_num, cred.service, args).ok()
    }

    /// Context creation (RFC 2203 §5.2.2, §5.2.3): one step of the
    /// mechanism with the client's token. This may block (the key table,
    /// the name map): run it off the async threads. Returns the reply,
    /// its seal, and the failure to log, if any.
    pub fn init(
        &self,
        cred: &GssCred,
        token: &[u8],
        now: Instant,
    ) -> (Reply, Seal, Option<String>) {
        let r = self.init_step(cred, token, now);
        match &r.1 {
            Seal::Verf(_) => bump(&self.counts.established),
            _ if r.2.is_some() && !r.2.as_deref().is_some_and(|n| n.contains("to make room")) => {
                bump(&self.counts.refused)
            }
            _ => {}
        }
        r
    }

    fn init_step(
        &self,
        cred: &GssCred,
        token: &[u8],
        now: Instant,
    ) -> (Reply, Seal, Option<String>) {
        let refuse = |e: &MechError| InitRes {
            handle: Bytes::new(),
            gss_major: if e.major == 0 { GSS_S_FAILURE } else { e.major },
            gss_minor: e.minor,
            seq_window: 0,
            gss_token: Bytes::new(),
        };
        let (handle, mut mech) = match cred.proc_ {
            GssProc::ContinueInit => {
                let pending = handle_of(&cred.handle)
                    .and_then(|h| self.contexts.remove(h))
                    .filter(|c| !c.established() && c.expires > now);
                let Some(ctx) = pending.and_then(Arc::into_inner) else {
                    let e = MechError::new(
                        GSS_S_FAILURE,
                        "no context being established under that handle",
                    );
                    return (Reply::success(&refuse(&e)), Seal::None, Some(e.to_string()));
                };
                (ctx.handle, ctx.into_inner().mech)
            }
            _ => match self.mech.acceptor() {
                Ok(m) => (self.contexts.allocate(), m),
                Err(e) => return (Reply::success(&refuse(&e)), Seal::None, Some(e.to_string())),
            },
        };
        let step = mech.step(Some(token));
        let (out, done) = match step {
            Ok(Step::Done(t)) => (t.unwrap_or_default(), true),
            Ok(Step::More(t)) => (t, false),
            Err(e) => return (Reply::success(&refuse(&e)), Seal::None, Some(e.to_string())),
        };
        if !done {
            let ctx = Context::new(handle, mech, None, now + PENDING_LIFETIME, now);
            self.contexts.insert(Arc::new(ctx), now);
            let res = InitRes {
                handle: Bytes::copy_from_slice(&handle_bytes(handle)),
                gss_major: GSS_S_CONTINUE_NEEDED,
                gss_minor: 0,
                seq_window: 0,
                gss_token: Bytes::from(out),
            };
            return (Reply::success(&res), Seal::None, None);
        }
        let name = match mech.peer() {
            Ok(n) => n,
            Err(e) => return (Reply::success(&refuse(&e)), Seal::None, Some(e.to_string())),
        };
        // RFC 2203 §5.2.3.1: the verifier is the checksum of seq_window.
        let verf = match mech.get_mic(&be32(SEQ_WINDOW)) {
            Ok(m) => OpaqueAuth {
                flavor: RPCSEC_GSS,
                body: Bytes::from(m),
            },
            Err(e) => return (Reply::success(&refuse(&e)), Seal::None, Some(e.to_string())),
        };
        let life = mech
            .lifetime()
            .unwrap_or(MAX_CONTEXT_LIFETIME)
            .min(MAX_CONTEXT_LIFETIME)
            .max(Duration::from_secs(1));
        let ids = (self.names)(&name);
        let principal = Arc::new(Principal { name, ids });
        let ctx = Context::new(handle, mech, Some(principal), now + life, now);
        let evicted = self.contexts.insert(Arc::new(ctx), now);
        let res = InitRes {
            handle: Bytes::copy_from_slice(&handle_bytes(handle)),
            gss_major: GSS_S_COMPLETE,
            gss_minor: 0,
            seq_window: SEQ_WINDOW,
            gss_token: Bytes::from(out),
        };
        let note = (evicted > 0)
            .then(|| format!("{evicted} idle GSS context(s) dropped to make room (table full)"));
        (Reply::success(&res), Seal::Verf(verf), note)
    }
}

/// Where handles start: from the clock, so that a restarted server's
/// handles differ from those its clients still hold.
fn seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    t.wrapping_mul(0x9e37_79b9_7f4a_7c15) << 16
}
