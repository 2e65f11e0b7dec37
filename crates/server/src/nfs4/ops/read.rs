//! READ (RFC 8881 §18.22).

use proto::nfs4::*;

use crate::nfs4::compound::Compound;

/// The status for I/O on an object that is not a regular file
/// (RFC 8881 §18.22.3): a directory is NFS4ERR_ISDIR, a symbolic link
/// NFS4ERR_SYMLINK, anything else NFS4ERR_WRONG_TYPE.
pub(crate) fn regular(a: &vfs::Attr) -> Result<(), NfsStat4> {
    match a.ftype {
        vfs::FileType::Regular => Ok(()),
        vfs::FileType::Directory => Err(NfsStat4::Nfs4errIsdir),
        vfs::FileType::Symlink => Err(NfsStat4::Nfs4errSymlink),
        _ => Err(NfsStat4::Nfs4errWrongType),
    }
}

/// Checks the stateid of an I/O operation on the current filehandle;
/// returns whether the file still has to be checked to be a regular file
/// (a special stateid was used).
pub(crate) fn check_io(cx: &Compound, sid: &StateId4, access: u32) -> Result<bool, NfsStat4> {
    let fh = cx.cfh()?;
    let client = cx.clientid()?;
    let sid = cx.resolve_stateid(sid)?;
    let key = fh.key();
    cx.srv.state().check_io(client, &sid, &key, access)
}

pub async fn run(cx: &mut Compound, args: Read4Args) -> Read4Res {
    read(cx, args).await.into()
}

async fn read(cx: &mut Compound, args: Read4Args) -> Result<Read4ResOk, NfsStat4> {
    let fh = cx.cfh()?.clone();
    let special = check_io(cx, &args.stateid, OPEN4_SHARE_ACCESS_READ)?;
    let count = args.count.min(cx.srv.cfg.max_io);
    let handle = fh.handle.clone();
    let offset = args.offset;
    let r = cx
        .vfs(fh.export, move |v, c| {
            if special {
                if let Err(s) = regular(&v.getattr(&handle)?) {
                    return Ok(Err(s));
                }
            }
            v.read(c, &handle, offset, count).map(Ok)
        })
        .await??;
    let (data, eof) = r;
    Ok(Read4ResOk { eof, data })
}
