//! PUTROOTFH (RFC 8881 §18.21).

use proto::nfs4::*;

use crate::nfs4::compound::Compound;

pub async fn run(cx: &mut Compound) -> PutRootFh4Res {
    match cx.root_fh() {
        Ok(fh) => {
            cx.set_cfh(fh);
            Res4::Ok(())
        }
        Err(e) => Res4::Err(e),
    }
}
