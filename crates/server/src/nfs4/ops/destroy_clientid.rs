//! DESTROY_CLIENTID (RFC 8881 §18.50).

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound, args: DestroyClientId4Args) -> DestroyClientId4Res {
    cx.srv.state().destroy_clientid(args.clientid).into()
}
