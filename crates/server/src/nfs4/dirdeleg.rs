//! NFSv4's side of directory delegations (RFC 8881 §10.9; the rules are
//! in `crate::conflicts::directories`): who changes, as a COMPOUND names
//! its client, and the directory attributes a SETATTR changed.

use crate::conflicts::directories::{attrs_changed, watched, Changer, NFSV3};
use proto::nfs4::NotifyType4;

use super::compound::context::{Compound, Fh};

/// The changer of this compound.
pub fn by(cx: &Compound) -> Changer<'_> {
    Changer {
        srv: &cx.srv,
        client: cx.clientid().unwrap_or(NFSV3),
    }
}

/// [`attrs_changed`] for this compound's directory `dir`, its attributes
/// read now.
pub async fn attrs_changed_of(cx: &Compound, dir: &Fh) {
    if !watched(by(cx), &dir.key(), NotifyType4::ChangeDirAttrs) {
        return;
    }
    if let Ok(a) = cx.attr_of(dir).await {
        attrs_changed(by(cx), &dir.key(), &a);
    }
}
