//! The write log (issue 11, point 4): records appended in order to
//! segment files on a log device, each append acknowledged only once it is
//! on stable storage, many concurrent appends sharing one `fdatasync`
//! (group commit). What the records mean is the caller's business; this
//! module keeps them safe and hands them back after a crash.
//!
//! The server's `stable::writelog` gives the records their meaning (stable
//! WRITEs of an export) and applies them.
//!
//! Layout. A log is a directory of segments `wal-<first seq>.seg`, each a
//! 32-byte header (magic, version, the identity of the export the log
//! belongs to) followed by records:
//!
//! ```text
//! [payload length: u32 BE][checksum: 8 bytes][seq: u64 BE][payload]
//! ```
//!
//! The checksum is the first 8 bytes of BLAKE3 over the sequence number
//! and the payload. Sequence numbers follow each other without a gap,
//! across segments too.
//!
//! Recovery ([`Wal::open`]) reads every segment in order. A record that is
//! cut short or fails its checksum at the end of the last segment is a torn
//! tail (a crash during an append that was never acknowledged): it is never
//! replayed, and the next append overwrites it. A bad record with a good
//! one after it, a gap in the
//! sequence, a segment of another export or of an unknown version is
//! damage: the log is refused, loudly, rather than replayed wrong.
//!
//! Space. A segment is written whole when it is made (zeros after its
//! header, synced), and records then overwrite it in place: an append's
//! `fdatasync` writes the records and flushes, with no change of the
//! file's size for the file system to journal (on this machine 114 µs
//! against 164 µs for an append that grows the file). Segments wholly
//! applied ([`Wal::applied`]) become spares (`spare-<n>.seg`, at most
//! [`SPARES`]) that the next rotations take, and are deleted beyond that;
//! [`Wal::prepare_spare`] makes one ahead of need, so that no append waits
//! for a segment to be written. An append that would take the log past its
//! capacity waits until enough is applied (back-pressure on the writers,
//! never an unbounded log).
//!
//! After the last record of a segment come zeros or a spare's old records:
//! their sequence numbers are not the next one, so reading stops there. In
//! the last segment, a bad record with a sound one of the next sequence
//! numbers after it is damage; without, it is the end of the log.

use crate::durable::sync_dir;
use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;

const MAGIC: &[u8; 8] = b"FERRWAL\0";
/// The format appends write: records checksummed with XXH3-64. Version 1
/// (BLAKE3, which cost 3.9 µs of a 4 KiB record against XXH3's 0.2) is
/// still read, so that a log left by an earlier build is replayed; a
/// version-1 segment takes no more appends and becomes no spare.
const VERSION: u32 = 2;
const VERSION_BLAKE3: u32 = 1;
const HEADER: usize = 32;
/// Length, checksum and sequence number before each payload.
const RECORD_HEAD: usize = 4 + 8 + 8;
/// The largest payload a record may carry.
pub const MAX_PAYLOAD: usize = 8 << 20;
/// Applied segments kept for reuse.
pub const SPARES: usize = 2;
/// A segment being written before it gets its name.
const NEW_SEGMENT: &str = "new-segment.tmp";

/// Where a log lives and how large it may grow.
#[derive(Debug, Clone)]
pub struct WalConfig {
    pub dir: PathBuf,
    /// Names the export the log belongs to: a log of another is refused.
    pub identity: [u8; 16],
    /// A segment is closed once it holds this much.
    pub segment_bytes: u64,
    /// Appends wait while the log holds more than this.
    pub capacity_bytes: u64,
}

/// A record handed back by recovery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub seq: u64,
    pub payload: Bytes,
}

#[derive(Debug, thiserror::Error)]
pub enum WalError {
    #[error("write log I/O: {0}")]
    Io(#[from] io::Error),
    #[error("write log {0}: belongs to another export")]
    Foreign(PathBuf),
    #[error("write log {path}: damaged at byte {offset}: {why}")]
    Damaged {
        path: PathBuf,
        offset: u64,
        why: String,
    },
    #[error("write log record of {0} bytes is larger than {MAX_PAYLOAD}")]
    TooLarge(usize),
    /// An earlier write or sync of the log failed: nothing after it can be
    /// acknowledged.
    #[error("write log failed earlier: {0}")]
    Failed(String),
}

/// How the log has been used since it was opened.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WalStats {
    pub records: u64,
    pub syncs: u64,
    pub bytes: u64,
}

struct Segment {
    first_seq: u64,
    path: PathBuf,
    bytes: u64,
    /// Its format ([`VERSION`], or an older one being read out).
    version: u32,
}

struct State {
    /// The sequence number the next append gets.
    next_seq: u64,
    /// Every record below this is on stable storage.
    durable: u64,
    /// Every record below this has been applied to the export.
    applied: u64,
    /// Encoded records not yet written, and the sequence after the last.
    pending: Vec<u8>,
    pending_end: u64,
    /// An append's leader is writing and syncing.
    syncing: bool,
    failed: Option<String>,
    segments: VecDeque<Segment>,
    current: std::sync::Arc<File>,
    /// Segments written whole, ready to be renamed into the next one.
    spares: Vec<PathBuf>,
    /// The number the next spare's name gets.
    spare_no: u64,
    total_bytes: u64,
    stats: WalStats,
}

impl State {
    /// A name for a new spare in `dir`.
    fn spare_path(&mut self, dir: &Path) -> PathBuf {
        self.spare_no += 1;
        dir.join(format!("spare-{}.seg", self.spare_no - 1))
    }
}

pub struct Wal {
    cfg: WalConfig,
    state: Mutex<State>,
    changed: Condvar,
}

impl std::fmt::Debug for Wal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Wal({})", self.cfg.dir.display())
    }
}

/// The checksum of record `seq` with this payload, in segments of
/// `version`. It detects torn and damaged records; nothing here needs a
/// cryptographic hash (the log is as trusted as the export's disk).
fn checksum(version: u32, seq: u64, payload: &[&[u8]]) -> [u8; 8] {
    if version == VERSION_BLAKE3 {
        let mut h = blake3::Hasher::new();
        h.update(&seq.to_be_bytes());
        for p in payload {
            h.update(p);
        }
        let mut out = [0u8; 8];
        out.copy_from_slice(&h.finalize().as_bytes()[..8]);
        return out;
    }
    let mut h = xxhash_rust::xxh3::Xxh3::with_seed(seq);
    for p in payload {
        h.update(p);
    }
    h.digest().to_be_bytes()
}

/// Encodes the record whose payload is the concatenation of `parts`.
fn encode(out: &mut Vec<u8>, seq: u64, parts: &[&[u8]]) {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    out.extend_from_slice(&(len as u32).to_be_bytes());
    out.extend_from_slice(&checksum(VERSION, seq, parts));
    out.extend_from_slice(&seq.to_be_bytes());
    for p in parts {
        out.extend_from_slice(p);
    }
}

/// The record at the start of `b`, if whole and sound and its sequence
/// number is one `want` accepts (checked before the checksum, so that
/// scanning garbage for records stays cheap): (seq, payload, its encoded
/// length).
fn decode(b: &[u8], version: u32, want: impl Fn(u64) -> bool) -> Option<(u64, &[u8], usize)> {
    let head = b.get(..RECORD_HEAD)?;
    let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
    if len > MAX_PAYLOAD {
        return None;
    }
    let sum = &head[4..12];
    let seq = u64::from_be_bytes(head[12..20].try_into().ok()?);
    if !want(seq) {
        return None;
    }
    let payload = b.get(RECORD_HEAD..RECORD_HEAD + len)?;
    (checksum(version, seq, &[payload]) == sum).then_some((seq, payload, RECORD_HEAD + len))
}

fn segment_name(first_seq: u64) -> String {
    format!("wal-{first_seq:020}.seg")
}

/// This log's segment header.
fn header(cfg: &WalConfig) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_be_bytes());
    h[16..32].copy_from_slice(&cfg.identity);
    h
}

/// Writes an empty segment of this log at `path`, whole (its header, then
/// zeros to the segment size), durably (not its name).
fn whole_segment(cfg: &WalConfig, path: &Path) -> io::Result<()> {
    let mut f = OpenOptions::new().create_new(true).write(true).open(path)?;
    f.write_all(&header(cfg))?;
    let chunk = vec![0u8; 1 << 20];
    let mut left = cfg.segment_bytes.saturating_sub(HEADER as u64);
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    f.sync_all()
}

/// The format of the segment at `path`, if it has a header.
fn segment_version(path: &Path) -> io::Result<Option<u32>> {
    let mut h = [0u8; 12];
    match File::open(path)?.read_exact(&mut h) {
        Ok(()) => Ok((&h[..8] == MAGIC).then(|| u32::from_be_bytes([h[8], h[9], h[10], h[11]]))),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(e),
    }
}

/// Creates segment `first_seq` with its header, durably (file and name):
/// from `spare` if there is one, else written whole now.
fn new_segment(
    cfg: &WalConfig,
    first_seq: u64,
    spare: Option<PathBuf>,
) -> io::Result<(File, Segment)> {
    let path = cfg.dir.join(segment_name(first_seq));
    // A spare is whole and carries this log's header (written so, or an
    // applied segment of this log): renamed, it is a sound empty segment
    // at every instant. A new one is written under a temporary name and
    // renamed once whole (a crash meanwhile leaves a file that recovery
    // deletes, not a segment without header).
    let from = match spare {
        Some(sp) => sp,
        None => {
            let tmp = cfg.dir.join(NEW_SEGMENT);
            let _ = fs::remove_file(&tmp);
            whole_segment(cfg, &tmp)?;
            tmp
        }
    };
    fs::rename(&from, &path)?;
    let f = OpenOptions::new().read(true).write(true).open(&path)?;
    sync_dir(&cfg.dir)?;
    let seg = Segment {
        first_seq,
        path,
        bytes: HEADER as u64,
        version: VERSION,
    };
    Ok((f, seg))
}

impl Wal {
    /// Opens the log in `cfg.dir` (creating it), and returns the records
    /// it holds, in order, for the caller to apply again before anything
    /// else. A torn tail is left for the next append; damage refuses the
    /// log.
    pub fn open(mut cfg: WalConfig) -> Result<(Wal, Vec<Record>), WalError> {
        // Room for the current segment and a full one being applied.
        cfg.capacity_bytes = cfg.capacity_bytes.max(cfg.segment_bytes * 2);
        crate::durable::create_dir_all(&cfg.dir)?;
        let mut names: Vec<(u64, PathBuf)> = Vec::new();
        let mut spares = Vec::new();
        let mut spare_no = 0;
        for e in fs::read_dir(&cfg.dir)? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            if name == NEW_SEGMENT {
                fs::remove_file(e.path())?;
                continue;
            }
            if let Some(n) = name
                .strip_prefix("spare-")
                .and_then(|n| n.strip_suffix(".seg"))
                .and_then(|n| n.parse::<u64>().ok())
            {
                // Only a spare written whole is one (a crash may cut one
                // short while it is made), and of this format.
                if e.metadata()?.len() == cfg.segment_bytes
                    && spares.len() < SPARES
                    && segment_version(&e.path())? == Some(VERSION)
                {
                    spares.push(e.path());
                    spare_no = spare_no.max(n + 1);
                } else {
                    fs::remove_file(e.path())?;
                }
                continue;
            }
            let Some(n) = name
                .strip_prefix("wal-")
                .and_then(|n| n.strip_suffix(".seg"))
            else {
                continue;
            };
            let first = n.parse::<u64>().map_err(|_| WalError::Damaged {
                path: e.path(),
                offset: 0,
                why: "segment name is not a sequence number".into(),
            })?;
            names.push((first, e.path()));
        }
        names.sort();
        let mut records = Vec::new();
        let mut segments = VecDeque::new();
        let mut expect: Option<u64> = None;
        let last = names.len().saturating_sub(1);
        for (i, (first, path)) in names.into_iter().enumerate() {
            let mut b = Vec::new();
            File::open(&path)?.read_to_end(&mut b)?;
            let damaged = |offset: usize, why: &str| WalError::Damaged {
                path: path.clone(),
                offset: offset as u64,
                why: why.into(),
            };
            // A segment gets its name only once whole (`new_segment`): a
            // short one or one without header is damage.
            if b.len() < HEADER || &b[..8] != MAGIC {
                return Err(damaged(0, "not a segment header"));
            }
            let version = u32::from_be_bytes(b[8..12].try_into().unwrap_or_default());
            if version != VERSION && version != VERSION_BLAKE3 {
                return Err(damaged(8, "unknown version"));
            }
            if b[16..32] != cfg.identity {
                return Err(WalError::Foreign(path));
            }
            if expect.is_some_and(|e| e != first) {
                return Err(damaged(0, "sequence gap between segments"));
            }
            let mut at = HEADER;
            let mut seq = first;
            while at < b.len() {
                match decode(&b[at..], version, |s| s == seq) {
                    Some((s, payload, n)) => {
                        records.push(Record {
                            seq: s,
                            payload: Bytes::copy_from_slice(payload),
                        });
                        seq += 1;
                        at += n;
                    }
                    None => {
                        // The segment's end: zeros or a spare's older
                        // records follow, or a torn record (a crash during
                        // an append never acknowledged; the next append
                        // overwrites it). In the last segment, a sound
                        // record of the next million sequence numbers after
                        // it means damage instead; in another, the next
                        // segment must start where this one ended.
                        if i == last {
                            let near = |s: u64| s >= seq && s - seq < 1 << 20;
                            if (at + 1..b.len()).any(|j| decode(&b[j..], version, near).is_some()) {
                                return Err(damaged(at, "bad record before sound ones"));
                            }
                            if b[at..].iter().take(RECORD_HEAD).any(|&x| x != 0) {
                                tracing::debug!(
                                    segment = %path.display(),
                                    offset = at,
                                    "write log: ends before bytes that are no record of it"
                                );
                            }
                        }
                        b.truncate(at);
                        break;
                    }
                }
            }
            expect = Some(seq);
            segments.push_back(Segment {
                first_seq: first,
                path,
                bytes: b.len() as u64,
                version,
            });
        }
        let next_seq = expect.unwrap_or(1);
        // Appends go on in the last segment if it is of this format, else
        // in a new one.
        let current = std::sync::Arc::new(match segments.back() {
            Some(s) if s.version == VERSION => {
                OpenOptions::new().read(true).write(true).open(&s.path)?
            }
            _ => {
                let (f, seg) = new_segment(&cfg, next_seq, spares.pop())?;
                segments.push_back(seg);
                f
            }
        });
        let total_bytes = segments.iter().map(|s| s.bytes).sum();
        let applied = segments.front().map_or(next_seq, |s| s.first_seq);
        let wal = Wal {
            cfg,
            state: Mutex::new(State {
                next_seq,
                durable: next_seq,
                applied,
                pending: Vec::new(),
                pending_end: next_seq,
                syncing: false,
                failed: None,
                segments,
                current,
                spares,
                spare_no,
                total_bytes,
                stats: WalStats::default(),
            }),
            changed: Condvar::new(),
        };
        Ok((wal, records))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wait<'a>(&self, s: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        // A timeout only guards against a lost wake-up; every change
        // notifies.
        self.changed
            .wait_timeout(s, Duration::from_millis(100))
            .map(|(g, _)| g)
            .unwrap_or_else(|p| p.into_inner().0)
    }

    /// Appends one record and returns its sequence number once it is on
    /// stable storage. Blocks: the first of concurrent appenders writes
    /// and syncs what all of them queued, the others wait for that.
    pub fn append(&self, payload: &[u8]) -> Result<u64, WalError> {
        let seq = self.enqueue(payload)?;
        self.sync(seq)?;
        Ok(seq)
    }

    /// Queues one record and returns its sequence number at once, without
    /// waiting for it to be stable ([`Wal::sync`] does), but for room:
    /// while the log is at its capacity this blocks (back-pressure).
    /// Records are written in the order they are queued.
    pub fn enqueue(&self, payload: &[u8]) -> Result<u64, WalError> {
        self.enqueue_parts(&[payload])
    }

    /// [`Wal::enqueue`] of the record whose payload is `parts` one after
    /// the other (a header and data, copied once).
    pub fn enqueue_parts(&self, parts: &[&[u8]]) -> Result<u64, WalError> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > MAX_PAYLOAD {
            return Err(WalError::TooLarge(len));
        }
        let need = (RECORD_HEAD + len) as u64;
        let mut s = self.lock();
        // Back-pressure: wait for room (a log holding nothing unapplied
        // takes any one record).
        while s.failed.is_none()
            && s.total_bytes + s.pending.len() as u64 + need > self.cfg.capacity_bytes
            && s.applied < s.next_seq
        {
            s = self.wait(s);
        }
        if let Some(why) = &s.failed {
            return Err(WalError::Failed(why.clone()));
        }
        let seq = s.next_seq;
        s.next_seq += 1;
        encode(&mut s.pending, seq, parts);
        s.pending_end = seq + 1;
        Ok(seq)
    }

    /// Returns once record `seq` (and so every one before it) is on stable
    /// storage: leads a write and sync of everything queued if none is
    /// under way, else waits for the one that is.
    pub fn sync(&self, seq: u64) -> Result<(), WalError> {
        let mut s = self.lock();
        loop {
            if let Some(why) = &s.failed {
                return Err(WalError::Failed(why.clone()));
            }
            if s.durable > seq {
                return Ok(());
            }
            if seq >= s.next_seq {
                // Never queued: nothing to wait for.
                return Ok(());
            }
            if s.syncing {
                s = self.wait(s);
                continue;
            }
            s = self.lead(s);
        }
    }

    /// The sequence number the next record will get: every record below it
    /// has been queued.
    pub fn next_seq(&self) -> u64 {
        self.lock().next_seq
    }

    /// Writes and syncs everything queued, as the group's leader.
    fn lead<'a>(&'a self, mut s: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        s.syncing = true;
        let batch = std::mem::take(&mut s.pending);
        let end = s.pending_end;
        let first = s.durable;
        let at = s.segments.back().map_or(HEADER as u64, |seg| seg.bytes);
        let rotate = at > HEADER as u64 && at + batch.len() as u64 > self.cfg.segment_bytes;
        let file = (!rotate).then(|| s.current.clone());
        let spare = if rotate { s.spares.pop() } else { None };
        drop(s);
        let written = (|| -> io::Result<Option<(std::sync::Arc<File>, Segment)>> {
            use std::os::unix::fs::FileExt;
            let (f, seg, at) = match file {
                Some(f) => (f, None, at),
                None => {
                    let (f, seg) = new_segment(&self.cfg, first, spare)?;
                    (std::sync::Arc::new(f), Some(seg), HEADER as u64)
                }
            };
            f.write_all_at(&batch, at)?;
            f.sync_data()?;
            Ok(seg.map(|seg| (f, seg)))
        })();
        let mut s = self.lock();
        s.syncing = false;
        match written {
            Ok(new) => {
                if let Some((f, seg)) = new {
                    s.current = f;
                    s.segments.push_back(seg);
                }
                if let Some(seg) = s.segments.back_mut() {
                    seg.bytes += batch.len() as u64;
                }
                s.total_bytes += batch.len() as u64;
                s.durable = end;
                s.stats.records += end - first;
                s.stats.syncs += 1;
                s.stats.bytes += batch.len() as u64;
            }
            Err(e) => {
                tracing::error!("write log {}: {e}", self.cfg.dir.display());
                s.failed = Some(e.to_string());
            }
        }
        self.changed.notify_all();
        s
    }

    /// Every record below `upto` has been applied to the export: segments
    /// holding only such records are deleted, making room.
    pub fn applied(&self, upto: u64) -> Result<(), WalError> {
        let mut s = self.lock();
        if upto <= s.applied {
            return Ok(());
        }
        s.applied = upto.min(s.durable);
        // A segment is done once the next one starts at or below `applied`;
        // the last (current) one stays.
        let mut gone = Vec::new();
        while s.segments.len() > 1 && s.segments[1].first_seq <= s.applied {
            if let Some(seg) = s.segments.pop_front() {
                s.total_bytes -= seg.bytes;
                gone.push((seg.path, seg.version));
            }
        }
        // Each goes, or becomes a spare (its new name) while there is room
        // for one; a segment that grew past its size (a record larger than
        // it) is no spare.
        let mut room = SPARES.saturating_sub(s.spares.len());
        let mut moves = Vec::new();
        for (p, version) in gone {
            let whole = version == VERSION
                && fs::metadata(&p).is_ok_and(|m| m.len() == self.cfg.segment_bytes);
            let to = (room > 0 && whole).then(|| {
                room -= 1;
                s.spare_path(&self.cfg.dir)
            });
            moves.push((p, to));
        }
        drop(s);
        for (from, to) in &moves {
            match to {
                Some(to) => fs::rename(from, to)?,
                None => fs::remove_file(from)?,
            }
        }
        if !moves.is_empty() {
            sync_dir(&self.cfg.dir)?;
            let mut s = self.lock();
            s.spares.extend(moves.into_iter().filter_map(|(_, to)| to));
        }
        self.changed.notify_all();
        Ok(())
    }

    /// Writes a spare segment now if none is ready, so that the next
    /// rotation does not write one while appends wait (blocking; call from
    /// a thread of its own, such as the one applying the log).
    pub fn prepare_spare(&self) -> Result<(), WalError> {
        let path = {
            let mut s = self.lock();
            if !s.spares.is_empty() {
                return Ok(());
            }
            s.spare_path(&self.cfg.dir)
        };
        whole_segment(&self.cfg, &path)?;
        sync_dir(&self.cfg.dir)?;
        self.lock().spares.push(path);
        Ok(())
    }

    pub fn stats(&self) -> WalStats {
        self.lock().stats
    }

    /// The most the log holds before appends wait.
    pub fn capacity(&self) -> u64 {
        self.cfg.capacity_bytes
    }

    /// Bytes in the log's segments.
    pub fn bytes(&self) -> u64 {
        self.lock().total_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn cfg(dir: &Path) -> WalConfig {
        WalConfig {
            dir: dir.join("log"),
            identity: [7; 16],
            segment_bytes: 4096,
            capacity_bytes: 1 << 20,
        }
    }

    fn payloads(r: &[Record]) -> Vec<Vec<u8>> {
        r.iter().map(|r| r.payload.to_vec()).collect()
    }

    #[test]
    fn records_come_back_in_order_across_segments() {
        let d = tempfile::tempdir().unwrap();
        let (w, old) = Wal::open(cfg(d.path())).unwrap();
        assert!(old.is_empty());
        let want: Vec<Vec<u8>> = (0..100u32)
            .map(|i| vec![i as u8; 100 + i as usize])
            .collect();
        for (i, p) in want.iter().enumerate() {
            assert_eq!(w.append(p).unwrap(), i as u64 + 1);
        }
        drop(w);
        let (w, got) = Wal::open(cfg(d.path())).unwrap();
        assert_eq!(payloads(&got), want);
        assert!(got.windows(2).all(|p| p[1].seq == p[0].seq + 1));
        let segs = fs::read_dir(d.path().join("log")).unwrap().count();
        assert!(segs > 3, "{segs} segments");
        // Appends go on after the last record.
        assert_eq!(w.append(b"more").unwrap(), 101);
    }

    /// A log written by a build of format 1 (BLAKE3 checksums): its
    /// records are replayed, appends go to a new segment of this format,
    /// and the old segment, once applied, is deleted rather than reused.
    #[test]
    fn a_log_of_the_previous_format_is_replayed_then_retired() {
        let d = tempfile::tempdir().unwrap();
        let c = cfg(d.path());
        fs::create_dir_all(&c.dir).unwrap();
        let mut seg = header(&c).to_vec();
        seg[8..12].copy_from_slice(&VERSION_BLAKE3.to_be_bytes());
        for seq in 1..=3u64 {
            let p = vec![seq as u8; 50];
            seg.extend_from_slice(&(p.len() as u32).to_be_bytes());
            seg.extend_from_slice(&checksum(VERSION_BLAKE3, seq, &[&p]));
            seg.extend_from_slice(&seq.to_be_bytes());
            seg.extend_from_slice(&p);
        }
        seg.resize(c.segment_bytes as usize, 0);
        let old = c.dir.join(segment_name(1));
        fs::write(&old, &seg).unwrap();
        // A spare of the old format is not one.
        fs::write(c.dir.join("spare-0.seg"), &seg).unwrap();
        // Read as this format, the same records are damage-free garbage:
        // the checksums differ.
        assert_ne!(
            checksum(VERSION, 1, &[&[1; 50]]),
            checksum(VERSION_BLAKE3, 1, &[&[1; 50]])
        );

        let (w, got) = Wal::open(c.clone()).unwrap();
        assert_eq!(
            payloads(&got),
            vec![vec![1u8; 50], vec![2; 50], vec![3; 50]]
        );
        assert!(
            !c.dir.join("spare-0.seg").exists(),
            "an old-format spare was kept"
        );
        assert_eq!(w.append(b"new").unwrap(), 4);
        assert_eq!(
            segment_version(&c.dir.join(segment_name(4))).unwrap(),
            Some(VERSION)
        );
        assert_eq!(segment_version(&old).unwrap(), Some(VERSION_BLAKE3));
        drop(w);

        let (w, got) = Wal::open(c.clone()).unwrap();
        assert_eq!(got.len(), 4);
        assert_eq!(got[3].payload.as_ref(), b"new");
        w.applied(5).unwrap();
        assert!(!old.exists(), "the applied old segment is still there");
        assert!(
            w.lock().spares.is_empty(),
            "an old-format segment became a spare"
        );
        assert_eq!(w.append(b"after").unwrap(), 5);
        drop(w);
        let (_, got) = Wal::open(c).unwrap();
        assert_eq!(payloads(&got).last().unwrap(), b"after");
    }

    #[test]
    fn a_torn_tail_is_never_replayed_and_damage_refuses_the_log() {
        let d = tempfile::tempdir().unwrap();
        let (w, _) = Wal::open(cfg(d.path())).unwrap();
        for i in 0..5u8 {
            w.append(&[i; 50]).unwrap();
        }
        drop(w);
        let seg = d.path().join("log").join(segment_name(1));
        let whole = fs::read(&seg).unwrap();
        assert_eq!(
            whole.len() as u64,
            cfg(d.path()).segment_bytes,
            "written whole"
        );
        // A crash in the middle of a sixth append: half a record.
        let used = HEADER + 5 * (RECORD_HEAD + 50);
        let mut torn = whole.clone();
        let mut extra = Vec::new();
        encode(&mut extra, 6, &[&[6; 50]]);
        torn[used..used + 30].copy_from_slice(&extra[..30]);
        fs::write(&seg, &torn).unwrap();
        let (w, got) = Wal::open(cfg(d.path())).unwrap();
        assert_eq!(got.len(), 5);
        // The next append takes its place.
        assert_eq!(w.append(&[9; 10]).unwrap(), 6);
        drop(w);
        let (_, got) = Wal::open(cfg(d.path())).unwrap();
        assert_eq!(got.len(), 6);
        assert_eq!(&got[5].payload[..], &[9; 10]);
        // A flipped bit in the middle, with sound records after it.
        let mut bad = fs::read(&seg).unwrap();
        bad[HEADER + RECORD_HEAD + 3] ^= 1;
        fs::write(&seg, &bad).unwrap();
        match Wal::open(cfg(d.path())) {
            Err(WalError::Damaged { .. }) => {}
            other => panic!("damaged log opened: {:?}", other.map(|(_, r)| r.len())),
        }
        // Another export's log.
        fs::write(&seg, &whole).unwrap();
        let mut other = cfg(d.path());
        other.identity = [8; 16];
        assert!(matches!(Wal::open(other), Err(WalError::Foreign(_))));
    }

    /// Applied segments come back as spares and are reused, never more
    /// than [`SPARES`] kept, and their old records are never read again.
    #[test]
    fn applied_segments_are_reused_and_their_old_records_stay_dead() {
        let d = tempfile::tempdir().unwrap();
        let c = cfg(d.path());
        let (w, _) = Wal::open(c.clone()).unwrap();
        let files = || fs::read_dir(d.path().join("log")).unwrap().count();
        let mut last = 0;
        for round in 0..20u64 {
            for _ in 0..20 {
                last = w.append(&[round as u8; 300]).unwrap();
            }
            w.applied(last + 1).unwrap();
            assert!(files() <= 2 + SPARES, "{} files", files());
        }
        assert!(!w.lock().spares.is_empty(), "no segment became a spare");
        for i in 0..5u8 {
            w.append(&[100 + i; 300]).unwrap();
        }
        drop(w);
        // Records of the current segment come back, applied or not (the
        // caller's marks say which to skip); none of a reused one's past.
        let (_, got) = Wal::open(c).unwrap();
        assert_eq!(got.last().unwrap().seq, last + 5);
        assert!(got.windows(2).all(|p| p[1].seq == p[0].seq + 1));
        for r in &got {
            let want = if r.seq <= last {
                ((r.seq - 1) / 20) as u8
            } else {
                100 + (r.seq - last - 1) as u8
            };
            assert_eq!(r.payload[0], want, "record {}", r.seq);
        }
    }

    /// A crash while a segment or a spare is written leaves files that are
    /// no segments: recovery deletes them and the log opens.
    #[test]
    fn half_made_segments_and_spares_are_dropped() {
        let d = tempfile::tempdir().unwrap();
        let c = cfg(d.path());
        let (w, _) = Wal::open(c.clone()).unwrap();
        w.append(b"one").unwrap();
        drop(w);
        let log = d.path().join("log");
        fs::write(log.join(NEW_SEGMENT), vec![0u8; 100]).unwrap();
        fs::write(log.join("spare-7.seg"), vec![0u8; 100]).unwrap();
        let (w, got) = Wal::open(c).unwrap();
        assert_eq!(payloads(&got), vec![b"one".to_vec()]);
        assert!(!log.join(NEW_SEGMENT).exists());
        assert!(!log.join("spare-7.seg").exists());
        assert_eq!(w.append(b"two").unwrap(), 2);
        // A spare made ahead carries this log's header, so that the
        // instant it is renamed into a segment it is a sound one.
        w.prepare_spare().unwrap();
        let spare = w.lock().spares[0].clone();
        assert_eq!(fs::read(spare).unwrap()[..HEADER], header(&cfg(d.path())));
    }

    #[test]
    fn concurrent_appends_share_syncs_and_all_are_durable() {
        let d = tempfile::tempdir().unwrap();
        let mut c = cfg(d.path());
        c.segment_bytes = 1 << 20;
        let (w, _) = Wal::open(c.clone()).unwrap();
        let w = Arc::new(w);
        let threads: Vec<_> = (0..8u8)
            .map(|t| {
                let w = w.clone();
                std::thread::spawn(move || {
                    (0..200u32)
                        .map(|i| w.append(&[t, (i % 256) as u8, 1, 2, 3]).unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut seqs: Vec<u64> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        seqs.sort();
        assert_eq!(seqs, (1..=1600).collect::<Vec<_>>());
        let st = w.stats();
        assert_eq!(st.records, 1600);
        assert!(st.syncs < 1600, "{st:?}: no two appends shared a sync");
        drop(w);
        let (_, got) = Wal::open(c).unwrap();
        assert_eq!(got.len(), 1600);
    }

    #[test]
    fn applied_segments_go_and_a_full_log_waits_for_room() {
        let d = tempfile::tempdir().unwrap();
        let mut c = cfg(d.path());
        // Segments of four 220-byte records (912 bytes); three fit, not a
        // thirteenth record.
        c.segment_bytes = 1024;
        c.capacity_bytes = 2800;
        let (w, _) = Wal::open(c.clone()).unwrap();
        let w = Arc::new(w);
        for i in 0..12u8 {
            w.append(&[i; 200]).unwrap();
        }
        // Full: the next append waits until records are applied.
        let w2 = w.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            let r = w2.append(&[99; 200]);
            tx.send(()).unwrap();
            r
        });
        // 300 ms for a wrong append to show: a slow machine can only make
        // this miss one, never fail a log that waits.
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "append went past the capacity ({} bytes held)",
            w.bytes()
        );
        w.applied(13).unwrap();
        rx.recv_timeout(Duration::from_secs(30))
            .expect("append still waiting after the log was applied");
        assert_eq!(t.join().unwrap().unwrap(), 13);
        assert!(w.bytes() <= c.capacity_bytes, "{}", w.bytes());
        drop(w);
        // Only what was not applied, and what followed, comes back.
        let (_, got) = Wal::open(c).unwrap();
        assert!(
            got.iter().all(|r| r.seq >= 9),
            "{:?}",
            got.iter().map(|r| r.seq).collect::<Vec<_>>()
        );
        assert_eq!(got.last().map(|r| r.seq), Some(13));
    }
}
