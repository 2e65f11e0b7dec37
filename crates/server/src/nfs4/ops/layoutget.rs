//! LAYOUTGET (RFC 8881 §18.43): a flexible-file layout (RFC 8435 §5.1)
//! of the current file, READ or RW, over its data files on the export's
//! data servers; the first from an open, lock or delegation stateid, the
//! next ones under the layout stateid it returns (§12.5.3).

use proto::nfs4::*;

use crate::nfs4::check::regular;
use crate::nfs4::compound::context::Compound;
use crate::nfs4::pnfs::{ff_layout, segment_range, segment_servers};

pub async fn run(cx: &mut Compound, args: LayoutGet4Args) -> LayoutGet4Res {
    match layoutget(cx, &args).await {
        Ok(ok) => LayoutGet4Res::Ok(ok),
        Err(NfsStat4::Nfs4errLayouttrylater) => LayoutGet4Res::TryLater(false),
        Err(e) => LayoutGet4Res::Err(e),
    }
}

async fn layoutget(cx: &mut Compound, args: &LayoutGet4Args) -> Result<LayoutGet4ResOk, NfsStat4> {
    let fh = cx.cfh()?.clone();
    if args.layout_type != LAYOUT4_FLEX_FILES {
        return Err(NfsStat4::Nfs4errUnknownLayouttype);
    }
    let export = cx.export(fh.export)?.clone();
    let Some(pnfs) = export.pnfs.clone() else {
        return Err(NfsStat4::Nfs4errLayoutunavailable);
    };
    // §18.43.3: a range that ends past 2^64 - 1 (unless to the end), or
    // a minimum longer than the range, is NFS4ERR_INVAL; ANY is not a
    // mode to get.
    let past = |len: u64| len != u64::MAX && args.offset.checked_add(len).is_none();
    if args.length < args.minlength || past(args.minlength) || past(args.length) {
        return Err(NfsStat4::Nfs4errInval);
    }
    if args.iomode == LayoutIoMode4::Any {
        return Err(NfsStat4::Nfs4errBadiomode);
    }
    regular(&cx.attr_of(&fh).await?)?;
    if args.iomode == LayoutIoMode4::Rw {
        cx.check_writable(&fh)?;
    }
    let (start, end) = segment_range(&pnfs, args.offset);
    // The client's minimum must fit in the one stripe a segment covers.
    if args.minlength != 0
        && crate::pnfs::datafiles::Geometry::end_of(args.offset, args.minlength) > end
    {
        return Err(NfsStat4::Nfs4errLayoutunavailable);
    }
    let servers = segment_servers(&pnfs, &fh.handle.0, args.offset);
    let h = fh.handle.0.clone();
    let ds_err = |e: crate::pnfs::dataserver::DsError| {
        tracing::debug!("LAYOUTGET: data server: {e}");
        NfsStat4::Nfs4errLayouttrylater
    };
    let gen = pnfs.gen(&h).await.map_err(ds_err)?;
    let mut fhs = Vec::with_capacity(servers.len());
    for &i in &servers {
        if let Some(dfh) = pnfs.fh_on(&h, i, true).await.map_err(ds_err)? {
            fhs.push((i, dfh.data));
        }
    }
    if args.iomode == LayoutIoMode4::Rw {
        // A mirror left out (its server down) misses these writes.
        for i in pnfs
            .geometry
            .servers_of(pnfs.base(&h), pnfs.geometry.stripe(args.offset))
        {
            if !servers.contains(&i) {
                pnfs.note_stale(i, &h).await;
            }
        }
    }
    let content = ff_layout(&pnfs, &fhs, args.iomode, gen).to_content();
    // stateid, one layout4 (offset, length, iomode, type, body).
    let size = 4 + 16 + 4 + 8 + 8 + 4 + 4 + 4 + content.body.len() + 8;
    if size > args.maxcount as usize {
        return Err(NfsStat4::Nfs4errToosmall);
    }
    let client = cx.clientid()?;
    let sid = cx.resolve_stateid(&args.stateid)?;
    let stateid =
        cx.srv
            .state()
            .layout_get(client, &sid, &fh.key(), &fh.wire, args.iomode, start, end)?;
    cx.cur_stateid = Some(stateid);
    Ok(LayoutGet4ResOk {
        return_on_close: false,
        stateid,
        layout: vec![Layout4 {
            offset: start,
            length: if end == u64::MAX {
                u64::MAX
            } else {
                end - start
            },
            iomode: args.iomode,
            content,
        }],
    })
}
