//! What one client's change does to another's state, whichever protocol
//! the change comes by: delegations of the file recalled and waited for
//! (`delegations`), directory delegations recalled or told of the change
//! (`directories`), files removed while held kept for their holders
//! (`unlinked`), byte-range locks shared with local processes
//! (`local_locks`). The callbacks themselves are NFSv4's (CB_RECALL,
//! CB_NOTIFY, CB_NOTIFY_LOCK on a session's back channel); the NFSv4
//! service installs them in the server instance as [`Callbacks`], so that
//! a change by NFSv3 or NLM reaches NFSv4 clients without importing NFSv4.

pub mod delegations;
pub mod directories;
pub mod exclusive;
pub mod local_locks;
pub mod order;
pub mod unlinked;

use std::sync::Arc;

use proto::nfs4::{Bitmap4, Fattr4};
use state::{DelegRecall, LockNotify, Session};

use crate::exports::export::Export;

/// Sends callbacks to the clients of one server instance (it holds its
/// own reference to it), in the background: each returns at once. And
/// encodes what they carry.
pub trait Callbacks: Send + Sync {
    /// CB_RECALL of a delegation (RFC 8881 §20.2); one that cannot be
    /// delivered is revoked.
    fn recall(&self, r: DelegRecall);
    /// CB_LAYOUTRECALL of layouts (RFC 8881 §20.3); one that cannot be
    /// delivered, or is refused, loses the layouts (fenced).
    fn recall_layout(&self, r: state::layouts::LayoutRecall);
    /// CB_NOTIFY_LOCK to waiters whose lock may now be granted (§20.11).
    fn notify_locks(&self, notes: Vec<LockNotify>);
    /// Starts the CB_NOTIFY sender of the directory delegation `other`
    /// (§20.4), after a short wait when `wait` (to batch changes).
    fn notify_dir(&self, session: Arc<Session>, other: [u8; 12], wait: bool);
    /// The attributes `want` of a directory of `export` whose attributes
    /// are now `a`, as NFSv4 clients see them (NOTIFY4_CHANGE_DIR_ATTRS).
    fn dir_attrs(&self, export: &Export, a: &vfs::Attr, want: &Bitmap4) -> Fattr4;
}
