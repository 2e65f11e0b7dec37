//! BACKCHANNEL_CTL (RFC 8881 §18.33).

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;

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
