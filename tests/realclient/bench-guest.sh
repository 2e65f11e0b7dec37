#!/usr/bin/env bash
# `ferrite bench run` inside the real-client guest (Debian's 6.1 kernel NFS
# client) on a kernel mount of a server on this host, to see exactly what the
# Linux client sends for a workload: boots one guest (lib/guest.sh), copies a
# ferrite binary in through the 9p share, mounts 127.0.0.1:PORT (10.0.2.2 in
# the guest), runs `ferrite bench run WORKLOAD --target dir:/mnt/bench ...`
# (any workload: the micro-workloads, mix, the personalities), and diffs the
# guest's /proc/self/mountstats per-op counters around the run
# (guest/bench.py). The file set must be on the export: --prepare makes it
# from the host first (`ferrite bench prepare WORKLOAD --target
# nfs4://127.0.0.1:PORT/EXPORT`, with the same --files and BENCH ARGS'
# --file-size), or prepare it yourself. The guest's caches are dropped right after
# the mount and before the run (--no-drop to skip). The deltas cover the whole
# `bench run` process, so its setup (the file-set lookups: a handful of
# LOOKUP, ACCESS and GETATTR) is included.
#
#   tests/realclient/bench-guest.sh --port PORT --vers 4.1|4.2|3 --out DIR
#       [--ferrite PATH] [--workload locked-read] [--files N] [--prepare]
#       [--duration D]
#       [--mount-opts OPTS] [--export /] [--no-drop]
#       [--mountport N --nlmport N --rpcbport N]   (--vers 3)
#       [--knfsd DIR [--no-deleg]]   (instead of --port: the guest's own kernel nfsd)
#       [--timeout SEC] [--mem SIZE] [--cpus N] [--console] [-- BENCH ARGS...]
#
# Defaults: --ferrite target/release/ferrite, --workload locked-read,
# --files the workload's own (locked-read: 1000), --timeout 1800; the bench
# gets --runs 1 and --duration: 1h for the fixed-work workloads (create,
# locked-read, deleg-recall: never cut), else --duration's (10s; the guest
# runs under TCG where there is no KVM, so its rates are not the host's),
# plus BENCH ARGS.
#
# --vers 3: the kernel's lockd finds the server's NLM through rpcbind on port
# 111 of the mount address, so the guest mounts 10.0.2.4 instead, a slirp
# guestfwd address whose ports PORT, --mountport and --nlmport are relayed to
# the same ports on 127.0.0.1 and whose port 111 to 127.0.0.1:--rpcbport
# (a private rpcbind, e.g. tools/ganesha.sh's). Nothing listens on the host's
# port 111. The relays (perl, one per connection) log every RPC call they
# forward (program version procedure) to OUT/rpc-calls.log; OUT/rpc-calls.txt
# counts them (NLM calls do not appear in mountstats). The guest starts its
# own rpcbind and rpc.statd (lockd needs statd for SM_MON).
#
# --knfsd DIR: no host server; the guest runs its own kernel nfsd (Linux
# 6.1, which grants read delegations), exporting /srv/export on its root disk
# snapshot as the NFSv4 root, and mounts it over its loopback (127.0.0.1).
# DIR is nfs-kernel-server unpacked (the guest image has only nfs-common):
#   apt-get download nfs-kernel-server && dpkg-deb -x nfs-kernel-server_*.deb DIR
# (same Debian release as the guest). The file set is prepared in the guest
# through that server (ferrite bench prepare, nfs4://127.0.0.1:2049/).
# Grace periods are cut to 10 s (nfsd and lockd). --no-deleg sets
# fs.leases-enable=0 in the guest, so that nfsd grants no delegations.
#
# Output in OUT: ops.txt (per-op deltas), bench.log (the bench summary),
# result.json, mountstats-{before,after}.txt, output.log, console.log.
# Exit status: the guest's (bench.py) status; 2 usage; 3 no server; 125 the
# guest could not start.
set -uo pipefail
RC_DIR="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
CACHE="${FERRITE_RC_CACHE:-/var/cache/ferrite-realclient}"
RC_NAME=realclient-bench
# shellcheck source=tests/realclient/lib/guest.sh
. "$RC_DIR/lib/guest.sh"

port="" vers=4.1 out="" ferrite="$RC_DIR/../../target/release/ferrite" workload=locked-read files="" prepare=0 duration=10s
knfsd="" deleg=1 mount_opts="" export_path=/ drop=1 mountport="" nlmport="" rpcbport="" timeout=1800 mem=1536M cpus=2 console=0
extra=()
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2; }
say() { printf 'realclient-bench: %s\n' "$*" >&2; }
now() { date +%s.%N; }
while [ $# -gt 0 ]; do
    case "$1" in
    --port) port="$2"; shift 2 ;;
    --vers) vers="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --ferrite) ferrite="$2"; shift 2 ;;
    --workload) workload="$2"; shift 2 ;;
    --files) files="$2"; shift 2 ;;
    --prepare) prepare=1; shift ;;
    --duration) duration="$2"; shift 2 ;;
    --mount-opts) mount_opts="$2"; shift 2 ;;
    --export) export_path="$2"; shift 2 ;;
    --no-drop) drop=0; shift ;;
    --mountport) mountport="$2"; shift 2 ;;
    --nlmport) nlmport="$2"; shift 2 ;;
    --rpcbport) rpcbport="$2"; shift 2 ;;
    --knfsd) knfsd="$2"; shift 2 ;;
    --no-deleg) deleg=0; shift ;;
    --timeout) timeout="$2"; shift 2 ;;
    --mem) mem="$2"; shift 2 ;;
    --cpus) cpus="$2"; shift 2 ;;
    --console) console=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) usage ;;
    *) say "unknown argument: $1"; usage ;;
    esac
done
[ -n "$knfsd" ] && port=2049
[[ "$port" =~ ^[0-9]+$ ]] || { say "--port is required"; usage; }
[ -n "$out" ] || { say "--out is required"; usage; }
[ -x "$ferrite" ] || { say "no ferrite binary at $ferrite (--ferrite)"; exit 2; }
case "$vers" in
4.1|4.2) host=10.0.2.2; [ -n "$knfsd" ] && host=127.0.0.1 ;;
3) host=10.0.2.4
   for v in "$mountport" "$nlmport" "$rpcbport"; do
       [[ "$v" =~ ^[0-9]+$ ]] || { say "--vers 3 needs --mountport, --nlmport and --rpcbport"; exit 2; }
   done ;;
*) say "--vers: 4.1, 4.2 or 3"; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || rc_guest_unavailable "must run as root"
"$RC_DIR/lib/prepare.sh" || rc_guest_unavailable "building the guest image failed"
[ -n "$knfsd" ] && [ "$vers" = 3 ] && { say "--knfsd: NFSv4 only"; exit 2; }
[ -z "$knfsd" ] || [ -x "$knfsd/usr/sbin/rpc.nfsd" ] || { say "--knfsd $knfsd: no usr/sbin/rpc.nfsd there"; exit 2; }
[ -n "$knfsd" ] || rc_port_open "$port" || { say "nothing accepts TCP connections on 127.0.0.1:$port"; exit 3; }
files_arg=(); [ -n "$files" ] && files_arg=(--files "$files")
[ -z "$files" ] && [ "$workload" = locked-read ] && files_arg=(--files 1000)
case "$workload" in create|locked-read|deleg-recall) duration=1h ;; esac
if [ "$prepare" = 1 ]; then
    [ -n "$knfsd" ] && { say "--prepare: the knfsd guest prepares its own set"; exit 2; }
    # The set's shape: --files, and --file-size / --io-size from BENCH ARGS.
    shape=()
    for ((i = 0; i < ${#extra[@]}; i++)); do
        case "${extra[$i]}" in --file-size|--io-size) shape+=("${extra[$i]}" "${extra[$((i + 1))]}") ;; esac
    done
    say "preparing $workload on 127.0.0.1:$port$export_path from the host"
    "$ferrite" bench prepare "$workload" --target "nfs4://127.0.0.1:$port$export_path" \
        "${files_arg[@]+"${files_arg[@]}"}" "${shape[@]+"${shape[@]}"}" >&2 || { say "prepare failed"; exit 3; }
fi

mkdir -p "$out" && out="$(cd "$out" && pwd)" || { say "cannot create $out"; exit 2; }
case "$out" in *,*|*' '*) say "--out must not contain commas or spaces"; exit 2 ;; esac
g="$out/guest"; work="$out/.boot"
rm -rf "$g" "$work" "$out"/{console,output,status}.log "$out"/rpc-calls.*
mkdir -p "$g" "$work/payload/rc"
cp "$ferrite" "$g/ferrite"
if [ -n "$knfsd" ]; then
    mkdir -p "$g/knfsd" && cp "$knfsd"/usr/sbin/{exportfs,rpc.mountd,rpc.nfsd} "$g/knfsd/"
fi
install -m 755 "$RC_DIR/guest/init" "$work/payload/rc/init"
install -m 644 "$RC_DIR/guest/bench.py" "$work/payload/rc/bench.py"
bench_args=$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' \
    "$workload" --target dir:@MNT@ "${files_arg[@]+"${files_arg[@]}"}" --runs 1 --duration "$duration" "${extra[@]+"${extra[@]}"}")
{
    printf 'export RC_HOST=%q RC_PORT=%q RC_EXPORT=%q RC_VERS=%q RC_MOUNT_OPTS=%q RC_MOUNTPORT=%q\n' \
        "$host" "$port" "$export_path" "$vers" "$mount_opts" "$mountport"
    printf 'export RC_OUT=/rcout RC_SCRIPT=/rc/bench.py BENCH_DROP=%q BENCH_ARGS=%q BENCH_KNFSD=%q BENCH_KNFSD_DELEG=%q\n' \
        "$drop" "$bench_args" "$([ -n "$knfsd" ] && echo 1 || echo 0)" "$deleg"
} > "$work/payload/rc/env"
rc_make_initrd "$work"

runid="$(date +%Y%m%d-%H%M%S)-$$"
rc_pick_accel
rc_qemu_argv "ferrite-rcbench-$runid" "$cpus" "$mem" "$work/initrd.img" "ferrite-rcbench-$runid" "$out" "$g"
if [ "$vers" = 3 ]; then
    # One relay process per guest connection (slirp's guestfwd "cmd:" runs it
    # with the connection on fds 0-2); it logs each RPC call's program,
    # version and procedure (first fragment of each record).
    cat > "$work/relay.pl" <<'PERL'
use strict; use IO::Socket::INET; use IO::Select;
my ($port, $log) = @ARGV;
open(STDERR, '>>', "$log.err");
my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp')
    or die "relay: connect 127.0.0.1:$port: $!\n";
open(my $L, '>>', $log) or die "relay: $log: $!\n";
select((select($L), $| = 1)[0]);
binmode STDIN; binmode STDOUT;
my ($buf, $left, $rstart, $hdr) = ('', 0, 1, 0);
sub parse {
    $buf .= shift;
    while (1) {
        if ($left == 0) {
            return if length($buf) < 4;
            my $m = unpack('N', substr($buf, 0, 4, ''));
            $left = $m & 0x7fffffff; $hdr = $rstart; $rstart = ($m & 0x80000000) ? 1 : 0;
            next;
        }
        if ($hdr) {
            return if length($buf) < 24 && length($buf) < $left;
            my @f = unpack('N6', $buf);
            printf $L "%d %d %d %d\n", $port, $f[3], $f[4], $f[5] if length($buf) >= 24 && $f[1] == 0;
            $hdr = 0;
        }
        my $take = length($buf) < $left ? length($buf) : $left;
        substr($buf, 0, $take, ''); $left -= $take;
        return if $buf eq '';
    }
}
sub put { my ($fh, $d) = @_; while (length $d) { my $n = syswrite($fh, $d); exit 0 unless $n; substr($d, 0, $n, ''); } }
my $sel = IO::Select->new(\*STDIN, $s);
while (1) {
    for my $h ($sel->can_read) {
        my $n = sysread($h, my $d, 65536);
        exit 0 unless $n;
        if (fileno($h) == fileno($s)) { put(\*STDOUT, $d) } else { put($s, $d); parse($d) }
    }
}
PERL
    fwd=""
    for p in "$port" "$mountport" "$nlmport"; do
        fwd+=",guestfwd=tcp:$host:$p-cmd:perl $work/relay.pl $p $out/rpc-calls.log"
    done
    fwd+=",guestfwd=tcp:$host:111-cmd:perl $work/relay.pl $rpcbport $out/rpc-calls.log"
    for i in "${!qemu[@]}"; do
        [ "${qemu[$i]}" = "user,id=n0,ipv6=off" ] && qemu[$i]+="$fwd"
    done
fi
printf '%q ' "${qemu[@]}" > "$out/qemu.cmd"; echo >> "$out/qemu.cmd"

say "run $runid: $workload ${files_arg[*]+"${files_arg[*]}"} on vers $vers $([ -n "$knfsd" ] && echo "the guest's own knfsd" || echo "127.0.0.1:$port ($host in the guest)") accel $accel out $out"
t0=$(now)
: > "$out/console.log"; : > "$out/output.log"; : > "$out/status.log"
TMPDIR=/var/tmp timeout -k 10 "$timeout" "${qemu[@]}" </dev/null 2>"$out/qemu.stderr" &
qpid=$!
trap 'kill "$qpid" 2>/dev/null; say "interrupted"; exit 130' INT TERM
tail -n +1 -F --pid="$qpid" "$out/output.log" 2>/dev/null | sed -u 's/\r$//' &
tailpid=$!
[ $console = 1 ] && { tail -n +1 -F --pid="$qpid" "$out/console.log" 2>/dev/null | sed -u 's/^/[console] /' >&2 & }
while kill -0 "$qpid" 2>/dev/null; do
    if ! grep -q '^RC-BOOTED' "$out/status.log" &&
        awk -v a="$(now)" -v b="$t0" -v l="$rc_boot_limit" 'BEGIN{exit !(a-b>l)}'; then
        say "guest did not boot within ${rc_boot_limit}s: killing qemu"; kill "$qpid" 2>/dev/null; break
    fi
    for req in "$g"/mark-*.req; do   # guest/bench.py host_mark(): note the relay log position
        [ -e "$req" ] && [ ! -e "$req.ack" ] || continue
        tag=$(basename "$req" .req); tag=${tag#mark-}
        { cat "$out/rpc-calls.log" 2>/dev/null || true; } | wc -l > "$out/rpc-calls.mark-$tag"
        : > "$req.ack"
    done
    sleep 0.1
done
wait "$qpid"; qrc=$?
trap - INT TERM
wait "$tailpid" 2>/dev/null
grep -q '^RC-BOOTED' "$out/status.log" ||
    rc_guest_unavailable "qemu exited (rc $qrc) before the guest init ran; logs in $out"
for f in ops.txt bench.log result.json mountstats-before.txt mountstats-after.txt; do
    [ -f "$g/$f" ] && cp "$g/$f" "$out/$f"
done
if [ -f "$out/rpc-calls.log" ]; then   # calls between the marks, by program/version/procedure
    a=$(cat "$out/rpc-calls.mark-before" 2>/dev/null || echo 0); b=$(cat "$out/rpc-calls.mark-after" 2>/dev/null || echo 0)
    awk -v a="$a" -v b="$b" 'BEGIN{n[100000]="rpcbind";n[100003]="nfs";n[100005]="mount";n[100021]="nlm"}
         {k=($2 in n ? n[$2] : $2) " v" $3 " proc " $4; t[k]++; if (NR > a && NR <= b) c[k]++}
         END{for (k in t) printf "%8d %8d  %s\n", c[k], t[k], k}' "$out/rpc-calls.log" | sort -k3 > "$out/rpc-calls.txt.tmp"
    { echo "# RPC calls relayed: during the measured run (log lines $((a + 1))..$b) / in the whole guest session"
      cat "$out/rpc-calls.txt.tmp"; } > "$out/rpc-calls.txt" && rm -f "$out/rpc-calls.txt.tmp"
fi
exit_line=$(grep '^RC-EXIT' "$out/status.log" | tr -d '\r' | tail -1)
say "done in $(awk -v a="$(now)" -v b="$t0" 'BEGIN{printf "%.0f", a-b}')s; guest: ${exit_line:-no RC-EXIT (qemu rc $qrc)}; results in $out/ops.txt"
rm -rf "$work" "$g/ferrite" "$g/knfsd"
rc=$(awk '{print $2}' <<< "$exit_line"); exit "${rc:-1}"
