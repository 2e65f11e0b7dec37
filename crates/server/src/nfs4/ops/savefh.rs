//! SAVEFH (RFC 8881 §18.28): saves the current stateid with the filehandle
//! (§16.2.3.1.2).

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound) -> SaveFh4Res {
    match cx.cfh() {
        Ok(fh) => {
            cx.sfh = Some(fh.clone());
            cx.saved_stateid = cx.cur_stateid;
            Res4::Ok(())
        }
        Err(e) => Res4::Err(e),
    }
}
