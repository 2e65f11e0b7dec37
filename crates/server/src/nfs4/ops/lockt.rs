//! LockT: not yet implemented.

use proto::nfs4::*;

use crate::nfs4::compound::Compound;

pub async fn run(_cx: &mut Compound, _args: LockT4Args) -> LockT4Res {
    LockT4Res::Err(NfsStat4::Nfs4errNotsupp)
}
