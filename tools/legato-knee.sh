#!/usr/bin/env bash
# The Legato paper's headline on a disk as slow as its (issue 35, point 5;
# ../shared/seeds/002, Figures 1 and 2): its server was bound by
# synchronous disk writes of milliseconds, and the write cache moved the
# saturation point from 70 to 110 operations a second. Here each server's
# export is a crashfs whose every fsync/fdatasync is answered SLOW_MS
# after the one before it (one disk arm: `crashfs --sync-delay-ms`), and
# the Figure 1 mix with FILE_SYNC writes (`ferrite bench run nhfsstone`)
# is offered at rising load (`--load-sweep`: the unpaced throughput, then
# 10% ... 125% of it) to Ferrite without (A) and with (B) a write log, the
# log on this machine's own disk.
#
#   tools/legato-knee.sh [OUTDIR]
#
# Needs root and /dev/fuse. Environment: SLOW_MS (10), REPS (2; A and B
# alternate which goes first), DURATION (5s a step), CLIENTS x THREADS
# (2 x 16), FERRITE_BIN (a binary instead of building this tree). Prints
# each sweep and each server's knee (the load of greatest power, achieved
# over mean response time) and writes OUTDIR/legato.html with the
# curves and OUTDIR/knee-mean-response.svg (the chart for docs/figures/).
set -euo pipefail
top="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
cd "$top"
OUT="${1:-/var/tmp/ferrite-legato/$(date +%Y%m%d-%H%M%S)}"
SLOW_MS="${SLOW_MS:-10}"; REPS="${REPS:-2}"; DURATION="${DURATION:-5s}"
CLIENTS="${CLIENTS:-2}"; THREADS="${THREADS:-16}"
[ "$(id -u)" = 0 ] && [ -e /dev/fuse ] || { echo "legato-knee.sh: needs root and /dev/fuse" >&2; exit 2; }
[ "$(nproc)" -ge 2 ] || { echo "legato-knee.sh: needs 2 CPUs (server on 1, client on 0)" >&2; exit 2; }
cargo build --release -p crashfs
CRASHFS="$top/target/release/crashfs"
if [ -n "${FERRITE_BIN:-}" ]; then
    F="$FERRITE_BIN"
else
    cargo build --release -p ferrite
    F="$top/target/release/ferrite"
fi
mkdir -p "$OUT"
# shellcheck source=tools/bench-lib.sh
. tools/bench-lib.sh
declare -A PORT=([A]=20721 [B]=20722) PID CFS
cleanup() {
    for s in A B; do [ -n "${PID[$s]:-}" ] && kill "${PID[$s]}" 2>/dev/null || true; done
    for s in A B; do [ -n "${PID[$s]:-}" ] && wait "${PID[$s]}" 2>/dev/null || true; done
    for s in A B; do [ -n "${CFS[$s]:-}" ] && kill "${CFS[$s]}" 2>/dev/null || true; done
    for s in A B; do [ -n "${CFS[$s]:-}" ] && wait "${CFS[$s]}" 2>/dev/null || true; done
}
trap cleanup EXIT
for s in A B; do
    mountpoint -q "$OUT/$s/export" 2>/dev/null && umount "$OUT/$s/export"
    rm -rf "${OUT:?}/$s" && mkdir -p "$OUT/$s/export" "$OUT/$s/state"
    "$CRASHFS" --sync-delay-ms "$SLOW_MS" "$OUT/$s/export" 2>"$OUT/$s/crashfs.log" &
    CFS[$s]=$!
    for _ in $(seq 100); do mountpoint -q "$OUT/$s/export" && break; sleep 0.1; done
    mountpoint -q "$OUT/$s/export" || { echo "crashfs did not mount: $OUT/$s/crashfs.log" >&2; exit 1; }
    log=(); [ "$s" = B ] && log=(--log "$OUT/B/log")
    taskset -c 1 "$F" serve "$OUT/$s/export" --listen "127.0.0.1:${PORT[$s]}" --portmap off \
        --grace 0 --fsid "legato-$s" --state-dir "$OUT/$s/state" "${log[@]}" >"$OUT/$s/server.log" 2>&1 &
    PID[$s]=$!
done
for s in A B; do
    wait_port "${PORT[$s]}" "$OUT/$s/server.log"
    echo "legato: preparing the files on $s (each create waits for the slow disk)" >&2
    "$F" bench prepare nhfsstone --target "nfs4://127.0.0.1:${PORT[$s]}/" >/dev/null
done
for r in $(seq 1 "$REPS"); do
    order="A B"; [ $((r % 2)) -eq 0 ] && order="B A"
    for s in $order; do
        echo "legato: repetition $r, server $s" >&2
        taskset -c 0 "$F" bench run nhfsstone --load-sweep --clients "$CLIENTS" --threads "$THREADS" \
            --duration "$DURATION" --warmup 1s --server-pid "${PID[$s]}" \
            --target "nfs4://127.0.0.1:${PORT[$s]}/" -o "$OUT/$s-$r.json" | tee "$OUT/$s-$r.txt"
    done
done
# The charts name each curve by its file.
cp "$OUT/A-1.json" "$OUT/no-log.json"
cp "$OUT/B-1.json" "$OUT/write-log.json"
"$F" bench report "$OUT/no-log.json" "$OUT/write-log.json" -o "$OUT/legato.html"
python3 - "$OUT" "$REPS" "$SLOW_MS" <<'EOF'
import json, re, sys
out, reps, slow = sys.argv[1], int(sys.argv[2]), sys.argv[3]
knees = {}
for s in "AB":
    for r in range(1, reps + 1):
        sw = json.load(open(f"{out}/{s}-{r}.json"))
        sw = sw.get("sweep", sw)
        k = sw["steps"][sw["knee"]]
        knees.setdefault(s, []).append(k["achieved"])
        print(f"{s} rep {r}: knee at {k['offered']:.0f} offered, {k['achieved']:.0f} achieved/s, "
              f"mean {k['mean_us'] / 1e3:.1f} ms")
def crossing(steps, ms):
    """The achieved load at which the mean response time reaches `ms`
    (the paper's saturation point: 40 ms), interpolated between steps."""
    pts = sorted((st["achieved"], st["mean_us"] / 1e3) for st in steps if st["offered"] > 0)
    for (a0, m0), (a1, m1) in zip(pts, pts[1:]):
        if m0 < ms <= m1:
            return a0 + (a1 - a0) * (ms - m0) / (m1 - m0)
    return None
at40 = {}
for s in "AB":
    for r in range(1, reps + 1):
        c = crossing(json.load(open(f"{out}/{s}-{r}.json"))["steps"], 40.0)
        if c:
            at40.setdefault(s, []).append(c)
a, b = (sum(knees[s]) / len(knees[s]) for s in "AB")
print(f"\nsyncs {slow} ms each: knee without the log {a:.0f} ops/s, with it {b:.0f} ops/s: {b / a:.2f}x")
if len(at40) == 2:
    a, b = (sum(at40[s]) / len(at40[s]) for s in "AB")
    print(f"mean response 40 ms (the paper's saturation point) at {a:.0f} ops/s without the log, "
          f"{b:.0f} with it: {b / a:.2f}x")
html = open(f"{out}/legato.html").read()
svgs = re.findall(r"<svg.*?</svg>", html, re.S)
mean = [s for s in svgs if "mean" in s.lower()]
if mean:
    open(f"{out}/knee-mean-response.svg", "w").write(mean[0])
    print(f"chart: {out}/knee-mean-response.svg")
EOF
