#!/usr/bin/env bash
# Runs the real Linux client suite (tests/realclient/run.sh) against a
# Ferrite started here on a free loopback port over a fresh export, and
# restarts that Ferrite when the suite's restart scenario asks for it.
# Then, as a second phase, two guests at once against the same Ferrite
# (tests/realclient/two-guests.sh: cross-client fcntl locks, flock, O_EXCL
# races, close-to-open visibility, delegations, a restart; NFSv4.2, NFSv3
# with NLM and a mixed NFSv3/NFSv4.1 column, FERRITE_RC_TWO_VERS).
# Then, as a third phase, pNFS with flexible-file layouts
# (tests/realclient/pnfs.sh: Ferrite metadata servers over Ferrite and
# NFS-Ganesha data servers of their own, on a bridge of their own; NFSv4.1
# and 4.2; about a minute and a half).
# Extra arguments go to run.sh (for example --only or --vers; the default
# here is --vers 4.2,4.1,4.0,3), except:
#   --two-guests      run only the two-guest phase
#   --no-two-guests   skip the two-guest phase (as does FERRITE_RC_TWO_GUESTS=0)
#   --pnfs            run only the pNFS phase
#   --no-pnfs         skip the pNFS phase (as does FERRITE_RC_PNFS=0)
# FERRITE_RC_LOG=1 gives the export a write log (--log in the work
# directory), so that the clients' stable writes go through it.
# Ferrite grants delegations (its default) in both phases;
# FERRITE_RC_SHARED_LOCKS=0 runs it with --no-shared-locks.
# FERRITE_RC_DELEG=0 runs the main suite with --no-delegations. The
# two-guest phase always runs with them (and checks that a read delegation
# one guest holds is recalled by the other's write) unless
# FERRITE_RC_TWO_DELEG=0.
set -euo pipefail
top="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
cd "$top"

main_phase=1 two_phase=1 pnfs_phase=1
[ "${FERRITE_RC_TWO_GUESTS:-1}" = 0 ] && two_phase=0
[ "${FERRITE_RC_PNFS:-1}" = 0 ] && pnfs_phase=0
args=()
for a in "$@"; do
    case "$a" in
    --two-guests) main_phase=0 two_phase=1 pnfs_phase=0 ;;
    --no-two-guests) two_phase=0 ;;
    --pnfs) main_phase=0 two_phase=0 pnfs_phase=1 ;;
    --no-pnfs) pnfs_phase=0 ;;
    *) args+=("$a") ;;
    esac
done
# Every version Ferrite serves, unless the caller chose (NFSv3 with
# locking where the guests are on the bridge, else with nolock: its lock
# scenarios then SKIP).
case " ${args[*]+"${args[*]}"} " in
*" --vers "*) ;;
*) args=(--vers 4.2,4.1,4.0,3 "${args[@]+"${args[@]}"}") ;;
esac

cargo build --release -p ferrite
# Where cargo put it (CARGO_TARGET_DIR, relative to this directory, if set).
tdir="${CARGO_TARGET_DIR:-target}"
case "$tdir" in /*) ;; *) tdir="$top/$tdir" ;; esac
bin="$tdir/release/ferrite"
work="$(mktemp -d /var/tmp/ferrite-rc.XXXXXX)"
# The guests reach Ferrite on a bridge of their own (FERRITE_RC_BRIDGE,
# 10.77.0.1/24), through which Ferrite can call them back (NLM_GRANTED,
# SM_NOTIFY): NFSv3 is then mounted with locking and no port options
# (Ferrite's port mapper answers on the bridge address's port 111).
# Where no bridge can be made, they reach 127.0.0.1 (slirp) and NFSv3
# mounts with nolock.
# shellcheck source=tests/realclient/lib/guest.sh
. "$top/tests/realclient/lib/guest.sh"
bridge="${FERRITE_RC_BRIDGE:-frc-br0}"
host=127.0.0.1 tap_args=()
# At exit, whatever the reason (a failure, set -e, Ctrl-C): Ferrite
# stopped, then the bridge removed (rc_bridge_down: only what
# rc_bridge_up made; run.sh and two-guests.sh remove their own tap
# devices), so that nothing of this run stays on the host and the next
# suite (realclient-exports.sh) starts from a clean host.
cleanup() {
    if [ -x "$work/stop.sh" ]; then "$work/stop.sh"; fi
    rc_bridge_down
}
trap cleanup EXIT
if [ "${FERRITE_RC_TAP:-1}" = 1 ] && rc_bridge_up "$bridge" 10.77.0.1/24 2>/dev/null; then
    host="$(rc_bridge_ip "$bridge")"
    tap_args=(--tap "$bridge")
else
    echo "realclient-ferrite: NOTE: no bridge for the guests (not root, or FERRITE_RC_TAP=0): NFSv3 without locking"
fi
port="$(python3 -c 'import socket,sys; s=socket.socket(); s.bind((sys.argv[1],0)); print(s.getsockname()[1])' "$host")"
mkdir -p "$work/export"
chmod 0777 "$work/export"

log=""
[ "${FERRITE_RC_LOG:-0}" = 1 ] && log="--log $work/log"
# Delegations are on by default (read, write, directory);
# FERRITE_RC_DELEG=0 runs the main suite without them.
[ "${FERRITE_RC_DELEG:-1}" = 0 ] && echo "--no-delegations" > "$work/extra-args"
# Locks are shared with local processes by default; FERRITE_RC_SHARED_LOCKS=0
# runs without (local_locks then fails: the scenario's negative control).
[ "${FERRITE_RC_SHARED_LOCKS:-1}" = 0 ] && echo "--no-shared-locks" >> "$work/extra-args"
# start.sh and stop.sh wait for a condition under a deadline
# (tools/wait-lib.sh). Ferrite listens within a second and stops within a
# second here: 120 s to listen and 60 s to exit after SIGTERM (then
# SIGKILL) are only upper bounds, reached by a Ferrite that is broken.
cat > "$work/start.sh" <<EOS
#!/usr/bin/env bash
. "$top/tools/wait-lib.sh"
"$bin" serve "$work/export" --listen $host:$port --state-dir "$work/state" --lease 30 $log \$(cat "$work/extra-args" 2>/dev/null) >>"$work/ferrite.log" 2>&1 &
pid=\$!
echo \$pid > "$work/pid"
up_or_gone() { ! pid_alive \$pid || (exec 3<>/dev/tcp/$host/$port) 2>/dev/null; }
wait_until 120 up_or_gone && pid_alive \$pid && exit 0
echo "ferrite did not start (not listening on $host:$port within 120 s, or exited); see $work/ferrite.log" >&2
exit 1
EOS
cat > "$work/stop.sh" <<EOS
#!/usr/bin/env bash
. "$top/tools/wait-lib.sh"
pid=\$(cat "$work/pid" 2>/dev/null) || exit 0
kill "\$pid" 2>/dev/null || exit 0
gone() { ! pid_alive "\$pid"; }
wait_until 60 gone && exit 0
echo "ferrite (pid \$pid) still running 60 s after SIGTERM: SIGKILL" >&2
kill -9 "\$pid" 2>/dev/null || true
EOS
printf '#!/usr/bin/env bash\nset -e\n"%s/stop.sh"\n"%s/start.sh"\n' "$work" "$work" > "$work/restart.sh"
chmod +x "$work"/*.sh

"$work/start.sh"
echo "realclient-ferrite: ferrite on $host:$port, export $work/export, log $work/ferrite.log"
rc_main=0 rc_two=0
if [ $main_phase = 1 ]; then
    # MOUNT is served on the NFS port (for a --vers 3 column without
    # the port mapper).
    bash "$top/tests/realclient/run.sh" --port "$port" --mountport "$port" \
        --export / --restart-cmd "$work/restart.sh" --local-dir "$work/export" --out "$work/out" \
        "${tap_args[@]+"${tap_args[@]}"}" "${args[@]+"${args[@]}"}" || rc_main=$?
fi
if [ $two_phase = 1 ]; then
    if [ $rc_main = 125 ]; then
        echo "realclient-ferrite: two-guest phase not run: the guest could not be started"
    else
        two_args=()
        # With the bridge: NFSv3 with NLM, and the mixed columns (guest A
        # on NFSv3, then on NFSv4.0; B on NFSv4.1), beside NFSv4.2.
        [ ${#tap_args[@]} -gt 0 ] && two_args+=(--vers "${FERRITE_RC_TWO_VERS:-4.2,3,mix,mix40}")
        if [ "${FERRITE_RC_TWO_DELEG:-1}" != 0 ]; then
            # Delegations on (a restart with them, if the main suite ran
            # without), and expected. The restart's grace period (a lease,
            # 30 s: the first phase's client has a record) delays the
            # guests' first opens.
            if [ "${FERRITE_RC_DELEG:-1}" = 0 ]; then
                : > "$work/extra-args"
                "$work/restart.sh"
            fi
            two_args+=(--expect-delegations)
        fi
        echo "realclient-ferrite: two-guest phase (tests/realclient/two-guests.sh)"
        bash "$top/tests/realclient/two-guests.sh" --port "$port" --export / "${tap_args[@]+"${tap_args[@]}"}" \
            --restart-cmd "$work/restart.sh" --out "$work/out-two" "${two_args[@]+"${two_args[@]}"}" || rc_two=$?
    fi
fi
rc_pnfs=0
if [ $pnfs_phase = 1 ]; then
    if [ $rc_main = 125 ]; then
        echo "realclient-ferrite: pNFS phase not run: the guest could not be started"
    else
        # Its own servers, bridge and guests (nothing of the phases above).
        echo "realclient-ferrite: pNFS phase (tests/realclient/pnfs.sh)"
        FERRITE_BIN="$bin" bash "$top/tests/realclient/pnfs.sh" --out "$work/out-pnfs" || rc_pnfs=$?
    fi
fi
echo "realclient-ferrite: main suite $([ $main_phase = 1 ] && echo "rc=$rc_main" || echo "not run"), two-guest phase $([ $two_phase = 1 ] && echo "rc=$rc_two" || echo "not run"), pNFS phase $([ $pnfs_phase = 1 ] && echo "rc=$rc_pnfs" || echo "not run")"
[ $rc_main = 0 ] || exit $rc_main
[ $rc_two = 0 ] || exit $rc_two
exit $rc_pnfs
