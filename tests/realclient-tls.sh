#!/usr/bin/env bash
# RPC-over-TLS with the real Linux client (issue 32): a guest with
# Debian's 6.12 kernel (which has xprtsec; Debian 12's own 6.1 does not)
# and tlshd, mounting Ferrite with xprtsec=tls and xprtsec=mtls.
#
# Debian 12 has no ktls-utils package, so tlshd is built here from the
# ktls-utils sources (KTLS_UTILS_SRC: a checkout of github.com/oracle/
# ktls-utils at tag ktls-utils-1.2.1, outside this repository), with
# Debian's gnutls, glib, libnl and keyutils, and carried into the guest
# with the libraries its image lacks. The guest image is the usual one
# (tests/realclient/lib/prepare.sh) with the kernel package
# linux-image-6.12.100+deb12-amd64, in a cache of its own
# (FERRITE_RC_CACHE, default /var/cache/ferrite-realclient-612).
#
# Ferrite gets [tls] with a certificate for ferrite.test (the host, as
# the guest names 10.0.2.2) signed by an authority made here, client_ca
# that authority, and exports /tls (xprtsec tls, mtls), /mtls (mtls) and
# /plain. guest/tls.py: for NFSv4.2 and 4.1, write, read back, lock,
# rename and list over xprtsec=tls and xprtsec=mtls; a mount of /tls in
# the clear and of /mtls without a client certificate refused. The host
# then checks Ferrite counted the handshakes (ferrite stat).
set -euo pipefail
top="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
cd "$top"
me=realclient-tls
[ "$(id -u)" = 0 ] || { echo "$me: ERROR: must run as root" >&2; exit 1; }
. "$top/tools/wait-lib.sh"
src="${KTLS_UTILS_SRC:-}"
[ -n "$src" ] && [ -f "$src/configure.ac" ] ||
    { echo "$me: ERROR: set KTLS_UTILS_SRC to a ktls-utils checkout (tag ktls-utils-1.2.1)" >&2; exit 1; }
export FERRITE_RC_CACHE="${FERRITE_RC_CACHE:-/var/cache/ferrite-realclient-612}"
export FERRITE_RC_KERNEL_PKG="${FERRITE_RC_KERNEL_PKG:-linux-image-6.12.100+deb12-amd64}"
work="$(mktemp -d /var/tmp/ferrite-rctls.XXXXXX)"
fpid=""
cleanup() { [ -n "$fpid" ] && kill "$fpid" 2>/dev/null || true; }
trap cleanup EXIT

# --- tlshd ---------------------------------------------------------------------
need=()
for p in autoconf automake libtool pkg-config libgnutls28-dev libkeyutils-dev libglib2.0-dev \
    libnl-3-dev libnl-genl-3-dev libyaml-dev openssl; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
[ ${#need[@]} -eq 0 ] || DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >&2
b="$work/ktls"
cp -a "$src" "$b"
(cd "$b" && ./autogen.sh && ./configure --prefix=/usr --sysconfdir=/etc && make -j2) >"$work/ktls-build.log" 2>&1 ||
    { echo "$me: ERROR: building tlshd failed ($work/ktls-build.log)" >&2; exit 1; }
g="$work/guest"
mkdir -p "$g/lib"
cp "$b/src/tlshd/tlshd" "$g/tlshd"
for l in libglib-2.0.so.0 libnl-3.so.200 libnl-genl-3.so.200; do
    cp -L "$(ldd "$g/tlshd" | awk -v l="$l" '$1==l{print $3}')" "$g/lib/$l"
done

# --- certificates ----------------------------------------------------------------
pki="$work/pki"
mkdir -p "$pki"
ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
openssl req -x509 "${ec[@]}" -days 2 -subj /CN=ferrite-rc-ca -keyout "$pki/ca.key" -out "$pki/ca.pem" 2>/dev/null
for who in server client; do
    san="DNS:ferrite.test,IP:10.0.2.2"
    [ "$who" = client ] && san="DNS:ferrite-rc.ferrite.test"
    openssl req "${ec[@]}" -subj "/CN=ferrite-$who" -addext "subjectAltName=$san" \
        -keyout "$pki/$who.key" -out "$pki/$who.csr" 2>/dev/null
    openssl x509 -req -in "$pki/$who.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -CAcreateserial \
        -days 2 -copy_extensions copy -out "$pki/$who.pem" 2>/dev/null
done
cp "$pki/ca.pem" "$pki/client.pem" "$pki/client.key" "$g/"
cat > "$g/tlshd.conf" <<CONF
[debug]
loglevel=1
tls=0
nl=0

[authenticate]

[authenticate.client]
x509.truststore=/rc/extra/ca.pem
x509.certificate=/rc/extra/client.pem
x509.private_key=/rc/extra/client.key

[authenticate.server]
CONF

# --- Ferrite -------------------------------------------------------------------------
cargo build --release -p ferrite
tdir="${CARGO_TARGET_DIR:-target}"
case "$tdir" in /*) ;; *) tdir="$top/$tdir" ;; esac
port="${FERRITE_PORT:-20180}"
mkdir -p "$work/state" "$work/tls" "$work/mtls" "$work/plain"
cat > "$work/ferrite.toml" <<CONF
listen = "127.0.0.1:$port"
state_dir = "$work/state"
lease_seconds = 15
grace_seconds = 0

[tls]
certificate = "$pki/server.pem"
key = "$pki/server.key"
client_ca = "$pki/ca.pem"

[[export]]
path = "/tls"
dir = "$work/tls"
xprtsec = ["tls", "mtls"]
clients = [{ match = "127.0.0.1", squash = "none", secure = false }]

[[export]]
path = "/mtls"
dir = "$work/mtls"
xprtsec = ["mtls"]
clients = [{ match = "127.0.0.1", squash = "none", secure = false }]

[[export]]
path = "/plain"
dir = "$work/plain"
xprtsec = ["none"]
clients = [{ match = "127.0.0.1", squash = "none", secure = false }]
CONF
"$tdir/release/ferrite" serve --config "$work/ferrite.toml" --portmap off >"$work/ferrite.log" 2>&1 &
fpid=$!
up() { (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }
wait_until 120 up || { echo "$me: ferrite did not start:" >&2; cat "$work/ferrite.log" >&2; exit 1; }
echo "$me: ferrite 127.0.0.1:$port, work $work"

set +e
bash "$top/tests/realclient/run.sh" --suite tls --payload "$g" --host 127.0.0.1 --port "$port" \
    --vers 4.2,4.1 --out "$work/out" "$@"
rc=$?
set -e
hfail=0
stat="$("$tdir/release/ferrite" stat --state-dir "$work/state" 2>&1 | grep 'RPC-over-TLS' || true)"
echo "$me: $stat"
case "$stat" in *"handshakes done"*) echo "PASS host/handshakes-counted" ;; *) echo "FAIL host/handshakes-counted"; hfail=1 ;; esac
if grep -qi panicked "$work/ferrite.log"; then echo "FAIL host/no-panic"; hfail=1; else echo "PASS host/no-panic"; fi
grep -i 'tls' "$work/ferrite.log" | tail -5 | sed 's/^/  ferrite.log: /' || true
echo "$me: guest suite rc=$rc, host checks $([ $hfail = 0 ] && echo PASS || echo FAIL); work dir $work"
[ "$rc" = 0 ] || exit "$rc"
exit $hfail
