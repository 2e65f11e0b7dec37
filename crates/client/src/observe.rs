//! Per-call observation for callers that keep their own accounting (the
//! benchmark counts every call by phase). An [`Observer`] is called once
//! per call, on the task that made it, after the reply was decoded or the
//! call failed.

use std::sync::Arc;
use std::time::Duration;

/// One RPC call as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallInfo {
    /// RPC program and procedure.
    pub program: u32,
    pub proc_: u32,
    /// Encoded argument bytes (RPC call header and record marker not
    /// included).
    pub args_len: u64,
    /// Encoded result bytes after the RPC reply header (0 if no reply).
    pub results_len: u64,
    /// From handing the call to the connection to having its reply.
    pub rtt: Duration,
    /// The call got a reply whose status was success.
    pub ok: bool,
}

/// Called for every call a client makes.
pub type Observer = Arc<dyn Fn(&CallInfo) + Send + Sync>;
