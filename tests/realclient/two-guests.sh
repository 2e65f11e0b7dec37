#!/usr/bin/env bash
# Two real Linux NFS clients at once: boots two qemu guests (A and B, distinct
# nfs.nfs4_unique_id, their own disk snapshots and 9p out dirs) against the same
# server and runs guest/twoguests.py in both. They contend for fcntl locks,
# flock and O_CREAT|O_EXCL names, check close-to-open data visibility and,
# with --restart-cmd (run when a guest asks for a server restart), that a
# lock A held is reclaimed by A before B can have it; coordinated through a
# shared host directory (9p). See README.md.
#
#   tests/realclient/two-guests.sh [--port 2049] [--export /] [--vers 4.2]
#       [--out DIR] [--mount-opts OPTS] [--timeout SEC] [--mem SIZE]
#       [--cpus N] [--keep] [--console] [--restart-cmd CMD]
#       [--expect-delegations] [--tap BRIDGE]
#
# --tap BRIDGE: each guest gets a second NIC on a tap device attached to
# BRIDGE (lib/guest.sh rc_bridge_up) and reaches the server at the
# bridge's address, which can call it back; needed for --vers 3 (NFSv3
# with NLM locking), mix (guest A on NFSv3, B on NFSv4.1) and mix40 (guest A on
# NFSv4.0, B on NFSv4.1).
# --expect-delegations: the server is expected to grant read delegations
# (the deleg_* checks fail, rather than skip, if it grants none).
#
# Exit status: 0 all PASS; 1 any FAIL (or missing result); 2 usage; 3 the
# server is not reachable; 125 a guest could not be built/started (exit 0
# with a loud SKIPPED notice instead if FERRITE_SKIP_REALCLIENT=1).
set -uo pipefail
RC_DIR="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
CACHE="${FERRITE_RC_CACHE:-/var/cache/ferrite-realclient}"
RC_NAME=realclient-two-guests
# shellcheck source=tests/realclient/lib/guest.sh
. "$RC_DIR/lib/guest.sh"

# --timeout: an upper bound on each guest, there for a guest that hangs
# (the guests' own waits end sooner: barriers 300 s, guest/twoguests.py).
# realclient-ferrite.sh's three columns with their restarts take a few
# minutes under TCG here; 1200 s leaves a machine twice as slow, and
# loaded, well inside.
port=2049 export_path=/ vers=4.2 out="" mount_opts="" timeout=1200 mem=1024M cpus=1 keep=0 console=0
restart_cmd=""
expect_deleg=0 tap_bridge=""

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
say() { printf 'realclient-two-guests: %s\n' "$*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$(now)" -v b="$1" 'BEGIN{printf "%.0f", a-b}'; }

while [ $# -gt 0 ]; do
    case "$1" in
    --host) case "$2" in 127.0.0.1|localhost) ;; *) say "--host must be 127.0.0.1"; exit 2 ;; esac; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --export) export_path="$2"; shift 2 ;;
    --vers) vers="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --mount-opts) mount_opts="$2"; shift 2 ;;
    --restart-cmd) restart_cmd="$2"; shift 2 ;;
    --expect-delegations) expect_deleg=1; shift ;;
    --tap) tap_bridge="$2"; shift 2 ;;
    --timeout) timeout="$2"; shift 2 ;;
    --mem) mem="$2"; shift 2 ;;
    --cpus) cpus="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --console) console=1; shift ;;
    -h|--help) usage ;;
    *) say "unknown argument: $1"; usage ;;
    esac
done

[ "$(id -u)" = 0 ] || rc_guest_unavailable "must run as root (debootstrap/chroot for the image, 9p share ownership)"
[[ "$port" =~ ^[0-9]+$ ]] || { say "bad --port $port"; exit 2; }
IFS=, read -r -a vlist <<< "$vers"
[ ${#vlist[@]} -gt 0 ] || { say "--vers: empty"; exit 2; }
host=127.0.0.1 guest_host=10.0.2.2
if [ -n "$tap_bridge" ]; then
    host="$(rc_bridge_ip "$tap_bridge")"
    [ -n "$host" ] || { say "--tap: no bridge $tap_bridge with an IPv4 address"; exit 2; }
    guest_host="$host"
fi
for v in "${vlist[@]}"; do
    case "$v" in
    4.2|4.1) ;;
    3|mix|4.0|mix40) [ -n "$tap_bridge" ] || { say "--vers $v needs --tap (the server calls NFSv3 and NFSv4.0 clients back)"; exit 2; } ;;
    *) say "--vers: unsupported version '$v' (4.2, 4.1, 4.0, 3, mix, mix40)"; exit 2 ;;
    esac
done

"$RC_DIR/lib/prepare.sh" || rc_guest_unavailable "building the guest image failed (see messages above)"
rc_port_open "$port" "$host" ||
    { say "ERROR: nothing accepts TCP connections on $host:$port: start the server under test first"; exit 3; }

# --- per-run directories: OUT/{a,b} per guest (OUT/X/guest is its 9p rcout), OUT/shared
runid="$(date +%Y%m%d-%H%M%S)-$$"
if [ -z "$out" ]; then   # default location: keep the newest 20 runs
    out="/var/tmp/ferrite-realclient/two-guests/$runid"
    { ls -1dt /var/tmp/ferrite-realclient/two-guests/*/ 2>/dev/null || true; } | tail -n +20 | xargs -r rm -rf
fi
mkdir -p "$out" || { say "cannot create --out $out"; exit 2; }
out="$(cd "$out" && pwd)"
rm -rf "$out"/a "$out"/b "$out"/shared "$out"/report.txt "$out"/results.txt
mkdir -p "$out"/a/guest "$out"/b/guest "$out"/shared
RC_VERS="$vers" python3 "$RC_DIR/guest/twoguests.py" --plan > "$out/plan.txt" || { say "cannot compute the plan"; exit 2; }

rc_pick_accel
declare -A tailpid
for r in a b; do
    R=${r^^}
    work="$out/$r/.boot"; rm -rf "$work"; mkdir -p "$work/payload/rc"
    install -m 755 "$RC_DIR/guest/init" "$work/payload/rc/init"
    install -m 644 "$RC_DIR/guest/suite.py" "$work/payload/rc/suite.py"
    install -m 644 "$RC_DIR/guest/twoguests.py" "$work/payload/rc/twoguests.py"
    {
        tap_ip=""
        [ -n "$tap_bridge" ] && tap_ip="${host%.*}.$([ $r = a ] && echo 11 || echo 12)/24"
        printf 'export RC_TAP_IP=%q RC_V3_LOCK=%q\n' "$tap_ip" "$([ -n "$tap_bridge" ] && echo 1 || echo 0)"
        printf 'export RC_HOST=%q RC_PORT=%q RC_EXPORT=%q RC_VERS=%q RC_ONLY=\n' "$guest_host" "$port" "$export_path" "$vers"
        printf 'export RC_MOUNTPORT= RC_MOUNT_OPTS=%q RC_RUNID=%q RC_KEEP=%q RC_OUT=/rcout RC_RESTART=%q\n' \
            "$mount_opts" "$runid" "$keep" "$([ -n "$restart_cmd" ] && echo 1 || echo 0)"
        printf 'export RC_SCRIPT=/rc/twoguests.py RC_ROLE=%q RC_SHARE=1 RC_SHARED=/rcshare RC_EXPECT_DELEG=%q\n' "$R" "$expect_deleg"
    } > "$work/payload/rc/env"
    rc_make_initrd "$work"
    : > "$out/$r/console.log"; : > "$out/$r/output.log"; : > "$out/$r/status.log"
done

say "run $runid: two guests, server $host:$port export $export_path vers $vers accel $accel out $out"
# At exit, whatever the reason: the guests' qemu stopped (those still
# running), then their tap devices removed (half-made ones too).
declare -A qpid=([a]="" [b]="")
cleanup() {
    local r
    for r in a b; do
        if [ -n "${qpid[$r]}" ]; then kill "${qpid[$r]}" 2>/dev/null; wait "${qpid[$r]}" 2>/dev/null; fi
        [ -z "$tap_bridge" ] || rc_tap_down "frc-t$$$r"
    done
}
trap cleanup EXIT
if [ -n "$tap_bridge" ]; then
    for r in a b; do
        rc_tap_up "$tap_bridge" "frc-t$$$r" || rc_guest_unavailable "cannot make the tap device frc-t$$$r on $tap_bridge"
    done
fi
t0=$(now)
for r in a b; do
    RC_TAP="" RC_TAP_MAC=""
    if [ -n "$tap_bridge" ]; then
        RC_TAP="frc-t$$$r" RC_TAP_MAC="52:54:00:77:00:$([ $r = a ] && echo 11 || echo 12)"
    fi
    rc_qemu_argv "ferrite-rc2-$runid-$r" "$cpus" "$mem" "$out/$r/.boot/initrd.img" "ferrite-rc2-$runid-$r" \
        "$out/$r" "$out/$r/guest" "rcshare=$out/shared"
    printf '%q ' "${qemu[@]}" > "$out/$r/qemu.cmd"; echo >> "$out/$r/qemu.cmd"
    TMPDIR=/var/tmp timeout -k 10 "$timeout" "${qemu[@]}" </dev/null 2>"$out/$r/qemu.stderr" &
    qpid[$r]=$!
    tail -n +1 -F --pid="${qpid[$r]}" "$out/$r/output.log" 2>/dev/null | sed -u "s/\r\$//; s/^/[${r^^}] /" &
    tailpid[$r]=$!
    if [ $console = 1 ]; then
        tail -n +1 -F --pid="${qpid[$r]}" "$out/$r/console.log" 2>/dev/null | sed -u "s/^/[console ${r^^}] /" >&2 &
    fi
done
trap 'kill "${qpid[a]}" "${qpid[b]}" 2>/dev/null; say "interrupted"; exit 130' INT TERM

# --- supervise: boot limit; a guest that dies without RC-EXIT gets an abort
#     file in the shared dir so that the other one stops waiting for it.
boot_limit=$rc_boot_limit
declare -A booted=([a]="" [b]="") gone=([a]="" [b]="")
while kill -0 "${qpid[a]}" 2>/dev/null || kill -0 "${qpid[b]}" 2>/dev/null; do
    for r in a b; do
        [ -z "${booted[$r]}" ] && grep -q '^RC-BOOTED' "$out/$r/status.log" && booted[$r]=$(now)
        if [ -z "${booted[$r]}" ] && [ "$(since "$t0")" -gt $boot_limit ]; then
            say "guest ${r^^} did not boot within ${boot_limit}s: killing both guests"
            kill "${qpid[a]}" "${qpid[b]}" 2>/dev/null
        fi
        if [ -z "${gone[$r]}" ] && ! kill -0 "${qpid[$r]}" 2>/dev/null; then
            gone[$r]=1
            if ! grep -q '^RC-EXIT' "$out/$r/status.log"; then
                say "guest ${r^^} ended without finishing its checks: telling the other guest"
                for v in "${vlist[@]}"; do
                    echo "guest ${r^^} died (qemu exited)" > "$out/shared/v${v//./}-abort.${r^^}"
                done
            fi
        fi
    done
    # A guest asks for a server restart (the grace checks): run the
    # command, then answer in the shared directory.
    for req in "$out"/shared/*-restart-req.[AB]; do
        [ -e "$req" ] || continue
        ack="${req%-restart-req.*}-restart-ack.H"
        [ -e "$ack" ] && continue
        say "guest asked for a server restart ($(basename "$req")): running: ${restart_cmd:-nothing}"
        rrc=1
        if [ -n "$restart_cmd" ]; then
            bash -c "$restart_cmd" > "$out/restart-$(basename "$req").log" 2>&1; rrc=$?
        fi
        echo "rc=$rrc" > "$ack.tmp" && mv "$ack.tmp" "$ack"
    done
    sleep 0.2
done
declare -A qrc
for r in a b; do wait "${qpid[$r]}"; qrc[$r]=$?; qpid[$r]=""; wait "${tailpid[$r]}" 2>/dev/null; done
trap - INT TERM
total=$(since "$t0")

for r in a b; do
    grep -q '^RC-BOOTED' "$out/$r/status.log" || {
        say "guest ${r^^}: qemu rc=${qrc[$r]}; qemu stderr:"; sed 's/^/  /' "$out/$r/qemu.stderr" >&2
        say "last console lines:"; tail -20 "$out/$r/console.log" | tr -d '\r' | sed 's/^/  /' >&2
        rc_guest_unavailable "guest ${r^^}: qemu exited (rc ${qrc[$r]}) before the guest init ran; logs in $out/$r"
    }
    grep -q '^RC-FATAL' "$out/$r/status.log" &&
        say "guest ${r^^} reported: $(grep '^RC-FATAL' "$out/$r/status.log" | tr -d '\r' | head -3 | tr '\n' ' ')"
    grep -q '^RC-EXIT' "$out/$r/status.log" ||
        say "WARNING: guest ${r^^} did not finish (qemu rc=${qrc[$r]}$( [ "${qrc[$r]}" = 124 ] && echo ", timed out after ${timeout}s"))"
done
cat "$out"/a/guest/results.txt "$out"/b/guest/results.txt > "$out/results.txt" 2>/dev/null

# --- report -----------------------------------------------------------------------
python3 "$RC_DIR/lib/report.py" "$out" "$total" "$accel"
rc=$?
say "artifacts: $out (report.txt, results.txt, {a,b}/output.log, {a,b}/console.log, {a,b}/guest/mountstats-*.txt, shared/)"
rm -rf "$out"/a/.boot "$out"/b/.boot
exit $rc
