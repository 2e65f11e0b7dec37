//! SECINFO_NO_NAME (RFC 8881 §18.45): the security flavors for the current
//! filehandle itself or for its parent directory (NFS4ERR_NOENT at the
//! root). Consumes the current filehandle (§2.6.3.1.1.8).

use proto::nfs4::*;

use crate::nfs4::check::need_dir;
use crate::nfs4::compound::context::Compound;
use crate::nfs4::dirs::parent_fh;

pub async fn run(cx: &mut Compound, args: SecInfoNoName4Args) -> SecInfoNoName4Res {
    secinfo_no_name(cx, args).await.into()
}

async fn secinfo_no_name(
    cx: &mut Compound,
    style: SecInfoNoName4Args,
) -> Result<SecInfo4ResOk, NfsStat4> {
    let fh = cx.cfh()?.clone();
    let target = match (style, fh.pseudo) {
        (SecInfoStyle4::CurrentFh, Some(_)) => fh,
        (SecInfoStyle4::CurrentFh, None) => {
            // Without the flavor check: this is how a client learns them.
            let h = fh.handle.clone();
            let creds = cx.admit(fh.export)?.creds(&cx.auth);
            let fs = cx.export(fh.export)?.vfs.clone();
            cx.blocking(fs, creds, move |fs, _| fs.getattr(&h)).await?;
            fh
        }
        (SecInfoStyle4::Parent, Some(_)) => parent_fh(cx, &fh).await?,
        (SecInfoStyle4::Parent, None) => {
            let export = cx.export(fh.export)?;
            if fh.handle == export.vfs.root() {
                parent_fh(cx, &fh).await?
            } else {
                let h = fh.handle.clone();
                let creds = cx.admit(fh.export)?.creds(&cx.auth);
                let fs = export.vfs.clone();
                cx.blocking(fs, creds, move |fs, c| {
                    need_dir(&fs.getattr(&h)?)?;
                    fs.lookup_parent(c, &h)
                })
                .await?;
                fh
            }
        }
    };
    let flavors = cx.flavors(&target)?;
    cx.consume_cfh();
    Ok(flavors)
}
