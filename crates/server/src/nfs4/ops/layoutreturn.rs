//! LAYOUTRETURN (RFC 8881 §18.44): the client gives back layouts of a
//! range of the current file, of its file system, or all it holds; with
//! a file's return, what it saw of the data servers (RFC 8435 §9.3,
//! `ff_layoutreturn4`: I/O errors and statistics). A data server it
//! reports failing is probed at once, and left out of layouts while it
//! does not answer. Requests waiting for the return (a recall) go on.

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;
use crate::nfs4::pnfs::report_errors;
use state::layouts::range_end;

pub async fn run(cx: &mut Compound, args: LayoutReturn4Args) -> LayoutReturn4Res {
    let r = layoutreturn(cx, args).await;
    cx.srv.deleg_gone.notify_waiters();
    r.into()
}

async fn layoutreturn(
    cx: &mut Compound,
    args: LayoutReturn4Args,
) -> Result<Option<StateId4>, NfsStat4> {
    if args.layout_type != LAYOUT4_FLEX_FILES {
        return Err(NfsStat4::Nfs4errUnknownLayouttype);
    }
    let state = cx.srv.state();
    let client = cx.clientid()?;
    if args.reclaim {
        // §18.44.3: a layout held before the restart, given back in the
        // grace period; nothing of it is held now.
        return state.may_take_state(client, true).map(|()| None);
    }
    match args.layoutreturn {
        LayoutReturn4::File(f) => {
            let fh = cx.cfh()?.clone();
            if f.length != u64::MAX && f.offset.checked_add(f.length).is_none() {
                return Err(NfsStat4::Nfs4errInval);
            }
            if !f.body.is_empty() {
                let body =
                    FfLayoutReturn4::decode_body(&f.body).map_err(|_| NfsStat4::Nfs4errBadxdr)?;
                if let Some(p) = cx.export(fh.export)?.pnfs.clone() {
                    let errs = body.ioerr_report.iter().flat_map(|e| e.errors.iter());
                    report_errors(&p, errs.cloned().collect());
                }
            }
            let sid = cx.resolve_stateid(&f.stateid)?;
            let end = range_end(f.offset, f.length);
            state.layout_return_file(client, &sid, &fh.key(), args.iomode, f.offset, end)
        }
        LayoutReturn4::Fsid => {
            let fh = cx.cfh()?.clone();
            state.layout_return_bulk(client, Some(fh.export), args.iomode);
            Ok(None)
        }
        LayoutReturn4::All => {
            state.layout_return_bulk(client, None, args.iomode);
            Ok(None)
        }
    }
}
