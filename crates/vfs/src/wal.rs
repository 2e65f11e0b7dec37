//! The write log (issue 11, point 4): records appended in order to
//! segment files on a log device, each append acknowledged only once it is
//! on stable storage, many concurrent appends sharing one `fdatasync`
//! (group commit). What the records mean is the caller's business; this
//! module keeps them safe and hands them back after a crash.
//!
//! Not yet wired to the server: the backend that logs stable WRITEs,
//! COMMITs and metadata changes, applies them in the background and shows
//! logged but unapplied changes to reads comes next.
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
//! tail (a crash during an append that was never acknowledged): it is cut
//! off, never replayed. A bad record with a good one after it, a gap in the
//! sequence, a segment of another export or of an unknown version is
//! damage: the log is refused, loudly, rather than replayed wrong.
//!
//! Space. Segments wholly applied ([`Wal::applied`]) are deleted. An append
//! that would take the log past its capacity waits until enough is applied
//! (back-pressure on the writers, never an unbounded log).

use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;

const MAGIC: &[u8; 8] = b"FERRWAL\0";
const VERSION: u32 = 1;
const HEADER: usize = 32;
/// Length, checksum and sequence number before each payload.
const RECORD_HEAD: usize = 4 + 8 + 8;
/// The largest payload a record may carry.
pub const MAX_PAYLOAD: usize = 8 << 20;

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
    total_bytes: u64,
    stats: WalStats,
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

fn checksum(seq: u64, payload: &[u8]) -> [u8; 8] {
    let mut h = blake3::Hasher::new();
    h.update(&seq.to_be_bytes());
    h.update(payload);
    let mut out = [0u8; 8];
    out.copy_from_slice(&h.finalize().as_bytes()[..8]);
    out
}

fn encode(out: &mut Vec<u8>, seq: u64, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(&checksum(seq, payload));
    out.extend_from_slice(&seq.to_be_bytes());
    out.extend_from_slice(payload);
}

/// The record at the start of `b`, if whole and sound and its sequence
/// number is one `want` accepts (checked before the checksum, so that
/// scanning garbage for records stays cheap): (seq, payload, its encoded
/// length).
fn decode(b: &[u8], want: impl Fn(u64) -> bool) -> Option<(u64, &[u8], usize)> {
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
    (checksum(seq, payload) == sum).then_some((seq, payload, RECORD_HEAD + len))
}

fn segment_name(first_seq: u64) -> String {
    format!("wal-{first_seq:020}.seg")
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Creates segment `first_seq` with its header, durably (file and name).
fn new_segment(cfg: &WalConfig, first_seq: u64) -> io::Result<(File, Segment)> {
    let path = cfg.dir.join(segment_name(first_seq));
    let mut f = OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(&path)?;
    let mut h = [0u8; HEADER];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_be_bytes());
    h[16..32].copy_from_slice(&cfg.identity);
    f.write_all(&h)?;
    f.sync_all()?;
    sync_dir(&cfg.dir)?;
    let seg = Segment {
        first_seq,
        path,
        bytes: HEADER as u64,
    };
    Ok((f, seg))
}

impl Wal {
    /// Opens the log in `cfg.dir` (creating it), and returns the records
    /// it holds, in order, for the caller to apply again before anything
    /// else. A torn tail is cut off; damage refuses the log.
    pub fn open(mut cfg: WalConfig) -> Result<(Wal, Vec<Record>), WalError> {
        // Room for the current segment and a full one being applied.
        cfg.capacity_bytes = cfg.capacity_bytes.max(cfg.segment_bytes * 2);
        if !cfg.dir.is_dir() {
            fs::create_dir_all(&cfg.dir)?;
            if let Some(parent) = cfg.dir.parent() {
                sync_dir(parent)?;
            }
        }
        let mut names: Vec<(u64, PathBuf)> = Vec::new();
        for e in fs::read_dir(&cfg.dir)? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
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
            if b.len() < HEADER || &b[..8] != MAGIC {
                if i == last && b.len() < HEADER && MAGIC.starts_with(&b[..b.len().min(8)]) {
                    // Created, then cut short by the crash before its
                    // header was synced: it never held a record.
                    fs::remove_file(&path)?;
                    continue;
                }
                return Err(damaged(0, "not a segment header"));
            }
            if u32::from_be_bytes(b[8..12].try_into().unwrap_or_default()) != VERSION {
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
                match decode(&b[at..], |s| s == seq) {
                    Some((s, payload, n)) => {
                        records.push(Record {
                            seq: s,
                            payload: Bytes::copy_from_slice(payload),
                        });
                        seq += 1;
                        at += n;
                    }
                    None => {
                        // A torn tail only if nothing sound follows it, in
                        // the last segment (a record of the next million
                        // sequence numbers anywhere after it is damage).
                        let near = |s: u64| s >= seq && s - seq < 1 << 20;
                        let later = (at + 1..b.len()).any(|j| decode(&b[j..], near).is_some());
                        if i != last || later {
                            return Err(damaged(at, "bad record before sound ones"));
                        }
                        let f = OpenOptions::new().write(true).open(&path)?;
                        f.set_len(at as u64)?;
                        f.sync_all()?;
                        tracing::warn!(
                            segment = %path.display(),
                            offset = at,
                            discarded = b.len() - at,
                            "write log: torn tail of an unacknowledged append cut off"
                        );
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
            });
        }
        let next_seq = expect.unwrap_or(1);
        let current = std::sync::Arc::new(match segments.back() {
            Some(s) => OpenOptions::new().append(true).open(&s.path)?,
            None => {
                let (f, seg) = new_segment(&cfg, next_seq)?;
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
        if payload.len() > MAX_PAYLOAD {
            return Err(WalError::TooLarge(payload.len()));
        }
        let need = (RECORD_HEAD + payload.len()) as u64;
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
        encode(&mut s.pending, seq, payload);
        s.pending_end = seq + 1;
        loop {
            if let Some(why) = &s.failed {
                return Err(WalError::Failed(why.clone()));
            }
            if s.durable > seq {
                return Ok(seq);
            }
            if s.syncing {
                s = self.wait(s);
                continue;
            }
            s = self.lead(s);
        }
    }

    /// Writes and syncs everything queued, as the group's leader.
    fn lead<'a>(&'a self, mut s: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        s.syncing = true;
        let batch = std::mem::take(&mut s.pending);
        let end = s.pending_end;
        let first = s.durable;
        let rotate = s.segments.back().is_some_and(|seg| {
            seg.bytes > HEADER as u64 && seg.bytes + batch.len() as u64 > self.cfg.segment_bytes
        });
        let file = (!rotate).then(|| s.current.clone());
        drop(s);
        let written = (|| -> io::Result<Option<(std::sync::Arc<File>, Segment)>> {
            let (f, seg) = match file {
                Some(f) => (f, None),
                None => {
                    let (f, seg) = new_segment(&self.cfg, first)?;
                    (std::sync::Arc::new(f), Some(seg))
                }
            };
            (&*f).write_all(&batch)?;
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
                gone.push(seg.path);
            }
        }
        drop(s);
        for p in &gone {
            fs::remove_file(p)?;
        }
        if !gone.is_empty() {
            sync_dir(&self.cfg.dir)?;
        }
        self.changed.notify_all();
        Ok(())
    }

    pub fn stats(&self) -> WalStats {
        self.lock().stats
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

    #[test]
    fn a_torn_tail_is_cut_off_and_damage_refuses_the_log() {
        let d = tempfile::tempdir().unwrap();
        let (w, _) = Wal::open(cfg(d.path())).unwrap();
        for i in 0..5u8 {
            w.append(&[i; 50]).unwrap();
        }
        drop(w);
        let seg = d.path().join("log").join(segment_name(1));
        let whole = fs::read(&seg).unwrap();
        // A crash in the middle of a sixth append: half a record.
        let mut torn = whole.clone();
        let mut extra = Vec::new();
        encode(&mut extra, 6, &[6; 50]);
        torn.extend_from_slice(&extra[..30]);
        fs::write(&seg, &torn).unwrap();
        let (w, got) = Wal::open(cfg(d.path())).unwrap();
        assert_eq!(got.len(), 5);
        assert_eq!(fs::read(&seg).unwrap(), whole, "tail cut off on disk");
        assert_eq!(w.append(&[9; 10]).unwrap(), 6);
        drop(w);
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
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "append went past the capacity ({} bytes held)",
            w.bytes()
        );
        w.applied(13).unwrap();
        rx.recv_timeout(Duration::from_secs(5))
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
