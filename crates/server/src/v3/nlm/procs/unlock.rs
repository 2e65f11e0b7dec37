//! NLMPROC4_UNLOCK (XNFS ch. 10 NLM_UNLOCK): releases a range of the
//! owner's locks (granting what waited on it, NFSv4 waiters told with
//! CB_NOTIFY_LOCK, NLM ones granted). Unlocking what is not held is no
//! error.

use std::sync::Arc;

use proto::nlm::*;

use crate::v3::nlm::{owner, range, Nlm, NlmCall};

pub async fn run(nlm: &Arc<Nlm>, c: &NlmCall, a: Nlm4UnlockArgs) -> Nlm4Res {
    Nlm4Res {
        stat: unlock(nlm, c, &a).err().unwrap_or(Nlm4Stats::Granted),
        cookie: a.cookie,
    }
}

fn unlock(nlm: &Nlm, c: &NlmCall, a: &Nlm4UnlockArgs) -> Result<(), Nlm4Stats> {
    let (_, file) = nlm.file(c, &a.alock.fh)?;
    let (start, end) = range(a.alock.l_offset, a.alock.l_len)?;
    let Some(host) = nlm.known_host(c, &a.alock.caller_name) else {
        return Ok(());
    };
    let me = owner(&host, a.alock.svid, &a.alock.oh);
    // NFSv4 clients waiting for the range are told (CB_NOTIFY_LOCK).
    nlm.srv
        .notify_locks(nlm.srv.state().nlm_unlock(&me, &file, start, end));
    Ok(())
}
