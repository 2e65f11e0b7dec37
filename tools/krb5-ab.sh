#!/usr/bin/env bash
# Server CPU per operation under Kerberos (issue 32): Ferrite against
# NFS-Ganesha, each with AUTH_SYS, krb5, krb5i and krb5p, in one run.
#
#   tools/krb5-ab.sh [OUTDIR]
#
# A realm of its own (tools/krb5-lib.sh: FERRITE.TEST, Debian's KDC on a
# loopback port) with nfs/localhost in a key table both servers read, and
# a ticket for the benchmark's user (KRB5CCNAME). Ferrite (built with the
# kerberos feature) and NFS-Ganesha (tools/ganesha.sh with
# GANESHA_KRB5_KEYTAB) each export a fresh directory with every flavor,
# both pinned to CPU 1; `ferrite bench` runs pinned to CPU 0 against
# nfs4://127.0.0.1:PORT/?sec=FLAVOR. Every (row, flavor) runs on both
# servers, A then B, then B then A on the next repetition. Server CPU is
# utime + stime of the server process over the measured period divided by
# the operations done (`ferrite bench run --server-pid`). AUTH_SYS runs
# act as root; so do Ferrite's Kerberos runs (`principals` maps the
# benchmark's principal to root), so that its flavors differ only in the
# security: a non-root identity costs Ferrite an identity switch per
# backend call and a thread hand-off, which root's calls skip. NFS-Ganesha
# maps the principal to its anonymous user (no such local user); it sets
# each call's credentials whoever the user, root included. The data set
# is made world-writable after it is prepared.
#
# Prints, per row and flavor: each server's µs of CPU per operation, its
# ops/s, Ferrite / Ganesha, each flavor's cost over AUTH_SYS on the same
# server, and "client-bound" where a client used 90% of its core.
#
# Environment: REPS (2), DURATION (5s), ONLY (rows: randread-16 seqread
# randwrite-16 dirlist), FLAVORS ("sys krb5 krb5i krb5p"), FERRITE_PORT
# (20760), GANESHA_PORT (12050).
set -euo pipefail
top="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
cd "$top"
OUT="${1:-/var/tmp/ferrite-krb5-ab/$(date +%Y%m%d-%H%M%S)}"
REPS="${REPS:-2}"
DURATION="${DURATION:-5s}"
FPORT="${FERRITE_PORT:-20760}"
GPORT="${GANESHA_PORT:-12050}"
FLAVORS="${FLAVORS:-sys krb5 krb5i krb5p}"
mkdir -p "$OUT"
[ "$(nproc)" -ge 2 ] || { echo "krb5-ab.sh: needs 2 CPUs (server on 1, client on 0)" >&2; exit 2; }
. tools/wait-lib.sh
. tools/krb5-lib.sh
. tools/bench-lib.sh
ONLY="${ONLY:-${SEC_ROWS[*]}}"
kr_build_deps krb5-ab
kr_ensure krb5-ab
cargo build --release -p ferrite --features kerberos
F="$top/target/release/ferrite"

# ---- the realm ----
kdc="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
rm -rf "$OUT/krb5"
kr_realm krb5-ab "$OUT/krb5" "$kdc"
kr_service krb5-ab nfs/localhost
kr_user krb5-ab bench "bench-$$"
kr_kinit krb5-ab bench "bench-$$" "FILE:$OUT/krb5/bench.cc"
export KRB5CCNAME="FILE:$OUT/krb5/bench.cc" KRB5RCACHEDIR="$OUT/krb5"

# ---- the servers ----
fpid=""
cleanup() {
    [ -n "$fpid" ] && kill "$fpid" 2>/dev/null || true
    bash tools/ganesha.sh stop >/dev/null 2>&1 || true
    kr_cleanup
}
trap cleanup EXIT
rm -rf "$OUT/ferrite" && mkdir -p "$OUT/ferrite/export" "$OUT/ferrite/state"
chmod 1777 "$OUT/ferrite/export"
cat > "$OUT/ferrite/ferrite.toml" <<CONF
listen = "127.0.0.1:$FPORT"
state_dir = "$OUT/ferrite/state"
portmap = "off"

[kerberos]
keytab = "$OUT/krb5/nfs.keytab"
principals = { "bench@FERRITE.TEST" = "root" }

[[export]]
path = "/"
dir = "$OUT/ferrite/export"
sec = ["sys", "krb5", "krb5i", "krb5p"]
clients = [{ match = "*", squash = "none", secure = false }]
CONF
taskset -c 1 "$F" serve --config "$OUT/ferrite/ferrite.toml" >>"$OUT/ferrite/server.log" 2>&1 &
fpid=$!
wait_port "$FPORT" "$OUT/ferrite/server.log"
export GANESHA_KRB5_KEYTAB="$OUT/krb5/nfs.keytab"
FRESH=1 ganesha_restart
gexport="${GANESHA_EXPORT_DIR:-${GANESHA_STATE:-/var/tmp/ferrite-bench-ganesha}/export}"
chmod 1777 "$gexport"
declare -A PID=([ferrite]="$fpid" [ganesha]="$gpid")
declare -A PORT=([ferrite]="$FPORT" [ganesha]="$GPORT")
declare -A DIR=([ferrite]="$OUT/ferrite/export" [ganesha]="$gexport")
tgt() { if [ "$2" = sys ]; then echo "nfs4://localhost:${PORT[$1]}/"; else echo "nfs4://localhost:${PORT[$1]}/?sec=$2"; fi; }

want() { [[ " $ONLY " == *" $1 "* ]]; }
for s in ferrite ganesha; do
    sec_prepare "$F" "$(tgt "$s" sys)"
    chmod -R a+rwX "${DIR[$s]}"
done

for row in "${SEC_ROWS[@]}"; do
    want "$row" || continue
    for fl in $FLAVORS; do
        for r in $(seq 1 "$REPS"); do
            order="ferrite ganesha"
            [ $((r % 2)) -eq 0 ] && order="ganesha ferrite"
            for s in $order; do
                j="$OUT/$row-$fl-$s-$r.json"
                echo "krb5-ab: $row, $fl, $s, repetition $r" >&2
                # shellcheck disable=SC2046
                taskset -c 0 "$F" bench run $(sec_args "$row") --target "$(tgt "$s" "$fl")" \
                    --server-pid "${PID[$s]}" -o "$j" >"${j%.json}.txt"
            done
        done
    done
done

python3 - "$OUT" "$REPS" "$ONLY" "$FLAVORS" <<'PY' | tee "$OUT/table.md"
import sys
sys.path.insert(0, "tools")
from ab_totals import NAMES as names, totals
out, reps, only, flavors = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
def bench(row, fl, s):
    return totals([f"{out}/{row}-{fl}-{s}-{r}.json" for r in range(1, reps + 1)])
print("| row | flavor | Ferrite µs/op | Ganesha µs/op | Ferrite / Ganesha | Ferrite vs its sys | Ganesha vs its sys | Ferrite ops/s | Ganesha ops/s | notes |")
print("|---|---|---|---|---|---|---|---|---|---|")
for row in names:
    if row not in only:
        continue
    base = {}
    for fl in flavors:
        f = bench(row, fl, "ferrite")
        g = bench(row, fl, "ganesha")
        if fl == "sys":
            base = {"f": f[0], "g": g[0]}
        note = "client-bound" if max(f[2], g[2]) >= 90 else ""
        rel = lambda x, k: ("%.2fx" % (x / base[k])) if base else "-"
        print(f"| {names[row]} | {fl} | {f[0]:.1f} | {g[0]:.1f} | {f[0]/g[0]:.2f} | {rel(f[0],'f')} | {rel(g[0],'g')} | {f[1]:.0f} | {g[1]:.0f} | {note} |")
PY
