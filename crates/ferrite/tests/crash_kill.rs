//! Crash harness, kill -9 part (issue 11, point 6): the harness of
//! `crash/mod.rs` with SIGKILL alone. A SIGKILL leaves the page cache, so
//! what this checks is that nothing the server does at restart (the log's
//! replay above all) undoes what it had acknowledged, and that it always
//! comes back. `crash_power.rs` adds the power loss.
//!
//! `CRASH_POINTS` (default 6) sets the number of kills; `CRASH_SEED` the
//! seed (printed, to replay a failure).

mod crash;

#[test]
fn acknowledged_results_survive_kill_9_at_random_points() {
    let (points, seed) = crash::points_and_seed(6);
    let dir = tempfile::tempdir().unwrap();
    crash::run(points, seed, dir.path(), true, None);
}
