//! GET_DIR_DELEGATION (RFC 8881 §18.39): a delegation of the directory that
//! is the current filehandle (§10.9), with notifications of other clients'
//! changes to it (`nfs4::dirdeleg` says which are offered). Refused
//! (GDD4_UNAVAIL, never with a promise to signal) where a file's
//! delegation would be: delegations off on the export, no working back
//! channel, the grace period, too many held, a recent conflict.

use std::time::Duration;

use proto::nfs4::*;

use crate::conflicts::directories;
use crate::exports::COOKIEVERF;
use crate::nfs4::check::need_dir;
use crate::nfs4::compound::context::Compound;
use crate::nfs4::deleg;
use state::DirWatch;

pub async fn run(cx: &mut Compound, args: GetDirDelegation4Args) -> GetDirDelegation4Res {
    get_dir_delegation(cx, args).await.into()
}

async fn get_dir_delegation(
    cx: &mut Compound,
    args: GetDirDelegation4Args,
) -> Result<GetDirDelegation4ResNonFatal, NfsStat4> {
    let fh = cx.cfh()?.clone();
    let client = cx.clientid()?;
    let unavail = GetDirDelegation4ResNonFatal::Unavail(false);
    if fh.pseudo.is_some() {
        return Ok(unavail);
    }
    let h = fh.handle.clone();
    cx.vfs(fh.export, move |v, _| need_dir(&v.getattr(&h)?))
        .await?;
    if !cx.export(fh.export).is_ok_and(|e| e.delegations) {
        return Ok(unavail);
    }
    // A delegation is only as good as its recall (§10.2).
    if !cx.session.as_ref().is_some_and(|s| s.callable()) {
        return Ok(unavail);
    }
    let types = directories::TYPES
        .iter()
        .filter(|t| args.notification_types.contains(**t as u32))
        .fold(0u32, |m, t| m | 1 << *t as u32);
    let dir_attrs = Bitmap4::from_attrs(
        &directories::DIR_ATTRS
            .iter()
            .copied()
            .filter(|a| args.dir_attributes.contains(*a))
            .collect::<Vec<_>>(),
    );
    let delay = args.dir_attr_delay;
    let attr_delay = if delay.seconds < 0 {
        Duration::ZERO
    } else {
        Duration::new(delay.seconds as u64, delay.nseconds.min(999_999_999))
    };
    let watch = DirWatch {
        types,
        dir_attrs: dir_attrs.clone(),
        attr_delay,
        ..Default::default()
    };
    // Entries a local process adds, removes or renames must recall it:
    // none for a directory that cannot be watched.
    if deleg::protect(cx, &fh.key(), deleg::Kind::Dir, false)
        .await
        .is_err()
    {
        return Ok(unavail);
    }
    let granted = cx
        .srv
        .state()
        .offer_dir_delegation(client, &fh.key(), fh.wire.clone(), watch);
    let Ok(stateid) = granted else {
        deleg::unprotect(cx, &fh.key(), deleg::Kind::Dir);
        return Ok(unavail);
    };
    let notification = Bitmap4::from_attrs(
        &(0..32)
            .filter(|b| types & (1 << b) != 0)
            .collect::<Vec<_>>(),
    );
    Ok(GetDirDelegation4ResNonFatal::Ok(GetDirDelegation4ResOk {
        cookieverf: COOKIEVERF,
        stateid,
        notification,
        child_attributes: Bitmap4::default(),
        dir_attributes: dir_attrs,
    }))
}
