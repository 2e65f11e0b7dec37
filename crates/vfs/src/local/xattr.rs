//! Extended attributes of the user namespace (RFC 8276), through the
//! object's `/proc/self/fd` path (an O_PATH descriptor takes no
//! f*xattr call), with the caller's identity in force so that the kernel
//! checks its permission.

use std::ffi::CString;

use bytes::Bytes;

use super::cache::lock;
use super::{ctime_ns, settled, sys, LocalFs};
use crate::{Attr, Creds, Errno, FileType, Handle, Result, XattrHow};

/// The largest value the kernel keeps (XATTR_SIZE_MAX).
pub const MAX_VALUE: usize = 64 * 1024;

const PREFIX: &[u8] = b"user.";

fn local_name(name: &[u8]) -> Result<CString> {
    let mut n = PREFIX.to_vec();
    n.extend_from_slice(name);
    CString::new(n).map_err(|_| Errno(libc::EINVAL))
}

fn check(r: isize) -> Result<usize> {
    if r < 0 {
        Err(Errno(
            std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO),
        ))
    } else {
        Ok(r as usize)
    }
}

impl LocalFs {
    /// The object, if not a symbolic link: the path calls would follow one
    /// (and Linux keeps no user attributes on links).
    fn xattr_obj(&self, h: &Handle) -> Result<super::Obj> {
        let o = self.resolve(h)?;
        if o.fmt() == libc::S_IFLNK {
            return Err(Errno(libc::EPERM));
        }
        Ok(o)
    }

    pub(super) fn get_xattr(&self, c: &Creds, h: &Handle, name: &[u8]) -> Result<Bytes> {
        let o = self.resolve(h)?;
        if o.fmt() == libc::S_IFLNK {
            return Err(Errno(libc::ENODATA));
        }
        let n = local_name(name)?;
        let p = sys::proc_path(o.raw());
        let _g = self.as_caller(c)?;
        let mut buf = vec![0u8; MAX_VALUE];
        // SAFETY: NUL-terminated path and name; a buffer of its length.
        let len = check(unsafe {
            libc::getxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), buf.len())
        })?;
        buf.truncate(len);
        Ok(Bytes::from(buf))
    }

    pub(super) fn set_xattr(
        &self,
        c: &Creds,
        h: &Handle,
        name: &[u8],
        value: &[u8],
        how: XattrHow,
    ) -> Result<()> {
        if value.len() > MAX_VALUE {
            return Err(Errno(libc::E2BIG));
        }
        let o = self.xattr_obj(h)?;
        let n = local_name(name)?;
        let p = sys::proc_path(o.raw());
        let flags = match how {
            XattrHow::Either => 0,
            XattrHow::Create => libc::XATTR_CREATE,
            XattrHow::Replace => libc::XATTR_REPLACE,
        };
        {
            let _g = self.as_caller(c)?;
            // SAFETY: NUL-terminated path and name; a value of its length.
            check(unsafe {
                libc::setxattr(
                    p.as_ptr(),
                    n.as_ptr(),
                    value.as_ptr().cast(),
                    value.len(),
                    flags,
                )
            } as isize)?;
        }
        self.changed(&o)
    }

    pub(super) fn list_xattrs(&self, c: &Creds, h: &Handle) -> Result<Vec<Bytes>> {
        let o = self.resolve(h)?;
        if o.fmt() == libc::S_IFLNK {
            return Ok(Vec::new());
        }
        let p = sys::proc_path(o.raw());
        let _g = self.as_caller(c)?;
        // The list may grow between the two calls: ERANGE, try again.
        for _ in 0..4 {
            // SAFETY: a NULL buffer of size 0 asks for the size.
            let size = check(unsafe { libc::listxattr(p.as_ptr(), std::ptr::null_mut(), 0) })?;
            let mut buf = vec![0u8; size.max(1)];
            // SAFETY: a buffer of its length.
            match check(unsafe { libc::listxattr(p.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) })
            {
                Ok(len) => {
                    buf.truncate(len);
                    let mut names: Vec<Bytes> = buf
                        .split(|&b| b == 0)
                        .filter_map(|n| n.strip_prefix(PREFIX))
                        .filter(|n| !n.is_empty())
                        .map(Bytes::copy_from_slice)
                        .collect();
                    names.sort();
                    return Ok(names);
                }
                Err(Errno(libc::ERANGE)) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(Errno(libc::EAGAIN))
    }

    pub(super) fn remove_xattr(&self, c: &Creds, h: &Handle, name: &[u8]) -> Result<()> {
        let o = self.xattr_obj(h)?;
        let n = local_name(name)?;
        let p = sys::proc_path(o.raw());
        {
            let _g = self.as_caller(c)?;
            // SAFETY: NUL-terminated path and name.
            check(unsafe { libc::removexattr(p.as_ptr(), n.as_ptr()) } as isize)?;
        }
        self.changed(&o)
    }

    /// An attribute changed: durable before the reply (as any metadata
    /// change), and a new change attribute.
    fn changed(&self, o: &super::Obj) -> Result<()> {
        self.make_durable(o.raw(), o.fmt())?;
        self.touched_fd(o.raw());
        Ok(())
    }

    /// The POSIX ACL in `system.posix_acl_access` (`default`:
    /// `system.posix_acl_default`), None if there is none.
    pub(super) fn get_posix_acl(
        &self,
        c: &Creds,
        h: &Handle,
        default: bool,
    ) -> Result<Option<crate::acl::PosixAcl>> {
        let o = self.resolve(h)?;
        if o.fmt() == libc::S_IFLNK || (default && o.fmt() != libc::S_IFDIR) {
            return Ok(None);
        }
        let p = sys::proc_path(o.raw());
        let _g = self.as_caller(c)?;
        let mut buf = vec![0u8; 8 * crate::acl::MAX_ENTRIES + 4];
        // SAFETY: NUL-terminated path and name; a buffer of its length.
        let len = match check(unsafe {
            libc::getxattr(
                p.as_ptr(),
                acl_name(default).as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        }) {
            Ok(len) => Some(len),
            Err(Errno(libc::ENODATA)) => None,
            Err(e) => return Err(e),
        };
        let acl = match len {
            Some(len) => {
                Some(crate::acl::PosixAcl::from_xattr(&buf[..len]).ok_or(Errno(libc::EIO))?)
            }
            None => None,
        };
        // The status was read (resolve) before the ACL: if its ctime had
        // settled then, any change to the ACL since (or during the read)
        // has a later ctime, so the ACL stands for exactly this ctime.
        if settled(ctime_ns(&o.st)) {
            let known = KnownAcl {
                ino: o.st.st_ino,
                ctime: ctime_ns(&o.st),
                acl: acl.clone(),
            };
            lock(&self.known_acls).insert((h.clone(), default), known);
        }
        Ok(acl)
    }

    /// The ACL [`Self::get_posix_acl`] last read of `h`, if the object's
    /// attributes `a` (just read) show the same inode and ctime.
    pub(super) fn known_posix_acl(
        &self,
        h: &Handle,
        default: bool,
        a: &Attr,
    ) -> Option<Option<crate::acl::PosixAcl>> {
        if a.ftype == FileType::Symlink || (default && a.ftype != FileType::Directory) {
            return Some(None);
        }
        let k = lock(&self.known_acls).get(&(h.clone(), default))?;
        (k.ino == a.fileid && k.ctime == a.ctime.nanos()).then_some(k.acl)
    }

    /// Sets (or, None, removes) the POSIX ACL; a default ACL only on a
    /// directory. The kernel checks the caller may (the owner, or
    /// CAP_FOWNER) and sets the mode's bits from an access ACL.
    pub(super) fn set_posix_acl(
        &self,
        c: &Creds,
        h: &Handle,
        default: bool,
        acl: Option<&crate::acl::PosixAcl>,
    ) -> Result<()> {
        let o = self.xattr_obj(h)?;
        if default && o.fmt() != libc::S_IFDIR {
            return Err(Errno(libc::EINVAL));
        }
        {
            let _g = self.as_caller(c)?;
            write_acl(o.raw(), default, acl)?;
        }
        self.changed(&o)
    }
}

/// Sets `acl` on the object open as `fd` (O_PATH), with the caller's
/// identity already in force: a set ACL, a removed one (None).
pub(super) fn write_acl(
    fd: std::os::fd::RawFd,
    default: bool,
    acl: Option<&crate::acl::PosixAcl>,
) -> Result<()> {
    let p = sys::proc_path(fd);
    let name = acl_name(default);
    match acl {
        Some(a) => {
            let v = a.to_xattr();
            // SAFETY: NUL-terminated path and name; a value of its length.
            check(unsafe {
                libc::setxattr(p.as_ptr(), name.as_ptr(), v.as_ptr().cast(), v.len(), 0)
            } as isize)?;
        }
        None => {
            // SAFETY: NUL-terminated path and name.
            match check(unsafe { libc::removexattr(p.as_ptr(), name.as_ptr()) } as isize) {
                Ok(_) | Err(Errno(libc::ENODATA)) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// Applies an NFSv4 ACL's POSIX form to the object open as `fd`
/// (`is_dir`: a directory, the only kind with a default ACL).
pub(super) fn write_acl_set(
    fd: std::os::fd::RawFd,
    is_dir: bool,
    set: &crate::acl::AclSet,
) -> Result<()> {
    if !is_dir && set.default.is_some() {
        return Err(Errno(libc::EINVAL));
    }
    write_acl(fd, false, Some(&set.access))?;
    if is_dir {
        write_acl(fd, true, set.default.as_ref())?;
    }
    Ok(())
}

/// A POSIX ACL as read at an inode number and ctime.
#[derive(Debug, Clone)]
pub(crate) struct KnownAcl {
    ino: u64,
    ctime: u64,
    acl: Option<crate::acl::PosixAcl>,
}

fn acl_name(default: bool) -> &'static std::ffi::CStr {
    if default {
        c"system.posix_acl_default"
    } else {
        c"system.posix_acl_access"
    }
}
