//! DESTROY_SESSION (RFC 8881 §18.37).

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound, args: DestroySession4Args) -> DestroySession4Res {
    cx.srv.state().destroy_session(&args.sessionid).into()
}
