//! CLOSE (RFC 8881 §18.2).

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound, args: Close4Args) -> Close4Res {
    let r = close(cx, args);
    // A removed file kept for its opens goes with the last of them.
    crate::conflicts::unlinked::sweep(&cx.srv).await;
    r.into()
}

fn close(cx: &mut Compound, args: Close4Args) -> Result<StateId4, NfsStat4> {
    let key = cx.cfh()?.key();
    let client = cx.clientid()?;
    let sid = cx.resolve_stateid(&args.open_stateid)?;
    cx.srv.state().close(client, &sid, &key)?;
    // §18.2.4: the stateid returned is the invalid special stateid.
    cx.cur_stateid = Some(StateId4::INVALID);
    Ok(StateId4::INVALID)
}
