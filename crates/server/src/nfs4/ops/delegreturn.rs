//! DELEGRETURN (RFC 8881 §18.6). No delegations are granted, so no
//! stateid names one.

use proto::nfs4::*;

use crate::nfs4::compound::Compound;

pub async fn run(cx: &mut Compound, args: DelegReturn4Args) -> DelegReturn4Res {
    if let Err(e) = cx.cfh() {
        return Res4::Err(e);
    }
    if let Err(e) = cx.resolve_stateid(&args.deleg_stateid) {
        return Res4::Err(e);
    }
    Res4::Err(NfsStat4::Nfs4errBadStateid)
}
