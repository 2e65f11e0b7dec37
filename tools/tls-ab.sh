#!/usr/bin/env bash
# Server CPU per operation under RPC-over-TLS (issue 32): Ferrite in the
# clear against Ferrite inside TLS (and mutual TLS), the same server
# process, in one run. NFS-Ganesha 4.3 (Debian 12) has no RPC-over-TLS, so
# it has no column here; tools/ab.sh compares the clear rows with it.
#
#   tools/tls-ab.sh [OUTDIR]
#
# Makes an authority, a server certificate for "localhost" and a client
# certificate (openssl, EC P-256), starts Ferrite (release build) with
# [tls] and client_ca, pinned to CPU 1, and runs `ferrite bench` pinned to
# CPU 0 against nfs4://localhost:PORT/ (none), ?tls=CA (tls) and
# ?tls=CA&tlscert=PEM&tlskey=PEM (mtls). Every (row, transport)
# runs in turn, the order reversed on each repetition. Server CPU is
# utime + stime of the server process over the measured period divided
# by the operations done (`ferrite bench run --server-pid`). rustls does
# the encryption in the server's process: the kernel's TLS offload (kTLS)
# cannot be measured on this machine (its kernel has CONFIG_TLS unset:
# setsockopt(TCP_ULP, "tls") fails with ENOENT).
#
# Prints, per row and transport: µs of server CPU per operation, its
# ratio to the clear row, ops/s, and "client-bound" where the client used
# 90% of its core.
#
# Environment: REPS (2), DURATION (5s), ONLY (rows: randread-16 seqread
# randwrite-16 dirlist), FERRITE_PORT (20770).
set -euo pipefail
top="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
cd "$top"
OUT="${1:-/var/tmp/ferrite-tls-ab/$(date +%Y%m%d-%H%M%S)}"
REPS="${REPS:-2}"
DURATION="${DURATION:-5s}"
FPORT="${FERRITE_PORT:-20770}"
XPRTS="${XPRTS:-none tls mtls}"
mkdir -p "$OUT"
[ "$(nproc)" -ge 2 ] || { echo "tls-ab.sh: needs 2 CPUs (server on 1, client on 0)" >&2; exit 2; }
command -v openssl >/dev/null || { echo "tls-ab.sh: needs openssl" >&2; exit 2; }
. tools/wait-lib.sh
. tools/bench-lib.sh
ONLY="${ONLY:-${SEC_ROWS[*]}}"
cargo build --release -p ferrite
F="$top/target/release/ferrite"

# ---- certificates ----
pki="$OUT/pki"
rm -rf "$pki" && mkdir -p "$pki"
ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
openssl req -x509 "${ec[@]}" -days 2 -subj /CN=tls-ab-ca -keyout "$pki/ca.key" -out "$pki/ca.pem" 2>/dev/null
for who in server client; do
    name=localhost
    [ "$who" = client ] && name=bench.client
    openssl req "${ec[@]}" -subj "/CN=$name" -addext "subjectAltName=DNS:$name" \
        -keyout "$pki/$who.key" -out "$pki/$who.csr" 2>/dev/null
    openssl x509 -req -in "$pki/$who.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -CAcreateserial \
        -days 2 -copy_extensions copy -out "$pki/$who.pem" 2>/dev/null
done

# ---- the server ----
fpid=""
cleanup() { [ -n "$fpid" ] && kill "$fpid" 2>/dev/null || true; }
trap cleanup EXIT
rm -rf "$OUT/ferrite" && mkdir -p "$OUT/ferrite/export" "$OUT/ferrite/state"
cat > "$OUT/ferrite/ferrite.toml" <<CONF
listen = "127.0.0.1:$FPORT"
state_dir = "$OUT/ferrite/state"
portmap = "off"

[tls]
certificate = "$pki/server.pem"
key = "$pki/server.key"
client_ca = "$pki/ca.pem"

[[export]]
path = "/"
dir = "$OUT/ferrite/export"
clients = [{ match = "*", squash = "none", secure = false }]
CONF
taskset -c 1 "$F" serve --config "$OUT/ferrite/ferrite.toml" >>"$OUT/ferrite/server.log" 2>&1 &
fpid=$!
wait_port "$FPORT" "$OUT/ferrite/server.log"
tgt() {
    case "$1" in
    none) echo "nfs4://localhost:$FPORT/" ;;
    tls) echo "nfs4://localhost:$FPORT/?tls=$pki/ca.pem" ;;
    mtls) echo "nfs4://localhost:$FPORT/?tls=$pki/ca.pem&tlscert=$pki/client.pem&tlskey=$pki/client.key" ;;
    esac
}

want() { [[ " $ONLY " == *" $1 "* ]]; }
sec_prepare "$F" "$(tgt none)"

for row in "${SEC_ROWS[@]}"; do
    want "$row" || continue
    for r in $(seq 1 "$REPS"); do
        order="$XPRTS"
        [ $((r % 2)) -eq 0 ] && order="$(echo "$XPRTS" | tr ' ' '\n' | tac | tr '\n' ' ')"
        for x in $order; do
            j="$OUT/$row-$x-$r.json"
            echo "tls-ab: $row, $x, repetition $r" >&2
            # shellcheck disable=SC2046
            taskset -c 0 "$F" bench run $(sec_args "$row") --target "$(tgt "$x")" \
                --server-pid "$fpid" -o "$j" >"${j%.json}.txt"
        done
    done
done

python3 - "$OUT" "$REPS" "$ONLY" "$XPRTS" <<'PY' | tee "$OUT/table.md"
import sys
sys.path.insert(0, "tools")
from ab_totals import NAMES as names, totals
out, reps, only, xprts = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
def bench(row, x):
    return totals([f"{out}/{row}-{x}-{r}.json" for r in range(1, reps + 1)])
print("| row | transport | Ferrite µs/op | vs in the clear | ops/s | notes |")
print("|---|---|---|---|---|---|")
for row in names:
    if row not in only:
        continue
    base = None
    for x in xprts:
        f = bench(row, x)
        if x == "none":
            base = f[0]
        note = "client-bound" if f[2] >= 90 else ""
        rel = ("%.2fx" % (f[0] / base)) if base else "-"
        print(f"| {names[row]} | {x} | {f[0]:.1f} | {rel} | {f[1]:.0f} | {note} |")
PY
