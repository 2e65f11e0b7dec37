//! SetAttr: not yet implemented.

use proto::nfs4::*;

use crate::nfs4::compound::Compound;

pub async fn run(_cx: &mut Compound, _args: SetAttr4Args) -> SetAttr4Res {
    SetAttr4Res {
        status: NfsStat4::Nfs4errNotsupp,
        attrsset: Bitmap4::default(),
    }
}
