use xdr::{Decoder, Encoder, Pack, Unpack};

use super::NfsStat4;

/// The common result shape `union switch (nfsstat4 status) { case NFS4_OK:
/// T resok; default: void; }` (for example RFC 8881 §18.16.2, OPEN4res).
/// Results with more arms have their own types.
#[derive(Debug, Clone, PartialEq)]
pub enum Res4<T> {
    Ok(T),
    Err(NfsStat4),
}

impl<T> Res4<T> {
    pub fn status(&self) -> NfsStat4 {
        match self {
            Res4::Ok(_) => NfsStat4::Nfs4Ok,
            Res4::Err(s) => *s,
        }
    }
}

impl<T> From<Result<T, NfsStat4>> for Res4<T> {
    fn from(r: Result<T, NfsStat4>) -> Self {
        match r {
            Ok(v) => Res4::Ok(v),
            Err(NfsStat4::Nfs4Ok) => Res4::Err(NfsStat4::Nfs4errServerfault),
            Err(e) => Res4::Err(e),
        }
    }
}

impl<T: Pack> Pack for Res4<T> {
    fn pack(&self, e: &mut Encoder) {
        match self {
            Res4::Ok(v) => {
                NfsStat4::Nfs4Ok.pack(e);
                v.pack(e)
            }
            Res4::Err(s) => s.pack(e),
        }
    }
}

impl<T: Unpack> Unpack for Res4<T> {
    fn unpack(d: &mut Decoder) -> xdr::Result<Self> {
        match NfsStat4::unpack(d)? {
            NfsStat4::Nfs4Ok => Ok(Res4::Ok(T::unpack(d)?)),
            s => Ok(Res4::Err(s)),
        }
    }
}
