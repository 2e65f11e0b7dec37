//! LOOKUPP (RFC 8881 §18.14): replaces the current filehandle, a
//! directory, with that of its parent; NFS4ERR_NOENT at the namespace
//! root. From an export's root it leads back to the pseudo directory or
//! the other export's directory it is mounted on.

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;
use crate::nfs4::dirs::parent_fh;

pub async fn run(cx: &mut Compound) -> LookupP4Res {
    lookupp(cx).await.into()
}

async fn lookupp(cx: &mut Compound) -> Result<(), NfsStat4> {
    let dir = cx.cfh()?.clone();
    let fh = parent_fh(cx, &dir).await?;
    cx.set_cfh(fh);
    Ok(())
}
