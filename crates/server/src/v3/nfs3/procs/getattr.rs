//! GETATTR (RFC 1813 §3.3.1).

use proto::nfs3::*;

use crate::v3::nfs3::{fattr3, Ctx};

pub async fn run(cx: &Ctx, args: GetAttr3Args) -> GetAttr3Res {
    match getattr(cx, &args).await {
        Ok(obj_attributes) => Res3::Ok(GetAttr3ResOk { obj_attributes }),
        Err(s) => Res3::Fail(s, ()),
    }
}

async fn getattr(cx: &Ctx, args: &GetAttr3Args) -> Result<Fattr3, NfsStat3> {
    let o = cx.obj(&args.object)?;
    let fsid = cx.export(o.export)?.fsid;
    let a = cx.attr_of(&o).await?;
    Ok(fattr3(&a, fsid))
}
