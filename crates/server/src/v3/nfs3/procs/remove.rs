//! REMOVE (RFC 1813 §3.3.12): a non-directory; RMDIR removes directories
//! (both in [`crate::v3::nfs3::remove_entry`]).

use proto::nfs3::*;

use crate::v3::nfs3::{remove_entry, Ctx};

pub async fn run(cx: &Ctx, args: Remove3Args) -> Remove3Res {
    remove_entry(cx, &args.object, false).await
}
