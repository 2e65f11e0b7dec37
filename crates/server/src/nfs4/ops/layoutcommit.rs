//! LAYOUTCOMMIT (RFC 8881 §18.42): what a client wrote to the data
//! servers under an RW layout reaches the metadata server: the file's
//! size (one past the last byte written, if that is past the end) and
//! its modification time. A flexible-file layout's update body is empty
//! (RFC 8435 §5.2). After a restart, a commit with `loca_reclaim`
//! during the grace period needs no layout (§12.7.4): the client's
//! writes to the data servers under its old layout reach the file's
//! size.

use proto::nfs4::*;

use crate::nfs4::check::regular;
use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound, args: LayoutCommit4Args) -> LayoutCommit4Res {
    layoutcommit(cx, args).await.into()
}

async fn layoutcommit(
    cx: &mut Compound,
    args: LayoutCommit4Args,
) -> Result<LayoutCommit4ResOk, NfsStat4> {
    let fh = cx.cfh()?.clone();
    if args.layoutupdate.layout_type != LAYOUT4_FLEX_FILES {
        return Err(NfsStat4::Nfs4errUnknownLayouttype);
    }
    if !args.layoutupdate.body.is_empty() {
        return Err(NfsStat4::Nfs4errBadxdr);
    }
    if args.length != u64::MAX && args.offset.checked_add(args.length).is_none() {
        return Err(NfsStat4::Nfs4errInval);
    }
    let export = cx.export(fh.export)?.clone();
    let Some(pnfs) = export.pnfs.clone() else {
        return Err(NfsStat4::Nfs4errBadlayout);
    };
    let state = cx.srv.state();
    let client = cx.clientid()?;
    if args.reclaim {
        // §18.42.3: only in the grace period, by a client the server knew
        // before its restart that has not completed its reclaims.
        state.may_take_state(client, true)?;
    } else {
        let sid = cx.resolve_stateid(&args.stateid)?;
        state.layout_commit_check(client, &sid, &fh.key())?;
    }
    let a = cx.attr_of(&fh).await?;
    regular(&a)?;
    // §18.42.3: an offset before the range committed is NFS4ERR_INVAL.
    let end = args.last_write_offset.map(|o| o.saturating_add(1));
    let grows = end.filter(|e| *e > a.size);
    let mtime = match args.time_modify {
        Some(t) if t.nseconds < 1_000_000_000 => Some(vfs::SetTime::Client(vfs::Timespec {
            sec: t.seconds,
            nsec: t.nseconds,
        })),
        Some(_) => return Err(NfsStat4::Nfs4errInval),
        None => Some(vfs::SetTime::ServerNow),
    };
    let set = vfs::SetAttr {
        size: grows,
        mtime,
        ..vfs::SetAttr::default()
    };
    let meta = pnfs.meta.clone();
    let h = fh.handle.clone();
    let creds = vfs::Creds::root();
    cx.blocking(meta, creds, move |v, c| v.setattr(c, &h, &set))
        .await?;
    Ok(LayoutCommit4ResOk { newsize: grows })
}
