//! GETATTR (RFC 8881 §18.7).

use proto::nfs4::*;

use crate::nfs4::attrs;
use crate::nfs4::compound::Compound;

pub async fn run(cx: &mut Compound, args: GetAttr4Args) -> GetAttr4Res {
    let fh = match cx.cfh() {
        Ok(fh) => fh.clone(),
        Err(e) => return Res4::Err(e),
    };
    // §18.7.3: write-only attributes cannot be read.
    if args.attr_request.contains(FATTR4_TIME_ACCESS_SET)
        || args.attr_request.contains(FATTR4_TIME_MODIFY_SET)
    {
        return Res4::Err(NfsStat4::Nfs4errInval);
    }
    match attrs::get(cx, &fh, &args.attr_request).await {
        Ok(obj_attributes) => Res4::Ok(GetAttr4ResOk { obj_attributes }),
        Err(e) => Res4::Err(e),
    }
}
