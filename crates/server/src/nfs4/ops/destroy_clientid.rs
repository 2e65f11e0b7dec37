//! DESTROY_CLIENTID (RFC 8881 §18.50).

use proto::nfs4::*;

use crate::nfs4::compound::Compound;

pub async fn run(cx: &mut Compound, args: DestroyClientId4Args) -> DestroyClientId4Res {
    let mut st = cx.srv.state();
    let Some(c) = st.clients.get(&args.clientid) else {
        return Res4::Err(NfsStat4::Nfs4errStaleClientid);
    };
    if !c.sessions.is_empty() {
        return Res4::Err(NfsStat4::Nfs4errClientidBusy);
    }
    st.purge_client(args.clientid);
    Res4::Ok(())
}
