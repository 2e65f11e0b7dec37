//! DestroyClientId: not yet implemented.

use proto::nfs4::*;

use crate::nfs4::compound::Compound;

pub async fn run(_cx: &mut Compound, _args: DestroyClientId4Args) -> DestroyClientId4Res {
    Res4::Err(NfsStat4::Nfs4errNotsupp)
}
