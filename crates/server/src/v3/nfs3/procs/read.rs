//! READ (RFC 1813 §3.3.6): at most the server's largest transfer (FSINFO's
//! rtmax) of a regular file; an NFSv4 write delegation of it is recalled
//! first.

use proto::nfs3::*;

use crate::handoff::SEND_FROM_FILE_MIN;
use crate::v3::nfs3::Ctx;

pub async fn run(cx: &Ctx, args: Read3Args) -> Read3Res {
    let o = match cx.obj(&args.file) {
        Ok(o) => o,
        Err(s) => return Res3::Fail(s, ObjAttrFail3::default()),
    };
    // An NFSv4 client's write delegation of the file is recalled: its
    // holder may have written from its cache (RFC 8881 §10.4).
    if let Err(s) = cx.settle(&o, true).await {
        return Res3::Fail(s, ObjAttrFail3::default());
    }
    if let Err(s) = cx.check_share(&o, proto::nfs4::OPEN4_SHARE_ACCESS_READ) {
        return Res3::Fail(s, ObjAttrFail3::default());
    }
    let count = args.count.min(cx.srv.cfg.max_io);
    // Data already in memory is read here, without a thread hand-off, once
    // the backend can say without blocking that this is a regular file.
    // A large read is left in the page cache, for the connection to send
    // from there (NFSv3 keeps no replies).
    // krb5i and krb5p replies are sealed whole, in memory.
    let from_file = !cx.auth.wraps_body();
    let fast = cx.vfs_nowait(o.export, |v, c| match v.getattr_nowait(&o.handle)? {
        Ok(a) if a.ftype == vfs::FileType::Regular => {
            let slice = if count as usize >= SEND_FROM_FILE_MIN && from_file {
                v.read_slice_nowait(c, &o.handle, args.offset, count, SEND_FROM_FILE_MIN)
            } else {
                None
            };
            match slice {
                Some(r) => Some(r.map(|(s, eof)| (xdr::Payload::file(s), eof))),
                None => v
                    .read_nowait(c, &o.handle, args.offset, count)
                    .map(|r| r.map(|(data, eof)| (xdr::Payload::from(data), eof))),
            }
        }
        _ => None,
    });
    if let Some(Ok((data, eof))) = fast {
        return Res3::Ok(Read3ResOk {
            file_attributes: cx.post_op(&o).await,
            count: data.len() as u32,
            eof,
            data,
        });
    }
    let (h, offset) = (o.handle.clone(), args.offset);
    let r = cx
        .vfs(o.export, move |v, c| {
            match v.getattr(&h)?.ftype {
                vfs::FileType::Regular => {}
                vfs::FileType::Directory => return Err(vfs::Errno(libc::EISDIR)),
                _ => return Err(vfs::Errno(libc::EINVAL)),
            }
            v.read(c, &h, offset, count)
        })
        .await;
    let file_attributes = cx.post_op(&o).await;
    match r {
        Ok((data, eof)) => Res3::Ok(Read3ResOk {
            file_attributes,
            count: data.len() as u32,
            eof,
            data: data.into(),
        }),
        Err(s) => Res3::Fail(
            s,
            ObjAttrFail3 {
                obj_attributes: file_attributes,
            },
        ),
    }
}
