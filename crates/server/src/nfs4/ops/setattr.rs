//! SETATTR (RFC 8881 §18.30), and the delegated times a delegation's
//! holder sets (RFC 9754 §5: `time_deleg_access`, `time_deleg_modify`).

use proto::nfs4::*;

use crate::conflicts::directories;
use crate::nfs4::attrs;
use crate::nfs4::compound::context::Compound;
use crate::nfs4::deleg;
use crate::nfs4::dirdeleg;
use crate::stable::durable;

pub async fn run(cx: &mut Compound, args: SetAttr4Args) -> SetAttr4Res {
    match setattr(cx, args).await {
        Ok(attrsset) => SetAttr4Res {
            status: NfsStat4::Nfs4Ok,
            attrsset,
        },
        Err(status) => SetAttr4Res {
            status,
            attrsset: Bitmap4::default(),
        },
    }
}

async fn setattr(cx: &mut Compound, args: SetAttr4Args) -> Result<Bitmap4, NfsStat4> {
    let fh = cx.cfh()?.clone();
    cx.check_writable(&fh)?;
    let (mut set, mask) = attrs::to_setattr(cx, &args.obj_attributes).await?;
    let delegated = [FATTR4_TIME_DELEG_ACCESS, FATTR4_TIME_DELEG_MODIFY];
    if delegated.iter().any(|a| mask.contains(*a)) {
        delegated_times(cx, &fh.key(), &args.stateid, &mask, &mut set)?;
    }
    // Only delegated times: the holder's own, which recall nothing.
    let only_delegated = mask.iter().all(|a| delegated.contains(&a));
    // The stateid matters only for a change of size (§18.30.3), which is
    // a write to the file.
    let sized = set.size.is_some();
    if sized {
        cx.check_io(&args.stateid, OPEN4_SHARE_ACCESS_WRITE)?;
    }
    if set.is_empty() {
        return Ok(mask);
    }
    // Delegations of the file are recalled (§10.4.6), but for the write
    // delegation whose holder sets them under its stateid.
    if !only_delegated {
        deleg::settle_io(cx, &fh.key(), &args.stateid, false).await?;
    }
    // A directory's: other clients' delegations of it (§10.9).
    directories::settle(dirdeleg::by(cx), &fh.key(), NotifyType4::ChangeDirAttrs).await?;
    let _order = directories::order(dirdeleg::by(cx), &[&fh.key()]).await;
    let handle = fh.handle.clone();
    cx.vfs(fh.export, move |v, c| {
        let a = v.getattr(&handle)?;
        if set.size.is_some() {
            match a.ftype {
                vfs::FileType::Regular => {}
                vfs::FileType::Directory => return Ok(Err(NfsStat4::Nfs4errIsdir)),
                _ => return Ok(Err(NfsStat4::Nfs4errInval)),
            }
        }
        // A symbolic link's mode cannot be changed on Linux; as knfsd
        // does, the request succeeds without changing it.
        if a.ftype == vfs::FileType::Symlink {
            set.mode = None;
            if set.is_empty() {
                return Ok(Ok(()));
            }
        }
        v.setattr(c, &handle, &set).map(|_| Ok(()))
    })
    .await??;
    if sized {
        durable::barrier(cx.export(fh.export)?, &fh.handle).await?;
    }
    dirdeleg::attrs_changed_of(cx, &fh).await;
    Ok(mask)
}

/// Checks the delegated times of a SETATTR (RFC 9754 §5): `sid` must be
/// this client's delegation of the file with delegated timestamps (a
/// write one for `time_deleg_modify`), else NFS4ERR_BAD_STATEID, as the
/// Linux server answers. A time older than the file's when the delegation
/// was granted is not taken (the holder's cache knew a later one); one in
/// the future is taken as now. The kernel sets the file's ctime to the
/// time of the change, which a process cannot choose.
fn delegated_times(
    cx: &Compound,
    key: &state::FileKey,
    sid: &StateId4,
    mask: &Bitmap4,
    set: &mut vfs::SetAttr,
) -> Result<(), NfsStat4> {
    let client = cx.clientid()?;
    let sid = cx.resolve_stateid(sid)?;
    let (write, at_grant) = cx.srv.state().delegated_times(client, &sid, key)?;
    if mask.contains(FATTR4_TIME_DELEG_MODIFY) && !write {
        return Err(NfsStat4::Nfs4errBadStateid);
    }
    let now = vfs::Timespec::now();
    let bound = |t: Option<vfs::SetTime>, floor: NfsTime4| match t {
        Some(vfs::SetTime::Client(t)) => {
            let floor = vfs::Timespec {
                sec: floor.seconds,
                nsec: floor.nseconds,
            };
            (t >= floor).then_some(vfs::SetTime::Client(t.min(now)))
        }
        other => other,
    };
    if mask.contains(FATTR4_TIME_DELEG_ACCESS) {
        set.atime = bound(set.atime.take(), at_grant.atime);
    }
    if mask.contains(FATTR4_TIME_DELEG_MODIFY) {
        set.mtime = bound(set.mtime.take(), at_grant.mtime);
    }
    Ok(())
}
