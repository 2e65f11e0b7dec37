//! NLMPROC4_FREE_ALL (XNFS ch. 10 NLM_FREE_ALL): a client that runs no
//! status monitor restarted: every lock, queued request and share of its
//! host (by this address and name) goes, and its status monitor record.

use std::sync::Arc;

use proto::nlm::*;

use crate::v3::nlm::{Nlm, NlmCall};

pub async fn run(nlm: &Arc<Nlm>, c: &NlmCall, a: Nlm4Notify) {
    nlm.free_hosts(c.peer.ip(), &a.name).await;
}
