//! BIND_CONN_TO_SESSION (RFC 8881 §18.34).

use proto::nfs4::*;

use crate::nfs4::callback::probe_back_channel;
use crate::nfs4::compound::Compound;

pub async fn run(cx: &mut Compound, args: BindConnToSession4Args) -> BindConnToSession4Res {
    let Some(session) = cx.srv.state().sessions.get(&args.sessid).cloned() else {
        return Res4::Err(NfsStat4::Nfs4errBadsession);
    };
    let dir = match args.dir {
        ChannelDirFromClient4::Cdfc4Fore => {
            session.bind_fore(&cx.conn);
            ChannelDirFromServer4::Cdfs4Fore
        }
        ChannelDirFromClient4::Cdfc4Back => {
            session.bind_back(&cx.conn);
            ChannelDirFromServer4::Cdfs4Back
        }
        ChannelDirFromClient4::Cdfc4ForeOrBoth | ChannelDirFromClient4::Cdfc4BackOrBoth => {
            session.bind_fore(&cx.conn);
            session.bind_back(&cx.conn);
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
