//! CREATE_SESSION (RFC 8881 §18.36).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use proto::nfs4::*;
use tracing::debug;

use crate::nfs4::compound::Compound;
use crate::nfs4::state::{NewSession, Principal, Session};

const FLAGS: u32 = CREATE_SESSION4_FLAG_PERSIST
    | CREATE_SESSION4_FLAG_CONN_BACK_CHAN
    | CREATE_SESSION4_FLAG_CONN_RDMA;
/// Smallest request and reply sizes we accept on either channel.
const MIN_SIZE: u32 = 256;
/// Most back-channel slots we use.
const MAX_BACK_SLOTS: u32 = 16;

pub async fn run(cx: &mut Compound, args: CreateSession4Args) -> CreateSession4Res {
    if args.flags & !FLAGS != 0 {
        return Res4::Err(NfsStat4::Nfs4errInval);
    }
    let fa = &args.fore_chan_attrs;
    let ba = &args.back_chan_attrs;
    if fa.maxrequestsize < MIN_SIZE
        || fa.maxresponsesize < MIN_SIZE
        || fa.maxoperations < 1
        || fa.maxrequests < 1
        || ba.maxrequestsize < MIN_SIZE
        || ba.maxresponsesize < MIN_SIZE
        || ba.maxoperations < 2
        || ba.maxrequests < 1
    {
        return Res4::Err(NfsStat4::Nfs4errToosmall);
    }
    let cfg = &cx.srv.cfg;
    let fore = ChannelAttrs4 {
        headerpadsize: 0,
        maxrequestsize: fa.maxrequestsize.min(cfg.max_request),
        maxresponsesize: fa.maxresponsesize.min(cfg.max_response),
        maxresponsesize_cached: fa.maxresponsesize_cached.min(cfg.max_response_cached),
        maxoperations: fa.maxoperations.min(cfg.max_ops),
        maxrequests: fa.maxrequests.min(cfg.max_slots),
        rdma_ird: None,
    };
    let back = ChannelAttrs4 {
        headerpadsize: 0,
        maxrequestsize: ba.maxrequestsize,
        maxresponsesize: ba.maxresponsesize,
        maxresponsesize_cached: ba.maxresponsesize_cached,
        maxoperations: ba.maxoperations,
        maxrequests: ba.maxrequests.min(MAX_BACK_SLOTS),
        rdma_ird: None,
    };
    let req = NewSession {
        clientid: args.clientid,
        sequence: args.sequence,
        principal: Principal::of(&cx.auth),
        flags: args.flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
        fore,
        back,
        cb_program: args.cb_program,
        sec_parms: args.sec_parms,
        minorversion: cx.minorversion,
        conn: Some(cx.conn.clone()),
        drc: cx.srv.drc.clone(),
    };
    match cx.srv.state().create_session(req) {
        Ok(created) => {
            if let Some(session) = created.probe {
                tokio::spawn(probe_back_channel(session));
            }
            Res4::Ok(created.resok)
        }
        Err(e) => Res4::Err(e),
    }
}

/// Sends CB_NULL over the back channel (RFC 8881 §20); a failure marks
/// the session's callback path down (SEQ4_STATUS_CB_PATH_DOWN_SESSION).
pub async fn probe_back_channel(session: Arc<Session>) {
    let (conn, program, cred) = {
        let Ok(b) = session.back.lock() else { return };
        (b.conn(), b.program, super::backchannel_ctl::cb_cred(&b.sec))
    };
    let Some(conn) = conn else {
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
