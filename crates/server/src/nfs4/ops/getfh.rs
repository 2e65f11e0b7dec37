//! GETFH (RFC 8881 §18.8).

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound) -> GetFh4Res {
    match cx.cfh() {
        Ok(fh) => Res4::Ok(GetFh4ResOk {
            object: NfsFh4(fh.wire.clone()),
        }),
        Err(e) => Res4::Err(e),
    }
}
