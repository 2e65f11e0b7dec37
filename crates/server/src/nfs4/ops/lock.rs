//! Lock: not yet implemented.

use proto::nfs4::*;

use crate::nfs4::compound::Compound;

pub async fn run(_cx: &mut Compound, _args: Lock4Args) -> Lock4Res {
    Lock4Res::Err(NfsStat4::Nfs4errNotsupp)
}
