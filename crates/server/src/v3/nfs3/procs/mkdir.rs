//! MKDIR (RFC 1813 §3.3.9).

use proto::nfs3::*;

use crate::v3::nfs3::{create_in, from_errno, sattr, Ctx};

pub async fn run(cx: &Ctx, args: MkDir3Args) -> MkDir3Res {
    let mut set = sattr(&args.attributes);
    set.mode.get_or_insert(0o777);
    create_in(cx, &args.where_, move |v, c, dir, name| {
        let (h, a) = v
            .create(c, dir, name, &vfs::CreateKind::Directory, &set)
            .map_err(from_errno)?;
        Ok((h, a, true))
    })
    .await
}
