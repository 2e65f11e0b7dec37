//! The reaper (RFC 8881 §8.3, §8.4.2.1, §20.6): once a second it ends the
//! grace period when due, sweeps persistent sessions past their time,
//! forgets clients whose lease long expired, asks holders to give
//! delegations back when they are scarce (CB_RECALL_ANY), removes purged
//! clients' records, and logs the reply cache's memory.

use std::sync::Arc;
use std::time::Duration;

use super::callback;
use crate::instance::Server;

/// Periodically forgets clients whose lease has long expired.
pub fn spawn(srv: &Arc<Server>) {
    let weak = Arc::downgrade(srv);
    tokio::spawn(async move {
        let mut ticks = 0u64;
        let mut was_pressed = false;
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let Some(srv) = weak.upgrade() else { break };
            srv.end_grace_if_due().await;
            if srv.sessions.enabled() {
                let s = srv.clone();
                let up = srv.now().saturating_sub(srv.started);
                let _ = crate::handoff::off_thread(move || s.sessions.sweep(up)).await;
            }
            let n = srv.state().reap();
            // Delegations scarce: their holders are asked to give some
            // back (CB_RECALL_ANY).
            for (session, keep) in srv.state().recall_any() {
                callback::recall_any(session, keep);
            }
            // Layouts many: likewise (RFC 8435 §13.1).
            for (session, keep) in srv.state().layout_recall_any() {
                callback::recall_any_layouts(session, keep);
            }
            srv.settle_records().await;
            let sessions = srv.state().session_count();
            if n > 0 {
                tracing::info!(clients = n, "expired clients removed");
            }
            // The reply cache's memory, reported when it crosses its
            // budget (and once a minute at debug level).
            let used = srv.drc.used();
            let pressed = srv.drc.under_pressure();
            if pressed != was_pressed {
                tracing::info!(
                    used,
                    budget = srv.drc.budget,
                    "reply cache {} its budget: asking clients for {} slots",
                    if pressed { "over" } else { "back under" },
                    if pressed { "fewer" } else { "all their" }
                );
                was_pressed = pressed;
            }
            ticks += 1;
            if ticks.is_multiple_of(60) && used > 0 {
                tracing::debug!(used, budget = srv.drc.budget, sessions, "reply cache");
            }
        }
    });
}
