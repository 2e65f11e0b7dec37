//! READ (RFC 8881 §18.22).

use proto::nfs4::*;

use crate::handoff::SEND_FROM_FILE_MIN;
use crate::nfs4::check::regular;
use crate::nfs4::compound::context::Compound;
use crate::nfs4::deleg;

pub async fn run(cx: &mut Compound, args: Read4Args) -> Read4Res {
    read(cx, args).await.into()
}

async fn read(cx: &mut Compound, args: Read4Args) -> Result<Read4ResOk, NfsStat4> {
    let fh = cx.cfh()?.clone();
    let special = cx.check_io(&args.stateid, OPEN4_SHARE_ACCESS_READ)?;
    let count = args.count.min(cx.srv.cfg.max_io);
    let offset = args.offset;
    // Another client's write delegation of the file is recalled (§10.4).
    deleg::settle_io(cx, &fh.key(), &args.stateid, true).await?;
    // Data already in memory is read here, without a thread hand-off; a
    // special stateid's READ checks the object's type first (below). A
    // large read whose reply is not kept in the slot's cache is left in
    // the page cache, for the connection to send from there.
    if !special {
        let cached = cx.slot.as_ref().is_none_or(|s| s.cachethis);
        // krb5i and krb5p replies are checksummed or encrypted whole, in
        // memory.
        if count as usize >= SEND_FROM_FILE_MIN && !cached && !cx.auth.wraps_body() {
            let slice = cx.vfs_nowait(fh.export, |v, c| {
                v.read_slice_nowait(c, &fh.handle, offset, count, SEND_FROM_FILE_MIN)
            });
            if let Some(r) = slice {
                let (slice, eof) = r?;
                return Ok(Read4ResOk {
                    eof,
                    data: xdr::Payload::file(slice),
                });
            }
        }
        let fast = cx.vfs_nowait(fh.export, |v, c| {
            v.read_nowait(c, &fh.handle, offset, count)
        });
        if let Some(r) = fast {
            let (data, eof) = r?;
            return Ok(Read4ResOk {
                eof,
                data: data.into(),
            });
        }
    }
    let handle = fh.handle.clone();
    let r = cx
        .vfs(fh.export, move |v, c| {
            if special {
                if let Err(s) = regular(&v.getattr(&handle)?) {
                    return Ok(Err(s));
                }
            }
            v.read(c, &handle, offset, count).map(Ok)
        })
        .await??;
    let (data, eof) = r;
    Ok(Read4ResOk {
        eof,
        data: data.into(),
    })
}
