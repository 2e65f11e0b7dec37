//! NVERIFY (RFC 8881 §18.15).

use proto::nfs4::*;

use crate::nfs4::attrs;
use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound, args: NVerify4Args) -> NVerify4Res {
    let fh = match cx.cfh() {
        Ok(fh) => fh.clone(),
        Err(e) => return Res4::Err(e),
    };
    match attrs::same(cx, &fh, &args.obj_attributes).await {
        Ok(true) => Res4::Err(NfsStat4::Nfs4errSame),
        Ok(false) => Res4::Ok(()),
        Err(e) => Res4::Err(e),
    }
}
