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
