//! The NLM version 4 procedures (RFC 1813 §6.2), one per module, and
//! their dispatch, `_MSG` and `_RES` forms included.

pub mod cancel;
pub mod free_all;
pub mod granted;
pub mod lock;
pub mod nm_lock;
pub mod share;
pub mod test;
pub mod unlock;
pub mod unshare;

use std::sync::Arc;

use proto::nlm::*;
use rpc::{Call, Reply, ReplyError, ReplyFuture, Service};

use super::{args, Nlm, NlmCall, NlmService};

/// The NLM program: each call runs with its caller.
impl Service for NlmService {
    fn call(&self, mut call: Call) -> ReplyFuture {
        let nlm = self.0.clone();
        Box::pin(async move {
            let c = NlmCall {
                auth: call.auth.clone(),
                peer: call.conn.peer(),
                local: call.conn.local(),
            };
            run(&nlm, &c, &mut call).await
        })
    }
}

/// Runs procedure `call.proc_` (NULL is answered by the RPC layer).
pub async fn run(nlm: &Arc<Nlm>, c: &NlmCall, call: &mut Call) -> Reply {
    // A synchronous procedure: its result is the reply.
    macro_rules! sync {
        ($module:ident) => {
            match args(call) {
                Ok(a) => Reply::success(&$module::run(nlm, c, a).await),
                Err(r) => r,
            }
        };
    }
    // A `_MSG` procedure: no reply; the result goes back as `_RES`
    // (the procedure five numbers on).
    macro_rules! msg {
        ($module:ident) => {
            match args(call) {
                Ok(a) => {
                    let res = $module::run(nlm, c, a).await;
                    nlm.send_res(c, call.proc_ + 5, res);
                    Reply::Success(Vec::new())
                }
                Err(r) => r,
            }
        };
    }
    match call.proc_ {
        NLMPROC4_TEST => sync!(test),
        NLMPROC4_LOCK => sync!(lock),
        NLMPROC4_CANCEL => sync!(cancel),
        NLMPROC4_UNLOCK => sync!(unlock),
        NLMPROC4_GRANTED => sync!(granted),
        NLMPROC4_TEST_MSG => msg!(test),
        NLMPROC4_LOCK_MSG => msg!(lock),
        NLMPROC4_CANCEL_MSG => msg!(cancel),
        NLMPROC4_UNLOCK_MSG => msg!(unlock),
        NLMPROC4_GRANTED_MSG => msg!(granted),
        // Results of calls this server never makes as messages: taken.
        NLMPROC4_TEST_RES..=NLMPROC4_GRANTED_RES => Reply::Success(Vec::new()),
        NLMPROC4_SHARE => sync!(share),
        NLMPROC4_UNSHARE => sync!(unshare),
        NLMPROC4_NM_LOCK => sync!(nm_lock),
        NLMPROC4_FREE_ALL => match args(call) {
            Ok(a) => {
                free_all::run(nlm, c, a).await;
                Reply::Success(Vec::new())
            }
            Err(r) => r,
        },
        _ => Reply::Error(ReplyError::ProcUnavail),
    }
}
