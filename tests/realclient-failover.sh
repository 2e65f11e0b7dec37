#!/usr/bin/env bash
# Fail-over under the real Linux client (issue 31): two Ferrites over one
# single-node GlusterFS volume, each on its own mount of it (as two
# machines would be), the export and the state directory on the volume;
# one active on 127.0.0.1:PORT, the other a --standby on the same address.
# Then tests/realclient/two-guests.sh runs with two guests (A and B), and
# its "restart" is a fail-over: the active server is SIGKILLed, the
# standby takes over within a second and opens a grace period from the
# dead server's client records, and a new standby starts on the other
# mount for the next one. In the grace phase guest A holds an fcntl lock
# through the fail-over and reclaims it (and writes through the file it
# had open), while guest B, asking from the moment the standby answers,
# is refused the lock (grace_lock_kept) and gets it only after A unlocks
# (grace_reclaimed). The other phases (fcntl, flock, O_EXCL races,
# close-to-open, read and write delegations: the servers grant them) run
# on the GlusterFS-backed server too.
#
#   tests/realclient-failover.sh [--vers 4.2,4.1] [two-guests.sh options]
#
# Needs root, /dev/fuse and the guest image (tests/realclient builds it);
# installs GlusterFS if missing (tools/gluster-lib.sh).
# FERRITE_SKIP_REALCLIENT=1 or FERRITE_SKIP_FUSE=1 skips it (and says so).
set -euo pipefail
top="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
cd "$top"
me=realclient-failover
for v in FERRITE_SKIP_REALCLIENT FERRITE_SKIP_FUSE; do
    if [ "${!v:-0}" = 1 ]; then
        echo "$me: SKIPPED ($v=1): the real-client fail-over over GlusterFS not run"
        exit 0
    fi
done
[ "$(id -u)" = 0 ] || { echo "$me: ERROR: must run as root (glusterd, mounting, the guests)" >&2; exit 1; }
vers=4.2,4.1
args=()
while [ $# -gt 0 ]; do
    case "$1" in
    --vers) vers="$2"; shift 2 ;;
    *) args+=("$1"); shift ;;
    esac
done

cargo build --release -p ferrite
bin="$top/target/release/ferrite"
{ ls -1dt /var/tmp/ferrite-rcf.*/ 2>/dev/null || true; } | tail -n +4 | xargs -r rm -rf
work="$(mktemp -d /var/tmp/ferrite-rcf.XXXXXX)"
chmod 0755 "$work"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
lease=15
. "$top/tools/wait-lib.sh"
. "$top/tools/gluster-lib.sh"
stop_all() {
    local s
    for s in a b; do
        [ -f "$work/$s.pid" ] && kill -9 "$(cat "$work/$s.pid")" 2>/dev/null
    done
    sleep 0.5
    gl_cleanup
}
trap stop_all EXIT
gl_ensure "$me"
gl_volume "$me" "ferrite-rcf-$$" "$work" "$work/a" "$work/b"
mkdir -p "$work/a/export" "$work/a/state"
chmod 0777 "$work/a/export"

# The fail-over machinery, for the guests' restart requests too.
cat > "$work/node.sh" <<EOF
#!/usr/bin/env bash
# node.sh SIDE [--standby]: a Ferrite on mount SIDE (a or b).
. "$top/tools/wait-lib.sh"
side=\$1; shift
"$bin" serve "$work/\$side/export" --listen 127.0.0.1:$port --state-dir "$work/\$side/state" \\
    --portmap off --admin-socket off --lease $lease --delegations "\$@" >> "$work/\$side.log" 2>&1 &
echo \$! > "$work/\$side.pid"
EOF
cat > "$work/failover.sh" <<EOF
#!/usr/bin/env bash
# The guests' "restart": SIGKILL the active server; the standby on the
# other mount takes over; a new standby starts where the active one was.
set -u
. "$top/tools/wait-lib.sh"
act=\$(cat "$work/active"); sb=a; [ "\$act" = a ] && sb=b
pid=\$(cat "$work/\$act.pid")
took=\$(grep -c 'taking over' "$work/\$sb.log" || true)
t0=\$EPOCHREALTIME
kill -9 "\$pid"
gone() { ! pid_alive "\$pid"; }
wait_until 60 gone || { echo "the active server (pid \$pid) did not die"; exit 1; }
over() { [ "\$(grep -c 'taking over' "$work/\$sb.log")" -gt "\$took" ] && (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; }
wait_until 60 over || { echo "the standby on mount \$sb did not take over within 60 s:"; tail -20 "$work/\$sb.log"; exit 1; }
echo "\$sb" > "$work/active"
echo "fail-over: \$act (pid \$pid) killed, \$sb serving on 127.0.0.1:$port after \$(awk -v a="\$EPOCHREALTIME" -v b="\$t0" 'BEGIN{printf "%.2f", a-b}') s" | tee -a "$work/failovers.log"
bash "$work/node.sh" "\$act" --standby
waiting() { [ "\$(grep -c 'standby: waiting' "$work/\$act.log")" -gt "\$took" ]; }
wait_until 60 waiting || { echo "the new standby on mount \$act is not waiting:"; tail -20 "$work/\$act.log"; exit 1; }
EOF
chmod +x "$work"/*.sh

bash "$work/node.sh" a
echo a > "$work/active"
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }
wait_until 120 listening || { echo "$me: the active Ferrite did not start:" >&2; cat "$work/a.log" >&2; exit 1; }
bash "$work/node.sh" b --standby
standby_waits() { grep -q 'standby: waiting' "$work/b.log"; }
wait_until 120 standby_waits || { echo "$me: the standby did not start waiting:" >&2; cat "$work/b.log" >&2; exit 1; }
echo "$me: active Ferrite on 127.0.0.1:$port over $work/a, standby over $work/b (logs $work/a.log, $work/b.log)"

set +e
bash "$top/tests/realclient/two-guests.sh" --port "$port" --export / --vers "$vers" --expect-delegations \
    --restart-cmd "bash $work/failover.sh" --out "$work/out" "${args[@]+"${args[@]}"}"
rc=$?
set -e

hfail=0
echo
if [ -s "$work/failovers.log" ]; then cat "$work/failovers.log"; else echo "FAIL host/failed-over: no fail-over happened"; hfail=1; fi
n=$(wc -l < "$work/failovers.log" 2>/dev/null || echo 0)
nv=$(tr ',' '\n' <<< "$vers" | grep -c .)
if [ "$n" = "$nv" ]; then echo "PASS host/one-fail-over-per-version ($n)"; else echo "FAIL host/one-fail-over-per-version: $n fail-overs for $nv versions"; hfail=1; fi
grep -h 'grace period' "$work/a.log" "$work/b.log" | sed 's/^/  /'
if grep -qi 'panicked' "$work/a.log" "$work/b.log"; then echo "FAIL host/no-panic: see $work/a.log, $work/b.log"; hfail=1; else echo "PASS host/no-panic"; fi
echo "$me: two-guest suite rc=$rc, host checks $([ $hfail = 0 ] && echo PASS || echo FAIL); work dir $work"
[ "$rc" = 0 ] || exit "$rc"
exit $hfail
