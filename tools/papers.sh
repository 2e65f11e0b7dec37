#!/usr/bin/env bash
# The papers' shapes on Ferrite and NFS-Ganesha, as docs/benchmarking.md
# shows them:
#   1. the Legato paper's Figure 2: `ferrite bench run mix --load-sweep`
#      (the Figure 1 mix, 2 clients x 16 threads, 5 s per step) against
#      each server, and `ferrite bench report` of both curves;
#   2. the wide-area study's factorial analysis: docs/designs/
#      version-delay.toml (Ferrite, started by the design) and
#      version-delay-ganesha.toml.
# Each server is pinned to CPU 1 with a fresh export, the client to CPU 0
# (as tools/ab.sh). About 12 minutes.
#
#   tools/papers.sh [OUTDIR]        (default /var/tmp/ferrite-papers)
#
# Needs root (NFS-Ganesha's start); builds the release binary first.
# Writes OUTDIR/{ferrite,ganesha}.{json,txt}, figure2.html,
# design-{ferrite,ganesha}.{json,txt}, design.html.
set -euo pipefail
top="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
cd "$top"
OUT="${1:-/var/tmp/ferrite-papers}"
cargo build --release -p ferrite
F="$top/target/release/ferrite"
FPORT=20710
rm -rf "$OUT" && mkdir -p "$OUT/ferrite/export" "$OUT/ferrite/state"
FRESH=1 bash tools/ganesha.sh restart > "$OUT/ganesha-start.log" 2>&1
gpid="$(cat /var/tmp/ferrite-bench-ganesha/ganesha.pid)"
taskset -a -cp 1 "$gpid" > /dev/null
taskset -c 1 "$F" serve "$OUT/ferrite/export" --listen "127.0.0.1:$FPORT" \
    --state-dir "$OUT/ferrite/state" --portmap off --grace 0 > "$OUT/ferrite/server.log" 2>&1 &
fpid=$!
trap 'kill "$fpid" 2>/dev/null || true; bash tools/ganesha.sh stop > /dev/null 2>&1 || true' EXIT
sleep 1
declare -A TARGET=([ferrite]="nfs4://127.0.0.1:$FPORT/" [ganesha]="nfs4://127.0.0.1:12050/")
declare -A PID=([ferrite]="$fpid" [ganesha]="$gpid")
for s in ferrite ganesha; do
    "$F" bench prepare mix --target "${TARGET[$s]}" > /dev/null
done
for s in ferrite ganesha; do
    echo "== Figure 2 on $s"
    taskset -c 0 "$F" bench run mix --load-sweep --clients 2 --threads 16 --duration 5s --warmup 1s \
        --server-pid "${PID[$s]}" --target "${TARGET[$s]}" -o "$OUT/$s.json" 2> "$OUT/$s.err" | tee "$OUT/$s.txt"
done
"$F" bench report "$OUT/ferrite.json" "$OUT/ganesha.json" -o "$OUT/figure2.html"
kill "$fpid"; wait "$fpid" 2>/dev/null || true
rm -rf /var/tmp/ferrite-design
for s in ferrite ganesha; do
    file=docs/designs/version-delay.toml
    [ "$s" = ganesha ] && file=docs/designs/version-delay-ganesha.toml
    echo "== the factorial design on $s"
    taskset -c 0 "$F" bench design "$file" -o "$OUT/design-$s.json" 2> "$OUT/design-$s.err" | tee "$OUT/design-$s.txt"
done
"$F" bench report "$OUT/design-ferrite.json" "$OUT/design-ganesha.json" -o "$OUT/design.html"
echo "papers: $OUT/figure2.html $OUT/design.html"
