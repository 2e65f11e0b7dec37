//! DEALLOCATE (RFC 7862 §15.4).

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;
use crate::nfs4::space::space;

pub async fn run(cx: &mut Compound, args: Deallocate4Args) -> Deallocate4Res {
    space(cx, args.stateid, args.offset, args.length, true)
        .await
        .into()
}
