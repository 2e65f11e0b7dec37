//! RENEW (RFC 7530 §16.29): renews an NFSv4.0 client's lease;
//! NFS4ERR_CB_PATH_DOWN tells a client holding delegations that they
//! cannot be recalled.

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound, args: Renew4Args) -> Renew4Res {
    cx.srv.state().renew_op(args.clientid).into()
}
