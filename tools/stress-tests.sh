#!/usr/bin/env bash
# Shows that no test's verdict depends on the machine's speed or load: runs
# `cargo test --workspace` RUNS times in a row (3 by default) while two
# CPU-bound processes and one disk-bound process run beside it
# (`stress-ng --cpu 2 --hdd 1`, installed from Debian's packages if
# missing), and reports each run's result and wall time. Exits non-zero if
# any run failed. Run as root, like ./test.sh (tests that switch identities
# need it).
#
#   tools/stress-tests.sh                 three loaded runs
#   RUNS=5 tools/stress-tests.sh          five
#   STRESS="--cpu 4 --hdd 2" tools/stress-tests.sh   another load
#   tools/stress-tests.sh -- -p e2e       arguments after -- go to cargo test
#
# The test binaries are built before the load starts, so that the runs
# time the tests and not the compiler. Each run's output is kept in
# $LOGDIR (default: a new directory under /tmp), named in the summary.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

runs=${RUNS:-3}
stress=${STRESS:---cpu 2 --hdd 1}
extra=()
if [ "${1:-}" = "--" ]; then
    shift
    extra=("$@")
elif [ $# -gt 0 ]; then
    echo "usage: $0 [-- CARGO_TEST_ARGS...]" >&2
    exit 2
fi
[ ${#extra[@]} -gt 0 ] || extra=(--workspace)

if ! command -v stress-ng >/dev/null; then
    echo "stress-tests: installing stress-ng"
    if ! { apt-get install -y stress-ng >/dev/null 2>&1 ||
        { apt-get update >/dev/null && apt-get install -y stress-ng >/dev/null; }; }; then
        echo "stress-tests: cannot install stress-ng (apt-get install stress-ng failed)" >&2
        exit 1
    fi
fi

logdir=${LOGDIR:-$(mktemp -d /tmp/ferrite-stress.XXXXXX)}
mkdir -p "$logdir"
# stress-ng's disk worker writes its files here; not on a tmpfs, so that it
# loads the disk the tests use.
hddtmp=$(mktemp -d /var/tmp/ferrite-stress-hdd.XXXXXX)
stress_pid=
cleanup() {
    if [ -n "$stress_pid" ]; then
        kill -INT "$stress_pid" 2>/dev/null || true
        wait "$stress_pid" 2>/dev/null || true
    fi
    rm -rf "$hddtmp"
}
trap cleanup EXIT

echo "stress-tests: building the tests first (no load yet)"
cargo test "${extra[@]}" --no-run --quiet

# shellcheck disable=SC2086 # $stress is a list of stress-ng options
stress-ng $stress --temp-path "$hddtmp" --timeout 0 \
    >"$logdir/stress-ng.log" 2>&1 &
stress_pid=$!
sleep 1
if ! kill -0 "$stress_pid" 2>/dev/null; then
    echo "stress-tests: stress-ng did not start: $(cat "$logdir/stress-ng.log")" >&2
    exit 1
fi
echo "stress-tests: stress-ng $stress running (pid $stress_pid); logs in $logdir"

summary=()
failed=0
for i in $(seq 1 "$runs"); do
    log="$logdir/run-$i.log"
    echo "stress-tests: run $i of $runs: cargo test ${extra[*]}"
    t0=$(date +%s)
    rc=0
    cargo test "${extra[@]}" >"$log" 2>&1 || rc=$?
    took=$(($(date +%s) - t0))
    passed=$(grep -Eo '^test result: [a-zA-Z]+\. [0-9]+ passed' "$log" |
        awk '{s += $4} END {print s + 0}')
    failing=$(grep -Eo '^test result: [a-zA-Z]+\. [0-9]+ passed; [0-9]+ failed' "$log" |
        awk '{s += $6} END {print s + 0}')
    if [ "$rc" -eq 0 ]; then
        summary+=("run $i: ok, ${took} s, $passed tests passed")
    else
        failed=$((failed + 1))
        summary+=("run $i: FAILED (exit $rc), ${took} s, $passed passed, $failing failed: $log")
        grep -E '^(---- |test .* FAILED|failures:)' "$log" | head -20 || true
    fi
    echo "stress-tests: ${summary[-1]}"
done

echo
echo "stress-tests: $runs runs of cargo test ${extra[*]} beside stress-ng $stress"
printf '  %s\n' "${summary[@]}"
if [ "$failed" -gt 0 ]; then
    echo "stress-tests: $failed of $runs runs failed"
    exit 1
fi
echo "stress-tests: every run passed"
