//! COMMIT (RFC 8881 §18.3).

use proto::nfs4::*;

use crate::nfs4::check::regular;
use crate::nfs4::compound::context::Compound;
use crate::stable::durable;

pub async fn run(cx: &mut Compound, args: Commit4Args) -> Commit4Res {
    commit(cx, args).await.into()
}

async fn commit(cx: &mut Compound, args: Commit4Args) -> Result<Commit4ResOk, NfsStat4> {
    let fh = cx.cfh()?.clone();
    // §18.3.3: offset + count past 2^64 - 1 is NFS4ERR_INVAL.
    if args.offset.checked_add(args.count as u64).is_none() {
        return Err(NfsStat4::Nfs4errInval);
    }
    regular(&cx.attr_of(&fh).await?)?;
    // With the other stable requests to the file in flight: one sync
    // begun after this request arrived covers every earlier write.
    durable::make_stable(&cx.srv.stable, cx.export(fh.export)?, &fh.handle).await?;
    Ok(Commit4ResOk {
        writeverf: cx.srv.write_verf,
    })
}
