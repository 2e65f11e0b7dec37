//! WRITE (RFC 8881 §18.32).

use proto::nfs4::*;

use crate::errors;
use crate::nfs4::check::regular;
use crate::nfs4::compound::context::Compound;
use crate::nfs4::deleg;
use crate::stable::durable;

pub async fn run(cx: &mut Compound, args: Write4Args) -> Write4Res {
    write(cx, args).await.into()
}

fn stability(s: StableHow4) -> vfs::Stability {
    match s {
        StableHow4::Unstable4 => vfs::Stability::Unstable,
        StableHow4::DataSync4 => vfs::Stability::DataSync,
        StableHow4::FileSync4 => vfs::Stability::FileSync,
    }
}

fn stable_how(s: vfs::Stability) -> StableHow4 {
    match s {
        vfs::Stability::Unstable => StableHow4::Unstable4,
        vfs::Stability::DataSync => StableHow4::DataSync4,
        vfs::Stability::FileSync => StableHow4::FileSync4,
    }
}

async fn write(cx: &mut Compound, args: Write4Args) -> Result<Write4ResOk, NfsStat4> {
    let fh = cx.cfh()?.clone();
    cx.check_writable(&fh)?;
    let special = cx.check_io(&args.stateid, OPEN4_SHARE_ACCESS_WRITE)?;
    let len = args.data.len();
    if len > cx.srv.cfg.max_io as usize {
        return Err(NfsStat4::Nfs4errInval);
    }
    // Past the largest file size (maxfilesize).
    if !vfs::range_fits(args.offset, len as u64) {
        return Err(NfsStat4::Nfs4errFbig);
    }
    // Delegations of the file are recalled (§10.4.6; nfs4::deleg says
    // why the writer's own read delegation too), but for the writer's own
    // write delegation.
    deleg::settle_io(cx, &fh.key(), &args.stateid, false).await?;
    let handle = fh.handle.clone();
    let offset = args.offset;
    let data = args.data;
    let how = stability(args.stable);
    // A stable write to an export with a write log: written, and its
    // record queued in the log; stable once the log is (one sync for every
    // request queued). Otherwise the data is written unstable, then made
    // stable with the other stable requests to the file in flight (one
    // sync for them all).
    let log = match how {
        vfs::Stability::Unstable => None,
        _ => cx.export(fh.export)?.log.clone(),
    };
    let written = cx
        .vfs(fh.export, {
            let log = log.clone();
            move |v, c| {
                if special {
                    if let Err(s) = regular(&v.getattr(&handle)?) {
                        return Ok(Err(s));
                    }
                }
                match log {
                    Some(log) => log
                        .write(c, &handle, offset, &data)
                        .map(|()| Ok(vfs::Stability::Unstable)),
                    None => v
                        .write(c, &handle, offset, &data, vfs::Stability::Unstable)
                        .map(Ok),
                }
            }
        })
        .await??;
    let committed = match (written, how, log) {
        (_, _, Some(log)) => {
            log.durable().await.map_err(errors::from_errno)?;
            vfs::Stability::FileSync
        }
        (vfs::Stability::Unstable, vfs::Stability::DataSync | vfs::Stability::FileSync, None) => {
            durable::make_stable(&cx.srv.stable, cx.export(fh.export)?, &fh.handle).await?;
            // COMMIT's sync is the whole file's, data and metadata.
            vfs::Stability::FileSync
        }
        (done, _, None) => done,
    };
    Ok(Write4ResOk {
        count: len as u32,
        committed: stable_how(committed),
        writeverf: cx.srv.write_verf,
    })
}
