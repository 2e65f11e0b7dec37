//! An export's write log (issue 11, point 4): stable WRITEs acknowledged
//! after one group-committed append to a log on a device of the
//! administrator's choosing, instead of a sync of the file each.
//!
//! A stable WRITE (RFC 8881 §18.32.3: FILE_SYNC or DATA_SYNC) writes its
//! data to the file as an unstable write would, queues a record of it
//! (the file's handle, the offset, the data) in the log, and is answered
//! once the record is on stable storage: concurrent requests, to any file
//! of the export, share one `fdatasync` of the log ([`vfs::wal`]). The
//! data is in the file system's cache from the start, so READ, GETATTR and
//! READDIR see it as they see any write; what the log adds is only its
//! durability. This is the intent log of file systems such as ZFS (its
//! ZIL): the change is made in memory, logged, and reaches its home on
//! disk later.
//!
//! Applying. A thread of the log, every [`APPLY_EVERY`] or sooner when the
//! log is half full, syncs every file with logged records (the export's
//! own `commit`), then appends an `Applied` mark: no record before it is
//! replayed again, and whole segments before it are deleted. A file stays
//! in the set of logged files until a mark covers all its records.
//!
//! Other changes of a logged file. A COMMIT promises that unstable writes
//! are stable; it syncs the file like any COMMIT, but a record logged
//! before it and replayed after a crash would then overwrite data the
//! COMMIT made stable. So a COMMIT of a file with records not yet covered
//! by a mark, and every change that is durable when answered (a size
//! change, ALLOCATE, DEALLOCATE, COPY and CLONE into it), is followed by a
//! `Synced` record ([`WriteLog::barrier`]): replay skips the file's
//! records before it.
//!
//! Replay. At start, before any client is served, the records after the
//! last `Applied` mark are written again, in log order (writes are
//! idempotent when replayed in order), each file is synced, and a mark is
//! appended. A record of a file that no longer exists is skipped: its
//! removal was durable after the record. A log of another export, or
//! damaged before its tail, is refused: the server does not start.
//!
//! Shutdown. A clean stop applies everything ([`WriteLog::drain`]), so the
//! next start has nothing to replay.
//!
//! Not logged (yet): metadata changes (they are made durable by the
//! backend, or not at all on an `async` export) and the unstable writes a
//! COMMIT covers (a COMMIT syncs the file: its data was written once
//! already, so logging it would write it twice).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use vfs::wal::{Wal, WalConfig, WalError};
use vfs::{Creds, Errno, Handle, Stability, Vfs};

use crate::stable::groups::Group;

/// How often logged files are synced and the log trimmed.
pub const APPLY_EVERY: Duration = Duration::from_secs(1);
/// Segments of this size.
const SEGMENT_BYTES: u64 = 64 << 20;
/// Stripes ordering a file's write and its record (by handle hash).
const STRIPES: usize = 64;

const WRITE: u8 = 1;
const SYNCED: u8 = 2;
const APPLIED: u8 = 3;

/// Where an export's log lives and how large it may grow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    pub dir: PathBuf,
    pub capacity_bytes: u64,
}

impl LogConfig {
    pub const DEFAULT_CAPACITY: u64 = 1 << 30;
}

/// A record of the log, decoded.
#[derive(Debug, PartialEq, Eq)]
enum Rec<'a> {
    /// `data` was written at `offset` of `handle`.
    Write {
        handle: &'a [u8],
        offset: u64,
        data: &'a [u8],
    },
    /// Every record of `handle` before `upto` is in the file, durably.
    Synced { handle: &'a [u8], upto: u64 },
    /// Every record before `upto` is applied.
    Applied { upto: u64 },
}

fn head_of(tag: u8, handle: &[u8], n: u64) -> Vec<u8> {
    let mut h = Vec::with_capacity(11 + handle.len());
    h.push(tag);
    h.extend_from_slice(&(handle.len() as u16).to_be_bytes());
    h.extend_from_slice(handle);
    h.extend_from_slice(&n.to_be_bytes());
    h
}

fn decode(p: &[u8]) -> Option<Rec<'_>> {
    let (&tag, rest) = p.split_first()?;
    if tag == APPLIED {
        return Some(Rec::Applied {
            upto: u64::from_be_bytes(rest.try_into().ok()?),
        });
    }
    let hlen = u16::from_be_bytes(rest.get(..2)?.try_into().ok()?) as usize;
    let handle = rest.get(2..2 + hlen)?;
    let n = u64::from_be_bytes(rest.get(2 + hlen..10 + hlen)?.try_into().ok()?);
    let tail = &rest[10 + hlen..];
    match tag {
        WRITE => Some(Rec::Write {
            handle,
            offset: n,
            data: tail,
        }),
        SYNCED if tail.is_empty() => Some(Rec::Synced { handle, upto: n }),
        _ => None,
    }
}

/// A file with records the last mark does not cover.
#[derive(Debug, Default)]
struct Logged {
    /// Stable writes to it between their write and their record.
    pending: u32,
    /// Its last record.
    last: u64,
}

/// What the log has done since start.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LogStats {
    /// Records replayed at start, and those skipped (file gone or
    /// superseded by a later sync).
    pub replayed: u64,
    pub skipped: u64,
    /// Stable writes logged.
    pub writes: u64,
    /// Barriers (`Synced` records) after COMMITs and durable changes.
    pub barriers: u64,
    /// Rounds of applying that synced files and appended a mark.
    pub applies: u64,
    /// Appends and syncs of the log itself.
    pub records: u64,
    pub syncs: u64,
    pub bytes: u64,
}

pub struct WriteLog {
    wal: Arc<Wal>,
    fs: Arc<dyn Vfs>,
    files: Mutex<HashMap<Handle, Logged>>,
    stripes: Vec<Mutex<()>>,
    /// Group commit on the async side: one sync of the log on the
    /// blocking pool answers every request queued before it began.
    group: Group<Errno>,
    /// The next sequence number after the last mark this log appended:
    /// nothing new since when equal to the log's.
    marked: AtomicU64,
    kick: (Mutex<bool>, Condvar),
    stop: AtomicBool,
    stats: Mutex<LogStats>,
    /// Applies one at a time (the thread, a drain, a test).
    applying: Mutex<()>,
    dir: PathBuf,
}

impl std::fmt::Debug for WriteLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WriteLog({})", self.dir.display())
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Failures of the log, reported at most every 10 s (a failed log fails
/// every stable write after it).
static FAILED_LOG: rpc::RateLimit = rpc::RateLimit::per_secs(10);

fn io_err(e: WalError) -> Errno {
    if let Some(n) = FAILED_LOG.allow() {
        tracing::error!("{e} ({n} more since the last report)");
    }
    Errno(libc::EIO)
}

/// Errors of a file that no longer exists: its records have nothing left
/// to apply to.
fn gone(e: Errno) -> bool {
    matches!(e.0, libc::ESTALE | libc::ENOENT | libc::EBADF)
}

impl WriteLog {
    /// Opens the log of the export served by `fs`, replays what it holds
    /// (before the caller serves anyone) and starts the thread that
    /// applies it. Errors: the log is another export's, damaged, or a
    /// record cannot be replayed.
    pub fn open(cfg: &LogConfig, fs: Arc<dyn Vfs>) -> Result<Arc<WriteLog>, String> {
        let id = blake3::hash(&fs.root_identity());
        let mut identity = [0u8; 16];
        identity.copy_from_slice(&id.as_bytes()[..16]);
        let (wal, records) = Wal::open(WalConfig {
            dir: cfg.dir.clone(),
            identity,
            segment_bytes: SEGMENT_BYTES.min(cfg.capacity_bytes / 4).max(1 << 20),
            capacity_bytes: cfg.capacity_bytes,
        })
        .map_err(|e| e.to_string())?;
        let wal = Arc::new(wal);
        let log = Arc::new(WriteLog {
            marked: AtomicU64::new(wal.next_seq()),
            wal,
            fs,
            files: Mutex::new(HashMap::new()),
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            group: Group::default(),
            kick: (Mutex::new(false), Condvar::new()),
            stop: AtomicBool::new(false),
            stats: Mutex::new(LogStats::default()),
            applying: Mutex::new(()),
            dir: cfg.dir.clone(),
        });
        log.replay(&records)?;
        let worker = log.clone();
        std::thread::Builder::new()
            .name("ferrite-log".into())
            .spawn(move || worker.run())
            .map_err(|e| e.to_string())?;
        Ok(log)
    }

    fn replay(&self, records: &[vfs::wal::Record]) -> Result<(), String> {
        let mut decoded = Vec::with_capacity(records.len());
        for r in records {
            let rec = decode(&r.payload).ok_or_else(|| {
                format!(
                    "write log {}: record {} is not one this version writes",
                    self.dir.display(),
                    r.seq
                )
            })?;
            decoded.push((r.seq, rec));
        }
        let from = decoded
            .iter()
            .filter_map(|(_, r)| match r {
                Rec::Applied { upto } => Some(*upto),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        let mut synced: HashMap<&[u8], u64> = HashMap::new();
        for (_, r) in &decoded {
            if let Rec::Synced { handle, upto } = r {
                let s = synced.entry(handle).or_default();
                *s = (*s).max(*upto);
            }
        }
        let failed = |what: &str, e: vfs::Errno| {
            format!(
                "write log {}: {what}: {}",
                self.dir.display(),
                std::io::Error::from_raw_os_error(e.0)
            )
        };
        let (mut replayed, mut skipped) = (0u64, 0u64);
        let mut touched: HashSet<Handle> = HashSet::new();
        let root = Creds::root();
        for (seq, r) in &decoded {
            let Rec::Write {
                handle,
                offset,
                data,
            } = r
            else {
                continue;
            };
            if *seq < from || synced.get(handle).is_some_and(|&s| *seq < s) {
                skipped += 1;
                continue;
            }
            let h = Handle(bytes::Bytes::copy_from_slice(handle));
            match self.fs.write(&root, &h, *offset, data, Stability::Unstable) {
                Ok(_) => {
                    replayed += 1;
                    touched.insert(h);
                }
                Err(e) if gone(e) => skipped += 1,
                Err(e) => return Err(failed(&format!("replaying record {seq}"), e)),
            }
        }
        for h in &touched {
            match self.fs.commit(h) {
                Ok(()) => {}
                Err(e) if gone(e) => {}
                Err(e) => return Err(failed("syncing a replayed file", e)),
            }
        }
        if !records.is_empty() {
            self.mark().map_err(|e| e.to_string())?;
        }
        if replayed > 0 {
            tracing::warn!(
                log = %self.dir.display(),
                replayed,
                skipped,
                files = touched.len(),
                "write log: replayed acknowledged writes the export had not made durable"
            );
        }
        let mut st = lock(&self.stats);
        st.replayed = replayed;
        st.skipped = skipped;
        Ok(())
    }

    /// Appends an `Applied` mark covering every record queued so far,
    /// durably, and trims the log below it.
    fn mark(&self) -> Result<(), WalError> {
        let upto = self.wal.next_seq();
        let seq = self.wal.enqueue_parts(&[&[APPLIED], &upto.to_be_bytes()])?;
        self.wal.sync(seq)?;
        self.marked.store(seq + 1, Ordering::SeqCst);
        self.wal.applied(upto)
    }

    fn stripe(&self, h: &Handle) -> MutexGuard<'_, ()> {
        use std::hash::{BuildHasher, BuildHasherDefault};
        let k = BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
            .hash_one(&h.0);
        lock(&self.stripes[k as usize % STRIPES])
    }

    /// Writes `data` and queues its record; blocking (the backend's write
    /// and, when the log is full, back-pressure). [`WriteLog::durable`]
    /// then waits for the record to be stable.
    pub fn write(&self, c: &Creds, h: &Handle, offset: u64, data: &[u8]) -> vfs::Result<()> {
        // One file's write and record in the same order: concurrent writes
        // to one range are replayed as the file last saw them.
        let _order = self.stripe(h);
        lock(&self.files).entry(h.clone()).or_default().pending += 1;
        let done = |last: Option<u64>| {
            let mut files = lock(&self.files);
            if let Some(f) = files.get_mut(h) {
                f.pending -= 1;
                if let Some(s) = last {
                    f.last = f.last.max(s);
                }
            }
        };
        if let Err(e) = self.fs.write(c, h, offset, data, Stability::Unstable) {
            done(None);
            return Err(e);
        }
        let head = head_of(WRITE, &h.0, offset);
        let queued = self.wal.enqueue_parts(&[&head, data]);
        done(queued.as_ref().ok().copied());
        queued.map_err(io_err)?;
        lock(&self.stats).writes += 1;
        if self.wal.bytes() > self.wal.capacity() / 2 {
            self.wake();
        }
        Ok(())
    }

    /// Returns once every record queued before the call is on stable
    /// storage, sharing one sync of the log with every request waiting.
    pub async fn durable(&self) -> Result<(), Errno> {
        self.group
            .stable(|| async {
                let wal = self.wal.clone();
                let upto = wal.next_seq();
                match crate::handoff::off_thread_urgent(move || wal.sync(upto.saturating_sub(1)))
                    .await
                {
                    Ok(r) => r.map_err(io_err),
                    Err(_) => Err(Errno(libc::EIO)),
                }
            })
            .await
    }

    /// Whether `h` has records no mark covers yet.
    pub fn is_logged(&self, h: &Handle) -> bool {
        lock(&self.files).contains_key(h)
    }

    /// After a change of `h` that is durable when answered, or before a
    /// COMMIT of it is: if it has records no mark covers, syncs it and
    /// logs a `Synced` record, so that replay never writes those records
    /// over the change. Blocking.
    pub fn barrier(&self, h: &Handle) -> vfs::Result<bool> {
        if !self.is_logged(h) {
            return Ok(false);
        }
        // Read under the file's stripe: a stable write to it that wrote
        // before this point has its record below `upto`, and one that
        // writes after is later than the change this barrier covers.
        let upto = {
            let _order = self.stripe(h);
            self.wal.next_seq()
        };
        match self.fs.commit(h) {
            Ok(()) => {}
            Err(e) if gone(e) => return Ok(true),
            Err(e) => return Err(e),
        }
        let seq = self
            .wal
            .enqueue(&head_of(SYNCED, &h.0, upto))
            .map_err(io_err)?;
        self.wal.sync(seq).map_err(io_err)?;
        lock(&self.stats).barriers += 1;
        Ok(true)
    }

    fn wake(&self) {
        let (m, cv) = &self.kick;
        *lock(m) = true;
        cv.notify_one();
    }

    /// The applying thread: every [`APPLY_EVERY`], or when woken.
    fn run(self: Arc<Self>) {
        loop {
            {
                let (m, cv) = &self.kick;
                let mut k = lock(m);
                if !*k && !self.stop.load(Ordering::SeqCst) {
                    k = cv
                        .wait_timeout(k, APPLY_EVERY)
                        .map(|(g, _)| g)
                        .unwrap_or_else(|p| p.into_inner().0);
                }
                *k = false;
            }
            if self.stop.load(Ordering::SeqCst) {
                return;
            }
            if let Err(e) = self.apply() {
                // Nothing is lost: the records stay until a round succeeds.
                tracing::error!(log = %self.dir.display(), "write log: applying failed: {e}");
                std::thread::sleep(APPLY_EVERY);
            }
            // The next segment, written ahead so that no append waits.
            if let Err(e) = self.wal.prepare_spare() {
                tracing::error!(log = %self.dir.display(), "write log: preparing a segment: {e}");
            }
        }
    }

    /// Syncs every logged file, then marks every record queued before as
    /// applied. Blocking.
    pub fn apply(&self) -> Result<(), String> {
        let _one = lock(&self.applying);
        let upto = self.wal.next_seq();
        if upto == self.marked.load(Ordering::SeqCst) {
            return Ok(());
        }
        let files: Vec<Handle> = lock(&self.files).keys().cloned().collect();
        for h in &files {
            match self.fs.commit(h) {
                Ok(()) => {}
                Err(e) if gone(e) => {}
                Err(e) => return Err(std::io::Error::from_raw_os_error(e.0).to_string()),
            }
        }
        self.mark().map_err(|e| e.to_string())?;
        lock(&self.files).retain(|_, f| f.pending > 0 || f.last >= upto);
        lock(&self.stats).applies += 1;
        Ok(())
    }

    /// A clean stop: applies everything and stops the thread.
    pub fn drain(&self) -> Result<(), String> {
        self.stop.store(true, Ordering::SeqCst);
        self.wake();
        self.apply()
    }

    /// Stops the applying thread with nothing applied, as a crash would
    /// (tests and harnesses): what is logged stays for the next start.
    pub fn halt(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.wake();
    }

    pub fn stats(&self) -> LogStats {
        let w = self.wal.stats();
        LogStats {
            records: w.records,
            syncs: w.syncs,
            bytes: w.bytes,
            ..*lock(&self.stats)
        }
    }

    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }
}

#[cfg(test)]
mod tests;
