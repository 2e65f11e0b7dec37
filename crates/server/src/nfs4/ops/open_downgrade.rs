//! OPEN_DOWNGRADE (RFC 8881 §18.18).

use proto::nfs4::*;

use crate::nfs4::check::share_bits;
use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound, args: OpenDowngrade4Args) -> OpenDowngrade4Res {
    downgrade(cx, args).into()
}

fn downgrade(cx: &mut Compound, args: OpenDowngrade4Args) -> Result<OpenDowngrade4ResOk, NfsStat4> {
    let key = cx.cfh()?.key();
    let client = cx.clientid()?;
    let sid = cx.resolve_stateid(&args.open_stateid)?;
    let (access, deny) = share_bits(args.share_access, args.share_deny, cx.minorversion)?;
    let open_stateid = cx.srv.state().downgrade(client, &sid, &key, access, deny)?;
    cx.cur_stateid = Some(open_stateid);
    Ok(OpenDowngrade4ResOk { open_stateid })
}
