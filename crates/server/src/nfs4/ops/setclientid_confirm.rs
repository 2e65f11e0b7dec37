//! SETCLIENTID_CONFIRM (RFC 7530 §16.34): confirms an NFSv4.0 client's
//! record or its new callback. A new record goes to stable storage before
//! the reply (the client may then hold state it can reclaim after a
//! restart, §9.6.3); a new callback gets a connection of its own, checked
//! with CB_NULL before any delegation relies on it (`nfs4::callback`).

use proto::nfs4::*;

use crate::nfs4::callback;
use crate::nfs4::compound::context::Compound;
use crate::nfs4::session_io::SessionIo;

pub async fn run(cx: &mut Compound, args: SetClientIdConfirm4Args) -> SetClientIdConfirm4Res {
    confirm(cx, args).await.into()
}

async fn confirm(cx: &mut Compound, args: SetClientIdConfirm4Args) -> Result<(), NfsStat4> {
    let id = args.clientid;
    let done = cx.srv.state().setclientid_confirm(
        id,
        &args.setclientid_confirm,
        &cx.principal(),
        SessionIo::boxed(),
    )?;
    if let Some(owner) = done.record {
        cx.record_client(id, owner).await?;
        if cx.srv.state().recorded40(id).is_err() {
            // Purged while its record was written: the record goes too.
            cx.srv.state().records().dead([id]);
            return Err(NfsStat4::Nfs4errStaleClientid);
        }
    }
    if let Some(cb) = done.callback {
        callback::connect40(cx.srv.clone(), done.session, cb);
    }
    Ok(())
}
