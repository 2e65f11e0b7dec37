#!/usr/bin/env bash
# Coverage-guided fuzzing of Ferrite with cargo fuzz (libFuzzer); see
# docs/fuzzing.md.
#   tools/fuzz.sh build            build the targets
#   tools/fuzz.sh short [SECS]     each target for SECS seconds (60): CI's step
#   tools/fuzz.sh long [LOG [TARGET...]]  the long run: FUZZ_RUNS executions per
#                                  target, one at a time, under nice -n 19
#   tools/fuzz.sh run TARGET [LIBFUZZER ARGS...]
# Installs cargo-fuzz from crates.io if missing. Runs on the stable
# toolchain: no sanitizer (-s none) needs no -Z flag; the targets are
# release builds with debug assertions and overflow checks (-O -a).
# New corpus entries go to fuzz/work/<target> (not committed); the seeds
# in fuzz/corpus/<target> and the reproducers in fuzz/regressions/<target>
# are read only. Crashes land in fuzz/artifacts/<target>.
# FUZZ_RUNS_<target> changes the long run's count for a target, FUZZ_ARGS
# adds libFuzzer arguments to it.
# Time: about 2 minutes to build from nothing on 2 cores (plus about 1.5 to
# install cargo-fuzz), then SECS per target.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

TARGETS=(compound_run pnfs_run nfs3_run compound_decode rpc_record gss_call tls_probe)
# Executions per target in the long run (1.1 x 10^8 in all).
declare -A FUZZ_RUNS=(
    [rpc_record]=${FUZZ_RUNS_rpc_record:-50000000}
    [compound_decode]=${FUZZ_RUNS_compound_decode:-48000000}
    [compound_run]=${FUZZ_RUNS_compound_run:-2000000}
    [nfs3_run]=${FUZZ_RUNS_nfs3_run:-2000000}
    [pnfs_run]=${FUZZ_RUNS_pnfs_run:-500000}
    [gss_call]=${FUZZ_RUNS_gss_call:-10000000}
    [tls_probe]=${FUZZ_RUNS_tls_probe:-10000000}
)
# A crash, a hang (10 s for one input), or an allocation beyond these.
# The bounds hold on a machine twice as slow: the slowest target averages
# 0.45 ms an input (compound_run, 2,237 exec/s on 2 shared cores,
# docs/fuzzing.md), so an input that takes 10 s is a hang, not a slow
# machine; the memory bounds do not depend on speed (peak RSS 35-74 MB).
LIMITS=(-rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=10)
CARGO_FUZZ_VERSION=0.13.2

install() {
    if ! cargo fuzz --version 2>/dev/null | grep -q "$CARGO_FUZZ_VERSION"; then
        cargo install --locked "cargo-fuzz@$CARGO_FUZZ_VERSION"
    fi
}

build() {
    install
    cargo fuzz build -s none -O -a "$@"
}

run() {
    local t=$1
    shift
    mkdir -p "fuzz/work/$t" "fuzz/regressions/$t"
    cargo fuzz run -s none -O -a "$t" "fuzz/work/$t" "fuzz/corpus/$t" "fuzz/regressions/$t" \
        -- "${LIMITS[@]}" -print_final_stats=1 "$@"
}

# What each target's run came to, from a log of them.
summary() {
    awk '
        function out() {
            if (t != "" && n != "")
                printf "%s: %s runs in %s s, %s exec/s, peak RSS %s MB, %s; %s\n", t, n, secs, r, rss, end, done
            n = ""; secs = "?"; end = "no failure"
        }
        /^== target / { out(); t = $3; sub(":", "", t); end = "no failure" }
        /DONE/ { done = $0; sub(/^#[0-9]+[[:space:]]+DONE[[:space:]]+/, "", done) }
        /pulse/ { done = $0; sub(/^#[0-9]+[[:space:]]+pulse[[:space:]]+/, "", done) }
        /^Done [0-9]+ runs in/ { secs = $5 }
        /stat::number_of_executed_units/ { n = $2 }
        /stat::average_exec_per_sec/ { r = $2 }
        /stat::peak_rss_mb/ { rss = $2 }
        /run interrupted/ { end = "interrupted" }
        /ERROR: libFuzzer|panicked at|deadly signal/ { end = $0 }
        END { out() }
    ' "$1"
}

case "${1:-}" in
build)
    shift
    build "$@"
    ;;
short)
    secs=${2:-60}
    build
    # The logs' directory (not committed) must exist before tee opens them.
    mkdir -p fuzz/work
    # SECS is a budget, not a bound anything is compared with: a slower
    # machine runs fewer inputs, and every failure is a saved input that
    # fails on any machine (fuzz/artifacts/<target>). The long run below
    # bounds the work (-runs) instead.
    for t in "${TARGETS[@]}"; do
        {
            echo "== target $t: ${secs}s"
            run "$t" -max_total_time="$secs" 2>&1
        } | grep -Ev '^#[0-9]+[[:space:]]+(NEW|REDUCE)' | tee "fuzz/work/$t.log" | tail -n 20
    done
    for t in "${TARGETS[@]}"; do summary "fuzz/work/$t.log"; done
    ;;
long)
    log=${2:-/tmp/ferrite-fuzz-long.log}
    shift $(($# < 2 ? $# : 2))
    targets=("${@:-${TARGETS[@]}}")
    build
    : >"$log"
    status=0
    for t in "${targets[@]}"; do
        echo "== target $t: ${FUZZ_RUNS[$t]} runs, $(date -u +%FT%TZ)" | tee -a "$log"
        mkdir -p "fuzz/work/$t" "fuzz/regressions/$t"
        # Progress lines only at powers of two, to keep the log short. A
        # crash ends this target's run, not the others'.
        nice -n 19 /usr/bin/time -v cargo fuzz run -s none -O -a "$t" \
            "fuzz/work/$t" "fuzz/corpus/$t" "fuzz/regressions/$t" -- \
            "${LIMITS[@]}" -print_final_stats=1 -runs="${FUZZ_RUNS[$t]}" \
            -reload=0 ${FUZZ_ARGS:-} 2>&1 | grep --line-buffered -Ev '^#[0-9]+[[:space:]]+(NEW|REDUCE)' >>"$log" || status=1
    done
    echo "== finished $(date -u +%FT%TZ)" >>"$log"
    summary "$log"
    exit $status
    ;;
run)
    shift
    t=${1:?target}
    shift
    build "$t"
    run "$t" "$@"
    ;;
*)
    sed -n '2,18p' "$0" >&2
    exit 2
    ;;
esac
