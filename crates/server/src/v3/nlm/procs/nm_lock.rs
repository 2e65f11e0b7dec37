//! NLMPROC4_NM_LOCK (XNFS ch. 10 NLM_NM_LOCK): LOCK for a client that
//! runs no status monitor: never blocks, and its host is not recorded
//! (such a client frees its locks with FREE_ALL when it restarts).

use std::sync::Arc;

use proto::nlm::*;

use crate::v3::nlm::{Nlm, NlmCall};

pub async fn run(nlm: &Arc<Nlm>, c: &NlmCall, a: Nlm4LockArgs) -> Nlm4Res {
    let stat = super::lock::lock(nlm, c, &a, false)
        .await
        .err()
        .unwrap_or(Nlm4Stats::Granted);
    Nlm4Res {
        stat: if stat == Nlm4Stats::Blocked {
            Nlm4Stats::Denied
        } else {
            stat
        },
        cookie: a.cookie,
    }
}
