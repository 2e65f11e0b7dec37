//! The common work of ALLOCATE and DEALLOCATE (RFC 7862 §15.1, §15.4).

use proto::nfs4::*;

use super::check::regular;
use super::compound::context::Compound;
use super::deleg;
use crate::stable::durable;

/// ALLOCATE (`punch` false) and DEALLOCATE (`punch` true) of
/// `[offset, offset + length)`: NFSv4.2 only, checked like a WRITE.
pub async fn space(
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
    let special = cx.check_io(&stateid, OPEN4_SHARE_ACCESS_WRITE)?;
    if length == 0 {
        return Err(NfsStat4::Nfs4errInval);
    }
    if !vfs::range_fits(offset, length) {
        return Err(NfsStat4::Nfs4errFbig);
    }
    // A change of the data: delegations of the file are recalled (but
    // the writer's own write delegation).
    deleg::settle_io(cx, &fh.key(), &stateid, false).await?;
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
    .await??;
    durable::barrier(cx.export(fh.export)?, &fh.handle).await?;
    Ok(())
}
