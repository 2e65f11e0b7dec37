#!/usr/bin/env bash
# tools/pynfs.sh: pynfs's NFSv4.1 (nfs4.1/) or NFSv4.0 (nfs4.0/) server tests
# against a Ferrite it starts, with a --serverhelper that does on the
# server what the tests ask: `reboot` (the reboot groups), and `unlink`,
# `rename`, `link` and `chmod` of files in the export (the NFSv4.0
# delegations group's DELEG16 to DELEG20: a local change recalls a
# delegation as another client's would).
#
#   tools/pynfs.sh PYNFS_DIR [--load] [extra testserver.py args]
#
# PYNFS_TESTS (default "reboot"; REBOOT_TESTS is the old name) picks the
# tests or groups, e.g. PYNFS_TESTS="REBT2c REBT3c" or "delegations" or
# "all"; PYNFS_MINOR=0 runs the NFSv4.0 suite (default 1, NFSv4.1).
# REFERENCE=FILE (a list of test codes, one per line, `#` comments) makes
# the run pass when every test listed there passed, and lists those that
# did not (e.g. ../shared/reference/pynfs-ganesha-4.0-all-pass.txt, the
# tests NFS-Ganesha passes); without it every test asked for must pass.
#
# The reboot group (issue 28, point 6: 11 of 11 with --load): each test
# has clients (1, 10, 100 or 1,000) open files, has the server killed
# with SIGKILL and restarted on the same state directory and port, and
# checks that they reclaim their opens within the grace period and that
# new opens wait for its end. The whole group takes 10 to 15 minutes:
# each test waits a lease and 5 s after its reclaims, and the 1,000-client
# ones take about a minute to set up.
#
# PYNFS_DIR is a built pynfs checkout, outside this repository (pynfs is
# GPL and is never committed here). To get one: fetch the GitHub project
# kofemann/pynfs (e.g. `git clone` it, or `git archive` a snapshot of it
# into /work/pynfs), install Debian's python3 and python3-ply
# (`apt-get install -y python3 python3-ply`; python3-gssapi only for
# Kerberos, not needed here), and build it with Debian's python3 first on
# PATH: `cd /work/pynfs && PATH=/usr/bin:$PATH python3 setup.py build`
# (and the same in /work/pynfs/nfs4.0 for NFSv4.0).
#
# --load runs `stress-ng --cpu 2` beside the test (installed with apt-get
# if missing). Extra arguments go to testserver.py before the test
# selection (e.g. --rundeps). LEASE (default 15) is the lease and grace
# period; PYTHON (default /usr/bin/python3) runs pynfs; FERRITE_BIN uses
# that binary instead of building target/release/ferrite.
#
# It prints pynfs's results and a timeline of every reboot (the kill, the
# grace period's start and end from the server's log, the end of the
# test's reclaims). The server's log (RUST_LOG=info, with a line at each
# kill and each helper request) is kept as /tmp/pynfs-TIME.log and
# pynfs's output, each line prefixed with its Unix time, as
# /tmp/pynfs-TIME.pynfs.log.
set -euo pipefail

me="pynfs.sh"
die() { echo "$me: $*" >&2; exit 2; }
usage() { die "usage: tools/pynfs.sh PYNFS_DIR [--load] [extra testserver.py args]"; }

[ $# -ge 1 ] || usage
case "$1" in -h|--help) usage ;; esac
pynfs="$(cd "$1" 2>/dev/null && pwd)" || die "PYNFS_DIR $1: no such directory"
shift
load=0
if [ "${1:-}" = --load ]; then load=1; shift; fi
top="$(cd "$(dirname "$0")/.." && pwd)"
lease="${LEASE:-15}"
tests="${PYNFS_TESTS:-${REBOOT_TESTS:-reboot}}"
reference="${REFERENCE:-}"
if [ -n "$reference" ]; then
    [ -f "$reference" ] || die "REFERENCE $reference: no such file"
    reference="$(readlink -f "$reference")"
fi
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
    # Absolute: the helper starts it again from pynfs's directory.
    bin="$(readlink -f "$FERRITE_BIN")"
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
tmp="$(mktemp -d /tmp/pynfs.XXXXXX)"
stamp="$(date +%Y%m%d-%H%M%S)"
keep_log="/tmp/pynfs-$stamp.log"
keep_out="/tmp/pynfs-$stamp.pynfs.log"
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
    echo "pynfs.sh: ferrite pid \$pid listening on 127.0.0.1:$port"
    exit 0
fi
echo "pynfs.sh: ferrite did not start (not listening on 127.0.0.1:$port within 120 s, or exited); see $tmp/ferrite.log" >&2
exit 1
EOS
# helper.sh is pynfs's --serverhelper, called with one request:
# `reboot` kills the server with SIGKILL and starts it again on the same
# state directory and port, returning once it listens (pynfs connects
# once, right after, without retrying); `unlink P`, `rename P Q`, `link P
# Q` and `chmod MODE P` do that to the files P and Q, paths from the
# server's root (the export), as a local program would.
cat > "$tmp/helper.sh" <<EOS
#!/usr/bin/env bash
. "$top/tools/wait-lib.sh"
log() { echo "pynfs.sh: \$*" | tee -a "$tmp/ferrite.log"; }
# The delegations the server's clients hold (ferrite stat).
held() {
    "$bin" stat --state-dir "$tmp/state" --json 2>/dev/null |
        "$PYTHON" -c 'import json, sys; print(sum(c["delegations"] for c in json.load(sys.stdin)["clients"]))' 2>/dev/null ||
        echo 0
}
# A path pynfs names, inside the export (no "..").
local_path() {
    case "/\$1/" in */../*) echo "pynfs.sh helper: refusing \$1" >&2; exit 1 ;; esac
    printf '%s%s' "$tmp/export" "\$1"
}
case "\${1:-}" in
reboot)
    pid=\$(cat "$tmp/server.pid")
    kill -9 \$pid
    log "reboot: kill -9 ferrite pid \$pid at \$EPOCHREALTIME"
    # Gone with every thread (see pid_alive): a thread still exiting
    # holds the listening socket, and the new bind would fail.
    gone() { ! pid_alive \$pid; }
    wait_until 60 gone || { echo "pynfs.sh: ferrite pid \$pid still there 60 s after SIGKILL" >&2; exit 1; }
    exec "$tmp/start.sh" ;;
unlink | rename | link | chmod)
    log "helper: \$*"
    last=\$(local_path "\${!#}") || exit 1
    before=\$(held)
    case "\$1 \$#" in
    "unlink 2") rm -- "\$last" ;;
    "chmod 3") chmod -- "\$2" "\$last" ;;
    "rename 3") first=\$(local_path "\$2") && mv -T -- "\$first" "\$last" ;;
    "link 3") first=\$(local_path "\$2") && ln -T -- "\$first" "\$last" ;;
    *) echo "pynfs.sh helper: bad request: \$*" >&2; exit 1 ;;
    esac
    rc=\$?
    # The Linux server holds a local change to a delegated file back
    # until the delegation is returned (a lease break), and pynfs checks
    # for the recall as soon as this returns. Ferrite learns of local
    # changes after the fact (fanotify cannot hold a rename back) and
    # recalls then: wait, at most 20 s, for the delegations held to drop.
    fewer() { [ "\$(held)" -lt "\$before" ]; }
    [ "\$before" -gt 0 ] && { wait_until 20 fewer || log "helper: no delegation came back within 20 s"; }
    exit \$rc ;;
esac
echo "pynfs.sh helper: unknown request: \$*" >&2
exit 1
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
    elif text.startswith("pynfs.sh: ferrite pid") and "listening" in text:
        events.append((t, "up", text))
for line in open(sys.argv[2], errors="replace"):
    m = re.match(r"^pynfs.sh: reboot: kill -9 ferrite pid (\d+) at ([\d.]+)", line)
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
# W Warned, P Passed": every test asked for must have passed, or with
# REFERENCE every test listed there.
asked="$(sed -n 's/^[0-9.]*\tCommand line asked for \([0-9]*\) of .*/\1/p' "$tmp/pynfs.out" | tail -1)"
passed="$(sed -n 's/^[0-9.]*\tOf those: .* \([0-9]*\) Passed.*/\1/p' "$tmp/pynfs.out" | tail -1)"
echo
if [ -z "$asked" ] || [ -z "$passed" ]; then
    echo "$me: FAIL: no pynfs summary (interrupted, or it could not start: see above)"
    exit 1
fi
if [ -n "$reference" ]; then
    # Each test's last result line: "CODE  st_file.testName  : PASS".
    sed -n 's/^[0-9.]*\t\([A-Za-z0-9_]*\) *st_[A-Za-z0-9_.]* *: \([A-Z]*\).*/\1 \2/p' "$tmp/pynfs.out" >"$tmp/results"
    missing="$(grep -v '^#' "$reference" | awk 'NR == FNR { r[$1] = $2; next } NF { if (r[$1] != "PASS") print $1 }' "$tmp/results" -)"
    want="$(grep -cv '^#\|^$' "$reference")"
    if [ -n "$missing" ]; then
        echo "$me: FAIL: $passed of $asked tests passed; of the $want in $reference these did not:" $missing
        exit 1
    fi
    echo "$me: OK: $passed of $asked tests passed, every one of the $want in $reference among them (lease $lease s, load=$load)"
    exit 0
fi
if [ "$asked" -eq 0 ] || [ "$passed" -ne "$asked" ]; then
    echo "$me: FAIL: $passed of $asked tests passed (lease $lease s, load=$load)"
    exit 1
fi
echo "$me: OK: $passed of $asked tests passed (lease $lease s, load=$load)"
