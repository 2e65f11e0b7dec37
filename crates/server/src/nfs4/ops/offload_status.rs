//! OFFLOAD_STATUS (RFC 7862 §15.9). Every COPY is synchronous, so no
//! copy stateid exists to ask about: NFS4ERR_BAD_STATEID.

use proto::nfs4::*;

use crate::nfs4::check::no_offloads;
use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound, _args: OffloadStatus4Args) -> OffloadStatus4Res {
    match no_offloads(cx) {
        Err(s) => Res4::Err(s),
    }
}
