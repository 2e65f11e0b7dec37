//! Files removed while clients hold state on them, whichever protocol
//! removes them: kept reachable through their handles, with nlink 0, until
//! the last state on them goes, as an open file is on a local file system
//! (what NFSv4's OPEN4_RESULT_PRESERVE_UNLINKED promises, RFC 8881
//! §18.16.3: a client told so removes the name at once instead of renaming
//! the file to a hidden `.nfs` name). The backend keeps the file
//! ([`vfs::Vfs::remove_keeping`] with [`keeper`]; or one a local process
//! removed while delegated) and says which it keeps
//! ([`vfs::Vfs::kept_unlinked`]); [`sweep`] lets each go once no open,
//! lock or delegation of it is left (after a CLOSE, DELEGRETURN or
//! FREE_STATEID, and on every reaper tick, which covers expired clients).
//!
//! Not across a restart: the kernel frees a file with no name when its
//! last descriptor closes, so a server that stops loses the kept files,
//! and a client reclaiming an open of one gets NFS4ERR_STALE
//! (docs/state.md, "Removed open files").

use std::sync::Arc;

use crate::instance::Server;

/// What to pass [`vfs::Vfs::remove_keeping`] for a removal in `export`:
/// yes for a file some client holds state on.
pub fn keeper(srv: &Server, export: u16) -> impl Fn(&vfs::Handle) -> bool + '_ {
    move |h| srv.state().file_held(&(export, h.0.clone()))
}

/// Lets go of every kept file no client holds state on any more (off the
/// reactor: closing the last descriptor of a removed file frees its
/// blocks).
pub async fn sweep(srv: &Arc<Server>) {
    let exports = srv.exports();
    let mut free = Vec::new();
    for e in exports.iter() {
        for h in e.vfs.kept_unlinked() {
            if !srv.state().file_held(&(e.id, h.0.clone())) {
                free.push((e.clone(), h));
            }
        }
    }
    if free.is_empty() {
        return;
    }
    let _ = crate::handoff::off_thread(move || {
        for (e, h) in free {
            e.vfs.release_unlinked(&h);
        }
    })
    .await;
}
