#!/usr/bin/env bash
# The real-client suite's NFSv3 column, with locking, against NFS-Ganesha
# (issue 13, point 5): the reference the same column on Ferrite
# (tests/realclient-ferrite.sh) is set beside. Not part of ./test.sh: it
# records what Ganesha passes and fails (tests/realclient/README.md).
#
#   tests/realclient-ganesha.sh [--no-two-guests | --two-guests] [run.sh args]
#
# NFS-Ganesha (tools/ganesha.sh: NFSv3, MOUNT, NLM, its own rpcbind and
# rpc.statd in a private namespace) listens on the guests' bridge
# (10.77.0.1, FERRITE_RC_BRIDGE as for Ferrite), its rpcbind on port 111
# there, so the guests mount with `-o vers=3` and nothing else, as they do
# Ferrite. Its restart (the suite's restart scenario) gives a 15 s grace
# period and runs sm-notify, so the clients reclaim their NLM locks as
# they would after a knfsd restart. Then the two-guest phase runs its
# NFSv3 and mixed (A on NFSv3, B on NFSv4.1) columns.
#
# Ports (tools/ganesha.sh's variables, chosen apart from its benchmark
# defaults): NFS 12070, MOUNT 12068, NLM 12067, statd 12066; rpcbind 111
# on the bridge and on 127.0.0.1. Needs root and nothing else on port 111.
# Exit status: that of run.sh, else of two-guests.sh.
set -euo pipefail
top="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
cd "$top"

main_phase=1 two_phase=1 args=()
for a in "$@"; do
    case "$a" in
    --two-guests) main_phase=0 ;;
    --no-two-guests) two_phase=0 ;;
    *) args+=("$a") ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "realclient-ganesha: needs root (the bridge, port 111)" >&2; exit 2; }

# shellcheck source=tests/realclient/lib/guest.sh
. "$top/tests/realclient/lib/guest.sh"
bridge="${FERRITE_RC_BRIDGE:-frc-br0}"
# At exit, whatever the reason: Ganesha and its helpers stopped (once
# started), then the bridge removed (rc_bridge_down: only what
# rc_bridge_up made; run.sh and two-guests.sh remove their own taps).
ganesha_started=0
cleanup() {
    if [ $ganesha_started = 1 ]; then bash "$top/tools/ganesha.sh" stop || true; fi
    rc_bridge_down
}
trap cleanup EXIT
rc_bridge_up "$bridge" 10.77.0.1/24 || { echo "realclient-ganesha: cannot make the bridge $bridge" >&2; exit 2; }
host="$(rc_bridge_ip "$bridge")"

export GANESHA_BIND="$host" GANESHA_RPCBIND_PORT=111 GANESHA_NOTIFY=1 GANESHA_GRACE=15
export GANESHA_PORT=12070 GANESHA_MNT_PORT=12068 GANESHA_NLM_PORT=12067 GANESHA_STATD_PORT=12066
export GANESHA_STATE="${GANESHA_STATE:-/var/tmp/ferrite-rc-ganesha3}"
mkdir -p "$GANESHA_STATE"
chmod 755 "$GANESHA_STATE" # rpc.statd runs as user statd inside it
# The export must be writable by the suite's unprivileged users.
export GANESHA_EXPORT_DIR="$GANESHA_STATE/export"
rm -rf "$GANESHA_EXPORT_DIR"
mkdir -p "$GANESHA_EXPORT_DIR"
chmod 0777 "$GANESHA_EXPORT_DIR"
ganesha_started=1
bash "$top/tools/ganesha.sh" start
restart="env GANESHA_BIND=$host GANESHA_RPCBIND_PORT=111 GANESHA_NOTIFY=1 GANESHA_GRACE=15"
restart+=" GANESHA_PORT=12070 GANESHA_MNT_PORT=12068 GANESHA_NLM_PORT=12067 GANESHA_STATD_PORT=12066"
restart+=" GANESHA_STATE=$GANESHA_STATE GANESHA_EXPORT_DIR=$GANESHA_EXPORT_DIR bash $top/tools/ganesha.sh restart"

rc_main=0 rc_two=0
if [ $main_phase = 1 ]; then
    bash "$top/tests/realclient/run.sh" --port "$GANESHA_PORT" --mountport "$GANESHA_MNT_PORT" \
        --export / --vers 3 --tap "$bridge" --restart-cmd "$restart" \
        --out "$GANESHA_STATE/out" "${args[@]+"${args[@]}"}" || rc_main=$?
fi
if [ $two_phase = 1 ] && [ $rc_main != 125 ]; then
    bash "$top/tests/realclient/two-guests.sh" --port "$GANESHA_PORT" --export / --tap "$bridge" \
        --vers 3,mix --restart-cmd "$restart" --out "$GANESHA_STATE/out-two" || rc_two=$?
fi
echo "realclient-ganesha: main suite $([ $main_phase = 1 ] && echo "rc=$rc_main" || echo "not run"), two-guest phase $([ $two_phase = 1 ] && echo "rc=$rc_two" || echo "not run"); results in $GANESHA_STATE/out*"
[ $rc_main = 0 ] || exit $rc_main
exit $rc_two
