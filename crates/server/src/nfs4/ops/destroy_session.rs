//! DESTROY_SESSION (RFC 8881 §18.37).

use proto::nfs4::*;

use crate::nfs4::compound::Compound;

pub async fn run(cx: &mut Compound, args: DestroySession4Args) -> DestroySession4Res {
    let mut st = cx.srv.state();
    let Some(s) = st.sessions.remove(&args.sessionid) else {
        return Res4::Err(NfsStat4::Nfs4errBadsession);
    };
    if let Some(c) = st.clients.get_mut(&s.client) {
        c.sessions.remove(&args.sessionid);
    }
    Res4::Ok(())
}
