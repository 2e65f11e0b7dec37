//! Live statistics (issue 14): per NFS operation and procedure, counts,
//! errors by status, bytes and latency; per export, operations, errors
//! and bytes read and written; the NFSv3 hosts seen. Recorded without
//! locks on the request path (atomic counters; a status other than OK
//! takes a short lock on its operation's table of statuses), read by
//! `ferrite stat` over the administration socket ([`crate::observe::admin`]) and
//! by the metrics endpoint ([`crate::observe::metrics`]) as a [`report::Report`].
//!
//! Every table is bounded: operations by their numbers, statuses by the
//! protocol's (and five RPC-level ones), exports by the configuration,
//! NFSv3 hosts at [`MAX_HOSTS`] (the least recently seen goes).

pub mod hist;
pub mod names;
pub mod prometheus;
pub mod report;

pub use names::Program;

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;
use rpc::{Call, Reply, ReplyError, ReplyFuture, Service};

use hist::Histogram;

/// NFSv3 hosts remembered at most.
pub const MAX_HOSTS: usize = 4096;

/// One operation's (or procedure's) counters. How many were counted is
/// the latency histogram's total ([`OpCounters::count`]): one atomic
/// add fewer per operation.
#[derive(Default)]
pub struct OpCounters {
    /// Those that did not end in the protocol's OK.
    pub errors: AtomicU64,
    /// Bytes of its arguments and of its results.
    pub bytes_in: AtomicU64,
    pub bytes_out: AtomicU64,
    /// Total time in nanoseconds, and its distribution.
    pub nanos: AtomicU64,
    pub latency: Histogram,
    /// Count per status other than OK.
    statuses: Mutex<BTreeMap<u32, u64>>,
}

impl OpCounters {
    /// Counts one: `status` 0 is OK (every protocol's).
    pub fn record(&self, status: u32, bytes_in: usize, bytes_out: usize, nanos: u64) {
        self.bytes_in.fetch_add(bytes_in as u64, Ordering::Relaxed);
        self.bytes_out
            .fetch_add(bytes_out as u64, Ordering::Relaxed);
        self.nanos.fetch_add(nanos, Ordering::Relaxed);
        self.latency.record(nanos);
        if status != 0 {
            self.errors.fetch_add(1, Ordering::Relaxed);
            let mut s = self.statuses.lock().unwrap_or_else(|p| p.into_inner());
            *s.entry(status).or_insert(0) += 1;
        }
    }

    pub fn count(&self) -> u64 {
        self.latency.total()
    }

    pub fn statuses(&self) -> Vec<(u32, u64)> {
        let s = self.statuses.lock().unwrap_or_else(|p| p.into_inner());
        s.iter().map(|(&k, &v)| (k, v)).collect()
    }
}

/// A program's counters, by procedure number.
pub struct ProgramStats {
    pub program: Program,
    ops: Box<[OpCounters]>,
}

impl ProgramStats {
    fn new(program: Program) -> Self {
        ProgramStats {
            program,
            ops: (0..program.procs())
                .map(|_| OpCounters::default())
                .collect(),
        }
    }

    /// The counters of procedure `n`. Numbers past the table go to one
    /// entry: NFSv4's 1, which no operation has ([`names::ILLEGAL`],
    /// OP_ILLEGAL is 10044), the last for the others.
    pub fn op(&self, n: u32) -> &OpCounters {
        let i = match self.program {
            _ if (n as usize) < self.ops.len() => n as usize,
            Program::Nfs4 => 1,
            _ => self.ops.len() - 1,
        };
        &self.ops[i]
    }

    /// (procedure number, counters) of those used.
    pub fn used(&self) -> impl Iterator<Item = (u32, &OpCounters)> {
        self.ops
            .iter()
            .enumerate()
            .filter(|(_, c)| c.count() > 0)
            .map(|(i, c)| (i as u32, c))
    }
}

/// One export's counters.
#[derive(Default)]
pub struct ExportCounters {
    pub ops: AtomicU64,
    pub errors: AtomicU64,
    pub bytes_read: AtomicU64,
    pub bytes_written: AtomicU64,
}

/// What was seen of an NFSv3 (or NLM, MOUNT) host.
#[derive(Debug, Clone, Copy)]
pub struct HostSeen {
    pub calls: u64,
    /// Seconds since the epoch.
    pub last: u64,
    /// Bit per program seen from it ([`Program`] order).
    pub programs: u8,
}

/// Everything counted since the server started.
pub struct Stats {
    pub started: SystemTime,
    programs: [ProgramStats; 5],
    /// Whole NFSv4 COMPOUNDs.
    pub compounds: OpCounters,
    /// By export id (few: a search); those a reload adds are appended,
    /// those it removes kept (and no longer reported).
    exports: ArcSwap<Vec<(u16, Arc<ExportCounters>)>>,
    hosts: Mutex<HashMap<IpAddr, HostSeen>>,
    /// The load model ([`crate::observe::load`]), fed once a second.
    pub load: Mutex<crate::observe::load::Model>,
    /// Configuration reloads applied and refused.
    reloads: Mutex<Reloads>,
}

impl Stats {
    /// Counters for the exports with these ids.
    pub fn new(exports: impl IntoIterator<Item = u16>) -> Arc<Stats> {
        Arc::new(Stats {
            started: SystemTime::now(),
            programs: Program::ALL.map(ProgramStats::new),
            compounds: OpCounters::default(),
            exports: ArcSwap::from_pointee(
                exports.into_iter().map(|id| (id, Arc::default())).collect(),
            ),
            hosts: Mutex::new(HashMap::new()),
            load: Mutex::new(crate::observe::load::Model::default()),
            reloads: Mutex::new(Reloads::default()),
        })
    }

    /// Bytes received and sent, and operations answered (COMPOUNDs, and
    /// the other programs' procedures), so far.
    pub fn totals(&self) -> (u64, u64) {
        let mut bytes = 0;
        let mut ops = 0;
        let mut add = |c: &OpCounters| {
            bytes += c.bytes_in.load(Ordering::Relaxed) + c.bytes_out.load(Ordering::Relaxed);
            ops += c.count();
        };
        add(&self.compounds);
        for p in &self.programs[1..] {
            for c in p.ops.iter() {
                add(c);
            }
        }
        (bytes, ops)
    }

    /// Counts a reload: applied, or refused for `why`.
    pub fn note_reload(&self, outcome: Result<(), &str>) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut r = self.reloads.lock().unwrap_or_else(|e| e.into_inner());
        match outcome {
            Ok(()) => {
                r.applied += 1;
                r.last_applied = now;
                r.last_error = None;
            }
            Err(why) => {
                r.refused += 1;
                r.last_refused = now;
                r.last_error = Some(why.to_string());
            }
        }
    }

    pub fn reloads(&self) -> Reloads {
        self.reloads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The load model's report now.
    pub fn load_report(&self) -> crate::observe::load::LoadReport {
        self.load.lock().unwrap_or_else(|e| e.into_inner()).report()
    }

    pub fn program(&self, p: Program) -> &ProgramStats {
        &self.programs[p as usize]
    }

    pub fn export(&self, id: u16) -> Option<Arc<ExportCounters>> {
        self.exports
            .load()
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, c)| c.clone())
    }

    /// Counters for these exports too, where there are none yet (a
    /// reload); an id seen before keeps its counts.
    pub fn add_exports(&self, ids: impl IntoIterator<Item = u16>) {
        let ids: Vec<u16> = ids.into_iter().collect();
        self.exports.rcu(|now| {
            let mut next = Vec::clone(now);
            for &id in &ids {
                if !next.iter().any(|(i, _)| *i == id) {
                    next.push((id, Arc::default()));
                }
            }
            next
        });
    }

    /// Counts an operation on export `id`: `read` and `written` are data
    /// bytes (READ, WRITE).
    pub fn export_op(&self, id: u16, ok: bool, read: u64, written: u64) {
        let all = self.exports.load();
        if let Some((_, e)) = all.iter().find(|(i, _)| *i == id) {
            e.ops.fetch_add(1, Ordering::Relaxed);
            if !ok {
                e.errors.fetch_add(1, Ordering::Relaxed);
            }
            if read > 0 {
                e.bytes_read.fetch_add(read, Ordering::Relaxed);
            }
            if written > 0 {
                e.bytes_written.fetch_add(written, Ordering::Relaxed);
            }
        }
    }

    /// Notes a call of program `p` from `host`.
    pub fn seen(&self, host: IpAddr, p: Program) {
        let now = unix_now();
        let mut hosts = self.hosts.lock().unwrap_or_else(|e| e.into_inner());
        if !hosts.contains_key(&host) && hosts.len() >= MAX_HOSTS {
            if let Some(oldest) = hosts.iter().min_by_key(|(_, h)| h.last).map(|(a, _)| *a) {
                hosts.remove(&oldest);
            }
        }
        let h = hosts.entry(host).or_insert(HostSeen {
            calls: 0,
            last: now,
            programs: 0,
        });
        h.calls += 1;
        h.last = now;
        h.programs |= 1 << p as u8;
    }

    pub fn hosts(&self) -> Vec<(IpAddr, HostSeen)> {
        let hosts = self.hosts.lock().unwrap_or_else(|e| e.into_inner());
        hosts.iter().map(|(a, h)| (*a, *h)).collect()
    }
}

pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The status a reply carries: an RPC-level error's pseudo-status, else
/// (for programs whose results begin with one, `leading_status`) the
/// first word of the results, else 0.
pub fn reply_status(r: &Reply, leading_status: bool) -> u32 {
    match r {
        Reply::Error(e) => match e {
            ReplyError::ProcUnavail => names::RPC_PROC_UNAVAIL,
            ReplyError::GarbageArgs => names::RPC_GARBAGE_ARGS,
            ReplyError::SystemErr => names::RPC_SYSTEM_ERR,
            ReplyError::Auth(_) => names::RPC_AUTH_ERROR,
            _ => names::RPC_OTHER,
        },
        Reply::Success(chunks) if leading_status => first_word(chunks.iter().map(|b| &b[..])),
        Reply::Pieces(p) if leading_status => first_word(p.iter().filter_map(|p| match p {
            xdr::Piece::Mem(b) => Some(&b[..]),
            xdr::Piece::File(_) => None,
        })),
        _ => 0,
    }
}

/// The first four bytes of a gather list, big-endian (0 if shorter).
fn first_word<'a>(chunks: impl Iterator<Item = &'a [u8]>) -> u32 {
    let mut w = [0u8; 4];
    let mut n = 0;
    for c in chunks {
        for &b in c.iter().take(4 - n) {
            w[n] = b;
            n += 1;
        }
        if n == 4 {
            return u32::from_be_bytes(w);
        }
    }
    0
}

/// The bytes of a reply's results.
pub fn reply_len(r: &Reply) -> usize {
    match r {
        Reply::Success(chunks) => chunks.iter().map(|b| b.len()).sum(),
        Reply::Pieces(p) => p.iter().map(xdr::Piece::len).sum(),
        _ => 0,
    }
}

/// A service whose calls are counted under `program`, by procedure:
/// time to the reply, argument and result bytes, and the status the
/// results begin with where the program's do (NFSv3). The caller's
/// address is noted as a host seen.
pub struct Counted<S> {
    pub inner: S,
    pub stats: Arc<Stats>,
    pub program: Program,
}

/// `inner`, counted under `program` in `stats`.
pub fn counted<S: Service>(inner: S, stats: &Arc<Stats>, program: Program) -> Arc<dyn Service> {
    Arc::new(Counted {
        inner,
        stats: stats.clone(),
        program,
    })
}

impl<S: Service> Service for Counted<S> {
    fn call(&self, call: Call) -> ReplyFuture {
        let stats = self.stats.clone();
        let program = self.program;
        let proc_ = call.proc_;
        let bytes_in = call.args.remaining();
        stats.seen(call.conn.peer().ip(), program);
        let t0 = Instant::now();
        let fut = self.inner.call(call);
        Box::pin(async move {
            let reply = fut.await;
            let nanos = t0.elapsed().as_nanos() as u64;
            let status = reply_status(&reply, program == Program::Nfs3);
            stats
                .program(program)
                .op(proc_)
                .record(status, bytes_in, reply_len(&reply), nanos);
            reply
        })
    }

    fn disconnected(&self, conn: &Arc<rpc::Connection>) {
        self.inner.disconnected(conn);
    }
}

/// Configuration reloads since the server started.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct Reloads {
    pub applied: u64,
    pub refused: u64,
    /// Seconds since the epoch of the last one applied (0: none).
    pub last_applied: u64,
    /// Seconds since the epoch of the last one refused (0: none).
    pub last_refused: u64,
    /// Why the last reload was refused, when it was (none once one
    /// is applied after it).
    pub last_error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn counters_keep_statuses_and_bytes() {
        let s = Stats::new([0, 1]);
        let read = s.program(Program::Nfs3).op(6);
        read.record(0, 100, 4200, 20_000);
        read.record(70, 100, 8, 5_000);
        read.record(70, 100, 8, 5_000);
        assert_eq!(read.count(), 3);
        assert_eq!(read.errors.load(Ordering::Relaxed), 2);
        assert_eq!(read.bytes_out.load(Ordering::Relaxed), 4216);
        assert_eq!(read.statuses(), vec![(70, 2)]);
        // A procedure number past the table is counted in its last entry.
        s.program(Program::Nfs3).op(999).record(0, 0, 0, 1);
        assert_eq!(
            s.program(Program::Nfs3)
                .used()
                .map(|(n, _)| n)
                .collect::<Vec<_>>(),
            vec![6, 21]
        );
        s.export_op(1, false, 0, 4096);
        s.export_op(7, true, 1, 1); // no such export: ignored
        let e = s.export(1).unwrap();
        assert_eq!(e.errors.load(Ordering::Relaxed), 1);
        assert_eq!(e.bytes_written.load(Ordering::Relaxed), 4096);
    }

    #[test]
    fn hosts_are_bounded() {
        let s = Stats::new([]);
        for i in 0..(MAX_HOSTS as u32 + 10) {
            s.seen(IpAddr::from(i.to_be_bytes()), Program::Nfs3);
        }
        assert_eq!(s.hosts().len(), MAX_HOSTS);
    }

    #[test]
    fn a_reply_status_is_its_first_word_or_the_rpc_error() {
        let r = Reply::Success(vec![
            Bytes::from_static(&[0, 0]),
            Bytes::from_static(&[0, 70, 1]),
        ]);
        assert_eq!(reply_status(&r, true), 70);
        assert_eq!(reply_status(&r, false), 0);
        assert_eq!(
            reply_status(&Reply::Error(ReplyError::GarbageArgs), false),
            names::RPC_GARBAGE_ARGS
        );
        assert_eq!(reply_len(&r), 5);
    }
}
