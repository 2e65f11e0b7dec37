//! ACCESS (RFC 8881 §18.1): which of the asked-for access rights the
//! caller has to the current filehandle, as the backend's permission check
//! decides for the caller's credentials.

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;

/// The NFSv4.1 access bits (RFC 8881 §18.1.1).
const ACCESS4_ALL: u32 = ACCESS4_READ
    | ACCESS4_LOOKUP
    | ACCESS4_MODIFY
    | ACCESS4_EXTEND
    | ACCESS4_DELETE
    | ACCESS4_EXECUTE;
/// The extended-attribute bits of NFSv4.2 (RFC 8276 §8.6): accepted but
/// never reported as supported, since there are no named attributes.
const ACCESS4_XATTR: u32 = ACCESS4_XAREAD | ACCESS4_XAWRITE | ACCESS4_XALIST;

pub async fn run(cx: &mut Compound, args: Access4Args) -> Access4Res {
    access(cx, args).await.into()
}

async fn access(cx: &mut Compound, args: Access4Args) -> Result<Access4ResOk, NfsStat4> {
    let fh = cx.cfh()?.clone();
    let valid = if cx.minorversion >= 2 {
        ACCESS4_ALL | ACCESS4_XATTR
    } else {
        ACCESS4_ALL
    };
    let want = args.access;
    if want & !valid != 0 {
        return Err(NfsStat4::Nfs4errInval);
    }
    if fh.pseudo.is_some() {
        // A pseudo directory (RFC 8881 §7.4) may be read and searched by
        // anyone, and modified by no one.
        let dir = ACCESS4_READ | ACCESS4_LOOKUP | ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_DELETE;
        return Ok(Access4ResOk {
            supported: want & dir,
            access: want & (ACCESS4_READ | ACCESS4_LOOKUP),
        });
    }
    // On a read-only export nothing may be modified, whatever the
    // file's permissions say.
    let read_only = cx.admit(fh.export)?.read_only;
    let h = fh.handle.clone();
    let mut res = cx
        .vfs(fh.export, move |fs, c| {
            let is_dir = fs.getattr(&h)?.ftype == vfs::FileType::Directory;
            // Each access bit and the permission (R_OK, W_OK, X_OK) it needs;
            // the bits with no meaning for this type are left out.
            let table: &[(u32, i32)] = if is_dir {
                &[
                    (ACCESS4_READ, libc::R_OK),
                    (ACCESS4_LOOKUP, libc::X_OK),
                    (ACCESS4_MODIFY, libc::W_OK | libc::X_OK),
                    (ACCESS4_EXTEND, libc::W_OK | libc::X_OK),
                    (ACCESS4_DELETE, libc::W_OK | libc::X_OK),
                ]
            } else {
                &[
                    (ACCESS4_READ, libc::R_OK),
                    (ACCESS4_MODIFY, libc::W_OK),
                    (ACCESS4_EXTEND, libc::W_OK),
                    (ACCESS4_EXECUTE, libc::X_OK),
                ]
            };
            let mut known: Vec<(i32, bool)> = Vec::with_capacity(4);
            let mut res = Access4ResOk {
                supported: 0,
                access: 0,
            };
            for &(bit, mask) in table {
                if want & bit == 0 {
                    continue;
                }
                res.supported |= bit;
                let ok = match known.iter().find(|(m, _)| *m == mask) {
                    Some(&(_, ok)) => ok,
                    None => {
                        let ok = match fs.access(c, &h, mask) {
                            Ok(ok) => ok,
                            Err(vfs::Errno(libc::EACCES | libc::EPERM | libc::EROFS)) => false,
                            Err(e) => return Err(e),
                        };
                        known.push((mask, ok));
                        ok
                    }
                };
                if ok {
                    res.access |= bit;
                }
            }
            Ok(res)
        })
        .await?;
    if read_only {
        res.access &= !(ACCESS4_MODIFY | ACCESS4_EXTEND | ACCESS4_DELETE);
    }
    Ok(res)
}
