//! CREATE_SESSION (RFC 8881 §18.36).

use proto::nfs4::*;

use crate::nfs4::callback::probe_back_channel;
use crate::nfs4::compound::Compound;
use crate::nfs4::state::{NewSession, Principal};

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
