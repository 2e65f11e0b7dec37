#!/usr/bin/env bash
# Response time against offered load, the Legato paper's Figure 2, for
# Ferrite with and without its write log: `ferrite bench run nhfsstone`
# (the paper's Figure 1 mix, FILE_SYNC writes) at each rate in turn, the
# two servers (one binary; B has `--log`) each on its own scratch export,
# pinned to CPU 1, the client pinned to CPU 0, A and B alternating (B
# first on even repetitions).
#
#   tools/nhfsstone.sh FERRITE_BINARY [OUTDIR]
#
# Environment: RATES (offered operations per second, default "1000 2000
# 4000 6000 8000 10000 12000 0"; 0 is as fast as the replies come),
# REPS (default 2), DURATION (default 5s), CLIENTS x THREADS (default
# 2 x 16). Prints one line per run and a table per rate: operations per
# second achieved, mean, p50 and p99 response time, and server CPU per
# operation, for A (no log) and B (log).
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
FERRITE="$1"; OUT="${2:-/tmp/nhfsstone}"
RATES="${RATES:-1000 2000 4000 6000 8000 10000 12000 0}"
REPS="${REPS:-2}"; DURATION="${DURATION:-5s}"
CLIENTS="${CLIENTS:-2}"; THREADS="${THREADS:-16}"
mkdir -p "$OUT"
declare -A PORT=([A]=20711 [B]=20712) PID BIN=([A]="$FERRITE" [B]="$FERRITE") LOGGED=([A]=0 [B]=1)
# shellcheck source=tools/ab-lib.sh
. "$(dirname "$0")/ab-lib.sh"
ab_start
for s in A B; do
    "$FERRITE" bench prepare nhfsstone --target "$(ab_target $s)" >/dev/null
done
printf 'rate rep server ops_per_s mean_us p50_us p99_us server_us_per_op\n' | tee "$OUT/runs.txt"
for rate in $RATES; do
    for r in $(seq 1 "$REPS"); do
        for s in $(ab_order "$r"); do
            j="$OUT/$rate-$s-$r.json"
            rate_arg=(); [ "$rate" != 0 ] && rate_arg=(--rate "$rate")
            taskset -c 0 "$FERRITE" bench run nhfsstone --target "$(ab_target $s)" \
                --clients "$CLIENTS" --threads "$THREADS" --duration "$DURATION" --warmup 1s \
                "${rate_arg[@]}" --server-pid "${PID[$s]}" -o "$j" >/dev/null
            python3 - "$j" "$rate" "$r" "$s" <<'PY' | tee -a "$OUT/runs.txt"
import json, sys
j, rate, rep, s = sys.argv[1:]
run = json.load(open(j))["runs"][0]
l = run["latency"]["op"]
print(rate, rep, s, round(run["ops_per_s"]), round(l["mean_us"]), round(l["p50_us"]),
      round(l["p99_us"]), round(run["server_cpu"]["us_per_op"], 1))
PY
        done
    done
done
python3 - "$OUT/runs.txt" <<'PY'
import sys, collections
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
per = collections.defaultdict(list)
for rate, rep, s, *v in rows:
    per[(rate, s)].append([float(x) for x in v])
def mean(rate, s):
    v = per[(rate, s)]
    return [sum(c) / len(v) for c in zip(*v)]
print("\n| offered ops/s | A: no log ops/s | mean / p50 / p99 ms | server µs/op | B: log ops/s | mean / p50 / p99 ms | server µs/op |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for rate in dict.fromkeys(r[0] for r in rows):
    cells = []
    for s in "AB":
        ops, m, p50, p99, cpu = mean(rate, s)
        cells += [f"{ops:,.0f}", f"{m/1e3:.2f} / {p50/1e3:.2f} / {p99/1e3:.2f}", f"{cpu:.1f}"]
    print(f"| {'as fast as answered' if rate == '0' else f'{int(rate):,}'} | " + " | ".join(cells) + " |")
PY
