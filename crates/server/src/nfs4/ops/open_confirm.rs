//! OPEN_CONFIRM (RFC 7530 §16.18): confirms an NFSv4.0 open owner's first
//! OPEN; the open stateid's sequence moves on. The owner's sequence id is
//! checked before (`nfs4::compound::v40`).

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound, args: OpenConfirm4Args) -> OpenConfirm4Res {
    confirm(cx, args).into()
}

fn confirm(cx: &mut Compound, args: OpenConfirm4Args) -> Result<OpenConfirm4ResOk, NfsStat4> {
    let key = cx.cfh()?.key();
    let client = cx.clientid()?;
    let sid = cx.resolve_stateid(&args.open_stateid)?;
    let open_stateid = cx.srv.state().open_confirm(client, &sid, &key)?;
    cx.cur_stateid = Some(open_stateid);
    Ok(OpenConfirm4ResOk { open_stateid })
}
