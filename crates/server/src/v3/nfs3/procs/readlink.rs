//! READLINK (RFC 1813 §3.3.5).

use proto::nfs3::*;

use crate::v3::nfs3::Ctx;

pub async fn run(cx: &Ctx, args: ReadLink3Args) -> ReadLink3Res {
    let o = match cx.obj(&args.symlink) {
        Ok(o) => o,
        Err(s) => return Res3::Fail(s, ObjAttrFail3::default()),
    };
    let h = o.handle.clone();
    let r = cx
        .vfs(o.export, move |v, c| {
            if v.getattr(&h)?.ftype != vfs::FileType::Symlink {
                return Err(vfs::Errno(libc::EINVAL));
            }
            v.readlink(c, &h)
        })
        .await;
    let symlink_attributes = cx.post_op(&o).await;
    match r {
        Ok(data) => Res3::Ok(ReadLink3ResOk {
            symlink_attributes,
            data,
        }),
        Err(s) => Res3::Fail(
            s,
            ObjAttrFail3 {
                obj_attributes: symlink_attributes,
            },
        ),
    }
}
