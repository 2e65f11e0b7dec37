#!/usr/bin/env bash
# tools/pynfs-krb5.sh: pynfs's NFSv4.1 tests under RPCSEC_GSS (issue 32):
# testserver.py --security=krb5, krb5i and krb5p against a Ferrite built
# with the `kerberos` feature, in a realm of its own (tools/krb5-lib.sh:
# Debian's KDC on loopback, the server's key nfs/localhost). pynfs's main
# credential is alice's ticket, mapped to root (as its AUTH_SYS runs are
# root); its second credential stays AUTH_SYS, which the export also takes
# (sec = ["krb5p", "krb5i", "krb5", "sys"]).
#
#   tools/pynfs-krb5.sh PYNFS_DIR [FLAVOR,...] [TESTS...]
#
# FLAVOR: krb5, krb5i, krb5p (default all three); TESTS: pynfs test names
# or groups (default all). PYNFS_DIR is a built pynfs checkout outside
# this repository (see tools/pynfs.sh); pynfs's Kerberos needs
# Debian's python3-gssapi, installed here if missing (root, apt).
# Prints each flavor's pass/fail/warn counts; the logs stay in the work
# directory it names. Exit status 1 if any test failed.
set -euo pipefail
me=pynfs-krb5.sh
die() { echo "$me: $*" >&2; exit 2; }
[ $# -ge 1 ] || die "usage: tools/pynfs-krb5.sh PYNFS_DIR [FLAVOR,...] [TESTS...]"
pynfs="$(cd "$1" 2>/dev/null && pwd)" || die "PYNFS_DIR $1: no such directory"
shift
flavors=krb5,krb5i,krb5p
case "${1:-}" in krb5*) flavors=$1; shift ;; esac
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(all)
top="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
cd "$top"
[ "$(id -u)" = 0 ] || die "must run as root (apt, the KDC)"
PYTHON="${PYTHON:-/usr/bin/python3}"
[ -f "$pynfs/nfs4.1/testserver.py" ] || die "$pynfs is not a built pynfs (see tools/pynfs.sh)"
"$PYTHON" -c 'import gssapi' 2>/dev/null ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-gssapi >/dev/null ||
    die "could not install python3-gssapi"
. "$top/tools/wait-lib.sh"
. "$top/tools/krb5-lib.sh"
work="$(mktemp -d /var/tmp/ferrite-pynfs-krb5.XXXXXX)"
fpid=""
cleanup() {
    [ -n "$fpid" ] && kill "$fpid" 2>/dev/null && wait "$fpid" 2>/dev/null
    kr_cleanup
}
trap cleanup EXIT
kr_build_deps "$me"
kr_ensure "$me"
kdc="${FERRITE_KDC_PORT:-18891}"
kr_realm "$me" "$work/krb5" "$kdc"
kr_service "$me" nfs/localhost
kr_user "$me" alice "alice-$$"
kr_kinit "$me" alice "alice-$$" "FILE:$work/alice.cc"
cargo build --release -p ferrite --features kerberos
tdir="${CARGO_TARGET_DIR:-target}"
case "$tdir" in /*) ;; *) tdir="$top/$tdir" ;; esac
port="${FERRITE_PORT:-20149}"
mkdir -p "$work/export" "$work/state"
cat > "$work/ferrite.toml" <<CONF
listen = "127.0.0.1:$port"
state_dir = "$work/state"
lease_seconds = 15
grace_seconds = 15
delegations = true

[kerberos]
keytab = "$work/krb5/nfs.keytab"
principals = { "alice@FERRITE.TEST" = "root" }

[[export]]
path = "/"
dir = "$work/export"
sec = ["krb5p", "krb5i", "krb5", "sys"]
clients = [{ match = "127.0.0.1", squash = "none", secure = false }]
CONF
KRB5RCACHEDIR="$work/krb5" "$tdir/release/ferrite" serve --config "$work/ferrite.toml" --portmap off \
    >"$work/ferrite.log" 2>&1 &
fpid=$!
up() { (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }
wait_until 120 up || die "ferrite did not start: $(tail -5 "$work/ferrite.log")"
echo "$me: KDC 127.0.0.1:$kdc, ferrite 127.0.0.1:$port, work $work"
fail=0
for f in ${flavors//,/ }; do
    log="$work/pynfs-$f.log"
    (cd "$pynfs/nfs4.1" && KRB5CCNAME="FILE:$work/alice.cc" "$PYTHON" testserver.py \
        "localhost:$port/pynfs-$f" --security="$f" --maketree "${tests[@]}") >"$log" 2>&1 || true
    summary="$(grep -E '^Of those:|^Command line' "$log" | tail -1)"
    echo "$me: $f: $summary (log $log)"
    grep -q 'Of those:.* 0 Failed' "$log" || fail=1
    grep -E ': FAILURE$' "$log" | sed "s/^/  $f: /" | head -20 || true
done
grep -qi panicked "$work/ferrite.log" && { echo "$me: ferrite panicked: $work/ferrite.log"; fail=1; }
exit $fail
