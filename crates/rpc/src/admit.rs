//! Who gets a connection when a listener is full: the table of a
//! listener's open connections, by source address.
//!
//! A listener holds at most `cap` open connections, and one source address
//! at most `per_source` of them. A new connection over either limit is
//! still accepted: the connection that has been idle longest is closed in
//! its place (over the per-source limit, the longest idle of that address),
//! as the Linux server closes its oldest temporary connection rather than
//! refusing new ones (net/sunrpc/svc_xprt.c, `svc_check_conn_limits`).
//! So a host that opens connections and holds them idle cannot keep
//! others out, and from one address it only ever displaces its own.
//!
//! Victims are chosen in this order:
//! 1. connections that never carried a valid call,
//! 2. connections whose service never marked them as carrying state
//!    ([`crate::Connection::mark_stateful`]: an NFSv4.1 session in use),
//! 3. the rest;
//!
//! and within each, the one idle longest. A connection with calls running,
//! replies unwritten or callbacks unanswered is never closed this way; when
//! every candidate is busy the new connection is refused instead.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, Weak};

use tokio::time::Instant;

use crate::conn::Connection;

/// The open (not yet closed) connections of one listener.
#[derive(Default)]
pub(crate) struct Table {
    conns: HashMap<u64, Weak<Connection>>,
    per_source: HashMap<IpAddr, usize>,
}

/// What to do with a new connection from some address.
pub(crate) enum Admit {
    /// There is room.
    Room,
    /// Close this one to make room.
    Evict(Arc<Connection>, Over),
    /// Over a limit, and every candidate is busy.
    Refuse(Over),
}

/// Which limit a new connection is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Over {
    Total,
    Source,
}

/// A source address as the table counts it (IPv4-mapped IPv6 as IPv4).
pub(crate) fn source(ip: IpAddr) -> IpAddr {
    ip.to_canonical()
}

impl Table {
    pub(crate) fn open(&self) -> usize {
        self.conns.len()
    }

    pub(crate) fn of_source(&self, ip: IpAddr) -> usize {
        self.per_source.get(&source(ip)).copied().unwrap_or(0)
    }

    pub(crate) fn insert(&mut self, conn: &Arc<Connection>) {
        if self.conns.insert(conn.id(), Arc::downgrade(conn)).is_none() {
            *self.per_source.entry(source(conn.peer().ip())).or_insert(0) += 1;
        }
    }

    pub(crate) fn remove(&mut self, id: u64, ip: IpAddr) {
        if self.conns.remove(&id).is_some() {
            let ip = source(ip);
            if let Some(n) = self.per_source.get_mut(&ip) {
                *n -= 1;
                if *n == 0 {
                    self.per_source.remove(&ip);
                }
            }
        }
    }

    /// Whether a connection from `ip` fits, and if not, whom to close.
    pub(crate) fn admit(&self, ip: IpAddr, cap: usize, per_source: usize) -> Admit {
        let ip = source(ip);
        let over = if self.of_source(ip) >= per_source {
            Over::Source
        } else if self.open() >= cap {
            Over::Total
        } else {
            return Admit::Room;
        };
        let victim = self
            .conns
            .values()
            .filter_map(Weak::upgrade)
            .filter(|c| over == Over::Total || source(c.peer().ip()) == ip)
            .filter(|c| !c.is_closed() && !c.busy())
            .min_by_key(|c| rank(c));
        match victim {
            Some(c) => Admit::Evict(c, over),
            None => Admit::Refuse(over),
        }
    }
}

/// Lower is closed first: the class (never a valid call, no state, state),
/// then the time of the last activity.
fn rank(c: &Connection) -> (u8, Instant) {
    let class = if !c.proven() {
        0
    } else if !c.stateful() {
        1
    } else {
        2
    };
    (class, c.last_active())
}

/// The table behind a lock that a panic elsewhere cannot poison for good.
pub(crate) fn lock(t: &Mutex<Table>) -> std::sync::MutexGuard<'_, Table> {
    t.lock().unwrap_or_else(|p| p.into_inner())
}
