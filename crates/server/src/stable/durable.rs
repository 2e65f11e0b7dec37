//! Making a file's writes durable for a COMMIT, a stable WRITE or a change
//! the write log must not replay over (RFC 8881 §18.3, RFC 1813 §3.3.21):
//! through the file's group commit (`groups`), after the write log's
//! barrier (`writelog`).

use proto::nfs4::NfsStat4;

use super::groups::Groups;
use crate::errors;
use crate::exports::export::Export;
use crate::handoff::off_thread_urgent;

/// Makes everything written to `handle` of `export` before this call stable, sharing the
/// sync with the other stable requests to the file in flight (COMMIT's
/// sync: data and metadata, `Vfs::commit`).
///
/// The sync goes to the pool as an urgent call: COMPOUNDs running whole on
/// the pool may be the ones waiting for it.
pub async fn make_stable(
    groups: &Groups,
    export: &Export,
    handle: &vfs::Handle,
) -> Result<(), NfsStat4> {
    if barrier(export, handle).await? {
        // The barrier synced the file.
        return Ok(());
    }
    let fs = export.vfs.clone();
    let group = groups.of(export.id, handle);
    group
        .stable(|| async {
            let handle = handle.clone();
            match off_thread_urgent(move || fs.commit(&handle)).await {
                Ok(r) => r.map_err(errors::from_errno),
                Err(_) => Err(NfsStat4::Nfs4errServerfault),
            }
        })
        .await
}

/// After a change of `handle`'s data or size other than a logged WRITE (or
/// before a COMMIT's answer): where the export's write log holds records
/// of the file no mark covers, syncs it and logs that it did, so that
/// replay after a crash never writes the older records over the change
/// ([`crate::stable::writelog::WriteLog::barrier`]). Whether it synced the file.
pub async fn barrier(export: &Export, handle: &vfs::Handle) -> Result<bool, NfsStat4> {
    let Some(log) = export.log.clone() else {
        return Ok(false);
    };
    if !log.is_logged(handle) {
        return Ok(false);
    }
    let handle = handle.clone();
    match off_thread_urgent(move || log.barrier(&handle)).await {
        Ok(r) => r.map_err(errors::from_errno),
        Err(_) => Err(NfsStat4::Nfs4errServerfault),
    }
}
