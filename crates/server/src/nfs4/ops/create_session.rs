//! CREATE_SESSION (RFC 8881 §18.36).

use proto::nfs4::*;

use crate::handoff::off_thread;
use crate::nfs4::callback::probe_back_channel;
use crate::nfs4::compound::context::Compound;
use crate::nfs4::session_io::{io, CbConn, SessionIo};
use state::NewSession;

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
        principal: cx.principal(),
        flags: args.flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
        fore,
        back,
        cb_program: args.cb_program,
        sec_parms: args.sec_parms,
        minorversion: cx.minorversion,
        conn: Some(CbConn::of(&cx.conn)),
        drc: cx.srv.drc.clone(),
        io: SessionIo::boxed(),
    };
    match cx.srv.state().create_session(req) {
        Ok(mut created) => {
            if args.flags & CREATE_SESSION4_FLAG_PERSIST != 0 && persist(cx, &created.resok).await {
                created.resok.flags |= CREATE_SESSION4_FLAG_PERSIST;
            }
            if let Some(session) = created.probe {
                tokio::spawn(probe_back_channel(session));
            }
            Res4::Ok(created.resok)
        }
        Err(e) => Res4::Err(e),
    }
}

/// Makes the session persistent (RFC 8881 §2.10.6.5, `stable::sessions`):
/// its file is on stable storage before the reply grants the flag. False
/// where the server keeps no state directory, or the file cannot be made.
async fn persist(cx: &Compound, resok: &CreateSession4ResOk) -> bool {
    let Some(session) = cx.srv.state().session(&resok.sessionid) else {
        return false;
    };
    let persisted = &io(&session).persist;
    if persisted.get().is_some() {
        // A retransmitted CREATE_SESSION.
        return true;
    }
    if !cx.srv.sessions.enabled() {
        return false;
    }
    let (srv, id, slots) = (
        cx.srv.clone(),
        resok.sessionid,
        resok.fore_chan_attrs.maxrequests,
    );
    match off_thread(move || srv.sessions.create(&id, slots)).await {
        Ok(Ok(Some(file))) => persisted.set(file).is_ok() || persisted.get().is_some(),
        Ok(Ok(None)) => false,
        Ok(Err(e)) => {
            tracing::warn!("persistent session refused: its file: {e}");
            false
        }
        Err(_) => false,
    }
}
