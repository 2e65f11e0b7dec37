//! LOCKU (RFC 8881 §18.12).

use proto::nfs4::*;

use crate::locks;
use crate::nfs4::compound::Compound;

pub async fn run(cx: &mut Compound, args: LockU4Args) -> LockU4Res {
    locku(cx, args).into()
}

fn locku(cx: &mut Compound, args: LockU4Args) -> Result<StateId4, NfsStat4> {
    let key = cx.cfh()?.key();
    let client = cx.clientid()?;
    let sid = cx.resolve_stateid(&args.lock_stateid)?;
    let (start, end) = locks::range(args.offset, args.length).ok_or(NfsStat4::Nfs4errInval)?;
    let sid = {
        let mut t = cx.srv.state();
        if t.check_stateid(&sid, &key)?.client != client {
            return Err(NfsStat4::Nfs4errBadStateid);
        }
        t.unlock(&sid, &key, start, end)?
    };
    cx.cur_stateid = Some(sid);
    Ok(sid)
}
