//! NLMPROC4_SHARE (XNFS ch. 10 NLM_SHARE): a DOS share reservation (what
//! the sharer does, what it denies others), checked against NFSv4 opens'
//! share reservations and other hosts' shares; NFSv4 OPENs, and NFSv3
//! READ and WRITE, then respect it.

use std::sync::Arc;

use proto::nfs4::{OPEN4_SHARE_ACCESS_READ, OPEN4_SHARE_ACCESS_WRITE};
use proto::nlm::*;

use crate::v3::nlm::{share_owner, Nlm, NlmCall};
use state::nlm::NlmRefusal;

pub async fn run(nlm: &Arc<Nlm>, c: &NlmCall, a: Nlm4ShareArgs) -> Nlm4ShareRes {
    Nlm4ShareRes {
        stat: share(nlm, c, &a).await.err().unwrap_or(Nlm4Stats::Granted),
        cookie: a.cookie,
        sequence: 0,
    }
}

/// NFSv4's share bits (read 1, write 2) of an NLM access or deny mode.
pub fn bits(read: bool, write: bool) -> u32 {
    (if read { OPEN4_SHARE_ACCESS_READ } else { 0 })
        | (if write { OPEN4_SHARE_ACCESS_WRITE } else { 0 })
}

async fn share(nlm: &Nlm, c: &NlmCall, a: &Nlm4ShareArgs) -> Result<(), Nlm4Stats> {
    let s = &a.share;
    let (obj, file) = nlm.file(c, &s.fh)?;
    let access = match s.access {
        Fsh4Access::None => 0,
        Fsh4Access::Read => bits(true, false),
        Fsh4Access::Write => bits(false, true),
        Fsh4Access::ReadWrite => bits(true, true),
    };
    let deny = match s.mode {
        Fsh4Mode::DenyNone => 0,
        Fsh4Mode::DenyRead => bits(true, false),
        Fsh4Mode::DenyWrite => bits(false, true),
        Fsh4Mode::DenyReadWrite => bits(true, true),
    };
    if access & OPEN4_SHARE_ACCESS_WRITE != 0 && nlm.ctx(c).check_writable(obj.export).is_err() {
        return Err(Nlm4Stats::Rofs);
    }
    let host = nlm.host(c, &s.caller_name)?;
    let me = share_owner(&host, &s.oh);
    if !nlm.settle(c, &obj).await {
        return Err(Nlm4Stats::Denied);
    }
    if !nlm.monitor(&host).await {
        return Err(Nlm4Stats::DeniedNolocks);
    }
    match nlm
        .srv
        .state()
        .nlm_share(&me, &file, access, deny, a.reclaim)
    {
        Ok(true) => Ok(()),
        Ok(false) => Err(Nlm4Stats::Denied),
        Err(NlmRefusal::Grace) => Err(Nlm4Stats::DeniedGracePeriod),
        Err(_) => Err(Nlm4Stats::DeniedNolocks),
    }
}
