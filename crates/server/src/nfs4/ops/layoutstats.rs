//! LAYOUTSTATS (RFC 7862 §15.7, RFC 8435 §11): a client's I/O figures
//! for one data server under a layout of the current file, its body an
//! `ff_layoutupdate4`. Checked and counted; a malformed body is
//! NFS4ERR_BADXDR.

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound, args: LayoutStats4Args) -> LayoutStats4Res {
    layoutstats(cx, args).into()
}

fn layoutstats(cx: &mut Compound, args: LayoutStats4Args) -> Result<(), NfsStat4> {
    let fh = cx.cfh()?.clone();
    if args.layoutupdate.layout_type != LAYOUT4_FLEX_FILES {
        return Err(NfsStat4::Nfs4errUnknownLayouttype);
    }
    if args.length != u64::MAX && args.offset.checked_add(args.length).is_none() {
        return Err(NfsStat4::Nfs4errInval);
    }
    FfLayoutUpdate4::from_update(&args.layoutupdate).map_err(|_| NfsStat4::Nfs4errBadxdr)?;
    let client = cx.clientid()?;
    let sid = cx.resolve_stateid(&args.stateid)?;
    cx.srv.state().layout_held(client, &sid, &fh.key())
}
