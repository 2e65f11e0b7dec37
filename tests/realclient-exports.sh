#!/usr/bin/env bash
# Export rules with the real Linux client: starts Ferrite from a ferrite.toml
# with three exports under the pseudo root, as a new user would write it,
# and runs the export-rule scenarios of tests/realclient (run.sh --suite
# exports) in the qemu guest, then checks on the host what reached the disk.
#
#   /data       rw for 127.0.0.1 (after a non-matching ro rule for
#               10.0.0.0/8), squash = "root", secure = false
#   /pub/docs   ro, squash = "all" with anonuid/anongid 1234,
#               secure = false, sec = ["sys", "none"], match = "localhost"
#   /private    only for 10.0.0.0/8: never the guest (it reaches the host
#               from 127.0.0.1, on unprivileged ports, hence secure = false)
#   /strict     no rules: "*" with the defaults, so secure = true, which the
#               guest's unprivileged ports do not satisfy
#   /far        a referral (RFC 8881 §11.15) to "10.0.2.2:/far", the host as
#               the guest sees it: a second Ferrite ("far", config far.toml)
#               serving $work/far on 127.0.0.1:2049 (the Linux client follows
#               a referral to port 2049 whatever it names). Port 2049 must be
#               free on 127.0.0.1.
#   /mig        $work/mig, migrated (RFC 8881 §11.14) mid-scenario to the
#               far server, which serves the same directory at /mig
#               (served_by this server until then; both share fh.key), and
#               back once the guest has unmounted it.
#
# The reload scenario asks the host (run.sh --restart-cmd, with RC_TAG)
# to edit ferrite.toml and reload while /data is mounted: first /data
# read-only for 127.0.0.1 and a fifth export /added, applied with
# `ferrite reload`; then the original file again, applied with SIGHUP.
#
# Extra arguments go to run.sh (for example --vers 4.1 or --only docs_ro).
# Prints PASS/FAIL lines (guest scenarios, then "host/..." checks) and exits
# non-zero if any failed. The work directory (config, log, artifacts) is
# /var/tmp/ferrite-rcx.*; the newest 5 are kept.
set -euo pipefail
top="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
cd "$top"

cargo build --release -p ferrite
cargo build --release -p e2e --example lockprobe
bin="$top/target/release/ferrite"
probe="$top/target/release/examples/lockprobe"
{ ls -1dt /var/tmp/ferrite-rcx.*/ 2>/dev/null || true; } | tail -n +5 | xargs -r rm -rf
work="$(mktemp -d /var/tmp/ferrite-rcx.XXXXXX)"
chmod 0755 "$work"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"

# --- the exported directories (contents must match XS_* in guest/suite.py) ---
mkdir -p "$work/data/open" "$work/docs/sub" "$work/docs/empty" "$work/private" "$work/strict" "$work/state"
chown 0:0 "$work/data" "$work/docs" "$work/private" "$work/strict"
chmod 0755 "$work/data" "$work/private" "$work/strict"
chmod 0777 "$work/data/open" "$work/docs"
printf 'hello from the data export\n' > "$work/data/hello.txt"; chmod 0644 "$work/data/hello.txt"
printf 'root only\n' > "$work/data/secret"; chmod 0600 "$work/data/secret"
printf 'Ferrite export-rule suite: pre-populated, read-only.\n' > "$work/docs/readme.txt"
chmod 0666 "$work/docs/readme.txt"   # only the "ro" rule stops writes
printf 'nested\n' > "$work/docs/sub/nested.txt"
printf 'for uid 1234 only\n' > "$work/docs/anon-only.txt"
chown 1234:1234 "$work/docs/anon-only.txt"; chmod 0600 "$work/docs/anon-only.txt"
printf 'root only\n' > "$work/docs/root-only.txt"; chmod 0600 "$work/docs/root-only.txt"
printf 'private\n' > "$work/private/hidden.txt"
printf 'strict\n' > "$work/strict/file.txt"
mkdir -p "$work/added"
printf 'added by a reload\n' > "$work/added/added.txt"   # XS_ADDED in guest/suite.py
mkdir -p "$work/far" "$work/far-state" "$work/mig"
chmod 0777 "$work/far" "$work/mig"
# A migration pair shares the filehandle key (their handles must agree).
head -c 32 /dev/urandom > "$work/state/fh.key"
cp "$work/state/fh.key" "$work/far-state/fh.key"
chmod 0600 "$work/state/fh.key" "$work/far-state/fh.key"
printf 'the referral target\n' > "$work/far/target.txt"   # XS_FAR in guest/suite.py

cat > "$work/ferrite.toml" <<EOF
listen = "127.0.0.1:$port"
state_dir = "$work/state"
lease_seconds = 30

[[export]]
path = "/data"
dir = "$work/data"
[[export.clients]]
match = "10.0.0.0/8"
access = "ro"
[[export.clients]]
match = "127.0.0.1"
access = "rw"
squash = "root"
secure = false

[[export]]
path = "/pub/docs"
dir = "$work/docs"
sec = ["sys", "none"]
clients = [
    { match = "localhost", access = "ro", squash = "all", anonuid = 1234, anongid = 1234, secure = false },
]

[[export]]
path = "/private"
dir = "$work/private"
[[export.clients]]
match = "10.0.0.0/8"
secure = false

[[export]]
path = "/strict"
dir = "$work/strict"

[[export]]
path = "/far"
referral = ["10.0.2.2:2049:/far"]

[[export]]
id = 10
path = "/mig"
dir = "$work/mig"
clients = [{ match = "127.0.0.1", squash = "none", secure = false }]
EOF

cat > "$work/far.toml" <<EOF
listen = "127.0.0.1:2049"
state_dir = "$work/far-state"
lease_seconds = 30

[[export]]
path = "/far"
dir = "$work/far"
clients = [{ match = "*", squash = "none", secure = false }]

[[export]]
id = 10
path = "/mig"
dir = "$work/mig"
clients = [{ match = "127.0.0.1", squash = "none", secure = false }]
served_by = "10.0.2.2:$port"
EOF

# The reload scenario's edit: /data read-only for the guest, /added new
# (last, so that the others keep their ids: without an `id`, an export's
# id is its position).
cp "$work/ferrite.toml" "$work/ferrite.toml.orig"
{
    sed 's/^access = "rw"$/access = "ro"/' "$work/ferrite.toml.orig"
    printf '\n[[export]]\npath = "/added"\ndir = "%s/added"\nclients = [{ match = "127.0.0.1", secure = false }]\n' "$work"
} > "$work/ferrite.toml.ro"
grep -q '^access = "ro"$' "$work/ferrite.toml.ro" || { echo "realclient-exports: the ro edit did not apply" >&2; exit 1; }

tree_sum() { (cd "$1" && find . -printf '%p %s %m %u:%g %T@\n' | sort | sha256sum | cut -d' ' -f1); }
docs_before=$(tree_sum "$work/docs") private_before=$(tree_sum "$work/private") strict_before=$(tree_sum "$work/strict")

# This suite sets up nothing on the host's network: the guest reaches
# Ferrite on 127.0.0.1 through qemu's user-mode networking (no bridge, no
# tap device); the only thing to undo at exit is Ferrite itself.
# shellcheck source=tools/wait-lib.sh
. "$top/tools/wait-lib.sh"
# The referral's target: port 2049, which the Linux client uses for it.
if (exec 3<>/dev/tcp/127.0.0.1/2049) 2>/dev/null; then
    echo "realclient-exports: something already listens on 127.0.0.1:2049, where the referral's target must (the Linux client follows referrals to port 2049): stop it first" >&2
    exit 1
fi
"$bin" serve --config "$work/far.toml" --portmap off >>"$work/far.log" 2>&1 &
farpid=$!
"$bin" serve --config "$work/ferrite.toml" >>"$work/ferrite.log" 2>&1 &
fpid=$!
trap 'kill "$fpid" "$farpid" 2>/dev/null; wait "$fpid" "$farpid" 2>/dev/null || true' EXIT
alive() { pid_alive "$fpid"; }
far_up() { ! pid_alive "$farpid" || (exec 3<>/dev/tcp/127.0.0.1/2049) 2>/dev/null; }
if ! wait_until 120 far_up || ! pid_alive "$farpid"; then
    echo "realclient-exports: the referral's target did not start on 127.0.0.1:2049:" >&2
    sed 's/^/  /' "$work/far.log" >&2
    exit 1
fi
# Ferrite listens within a second here: 120 s is an upper bound, reached
# only by a Ferrite that cannot start.
up_or_gone() { ! alive || (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }
if ! wait_until 120 up_or_gone || ! alive; then
    echo "realclient-exports: ferrite did not start (exited, or not listening on 127.0.0.1:$port within 120 s):" >&2
    sed 's/^/  /' "$work/ferrite.log" >&2
    exit 1
fi
echo "realclient-exports: ferrite on 127.0.0.1:$port, config $work/ferrite.toml, log $work/ferrite.log"

# What the host does when the reload scenario asks (RC_TAG). SIGHUP is
# applied within a second here; 60 s is an upper bound on waiting for it,
# and a reload not applied by then fails the request (and so the guest's
# scenario) rather than letting the guest find out later.
cat > "$work/reload.sh" <<EOF
set -eu
. "$top/tools/wait-lib.sh"
exports_now() { "$bin" exports --state-dir "$work/state" | grep '^/' | cut -d' ' -f1 | tr '\n' ' '; }
added_gone() { case " \$(exports_now)" in *" /added "*) return 1 ;; esac; }
case "\$RC_TAG" in
probe-start-*)
    # A second NFS client trying for the guest's lock at both servers
    # (crates/e2e/examples/lockprobe.rs); on once it has been refused here.
    rm -f "$work/probe-stop"
    f="busy-\${RC_TAG#probe-start-}"
    nohup "$probe" 127.0.0.1:$port 127.0.0.1:2049 mig "\$f" "$work/probe-stop" > "$work/probe-\$f.log" 2>&1 &
    refused() { grep -q "refused at 127.0.0.1:$port" "$work/probe-\$f.log"; }
    wait_until 60 refused || { echo "the probe was not refused within 60 s:"; cat "$work/probe-\$f.log"; exit 1; }
    cat "$work/probe-\$f.log"
    exit 0
    ;;
probe-stop-*)
    f="busy-\${RC_TAG#probe-stop-}"
    touch "$work/probe-stop"
    verdict() { grep -q '^verdict:' "$work/probe-\$f.log"; }
    wait_until 120 verdict || { echo "the probe gave no verdict within 120 s"; exit 1; }
    cat "$work/probe-\$f.log"
    grep -qx 'verdict: ok' "$work/probe-\$f.log"
    exit
    ;;
migrate-*)
    # /mig to the far server, the guest's application busy on it.
    "$bin" migrate /mig --to 127.0.0.1:2049 --location 10.0.2.2:2049 --state-dir "$work/state" --json | tee -a "$work/migrations.jsonl"
    exit "\${PIPESTATUS[0]}"
    ;;
return-*)
    # And back, nobody mounted (unless it never left).
    if out=\$("$bin" migrate /mig --to 127.0.0.1:$port --location 10.0.2.2:$port --state-dir "$work/far-state" --json 2>&1); then
        echo "\$out" | tee -a "$work/migrations.jsonl"
    else
        echo "\$out"
        case "\$out" in *"not served here"*) exit 0 ;; esac
        exit 1
    fi
    exit 0
    ;;
reload-ro-*)
    cp "$work/ferrite.toml.ro" "$work/ferrite.toml"
    "$bin" reload --state-dir "$work/state"
    ;;
reload-rw-*)
    cp "$work/ferrite.toml.orig" "$work/ferrite.toml"
    kill -HUP $fpid
    wait_until 60 added_gone || { echo "SIGHUP: /added still exported 60 s later: \$(exports_now)"; exit 1; }
    ;;
*) echo "unknown request \$RC_TAG"; exit 1 ;;
esac
echo "exports now: \$(exports_now)"
"$bin" exports --state-dir "$work/state" | grep -A1 '^/data '
EOF

set +e
bash "$top/tests/realclient/run.sh" --suite exports --host 127.0.0.1 --port "$port" --out "$work/out" \
    --restart-cmd "bash $work/reload.sh" "$@"
rc=$?
set -e

# --- host-side checks: what the guest's operations did on disk ---------------
hfail=0
hcheck() {   # name, expected, actual
    if [ "$2" = "$3" ]; then echo "PASS host/$1"; else echo "FAIL host/$1: expected $2, got $3"; hfail=1; fi
}
owner() { stat -c %u:%g "$1" 2>/dev/null || echo missing; }
ran() { grep -Eq "^(PASS|FAIL) v$1/$2( |:|$)" "$work/out/results.txt" 2>/dev/null; }
echo
for v in 4.2 4.1; do
    t=v${v/./}
    if ran "$v" data_squash; then
        hcheck "$t/root-squashed-file-owner" 65534:65534 "$(owner "$work/data/open/root-$t")"
        hcheck "$t/root-squashed-dir-owner" 65534:65534 "$(owner "$work/data/open/rootdir-$t")"
        hcheck "$t/nothing-created-in-0755-root" "absent absent" \
            "$([ -e "$work/data/root-$t" ] && echo present || echo absent) $([ -e "$work/data/rootdir-$t" ] && echo present || echo absent)"
    fi
    if ran "$v" data_user; then
        hcheck "$t/user-file-owner" 1000:1000 "$(owner "$work/data/open/user-$t")"
    fi
    if ran "$v" reload; then
        hcheck "$t/reload-kept-file" "before" "$(cat "$work/data/open/reload-$t" 2>/dev/null || echo missing)"
        hcheck "$t/reload-nothing-made-while-ro" absent "$([ -e "$work/data/open/ro-$t" ] && echo present || echo absent)"
        hcheck "$t/reload-made-once-rw-again" "65534:65534" "$(owner "$work/data/open/rw-$t")"
    fi
    if ran "$v" pseudo_root; then
        hcheck "$t/via-pseudo-root-file-owner" 65534:65534 "$(owner "$work/data/open/via-root-$t")"
    fi
    if ran "$v" migrate; then
        # Every line the application wrote through the move is on disk.
        hcheck "$t/migrated-writes-on-disk" "$(seq 0 399 | sha256sum | cut -d' ' -f1)" "$(sha256sum < "$work/mig/busy-$t" 2>/dev/null | cut -d' ' -f1)"
    fi
    if ran "$v" referral; then
        # Written through the referral: it reached the target's disk.
        hcheck "$t/referral-write-on-the-target" "through the referral $t" "$(cat "$work/far/via-referral-$t" 2>/dev/null || echo missing)"
    fi
done
if ran 4.2 reload || ran 4.1 reload; then
    hcheck "reload-logged" yes "$(grep -q 'reload: export /data (id 0) client rules now' "$work/ferrite.log" && grep -q 'SIGHUP: reading the configuration again' "$work/ferrite.log" && echo yes || echo no)"
fi
hcheck "data-root-unchanged" "hello.txt open secret" "$(cd "$work/data" && ls | tr '\n' ' ' | sed 's/ $//')"
hcheck "docs-unchanged" "$docs_before" "$(tree_sum "$work/docs")"
hcheck "private-unchanged" "$private_before" "$(tree_sum "$work/private")"
hcheck "strict-unchanged" "$strict_before" "$(tree_sum "$work/strict")"
if [ -s "$work/migrations.jsonl" ]; then
    echo "migrations (took_ms: from the command to the commit; frozen_ms: opens, closes and locks held off):"
    sed 's/^/  /' "$work/migrations.jsonl"
    # The far server took WRITEs from the guest after the move.
    far_writes=$("$bin" stat --state-dir "$work/far-state" --json | python3 -c 'import json,sys; r=json.load(sys.stdin); print(sum(o["count"] for p in r["programs"] for o in p["ops"] if o["name"]=="WRITE"))' 2>/dev/null || echo 0)
    if [ "${far_writes:-0}" -gt 0 ]; then echo "PASS host/destination-served-writes ($far_writes)"; else echo "FAIL host/destination-served-writes: the far server counted no WRITE"; hfail=1; fi
    # Transparent: the guest reclaimed nothing there (a reclaim would be
    # NFS4ERR_NO_GRACE: the far server has no grace period for it).
    far_ops=$("$bin" stat --state-dir "$work/far-state" --json | python3 -c 'import json,sys; r=json.load(sys.stdin); print(" ".join("%s=%d%s" % (o["name"], o["count"], "".join(",%s:%d" % (k, v) for k, v in o["statuses"])) for p in r["programs"] if p["name"] == "NFSv4" for o in p["ops"] if o["count"]))' 2>/dev/null || echo "?")
    echo "destination's NFSv4 operations: $far_ops"
    case "$far_ops" in
    *NO_GRACE*|*RECLAIM_BAD*|*"?"*) echo "FAIL host/no-reclaim-at-destination: $far_ops"; hfail=1 ;;
    *) echo "PASS host/no-reclaim-at-destination" ;;
    esac
fi
if alive; then echo "PASS host/ferrite-still-running"; else echo "FAIL host/ferrite-still-running: ferrite exited; see $work/ferrite.log"; hfail=1; fi
if grep -qi 'panicked' "$work/ferrite.log" "$work/far.log"; then echo "FAIL host/no-panic: see $work/ferrite.log, $work/far.log"; hfail=1; else echo "PASS host/no-panic"; fi

echo "realclient-exports: guest suite rc=$rc, host checks $([ $hfail = 0 ] && echo PASS || echo FAIL); work dir $work"
[ "$rc" = 0 ] || exit "$rc"
exit $hfail
