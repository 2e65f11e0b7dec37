//! Checks and conversions shared by several operations: object types,
//! share bits, lock types, the endpoints of COPY and CLONE.

use proto::nfs4::*;

use super::compound::context::{Compound, Fh};
use state::locks::{self, Held, LockKind};
use state::OwnerKey;

/// The status for I/O on an object that is not a regular file
/// (RFC 8881 §18.22.3): a directory is NFS4ERR_ISDIR, a symbolic link
/// NFS4ERR_SYMLINK, anything else NFS4ERR_WRONG_TYPE.
pub fn regular(a: &vfs::Attr) -> Result<(), NfsStat4> {
    match a.ftype {
        vfs::FileType::Regular => Ok(()),
        vfs::FileType::Directory => Err(NfsStat4::Nfs4errIsdir),
        vfs::FileType::Symlink => Err(NfsStat4::Nfs4errSymlink),
        _ => Err(NfsStat4::Nfs4errWrongType),
    }
}

/// Checks both objects are regular files (NFS4ERR_ISDIR, _SYMLINK,
/// _WRONG_TYPE otherwise), inside a backend call.
pub fn both_regular(
    v: &dyn vfs::Vfs,
    src: &vfs::Handle,
    dst: &vfs::Handle,
) -> vfs::Result<Result<(), NfsStat4>> {
    Ok(regular(&v.getattr(src)?).and(regular(&v.getattr(dst)?)))
}

/// Fails unless `a` is a directory: a symbolic link gives ELOOP
/// (NFS4ERR_SYMLINK, RFC 8881 §15.1.2.11), anything else ENOTDIR
/// (NFS4ERR_NOTDIR). For use inside backend calls.
pub fn need_dir(a: &vfs::Attr) -> vfs::Result<()> {
    match a.ftype {
        vfs::FileType::Directory => Ok(()),
        vfs::FileType::Symlink => Err(vfs::Errno(libc::ELOOP)),
        _ => Err(vfs::Errno(libc::ENOTDIR)),
    }
}

/// The `OPEN4_SHARE_ACCESS_WANT_*` bits (RFC 8881 §18.16.1).
const WANT_BITS: u32 = OPEN4_SHARE_ACCESS_WANT_DELEG_MASK
    | OPEN4_SHARE_ACCESS_WANT_SIGNAL_DELEG_WHEN_RESRC_AVAIL
    | OPEN4_SHARE_ACCESS_WANT_PUSH_DELEG_WHEN_UNCONTENDED;

/// NFSv4.2's further WANT bits (RFC 9754): WANT_DELEG_TIMESTAMPS is
/// honoured (`ops::open`: an OPEN_DELEGATE_*_ATTRS_DELEG delegation);
/// WANT_OPEN_XOR_DELEGATION is known and not (a delegation comes with an
/// open, no OPEN4_RESULT_NO_OPEN_STATEID flag), and `open_arguments` does
/// not offer it.
const WANT_BITS_42: u32 =
    OPEN4_SHARE_ACCESS_WANT_DELEG_TIMESTAMPS | OPEN4_SHARE_ACCESS_WANT_OPEN_XOR_DELEGATION;

/// The share access and deny of an OPEN or OPEN_DOWNGRADE in minor
/// version `minor`, WANT bits masked off: access 1..=3, deny 0..=3, else
/// NFS4ERR_INVAL (RFC 8881 §18.16.3, §18.18.3).
pub fn share_bits(access: u32, deny: u32, minor: u32) -> Result<(u32, u32), NfsStat4> {
    // NFSv4.0 has no OPEN4_SHARE_ACCESS_WANT_* bits (RFC 7530 §16.16.1).
    let mut a = if minor >= 1 {
        access & !WANT_BITS
    } else {
        access
    };
    if minor >= 2 {
        a &= !WANT_BITS_42;
    }
    if !(1..=3).contains(&a) || deny > 3 {
        return Err(NfsStat4::Nfs4errInval);
    }
    Ok((a, deny))
}

/// The lock kind of an `nfs_lock_type4` (RFC 8881 §18.10.1).
pub fn lock_kind(t: NfsLockType4) -> LockKind {
    match t {
        NfsLockType4::ReadLt | NfsLockType4::ReadwLt => LockKind::Read,
        NfsLockType4::WriteLt | NfsLockType4::WritewLt => LockKind::Write,
    }
}

/// LOCK4denied for a conflicting lock (RFC 8881 §18.10.2).
pub fn lock_denied(h: Held<OwnerKey>) -> Lock4Denied {
    Lock4Denied {
        offset: h.start,
        length: locks::length(h.start, h.end),
        locktype: match h.kind {
            LockKind::Read => NfsLockType4::ReadLt,
            LockKind::Write => NfsLockType4::WriteLt,
        },
        owner: LockOwner4 {
            clientid: h.owner.0,
            owner: h.owner.1,
        },
    }
}

/// The source and destination of COPY and CLONE (RFC 7862 §15.2.3,
/// §15.13.3), their stateids checked: (source, destination). NFSv4.2
/// only.
pub fn copy_endpoints(
    cx: &Compound,
    src_stateid: &StateId4,
    dst_stateid: &StateId4,
) -> Result<(Fh, Fh), NfsStat4> {
    if cx.minorversion < 2 {
        return Err(NfsStat4::Nfs4errNotsupp);
    }
    let dst = cx.cfh()?.clone();
    let src = cx.sfh.clone().ok_or(NfsStat4::Nfs4errNofilehandle)?;
    // The destination is written (NFS4ERR_ROFS on a read-only export).
    cx.check_writable(&dst)?;
    // A node of the pseudo file system is a directory.
    if src.pseudo.is_some() {
        return Err(NfsStat4::Nfs4errIsdir);
    }
    cx.check_io_of(&src, src_stateid, OPEN4_SHARE_ACCESS_READ)?;
    cx.check_io_of(&dst, dst_stateid, OPEN4_SHARE_ACCESS_WRITE)?;
    // Both must be regular files of one export (one backend).
    if src.export != dst.export {
        return Err(NfsStat4::Nfs4errXdev);
    }
    Ok((src, dst))
}

/// The answer of OFFLOAD_STATUS and OFFLOAD_CANCEL (RFC 7862 §15.8,
/// §15.9): NFSv4.2 only, on the destination file, and never a copy in
/// progress, since every COPY is synchronous.
pub fn no_offloads(cx: &Compound) -> Result<std::convert::Infallible, NfsStat4> {
    if cx.minorversion < 2 {
        return Err(NfsStat4::Nfs4errNotsupp);
    }
    cx.cfh()?;
    Err(NfsStat4::Nfs4errBadStateid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_bits_know_the_want_flags_of_their_minor_version() {
        let both = OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG;
        assert_eq!(share_bits(both, 0, 1), Ok((OPEN4_SHARE_ACCESS_BOTH, 0)));
        assert_eq!(share_bits(0, 0, 1), Err(NfsStat4::Nfs4errInval));
        assert_eq!(share_bits(1, 4, 1), Err(NfsStat4::Nfs4errInval));
        // RFC 9754's wants are NFSv4.2's.
        let ts = OPEN4_SHARE_ACCESS_READ | OPEN4_SHARE_ACCESS_WANT_DELEG_TIMESTAMPS;
        assert_eq!(share_bits(ts, 0, 1), Err(NfsStat4::Nfs4errInval));
        assert_eq!(share_bits(ts, 0, 2), Ok((OPEN4_SHARE_ACCESS_READ, 0)));
        let xor = OPEN4_SHARE_ACCESS_WRITE | OPEN4_SHARE_ACCESS_WANT_OPEN_XOR_DELEGATION;
        assert_eq!(share_bits(xor, 0, 2), Ok((OPEN4_SHARE_ACCESS_WRITE, 0)));
        assert_eq!(share_bits(1 << 30 | 1, 0, 2), Err(NfsStat4::Nfs4errInval));
    }
}
