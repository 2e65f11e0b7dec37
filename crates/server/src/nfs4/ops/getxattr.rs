//! GETXATTR (RFC 8276 §8.4.1): the value of an extended attribute of the
//! current filehandle (NFS4ERR_NOXATTR if it has none of that name).

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;
use crate::nfs4::xattr;

pub async fn run(cx: &mut Compound, args: GetXattr4Args) -> GetXattr4Res {
    get(cx, args).await.into()
}

async fn get(cx: &mut Compound, args: GetXattr4Args) -> Result<GetXattr4ResOk, NfsStat4> {
    let fh = xattr::object(cx)?;
    let name = xattr::key(&args.name)?;
    let h = fh.handle.clone();
    let value = cx
        .vfs(fh.export, move |v, c| v.getxattr(c, &h, &name))
        .await?;
    Ok(GetXattr4ResOk { value })
}
