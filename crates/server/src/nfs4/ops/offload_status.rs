//! OFFLOAD_STATUS (RFC 7862 §15.9). Every COPY is synchronous, so no
//! copy stateid exists to ask about: NFS4ERR_BAD_STATEID.

use proto::nfs4::*;

use crate::nfs4::compound::Compound;

pub async fn run(cx: &mut Compound, _args: OffloadStatus4Args) -> OffloadStatus4Res {
    match no_offloads(cx) {
        Err(s) => Res4::Err(s),
    }
}

/// The answer of OFFLOAD_STATUS and OFFLOAD_CANCEL: NFSv4.2 only, on the
/// destination file, and never a copy in progress.
pub(crate) fn no_offloads(cx: &Compound) -> Result<std::convert::Infallible, NfsStat4> {
    if cx.minorversion < 2 {
        return Err(NfsStat4::Nfs4errNotsupp);
    }
    cx.cfh()?;
    Err(NfsStat4::Nfs4errBadStateid)
}
