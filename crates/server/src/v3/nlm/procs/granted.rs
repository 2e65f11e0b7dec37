//! NLMPROC4_GRANTED (XNFS ch. 10 NLM_GRANTED): a server telling a client
//! that a blocked lock was granted. This server is no client and waits
//! for no lock: NLM4_DENIED, which tells the caller to release it.

use std::sync::Arc;

use proto::nlm::*;

use crate::v3::nlm::{Nlm, NlmCall};

pub async fn run(_nlm: &Arc<Nlm>, _c: &NlmCall, a: Nlm4TestArgs) -> Nlm4Res {
    Nlm4Res {
        cookie: a.cookie,
        stat: Nlm4Stats::Denied,
    }
}
