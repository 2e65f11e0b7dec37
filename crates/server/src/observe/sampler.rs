//! The load model's driver: takes a [`crate::observe::load::Sample`] on
//! each housekeeping tick (once a second, [`crate::run`]) while the
//! server is serving, and every [`crate::observe::load::QUIET_EVERY`]
//! seconds while nothing changes, so a quiet server is not woken to
//! measure that it is quiet.

use std::sync::{Arc, Weak};

use crate::exports::Exports;
use crate::handoff::iopool::Pool;
use crate::instance::Server;
use crate::observe::load::{self, Model};
use crate::observe::stats::Stats;

/// What the last sample saw: operations, bytes, pool calls, when.
#[derive(Clone, Copy)]
struct Seen {
    ops: u64,
    bytes: u64,
    calls: u64,
    at: f64,
}

pub struct LoadSampler {
    srv: Weak<Server>,
    stats: Arc<Stats>,
    /// The exports the disks were found for (again after a reload).
    exports: Option<Arc<Exports>>,
    /// The block devices under the exports.
    devices: Arc<Vec<String>>,
    base: std::time::Instant,
    cores: f64,
    last: Option<Seen>,
}

/// The block devices under `exports`.
fn devices_of(exports: &Exports) -> Arc<Vec<String>> {
    let mut d: Vec<String> = exports
        .iter()
        .filter_map(|e| load::device_of(&e.vfs.local_dir()?))
        .collect();
    d.sort();
    d.dedup();
    Arc::new(d)
}

impl LoadSampler {
    /// A sampler of `srv`'s load, with a link of `link_bytes_per_s` if
    /// configured (the model starts afresh).
    pub fn new(srv: &Arc<Server>, link_bytes_per_s: Option<f64>) -> LoadSampler {
        *srv.stats.load.lock().unwrap_or_else(|e| e.into_inner()) = Model::new(link_bytes_per_s);
        LoadSampler {
            srv: Arc::downgrade(srv),
            stats: srv.stats.clone(),
            exports: None,
            devices: Arc::new(Vec::new()),
            base: std::time::Instant::now(),
            cores: std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64),
            last: None,
        }
    }

    /// One tick: a sample, unless nothing changed since the last one and
    /// it is recent.
    pub async fn step(&mut self) {
        let changed = self
            .srv
            .upgrade()
            .map(|s| s.exports())
            .filter(|now| !self.exports.as_ref().is_some_and(|s| Arc::ptr_eq(s, now)));
        let (bytes, ops) = self.stats.totals();
        let calls = Pool::global().usage().calls;
        let at = self.base.elapsed().as_secs_f64();
        let quiet = self.last.is_some_and(|l| {
            (l.ops, l.bytes, l.calls) == (ops, bytes, calls) && at - l.at < load::QUIET_EVERY
        });
        if changed.is_none() && quiet {
            return;
        }
        // The pool's threads' CPU time (a walk of /proc/self/task): read
        // again only if the pool took calls (other than this sampler's)
        // since the last sample.
        let pool_idle = self.last.is_some_and(|l| l.calls == calls);
        self.last = Some(Seen {
            ops,
            bytes,
            calls,
            at,
        });
        if let Some(now) = &changed {
            self.exports = Some(now.clone());
        }
        let (stats, known, cores) = (self.stats.clone(), self.devices.clone(), self.cores);
        // /proc reads (and the exports' stat): quick, but system calls
        // all the same.
        let sampled = crate::handoff::off_thread(move || {
            let devices = changed.map_or(known, |now| devices_of(&now));
            let mut model = stats.load.lock().unwrap_or_else(|e| e.into_inner());
            let kept = model
                .last_sample()
                .filter(|_| pool_idle)
                .map(|p| p.pool_cpu_s);
            let s = load::sample(at, Pool::global(), &devices, bytes, ops, cores, kept);
            model.observe(s);
            devices
        })
        .await;
        if let Ok(d) = sampled {
            self.devices = d;
        }
        // The hand-off above was a pool call of its own.
        if let Some(l) = self.last.as_mut() {
            l.calls = Pool::global().usage().calls;
        }
    }
}
