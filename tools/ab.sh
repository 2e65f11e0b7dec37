#!/usr/bin/env bash
# Ferrite against NFS-Ganesha on this machine: server CPU per operation,
# side by side (issue 10; docs/benchmarks.md).
#
#   tools/ab.sh [OUTDIR]
#
# Starts Ferrite (release build, a fresh export) and NFS-Ganesha
# (tools/ganesha.sh, FSAL_VFS, a fresh export), both pinned to CPU 1; the
# clients run pinned to CPU 0. Every row runs on both servers, A then B,
# then B then A on the next repetition. Server CPU is utime + stime of the
# server process (all threads) over the measured period, from
# /proc/PID/stat (`ferrite bench run --server-pid`), divided by the units
# of work done in it. The nfs-rs rows drive a third-party client (nfs-rs
# from PyPI, installed into a virtual environment outside the repository,
# /var/tmp/ferrite-nfsrs-venv) through tools/nfsrs-ops.py.
#
# Prints, per row: each server's µs of CPU per operation (summed CPU over
# summed operations of all repetitions), its ops/s (mean), Ferrite / Ganesha,
# and flags: "client-bound" when a client used 90% or more of its core in
# some run (the row then measures the client as much as the servers), and
# the p50 latency of the row's unit (a READ, a whole file, a cycle).
#
# Every row runs twice: over NFSv4.1 and over NFSv3 (issue 13: MOUNT and
# NLM on Ferrite's NFS port, on their own ports for Ganesha, which runs
# its own rpcbind and rpc.statd). The NFSv3 rows' names end in "-v3".
# VERS=4.0 adds NFSv4.0 rows (issue 34; nfs4.0://: no session, per-owner
# sequence ids, no callback path so no delegations on either server),
# their names ending in "-v40".
#
# Environment: REPS (2), DURATION (5s, per time-based run), ONLY (a subset
# of the row names below, "-v3" and "-v40" ones included), VERS ("4.1 3":
# the versions to run, of 4.1, 4.0 and 3), FILES_NFSRS (2000), FERRITE_PORT (20750),
# FRESH_FS=1 (the create rows run on file systems made for each run; see
# below), FERRITE_LOG=1 (Ferrite's export gets a write log, `--log OUTDIR/ferrite/log`,
# on the same disk), FERRITE_BIN (a Ferrite binary to use instead of
# building this tree: a build that stays put while the tree changes),
# FERRITE_ARGS (more options for Ferrite's `serve`, e.g. --no-delegations).
# Everything (JSON per run, server logs, table.md) goes to OUTDIR
# (default /var/tmp/ferrite-ab/DATE).
#
# FRESH_FS=1 (root; loop devices): a create run's cost depends on the
# file system's past as much as on the server (ext4 without a journal,
# as this machine's root, skips the inodes deleted in the last minute
# or so and reads each one's record to do it), so with FRESH_FS=1 each
# create run, on either server, gets a new 2 GiB ext4 (no journal, inode
# tables written at mkfs: nothing left for the background) loop-mounted
# under OUTDIR/fresh, the server restarted onto it, and its usual export
# back before the next row.
set -euo pipefail
top="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
cd "$top"
OUT="${1:-/var/tmp/ferrite-ab/$(date +%Y%m%d-%H%M%S)}"
REPS="${REPS:-2}"
DURATION="${DURATION:-5s}"
FILES_NFSRS="${FILES_NFSRS:-2000}"
FPORT="${FERRITE_PORT:-20750}"
GPORT="${GANESHA_PORT:-12050}"
BASE=(randread-16 randread-1 randwrite-16 randwrite-sync seqread seqwrite
    smallfile-read dirlist create locked-read nfsrs)
VERS="${VERS:-4.1 3}"
ROWS=()
for v in $VERS; do
    case "$v" in
    4.1) ROWS+=("${BASE[@]}") ;;
    # No nfs-rs row over NFSv3: nfs-rs 0.8.7 asks MOUNT for "" when the
    # export is "/", which Ganesha refuses ("Export entry for  not found").
    3) for r in "${BASE[@]}"; do [ "$r" = nfsrs ] || ROWS+=("$r-v3"); done ;;
    4.0) for r in "${BASE[@]}"; do [ "$r" = nfsrs ] || ROWS+=("$r-v40"); done ;;
    *) echo "ab.sh: VERS takes 4.1, 4.0 and 3, not $v" >&2; exit 2 ;;
    esac
done
ONLY="${ONLY:-${ROWS[*]}}"
mkdir -p "$OUT"
[ "$(nproc)" -ge 2 ] || { echo "ab.sh: needs 2 CPUs (server on 1, client on 0)" >&2; exit 2; }

if [ -n "${FERRITE_BIN:-}" ]; then
    F="$FERRITE_BIN"
else
    cargo build --release -p ferrite
    F="$top/target/release/ferrite"
fi

# The third-party client, outside the repository.
# shellcheck source=tools/bench-lib.sh
. tools/bench-lib.sh
if [[ " $ONLY " == *" nfsrs"* ]]; then nfsrs_venv; fi

# ---- the servers ----
fpid=""
cleanup() {
    [ -n "$fpid" ] && kill "$fpid" 2>/dev/null || true
    bash tools/ganesha.sh stop >/dev/null 2>&1 || true
    for m in "$OUT"/fresh/*/; do
        mountpoint -q "$m" && umount "$m" || true
    done
}
trap cleanup EXIT
log=(); [ "${FERRITE_LOG:-0}" = 1 ] && log=(--log "$OUT/ferrite/log")
# start_ferrite EXPORT STATE: Ferrite on EXPORT, pinned, once it listens.
start_ferrite() {
    # shellcheck disable=SC2086
    taskset -c 1 "$F" serve "$1" --listen "127.0.0.1:$FPORT" --portmap off \
        --state-dir "$2" "${log[@]}" ${FERRITE_ARGS:-} >>"$OUT/ferrite/server.log" 2>&1 &
    fpid=$!
    wait_port "$FPORT" "$OUT/ferrite/server.log"
}
stop_ferrite() {
    kill "$fpid" 2>/dev/null || true
    wait "$fpid" 2>/dev/null || true
    fpid=""
}
rm -rf "$OUT/ferrite" && mkdir -p "$OUT/ferrite/export" "$OUT/ferrite/state"
start_ferrite "$OUT/ferrite/export" "$OUT/ferrite/state"
FRESH=1 ganesha_restart
declare -A PID=([ferrite]="$fpid" [ganesha]="$gpid")

# fresh_fs S: server S restarted onto a new file system (FRESH_FS=1).
fresh_fs() {
    local d="$OUT/fresh/$1" img="$OUT/fresh/$1.img"
    # The server first lets go of what it exports (perhaps the last fresh
    # file system), then gets a new one.
    if [ "$1" = ferrite ]; then
        stop_ferrite
    else
        bash tools/ganesha.sh stop >>"$OUT/ganesha-start.log" 2>&1
    fi
    mkdir -p "$d"
    if mountpoint -q "$d"; then umount "$d"; fi
    rm -f "$img"
    truncate -s 2G "$img"
    mkfs.ext4 -q -F -O ^has_journal -E lazy_itable_init=0,lazy_journal_init=0 "$img"
    mount -o loop "$img" "$d"
    mkdir -p "$d/export"
    if [ "$1" = ferrite ]; then
        rm -rf "$OUT/fresh/ferrite-state" && mkdir -p "$OUT/fresh/ferrite-state"
        start_ferrite "$d/export" "$OUT/fresh/ferrite-state"
        PID[ferrite]="$fpid"
    else
        ganesha_restart "$d/export"
        PID[ganesha]="$gpid"
    fi
}
# usual_fs: both servers back on their usual exports.
usual_fs() {
    stop_ferrite
    # A new state directory: with the old one Ferrite would hold a grace
    # period for clients that are gone.
    rm -rf "$OUT/ferrite/state" && mkdir -p "$OUT/ferrite/state"
    start_ferrite "$OUT/ferrite/export" "$OUT/ferrite/state"
    ganesha_restart
    PID=([ferrite]="$fpid" [ganesha]="$gpid")
    for m in "$OUT"/fresh/*/; do
        mountpoint -q "$m" && umount "$m" || true
    done
}
declare -A TGT=([ferrite]="nfs4://127.0.0.1:$FPORT/" [ganesha]="nfs4://127.0.0.1:$GPORT/")
declare -A URL=([ferrite]="nfs://127.0.0.1:$FPORT/?version=4.1" [ganesha]="nfs://127.0.0.1:$GPORT/?version=4.1")
# NFSv3: Ferrite serves MOUNT and NLM on its NFS port; Ganesha on the
# ports tools/ganesha.sh gives them (its defaults, or the same variables).
GMNT="${GANESHA_MNT_PORT:-12048}" GNLM="${GANESHA_NLM_PORT:-12047}"
declare -A TGT3=([ferrite]="nfs3://127.0.0.1:$FPORT/?mountport=$FPORT&nlmport=$FPORT"
    [ganesha]="nfs3://127.0.0.1:$GPORT/?mountport=$GMNT&nlmport=$GNLM")
declare -A TGT40=([ferrite]="nfs4.0://127.0.0.1:$FPORT/" [ganesha]="nfs4.0://127.0.0.1:$GPORT/")
# target ROW S: the target of row ROW (its version by its name's suffix)
# on server S.
target() {
    case "$1" in
    *-v3) echo "${TGT3[$2]}" ;;
    *-v40) echo "${TGT40[$2]}" ;;
    *) echo "${TGT[$2]}" ;;
    esac
}

want() { [[ " $ONLY " == *" $1 "* ]]; }
large=(--file-size 64m)
timed=(--duration "$DURATION" --warmup 1s --runs 1)
args() {
    case "$1" in
    randread-16) echo randread "${large[@]}" --io-size 4k --threads 16 "${timed[@]}" ;;
    randread-1) echo randread "${large[@]}" --io-size 4k --threads 1 "${timed[@]}" ;;
    randwrite-16) echo randwrite "${large[@]}" --io-size 4k --threads 16 "${timed[@]}" ;;
    randwrite-sync) echo randwrite "${large[@]}" --io-size 4k --threads 16 --sync "${timed[@]}" ;;
    seqread) echo seqread "${large[@]}" --io-size 1m --threads 4 "${timed[@]}" ;;
    seqwrite) echo seqwrite "${large[@]}" --io-size 1m --threads 4 "${timed[@]}" ;;
    smallfile-read) echo smallfile-read --threads 8 "${timed[@]}" ;;
    dirlist) echo dirlist --threads 4 "${timed[@]}" ;;
    create) echo create --clients 2 --threads 4 --files 1000 --file-size 4k --duration 10m ;;
    locked-read) echo locked-read --duration 10m ;;
    esac
}

# The rows of all versions share one data set per server, prepared over
# the first version VERS names.
wants() { want "$1" || want "$1-v3" || want "$1-v40"; }
for s in ferrite ganesha; do
    case "$VERS" in
    3*) t="${TGT3[$s]}" ;;
    4.0*) t="${TGT40[$s]}" ;;
    *) t="${TGT[$s]}" ;;
    esac
    if wants randread-16 || wants randread-1 || wants randwrite-16 || wants randwrite-sync ||
        wants seqread || wants seqwrite; then
        "$F" bench prepare randread --target "$t" "${large[@]}" >/dev/null
    fi
    if wants smallfile-read || wants locked-read; then
        "$F" bench prepare smallfile-read --target "$t" >/dev/null
    fi
    if wants dirlist; then "$F" bench prepare dirlist --target "$t" >/dev/null; fi
done

# ---- the runs, interleaved ----
for row in "${ROWS[@]}"; do
    want "$row" || continue
    for r in $(seq 1 "$REPS"); do
        order="ferrite ganesha"
        [ $((r % 2)) -eq 0 ] && order="ganesha ferrite"
        for s in $order; do
            j="$OUT/$row-$s-$r.json"
            echo "ab: $row, $s, repetition $r" >&2
            base="${row%-v3}" tgt="$(target "$row" "$s")"
            base="${base%-v40}"
            [ "$base" = create ] && [ "${FRESH_FS:-0}" = 1 ] && fresh_fs "$s"
            if [ "$base" = nfsrs ]; then
                taskset -c 0 "$NFSRS_VENV/bin/python" tools/nfsrs-ops.py "${URL[$s]}" "${PID[$s]}" \
                    "$FILES_NFSRS" >"$j"
            else
                # shellcheck disable=SC2046
                taskset -c 0 "$F" bench run $(args "$base") --target "$tgt" \
                    --server-pid "${PID[$s]}" -o "$j" >"${j%.json}.txt"
            fi
        done
    done
    case "$row" in create | create-v3 | create-v40) [ "${FRESH_FS:-0}" = 1 ] && usual_fs ;; esac
done

# ---- the table ----
python3 - "$OUT" "$REPS" "$ONLY" <<'EOF' | tee "$OUT/table.md"
import glob, json, os, sys
out, reps, only = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
names = {
    "randread-16": "randread 4 KiB, 16 threads",
    "randread-1": "randread 4 KiB, 1 thread",
    "randwrite-16": "randwrite 4 KiB, 16 threads",
    "randwrite-sync": "randwrite 4 KiB FILE_SYNC, 16 threads",
    "seqread": "seqread 1 MiB, 4 threads",
    "seqwrite": "seqwrite 1 MiB, 4 threads",
    "smallfile-read": "smallfile-read, 8 threads",
    "dirlist": "dirlist, 4 threads",
    "create": "create 4 KiB, 2 clients x 4 threads",
    "locked-read": "locked-read (cycles)",
}

def bench(row, s):
    """(cpu_s, ops, [ops/s], max client %, [p50 µs]) over the repetitions."""
    cpu = ops = 0.0
    rates, clients, p50 = [], [], []
    for r in range(1, reps + 1):
        d = json.load(open(f"{out}/{row}-{s}-{r}.json"))
        for run in d["runs"]:
            sc = run["server_cpu"]
            cpu += sc["user_s"] + sc["sys_s"]
            ops += run["ops"]
            rates.append(run["ops_per_s"])
            clients.append(run["cpu"]["percent"])
            # The unit's own latency (a whole file, a locked-read cycle,
            # a READ): the longest of the recorded kinds.
            lat = max(run["latency"].items(), key=lambda kv: kv[1]["p50_us"], default=None)
            if lat:
                p50.append((lat[0], lat[1]["p50_us"]))
    return cpu, ops, rates, max(clients), p50

def nfsrs(phase, s, suffix):
    cpu = ops = 0.0
    rates, clients = [], []
    for r in range(1, reps + 1):
        p = json.load(open(f"{out}/nfsrs{suffix}-{s}-{r}.json"))["phases"][phase]
        cpu += p["server_cpu_s"]
        ops += p["ops"]
        rates.append(p["ops_per_s"])
        clients.append(p["client_cpu_percent"])
    return cpu, ops, rates, max(clients), []

rows = []
for suffix, vers in (("", "v4.1"), ("-v40", "v4.0"), ("-v3", "v3")):
    for row in [r for r in names if r + suffix in only]:
        rows.append((f"{vers} {names[row]}", bench(row + suffix, "ferrite"), bench(row + suffix, "ganesha")))
    if "nfsrs" + suffix in only:
        for ph in ("create", "stat", "remove"):
            rows.append((f"{vers} nfs-rs 0.8.7 {ph}", nfsrs(ph, "ferrite", suffix), nfsrs(ph, "ganesha", suffix)))

mean = lambda v: sum(v) / len(v) if v else float("nan")
print(f"Server CPU per operation, {reps} repetitions interleaved; "
      f"servers on CPU 1, clients on CPU 0; {os.uname().nodename}, {os.cpu_count()} CPUs.\n")
print("| workload | Ferrite µs/op | Ganesha µs/op | Ferrite / Ganesha | Ferrite ops/s | Ganesha ops/s | notes |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for name, f, g in rows:
    fu, gu = f[0] * 1e6 / max(f[1], 1), g[0] * 1e6 / max(g[1], 1)
    notes = []
    for who, x in (("Ferrite", f), ("Ganesha", g)):
        if x[3] >= 90:
            notes.append(f"client-bound against {who} ({x[3]:.0f}% of a core)")
    if f[4] and g[4]:
        what = f[4][0][0]
        notes.append(f"p50 of a {what} {mean([x for _, x in f[4]]):.0f} µs "
                     f"vs {mean([x for k, x in g[4] if k == what]):.0f} µs")
    print(f"| {name} | {fu:.1f} | {gu:.1f} | {fu / gu:.2f} | {mean(f[2]):,.0f} | {mean(g[2]):,.0f} | {'; '.join(notes)} |")
EOF
echo "ab.sh: results in $OUT" >&2
