//! Shared by the extended-attribute operations (RFC 8276 §8.4): the key's
//! checks, and the change of an object's attributes with its change info.

use bytes::Bytes;
use proto::nfs4::*;

use super::compound::context::{Compound, Fh};
use super::deleg;
use super::dirs::change_info;

/// The longest key: Linux's XATTR_NAME_MAX (255) less the `user.` the
/// backend puts before it.
const MAX_KEY: usize = 255 - 5;

/// Checks an xattr key (RFC 8276 §8.3: a component name): empty or not
/// UTF-8, or with a NUL, is NFS4ERR_INVAL; too long, NFS4ERR_NAMETOOLONG.
pub fn key(k: &XattrKey4) -> Result<Bytes, NfsStat4> {
    if k.is_empty() || k.contains(&0) || std::str::from_utf8(k).is_err() {
        return Err(NfsStat4::Nfs4errInval);
    }
    if k.len() > MAX_KEY {
        return Err(NfsStat4::Nfs4errNametoolong);
    }
    Ok(k.clone())
}

/// The object of an xattr operation: the current filehandle, in an
/// export (pseudo directories keep none).
pub fn object(cx: &Compound) -> Result<Fh, NfsStat4> {
    let fh = cx.cfh()?.clone();
    if fh.pseudo.is_some() {
        return Err(NfsStat4::Nfs4errNotsupp);
    }
    Ok(fh)
}

/// Runs `change` on the current filehandle's object (SETXATTR,
/// REMOVEXATTR): a writable export, delegations recalled (an attribute
/// change, §10.4.6), and the object's change attribute before and after.
pub async fn change<F>(cx: &Compound, change: F) -> Result<ChangeInfo4, NfsStat4>
where
    F: FnOnce(&dyn vfs::Vfs, &vfs::Creds, &vfs::Handle) -> vfs::Result<()> + Send + 'static,
{
    let fh = object(cx)?;
    cx.check_writable(&fh)?;
    deleg::settle(cx, &fh.key()).await?;
    let h = fh.handle.clone();
    cx.vfs(fh.export, move |v, c| {
        let before = v.getattr(&h)?.change;
        change(v, c, &h)?;
        let after = v.getattr(&h)?.change;
        Ok(change_info(before, after))
    })
    .await
}
