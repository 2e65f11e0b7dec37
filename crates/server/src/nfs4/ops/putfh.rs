//! PUTFH (RFC 8881 §18.19).

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound, args: PutFh4Args) -> PutFh4Res {
    match cx.parse_fh(&args.object.0) {
        Ok(fh) => {
            cx.set_cfh(fh);
            Res4::Ok(())
        }
        Err(e) => Res4::Err(e),
    }
}
