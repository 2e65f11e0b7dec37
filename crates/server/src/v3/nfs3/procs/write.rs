//! WRITE (RFC 1813 §3.3.7): UNSTABLE writes are answered as written and
//! made stable by COMMIT; DATA_SYNC and FILE_SYNC ones through the
//! export's write log if it has one, else with a sync grouped with the
//! file's other stable requests (NFSv4's too). The write verifier is
//! NFSv4's: it changes only when the server restarts.

use proto::nfs3::*;

use crate::v3::nfs3::{from_errno, wcc, Ctx};

pub async fn run(cx: &Ctx, args: Write3Args) -> Write3Res {
    let fail = |s, file_wcc| Res3::Fail(s, FileWccFail3 { file_wcc });
    let o = match cx.obj(&args.file) {
        Ok(o) => o,
        Err(s) => return fail(s, WccData::default()),
    };
    if let Err(s) = cx.check_writable(o.export) {
        return fail(s, WccData::default());
    }
    let mut data = args.data;
    if (data.len() as u64) < args.count as u64 {
        return fail(NfsStat3::Inval, WccData::default());
    }
    data.truncate(args.count as usize);
    if data.len() > cx.srv.cfg.max_io as usize {
        return fail(NfsStat3::Inval, WccData::default());
    }
    if !vfs::range_fits(args.offset, data.len() as u64) {
        return fail(NfsStat3::Fbig, WccData::default());
    }
    if let Err(s) = cx.settle(&o, false).await {
        return fail(s, WccData::default());
    }
    if let Err(s) = cx.check_share(&o, proto::nfs4::OPEN4_SHARE_ACCESS_WRITE) {
        return fail(s, WccData::default());
    }
    let fsid = cx.fsid(o.export);
    let stable = args.stable != StableHow::Unstable;
    let log = if stable {
        cx.export(o.export).ok().and_then(|e| e.log.clone())
    } else {
        None
    };
    let (h, offset, logged) = (o.handle.clone(), args.offset, log.clone());
    let r = cx
        .vfs(o.export, move |v, c| {
            let Some(log) = logged else {
                // The backend's attributes either side of the write; after
                // a failure only those after it.
                return Ok(match v.write_wcc(c, &h, offset, &data) {
                    Ok((before, after)) => (Some(before), Some(after), Ok(data.len())),
                    Err(e) => (None, v.getattr(&h).ok(), Err(from_errno(e))),
                });
            };
            let before = v.getattr(&h)?;
            let r = match before.ftype {
                vfs::FileType::Regular => log.write(c, &h, offset, &data).map_err(from_errno),
                vfs::FileType::Directory => Err(NfsStat3::Isdir),
                _ => Err(NfsStat3::Inval),
            };
            let after = v.getattr(&h).ok();
            Ok((Some(before), after, r.map(|()| data.len())))
        })
        .await;
    let (before, after, r) = match r {
        Ok(x) => x,
        Err(s) => return fail(s, WccData::default()),
    };
    let file_wcc = wcc(before.as_ref(), after.as_ref(), fsid);
    let count = match r {
        Ok(n) => n as u32,
        Err(s) => return fail(s, file_wcc),
    };
    let committed = if !stable {
        StableHow::Unstable
    } else {
        let done = match log {
            Some(log) => log.durable().await.map_err(from_errno),
            None => cx.make_stable(&o).await,
        };
        if let Err(s) = done {
            return fail(s, file_wcc);
        }
        StableHow::FileSync
    };
    Res3::Ok(Write3ResOk {
        file_wcc,
        count,
        committed,
        verf: cx.srv.write_verf,
    })
}
