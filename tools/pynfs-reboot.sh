#!/usr/bin/env bash
# tools/pynfs-reboot.sh: pynfs's NFSv4.1 (or NFSv4.0) "reboot" test group (REBT1 to
# REBT5, 11 tests) against Ferrite with a 15 s lease, optionally beside two
# CPU hogs (issue 28, point 6: the group must pass 11 of 11 with --load).
# Each test has clients (1, 10, 100 or 1,000) open files, has the server
# killed with SIGKILL and restarted on the same state directory and port
# (by a helper script this writes), and checks that they reclaim their
# opens within the grace period and that new opens wait for its end.
#
#   tools/pynfs-reboot.sh PYNFS_DIR [--load] [extra testserver.py args]
#
# PYNFS_DIR is a built pynfs checkout, outside this repository (pynfs is
# GPL and is never committed here). To get one: fetch the GitHub project
# kofemann/pynfs (e.g. `git clone` it, or `git archive` a snapshot of it
# into /work/pynfs), install Debian's python3 and python3-ply
# (`apt-get install -y python3 python3-ply`; python3-gssapi only for
# Kerberos, not needed here), and build it with Debian's python3 first on
# PATH: `cd /work/pynfs && PATH=/usr/bin:$PATH python3 setup.py build`.
#
# --load runs `stress-ng --cpu 2` beside the test (installed with apt-get
# if missing). Extra arguments go to nfs4.1/testserver.py (nfs4.0/) before the test
# selection; REBOOT_TESTS (default "reboot", the whole group) picks tests,
# e.g. REBOOT_TESTS="REBT2c REBT3c". PYNFS_MINOR=0 runs pynfs's NFSv4.0
# suite's reboot group (nfs4.0/, REBT1 to REBT11) instead of NFSv4.1's.
# LEASE (default 15) is the lease and
# grace period; PYTHON (default /usr/bin/python3) runs pynfs; FERRITE_BIN
# uses that binary instead of building target/release/ferrite.
#
# It prints pynfs's results and a timeline of every reboot (the kill, the
# grace period's start and end from the server's log, the end of the
# test's reclaims), and exits 0 only if every test asked for passed. The
# server's log (RUST_LOG=info, with a line at each kill) is kept as
# /tmp/pynfs-reboot-TIME.log and pynfs's output, each line prefixed with
# its Unix time, as /tmp/pynfs-reboot-TIME.pynfs.log. The whole group
# takes 10 to 15 minutes: each test waits a lease and 5 s after its
# reclaims, and the 1,000-client ones take about a minute to set up.
set -euo pipefail

me="pynfs-reboot.sh"
die() { echo "$me: $*" >&2; exit 2; }
usage() { die "usage: tools/pynfs-reboot.sh PYNFS_DIR [--load] [extra testserver.py args]"; }

[ $# -ge 1 ] || usage
case "$1" in -h|--help) usage ;; esac
pynfs="$(cd "$1" 2>/dev/null && pwd)" || die "PYNFS_DIR $1: no such directory"
shift
load=0
if [ "${1:-}" = --load ]; then load=1; shift; fi
top="$(cd "$(dirname "$0")/.." && pwd)"
lease="${LEASE:-15}"
tests="${REBOOT_TESTS:-reboot}"
PYTHON="${PYTHON:-/usr/bin/python3}"

# A built pynfs: testserver.py, and the XDR code `setup.py build` generates.
case "${PYNFS_MINOR:-1}" in
1) suite=nfs4.1 probe='import use_local, xdrdef.nfs4_type, nfs4lib, rpc.rpc' ;;
0) suite=nfs4.0 probe='import sys; sys.path.insert(0, "lib"); import xdrdef.nfs4_type, nfs4lib, rpc.rpc' ;;
*) die "PYNFS_MINOR: 1 (NFSv4.1, the default) or 0 (NFSv4.0)" ;;
esac
notbuilt="$pynfs is not a built pynfs (want $suite/testserver.py and the generated $suite/xdrdef/nfs4_type.py, importable by $PYTHON). Get kofemann/pynfs, apt-get install -y python3 python3-ply, then: cd $pynfs && PATH=/usr/bin:\$PATH python3 setup.py build (and the same in $pynfs/nfs4.0 for NFSv4.0)"
if [ ! -f "$pynfs/$suite/testserver.py" ] || [ ! -f "$pynfs/$suite/xdrdef/nfs4_type.py" ]; then die "$notbuilt"; fi
command -v "$PYTHON" >/dev/null || die "no $PYTHON (Debian's python3; set PYTHON to another)"
(cd "$pynfs/$suite" && "$PYTHON" -c "$probe" >/dev/null 2>&1) ||
    die "$notbuilt; the import fails: $(cd "$pynfs/$suite" && "$PYTHON" -c "$probe" 2>&1 | tail -1)"

if [ -n "${FERRITE_BIN:-}" ]; then
    bin="$FERRITE_BIN"
else
    echo "$me: cargo build --release -p ferrite" >&2
    (cd "$top" && cargo build --release -p ferrite) || die "the build failed"
    bin="${CARGO_TARGET_DIR:-$top/target}/release/ferrite"
fi
[ -x "$bin" ] || die "no ferrite binary at $bin"

if [ $load = 1 ] && ! command -v stress-ng >/dev/null; then
    echo "$me: installing stress-ng" >&2
    apt-get install -y -qq stress-ng >/dev/null 2>&1 ||
        { apt-get update -qq && apt-get install -y -qq stress-ng >/dev/null; } ||
        die "could not install stress-ng (apt-get as root)"
fi

# shellcheck source=tools/wait-lib.sh
. "$top/tools/wait-lib.sh"
tmp="$(mktemp -d /tmp/pynfs-reboot.XXXXXX)"
stamp="$(date +%Y%m%d-%H%M%S)"
keep_log="/tmp/pynfs-reboot-$stamp.log"
keep_out="/tmp/pynfs-reboot-$stamp.pynfs.log"
stress_pid=""
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ -n "$stress_pid" ]; then
        kill "$stress_pid" 2>/dev/null || true
        for _ in $(seq 100); do pid_alive "$stress_pid" || break; sleep 0.1; done
        if pid_alive "$stress_pid"; then
            pkill -9 -P "$stress_pid" 2>/dev/null || true
            kill -9 "$stress_pid" 2>/dev/null || true
        fi
    fi
    local p
    p="$(cat "$tmp/server.pid" 2>/dev/null)" || p=""
    if [ -n "$p" ] && pid_alive "$p"; then
        kill "$p" 2>/dev/null || true
        for _ in $(seq 300); do pid_alive "$p" || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null || true
    fi
    [ -f "$tmp/ferrite.log" ] && cp "$tmp/ferrite.log" "$keep_log"
    [ -f "$tmp/pynfs.out" ] && cp "$tmp/pynfs.out" "$keep_out"
    rm -rf "$tmp"
    [ -f "$keep_log" ] && echo "$me: server log: $keep_log; pynfs output: $keep_out" >&2
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port="$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
mkdir -p "$tmp/export" "$tmp/state"

# start.sh starts the server in the background, its pid in server.pid,
# and returns once it listens. Ferrite listens within a second: 120 s is
# only an upper bound, reached by a server that is broken.
cat > "$tmp/start.sh" <<EOS
#!/usr/bin/env bash
. "$top/tools/wait-lib.sh"
RUST_LOG=\${RUST_LOG:-info} "$bin" serve "$tmp/export" --listen 127.0.0.1:$port --state-dir "$tmp/state" --lease $lease --portmap off </dev/null >>"$tmp/ferrite.log" 2>&1 &
pid=\$!
echo \$pid > "$tmp/server.pid"
up_or_gone() { ! pid_alive \$pid || (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; }
if wait_until 120 up_or_gone && pid_alive \$pid; then
    echo "pynfs-reboot: ferrite pid \$pid listening on 127.0.0.1:$port"
    exit 0
fi
echo "pynfs-reboot: ferrite did not start (not listening on 127.0.0.1:$port within 120 s, or exited); see $tmp/ferrite.log" >&2
exit 1
EOS
# helper.sh is pynfs's --serverhelper: called as `helper.sh reboot`, it
# kills the server with SIGKILL and starts it again on the same state
# directory and port, returning once it listens (pynfs connects once,
# right after, without retrying).
cat > "$tmp/helper.sh" <<EOS
#!/usr/bin/env bash
. "$top/tools/wait-lib.sh"
[ "\${!#}" = reboot ] || { echo "pynfs-reboot helper: unknown request: \$*" >&2; exit 1; }
pid=\$(cat "$tmp/server.pid")
kill -9 \$pid
echo "pynfs-reboot: reboot: kill -9 ferrite pid \$pid at \$EPOCHREALTIME" | tee -a "$tmp/ferrite.log"
gone() { ! pid_alive \$pid; }
wait_until 60 gone || { echo "pynfs-reboot: ferrite pid \$pid still there 60 s after SIGKILL" >&2; exit 1; }
exec "$tmp/start.sh"
EOS
chmod +x "$tmp/start.sh" "$tmp/helper.sh"
"$tmp/start.sh" >&2 || exit 1

if [ $load = 1 ]; then
    stress-ng --cpu 2 --timeout 0 >"$tmp/stress-ng.log" 2>&1 &
    stress_pid=$!
    echo "$me: stress-ng --cpu 2 running beside it (pid $stress_pid)" >&2
fi

echo "$me: ferrite $bin on 127.0.0.1:$port, lease $lease s, export $tmp/export, load=$load; pynfs $pynfs: $tests" >&2
# pynfs's output goes to the terminal as it comes (lines cut at 300
# characters) and, whole, each line with its Unix time, to pynfs.out (for
# the timeline).
# shellcheck disable=SC2086  # $tests: a list of test names
(cd "$pynfs/$suite" && PYTHONUNBUFFERED=1 exec "$PYTHON" ./testserver.py \
    "127.0.0.1:$port/pynfs" --maketree --verbose --serverhelper "$tmp/helper.sh" \
    "$@" $tests) 2>&1 </dev/null |
    while IFS= read -r line; do
        printf '%s\t%s\n' "$EPOCHREALTIME" "$line" >>"$tmp/pynfs.out"
        printf '%.300s\n' "$line"  # (pynfs prints whole directory listings)
    done || echo "$me: testserver.py (or its output) ended with status $?" >&2

# The timeline of each test's reboots, from pynfs.out and the server log.
echo
echo "Reboot timeline (seconds after each kill -9; grace lines from the server log):"
"$PYTHON" - "$tmp/pynfs.out" "$tmp/ferrite.log" <<'PY'
import re, sys
from datetime import datetime, timezone

events = []  # (time, kind, text)
for line in open(sys.argv[1], errors="replace"):
    t, _, text = line.rstrip("\n").partition("\t")
    t = float(t)
    m = re.match(r"^(\S+)\s+st_\w+\.\w+\s+: (.+?)\s*$", text)
    if m:
        events.append((t, "test", (m.group(1), m.group(2))))
    elif "Waiting for grace period to end" in text:
        events.append((t, "body", text))
    elif text.startswith("pynfs-reboot: ferrite pid") and "listening" in text:
        events.append((t, "up", text))
for line in open(sys.argv[2], errors="replace"):
    m = re.match(r"^pynfs-reboot: reboot: kill -9 ferrite pid (\d+) at ([\d.]+)", line)
    if m:
        events.append((float(m.group(2)), "kill", m.group(1)))
        continue
    m = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)Z?\s+\S+\s+(.*)$", line)
    if not m or "grace period" not in m.group(2):
        continue
    ts = datetime.fromisoformat(re.sub(r"(\.\d{6})\d+", r"\1", m.group(1))).replace(tzinfo=timezone.utc).timestamp()
    text = re.sub(r"^\S+: ", "", m.group(2))
    events.append((ts, "grace", text))
events.sort(key=lambda e: e[0])

test, kill = None, None
for t, kind, what in events:
    if kind == "test":
        code, result = what
        if result == "RUNNING":
            test, kill = code, None
            print(f"{code}:")
        elif test is not None:
            print(f"  {result}")
            test = None
        continue
    if test is None:
        continue
    if kind == "kill":
        kill = t
        print(f"  kill -9 pid {what}")
    elif kill is None:
        continue
    elif kind == "up":
        print(f"  +{t - kill:7.2f} s  listening again")
    elif kind == "grace":
        print(f"  +{t - kill:7.2f} s  {what}")
    elif kind == "body":
        print(f"  +{t - kill:7.2f} s  reclaims and checks over (or failed): {what.split(':', 2)[-1].strip()}")
PY

# "Command line asked for N of M tests" / "Of those: S Skipped, F Failed,
# W Warned, P Passed": every test asked for must have passed.
asked="$(sed -n 's/^[0-9.]*\tCommand line asked for \([0-9]*\) of .*/\1/p' "$tmp/pynfs.out" | tail -1)"
passed="$(sed -n 's/^[0-9.]*\tOf those: .* \([0-9]*\) Passed.*/\1/p' "$tmp/pynfs.out" | tail -1)"
echo
if [ -z "$asked" ] || [ -z "$passed" ]; then
    echo "$me: FAIL: no pynfs summary (interrupted, or it could not start: see above)"
    exit 1
elif [ "$asked" -eq 0 ] || [ "$passed" -ne "$asked" ]; then
    echo "$me: FAIL: $passed of $asked tests passed (lease $lease s, load=$load)"
    exit 1
fi
echo "$me: OK: $passed of $asked tests passed (lease $lease s, load=$load)"
