//! BACKCHANNEL_CTL (RFC 8881 §18.33).

use proto::nfs4::*;
use rpc::OpaqueAuth;

use crate::nfs4::compound::Compound;

pub async fn run(cx: &mut Compound, args: BackchannelCtl4Args) -> BackchannelCtl4Res {
    let Some(session) = cx.session.clone() else {
        return Res4::Err(NfsStat4::Nfs4errOpNotInSession);
    };
    if let Ok(mut b) = session.back.lock() {
        b.program = args.cb_program;
        b.sec = args.sec_parms;
    }
    Res4::Ok(())
}

/// The credential for callbacks: the first of the client's choices we can
/// produce (AUTH_SYS or AUTH_NONE; RPCSEC_GSS is not supported).
pub fn cb_cred(sec: &[CallbackSecParms4]) -> OpaqueAuth {
    for s in sec {
        match s {
            CallbackSecParms4::AuthNone => return OpaqueAuth::none(),
            CallbackSecParms4::AuthSys(p) => {
                let parms = rpc::AuthSysParms {
                    stamp: p.stamp,
                    machinename: p.machinename.clone(),
                    uid: p.uid,
                    gid: p.gid,
                    gids: p.gids.clone(),
                };
                return OpaqueAuth {
                    flavor: rpc::AUTH_SYS,
                    body: xdr::to_bytes(&parms),
                };
            }
            CallbackSecParms4::RpcSecGss(_) => continue,
        }
    }
    OpaqueAuth::none()
}
