#!/usr/bin/env bash
# The floor under the one-request rows (issue 10; docs/benchmarks.md):
# with one request in flight, what does a call cost a server that does no
# NFS work at all, on this machine's loopback TCP and scheduler?
#
#   tools/floor.sh [OUTDIR]
#
# Four servers, each pinned to CPU 1, clients pinned to CPU 0, runs
# interleaved (the order rotates every repetition):
#   ferrite   `ferrite serve` on a fresh export
#   ganesha   NFS-Ganesha (tools/ganesha.sh, FSAL_VFS, a fresh export)
#   null      `ferrite bench null-server`: canned replies behind Ferrite's
#             own transport (the rpc crate on tokio)
#   threaded  `ferrite bench null-server --threaded`: canned replies behind
#             a thread per connection with blocking reads and writes, one
#             recvfrom, one sendto and one sleep per call
# Rows: randread 4 KiB at one thread (per READ), locked-read (per
# OPEN-LOCK-READ-LOCKU-CLOSE cycle, five COMPOUNDs) and, unless NFSRS=0,
# the nfs-rs stat and remove phases of tools/nfsrs-ops.py (a third-party
# client from PyPI in a virtual environment outside the repository, as
# tools/ab.sh makes it; FILES_NFSRS files, 2000), all over NFSv4.1. Prints
# each server's CPU µs per unit (utime + stime over the measured period,
# `ferrite bench run --server-pid`, summed over the repetitions) and its
# ratio to NFS-Ganesha's: the threaded null server's ratio is the least
# any server could reach on these rows here.
#
# Environment: REPS (3), DURATION (5s), NFSRS (1), FILES_NFSRS (2000),
# FERRITE_BIN (a Ferrite binary instead of building this tree),
# FLOOR_PORT (20760: Ferrite; the null servers take the next two).
# Output (JSON per run, table.md) goes to OUTDIR (default
# /var/tmp/ferrite-floor/DATE).
set -euo pipefail
top="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
cd "$top"
OUT="${1:-/var/tmp/ferrite-floor/$(date +%Y%m%d-%H%M%S)}"
REPS="${REPS:-3}"
NFSRS="${NFSRS:-1}"
FILES_NFSRS="${FILES_NFSRS:-2000}"
DURATION="${DURATION:-5s}"
P="${FLOOR_PORT:-20760}"
GPORT="${GANESHA_PORT:-12050}"
mkdir -p "$OUT"
[ "$(nproc)" -ge 2 ] || { echo "floor.sh: needs 2 CPUs (server on 1, client on 0)" >&2; exit 2; }
if [ -n "${FERRITE_BIN:-}" ]; then
    F="$FERRITE_BIN"
else
    cargo build --release -p ferrite
    F="$top/target/release/ferrite"
fi

# shellcheck source=tools/bench-lib.sh
. tools/bench-lib.sh
[ "$NFSRS" = 1 ] && nfsrs_venv

pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    bash tools/ganesha.sh stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
rm -rf "$OUT/ferrite" && mkdir -p "$OUT/ferrite/export" "$OUT/ferrite/state"
taskset -c 1 "$F" serve "$OUT/ferrite/export" --listen "127.0.0.1:$P" --portmap off \
    --state-dir "$OUT/ferrite/state" >"$OUT/ferrite/server.log" 2>&1 &
fpid=$!; pids+=("$fpid")
taskset -c 1 "$F" bench null-server --listen "127.0.0.1:$((P + 1))" >"$OUT/null.log" 2>&1 &
npid=$!; pids+=("$npid")
taskset -c 1 "$F" bench null-server --threaded --listen "127.0.0.1:$((P + 2))" \
    >"$OUT/threaded.log" 2>&1 &
tpid=$!; pids+=("$tpid")
FRESH=1 ganesha_restart
for port in "$P" "$((P + 1))" "$((P + 2))"; do wait_port "$port"; done
declare -A PID=([ferrite]="$fpid" [ganesha]="$gpid" [null]="$npid" [threaded]="$tpid")
declare -A TGT=([ferrite]="nfs4://127.0.0.1:$P/" [ganesha]="nfs4://127.0.0.1:$GPORT/"
    [null]="nfs4://127.0.0.1:$((P + 1))/" [threaded]="nfs4://127.0.0.1:$((P + 2))/")
SERVERS=(ferrite ganesha null threaded)

# The null servers answer from their arguments and need no data set.
for s in ferrite ganesha; do
    "$F" bench prepare randread --target "${TGT[$s]}" --file-size 64m >/dev/null
    "$F" bench prepare smallfile-read --target "${TGT[$s]}" >/dev/null
done
args() {
    case "$1" in
    randread-1) echo randread --file-size 64m --io-size 4k --threads 1 \
        --duration "$DURATION" --warmup 1s --runs 1 ;;
    locked-read) echo locked-read --duration "$DURATION" ;;
    esac
}
ROWS=(randread-1 locked-read)
[ "$NFSRS" = 1 ] && ROWS+=(nfsrs)
for row in "${ROWS[@]}"; do
    for r in $(seq 1 "$REPS"); do
        # Rotate the order: each server goes first once every four.
        order=("${SERVERS[@]:$(((r - 1) % 4))}" "${SERVERS[@]:0:$(((r - 1) % 4))}")
        for s in "${order[@]}"; do
            j="$OUT/$row-$s-$r.json"
            echo "floor: $row, $s, repetition $r" >&2
            if [ "$row" = nfsrs ]; then
                url="nfs://${TGT[$s]#nfs4://}"
                taskset -c 0 "$NFSRS_VENV/bin/python" tools/nfsrs-ops.py "${url%/}/?version=4.1" \
                    "${PID[$s]}" "$FILES_NFSRS" >"$j"
                continue
            fi
            # shellcheck disable=SC2046
            taskset -c 0 "$F" bench run $(args "$row") --target "${TGT[$s]}" \
                --server-pid "${PID[$s]}" -o "$j" >"${j%.json}.txt"
        done
    done
done

python3 - "$OUT" "$REPS" "$NFSRS" <<'EOF' | tee "$OUT/table.md"
import json, sys
out, reps, nfsrs = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
servers = ["ferrite", "ganesha", "null", "threaded"]
rows = {"randread-1": "randread 4 KiB, 1 thread (per READ)",
        "locked-read": "locked-read (per cycle)"}
if nfsrs:
    rows.update({"nfsrs/stat": "nfs-rs 0.8.7 stat", "nfsrs/remove": "nfs-rs 0.8.7 remove"})

def runs(row, s):
    """(server CPU s, units, client %) of each repetition."""
    for r in range(1, reps + 1):
        if row.startswith("nfsrs/"):
            p = json.load(open(f"{out}/nfsrs-{s}-{r}.json"))["phases"][row[6:]]
            yield p["server_cpu_s"], p["ops"], p["client_cpu_percent"]
            continue
        for run in json.load(open(f"{out}/{row}-{s}-{r}.json"))["runs"]:
            sc = run["server_cpu"]
            yield sc["user_s"] + sc["sys_s"], run["ops"], run["cpu"]["percent"]

print(f"Server CPU µs per unit, {reps} repetitions interleaved; servers on CPU 1, "
      "clients on CPU 0; ratio to NFS-Ganesha in brackets.\n")
print("| row | Ferrite | NFS-Ganesha | null server (tokio) | null server (threaded) | client-bound |")
print("| --- | --- | --- | --- | --- | --- |")
for row, name in rows.items():
    us, busy = {}, []
    for s in servers:
        cpu = ops = 0.0
        for c, n, client in runs(row, s):
            cpu += c
            ops += n
            if client >= 90:
                busy.append(s)
        us[s] = 1e6 * cpu / ops if ops else float("nan")
    cell = lambda s: f"{us[s]:.1f} ({us[s] / us['ganesha']:.2f})"
    print(f"| {name} | " + " | ".join(cell(s) for s in servers)
          + f" | {', '.join(sorted(set(busy))) or 'none'} |")
EOF
