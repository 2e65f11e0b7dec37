//! COMMIT (RFC 8881 §18.3).

use proto::nfs4::*;

use crate::nfs4::check::regular;
use crate::nfs4::compound::Compound;

pub async fn run(cx: &mut Compound, args: Commit4Args) -> Commit4Res {
    commit(cx, args).await.into()
}

async fn commit(cx: &mut Compound, args: Commit4Args) -> Result<Commit4ResOk, NfsStat4> {
    let fh = cx.cfh()?.clone();
    // §18.3.3: offset + count past 2^64 - 1 is NFS4ERR_INVAL.
    if args.offset.checked_add(args.count as u64).is_none() {
        return Err(NfsStat4::Nfs4errInval);
    }
    let handle = fh.handle.clone();
    cx.vfs(fh.export, move |v, _| {
        if let Err(s) = regular(&v.getattr(&handle)?) {
            return Ok(Err(s));
        }
        v.commit(&handle).map(Ok)
    })
    .await??;
    Ok(Commit4ResOk {
        writeverf: cx.srv.write_verf,
    })
}
