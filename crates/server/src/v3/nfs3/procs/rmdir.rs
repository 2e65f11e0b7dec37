//! RMDIR (RFC 1813 §3.3.13): an empty directory.

use proto::nfs3::*;

use crate::v3::nfs3::{remove_entry, Ctx};

pub async fn run(cx: &Ctx, args: RmDir3Args) -> RmDir3Res {
    remove_entry(cx, &args.object, true).await
}
