//! READLINK (RFC 8881 §18.24): the text of the symbolic link that is the
//! current filehandle; any other type is NFS4ERR_INVAL.

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound) -> ReadLink4Res {
    readlink(cx).await.into()
}

async fn readlink(cx: &mut Compound) -> Result<ReadLink4ResOk, NfsStat4> {
    let fh = cx.cfh()?.clone();
    if fh.pseudo.is_some() {
        return Err(NfsStat4::Nfs4errInval);
    }
    let h = fh.handle.clone();
    let link = cx
        .vfs(fh.export, move |fs, c| {
            if fs.getattr(&h)?.ftype != vfs::FileType::Symlink {
                return Err(vfs::Errno(libc::EINVAL));
            }
            fs.readlink(c, &h)
        })
        .await?;
    Ok(ReadLink4ResOk { link })
}
