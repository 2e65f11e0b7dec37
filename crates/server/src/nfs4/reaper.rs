//! The reaper (RFC 8881 §8.3, §8.4.2.1, §20.6): on each housekeeping
//! tick (once a second, [`crate::run`]) it ends the grace period when
//! due, sweeps persistent sessions past their time, forgets clients
//! whose lease long expired, asks holders to give delegations and layouts
//! back when they are scarce (CB_RECALL_ANY), removes purged clients'
//! records, and logs the reply cache's memory.

use std::sync::{Arc, Weak};

use super::callback;
use crate::instance::Server;

/// The reaper of one server.
pub struct Reaper {
    srv: Weak<Server>,
    ticks: u64,
    was_pressed: bool,
}

impl Reaper {
    pub fn new(srv: &Arc<Server>) -> Reaper {
        Reaper {
            srv: Arc::downgrade(srv),
            ticks: 0,
            was_pressed: false,
        }
    }

    /// One tick; false once the server is gone.
    pub async fn step(&mut self) -> bool {
        let Some(srv) = self.srv.upgrade() else {
            return false;
        };
        srv.end_grace_if_due().await;
        let up = srv.now().saturating_sub(srv.started);
        if srv.sessions.enabled() && srv.sessions.sweep_due(up) {
            let s = srv.clone();
            let _ = crate::handoff::off_thread(move || s.sessions.sweep(up)).await;
        }
        let n = srv.state().reap();
        // Removed files kept for clients that expired go.
        crate::conflicts::unlinked::sweep(&srv).await;
        // Delegations scarce: their holders are asked to give some back
        // (CB_RECALL_ANY).
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
        // The reply cache's memory, reported when it crosses its budget
        // (and once a minute at debug level).
        let used = srv.drc.used();
        let pressed = srv.drc.under_pressure();
        if pressed != self.was_pressed {
            tracing::info!(
                used,
                budget = srv.drc.budget,
                "reply cache {} its budget: asking clients for {} slots",
                if pressed { "over" } else { "back under" },
                if pressed { "fewer" } else { "all their" }
            );
            self.was_pressed = pressed;
        }
        self.ticks += 1;
        if self.ticks.is_multiple_of(60) && used > 0 {
            tracing::debug!(used, budget = srv.drc.budget, sessions, "reply cache");
        }
        true
    }
}
