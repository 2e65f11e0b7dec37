//! What `ferrite stat` shows of each NFSv4 client: read from the tables
//! under their lock, one pass, nothing kept.

use std::net::SocketAddr;
use std::time::Duration;

use super::stateid::StateKind;
use super::State;

/// One client, as the statistics show it.
#[derive(Debug, Clone)]
pub struct ClientSummary {
    pub id: u64,
    /// The owner string the client chose (lossy UTF-8).
    pub owner: String,
    pub address: Option<SocketAddr>,
    pub minorversion: u32,
    pub confirmed: bool,
    pub sessions: usize,
    pub opens: usize,
    pub locks: usize,
    pub delegations: usize,
    /// Layout stateids (one per file it holds a layout of).
    pub layouts: usize,
    /// Since its lease was last renewed.
    pub since_renewal: Duration,
}

impl State {
    /// Notes where client `id` called EXCHANGE_ID from, and with which
    /// minor version.
    pub fn note_client(&self, id: u64, address: SocketAddr, minorversion: u32) {
        let mut t = self.tables();
        if let Some(c) = t.clients.get_mut(&id) {
            c.address = Some(address);
            c.minorversion = minorversion;
        }
    }

    /// Every client record (NLM hosts, which hold no record, are not).
    pub fn client_summaries(&self) -> Vec<ClientSummary> {
        let now = self.clock.now();
        let t = self.tables();
        let mut out: Vec<ClientSummary> = t
            .clients
            .values()
            .map(|c| {
                let (mut opens, mut locks, mut delegations, mut layouts) = (0, 0, 0, 0);
                for e in c.states.values() {
                    match e.kind {
                        StateKind::Open { .. } => opens += 1,
                        StateKind::Lock { .. } => locks += 1,
                        StateKind::Deleg { revoked, .. } => delegations += usize::from(!revoked),
                        StateKind::Layout(_) => layouts += 1,
                    }
                }
                ClientSummary {
                    id: c.id,
                    owner: String::from_utf8_lossy(&c.owner).into_owned(),
                    address: c.address,
                    minorversion: c.minorversion,
                    confirmed: c.confirmed,
                    sessions: c.sessions.len(),
                    opens,
                    locks,
                    delegations,
                    layouts,
                    since_renewal: now.saturating_sub(c.lease.last()),
                }
            })
            .collect();
        out.sort_by_key(|c| c.id);
        out
    }
}
