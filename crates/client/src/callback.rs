//! The client's callback service (RFC 8881 §20): CB_NULL and CB_COMPOUND
//! with CB_SEQUENCE, CB_RECALL, CB_RECALL_ANY and CB_NOTIFY_LOCK
//! and CB_NOTIFY (recorded), and CB_GETATTR (answered with attributes a test set for
//! the file, [`CallbackState::set_attrs`]); other
//! callback operations are answered NFS4ERR_NOTSUPP. A recalled delegation is returned asynchronously with
//! DELEGRETURN over the fore channel.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use proto::nfs4::*;
use rpc::{Call, Reply, ReplyError, ReplyFuture, Service};
use tokio::sync::mpsc;
use tracing::{debug, warn};
use xdr::{Encoder, Pack, Unpack};

use crate::Client;

/// A delegation the server recalled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recall {
    pub stateid: StateId4,
    pub truncate: bool,
    pub fh: NfsFh4,
}

#[derive(Debug, Default)]
struct BackSession {
    sessionid: Option<SessionId4>,
    attrs: ChannelAttrs4,
    /// Last sequence id seen per back-channel slot.
    seqids: Vec<u32>,
}

/// What the callback service knows and has seen.
#[derive(Debug)]
pub struct CallbackState {
    program: u32,
    session: Mutex<BackSession>,
    recall_tx: mpsc::UnboundedSender<Recall>,
    recall_rx: Mutex<Option<mpsc::UnboundedReceiver<Recall>>>,
    recalls: Mutex<Vec<Recall>>,
    lock_notices: Mutex<Vec<CbNotifyLock4Args>>,
    recall_anys: Mutex<Vec<CbRecallAny4Args>>,
    layout_recalls: Mutex<Vec<CbLayoutRecall4Args>>,
    /// What CB_GETATTR answers, per filehandle.
    attrs: Mutex<std::collections::HashMap<NfsFh4, Attrs>>,
    getattrs: Mutex<Vec<CbGetattr4Args>>,
    notifies: Mutex<Vec<CbNotify4Args>>,
    cb_nulls: AtomicU64,
    cb_compounds: AtomicU64,
    delegreturns: AtomicU64,
}

impl CallbackState {
    pub fn new(program: u32) -> Arc<Self> {
        let (tx, rx) = mpsc::unbounded_channel();
        Arc::new(CallbackState {
            program,
            session: Mutex::new(BackSession::default()),
            recall_tx: tx,
            recall_rx: Mutex::new(Some(rx)),
            recalls: Mutex::new(Vec::new()),
            lock_notices: Mutex::new(Vec::new()),
            recall_anys: Mutex::new(Vec::new()),
            layout_recalls: Mutex::new(Vec::new()),
            attrs: Mutex::new(Default::default()),
            getattrs: Mutex::new(Vec::new()),
            notifies: Mutex::new(Vec::new()),
            cb_nulls: AtomicU64::new(0),
            cb_compounds: AtomicU64::new(0),
            delegreturns: AtomicU64::new(0),
        })
    }

    /// Records the session the back channel belongs to.
    pub fn set_session(&self, id: SessionId4, attrs: ChannelAttrs4) {
        let mut s = self.session.lock().unwrap_or_else(|p| p.into_inner());
        s.sessionid = Some(id);
        s.attrs = attrs;
        s.seqids = vec![0; attrs.maxrequests.max(1) as usize];
    }

    /// Every CB_RECALL_ANY received so far (RFC 8881 §20.6).
    pub fn recall_anys(&self) -> Vec<CbRecallAny4Args> {
        self.recall_anys
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Every CB_LAYOUTRECALL received so far (RFC 8881 §20.3). Answered
    /// NFS4_OK: returning the layouts (LAYOUTRETURN) is the caller's.
    pub fn layout_recalls(&self) -> Vec<CbLayoutRecall4Args> {
        self.layout_recalls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Sets what CB_GETATTR answers for `fh` (RFC 8881 §20.1): the
    /// attributes of a file this client holds a write delegation of, as
    /// its cache has them. A file with none set is answered
    /// NFS4ERR_BADHANDLE.
    pub fn set_attrs(&self, fh: NfsFh4, attrs: Attrs) {
        self.attrs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(fh, attrs);
    }

    /// Every CB_GETATTR received so far.
    pub fn getattrs(&self) -> Vec<CbGetattr4Args> {
        self.getattrs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Every CB_NOTIFY received so far (RFC 8881 §20.4): changes to a
    /// directory this client holds a delegation of.
    pub fn notifies(&self) -> Vec<CbNotify4Args> {
        self.notifies
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Every CB_RECALL received so far.
    pub fn recalls(&self) -> Vec<Recall> {
        self.recalls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Every CB_NOTIFY_LOCK received so far (RFC 8881 §20.11): a lock a
    /// blocking LOCK waited for may be free now.
    pub fn lock_notices(&self) -> Vec<CbNotifyLock4Args> {
        self.lock_notices
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// CB_NULL calls received.
    pub fn cb_nulls(&self) -> u64 {
        self.cb_nulls.load(Ordering::Relaxed)
    }

    /// CB_COMPOUND calls received.
    pub fn cb_compounds(&self) -> u64 {
        self.cb_compounds.load(Ordering::Relaxed)
    }

    /// DELEGRETURNs sent in answer to recalls (successful or not).
    pub fn delegreturns(&self) -> u64 {
        self.delegreturns.load(Ordering::Relaxed)
    }

    /// RFC 8881 §20.9.3: CB_SEQUENCE checks against the back channel.
    fn cb_sequence(&self, a: &CbSequence4Args) -> Result<CbSequence4ResOk, NfsStat4> {
        let mut s = self.session.lock().unwrap_or_else(|p| p.into_inner());
        if s.sessionid != Some(a.sessionid) {
            return Err(NfsStat4::Nfs4errBadsession);
        }
        let highest = s.seqids.len() as u32 - 1;
        let Some(last) = s.seqids.get_mut(a.slotid as usize) else {
            return Err(NfsStat4::Nfs4errBadslot);
        };
        if a.sequenceid == last.wrapping_add(1) {
            *last = a.sequenceid;
        } else if a.sequenceid == *last {
            // No reply cache on this side (ca_maxresponsesize_cached 0).
            return Err(NfsStat4::Nfs4errRetryUncachedRep);
        } else {
            return Err(NfsStat4::Nfs4errSeqMisordered);
        }
        Ok(CbSequence4ResOk {
            sessionid: a.sessionid,
            sequenceid: a.sequenceid,
            slotid: a.slotid,
            highest_slotid: highest,
            target_highest_slotid: highest,
        })
    }

    /// Runs one CB_COMPOUND (RFC 8881 §20) and encodes the reply.
    /// Operations are decoded one at a time, so an undecodable or unknown
    /// one gets its own error result after those before it ran.
    fn cb_compound(&self, d: &mut xdr::Decoder) -> Result<Vec<Bytes>, ReplyError> {
        self.cb_compounds.fetch_add(1, Ordering::Relaxed);
        let garbage = |_| ReplyError::GarbageArgs;
        let tag = Bytes::unpack(d).map_err(garbage)?;
        let minorversion = d.u32().map_err(garbage)?;
        let _callback_ident = d.u32().map_err(garbage)?;
        let nops = d.count(u32::MAX as usize, 4).map_err(garbage)?;
        let mut results = Vec::new();
        let mut status = NfsStat4::Nfs4Ok;
        if !(1..=2).contains(&minorversion) {
            status = NfsStat4::Nfs4errMinorVersMismatch;
        } else {
            for i in 0..nops {
                let r = match NfsCbArgOp4::unpack(d) {
                    Err(_) => NfsCbResOp4::CbIllegal(Res4::Err(NfsStat4::Nfs4errBadxdr)),
                    Ok(op) => self.cb_op(i, op),
                };
                status = r.status();
                results.push(r);
                if status != NfsStat4::Nfs4Ok {
                    break;
                }
            }
        }
        let mut e = Encoder::with_capacity(128);
        CbCompound4Res {
            status,
            tag,
            resarray: results,
        }
        .pack(&mut e);
        Ok(e.finish())
    }

    fn cb_op(&self, index: usize, op: NfsCbArgOp4) -> NfsCbResOp4 {
        match (index, op) {
            (0, NfsCbArgOp4::CbSequence(a)) => NfsCbResOp4::CbSequence(self.cb_sequence(&a).into()),
            (0, op) => error_result(op.opnum(), NfsStat4::Nfs4errOpNotInSession),
            (_, NfsCbArgOp4::CbSequence(_)) => {
                NfsCbResOp4::CbSequence(Res4::Err(NfsStat4::Nfs4errSequencePos))
            }
            (_, NfsCbArgOp4::CbRecall(a)) => {
                let r = Recall {
                    stateid: a.stateid,
                    truncate: a.truncate,
                    fh: a.fh,
                };
                debug!(stateid = ?r.stateid, "CB_RECALL");
                self.recalls
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(r.clone());
                let _ = self.recall_tx.send(r);
                NfsCbResOp4::CbRecall(Res4::Ok(()))
            }
            (_, NfsCbArgOp4::CbRecallAny(a)) => {
                // A hint (RFC 8881 §20.6): this client keeps what it holds
                // (its delegations are returned on recall or CLOSE).
                debug!(keep = a.objects_to_keep, "CB_RECALL_ANY");
                self.recall_anys
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(a);
                NfsCbResOp4::CbRecallAny(Res4::Ok(()))
            }
            (_, NfsCbArgOp4::CbLayoutRecall(a)) => {
                debug!(recall = ?a.recall, "CB_LAYOUTRECALL");
                self.layout_recalls
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(a);
                NfsCbResOp4::CbLayoutRecall(Res4::Ok(()))
            }
            (_, NfsCbArgOp4::CbGetattr(a)) => {
                debug!(fh = ?a.fh, "CB_GETATTR");
                let known = self
                    .attrs
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get(&a.fh)
                    .cloned();
                let res = match known {
                    Some(attrs) => Res4::Ok(CbGetattr4ResOk {
                        obj_attributes: attrs.encode_only(&a.attr_request),
                    }),
                    None => Res4::Err(NfsStat4::Nfs4errBadhandle),
                };
                self.getattrs
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(a);
                NfsCbResOp4::CbGetattr(res)
            }
            (_, NfsCbArgOp4::CbNotify(a)) => {
                debug!(fh = ?a.fh, n = a.changes.len(), "CB_NOTIFY");
                self.notifies
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(a);
                NfsCbResOp4::CbNotify(Res4::Ok(()))
            }
            (_, NfsCbArgOp4::CbNotifyLock(a)) => {
                debug!(owner = ?a.lock_owner, "CB_NOTIFY_LOCK");
                self.lock_notices
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(a);
                NfsCbResOp4::CbNotifyLock(Res4::Ok(()))
            }
            (_, op) => error_result(op.opnum(), NfsStat4::Nfs4errNotsupp),
        }
    }
}

/// An error result for callback operation `opnum` (OP_CB_ILLEGAL for
/// numbers that are not callback operations).
fn error_result(opnum: u32, status: NfsStat4) -> NfsCbResOp4 {
    let e = Res4::Err(status);
    match opnum {
        3 => NfsCbResOp4::CbGetattr(Res4::Err(status)),
        4 => NfsCbResOp4::CbRecall(e),
        5 => NfsCbResOp4::CbLayoutRecall(e),
        6 => NfsCbResOp4::CbNotify(e),
        7 => NfsCbResOp4::CbPushDeleg(e),
        8 => NfsCbResOp4::CbRecallAny(e),
        9 => NfsCbResOp4::CbRecallableObjAvail(e),
        10 => NfsCbResOp4::CbRecallSlot(e),
        11 => NfsCbResOp4::CbSequence(Res4::Err(status)),
        12 => NfsCbResOp4::CbWantsCancelled(e),
        13 => NfsCbResOp4::CbNotifyLock(e),
        14 => NfsCbResOp4::CbNotifyDeviceId(e),
        15 => NfsCbResOp4::CbOffload(e),
        _ => NfsCbResOp4::CbIllegal(Res4::Err(NfsStat4::Nfs4errOpIllegal)),
    }
}

/// The `rpc::Service` for the callback program on the client's connection.
pub struct CallbackService {
    pub state: Arc<CallbackState>,
}

impl Service for CallbackService {
    fn call(&self, mut call: Call) -> ReplyFuture {
        let st = self.state.clone();
        Box::pin(async move {
            if call.prog != st.program {
                return Reply::Error(ReplyError::ProgUnavail);
            }
            if call.vers != 1 {
                return Reply::Error(ReplyError::ProgMismatch { low: 1, high: 1 });
            }
            match call.proc_ {
                CB_NULL => {
                    st.cb_nulls.fetch_add(1, Ordering::Relaxed);
                    Reply::Success(Vec::new())
                }
                CB_COMPOUND => match st.cb_compound(&mut call.args) {
                    Ok(body) => Reply::Success(body),
                    Err(e) => Reply::Error(e),
                },
                _ => Reply::Error(ReplyError::ProcUnavail),
            }
        })
    }
}

/// Returns recalled delegations: one task per client, living as long as
/// the client does.
pub(crate) fn spawn_recall_returner(client: &Client, state: Arc<CallbackState>) {
    let Some(mut rx) = state
        .recall_rx
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
    else {
        return;
    };
    let weak = client.downgrade();
    tokio::spawn(async move {
        while let Some(r) = rx.recv().await {
            let Some(client) = Client::upgrade(&weak) else {
                break;
            };
            let state = state.clone();
            tokio::spawn(async move {
                let res = client.delegreturn(&r.fh, r.stateid).await;
                state.delegreturns.fetch_add(1, Ordering::Relaxed);
                if let Err(e) = res {
                    warn!(stateid = ?r.stateid, "DELEGRETURN after recall failed: {e}");
                }
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(st: &CallbackState, ops: Vec<NfsCbArgOp4>) -> CbCompound4Res {
        let args = CbCompound4Args {
            tag: Bytes::from_static(b"t"),
            minorversion: 1,
            callback_ident: 0,
            argarray: ops,
        };
        let mut d = xdr::Decoder::new(xdr::to_bytes(&args));
        let out = st.cb_compound(&mut d).unwrap();
        let mut all = Vec::new();
        for c in out {
            all.extend_from_slice(&c);
        }
        xdr::from_bytes(Bytes::from(all)).unwrap()
    }

    fn seq(seqid: u32, slot: u32) -> NfsCbArgOp4 {
        NfsCbArgOp4::CbSequence(CbSequence4Args {
            sessionid: [1; 16],
            sequenceid: seqid,
            slotid: slot,
            highest_slotid: 0,
            cachethis: false,
            referring_call_lists: vec![],
        })
    }

    #[test]
    fn cb_sequence_checks_slot_and_seqid() {
        let st = CallbackState::new(1);
        st.set_session(
            [1; 16],
            ChannelAttrs4 {
                maxrequests: 2,
                ..Default::default()
            },
        );
        assert_eq!(run(&st, vec![seq(1, 0)]).status, NfsStat4::Nfs4Ok);
        assert_eq!(run(&st, vec![seq(2, 0)]).status, NfsStat4::Nfs4Ok);
        assert_eq!(
            run(&st, vec![seq(2, 0)]).status,
            NfsStat4::Nfs4errRetryUncachedRep
        );
        assert_eq!(
            run(&st, vec![seq(5, 0)]).status,
            NfsStat4::Nfs4errSeqMisordered
        );
        assert_eq!(run(&st, vec![seq(1, 2)]).status, NfsStat4::Nfs4errBadslot);
        assert_eq!(run(&st, vec![seq(1, 1)]).status, NfsStat4::Nfs4Ok);
        let mut other = seq(3, 0);
        if let NfsCbArgOp4::CbSequence(a) = &mut other {
            a.sessionid = [9; 16];
        }
        assert_eq!(run(&st, vec![other]).status, NfsStat4::Nfs4errBadsession);
        // Not first: OP_NOT_IN_SESSION; SEQUENCE later: SEQUENCE_POS.
        let recall = NfsCbArgOp4::CbRecall(CbRecall4Args {
            stateid: StateId4::default(),
            truncate: false,
            fh: NfsFh4(Bytes::from_static(b"fh")),
        });
        assert_eq!(
            run(&st, vec![recall.clone()]).status,
            NfsStat4::Nfs4errOpNotInSession
        );
        let r = run(&st, vec![seq(3, 0), seq(4, 0)]);
        assert_eq!(r.status, NfsStat4::Nfs4errSequencePos);
        assert_eq!(r.resarray.len(), 2);
    }

    #[test]
    fn cb_recall_is_queued_and_others_notsupp() {
        let st = CallbackState::new(1);
        st.set_session(
            [1; 16],
            ChannelAttrs4 {
                maxrequests: 1,
                ..Default::default()
            },
        );
        let sid = StateId4 {
            seqid: 1,
            other: [3; 12],
        };
        let recall = NfsCbArgOp4::CbRecall(CbRecall4Args {
            stateid: sid,
            truncate: true,
            fh: NfsFh4(Bytes::from_static(b"fh")),
        });
        let r = run(&st, vec![seq(1, 0), recall]);
        assert_eq!(r.status, NfsStat4::Nfs4Ok);
        assert_eq!(r.resarray.len(), 2);
        assert_eq!(st.recalls().len(), 1);
        assert_eq!(st.recalls()[0].stateid, sid);
        let rx = st.recall_rx.lock().unwrap().take();
        assert_eq!(rx.unwrap().try_recv().unwrap().stateid, sid);

        let r = run(
            &st,
            vec![
                seq(2, 0),
                NfsCbArgOp4::CbRecallAny(CbRecallAny4Args {
                    objects_to_keep: 0,
                    type_mask: Bitmap4::default(),
                }),
            ],
        );
        assert_eq!(r.status, NfsStat4::Nfs4Ok);
        assert_eq!(st.recall_anys().len(), 1);
        let r = run(
            &st,
            vec![
                seq(3, 0),
                NfsCbArgOp4::CbNotifyDeviceId(CbNotifyDeviceId4Args {
                    changes: Vec::new(),
                }),
            ],
        );
        assert_eq!(r.status, NfsStat4::Nfs4errNotsupp);
        let r = run(&st, vec![seq(4, 0), NfsCbArgOp4::Unknown(99)]);
        assert_eq!(r.status, NfsStat4::Nfs4errOpIllegal);
    }
}
