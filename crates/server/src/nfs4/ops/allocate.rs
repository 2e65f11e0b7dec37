//! ALLOCATE (RFC 7862 §15.1).

use proto::nfs4::*;

use super::read::{check_io, regular};
use crate::nfs4::compound::Compound;

pub async fn run(cx: &mut Compound, args: Allocate4Args) -> Allocate4Res {
    space(cx, args.stateid, args.offset, args.length, false)
        .await
        .into()
}

/// ALLOCATE (`punch` false) and DEALLOCATE (`punch` true) of
/// `[offset, offset + length)`: NFSv4.2 only, checked like a WRITE.
pub(crate) async fn space(
    cx: &mut Compound,
    stateid: StateId4,
    offset: u64,
    length: u64,
    punch: bool,
) -> Result<(), NfsStat4> {
    if cx.minorversion < 2 {
        return Err(NfsStat4::Nfs4errNotsupp);
    }
    let fh = cx.cfh()?.clone();
    cx.check_writable(&fh)?;
    let special = check_io(cx, &stateid, OPEN4_SHARE_ACCESS_WRITE)?;
    if length == 0 {
        return Err(NfsStat4::Nfs4errInval);
    }
    if !vfs::range_fits(offset, length) {
        return Err(NfsStat4::Nfs4errFbig);
    }
    let handle = fh.handle.clone();
    cx.vfs(fh.export, move |v, c| {
        if special {
            if let Err(s) = regular(&v.getattr(&handle)?) {
                return Ok(Err(s));
            }
        }
        if punch {
            v.deallocate(c, &handle, offset, length).map(Ok)
        } else {
            v.allocate(c, &handle, offset, length).map(Ok)
        }
    })
    .await?
}
