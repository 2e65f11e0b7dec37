//! SYMLINK (RFC 1813 §3.3.10).

use proto::nfs3::*;

use crate::v3::nfs3::{create_in, from_errno, sattr, Ctx};

pub async fn run(cx: &Ctx, args: Symlink3Args) -> Symlink3Res {
    let text = args.symlink.symlink_data;
    if text.is_empty() || text.contains(&0) {
        return Res3::Fail(NfsStat3::Inval, DirWcc3::default());
    }
    let mut set = sattr(&args.symlink.symlink_attributes);
    // A symbolic link's mode means nothing on Linux.
    set.mode = Some(0o777);
    create_in(cx, &args.where_, move |v, c, dir, name| {
        let (h, a) = v
            .create(c, dir, name, &vfs::CreateKind::Symlink(text), &set)
            .map_err(from_errno)?;
        Ok((h, a, true))
    })
    .await
}
