//! NLMPROC4_UNSHARE (XNFS ch. 10 NLM_UNSHARE): drops the owner's share
//! reservation on the file.

use std::sync::Arc;

use proto::nlm::*;

use crate::v3::nlm::{share_owner, Nlm, NlmCall};

pub async fn run(nlm: &Arc<Nlm>, c: &NlmCall, a: Nlm4ShareArgs) -> Nlm4ShareRes {
    let stat = match nlm.file(c, &a.share.fh) {
        Ok((_, file)) => {
            if let Some(host) = nlm.known_host(c, &a.share.caller_name) {
                nlm.srv
                    .state()
                    .nlm_unshare(&share_owner(&host, &a.share.oh), &file);
            }
            Nlm4Stats::Granted
        }
        Err(s) => s,
    };
    Nlm4ShareRes {
        cookie: a.cookie,
        stat,
        sequence: 0,
    }
}
