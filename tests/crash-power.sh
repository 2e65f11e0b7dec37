#!/usr/bin/env bash
# The tests that need a FUSE mount (root and /dev/fuse): crashfs through
# the kernel (crates/crashfs/tests/mount.rs) and the power-loss crash
# harness (crates/ferrite/tests/crash_power.rs: the ferrite binary over
# crashfs, killed and its power lost at random points, every acknowledged
# stable byte and name checked after each). ./test.sh runs this.
#
# CRASH_POINTS (default 20 here) sets the number of power losses of each
# run (with a write log, then without);
# FERRITE_SKIP_FUSE=1 skips it all (and says so). Without that, a machine
# where FUSE cannot be mounted fails the run.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

if [ "${FERRITE_SKIP_FUSE:-0}" = 1 ]; then
    echo "================================================================"
    echo "crash-power: SKIPPED (FERRITE_SKIP_FUSE=1): crashfs and the power-loss harness not run"
    echo "================================================================"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "crash-power: ERROR: must run as root (mounting FUSE); FERRITE_SKIP_FUSE=1 skips" >&2
    exit 1
fi
if [ ! -c /dev/fuse ]; then
    modprobe fuse 2>/dev/null || true
fi
[ -c /dev/fuse ] || { echo "crash-power: ERROR: no /dev/fuse (modprobe fuse); FERRITE_SKIP_FUSE=1 skips" >&2; exit 1; }

export CRASH_POINTS="${CRASH_POINTS:-20}"
cargo test --release -p crashfs --test mount -- --ignored
cargo test --release -p ferrite --test crash_power -- --ignored --nocapture --test-threads 1
