//! COPY (RFC 7862 §15.2): intra-server and always synchronous. The saved
//! filehandle is the source, the current filehandle the destination; the
//! source stateid must allow reading, the destination stateid writing.
//! An inter-server copy (a non-empty `ca_source_server`) is
//! NFS4ERR_NOTSUPP, as knfsd answers with inter-server copy disabled.

use proto::nfs4::*;

use super::read::regular;
use crate::nfs4::compound::{Compound, Fh};

pub async fn run(cx: &mut Compound, args: Copy4Args) -> Copy4Res {
    match copy(cx, args).await {
        Ok(count) => Copy4Res::Ok(Copy4ResOk {
            response: WriteResponse4 {
                // Synchronous: no callback id, whatever the client asked.
                callback_id: None,
                count,
                // Copied through the page cache: COMMIT makes it durable.
                committed: StableHow4::Unstable4,
                writeverf: cx.srv.write_verf,
            },
            requirements: CopyRequirements4 {
                consecutive: true,
                synchronous: true,
            },
        }),
        Err(s) => Copy4Res::Err(s),
    }
}

/// The source and destination of COPY and CLONE, their stateids checked:
/// (source, destination). NFSv4.2 only.
pub(crate) fn endpoints(
    cx: &Compound,
    src_stateid: &StateId4,
    dst_stateid: &StateId4,
) -> Result<(Fh, Fh), NfsStat4> {
    if cx.minorversion < 2 {
        return Err(NfsStat4::Nfs4errNotsupp);
    }
    let dst = cx.cfh()?.clone();
    let src = cx.sfh.clone().ok_or(NfsStat4::Nfs4errNofilehandle)?;
    // The destination is written (NFS4ERR_ROFS on a read-only export).
    cx.check_writable(&dst)?;
    // A node of the pseudo file system is a directory.
    if src.pseudo.is_some() {
        return Err(NfsStat4::Nfs4errIsdir);
    }
    let client = cx.clientid()?;
    let ssid = cx.resolve_stateid(src_stateid)?;
    let dsid = cx.resolve_stateid(dst_stateid)?;
    {
        let st = cx.srv.state();
        st.check_io(client, &ssid, &src.key(), OPEN4_SHARE_ACCESS_READ)?;
        st.check_io(client, &dsid, &dst.key(), OPEN4_SHARE_ACCESS_WRITE)?;
    }
    // Both must be regular files of one export (one backend).
    if src.export != dst.export {
        return Err(NfsStat4::Nfs4errXdev);
    }
    Ok((src, dst))
}

/// Checks both objects are regular files (NFS4ERR_ISDIR, _SYMLINK,
/// _WRONG_TYPE otherwise), inside a backend call.
pub(crate) fn both_regular(
    v: &dyn vfs::Vfs,
    src: &vfs::Handle,
    dst: &vfs::Handle,
) -> vfs::Result<Result<(), NfsStat4>> {
    Ok(regular(&v.getattr(src)?).and(regular(&v.getattr(dst)?)))
}

async fn copy(cx: &mut Compound, args: Copy4Args) -> Result<u64, NfsStat4> {
    let (src, dst) = endpoints(cx, &args.src_stateid, &args.dst_stateid)?;
    if !args.source_server.is_empty() {
        return Err(NfsStat4::Nfs4errNotsupp);
    }
    let (sh, dh) = (src.handle, dst.handle);
    let (so, dof, n) = (args.src_offset, args.dst_offset, args.count);
    cx.vfs(dst.export, move |v, c| {
        if let Err(s) = both_regular(v, &sh, &dh)? {
            return Ok(Err(s));
        }
        v.copy(c, &sh, so, &dh, dof, n).map(Ok)
    })
    .await?
}
