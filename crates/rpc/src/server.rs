//! Accepting connections and routing calls to programs (RFC 5531 §9).

use std::collections::HashMap;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::{info, warn};

use crate::conn::{start, Call, ConnConfig, Connection, Reply, ReplyFuture, Service};
use crate::msg::ReplyError;

/// One registered program: its version range and the service behind it.
struct Program {
    low: u32,
    high: u32,
    service: Arc<dyn Service>,
}

/// Routes calls by program number; answers PROG_UNAVAIL, PROG_MISMATCH and
/// the NULL procedure (procedure 0 of every version) itself.
#[derive(Default)]
pub struct Programs {
    programs: HashMap<u32, Program>,
}

impl Programs {
    pub fn new() -> Self {
        Self::default()
    }

    /// Serves versions `low..=high` of program `prog` with `service`.
    pub fn add(mut self, prog: u32, low: u32, high: u32, service: Arc<dyn Service>) -> Self {
        self.programs.insert(prog, Program { low, high, service });
        self
    }
}

impl Service for Programs {
    fn call(&self, call: Call) -> ReplyFuture {
        let Some(p) = self.programs.get(&call.prog) else {
            return Box::pin(async { Reply::Error(ReplyError::ProgUnavail) });
        };
        if call.vers < p.low || call.vers > p.high {
            let (low, high) = (p.low, p.high);
            return Box::pin(async move { Reply::Error(ReplyError::ProgMismatch { low, high }) });
        }
        if call.proc_ == 0 {
            return Box::pin(async { Reply::Success(Vec::new()) });
        }
        p.service.call(call)
    }

    fn disconnected(&self, conn: &Arc<Connection>) {
        for p in self.programs.values() {
            p.service.disconnected(conn);
        }
    }
}

/// Accepts connections until `shutdown` turns true.
pub async fn serve(
    listener: TcpListener,
    service: Arc<dyn Service>,
    cfg: ConnConfig,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.wait_for(|s| *s) => break,
        };
        match accepted {
            Ok((stream, peer)) => {
                if let Err(e) = start(stream, Some(service.clone()), cfg.clone()) {
                    warn!(%peer, "could not start connection: {e}");
                }
            }
            Err(e) => {
                warn!("accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
    info!("listener stopped");
}
