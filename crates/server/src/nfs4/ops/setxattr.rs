//! SETXATTR (RFC 8276 §8.4.2): creates or replaces an extended attribute
//! of the current filehandle (SETXATTR4_CREATE: NFS4ERR_EXIST if it
//! exists; SETXATTR4_REPLACE: NFS4ERR_NOXATTR if it does not).

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;
use crate::nfs4::xattr;

pub async fn run(cx: &mut Compound, args: SetXattr4Args) -> SetXattr4Res {
    set(cx, args).await.into()
}

async fn set(cx: &mut Compound, args: SetXattr4Args) -> Result<SetXattr4ResOk, NfsStat4> {
    let name = xattr::key(&args.key)?;
    let how = match args.option {
        SetXattrOption4::Either => vfs::XattrHow::Either,
        SetXattrOption4::Create => vfs::XattrHow::Create,
        SetXattrOption4::Replace => vfs::XattrHow::Replace,
    };
    let value = args.value;
    let info = xattr::change(cx, move |v, c, h| v.setxattr(c, h, &name, &value, how)).await?;
    Ok(SetXattr4ResOk { info })
}
