#!/usr/bin/env bash
# Server CPU per operation from 1 to 32 clients (issue 10, point 4).
#
#   tools/scaling.sh [OUTDIR]
#
# Starts Ferrite (release build, a fresh export) pinned to CPU 1 and runs
# `ferrite bench run` pinned to CPU 0 with 1, 2, 4, 8, 16 and 32 clients
# of 4 threads each (every client its own connection and session), for
# each workload in WORKLOADS (default: randread smallfile-read), REPS
# times (default 2) in alternating order of client counts. Prints per
# workload and client count the server's CPU µs per operation (summed CPU
# over summed operations), its ops/s, and both relative to 1 client.
#
# Environment: REPS (2), DURATION (5s), WORKLOADS, COUNTS ("1 2 4 8 16 32"),
# FERRITE_PORT (20760).
set -euo pipefail
top="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
cd "$top"
OUT="${1:-/var/tmp/ferrite-scaling/$(date +%Y%m%d-%H%M%S)}"
REPS="${REPS:-2}"
DURATION="${DURATION:-5s}"
WORKLOADS="${WORKLOADS:-randread smallfile-read}"
COUNTS="${COUNTS:-1 2 4 8 16 32}"
PORT="${FERRITE_PORT:-20760}"
[ "$(nproc)" -ge 2 ] || { echo "scaling.sh: needs 2 CPUs" >&2; exit 2; }
mkdir -p "$OUT"
cargo build --release -p ferrite
F="$top/target/release/ferrite"
rm -rf "$OUT/export" "$OUT/state" && mkdir -p "$OUT/export" "$OUT/state"
taskset -c 1 "$F" serve "$OUT/export" --listen "127.0.0.1:$PORT" \
    --state-dir "$OUT/state" >"$OUT/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    sleep 0.1
done
T="nfs4://127.0.0.1:$PORT/"
args() {
    case "$1" in
    randread) echo randread --file-size 64m --io-size 4k ;;
    smallfile-read) echo smallfile-read ;;
    *) echo "$1" ;;
    esac
}
for w in $WORKLOADS; do
    # shellcheck disable=SC2046
    "$F" bench prepare $(args "$w") --target "$T" >/dev/null
done
for w in $WORKLOADS; do
    for r in $(seq 1 "$REPS"); do
        order="$COUNTS"
        [ $((r % 2)) -eq 0 ] && order="$(echo "$COUNTS" | tr ' ' '\n' | tac | tr '\n' ' ')"
        for n in $order; do
            echo "scaling: $w, $n clients, repetition $r" >&2
            # shellcheck disable=SC2046
            taskset -c 0 "$F" bench run $(args "$w") --clients "$n" --threads 4 \
                --duration "$DURATION" --warmup 1s --runs 1 --target "$T" \
                --server-pid "$pid" -o "$OUT/$w-$n-$r.json" >"$OUT/$w-$n-$r.txt"
        done
    done
done
python3 - "$OUT" "$REPS" "$WORKLOADS" "$COUNTS" <<'EOF' | tee "$OUT/table.md"
import json, sys
out, reps, works, counts = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
print("| workload | clients x 4 threads | server µs/op | ops/s | µs/op vs 1 client | ops/s vs 1 client | client CPU % |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for w in works:
    base = None
    for n in counts:
        cpu = ops = 0.0
        rates, client = [], []
        for r in range(1, reps + 1):
            for run in json.load(open(f"{out}/{w}-{n}-{r}.json"))["runs"]:
                sc = run["server_cpu"]
                cpu += sc["user_s"] + sc["sys_s"]
                ops += run["ops"]
                rates.append(run["ops_per_s"])
                client.append(run["cpu"]["percent"])
        us, rate = cpu * 1e6 / max(ops, 1), sum(rates) / len(rates)
        base = base or (us, rate)
        print(f"| {w} | {n} | {us:.1f} | {rate:,.0f} | {us / base[0]:.2f} | {rate / base[1]:.2f} | {max(client):.0f} |")
EOF
echo "scaling.sh: results in $OUT" >&2
