//! RECLAIM_COMPLETE (RFC 8881 §18.51).

use proto::nfs4::*;

use crate::nfs4::compound::Compound;

pub async fn run(cx: &mut Compound, args: ReclaimComplete4Args) -> ReclaimComplete4Res {
    let id = match cx.clientid() {
        Ok(id) => id,
        Err(e) => return Res4::Err(e),
    };
    if args.one_fs {
        // Per-file-system completion: we keep no per-fs reclaim state.
        return match cx.cfh() {
            Ok(_) => Res4::Ok(()),
            Err(e) => Res4::Err(e),
        };
    }
    cx.srv.state().reclaim_complete(id).into()
}
