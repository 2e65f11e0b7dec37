//! OFFLOAD_CANCEL (RFC 7862 §15.8). Every COPY is synchronous, so there
//! is nothing to cancel: NFS4ERR_BAD_STATEID.

use proto::nfs4::*;

use crate::nfs4::check::no_offloads;
use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound, _args: OffloadCancel4Args) -> OffloadCancel4Res {
    match no_offloads(cx) {
        Err(s) => Res4::Err(s),
    }
}
