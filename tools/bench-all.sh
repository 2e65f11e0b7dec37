#!/usr/bin/env bash
# Runs every `ferrite bench` micro-workload against one target, keeping each
# result as JSON (-o) and its terminal summary (.txt) in OUTDIR.
#
#   tools/bench-all.sh TARGET OUTDIR [options passed to every run ...]
#
#   TARGET   nfs4://HOST:PORT/PATH, nfs3://HOST:PORT/PATH?mountport=N&nlmport=M
#            or dir:/PATH (see docs/benchmarking.md)
#   OUTDIR   created if missing; one NAME.json and NAME.txt per run
#
# Environment:
#   FERRITE      the ferrite binary (default: target/release/ferrite)
#   CLIENT_CPUS  CPUs the benchmark is pinned to with taskset (default 0 when
#                the machine has 2 or more CPUs, so a server pinned to the
#                others keeps its own; empty: no pinning)
#   RUNS         repetitions of the time-based workloads (default 3)
#   DURATION     measured period of each time-based run (default 5s)
#   ONLY         space-separated subset of: randread randwrite randwrite-sync
#                seqread seqwrite smallfile-read locked-read deleg-recall
#                create dirlist nhfsstone
#
# The file sets are prepared first (reused if already there): a 64 MiB file,
# 1,000 files of 4 KiB, 1,000 of 8 KiB (nhfsstone), and the 50,000-file tree.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
T="$1"
OUT="$2"
shift 2
F="${FERRITE:-target/release/ferrite}"
RUNS="${RUNS:-3}"
DURATION="${DURATION:-5s}"
ONLY="${ONLY:-randread randwrite randwrite-sync seqread seqwrite smallfile-read locked-read deleg-recall create dirlist nhfsstone}"
if [ -z "${CLIENT_CPUS+x}" ]; then
    if [ "$(nproc)" -ge 2 ]; then CLIENT_CPUS=0; else CLIENT_CPUS=""; fi
fi
[ -x "$F" ] || { echo "bench-all: $F not found: cargo build --release -p ferrite (or set FERRITE)" >&2; exit 2; }
PIN=()
[ -n "$CLIENT_CPUS" ] && PIN=(taskset -c "$CLIENT_CPUS")
mkdir -p "$OUT"

want() { case " $ONLY " in *" $1 "*) return 0 ;; esac; return 1; }

# run NAME WORKLOAD [options...]: one `ferrite bench run`, results in OUTDIR.
run() {
    local name="$1"
    shift
    want "$name" || return 0
    echo "==== $name: $F bench run $* --target $T ${EXTRA[*]}" >&2
    "${PIN[@]}" "$F" bench run "$@" --target "$T" -o "$OUT/$name.json" --csv "$OUT/$name.csv" "${EXTRA[@]}" |
        tee "$OUT/$name.txt"
}
EXTRA=("$@")

large=(--file-size 64m)
timed=(--duration "$DURATION" --warmup 1s --runs "$RUNS")
if want randread || want randwrite || want randwrite-sync || want seqread || want seqwrite; then
    "$F" bench prepare randread --target "$T" "${large[@]}"
fi
if want smallfile-read || want locked-read || want deleg-recall; then
    "$F" bench prepare smallfile-read --target "$T"
fi
if want dirlist; then
    "$F" bench prepare dirlist --target "$T"
fi
if want nhfsstone; then
    "$F" bench prepare nhfsstone --target "$T"
fi

run randread randread "${large[@]}" --io-size 4k --threads 16 "${timed[@]}"
run randwrite randwrite "${large[@]}" --io-size 4k --threads 16 "${timed[@]}"
run randwrite-sync randwrite "${large[@]}" --io-size 4k --threads 16 --sync "${timed[@]}"
run seqread seqread "${large[@]}" --io-size 1m --threads 4 "${timed[@]}"
run seqwrite seqwrite "${large[@]}" --io-size 1m --threads 4 "${timed[@]}"
run smallfile-read smallfile-read --threads 8 "${timed[@]}"
run locked-read locked-read --duration 10m
run deleg-recall deleg-recall --clients 2 --duration 10m
run create create --clients 2 --threads 4 --files 1000 --file-size 4k --duration 10m
run dirlist dirlist --threads 4 "${timed[@]}"
run nhfsstone nhfsstone --clients 2 --threads 16 "${timed[@]}"
echo "bench-all: results in $OUT" >&2
