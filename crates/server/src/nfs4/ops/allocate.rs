//! ALLOCATE (RFC 7862 §15.1).

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;
use crate::nfs4::space::space;

pub async fn run(cx: &mut Compound, args: Allocate4Args) -> Allocate4Res {
    space(cx, args.stateid, args.offset, args.length, false)
        .await
        .into()
}
