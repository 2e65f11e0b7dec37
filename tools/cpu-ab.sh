#!/usr/bin/env bash
# Server CPU per operation of two Ferrite builds, side by side: each serves
# its own scratch export pinned to CPU 1, `ferrite bench` runs pinned to
# CPU 0, runs alternate A/B then B/A, and each run's server CPU (utime +
# stime from /proc/PID/stat, the whole `bench run` including its 1 s
# warm-up) is divided by the operations the run counted.
#
#   tools/cpu-ab.sh A_BINARY B_BINARY [OUTDIR]
#
# Environment: REPS (default 2), DURATION (default 5s), ONLY (default
# "randread dirlist create"; also randread1, randwrite, writesync(1),
# smallfile, locked, seqread, seqwrite), LOG_A=1 / LOG_B=1 (that server gets a write log,
# `--log OUTDIR/A/log`: the same binary as A and B compares with and
# without). Prints one line per run and a summary with the B/A ratio of
# the mean µs per operation.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
A="$1"; B="$2"; OUT="${3:-/tmp/cpu-ab}"
REPS="${REPS:-2}"; DURATION="${DURATION:-5s}"
ONLY="${ONLY:-randread dirlist create}"
mkdir -p "$OUT"
TCK=$(getconf CLK_TCK)
declare -A PORT=([A]=20701 [B]=20702) PID BIN=([A]="$A" [B]="$B") LOGGED=([A]="${LOG_A:-0}" [B]="${LOG_B:-0}")
# shellcheck source=tools/ab-lib.sh
. "$(dirname "$0")/ab-lib.sh"
ab_start
target() { ab_target "$1"; }
cpu() { awk '{print $14 + $15}' "/proc/${PID[$1]}/stat"; }
args() {
    case "$1" in
        randread) echo "randread --file-size 64m --io-size 4k --threads 16 --duration $DURATION --warmup 1s --runs 1" ;;
        randread1) echo "randread --file-size 64m --io-size 4k --threads 1 --duration $DURATION --warmup 1s --runs 1" ;;
        randwrite) echo "randwrite --file-size 64m --io-size 4k --threads 16 --duration $DURATION --warmup 1s --runs 1" ;;
        writesync) echo "randwrite --file-size 64m --io-size 4k --threads 16 --sync --duration $DURATION --warmup 1s --runs 1" ;;
        seqread) echo "seqread --file-size 64m --io-size 1m --threads 4 --duration $DURATION --warmup 1s --runs 1" ;;
        seqwrite) echo "seqwrite --file-size 64m --io-size 1m --threads 4 --duration $DURATION --warmup 1s --runs 1" ;;
        writesync1) echo "randwrite --file-size 64m --io-size 4k --threads 1 --sync --duration $DURATION --warmup 1s --runs 1" ;;
        smallfile) echo "smallfile-read --threads 8 --duration $DURATION --warmup 1s --runs 1" ;;
        locked) echo "locked-read --duration 10m" ;;
        dirlist) echo "dirlist --threads 4 --duration $DURATION --warmup 1s --runs 1" ;;
        create) echo "create --clients 2 --threads 4 --files 1000 --file-size 4k --duration 10m" ;;
    esac
}
for w in $ONLY; do
    for s in A B; do
        case "$w" in
            randread|randread1|randwrite|writesync|writesync1|seqread|seqwrite) "$A" bench prepare randread --target "$(target $s)" --file-size 64m >/dev/null ;;
            smallfile|locked) "$A" bench prepare smallfile-read --target "$(target $s)" >/dev/null ;;
            dirlist) "$A" bench prepare dirlist --target "$(target $s)" >/dev/null ;;
        esac
    done
done
printf 'workload rep server ops server_cpu_s us_per_op\n' | tee "$OUT/runs.txt"
for w in $ONLY; do
    for r in $(seq 1 "$REPS"); do
        for s in $(ab_order "$r"); do
            j="$OUT/$w-$s-$r.json"
            c0=$(cpu $s)
            # shellcheck disable=SC2046
            taskset -c 0 "$A" bench run $(args "$w") --target "$(target $s)" -o "$j" >/dev/null
            c1=$(cpu $s)
            ops=$(python3 -c "import json,sys; print(sum(r['ops'] for r in json.load(open(sys.argv[1]))['runs']))" "$j")
            python3 -c "import sys; w,r,s,o,c=sys.argv[1:]; o=int(o); c=float(c); print(w,r,s,o,round(c,2),round(c*1e6/max(o,1),1))" \
                "$w" "$r" "$s" "$ops" "$(echo "($c1 - $c0) / $TCK" | bc -l)" | tee -a "$OUT/runs.txt"
        done
    done
done
python3 - "$OUT/runs.txt" <<'PY'
import sys, collections
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
per = collections.defaultdict(list)
for w, r, s, ops, cpu, us in rows:
    per[(w, s)].append(float(us))
print("\nworkload  A us/op  B us/op  B/A")
for w in dict.fromkeys(r[0] for r in rows):
    a = sum(per[(w, 'A')]) / len(per[(w, 'A')]); b = sum(per[(w, 'B')]) / len(per[(w, 'B')])
    print(f"{w:9} {a:8.1f} {b:8.1f} {b/a:5.2f}")
PY
