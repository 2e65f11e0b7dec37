//! SETCLIENTID (RFC 7530 §16.33): an NFSv4.0 client's record, by the
//! cases of §16.33.5 (`state::v40::setclientid_decision`). The callback
//! it names is only called once the record is confirmed
//! (SETCLIENTID_CONFIRM).

use proto::nfs4::*;
use state::v40::Callback40;

use crate::nfs4::compound::context::Compound;

/// SETCLIENTIDs refused for a full client table, logged at most this
/// often.
static FULL_LOG: rpc::RateLimit = rpc::RateLimit::per_secs(10);

pub async fn run(cx: &mut Compound, args: SetClientId4Args) -> SetClientId4Res {
    let callback = Callback40::of(&args);
    match cx
        .srv
        .state()
        .setclientid(&args.client, callback, cx.principal())
    {
        Ok((clientid, setclientid_confirm)) => {
            cx.srv.state().note_client(clientid, cx.conn.peer(), 0);
            SetClientId4Res::Ok(SetClientId4ResOk {
                clientid,
                setclientid_confirm,
            })
        }
        // §16.33.5: the callback address of the record in use.
        Err(Ok(addr)) => SetClientId4Res::ClidInuse(NetAddr4 {
            netid: "tcp".into(),
            addr,
        }),
        Err(Err(e)) => {
            if e == NfsStat4::Nfs4errResource {
                if let Some(n) = FULL_LOG.allow() {
                    tracing::warn!(
                        clients = cx.srv.state().client_count(),
                        "client table full: SETCLIENTID answered NFS4ERR_RESOURCE ({n} more not logged)"
                    );
                }
            }
            SetClientId4Res::Err(e)
        }
    }
}
