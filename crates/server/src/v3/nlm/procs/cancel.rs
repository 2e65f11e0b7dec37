//! NLMPROC4_CANCEL (XNFS ch. 10 NLM_CANCEL): the client no longer wants a
//! blocked LOCK. Its queued request is forgotten; if the server had
//! already granted it and is still telling the host, the lock is released.

use std::sync::Arc;

use proto::nlm::*;

use crate::v3::nlm::{owner, Nlm, NlmCall};

pub async fn run(nlm: &Arc<Nlm>, c: &NlmCall, a: Nlm4CancArgs) -> Nlm4Res {
    Nlm4Res {
        stat: cancel(nlm, c, &a).err().unwrap_or(Nlm4Stats::Granted),
        cookie: a.cookie,
    }
}

fn cancel(nlm: &Nlm, c: &NlmCall, a: &Nlm4CancArgs) -> Result<(), Nlm4Stats> {
    let (_, file) = nlm.file(c, &a.alock.fh)?;
    // A host never seen has nothing queued.
    let Some(host) = nlm.known_host(c, &a.alock.caller_name) else {
        return Ok(());
    };
    let me = owner(&host, a.alock.svid, &a.alock.oh);
    let st = nlm.srv.state();
    let (queued, notes) = st.nlm_cancel(&me, &file);
    nlm.srv.notify_locks(notes);
    if let Some((start, end)) = nlm.take_telling(&me, &file) {
        nlm.srv.notify_locks(st.nlm_unlock(&me, &file, start, end));
    }
    if queued {
        nlm.forget_blocked(&me, &file);
    }
    Ok(())
}
