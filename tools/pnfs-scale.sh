#!/usr/bin/env bash
# pNFS scaling (issue 30, point 6): aggregate throughput of seqwrite and
# seqread through a pNFS-speaking `ferrite bench` against a Ferrite
# metadata server (MDS) over N = 1, 2 and 4 Ferrite data servers (DS),
# each behind its own rate-limited proxy (`ferrite bench proxy --rate`,
# one proxy = one link, shared by every connection through it; the MDS
# is given the proxies' addresses, so clients and the MDS reach each DS
# through its link), and the MDS's CPU per MiB moved against what a
# Ferrite without pNFS (plain `ferrite serve`, the same workload, in the
# same script run) spends per MiB.
#
#   tools/pnfs-scale.sh [OUTDIR]
#
# Pinning (the house rules): every server and proxy on CPU 1, the
# benchmark on CPU 0. Plain Ferrite's CPU is utime + stime from
# /proc/PID/stat over the measured period (`bench run --server-pid`).
# The MDS spends too little for /proc's 10 ms clock ticks: it runs in a
# cgroup of its own (cgroup v1 cpuacct, or v2), whose CPU time in
# nanoseconds `bench run --server-cgroup` reads over the measured
# period; its CPU over each whole `bench run` (setup, warm-up and
# teardown included) is shown beside. Without a writable cgroup the MDS
# too is measured in ticks, and the script says so. The data servers'
# and proxies' CPU and each CPU's busy share are taken around the whole
# `bench run` to show what set the pace.
#
# The load grows with N: FILES_PER_DS x N files of SIZE, THREADS_PER_FILE
# workers on each (one client, its workers sharing one connection per
# DS), so every link has about as many requests queued at every N (the
# runner counts a unit in the measured period if it started there, and
# the period ends when the last one is answered: a deeper queue per link
# would lengthen that tail and lower the figure). With STRIPE >= SIZE
# each file lives on one DS, which the file's handle picks, so files
# start on different DS; the script prints how many landed on each and
# warns if a DS got none.
#
# Every configuration is started and prepared once; then each
# repetition runs every workload on every configuration, the order of
# configurations alternating between repetitions. `base` is plain
# Ferrite behind one proxy of the same rate (one link, N = 1's load);
# `base-direct` is the same server reached directly (no link: its CPU per
# MiB when nothing else limits it, the lower of the two, which the MDS is
# compared with). The MDS's idle floor (its CPU while other
# configurations run: timers, no client) is reported beside its CPU per
# MiB.
#
# Environment: COUNTS ("1 2 4"), REPS (2), RATE (40MiB/s, per link and
# direction), FILES_PER_DS (4), THREADS_PER_FILE (3), SIZE (64m), STRIPE
# (64m), DURATION (60s; base-direct: DIRECT_DURATION, 15s), WARMUP (3s),
# WORKLOADS ("seqwrite seqread"),
# FERRITE (a ferrite binary; default: cargo build --release, in
# CARGO_TARGET_DIR if set), BASE_PORT (21000).
set -euo pipefail
top="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
cd "$top"
OUT="${1:-/var/tmp/ferrite-pnfs-scale/$(date +%Y%m%d-%H%M%S)}"
COUNTS="${COUNTS:-1 2 4}"
REPS="${REPS:-2}"
RATE="${RATE:-40MiB/s}"
FILES_PER_DS="${FILES_PER_DS:-4}"
THREADS_PER_FILE="${THREADS_PER_FILE:-3}"
SIZE="${SIZE:-64m}"
STRIPE="${STRIPE:-64m}"
DURATION="${DURATION:-60s}"
DIRECT_DURATION="${DIRECT_DURATION:-15s}"
WARMUP="${WARMUP:-3s}"
WORKLOADS="${WORKLOADS:-seqwrite seqread}"
BP="${BASE_PORT:-21000}"
[ "$(nproc)" -ge 2 ] || { echo "pnfs-scale.sh: needs 2 CPUs" >&2; exit 2; }
if [ -z "${FERRITE:-}" ]; then
    cargo build --release -p ferrite
    FERRITE="${CARGO_TARGET_DIR:-$top/target}/release/ferrite"
fi
F="$FERRITE"
mkdir -p "$OUT"
TCK=$(getconf CLK_TCK)

PIDS=()
stop_all() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap stop_all EXIT

wait_port() {
    for _ in $(seq 200); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.05
    done
    echo "nothing listens on port $1" >&2
    exit 1
}

# serve NAME PORT [ARGS...]: a Ferrite on CPU 1 serving OUT/NAME/export.
serve() {
    local name=$1 port=$2
    shift 2
    rm -rf "${OUT:?}/$name" && mkdir -p "$OUT/$name/export" "$OUT/$name/state"
    taskset -c 1 "$F" serve "$OUT/$name/export" --listen "127.0.0.1:$port" \
        --state-dir "$OUT/$name/state" --portmap off --admin-socket off "$@" \
        >"$OUT/$name/server.log" 2>&1 &
    PIDS+=($!)
    echo $! >"$OUT/$name/pid"
    wait_port "$port"
}

# link NAME LISTEN TO: a rate-limited proxy on CPU 1.
link() {
    taskset -c 1 "$F" bench proxy --listen "127.0.0.1:$2" --to "127.0.0.1:$3" --rate "$RATE" \
        >"$OUT/$1.log" 2>&1 &
    PIDS+=($!)
    echo $! >"$OUT/$1.pid"
    wait_port "$2"
}

declare -A TARGET MDS_PID HELPERS NFILES
# pNFS configurations: N data servers, each behind its link, and an MDS.
for n in $COUNTS; do
    servers=()
    HELPERS[$n]=""
    for k in $(seq 1 "$n"); do
        dport=$((BP + 100 + 10 * n + k)); pport=$((BP + 200 + 10 * n + k))
        serve "n$n/ds$k" "$dport"
        link "n$n/link$k" "$pport" "$dport"
        servers+=("127.0.0.1:$pport")
        HELPERS[$n]+=" $(cat "$OUT/n$n/ds$k/pid") $(cat "$OUT/n$n/link$k.pid")"
    done
    mport=$((BP + 10 * n))
    serve "n$n/mds" "$mport" --data-servers "$(IFS=,; echo "${servers[*]}")" --stripe-unit "$STRIPE"
    MDS_PID[$n]=$(cat "$OUT/n$n/mds/pid")
    TARGET[$n]="nfs4://127.0.0.1:$mport/"
    NFILES[$n]=$((FILES_PER_DS * n))
done
# Ferrite without pNFS: behind one link, and directly.
serve base "$((BP + 1))"
link base-link "$((BP + 2))" "$((BP + 1))"
TARGET[base]="nfs4://127.0.0.1:$((BP + 2))/"
MDS_PID[base]=$(cat "$OUT/base/pid")
HELPERS[base]=" $(cat "$OUT/base-link.pid")"
TARGET[base-direct]="nfs4://127.0.0.1:$((BP + 1))/"
MDS_PID[base-direct]=${MDS_PID[base]}
HELPERS[base-direct]=""
NFILES[base]=$FILES_PER_DS
NFILES[base-direct]=$FILES_PER_DS
CONFIGS="$COUNTS base base-direct"

set_args() { echo "--files ${NFILES[$1]} --file-size $SIZE --io-size 1m"; }
for c in $COUNTS base; do
    echo "prepare $c: ${NFILES[$c]} files of $SIZE" >&2
    # shellcheck disable=SC2046
    "$F" bench prepare seqread --target "${TARGET[$c]}" $(set_args "$c") >/dev/null 2>"$OUT/prepare-$c.log"
done
for n in $COUNTS; do
    per=""
    for k in $(seq 1 "$n"); do
        got=$(find "$OUT/n$n/ds$k/export" -maxdepth 1 -name 'ferrite-*' -size +0 | wc -l)
        per+=" $got"
        [ "$got" -gt 0 ] || echo "WARNING: N=$n: data server $k holds none of the files: its link idles (raise FILES_PER_DS, or run again)" >&2
    done
    echo "N=$n: files per data server:$per" | tee -a "$OUT/placement.txt"
done

cpu_of() { local s=0 p; for p in "$@"; do s=$((s + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo $s; }
# The MDSs' cgroups: CPU in nanoseconds (see the head of this script).
CG=""
if [ -w /sys/fs/cgroup/cpuacct ] && [ -e /sys/fs/cgroup/cpuacct/cpuacct.usage ]; then
    CG=/sys/fs/cgroup/cpuacct/ferrite-pnfs-scale-$$
elif [ -e /sys/fs/cgroup/unified/cgroup.procs ] && [ -w /sys/fs/cgroup/unified ]; then
    CG=/sys/fs/cgroup/unified/ferrite-pnfs-scale-$$
elif [ -e /sys/fs/cgroup/cgroup.controllers ] && [ -w /sys/fs/cgroup ]; then
    CG=/sys/fs/cgroup/ferrite-pnfs-scale-$$
fi
if [ -n "$CG" ]; then
    for n in $COUNTS; do
        mkdir -p "$CG/n$n"
        echo "${MDS_PID[$n]}" >"$CG/n$n/cgroup.procs"
    done
    cg_done() { stop_all; for n in $COUNTS; do rmdir "$CG/n$n" 2>/dev/null || true; done; rmdir "$CG" 2>/dev/null || true; }
    trap cg_done EXIT
    echo "MDS CPU: nanoseconds, from $CG" >&2
else
    echo "MDS CPU: no writable cgroup cpuacct or cpu.stat here; measured in clock ticks (10 ms) over the measured period" >&2
fi
# cg_arg CONFIG: bench run's --server-cgroup for an MDS in a cgroup.
cg_arg() { if [ -n "$CG" ] && [ -d "$CG/n$1" ]; then echo "--server-cgroup $CG/n$1"; fi; }
# mds_ns CONFIG: the MDS's CPU nanoseconds so far (empty without a cgroup).
mds_ns() {
    [ -n "$CG" ] && [ -d "$CG/n$1" ] || return 0
    if [ -e "$CG/n$1/cpuacct.usage" ]; then cat "$CG/n$1/cpuacct.usage"
    else awk '$1 == "usage_usec" {print $2 * 1000}' "$CG/n$1/cpu.stat"; fi
}
# busy and total jiffies of cpu0 and cpu1.
cpus() { awk '/^cpu[01] /{b=$2+$3+$4+$7+$8; t=b+$5+$6; printf "%s %s ", b, t}' /proc/stat; }

printf 'rep config workload runs bytes elapsed_s mds_cpu_s helpers_cpu_s client_pct cpu0_busy cpu1_busy fallbacks mds_run_cpu_s run_wall_s mds_run_ns\n' >"$OUT/runs.txt"
uptime | tee "$OUT/uptime-start.txt"
now() { date +%s.%N; }
declare -A MDS0 NS0 NS_T1
T0=$(now)
for n in $COUNTS; do MDS0[$n]=$(cpu_of "${MDS_PID[$n]}"); NS0[$n]=$(mds_ns "$n"); done
for r in $(seq 1 "$REPS"); do
    order="$CONFIGS"
    [ $((r % 2)) -eq 0 ] && order="$(echo "$CONFIGS" | tr ' ' '\n' | tac | tr '\n' ' ')"
    for c in $order; do
        for w in $WORKLOADS; do
            j="$OUT/$c-$w-$r.json"
            # shellcheck disable=SC2086
            nf=${NFILES[$c]}
            d=$DURATION; [ "$c" = base-direct ] && d=$DIRECT_DURATION
            h0=$(cpu_of ${HELPERS[$c]}); s0=$(cpus); m0=$(cpu_of "${MDS_PID[$c]}"); t0=$(now); n0=$(mds_ns "$c")
            # shellcheck disable=SC2046
            taskset -c 0 "$F" bench run "$w" --target "${TARGET[$c]}" $(set_args "$c") \
                --threads "$((THREADS_PER_FILE * nf))" --duration "$d" --warmup "$WARMUP" \
                --server-pid "${MDS_PID[$c]}" $(cg_arg "$c") -o "$j" >"$OUT/$c-$w-$r.txt"
            # shellcheck disable=SC2086
            h1=$(cpu_of ${HELPERS[$c]}); s1=$(cpus); m1=$(cpu_of "${MDS_PID[$c]}"); t1=$(now); n1=$(mds_ns "$c")
            python3 - "$j" "$r" "$c" "$w" "$h0" "$h1" "$TCK" "$s0" "$s1" "$m0" "$m1" "$t0" "$t1" "$n0" "$n1" >>"$OUT/runs.txt" <<'PY'
import json, sys
j, r, c, w, h0, h1, tck = sys.argv[1:8]
n0, n1 = sys.argv[14], sys.argv[15]
ns = str(int(n1) - int(n0)) if n0 and n1 else "-"
s0 = [int(x) for x in sys.argv[8].split()]; s1 = [int(x) for x in sys.argv[9].split()]
m0, m1, t0, t1 = int(sys.argv[10]), int(sys.argv[11]), float(sys.argv[12]), float(sys.argv[13])
run = json.load(open(j))["runs"][0]
mds = run["server_cpu"]["user_s"] + run["server_cpu"]["sys_s"]
busy = lambda i: (s1[2*i] - s0[2*i]) / max(1, s1[2*i+1] - s0[2*i+1])
fb = sum(t["calls"].get(k, {}).get("count", 0) for t in run["nfs"].values()
         for k in ("READ (MDS fallback)", "WRITE (MDS fallback)"))
print(r, c, w, 1, run["bytes"], f'{run["elapsed_s"]:.3f}', f"{mds:.6f}",
      f"{(int(h1) - int(h0)) / int(tck):.2f}", f'{run["cpu"]["percent"]:.1f}',
      f"{busy(0):.2f}", f"{busy(1):.2f}", fb, f"{(m1 - m0) / int(tck):.2f}", f"{t1 - t0:.2f}", ns)
PY
            tail -1 "$OUT/runs.txt" >&2
            echo "$r $c $w $(cat /proc/loadavg)" >>"$OUT/load.txt"
        done
    done
done
T1=$(now)
for n in $COUNTS; do NS_T1[$n]=$(mds_ns "$n"); done
for n in $COUNTS; do
    m=$(cpu_of "${MDS_PID[$n]}"); m0=${MDS0[$n]}
    echo "$n $((m - m0)) $T0 $T1 ${NS_T1[$n]:--} ${NS0[$n]:--}" >>"$OUT/mds-total.txt"
done
uptime | tee "$OUT/uptime-end.txt"

python3 - "$OUT/runs.txt" "$RATE" "$COUNTS" "$WORKLOADS" "$OUT/mds-total.txt" "$TCK" <<'PY' | tee "$OUT/table.md"
import collections, re, sys
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
rate_s, counts, workloads = sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
tck = int(sys.argv[6])
# Each MDS's idle floor: its CPU while the other configurations ran.
# With a cgroup, in nanoseconds; otherwise in clock ticks.
precise = all(row[14] != "-" for row in rows if row[1] not in ("base", "base-direct"))
own = collections.defaultdict(lambda: [0.0, 0.0])
for row in rows:
    run_cpu = int(row[14]) / 1e9 if precise and row[14] != "-" else float(row[12])
    own[row[1]][0] += run_cpu; own[row[1]][1] += float(row[13])
idle = {}
for l in open(sys.argv[5]).read().splitlines():
    n, ticks, t0, t1, ns1, ns0 = l.split()
    total = (int(ns1) - int(ns0)) / 1e9 if precise and ns1 != "-" and ns0 != "-" else int(ticks) / tck
    cpu_s, wall = total - own[n][0], float(t1) - float(t0) - own[n][1]
    idle[n] = (max(cpu_s, 0.0), wall)
MIB = 1 << 20
def rate_bytes(s):
    m = re.fullmatch(r"([0-9.]+)\s*([kmg]?)(i?b)?(/s)?", s.strip().lower())
    v, u, b = float(m.group(1)), m.group(2), m.group(3) or ""
    mul = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[u]
    if b == "b" and u:
        mul = {"k": 1e3, "m": 1e6, "g": 1e9}[u]
    return v * mul
link = rate_bytes(rate_s) / MIB
agg = collections.defaultdict(list)  # (config, workload) -> [MiB/s per rep]
cpu = collections.defaultdict(lambda: [0.0, 0.0])  # (config, workload) -> [cpu s, MiB]
busy = collections.defaultdict(list)
fallbacks = collections.defaultdict(int)
whole = collections.defaultdict(float)  # the MDS's CPU over whole runs, s
for r, c, w, _, b, el, mds, helpers, client, c0, c1, fb, _, _, ns in rows:
    mib = int(b) / MIB
    agg[(c, w)].append(mib / float(el))
    cpu[(c, w)][0] += float(mds); cpu[(c, w)][1] += mib
    if ns != "-":
        whole[(c, w)] += int(ns) / 1e9
    busy[(c, w)].append((float(client), float(c0), float(c1)))
    fallbacks[(c, w)] += int(fb)
mean = lambda v: sum(v) / len(v)
print(f"Link: {link:.1f} MiB/s per direction per data server.")
print("MDS CPU: " + ("nanoseconds, from its cgroup" if precise else "clock ticks (no cgroup)") + ", over the measured period; 'whole runs' adds setup, warm-up and teardown, per MiB of the measured period.")
for n in counts:
    if n in idle:
        c, wall = idle[n]
        print(f"MDS idle floor, N={n}: {c * 1e3:.0f} ms of CPU in {wall:.0f} s idle ({c / wall * 1e6:.0f} µs/s).")
print()
print("| workload | N | aggregate MiB/s (reps) | per link | / (N x one-DS) | MDS CPU µs/MiB | whole runs µs/MiB | its idle floor µs/MiB | / plain Ferrite's, one link | / plain Ferrite's, direct | client core | CPU 1 busy | fallbacks |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
per_mib = lambda k: cpu[k][0] * 1e6 / cpu[k][1] if k in cpu and cpu[k][1] > 0 else None
for w in workloads:
    one = mean(agg[("1", w)]) if ("1", w) in agg else None
    plain = {b: per_mib((b, w)) for b in ("base", "base-direct")}
    for n in counts:
        k = (n, w)
        if k not in agg:
            continue
        a = mean(agg[k])
        reps = ", ".join(f"{x:.1f}" for x in agg[k])
        ratio = f"{a / (int(n) * one):.3f}" if one else "-"
        us = per_mib(k)
        rel = {b: f"{100 * us / v:.2f}%" if v else "-" for b, v in plain.items()}
        cl = mean([b[0] for b in busy[k]]); c1 = mean([b[2] for b in busy[k]])
        fl = "-"
        if n in idle and idle[n][1] > 0:
            secs = sum(float(x[5]) for x in rows if x[1] == n and x[2] == w)
            fl = f"{idle[n][0] / idle[n][1] * secs * 1e6 / cpu[k][1]:.2f}"
        wr = f"{whole[k] * 1e6 / cpu[k][1]:.2f}" if k in whole else "-"
        print(f"| {w} | {n} | {a:.1f} ({reps}) | {a / int(n) / link:.2f} | {ratio} | {us:.2f} | {wr} | {fl} | {rel['base']} | {rel['base-direct']} | {cl:.0f}% | {100 * c1:.0f}% | {fallbacks[k]} |")
    for base in ("base", "base-direct"):
        k = (base, w)
        if k not in agg:
            continue
        a = mean(agg[k]); reps = ", ".join(f"{x:.1f}" for x in agg[k])
        cl = mean([b[0] for b in busy[k]]); c1 = mean([b[2] for b in busy[k]])
        label = "plain Ferrite, one link" if base == "base" else "plain Ferrite, direct"
        print(f"| {w} | {label} | {a:.1f} ({reps}) | | | {per_mib(k):.1f} | | | | | {cl:.0f}% | {100 * c1:.0f}% | |")
PY
echo "results: $OUT" >&2
