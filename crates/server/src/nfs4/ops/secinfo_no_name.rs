//! SECINFO_NO_NAME (RFC 8881 §18.45): the security flavors for the current
//! filehandle itself or for its parent directory (NFS4ERR_NOENT at the
//! root). Consumes the current filehandle (§2.6.3.1.1.8).

use proto::nfs4::*;

use super::lookup::need_dir;
use super::secinfo::{consume_cfh, flavors};
use crate::nfs4::compound::Compound;

pub async fn run(cx: &mut Compound, args: SecInfoNoName4Args) -> SecInfoNoName4Res {
    secinfo_no_name(cx, args).await.into()
}

async fn secinfo_no_name(
    cx: &mut Compound,
    style: SecInfoNoName4Args,
) -> Result<SecInfo4ResOk, NfsStat4> {
    let fh = cx.cfh()?.clone();
    let h = fh.handle.clone();
    match style {
        SecInfoStyle4::CurrentFh => {
            cx.vfs(fh.export, move |fs, _| fs.getattr(&h)).await?;
        }
        SecInfoStyle4::Parent => {
            cx.vfs(fh.export, move |fs, c| {
                need_dir(&fs.getattr(&h)?)?;
                if h == fs.root() {
                    return Err(vfs::Errno(libc::ENOENT));
                }
                fs.lookup_parent(c, &h)
            })
            .await?;
        }
    }
    consume_cfh(cx);
    Ok(flavors())
}
