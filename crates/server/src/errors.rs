//! Backend errno to NFSv4 status (RFC 8881 §15).

use proto::nfs4::NfsStat4;

pub fn from_errno(e: vfs::Errno) -> NfsStat4 {
    use NfsStat4::*;
    match e.0 {
        libc::EPERM => Nfs4errPerm,
        libc::ENOENT => Nfs4errNoent,
        libc::EIO => Nfs4errIo,
        libc::ENXIO => Nfs4errNxio,
        libc::EACCES => Nfs4errAccess,
        libc::EEXIST => Nfs4errExist,
        libc::EXDEV => Nfs4errXdev,
        libc::ENOTDIR => Nfs4errNotdir,
        libc::EISDIR => Nfs4errIsdir,
        libc::EINVAL => Nfs4errInval,
        libc::EFBIG => Nfs4errFbig,
        libc::ENOSPC => Nfs4errNospc,
        libc::EROFS => Nfs4errRofs,
        libc::EMLINK => Nfs4errMlink,
        libc::ENAMETOOLONG => Nfs4errNametoolong,
        libc::ENOTEMPTY => Nfs4errNotempty,
        libc::EDQUOT => Nfs4errDquot,
        libc::ESTALE => Nfs4errStale,
        libc::ELOOP => Nfs4errSymlink,
        libc::EOPNOTSUPP => Nfs4errNotsupp,
        // Out of descriptors or memory for now: the client retries.
        libc::EAGAIN | libc::EMFILE | libc::ENFILE | libc::ENOMEM => Nfs4errDelay,
        libc::EBADF => Nfs4errStale,
        libc::EOVERFLOW => Nfs4errFbig,
        libc::ETXTBSY => Nfs4errFileOpen,
        libc::EBUSY => Nfs4errFileOpen,
        // Extended attributes (RFC 8276 §8.4): none of that name, or a
        // value too large for the file system.
        libc::ENODATA => Nfs4errNoxattr,
        libc::E2BIG | libc::ERANGE => Nfs4errXattr2big,
        _ => Nfs4errServerfault,
    }
}
