#!/usr/bin/env bash
# Ferrite real-client suite: boot a Debian 6.1 kernel in qemu, mount the NFS
# server under test (running on this host, loopback) and run the scenarios in
# guest/suite.py for each NFS version. See README.md next to this file.
#
#   tests/realclient/run.sh [--host 127.0.0.1] [--port 2049] [--export /]
#       [--vers 4.2,4.1] [--only SCENARIO,...] [--out DIR]
#       [--restart-cmd 'CMD'] [--local-dir DIR] [--mountport N] [--mount-opts OPTS]
#       [--unique-id ID] [--timeout SEC] [--mem SIZE] [--cpus N]
#       [--keep] [--console] [--list] [--prepare-only]
#       [--suite default|exports|kerberos|tls] [--tap BRIDGE] [--payload DIR]
#
# --suite kerberos runs guest/kerberos.py instead (tests/realclient-
# kerberos.sh), --suite tls guest/tls.py (tests/realclient-tls.sh, with
# a newer kernel); --payload DIR puts DIR's files in the guest at /rc/extra
# (its krb5.conf, key table and ticket cache).
#
# --restart-cmd CMD: run on the host when a scenario asks for a server
# restart (or, in the exports suite, a reload), with RC_TAG naming the
# request (the scenario's tag, such as v42 or reload-ro-v42).
#
# --local-dir DIR: the exported directory, where a scenario may ask the
# host to run a shell command as a local process (not an NFS client):
# a rename, a chmod, a write, an fcntl lock held until released. The
# command runs in DIR, its output in local-TAG.log in the out directory.
#
# --tap BRIDGE: the guest gets a second NIC on a tap device attached to
# BRIDGE (made by the caller, lib/guest.sh rc_bridge_up) and reaches the
# server at the bridge's address, which can call it back: NFSv3 then
# mounts with locking (NLM, NSM) and no port options (the server's port
# mapper). Without it the guest reaches only 127.0.0.1 (as 10.0.2.2) and
# NFSv3 mounts with nolock.
#
# Exit status: 0 all PASS/SKIP; 1 any FAIL (or missing result); 2 usage;
# 3 the server is not reachable; 125 the guest could not be built/started
# (exit 0 with a loud SKIPPED notice instead if FERRITE_SKIP_REALCLIENT=1).
set -uo pipefail
RC_DIR="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
CACHE="${FERRITE_RC_CACHE:-/var/cache/ferrite-realclient}"
# shellcheck source=tests/realclient/lib/guest.sh
. "$RC_DIR/lib/guest.sh"

host=127.0.0.1 port=2049 export_path=/ vers=4.2,4.1 only="" out="" restart_cmd=""
# --timeout: an upper bound on the whole guest, there for a guest that
# hangs (each scenario also has its own limit in guest/suite.py). The
# three versions take about 10 minutes under TCG here, 15 on a loaded
# machine; 3600 s leaves a machine twice as slow, and loaded, well inside.
mountport="" mount_opts="" unique_id="" local_dir="" timeout=3600 mem=1536M cpus=2 keep=0 console=0
prepare_only=0 suite=default tap_bridge="" payload=""

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
say() { printf 'realclient: %s\n' "$*" >&2; }
now() { date +%s.%N; }

while [ $# -gt 0 ]; do
    case "$1" in
    --host) host="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --export) export_path="$2"; shift 2 ;;
    --vers) vers="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --restart-cmd) restart_cmd="$2"; shift 2 ;;
    --local-dir) local_dir="$2"; shift 2 ;;
    --mountport) mountport="$2"; shift 2 ;;
    --mount-opts) mount_opts="$2"; shift 2 ;;
    --unique-id) unique_id="$2"; shift 2 ;;
    --timeout) timeout="$2"; shift 2 ;;
    --mem) mem="$2"; shift 2 ;;
    --cpus) cpus="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --console) console=1; shift ;;
    --suite) suite="$2"; shift 2 ;;
    --tap) tap_bridge="$2"; shift 2 ;;
    --payload) payload="$2"; shift 2 ;;
    --list)
        if [ "$suite" = kerberos ]; then
            python3 -c 'import ast, sys
t = ast.parse(open(sys.argv[1]).read())
flavors = [ast.literal_eval(n.value) for n in t.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "FLAVORS"][0]
print("\n".join([f + k for f in flavors for k in ("_io", "_no_ticket")] + ["sys_refused", "restart"]))' "$RC_DIR/guest/kerberos.py"
            exit $?
        fi
        if [ "$suite" = tls ]; then
            python3 -c 'import ast, sys
t = ast.parse(open(sys.argv[1]).read())
print("\n".join([ast.literal_eval(n.value) for n in t.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "SCENARIOS"][0]))' "$RC_DIR/guest/tls.py"
            exit $?
        fi
        python3 - "$RC_DIR/guest/suite.py" "$suite" <<'EOF'
import re, sys
prefix = {"default": "sc", "exports": "sx"}.get(sys.argv[2]) or sys.exit("unknown --suite %s (default, exports, kerberos, tls)" % sys.argv[2])
for m in re.finditer(r'^\s+\("(\w+)", %s_\w+, \d+\),' % prefix, open(sys.argv[1]).read(), re.M):
    print(m.group(1))
EOF
            exit $? ;;
    --prepare-only) prepare_only=1; shift ;;
    -h|--help) usage ;;
    *) say "unknown argument: $1"; usage ;;
    esac
done

# --- guest-start failures: loud, or a clear SKIP when explicitly allowed -------
guest_unavailable() {
    local why="$1"
    if [ "${FERRITE_SKIP_REALCLIENT:-0}" = 1 ]; then
        echo "================================================================"
        echo "realclient: SKIPPED (FERRITE_SKIP_REALCLIENT=1): the guest could not be started:"
        echo "realclient:   $why"
        echo "================================================================"
        exit 0
    fi
    echo "################################################################" >&2
    echo "realclient: ERROR: the test guest could not be started:" >&2
    echo "realclient:   $why" >&2
    echo "realclient: (set FERRITE_SKIP_REALCLIENT=1 to skip this suite instead)" >&2
    echo "################################################################" >&2
    exit 125
}

[ "$(id -u)" = 0 ] || guest_unavailable "must run as root (debootstrap/chroot for the image, 9p share ownership)"

# --- validate arguments --------------------------------------------------------
guest_host=10.0.2.2 tap_ip="" tap=""
if [ -n "$tap_bridge" ]; then
    # The guest reaches the bridge's address; the server listens there.
    host="$(rc_bridge_ip "$tap_bridge")"
    [ -n "$host" ] || { say "--tap: no bridge $tap_bridge with an IPv4 address"; exit 2; }
    guest_host="$host"
    tap_ip="${host%.*}.10/24"
    tap="frc-t$$"
else
    case "$host" in
    127.0.0.1|localhost) ;;
    *) say "--host must be 127.0.0.1: the guest reaches only the host's loopback (as 10.0.2.2)"; exit 2 ;;
    esac
fi
[[ "$port" =~ ^[0-9]+$ ]] || { say "bad --port $port"; exit 2; }
case "$suite" in default|exports|kerberos|tls) ;; *) say "--suite: unknown suite '$suite' (default, exports, kerberos, tls)"; exit 2 ;; esac
[ -z "$payload" ] || [ -d "$payload" ] || { say "--payload: no directory $payload"; exit 2; }
IFS=, read -r -a vlist <<< "$vers"
for v in "${vlist[@]}"; do
    case "$v" in 4.2|4.1|4.0|3) ;; *) say "--vers: unsupported version '$v' (4.2, 4.1, 4.0, 3)"; exit 2 ;; esac
done
known=$("$0" --suite "$suite" --list | tr '\n' ' ')
IFS=, read -r -a olist <<< "$only"
for s in "${olist[@]+"${olist[@]}"}"; do
    [[ " $known " == *" $s "* ]] || { say "--only: unknown scenario '$s' (known: $known)"; exit 2; }
done

# --- guest image (idempotent) ---------------------------------------------------
"$RC_DIR/lib/prepare.sh" || guest_unavailable "building the guest image failed (see messages above)"
[ $prepare_only = 1 ] && exit 0

# --- the server must be up ------------------------------------------------------
if ! rc_port_open "$port" "$host"; then
    say "ERROR: nothing accepts TCP connections on $host:$port: start the server under test first"
    exit 3
fi

# --- per-run directories ----------------------------------------------------------
runid="$(date +%Y%m%d-%H%M%S)-$$"
if [ -z "$out" ]; then   # default location: keep the newest 20 runs
    out="/var/tmp/ferrite-realclient/runs/$runid"
    { ls -1dt /var/tmp/ferrite-realclient/runs/*/ 2>/dev/null || true; } | tail -n +20 | xargs -r rm -rf
fi
mkdir -p "$out" || { say "cannot create --out $out"; exit 2; }
out="$(cd "$out" && pwd)"
case "$out/" in "$(cd "$RC_DIR/../.." && pwd)/"*) say "note: --out is inside the repository";; esac
g="$out/guest"                         # shared with the guest over 9p (/rcout)
rm -rf "$g" "$out"/{console,output,status}.log "$out"/report.txt "$out"/restart-*.log
mkdir -p "$g/ctl"
[ -n "$unique_id" ] || unique_id="ferrite-rc-$runid"

work="$out/.boot"; rm -rf "$work"; mkdir -p "$work/payload/rc"
install -m 755 "$RC_DIR/guest/init" "$work/payload/rc/init"
install -m 644 "$RC_DIR/guest/suite.py" "$work/payload/rc/suite.py"
install -m 644 "$RC_DIR/guest/kerberos.py" "$work/payload/rc/kerberos.py"
install -m 644 "$RC_DIR/guest/tls.py" "$work/payload/rc/tls.py"
# --payload DIR: its files, for the guest, at /rc/extra.
if [ -n "$payload" ]; then
    mkdir -p "$work/payload/rc/extra"
    cp -a "$payload"/. "$work/payload/rc/extra/"
fi
{
    printf 'export RC_TAP_IP=%q RC_V3_LOCK=%q\n' "$tap_ip" "$([ -n "$tap" ] && echo 1 || echo 0)"
    printf 'export RC_HOST=%q RC_PORT=%q RC_EXPORT=%q RC_VERS=%q RC_ONLY=%q\n' "$guest_host" "$port" "$export_path" "$vers" "$only"
    printf 'export RC_MOUNTPORT=%q RC_MOUNT_OPTS=%q RC_RUNID=%q RC_KEEP=%q RC_OUT=/rcout\n' "$mountport" "$mount_opts" "$runid" "$keep"
    printf 'export RC_RESTART=%q\n' "$([ -n "$restart_cmd" ] && echo 1 || echo 0)"
    printf 'export RC_LOCAL=%q\n' "$([ -n "$local_dir" ] && echo 1 || echo 0)"
    [ "$suite" = default ] || printf 'export RC_SUITE=%q\n' "$suite"
    [ "$suite" != kerberos ] || printf 'export RC_SCRIPT=/rc/kerberos.py\n'
    [ "$suite" != tls ] || printf 'export RC_SCRIPT=/rc/tls.py\n'
} > "$work/payload/rc/env"
( cd "$work/payload" && find . -mindepth 1 | cpio -o -H newc --quiet -R 0:0 ) > "$work/payload.cpio"
cat "$CACHE/initrd.cpio" "$work/payload.cpio" > "$work/initrd.img"

# --- accelerator: KVM only where it can run a stock kernel, else TCG ------------
accel="${FERRITE_RC_ACCEL:-auto}"
if [ "$accel" = auto ]; then
    accel=tcg
    if [ -w /dev/kvm ] && { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; }; then accel=kvm; fi
fi
if [ "$accel" = kvm ]; then acc=(-accel kvm -cpu host); else acc=(-accel tcg,thread=multi -cpu max); fi
kernel="$CACHE/vmlinux"; [ -f "$kernel" ] || kernel="$CACHE/vmlinuz"
cmdline="console=ttyS0,115200 root=/dev/vda rw panic=-1 quiet loglevel=4 net.ifnames=0 8250.nr_uarts=3 tsc=reliable cryptomgr.notests nfs.nfs4_unique_id=$unique_id"
qemu=(qemu-system-x86_64 -name "ferrite-rc-$runid" -nodefaults -no-user-config -display none -no-reboot
    "${acc[@]}" -M pc -smp "$cpus" -m "$mem"
    -kernel "$kernel" -initrd "$work/initrd.img" -append "$cmdline"
    -drive "file=$CACHE/rootfs.img,format=raw,if=virtio,snapshot=on"
    -netdev user,id=n0,ipv6=off -device virtio-net-pci,netdev=n0
    -virtfs "local,path=$g,mount_tag=rcout,security_model=none,id=rcout"
    -serial "file:$out/console.log" -serial "file:$out/output.log" -serial "file:$out/status.log")
# At exit, whatever the reason: qemu stopped (if it still runs), then its
# tap device removed (a half-made one too).
qpid=""
cleanup() {
    if [ -n "$qpid" ]; then kill "$qpid" 2>/dev/null; wait "$qpid" 2>/dev/null; fi
    [ -z "$tap" ] || rc_tap_down "$tap"
}
trap cleanup EXIT
if [ -n "$tap" ]; then
    rc_tap_up "$tap_bridge" "$tap" || guest_unavailable "cannot make the tap device $tap on $tap_bridge"
    qemu+=(-netdev "tap,id=n1,ifname=$tap,script=no,downscript=no" -device "virtio-net-pci,netdev=n1,mac=52:54:00:77:00:10")
fi
printf '%q ' "${qemu[@]}" > "$out/qemu.cmd"; echo >> "$out/qemu.cmd"

say "run $runid: server $host:$port export $export_path vers $vers accel $accel out $out"
[ -n "$restart_cmd" ] && say "restart command: $restart_cmd"

# --- boot and supervise -------------------------------------------------------------
t0=$(now)
: > "$out/console.log"; : > "$out/output.log"; : > "$out/status.log"
TMPDIR=/var/tmp timeout -k 10 "$timeout" "${qemu[@]}" </dev/null 2>"$out/qemu.stderr" &
qpid=$!
trap 'kill "$qpid" 2>/dev/null; say "interrupted"; exit 130' INT TERM
tail -n +1 -F --pid="$qpid" "$out/output.log" 2>/dev/null | sed -u 's/\r$//' &
tailpid=$!
ctailpid=""
if [ $console = 1 ]; then
    tail -n +1 -F --pid="$qpid" "$out/console.log" 2>/dev/null | sed -u 's/^/[console] /' >&2 &
    ctailpid=$!
fi
booted="" started="" boot_limit=$rc_boot_limit
while kill -0 "$qpid" 2>/dev/null; do
    [ -z "$booted" ] && grep -q '^RC-BOOTED' "$out/status.log" && booted=$(now)
    [ -z "$started" ] && grep -q '^RC-START' "$out/status.log" && started=$(now)
    if [ -z "$booted" ] && awk -v a="$(now)" -v b="$t0" -v l="$boot_limit" 'BEGIN{exit !(a-b>l)}'; then
        say "guest did not boot within ${boot_limit}s: killing qemu"
        kill "$qpid" 2>/dev/null; break
    fi
    # restart handshake: the guest asks, we run the command and acknowledge
    for req in "$g"/ctl/restart-*.req; do
        [ -e "$req" ] || continue
        tag=$(basename "$req" .req); tag=${tag#restart-}
        [ -e "$g/ctl/restart-$tag.ack" ] && continue
        say "guest requested a server restart ($tag): running: $restart_cmd"
        ts=$(now)
        if [ -n "$restart_cmd" ]; then
            RC_TAG="$tag" bash -c "$restart_cmd" > "$out/restart-$tag.log" 2>&1; rrc=$?
        else
            echo "no --restart-cmd" > "$out/restart-$tag.log"; rrc=1
        fi
        say "restart command finished: rc=$rrc in $(awk -v a="$(now)" -v b="$ts" 'BEGIN{printf "%.1f", a-b}')s (log $out/restart-$tag.log)"
        echo "rc=$rrc" > "$g/ctl/restart-$tag.ack.tmp" && mv "$g/ctl/restart-$tag.ack.tmp" "$g/ctl/restart-$tag.ack"
    done
    # local-process handshake: the guest names a command, we run it in the
    # exported directory and acknowledge with its exit status
    for req in "$g"/ctl/local-*.req; do
        [ -e "$req" ] || continue
        tag=$(basename "$req" .req); tag=${tag#local-}
        [ -e "$g/ctl/local-$tag.ack" ] && continue
        if [ -n "$local_dir" ]; then
            (cd "$local_dir" && bash -c "$(cat "$req")") > "$out/local-$tag.log" 2>&1 </dev/null; lrc=$?
        else
            echo "no --local-dir" > "$out/local-$tag.log"; lrc=1
        fi
        echo "rc=$lrc" > "$g/ctl/local-$tag.ack.tmp" && mv "$g/ctl/local-$tag.ack.tmp" "$g/ctl/local-$tag.ack"
    done
    sleep 0.2
done
wait "$qpid"; qrc=$?
qpid=""
trap - INT TERM
t_end=$(now)
wait "$tailpid" 2>/dev/null
[ -n "$ctailpid" ] && wait "$ctailpid" 2>/dev/null
total=$(awk -v a="$t_end" -v b="$t0" 'BEGIN{printf "%.0f", a-b}')

grep -q '^RC-BOOTED' "$out/status.log" || {
    say "qemu rc=$qrc; qemu stderr:"; sed 's/^/  /' "$out/qemu.stderr" >&2
    say "last console lines:"; tail -20 "$out/console.log" | tr -d '\r' | sed 's/^/  /' >&2
    guest_unavailable "qemu exited (rc $qrc) before the guest init ran; logs in $out"
}
if grep -q '^RC-FATAL' "$out/status.log"; then
    say "guest reported: $(grep '^RC-FATAL' "$out/status.log" | tr -d '\r' | head -3 | tr '\n' ' ')"
fi
exit_line=$(grep '^RC-EXIT' "$out/status.log" | tr -d '\r' | tail -1)
[ -n "$exit_line" ] || say "WARNING: the suite did not finish (qemu rc=$qrc, $( [ "$qrc" = 124 ] && echo "timed out after ${timeout}s" || echo "guest died"))"
[ -f "$g/results.txt" ] && cp "$g/results.txt" "$out/results.txt"

# --- report -------------------------------------------------------------------------------
python3 - "$g" "$out" "$total" "$accel" "${exit_line:-none}" <<'EOF'
import os, re, sys
g, out, total, accel, exit_line = sys.argv[1:]
plan = [l.strip() for l in open(os.path.join(g, "plan.txt"))] if os.path.exists(os.path.join(g, "plan.txt")) else []
res = {}
pat = re.compile(r"^(PASS|FAIL|SKIP) (v[0-9.]+)/(\w+)(?:: (.*?))?(?: \(([0-9.]+)s\))?$")
if os.path.exists(os.path.join(g, "results.txt")):
    for l in open(os.path.join(g, "results.txt")):
        m = pat.match(l.strip())
        if m:
            res[(m.group(2), m.group(3))] = (m.group(1), m.group(4) or "", m.group(5))
if not plan:
    plan = ["%s/%s" % k for k in res]
vers, names = [], []
for p in plan:
    v, n = p.split("/")
    if v not in vers: vers.append(v)
    if n not in names: names.append(n)
lines, fails, skips = [], [], []
w = max([len(n) for n in names] + [8])
lines.append("%-*s  %s" % (w, "scenario", "  ".join("%-11s" % v for v in vers)))
lines.append("-" * (w + 2 + 13 * len(vers)))
nfail = 0
for n in names:
    cells = []
    for v in vers:
        st, why, secs = res.get((v, n), ("FAIL", "no result: the guest suite did not reach this scenario (crash/timeout, see output.log)", None))
        if (v, n) not in res:
            st = "MISSING"
        if st in ("FAIL", "MISSING"):
            nfail += 1
            fails.append("%s/%s: %s" % (v, n, why))
        elif st == "SKIP":
            skips.append((why, "%s/%s" % (v, n)))
        cells.append("%-11s" % (st + (" %4.0fs" % float(secs) if secs and st != "SKIP" else "")))
    lines.append("%-*s  %s" % (w, n, "  ".join(cells)))
lines.append("")
if fails:
    lines.append("FAILURES:")
    lines += ["  " + f for f in fails]
if skips:
    lines.append("SKIPPED (reason: scenarios):")
    by = {}
    for why, k in skips:
        by.setdefault(why, []).append(k)
    for why, ks in by.items():
        shown = ", ".join(ks) if len(ks) <= 6 else "%s ... (%d)" % (", ".join(ks[:4]), len(ks))
        lines.append("  %s: %s" % (why, shown))
counts = {}
for v in vers:
    for n in names:
        st = res.get((v, n), ("MISSING",))[0]
        counts[st] = counts.get(st, 0) + 1
lines.append("")
lines.append("TOTAL: %s | wall %ss (accel %s) | guest %s" % (
    " ".join("%s=%d" % (k, counts[k]) for k in sorted(counts)), total, accel, exit_line))
lines.append("RESULT: %s" % ("FAIL" if nfail or not res else "PASS"))
text = "\n".join(lines) + "\n"
open(os.path.join(out, "report.txt"), "w").write(text)
print("\n" + text, end="")
sys.exit(1 if nfail or not res else 0)
EOF
rc=$?
say "artifacts: $out (report.txt, results.txt, output.log, console.log, guest/mountstats-*.txt)"
rm -rf "$work"
exit $rc
