//! CREATE_SESSION (RFC 8881 §18.36).

use std::sync::atomic::{AtomicBool, AtomicU32};
use std::sync::{Arc, Mutex};

use proto::nfs4::*;

use crate::nfs4::callback::probe_back_channel;
use crate::nfs4::compound::Compound;
use crate::nfs4::state::session::{BackChannel, Session};
use crate::nfs4::state::slots::SlotTable;
use crate::nfs4::state::Principal;

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
    let principal = Principal::of(&cx.auth);
    let now = cx.srv.now();
    let lease = cx.srv.cfg.lease;
    let cfg = cx.srv.cfg.clone();
    let srv = cx.srv.clone();
    let (resok, session) = {
        let mut st = srv.state();
        let Some(c) = st.clients.get(&args.clientid) else {
            return Res4::Err(NfsStat4::Nfs4errStaleClientid);
        };
        if !c.confirmed && c.expired(now, lease) {
            st.purge_client(args.clientid);
            return Res4::Err(NfsStat4::Nfs4errStaleClientid);
        }
        // §18.36.4: the client's CREATE_SESSION sequence, with its own
        // one-entry reply cache.
        if args.sequence == c.cs_seq {
            return match &c.cs_reply {
                Some(r) => Res4::Ok(*r),
                None => Res4::Err(NfsStat4::Nfs4errSeqMisordered),
            };
        }
        if args.sequence != c.cs_seq.wrapping_add(1) {
            return Res4::Err(NfsStat4::Nfs4errSeqMisordered);
        }
        if !c.confirmed && c.principal != principal {
            return Res4::Err(NfsStat4::Nfs4errClidInuse);
        }
        let owner = c.owner.clone();
        let was_confirmed = c.confirmed;
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
        let flags = args.flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN;
        let id = st.new_sessionid(args.clientid);
        let session = Arc::new(Session {
            id,
            client: args.clientid,
            fore,
            flags,
            slots: Mutex::new(SlotTable::new(fore.maxrequests, srv.drc.clone())),
            back: Mutex::new(BackChannel {
                program: args.cb_program,
                sec: args.sec_parms.clone(),
                attrs: back,
                conns: Vec::new(),
                seqid: 1,
            }),
            fore_conns: Mutex::new(Vec::new()),
            cb_down: AtomicBool::new(false),
            minorversion: AtomicU32::new(cx.minorversion),
            cb_slot: Default::default(),
        });
        session.bind_fore(&cx.conn);
        if flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN != 0 {
            session.bind_back(&cx.conn);
        }
        let resok = CreateSession4ResOk {
            sessionid: id,
            sequence: args.sequence,
            flags,
            fore_chan_attrs: fore,
            back_chan_attrs: back,
        };
        // Confirming a client replaces an earlier confirmed record of the
        // same owner (a rebooted client, §18.35.4 case 5).
        if !was_confirmed {
            let old: Vec<_> = st
                .clients
                .values()
                .filter(|o| o.confirmed && o.owner == owner && o.id != args.clientid)
                .map(|o| o.id)
                .collect();
            for o in old {
                st.purge_client(o);
            }
        }
        let Some(c) = st.clients.get_mut(&args.clientid) else {
            return Res4::Err(NfsStat4::Nfs4errServerfault);
        };
        c.confirmed = true;
        c.cs_seq = args.sequence;
        c.cs_reply = Some(resok);
        c.last_renew = now;
        c.sessions.insert(id);
        st.sessions.insert(id, session.clone());
        (resok, session)
    };
    if resok.flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN != 0 {
        tokio::spawn(probe_back_channel(session));
    }
    Res4::Ok(resok)
}
