#!/usr/bin/env bash
# libnfs's tools (Debian's libnfs-utils: nfs-ls, nfs-cp, nfs-cat) over
# NFSv4.0 against Ferrite: libnfs is the client library inside QEMU's nfs
# block driver, ffmpeg, VLC and Kodi, and speaks NFSv3 and NFSv4.0 only.
# Lists a directory, writes a file, reads files back (one of 3 MiB), and
# checks every byte and that Ferrite saw an NFSv4.0 client. Installs
# libnfs-utils if missing; ./test.sh runs this.
#
# Debian 12's libnfs 4.0.0 cannot send an NFSv4 WRITE of more than about
# 3.8 KB (it encodes every request into a 4 KiB buffer; fixed upstream in
# libnfs 5.0.0), whatever the server: the file written here is smaller.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

say() { echo "libnfs: $*"; }
if ! command -v nfs-ls >/dev/null || ! command -v nfs-cp >/dev/null || ! command -v nfs-cat >/dev/null; then
    say "installing libnfs-utils"
    DEBIAN_FRONTEND=noninteractive apt-get install -y libnfs-utils >/dev/null ||
        { say "ERROR: libnfs-utils could not be installed" >&2; exit 1; }
fi

cargo build -q -p ferrite
bin=target/debug/ferrite
work="$(mktemp -d /var/tmp/ferrite-libnfs.XXXXXX)"
server=""
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/export/dir" "$work/state"
printf 'hello from ferrite\n' > "$work/export/hello.txt"
head -c $((3 * 1024 * 1024 + 17)) /dev/urandom > "$work/export/dir/big.bin"
head -c 3000 /dev/urandom > "$work/small.bin"

# A free loopback port.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" serve "$work/export" --listen "127.0.0.1:$port" --state-dir "$work/state" \
    --portmap off > "$work/server.log" 2>&1 &
server=$!
# Ferrite listens within a second; 120 s is an upper bound for a slow machine.
for _ in $(seq 1 1200); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    kill -0 "$server" 2>/dev/null || { cat "$work/server.log"; say "ERROR: the server did not start" >&2; exit 1; }
    sleep 0.1
done
url() { echo "nfs://127.0.0.1/$1?version=4&nfsport=$port"; }
fail() { say "FAIL: $*" >&2; cat "$work/server.log" >&2; exit 1; }

listing=$(timeout 60 nfs-ls "$(url "")") || fail "nfs-ls"
grep -q ' hello.txt$' <<< "$listing" || fail "nfs-ls lists no hello.txt: $listing"
grep -q ' dir$' <<< "$listing" || fail "nfs-ls lists no dir: $listing"
[ "$(timeout 60 nfs-cat "$(url /hello.txt)")" = "hello from ferrite" ] || fail "nfs-cat"
timeout 60 nfs-cp "$work/small.bin" "$(url /written.bin)" >/dev/null || fail "nfs-cp to the server"
cmp "$work/small.bin" "$work/export/written.bin" || fail "the file written differs"
timeout 120 nfs-cp "$(url /dir/big.bin)" "$work/big.out" >/dev/null || fail "nfs-cp from the server"
cmp "$work/export/dir/big.bin" "$work/big.out" || fail "the 3 MiB file read differs"
# It was NFSv4.0 (libnfs asks nothing else with version=4).
stat_out=$("$bin" stat --state-dir "$work/state")
grep -Eq '^  [0-9a-f]+ +127\.0\.0\.1:[0-9]+ +4\.0 ' <<< "$stat_out" || fail "no NFSv4.0 client in ferrite stat: $stat_out"
say "passed: nfs-ls, nfs-cat, nfs-cp both ways over NFSv4.0 ($(dpkg-query -W -f '${Version}' libnfs-utils 2>/dev/null || echo '?'))"
