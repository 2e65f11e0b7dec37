//! LAYOUTERROR (RFC 7862 §15.6, RFC 8435 §10): a client tells of errors
//! it met on data servers under a layout of the current file; a server
//! reported failing is probed at once and left out of new layouts while
//! it does not answer.

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;
use crate::nfs4::pnfs::report_errors;

pub async fn run(cx: &mut Compound, args: LayoutError4Args) -> LayoutError4Res {
    layouterror(cx, args).into()
}

fn layouterror(cx: &mut Compound, args: LayoutError4Args) -> Result<(), NfsStat4> {
    let fh = cx.cfh()?.clone();
    if args.length != u64::MAX && args.offset.checked_add(args.length).is_none() {
        return Err(NfsStat4::Nfs4errInval);
    }
    let client = cx.clientid()?;
    let sid = cx.resolve_stateid(&args.stateid)?;
    cx.srv.state().layout_held(client, &sid, &fh.key())?;
    if let Some(p) = cx.export(fh.export)?.pnfs.clone() {
        report_errors(&p, args.errors);
    }
    Ok(())
}
