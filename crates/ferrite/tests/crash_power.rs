//! Crash harness, power-loss part (issue 11, point 6): the harness of
//! `crash/mod.rs` over crashfs, a FUSE file system of our own holding the
//! export, the write log and the state directory. At each crash point the
//! server is killed (SIGKILL) and then the power is lost: every write and
//! every name change not made durable by fsync or fdatasync (of the file,
//! and of its directory for names) is dropped before the server restarts.
//! Every acknowledged-stable byte and name must still be there.
//!
//! Needs root and /dev/fuse: tests/crash-power.sh runs it (test.sh does).
//! Run with and without a write log. `CRASH_POINTS` (default 20) sets the
//! number of power losses of each;
//! `CRASH_SEED` the seed (printed, to replay a failure).

mod crash;

fn power(log: bool) {
    let (points, seed) = crash::points_and_seed(20);
    let dir = tempfile::tempdir().unwrap();
    let fs = crashfs::Mounted::mount(dir.path()).expect("mount crashfs (root, /dev/fuse)");
    crash::run(points, seed, fs.path(), log, Some(&fs));
}

#[test]
#[ignore = "needs root and /dev/fuse: run by tests/crash-power.sh"]
fn acknowledged_results_survive_power_loss_with_a_write_log() {
    power(true);
}

/// Without a log, each stable WRITE and COMMIT syncs the file.
#[test]
#[ignore = "needs root and /dev/fuse: run by tests/crash-power.sh"]
fn acknowledged_results_survive_power_loss_without_a_write_log() {
    power(false);
}

/// A persistent session's kept reply outlives a power loss the moment it
/// is sent: a REMOVE retried after the server lost power gets its
/// original reply, not a second REMOVE.
#[test]
#[ignore = "needs root and /dev/fuse: run by tests/crash-power.sh"]
fn a_kept_reply_survives_power_loss() {
    use proto::nfs4::*;
    let dir = tempfile::tempdir().unwrap();
    let fs = crashfs::Mounted::mount(dir.path()).expect("mount crashfs (root, /dev/fuse)");
    std::fs::create_dir(fs.path().join("export")).unwrap();
    for d in [fs.path().join("export"), fs.path().to_path_buf()] {
        std::fs::File::open(d).unwrap().sync_all().unwrap();
    }
    let mut srv = crash::Server {
        child: None,
        log: false,
        addr: crash::free_port(),
        dir: fs.path().to_path_buf(),
    };
    srv.spawn();
    srv.ready();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let addr = srv.addr;
    let connect = |persist: bool| {
        let mut o = client::ClientOptions::new(format!("persist-{persist}-{}", std::process::id()));
        o.persist = persist;
        client::Client::connect(addr, o)
    };
    let (rm, first) = rt.block_on(async {
        let c = connect(true).await.unwrap();
        assert_ne!(c.session_flags() & CREATE_SESSION4_FLAG_PERSIST, 0);
        let root = c.root_fh().await.unwrap();
        let o = c
            .open(&root, "f", client::OpenOpts::create(0o644))
            .await
            .unwrap();
        c.close(&o.fh, o.stateid).await.unwrap();
        let rm = vec![
            NfsArgOp4::Sequence(Sequence4Args {
                sessionid: c.sessionid(),
                sequenceid: 1,
                slotid: 20,
                highest_slotid: 20,
                cachethis: true,
            }),
            NfsArgOp4::PutRootFh,
            NfsArgOp4::Remove(Remove4Args {
                target: bytes::Bytes::from_static(b"f"),
            }),
        ];
        let first = c.compound_raw(b"rm", 1, &rm).await.unwrap();
        assert_eq!(first.status, NfsStat4::Nfs4Ok, "{first:?}");
        (rm, first)
    });
    srv.kill();
    crash::lose_power(Some(&fs));
    srv.spawn();
    srv.ready();
    rt.block_on(async {
        let c = connect(false).await.unwrap();
        let again = c.compound_raw(b"rm", 1, &rm).await.unwrap();
        assert_eq!(again, first, "the kept reply, after the power loss");
    });
    assert!(!fs.path().join("export/f").exists());
}
