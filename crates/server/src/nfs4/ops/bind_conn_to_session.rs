//! BIND_CONN_TO_SESSION (RFC 8881 §18.34).

use proto::nfs4::*;

use crate::nfs4::callback::probe_back_channel;
use crate::nfs4::compound::context::Compound;
use crate::nfs4::session_io::CbConn;

pub async fn run(cx: &mut Compound, args: BindConnToSession4Args) -> BindConnToSession4Res {
    let Some(session) = cx.srv.state().session(&args.sessid) else {
        return Res4::Err(NfsStat4::Nfs4errBadsession);
    };
    let dir = match args.dir {
        // Any connection may carry the fore channel (SP4_NONE: §2.10.8.3),
        // so binding it records nothing.
        ChannelDirFromClient4::Cdfc4Fore => ChannelDirFromServer4::Cdfs4Fore,
        ChannelDirFromClient4::Cdfc4Back => {
            cx.srv.state().bind_back(&session, &CbConn::of(&cx.conn));
            ChannelDirFromServer4::Cdfs4Back
        }
        ChannelDirFromClient4::Cdfc4ForeOrBoth | ChannelDirFromClient4::Cdfc4BackOrBoth => {
            cx.srv.state().bind_back(&session, &CbConn::of(&cx.conn));
            ChannelDirFromServer4::Cdfs4Both
        }
    };
    if matches!(
        dir,
        ChannelDirFromServer4::Cdfs4Back | ChannelDirFromServer4::Cdfs4Both
    ) {
        tokio::spawn(probe_back_channel(session));
    }
    Res4::Ok(BindConnToSession4ResOk {
        sessid: args.sessid,
        dir,
        use_conn_in_rdma_mode: false,
    })
}
