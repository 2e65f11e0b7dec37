//! RESTOREFH (RFC 8881 §18.27): restores the saved filehandle and the
//! stateid saved with it.

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound) -> RestoreFh4Res {
    match cx.sfh.clone() {
        Some(fh) => {
            cx.cfh = Some(fh);
            cx.cur_stateid = cx.saved_stateid;
            Res4::Ok(())
        }
        None => Res4::Err(NfsStat4::Nfs4errRestorefh),
    }
}
