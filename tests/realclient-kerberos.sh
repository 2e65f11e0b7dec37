#!/usr/bin/env bash
# RPCSEC_GSS with Kerberos and the real Linux client (issue 32): a realm of
# its own, FERRITE.TEST, with Debian's krb5-kdc on this host's loopback
# (tools/krb5-lib.sh), which the qemu guest reaches as 10.0.2.2; Ferrite
# (built with the kerberos feature) exporting /secure with
# sec = ["krb5p", "krb5i", "krb5"]; the guest's rpc.gssd with a key table
# of its own (nfs/ferrite-rc.ferrite.test) and a ticket for alice, whom
# the guest's rcuser (uid 1000) is. Then guest/kerberos.py (run.sh --suite
# kerberos), for NFSv4.2 and 4.1: mounts with sec=krb5, krb5i and krb5p
# that read, write, lock and rename as alice; rcother, without a ticket,
# refused; a sec=sys mount refused; a server restart under a krb5p mount
# with an open, locked file. On the host: alice's files belong to the
# local user her principal is mapped to (ferrite-krb), Ferrite never
# panicked.
#
# Installs krb5-kdc, krb5-admin-server, krb5-user, libkrb5-dev and
# libclang-dev if missing (root, apt). Extra arguments go to run.sh
# (--vers 4.2, --only krb5p_io, --console). Work directory:
# /var/tmp/ferrite-rck.*; the newest 3 are kept.
set -euo pipefail
top="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
cd "$top"
me=realclient-kerberos
[ "$(id -u)" = 0 ] || { echo "$me: ERROR: must run as root (the guest, a local user, apt)" >&2; exit 1; }
. "$top/tools/wait-lib.sh"
. "$top/tools/krb5-lib.sh"
kr_build_deps "$me"
kr_ensure "$me"
cargo build --release -p ferrite --features kerberos
bin="$top/target/release/ferrite"
{ ls -1dt /var/tmp/ferrite-rck.*/ 2>/dev/null || true; } | tail -n +3 | xargs -r rm -rf
work="$(mktemp -d /var/tmp/ferrite-rck.XXXXXX)"
chmod 0755 "$work"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port="$(free_port)" kdc="$(free_port)"

fpid=""
cleanup() {
    [ -z "$fpid" ] || { kill "$fpid" 2>/dev/null; wait "$fpid" 2>/dev/null || true; }
    kr_cleanup
}
trap cleanup EXIT

# --- the realm ---------------------------------------------------------------
kr_realm "$me" "$work/krb5" "$kdc"
kr_service "$me" nfs/ferrite.test
mv "$work/krb5/nfs.keytab" "$work/server.keytab"
kr_service "$me" nfs/ferrite-rc.ferrite.test
mkdir -p "$work/guest"
mv "$work/krb5/nfs.keytab" "$work/guest/krb5.keytab"
kr_user "$me" alice "alice-$$"
kr_user "$me" bob "bob-$$"
kr_kinit "$me" alice "alice-$$" "FILE:$work/guest/alice.cc"
# The guest's configuration: the same realm, its KDC at 10.0.2.2.
sed "s/127\.0\.0\.1:$kdc/10.0.2.2:$kdc/; s|^    default_ccache_name = .*|    default_ccache_name = FILE:/tmp/krb5cc_%{uid}|" \
    "$work/krb5/krb5.conf" > "$work/guest/krb5.conf"
id ferrite-krb >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin ferrite-krb
kuid="$(id -u ferrite-krb)"

# --- Ferrite -------------------------------------------------------------------
mkdir -p "$work/secure" "$work/state"
chmod 1777 "$work/secure"
# Owners by name (idmapd's rules): the server sends user@ferrite.test,
# and the guest, whose idmapd.conf names the same domain, maps the name
# through its own passwd, where ferrite-krb has another uid (1500) than
# here: the owner it sees shows names, not numbers, crossed the wire.
cat > "$work/guest/idmapd.conf" <<IDMAP
[General]
Domain = ferrite.test
[Mapping]
Nobody-User = nobody
Nobody-Group = nogroup
IDMAP
echo "ferrite-krb 1500" > "$work/guest/names"
cat > "$work/ferrite.toml" <<CONF
listen = "127.0.0.1:$port"
state_dir = "$work/state"
lease_seconds = 15
grace_seconds = 15
owner_domain = "ferrite.test"

[kerberos]
keytab = "$work/server.keytab"
principals = { "alice@FERRITE.TEST" = "ferrite-krb" }

[[export]]
path = "/secure"
dir = "$work/secure"
sec = ["krb5p", "krb5i", "krb5"]
clients = [{ match = "127.0.0.1", squash = "root", secure = false }]
CONF
start_ferrite() {
    KRB5RCACHEDIR="$work/krb5" "$bin" serve --config "$work/ferrite.toml" --portmap off >>"$work/ferrite.log" 2>&1 &
    fpid=$!
    up() { ! pid_alive "$fpid" || (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }
    wait_until 120 up && pid_alive "$fpid" ||
        { echo "$me: ferrite did not start:" >&2; sed 's/^/  /' "$work/ferrite.log" >&2; return 1; }
}
start_ferrite
echo "$me: KDC 127.0.0.1:$kdc, ferrite 127.0.0.1:$port, work $work; alice is ferrite-krb ($kuid) here"

cat > "$work/restart.sh" <<RESTART
set -eu
. "$top/tools/wait-lib.sh"
kill -TERM \$(cat "$work/ferrite.pid")
gone() { ! kill -0 \$(cat "$work/ferrite.pid") 2>/dev/null; }
wait_until 60 gone
KRB5RCACHEDIR="$work/krb5" KRB5_CONFIG="$work/krb5/krb5.conf" nohup "$bin" serve --config "$work/ferrite.toml" --portmap off >>"$work/ferrite.log" 2>&1 &
echo \$! > "$work/ferrite.pid"
up() { (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }
wait_until 120 up
RESTART
echo "$fpid" > "$work/ferrite.pid"

set +e
bash "$top/tests/realclient/run.sh" --suite kerberos --payload "$work/guest" --host 127.0.0.1 --port "$port" \
    --export /secure --out "$work/out" --restart-cmd "bash $work/restart.sh" "$@"
rc=$?
set -e
fpid="$(cat "$work/ferrite.pid")"

# --- on the host ---------------------------------------------------------------
hfail=0
hcheck() {
    if [ "$2" = "$3" ]; then echo "PASS host/$1"; else echo "FAIL host/$1: expected $2, got $3"; hfail=1; fi
}
ran() { grep -Eq "^PASS v$1/$2( |:|$)" "$work/out/results.txt" 2>/dev/null; }
for v in 4.2 4.1; do
    t=v${v/./}
    for sec in krb5 krb5i krb5p; do
        if ran "$v" "${sec}_io"; then
            f="$(find "$work/secure" -path "*-$t-$sec/*" -name "io-$sec.renamed" | head -1)"
            hcheck "$t/$sec-file-belongs-to-alices-user" "$kuid" "$(stat -c %u "$f" 2>/dev/null || echo missing)"
        fi
    done
done
if pid_alive "$fpid"; then echo "PASS host/ferrite-still-running"; else echo "FAIL host/ferrite-still-running"; hfail=1; fi
if grep -qi 'panicked' "$work/ferrite.log"; then echo "FAIL host/no-panic: see $work/ferrite.log"; hfail=1; else echo "PASS host/no-panic"; fi
grep -i 'RPCSEC_GSS' "$work/ferrite.log" | tail -5 | sed 's/^/  ferrite.log: /' || true
echo "$me: guest suite rc=$rc, host checks $([ $hfail = 0 ] && echo PASS || echo FAIL); work dir $work"
[ "$rc" = 0 ] || exit "$rc"
exit $hfail
