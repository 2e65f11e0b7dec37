//! REMOVEXATTR (RFC 8276 §8.4.4): removes an extended attribute of the
//! current filehandle (NFS4ERR_NOXATTR if it has none of that name).

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;
use crate::nfs4::xattr;

pub async fn run(cx: &mut Compound, args: RemoveXattr4Args) -> RemoveXattr4Res {
    remove(cx, args).await.into()
}

async fn remove(cx: &mut Compound, args: RemoveXattr4Args) -> Result<RemoveXattr4ResOk, NfsStat4> {
    let name = xattr::key(&args.name)?;
    let info = xattr::change(cx, move |v, c, h| v.removexattr(c, h, &name)).await?;
    Ok(RemoveXattr4ResOk { info })
}
