//! NLMPROC4_TEST (XNFS ch. 10 NLM_TEST): would this lock be granted? If
//! not, who holds the lock in the way (an NLM or an NFSv4 owner). NFSv4
//! delegations of the file are recalled first (their holders take locks
//! in their caches); one not returned in time is answered
//! NLM4_DENIED_GRACE_PERIOD, which the client retries.

use std::sync::Arc;

use proto::nlm::*;

use crate::v3::nlm::{holder, kind, owner, range, Nlm, NlmCall};

pub async fn run(nlm: &Arc<Nlm>, c: &NlmCall, a: Nlm4TestArgs) -> Nlm4TestRes {
    Nlm4TestRes {
        stat: test(nlm, c, &a).await.unwrap_or_else(Nlm4TestRply::Other),
        cookie: a.cookie,
    }
}

async fn test(nlm: &Nlm, c: &NlmCall, a: &Nlm4TestArgs) -> Result<Nlm4TestRply, Nlm4Stats> {
    let (obj, file) = nlm.file(c, &a.alock.fh)?;
    let (start, end) = range(a.alock.l_offset, a.alock.l_len)?;
    let st = nlm.srv.state();
    if st.in_grace() {
        return Err(Nlm4Stats::DeniedGracePeriod);
    }
    let host = nlm.host(c, &a.alock.caller_name)?;
    let me = owner(&host, a.alock.svid, &a.alock.oh);
    if !nlm.settle(c, &obj).await {
        return Err(Nlm4Stats::DeniedGracePeriod);
    }
    Ok(
        match st.test_lock(&me, &file, start, end, kind(a.exclusive)) {
            Some(h) => Nlm4TestRply::Denied(holder(&h)),
            None => Nlm4TestRply::Other(Nlm4Stats::Granted),
        },
    )
}
