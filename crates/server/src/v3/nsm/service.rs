//! The status monitor program's RPC face (100024 version 1): SM_STAT
//! answers the state number, SM_NOTIFY from a client that restarted frees
//! its NLM locks, and the calls meant for a host's own lock manager are
//! refused (see the module above).

use std::sync::Arc;

use proto::nsm::*;
use rpc::{Call, Reply, ReplyError, ReplyFuture, Service};
use tracing::{info, warn};
use xdr::Unpack;

use super::*;
use crate::v3::nlm::Nlm;

/// The status monitor program's service (100024 version 1).
pub struct NsmService(pub Arc<Nlm>);

impl Service for NsmService {
    fn call(&self, mut call: Call) -> ReplyFuture {
        let nlm = self.0.clone();
        Box::pin(async move {
            let state = nlm.nsm.state();
            let fail = SmStatRes {
                res_stat: SmRes::StatFail,
                state,
            };
            macro_rules! args {
                ($t:ty) => {
                    match <$t>::unpack(&mut call.args) {
                        Ok(a) => a,
                        Err(e) => {
                            if let Some(n) = NSM_LOG.allow() {
                                warn!(peer = %call.conn.peer(), "undecodable NSM arguments: {e} ({n} more not logged)");
                            }
                            return Reply::Error(ReplyError::GarbageArgs);
                        }
                    }
                };
            }
            match call.proc_ {
                SM_STAT => {
                    let _ = args!(SmName);
                    Reply::success(&SmStatRes {
                        res_stat: SmRes::StatSucc,
                        state,
                    })
                }
                SM_MON => {
                    let _ = args!(Mon);
                    Reply::success(&fail)
                }
                SM_UNMON => {
                    let _ = args!(MonId);
                    Reply::success(&SmStat { state })
                }
                SM_UNMON_ALL => {
                    let _ = args!(MyId);
                    Reply::success(&SmStat { state })
                }
                SM_SIMU_CRASH => Reply::Success(Vec::new()),
                SM_NOTIFY => {
                    let a = args!(StatChge);
                    let n = nlm.free_hosts(call.conn.peer().ip(), &a.mon_name).await;
                    if n == 0 {
                        info!(peer = %call.conn.peer(), name = %String::from_utf8_lossy(&a.mon_name), "NSM: SM_NOTIFY from a host holding no locks");
                    }
                    Reply::Success(Vec::new())
                }
                _ => Reply::Error(ReplyError::ProcUnavail),
            }
        })
    }
}
