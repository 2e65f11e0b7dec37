use super::*;
use vfs::local::LocalFs;
use vfs::{CreateMode, SetAttr};

struct Setup {
    _tmp: tempfile::TempDir,
    export: PathBuf,
    cfg: LogConfig,
}

fn setup() -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let export = tmp.path().join("export");
    std::fs::create_dir(&export).unwrap();
    let cfg = LogConfig {
        dir: tmp.path().join("log"),
        capacity_bytes: 8 << 20,
    };
    Setup {
        _tmp: tmp,
        export,
        cfg,
    }
}

fn fs_of(s: &Setup) -> Arc<dyn Vfs> {
    Arc::new(LocalFs::new(&s.export).unwrap())
}

fn create(fs: &Arc<dyn Vfs>, name: &str) -> Handle {
    let root = fs.root();
    let set = SetAttr::default();
    fs.create_file(
        &Creds::root(),
        &root,
        name.as_bytes(),
        CreateMode::Guarded,
        &set,
    )
    .unwrap()
    .0
}

/// An export with file "f" and a write log.
fn with_log() -> (Setup, Arc<dyn Vfs>, Handle, Arc<WriteLog>) {
    let s = setup();
    let fs = fs_of(&s);
    let h = create(&fs, "f");
    let log = WriteLog::open(&s.cfg, fs.clone()).unwrap();
    (s, fs, h, log)
}

/// What a power loss leaves: the log as it is on disk, and no thread of
/// the old instance applying it any more.
fn crash(log: Arc<WriteLog>) {
    log.halt();
}

fn logged_write(log: &WriteLog, h: &Handle, offset: u64, data: &[u8]) {
    log.write(&Creds::root(), h, offset, data).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(log.durable()).unwrap();
}

/// Overwrites file "f" with `content` while the log is closed, reopens
/// the log, and checks that it replayed nothing over `content`.
fn reopen_replays_nothing_over(s: &Setup, content: &[u8]) {
    std::fs::write(s.export.join("f"), content).unwrap();
    let log = WriteLog::open(&s.cfg, fs_of(s)).unwrap();
    assert_eq!(log.stats().replayed, 0);
    assert_eq!(std::fs::read(s.export.join("f")).unwrap(), content);
}

/// A file whose acknowledged writes the export lost (the page cache at a
/// power loss; here the file is cut back by hand) gets them back from
/// the log before anything is served.
#[test]
fn replay_restores_acknowledged_writes() {
    let (s, _, h, log) = with_log();
    logged_write(&log, &h, 0, &[1; 4096]);
    logged_write(&log, &h, 8192, &[2; 100]);
    crash(log);
    std::fs::write(s.export.join("f"), b"").unwrap();
    let log = WriteLog::open(&s.cfg, fs_of(&s)).unwrap();
    let got = std::fs::read(s.export.join("f")).unwrap();
    assert_eq!(got.len(), 8292);
    assert!(got[..4096].iter().all(|&b| b == 1));
    assert!(got[4096..8192].iter().all(|&b| b == 0));
    assert!(got[8192..].iter().all(|&b| b == 2));
    assert_eq!(log.stats().replayed, 2);
    // Replayed once: a second start has nothing to do.
    crash(log);
    reopen_replays_nothing_over(&s, b"x");
}

/// Records an `Applied` mark covers are never written again, so a later
/// change of the file survives a restart.
#[test]
fn applied_records_are_not_replayed() {
    let (s, fs, h, log) = with_log();
    logged_write(&log, &h, 0, b"old");
    assert!(log.is_logged(&h));
    log.apply().unwrap();
    assert!(!log.is_logged(&h), "a mark covers the file's records");
    fs.write(&Creds::root(), &h, 0, b"new", Stability::Unstable)
        .unwrap();
    fs.commit(&h).unwrap();
    crash(log);
    let log = WriteLog::open(&s.cfg, fs_of(&s)).unwrap();
    assert_eq!(std::fs::read(s.export.join("f")).unwrap(), b"new");
    assert_eq!(log.stats().replayed, 0);
    assert_eq!(log.stats().skipped, 1);
}

/// An unstable write made stable by a COMMIT after a logged write to the
/// same range: the barrier keeps replay from writing the older data over
/// it; without one, replay does (the case the barrier exists for).
#[test]
fn a_barrier_keeps_replay_off_later_committed_data() {
    for with_barrier in [true, false] {
        let (s, fs, h, log) = with_log();
        logged_write(&log, &h, 0, b"logged");
        fs.write(&Creds::root(), &h, 0, b"commit", Stability::Unstable)
            .unwrap();
        if with_barrier {
            assert!(log.barrier(&h).unwrap());
        } else {
            fs.commit(&h).unwrap();
        }
        crash(log);
        let log = WriteLog::open(&s.cfg, fs_of(&s)).unwrap();
        let want: &[u8] = if with_barrier { b"commit" } else { b"logged" };
        assert_eq!(std::fs::read(s.export.join("f")).unwrap(), want);
        assert_eq!(log.stats().replayed, u64::from(!with_barrier));
    }
}

/// A file removed after its writes were logged: its records are skipped.
#[test]
fn records_of_a_removed_file_are_skipped() {
    let (s, fs, h, log) = with_log();
    logged_write(&log, &h, 0, b"data");
    fs.remove(&Creds::root(), &fs.root(), b"f").unwrap();
    crash(log);
    let log = WriteLog::open(&s.cfg, fs_of(&s)).unwrap();
    assert_eq!(log.stats().skipped, 1);
    assert!(!s.export.join("f").exists());
}

/// A clean stop applies everything: nothing to replay at the next start.
#[test]
fn drain_leaves_nothing_to_replay() {
    let (s, _, h, log) = with_log();
    logged_write(&log, &h, 0, b"data");
    log.drain().unwrap();
    reopen_replays_nothing_over(&s, b"later");
}

/// The log of one export is refused for another.
#[test]
fn another_exports_log_is_refused() {
    let s = setup();
    let log = WriteLog::open(&s.cfg, fs_of(&s)).unwrap();
    log.drain().unwrap();
    let other = s._tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let fs: Arc<dyn Vfs> = Arc::new(LocalFs::new(&other).unwrap());
    let err = WriteLog::open(&s.cfg, fs).unwrap_err();
    assert!(err.contains("another export"), "{err}");
}

/// Concurrent stable writes share syncs of the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_share_log_syncs() {
    let (_s, _, h, log) = with_log();
    let tasks: Vec<_> = (0..16u64)
        .map(|i| {
            let (log, h) = (log.clone(), h.clone());
            tokio::spawn(async move {
                for j in 0..20u64 {
                    let (l, hh) = (log.clone(), h.clone());
                    crate::handoff::off_thread(move || {
                        l.write(&Creds::root(), &hh, (i * 20 + j) * 4096, &[i as u8; 4096])
                    })
                    .await
                    .unwrap()
                    .unwrap();
                    log.durable().await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let st = log.stats();
    assert_eq!(st.writes, 320);
    assert!(st.syncs < 320, "{st:?}");
}

#[test]
fn records_decode_as_encoded() {
    let w = [head_of(WRITE, b"hh", 7), b"data".to_vec()].concat();
    assert_eq!(
        decode(&w),
        Some(Rec::Write {
            handle: b"hh",
            offset: 7,
            data: b"data"
        })
    );
    assert_eq!(
        decode(&head_of(SYNCED, b"h", 9)),
        Some(Rec::Synced {
            handle: b"h",
            upto: 9
        })
    );
    assert_eq!(
        decode(&[APPLIED, 0, 0, 0, 0, 0, 0, 0, 5]),
        Some(Rec::Applied { upto: 5 })
    );
    assert_eq!(decode(&[9, 0, 0]), None);
    assert_eq!(
        decode(&[WRITE, 0, 9]),
        None,
        "handle longer than the record"
    );
}
