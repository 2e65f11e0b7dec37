//! The server's RPCSEC_GSS contexts (RFC 2203 §5.2.3.1, §5.3.3.1): each
//! under the handle given to its client, with the mechanism context, the
//! principal, its expiry and its sequence window. The table is bounded;
//! when it is full the context idle longest goes (its client makes a new
//! one when told RPCSEC_GSS_CREDPROBLEM). Time is passed in, so tests run
//! it on a manual clock.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::mech::MechContext;
use super::window::Window;
use super::Principal;

/// Contexts held at once by default.
pub const DEFAULT_MAX_CONTEXTS: usize = 4096;

/// The longest a context lives, whatever the ticket says: after it the
/// client makes a new one (and the server notices a changed key table or
/// principal map).
pub const MAX_CONTEXT_LIFETIME: Duration = Duration::from_secs(24 * 3600);

/// A context in establishment lasts at most this long between steps.
pub const PENDING_LIFETIME: Duration = Duration::from_secs(60);

/// What a context's lock guards: the mechanism's context (one call at a
/// time, RFC 2744 §1.1.1.3) and the window.
pub struct Inner {
    pub mech: Box<dyn MechContext>,
    pub window: Window,
}

/// One context.
pub struct Context {
    pub handle: u64,
    inner: Mutex<Inner>,
    /// The principal and the identity it maps to; None while the context
    /// is being established.
    pub auth: Option<Arc<Principal>>,
    /// After this the context answers RPCSEC_GSS_CTXPROBLEM.
    pub expires: Instant,
    last_used: Mutex<Instant>,
}

impl Context {
    pub fn new(
        handle: u64,
        mech: Box<dyn MechContext>,
        auth: Option<Arc<Principal>>,
        expires: Instant,
        now: Instant,
    ) -> Context {
        Context {
            handle,
            inner: Mutex::new(Inner {
                mech,
                window: Window::new(),
            }),
            auth,
            expires,
            last_used: Mutex::new(now),
        }
    }

    /// The mechanism context and window, locked.
    pub fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The mechanism context and window, the context itself gone.
    pub fn into_inner(self) -> Inner {
        self.inner.into_inner().unwrap_or_else(|p| p.into_inner())
    }

    pub fn established(&self) -> bool {
        self.auth.is_some()
    }

    fn touch(&self, now: Instant) {
        *self.last_used.lock().unwrap_or_else(|p| p.into_inner()) = now;
    }

    fn last_used(&self) -> Instant {
        *self.last_used.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The handle's wire form: 8 bytes.
pub fn handle_bytes(h: u64) -> [u8; 8] {
    h.to_be_bytes()
}

/// The handle a client sent, if it can be one of ours.
pub fn handle_of(b: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(b.try_into().ok()?))
}

/// The bounded table.
pub struct Contexts {
    max: usize,
    inner: Mutex<Table>,
}

struct Table {
    next: u64,
    map: HashMap<u64, Arc<Context>>,
    /// Contexts removed to make room, for the log.
    evicted: u64,
}

impl Contexts {
    /// A table of at most `max` contexts. Handles start from `seed`, so
    /// that a restarted server does not hand out the handles a client may
    /// still hold (they would fail their checksums anyway).
    pub fn new(max: usize, seed: u64) -> Contexts {
        Contexts {
            max: max.max(1),
            inner: Mutex::new(Table {
                next: seed,
                map: HashMap::new(),
                evicted: 0,
            }),
        }
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A free handle.
    pub fn allocate(&self) -> u64 {
        let mut t = self.table();
        loop {
            t.next = t.next.wrapping_add(1);
            if t.next != 0 && !t.map.contains_key(&t.next) {
                return t.next;
            }
        }
    }

    /// Adds (or replaces) a context, making room if the table is full:
    /// first by dropping expired contexts, then the one idle longest.
    /// Returns how many were evicted for room.
    pub fn insert(&self, ctx: Arc<Context>, now: Instant) -> usize {
        let mut t = self.table();
        let mut evicted = 0;
        if !t.map.contains_key(&ctx.handle) && t.map.len() >= self.max {
            t.map.retain(|_, c| c.expires > now);
            while t.map.len() >= self.max {
                let Some(oldest) = t
                    .map
                    .values()
                    .min_by_key(|c| (c.last_used(), c.handle))
                    .map(|c| c.handle)
                else {
                    break;
                };
                t.map.remove(&oldest);
                t.evicted += 1;
                evicted += 1;
            }
        }
        t.map.insert(ctx.handle, ctx);
        evicted
    }

    /// The context under `handle`, marked used at `now`. An expired one
    /// is still returned: the caller answers RPCSEC_GSS_CTXPROBLEM.
    pub fn get(&self, handle: u64, now: Instant) -> Option<Arc<Context>> {
        let c = self.table().map.get(&handle).cloned()?;
        c.touch(now);
        Some(c)
    }

    pub fn remove(&self, handle: u64) -> Option<Arc<Context>> {
        self.table().map.remove(&handle)
    }

    /// Drops every context expired at `now`; returns how many.
    pub fn sweep(&self, now: Instant) -> usize {
        let mut t = self.table();
        let before = t.map.len();
        t.map.retain(|_, c| c.expires > now);
        before - t.map.len()
    }

    /// The most contexts held at once.
    pub fn max(&self) -> usize {
        self.max
    }

    pub fn len(&self) -> usize {
        self.table().map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Contexts evicted for room since the start.
    pub fn evicted(&self) -> u64 {
        self.table().evicted
    }
}
