//! MKNOD (RFC 1813 §3.3.11): devices, sockets and FIFOs; a regular file,
//! directory or symbolic link is NFS3ERR_BADTYPE.

use proto::nfs3::*;

use crate::v3::nfs3::{create_in, from_errno, sattr, Ctx};

pub async fn run(cx: &Ctx, args: Mknod3Args) -> Mknod3Res {
    let (kind, attrs) = match args.what {
        MknodData3::Chr(d) => (
            vfs::CreateKind::Char(d.spec.specdata1, d.spec.specdata2),
            d.dev_attributes,
        ),
        MknodData3::Blk(d) => (
            vfs::CreateKind::Block(d.spec.specdata1, d.spec.specdata2),
            d.dev_attributes,
        ),
        MknodData3::Sock(s) => (vfs::CreateKind::Socket, s),
        MknodData3::Fifo(s) => (vfs::CreateKind::Fifo, s),
        MknodData3::Other(_) => return Res3::Fail(NfsStat3::BadType, DirWcc3::default()),
    };
    let mut set = sattr(&attrs);
    set.mode.get_or_insert(0o644);
    create_in(cx, &args.where_, move |v, c, dir, name| {
        let (h, a) = v.create(c, dir, name, &kind, &set).map_err(from_errno)?;
        Ok((h, a, true))
    })
    .await
}
