//! Limits of a connection and of a listener's connections: the
//! configuration, the budgets the connections share and the bytes each
//! call holds until its reply is written (back-pressure).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, OwnedSemaphorePermit};

use crate::admit;
use crate::record::BufferBudget;

/// Limits for a connection, and for the connections of one listener
/// ([`crate::serve`]). Every limit holds whatever the peer sends.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnConfig {
    /// Largest record accepted (RFC 5531 §11), in bytes.
    pub max_record: usize,
    /// Calls accepted and not yet answered on the wire, per connection.
    pub max_in_flight: usize,
    /// Bytes a connection may hold for its calls (the arguments of calls
    /// being processed, the replies not yet written) before it stops being
    /// read until its peer takes replies (back-pressure on that connection
    /// only).
    pub max_pending_bytes: usize,
    /// Bytes counted for a call's reply until the reply is known; bounds
    /// how many calls one connection runs at once.
    pub reply_reserve: usize,
    /// Bytes buffered for records not yet complete, in total over the
    /// connections of a listener (each connection also buffers up to
    /// [`crate::record::FREE_PER_CONN`] without counting). A connection
    /// over it waits; the read timeout still runs.
    pub max_buffered_total: usize,
    /// Connections open at once per listener; at the cap a new connection
    /// is still accepted and the one idle longest is closed in its place
    /// (`rpc::admit`). Also at most three quarters of the descriptor
    /// limit.
    pub max_connections: usize,
    /// Connections open at once from one source address (`None`: a
    /// quarter of the cap, but at least 16 or the cap); over it, that
    /// address's connection idle longest is closed for the new one.
    pub max_connections_per_source: Option<usize>,
    /// A record begun must be complete within this time.
    pub read_timeout: Option<Duration>,
    /// A connection whose peer takes no reply bytes for this long is closed.
    pub write_timeout: Option<Duration>,
    /// A connection with nothing received, sent or in progress for this
    /// long is closed. Keep it above the NFSv4 lease: a client holding
    /// state renews it at least once per lease (RFC 8881 §8.3).
    pub idle_timeout: Option<Duration>,
}

impl Default for ConnConfig {
    fn default() -> Self {
        ConnConfig {
            max_record: 4 * 1024 * 1024 + 64 * 1024,
            max_in_flight: 1024,
            max_pending_bytes: 8 * 1024 * 1024,
            reply_reserve: 128 * 1024,
            max_buffered_total: 64 * 1024 * 1024,
            max_connections: 4096,
            max_connections_per_source: None,
            read_timeout: Some(Duration::from_secs(30)),
            write_timeout: Some(Duration::from_secs(120)),
            idle_timeout: Some(Duration::from_secs(300)),
        }
    }
}

/// What the connections of one listener share.
pub(crate) struct Shared {
    pub(crate) buffered: Arc<BufferBudget>,
    live: AtomicUsize,
    /// Connections not yet closed, by source address.
    pub(crate) table: Mutex<admit::Table>,
}

impl Shared {
    pub(crate) fn new(cfg: &ConnConfig) -> Arc<Self> {
        Arc::new(Shared {
            buffered: BufferBudget::new(cfg.max_buffered_total),
            live: AtomicUsize::new(0),
            table: Mutex::new(admit::Table::default()),
        })
    }

    /// Connections whose socket is still open (closed ones count until
    /// their reader and writer have ended and dropped the socket).
    pub(crate) fn live(&self) -> usize {
        self.live.load(Ordering::Acquire)
    }
}

/// Counts a connection as live until its reader and writer have ended.
pub(super) struct Live(Arc<Shared>);

impl Live {
    pub(super) fn new(shared: Arc<Shared>) -> Arc<Live> {
        shared.live.fetch_add(1, Ordering::AcqRel);
        Arc::new(Live(shared))
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The bytes a connection holds for its calls: reserved or queued replies
/// and the arguments of calls running. The reader waits below `max`.
pub(super) struct Flow {
    used: AtomicUsize,
    max: usize,
    room: Notify,
}

impl Flow {
    pub(super) fn new(max: usize) -> Arc<Flow> {
        Arc::new(Flow {
            used: AtomicUsize::new(0),
            max,
            room: Notify::new(),
        })
    }

    pub(super) fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    pub(super) fn charge(
        self: &Arc<Self>,
        bytes: usize,
        permit: Option<OwnedSemaphorePermit>,
    ) -> Charge {
        self.used.fetch_add(bytes, Ordering::AcqRel);
        Charge {
            flow: self.clone(),
            bytes,
            _permit: permit,
        }
    }

    pub(super) fn has_room(&self) -> bool {
        self.used() < self.max.max(1)
    }

    /// Resolves once the connection holds less than its budget.
    pub(super) async fn room(&self) {
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.has_room() {
                return;
            }
            notified.await;
        }
    }
}

/// Bytes (and the in-flight slot) a call holds until its reply is written.
pub(super) struct Charge {
    flow: Arc<Flow>,
    bytes: usize,
    _permit: Option<OwnedSemaphorePermit>,
}

impl Charge {
    pub(super) fn set(&mut self, bytes: usize) {
        if bytes > self.bytes {
            self.flow
                .used
                .fetch_add(bytes - self.bytes, Ordering::AcqRel);
        } else if bytes < self.bytes {
            self.flow
                .used
                .fetch_sub(self.bytes - bytes, Ordering::AcqRel);
            self.flow.room.notify_one();
        }
        self.bytes = bytes;
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.flow.used.fetch_sub(self.bytes, Ordering::AcqRel);
        self.flow.room.notify_one();
    }
}
