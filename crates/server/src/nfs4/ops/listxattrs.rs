//! LISTXATTRS (RFC 8276 §8.4.3): the names of the current filehandle's
//! extended attributes, in pages: the cookie is the number of names the
//! client has had (0: from the start), `maxcount` bounds the reply's
//! encoded names, cookie and eof; a first name that does not fit is
//! NFS4ERR_TOOSMALL, a cookie past the end NFS4ERR_BAD_COOKIE.

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;
use crate::nfs4::xattr;

pub async fn run(cx: &mut Compound, args: ListXattrs4Args) -> ListXattrs4Res {
    list(cx, args).await.into()
}

async fn list(cx: &mut Compound, args: ListXattrs4Args) -> Result<ListXattrs4ResOk, NfsStat4> {
    let fh = xattr::object(cx)?;
    let h = fh.handle.clone();
    let names = cx.vfs(fh.export, move |v, c| v.listxattrs(c, &h)).await?;
    let start = usize::try_from(args.cookie).map_err(|_| NfsStat4::Nfs4errBadCookie)?;
    if start > names.len() {
        return Err(NfsStat4::Nfs4errBadCookie);
    }
    // cookie, the array's count and eof, then each name (length, padded).
    let mut used = 8 + 4 + 4;
    let mut page = Vec::new();
    for n in &names[start..] {
        let size = 4 + n.len().div_ceil(4) * 4;
        if used + size > args.maxcount as usize {
            break;
        }
        used += size;
        page.push(n.clone());
    }
    let next = start + page.len();
    if page.is_empty() && next < names.len() {
        return Err(NfsStat4::Nfs4errToosmall);
    }
    Ok(ListXattrs4ResOk {
        cookie: next as u64,
        names: page,
        eof: next == names.len(),
    })
}
