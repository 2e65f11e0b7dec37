//! DELEGRETURN (RFC 8881 §18.6): the client gives back a delegation of
//! the current filehandle; requests waiting for its recall go on.

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound, args: DelegReturn4Args) -> DelegReturn4Res {
    let r = delegreturn(cx, &args);
    // A removed file kept for its holders goes with the last of its state.
    crate::conflicts::unlinked::sweep(&cx.srv).await;
    r.into()
}

fn delegreturn(cx: &mut Compound, args: &DelegReturn4Args) -> Result<(), NfsStat4> {
    let fh = cx.cfh()?.clone();
    let client = cx.clientid()?;
    let sid = cx.resolve_stateid(&args.deleg_stateid)?;
    cx.srv.state().delegreturn(client, &sid, &fh.key())
}
