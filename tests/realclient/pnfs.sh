#!/usr/bin/env bash
# pNFS with flexible-file layouts (RFC 8435) and the real Linux client: boots
# two qemu guests (lib/guest.sh) on a bridge of their own, where this script
# runs Ferrite metadata servers (MDS) over data servers (DS) on the bridge's
# addresses, and runs guest/pnfs.py in both (guest A the I/O checks, guest B
# with A for a layout recall); then checks the data servers' disks, their
# counters and the MDS's log from the host (lib/pnfs_check.py). See
# README.md ("pNFS").
#
#   tests/realclient/pnfs.sh [--vers 4.1,4.2] [--out DIR] [--timeout SEC]
#       [--no-ganesha] [--keep] [--console]
#
# Servers, on the bridge FERRITE_RC_PNFS_BRIDGE (frc-pn0, 10.77.1.1/24):
#   F    ferrite MDS --data-servers DS0,DS1 --stripe-unit 1m, two Ferrite DS
#   G    the same over two NFS-Ganesha DS (tools/ganesha.sh, NFSv3, each on
#        an address of its own, 10.77.1.2 and .3, its port mapper on 111
#        there, where the MDS finds its MOUNT); FERRITE_SKIP_GANESHA=1 or
#        --no-ganesha skips them (their rows SKIP, saying so)
#   M41, M42  ferrite MDS --mirrors 2 over two Ferrite DS, one per version:
#        one DS is killed during a read
# Guests: A at 10.77.1.11, B at 10.77.1.12, nothing else on the bridge.
#
# Exit status: 0 all PASS/SKIP; 1 any FAIL or missing row; 2 usage; 125 a
# guest or the bridge could not be set up (exit 0 with a loud SKIPPED notice
# instead if FERRITE_SKIP_REALCLIENT=1). FERRITE_BIN names a ferrite binary
# to use instead of building one (tests/realclient-ferrite.sh passes its own).
set -uo pipefail
RC_DIR="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
top="$(cd "$RC_DIR/../.." && pwd)"
CACHE="${FERRITE_RC_CACHE:-/var/cache/ferrite-realclient}"
RC_NAME=realclient-pnfs
# shellcheck source=tests/realclient/lib/guest.sh
. "$RC_DIR/lib/guest.sh"
# shellcheck source=tools/wait-lib.sh
. "$top/tools/wait-lib.sh"

# --timeout: an upper bound on each guest, there for a guest that hangs
# (each of its steps has its own limit in guest/pnfs.py). Both versions
# take about a minute under TCG here; 1800 s leaves a machine twice
# as slow, and loaded, well inside.
vers=4.1,4.2 out="" timeout=1800 keep=0 console=0 ganesha=1
ganesha_why=""
usage() { sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
say() { printf 'realclient-pnfs: %s\n' "$*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$(now)" -v b="$1" 'BEGIN{printf "%.0f", a-b}'; }

while [ $# -gt 0 ]; do
    case "$1" in
    --vers) vers="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --timeout) timeout="$2"; shift 2 ;;
    --no-ganesha) ganesha=0 ganesha_why="not run (--no-ganesha)"; shift ;;
    --keep) keep=1; shift ;;
    --console) console=1; shift ;;
    -h|--help) usage ;;
    *) say "unknown argument: $1"; usage ;;
    esac
done
t_script=$(now)
if [ "${FERRITE_SKIP_GANESHA:-0}" = 1 ]; then ganesha=0 ganesha_why="not run (FERRITE_SKIP_GANESHA=1)"; fi
IFS=, read -r -a vlist <<< "$vers"
[ ${#vlist[@]} -gt 0 ] || { say "--vers: empty"; exit 2; }
for v in "${vlist[@]}"; do
    case "$v" in 4.1|4.2) ;; *) say "--vers: pNFS needs NFSv4.1 or 4.2, not '$v'"; exit 2 ;; esac
done

[ "$(id -u)" = 0 ] || rc_guest_unavailable "must run as root (the guest image, the bridge and its tap devices)"

if [ -n "${FERRITE_BIN:-}" ]; then
    bin="$FERRITE_BIN"
else
    ( cd "$top" && cargo build --release -p ferrite ) || { say "ERROR: cargo build --release -p ferrite failed"; exit 1; }
    tdir="${CARGO_TARGET_DIR:-target}"   # relative to the top directory, as cargo takes it
    case "$tdir" in /*) ;; *) tdir="$top/$tdir" ;; esac
    bin="$tdir/release/ferrite"
fi
[ -x "$bin" ] || { say "ERROR: no ferrite binary at $bin"; exit 1; }
export FERRITE_BIN="$bin"
"$RC_DIR/lib/prepare.sh" || rc_guest_unavailable "building the guest image failed (see messages above)"

# --- per-run directories: OUT/{a,b} per guest, OUT/shared (barriers and
#     requests), OUT/servers (every server's export, state and log)
runid="$(date +%Y%m%d-%H%M%S)-$$"
if [ -z "$out" ]; then   # default location: keep the newest 5 runs (each holds its servers' data)
    out="/var/tmp/ferrite-realclient/pnfs/$runid"
    { ls -1dt /var/tmp/ferrite-realclient/pnfs/*/ 2>/dev/null || true; } | tail -n +5 | xargs -r rm -rf
fi
mkdir -p "$out" || { say "cannot create --out $out"; exit 2; }
out="$(cd "$out" && pwd)"
rm -rf "$out"/a "$out"/b "$out"/shared "$out"/servers "$out"/snap "$out"/*.txt "$out"/killed-*.json
mkdir -p "$out"/a/guest "$out"/b/guest "$out"/shared "$out"/servers
srv="$out/servers"
RC_VERS="$vers" python3 "$RC_DIR/guest/pnfs.py" --plan > "$out/plan.txt" || { say "cannot compute the plan"; exit 2; }

# --- cleanup at exit, whatever the reason: guests, taps, servers, the
#     Ganesha instances, the bridge's extra addresses, the bridge
declare -A qpid=([a]="" [b]="")
ganesha_envs=() extra_addrs=()
bridge="${FERRITE_RC_PNFS_BRIDGE:-frc-pn0}" net="${FERRITE_RC_PNFS_NET:-10.77.1}"
stop_pidfile() {   # TERM, then KILL after 30 s, the server whose pid file and state dir are ours
    local pf="$1" state="$2" p
    p=$(cat "$pf" 2>/dev/null) || return 0
    [[ "$p" =~ ^[0-9]+$ ]] && pid_alive "$p" && tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -qF -- "$state" || return 0
    kill "$p" 2>/dev/null
    # Ferrite stops within a second of SIGTERM; 30 s bounds a broken one.
    wait_until 30 eval "! pid_alive $p" || kill -9 "$p" 2>/dev/null
}
cleanup() {
    local r e a
    for r in a b; do
        if [ -n "${qpid[$r]}" ]; then kill "${qpid[$r]}" 2>/dev/null; wait "${qpid[$r]}" 2>/dev/null; fi
        rc_tap_down "frc-t$$$r"
    done
    for e in "$srv"/*.pid; do
        [ -e "$e" ] || continue
        stop_pidfile "$e" "$srv/$(basename "$e" .pid)/state"
    done
    for e in "${ganesha_envs[@]+"${ganesha_envs[@]}"}"; do
        env $e bash "$top/tools/ganesha.sh" stop >/dev/null 2>&1 || true
    done
    for a in "${extra_addrs[@]+"${extra_addrs[@]}"}"; do ip addr del "$a" dev "$bridge" 2>/dev/null || true; done
    rc_bridge_down
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT TERM

rc_bridge_up "$bridge" "$net.1/24" || rc_guest_unavailable "cannot make the bridge $bridge with $net.1/24 (ip link/addr)"
host_ip="$net.1"

# free_port: a TCP port of 20000-32767 that nothing uses on any address and
# that this run has not given out: below the ephemeral range (32768-60999),
# so that no outgoing connection takes it before its server binds it.
free_port() {
    python3 - "$srv/ports.used" <<'PY'
import os, random, socket, sys
used = set(open(sys.argv[1]).read().split()) if os.path.exists(sys.argv[1]) else set()
for _ in range(1000):
    p = random.randrange(20000, 32768)
    if str(p) in used:
        continue
    s = socket.socket()
    try:
        s.bind(("0.0.0.0", p))
    except OSError:
        continue
    finally:
        s.close()
    with open(sys.argv[1], "a") as f:
        f.write("%d\n" % p)
    print(p)
    sys.exit(0)
sys.exit("no free port")
PY
}

# start_ferrite NAME ARGS...: `ferrite serve` over srv/NAME/export on a free
# port of the bridge address; sets $addr. Port mapper off (nothing here needs
# it), no grace period (no state to reclaim), a 30 s lease.
start_ferrite() {
    local name="$1" port pid
    shift
    mkdir -p "$srv/$name/export"
    port=$(free_port)
    "$bin" serve "$srv/$name/export" --listen "$host_ip:$port" --state-dir "$srv/$name/state" \
        --portmap off --grace 0 --lease 30 "$@" >> "$srv/$name.log" 2>&1 &
    pid=$!
    echo "$pid" > "$srv/$name.pid"
    up() { ! pid_alive "$pid" || (exec 3<>"/dev/tcp/$host_ip/$port") 2>/dev/null; }
    # Ferrite listens within a second here; 120 s bounds a broken one.
    wait_until 120 up
    if ! pid_alive "$pid"; then
        say "ERROR: ferrite $name did not start; its log:"; tail -n 20 "$srv/$name.log" >&2; exit 1
    fi
    addr="$host_ip:$port"
}

# cluster_json NAME MDS STRIPE MIRRORS DS...: the cluster's entry for
# lib/pnfs_check.py (each DS as name:kind:export:state:addr).
cluster_json() {
    local name="$1" mds="$2" su="$3" mirrors="$4" d
    shift 4
    printf '"%s": {"stripe_unit": %s, "mirrors": %s, "mds": %s, "ds": [' "$name" "$su" "$mirrors" "$mds"
    local sep=""
    for d in "$@"; do printf '%s%s' "$sep" "$d"; sep=", "; done
    printf ']}'
}
server_json() {   # server_json NAME KIND EXPORT STATE LOG PIDFILE ADDR
    printf '{"name": "%s", "kind": "%s", "export": "%s", "state": "%s", "log": "%s", "pidfile": "%s", "addr": "%s"}' "$@"
}
ferrite_json() {   # ferrite_json NAME ADDR
    server_json "$1" ferrite "$srv/$1/export" "$srv/$1/state" "$srv/$1.log" "$srv/$1.pid" "$2"
}

clusters=()
# F: two Ferrite data servers, stripe unit 1 MiB.
start_ferrite ds-f0; a0=$addr
start_ferrite ds-f1; a1=$addr
start_ferrite mds-f --data-servers "$a0,$a1" --stripe-unit 1m; port_f=${addr##*:}
clusters+=("$(cluster_json F "$(ferrite_json mds-f "$addr")" 1048576 1 "$(ferrite_json ds-f0 "$a0")" "$(ferrite_json ds-f1 "$a1")")")
# M41, M42: two mirrors over two Ferrite data servers, one cluster per version.
declare -A port_m=()
for v in "${vlist[@]}"; do
    m="m${v//./}"
    start_ferrite "ds-${m}a"; a0=$addr
    start_ferrite "ds-${m}b"; a1=$addr
    start_ferrite "mds-$m" --data-servers "$a0,$a1" --stripe-unit 1m --mirrors 2; port_m[$v]=${addr##*:}
    clusters+=("$(cluster_json "M${v//./}" "$(ferrite_json "mds-$m" "$addr")" 1048576 2 \
        "$(ferrite_json "ds-${m}a" "$a0")" "$(ferrite_json "ds-${m}b" "$a1")")")
done
# G: two NFS-Ganesha data servers (NFSv3), each on an address of its own
# with its port mapper on port 111 there: Ganesha serves MOUNT on a port of
# its own, which the MDS asks the port mapper for.
port_g="" g_fail=0
if [ "$ganesha" = 1 ]; then
    gds=() gaddrs=""
    for i in 0 1; do
        ip="$net.$((2 + i))"
        if ! ip -4 -o addr show dev "$bridge" | grep -q " $ip/"; then
            ip addr add "$ip/24" dev "$bridge" && extra_addrs+=("$ip/24")
        fi
        gstate="$srv/ganesha-$i"
        mkdir -p "$gstate" && chmod 755 "$srv" "$gstate"   # rpc.statd runs as user statd inside it
        genv="GANESHA_STATE=$gstate GANESHA_BIND=$ip GANESHA_PORT=$(free_port) GANESHA_MNT_PORT=$(free_port)"
        genv="$genv GANESHA_NLM_PORT=$(free_port) GANESHA_STATD_PORT=$(free_port)"
        genv="$genv GANESHA_RPCBIND_PORT=$(free_port) GANESHA_RPCBIND_BIND_PORT=111 FRESH=1"
        ganesha_envs+=("$genv")
        # shellcheck disable=SC2086 # $genv is VAR=value words
        if ! env $genv bash "$top/tools/ganesha.sh" start > "$srv/ganesha-$i.start.log" 2>&1; then
            say "ERROR: NFS-Ganesha data server $i could not be started (FERRITE_SKIP_GANESHA=1 skips it):"
            sed 's/^/  /' "$srv/ganesha-$i.start.log" >&2
            g_fail=1 ganesha_why="NFS-Ganesha could not be started: see $srv/ganesha-$i.start.log"
            break
        fi
        gport=$(sed -n 's/.*GANESHA_PORT=\([0-9]*\).*/\1/p' <<< "$genv")
        gds+=("$(server_json "ganesha-$i" ganesha "$gstate/export" "$gstate" "$gstate/ganesha.log" "$gstate/ganesha.pid" "$ip:$gport")")
        gaddrs="$gaddrs${gaddrs:+,}$ip:$gport"
    done
    if [ $g_fail = 0 ]; then
        start_ferrite mds-g --data-servers "$gaddrs" --stripe-unit 1m; port_g=${addr##*:}
        clusters+=("$(cluster_json G "$(ferrite_json mds-g "$addr")" 1048576 1 "${gds[@]}")")
    fi
fi
{ printf '{'; sep=""; for c in "${clusters[@]}"; do printf '%s%s' "$sep" "$c"; sep=", "; done; printf '}\n'; } > "$out/clusters.json"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$out/clusters.json" || { say "bad $out/clusters.json"; exit 1; }
t_servers=$(now)
say "servers up on $host_ip: F mds :$port_f, G mds :${port_g:-none ($ganesha_why)}, mirrors $(for v in "${vlist[@]}"; do printf '%s :%s ' "$v" "${port_m[$v]}"; done)(logs in $srv)"

# --- the two guests
rc_pick_accel
declare -A tailpid
for r in a b; do
    R=${r^^}
    work="$out/$r/.boot"; rm -rf "$work"; mkdir -p "$work/payload/rc"
    install -m 755 "$RC_DIR/guest/init" "$work/payload/rc/init"
    install -m 644 "$RC_DIR/guest/suite.py" "$work/payload/rc/suite.py"
    install -m 644 "$RC_DIR/guest/pnfs.py" "$work/payload/rc/pnfs.py"
    {
        printf 'export RC_TAP_IP=%q RC_V3_LOCK=0\n' "$net.$([ $r = a ] && echo 11 || echo 12)/24"
        printf 'export RC_HOST=%q RC_PORT=%q RC_EXPORT=/ RC_VERS=%q RC_ONLY= RC_MOUNTPORT= RC_MOUNT_OPTS=\n' "$host_ip" "$port_f" "$vers"
        printf 'export RC_RUNID=%q RC_KEEP=1 RC_OUT=/rcout RC_RESTART=0\n' "$runid"
        printf 'export RC_SCRIPT=/rc/pnfs.py RC_ROLE=%q RC_SHARE=1 RC_SHARED=/rcshare\n' "$R"
        printf 'export RC_PNFS_F=%q RC_PNFS_G=%q RC_PNFS_G_WHY=%q RC_PNFS_G_FAIL=%q\n' "$port_f" "$port_g" "$ganesha_why" "$g_fail"
        for v in "${vlist[@]}"; do printf 'export RC_PNFS_M%s=%q\n' "${v//./}" "${port_m[$v]}"; done
    } > "$work/payload/rc/env"
    rc_make_initrd "$work"
    : > "$out/$r/console.log"; : > "$out/$r/output.log"; : > "$out/$r/status.log"
done
for r in a b; do
    rc_tap_up "$bridge" "frc-t$$$r" || rc_guest_unavailable "cannot make the tap device frc-t$$$r on $bridge"
done
say "run $runid: two guests on $bridge, versions $vers, accel $accel, out $out"
t0=$(now)
for r in a b; do
    RC_TAP="frc-t$$$r" RC_TAP_MAC="52:54:00:77:01:$([ $r = a ] && echo 11 || echo 12)"
    rc_qemu_argv "ferrite-rcpnfs-$runid-$r" 1 1024M "$out/$r/.boot/initrd.img" "ferrite-rcpnfs-$runid-$r" \
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

# --- supervise: boot limit; a guest that dies without RC-EXIT gets an abort
#     file so that the other stops waiting; the guests' requests answered
declare -A booted=([a]="" [b]="") gone=([a]="" [b]="")
while kill -0 "${qpid[a]}" 2>/dev/null || kill -0 "${qpid[b]}" 2>/dev/null; do
    for r in a b; do
        [ -z "${booted[$r]}" ] && grep -q '^RC-BOOTED' "$out/$r/status.log" && booted[$r]=$(now)
        if [ -z "${booted[$r]}" ] && [ "$(since "$t0")" -gt "$rc_boot_limit" ]; then
            say "guest ${r^^} did not boot within ${rc_boot_limit}s: killing both guests"
            kill "${qpid[a]}" "${qpid[b]}" 2>/dev/null
        fi
        if [ -z "${gone[$r]}" ] && ! kill -0 "${qpid[$r]}" 2>/dev/null; then
            gone[$r]=1
            if ! grep -q '^RC-EXIT' "$out/$r/status.log"; then
                say "guest ${r^^} ended without finishing its checks: telling the other guest"
                for v in "${vlist[@]}"; do echo "guest ${r^^} died (qemu exited)" > "$out/shared/v${v//./}-abort.${r^^}"; done
            fi
        fi
    done
    for req in "$out"/shared/req-*; do
        [ -e "$req" ] || continue
        case "$req" in *.tmp) continue ;; esac
        id="${req##*/req-}"
        ack="$out/shared/ack-$id"
        [ -e "$ack" ] && continue
        python3 "$RC_DIR/lib/pnfs_check.py" request "$out/clusters.json" "$out" "$req" > "$ack.tmp" 2>> "$out/requests.log" ||
            echo '{"error": "the host could not answer: see requests.log"}' > "$ack.tmp"
        echo "$id: $(cat "$req") -> $(cat "$ack.tmp")" >> "$out/requests.log"
        mv "$ack.tmp" "$ack"
    done
    sleep 0.2
done
declare -A qrc
for r in a b; do wait "${qpid[$r]}"; qrc[$r]=$?; qpid[$r]=""; wait "${tailpid[$r]}" 2>/dev/null; done
total=$(since "$t0")

for r in a b; do
    grep -q '^RC-BOOTED' "$out/$r/status.log" || {
        say "guest ${r^^}: qemu rc=${qrc[$r]}; qemu stderr:"; sed 's/^/  /' "$out/$r/qemu.stderr" >&2
        say "last console lines:"; tail -20 "$out/$r/console.log" | tr -d '\r' | sed 's/^/  /' >&2
        rc_guest_unavailable "guest ${r^^}: qemu exited (rc ${qrc[$r]}) before the guest init ran; logs in $out/$r"
    }
    grep -q '^RC-EXIT' "$out/$r/status.log" ||
        say "WARNING: guest ${r^^} did not finish (qemu rc=${qrc[$r]}$( [ "${qrc[$r]}" = 124 ] && echo ", timed out after ${timeout}s"))"
done

# --- the host's checks: the data servers' disks, their counters, the MDS's log
say "host checks (lib/pnfs_check.py)"
t_checks=$(now)
RC_PNFS_G_WHY="$ganesha_why" RC_PNFS_G_FAIL="$g_fail" python3 "$RC_DIR/lib/pnfs_check.py" verify "$out/clusters.json" "$out" "$vers" ||
    say "the host checks did not finish (see above)"
cat "$out"/a/guest/results.txt "$out"/b/guest/results.txt "$out/host-results.txt" > "$out/results.txt" 2>/dev/null

# --- report
python3 "$RC_DIR/lib/report.py" "$out" "$total" "$accel"
rc=$?
rm -rf "$out"/a/.boot "$out"/b/.boot
if [ $rc = 0 ] && [ $keep = 0 ]; then
    # The servers' exports (tens of MiB of file data) go; logs, state
    # directories and the report stay.
    for d in "$srv"/*/export; do rm -rf "$d"; done
    rm -rf "$out"/a/guest/readback
fi
say "took $(since "$t_script")s in all: $(awk -v a="$t_servers" -v b="$t_script" 'BEGIN{printf "%.0f", a-b}')s build and servers, ${total}s guests, $(awk -v a="$(now)" -v b="$t_checks" 'BEGIN{printf "%.0f", a-b}')s host checks and report"
say "artifacts: $out (report.txt, results.txt, {a,b}/output.log, {a,b}/guest/mountstats-*.txt, servers/*.log, requests.log)"
exit $rc
