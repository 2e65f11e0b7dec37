#!/usr/bin/env bash
# NFS-Ganesha 4.3 (Debian nfs-ganesha + nfs-ganesha-vfs) on one machine, as
# a reference server for `ferrite bench`: one export of a scratch directory,
# NFSv4.0/4.1/4.2 and NFSv3 + MOUNT v3 + NLM v4, TCP only, bound to 127.0.0.1,
# PrivilegedPort = false, No_Root_Squash. NFSv4 pseudo path "/" = the export;
# the MOUNT path is the same "/".
#
#   tools/ganesha.sh start | stop | restart | status | log [N]
#
# Env (defaults):
#   GANESHA_PORT=12050          NFS (v3 and v4)
#   GANESHA_MNT_PORT=12048      MOUNT v3
#   GANESHA_NLM_PORT=12047      NLM v4
#   GANESHA_STATD_PORT=12046    the private rpc.statd (see below)
#   GANESHA_RPCBIND_PORT=12045  the private rpcbind's TCP port (see below)
#   GANESHA_RPCBIND_BIND_PORT=$GANESHA_RPCBIND_PORT  its port on
#                               $GANESHA_BIND when that is not 127.0.0.1
#                               (111: clients and a pNFS metadata server
#                               find MOUNT there, as with a system rpcbind,
#                               while 127.0.0.1 keeps a private port, so
#                               that several instances on several bridge
#                               addresses run side by side:
#                               tests/realclient/pnfs.sh)
#   GANESHA_BIND=127.0.0.1      the address Ganesha listens on; another than
#                               127.0.0.1 serves clients on a bridge
#                               (tests/realclient-ganesha.sh: 10.77.0.1,
#                               with the rpcbind on port 111): the private
#                               rpcbind then listens there as well as on
#                               127.0.0.1, and it and statd admit that /24
#   GANESHA_NOTIFY=0            1: at start, sm-notify tells the hosts that
#                               held NLM locks (statd's records) of the
#                               restart, naming the server $GANESHA_BIND
#                               (off for the benchmark)
#   GANESHA_GRACE=0             seconds of NFSv4 grace period after a
#                               restart (0: none, so NLM LOCK works at once)
#   GANESHA_STATE=/var/tmp/ferrite-bench-ganesha   config, logs, pid files
#   GANESHA_KRB5_KEYTAB=        a key table with nfs/localhost: Kerberos on
#                               (RPCSEC_GSS, SecType sys, krb5, krb5i,
#                               krb5p; KRB5_CONFIG from the environment,
#                               tools/krb5-ab.sh)
#   GANESHA_EXPORT_DIR=$GANESHA_STATE/export       the exported directory
#                                (kept across restarts; FRESH=1 empties it)
#
# `start` installs the packages if they are missing (apt-get, saying so),
# and prints the targets `ferrite bench` accepts and the environment for the
# client's live-server tests (crates/client/tests/{v3_ganesha,nlm_ganesha}.rs).
#
# What NFSv3 and NLM need from the host, and how it is kept private
# ------------------------------------------------------------------
# * rpcbind. Ganesha 4.3 will not serve NFSv3/MOUNT/NLM unless it can
#   register them with rpcbind (through the unix socket /run/rpcbind.sock).
# * rpc.statd (NSM, program 100024, package nfs-common). Ganesha monitors a
#   client on its first NLM LOCK: SM_MON to statd, which it finds by asking
#   the portmapper of "localhost" over TCP at the port of service "sunrpc"
#   (src/Protocols/NLM/nsm.c, nsm_connect/nsm_monitor; the NSM client is
#   looked up with CARE_MONITOR for LOCK, src/SAL/nlm_owner.c). If that
#   fails, LOCK answers NLM4_DENIED_NOLOCKS. Ganesha 4.3 has no internal
#   statd and no switch that skips monitoring for LOCK (NSM_Use_Caller_Name
#   only chooses the name that is monitored; only NLM4_NM_LOCK is
#   unmonitored, and Linux-style clients, like Ferrite's, send LOCK).
#   Measured: with rpcbind on the unix socket only, or without statd, every
#   LOCK is NLM4_DENIED_NOLOCKS and the log says "connect to statd failed".
# So the script runs its OWN rpcbind and rpc.statd, with Ganesha, in one
# private mount namespace (unshare -m), invisible to the rest of the host:
# * /run is a private directory (its own /run/rpcbind.sock), and /etc/services
#   a private copy in which "sunrpc" is $GANESHA_RPCBIND_PORT, not 111: the
#   private rpcbind listens there on 127.0.0.1 only, and on $GANESHA_BIND
#   when that is another address (the sockets are made by this script and
#   handed over as systemd socket activation does), and Ganesha looks for
#   statd there. Port 111 is opened only when GANESHA_RPCBIND_PORT=111
#   (tests/realclient-ganesha.sh), and a host rpcbind, if any, is neither
#   used nor disturbed.
# * statd keeps its state in $GANESHA_STATE/statd (never /var/lib/nfs),
#   reads an empty /etc/nfs.conf (not the host's), runs with -L (it starts
#   no sm-notify; GANESHA_NOTIFY=1 has this script run one) and only the TCP
#   transport (private /etc/netconfig). rpc.statd 2.6.2 cannot bind its
#   listener to one address, so it listens on *:$GANESHA_STATD_PORT; the
#   private /etc/hosts.allow + hosts.deny (statd and rpcbind are built with
#   tcp_wrappers) admit only 127.0.0.1 (and $GANESHA_BIND's /24 when it is
#   set), and statd itself refuses
#   SM_MON/SM_UNMON from non-local callers. A private /etc/hosts names
#   $GANESHA_BIND by itself, which sm-notify needs to use it as the
#   server's name.
# * The daemons share the host's network namespace so that the benchmark
#   reaches Ganesha directly on 127.0.0.1.
# Only the processes this script started are ever signalled: each pid file
# is checked against the process's name and an environment marker
# (FERRITE_GANESHA_STATE=$GANESHA_STATE) before any kill. `stop` stops all
# three.
set -euo pipefail
PORT="${GANESHA_PORT:-12050}"
MNTPORT="${GANESHA_MNT_PORT:-12048}"
NLMPORT="${GANESHA_NLM_PORT:-12047}"
STATDPORT="${GANESHA_STATD_PORT:-12046}"
RPCBPORT="${GANESHA_RPCBIND_PORT:-12045}"
RPCBBINDPORT="${GANESHA_RPCBIND_BIND_PORT:-$RPCBPORT}"
BIND="${GANESHA_BIND:-127.0.0.1}"
NOTIFY="${GANESHA_NOTIFY:-0}"
GRACE="${GANESHA_GRACE:-0}"
STATE="${GANESHA_STATE:-/var/tmp/ferrite-bench-ganesha}"
EXPORT_DIR="${GANESHA_EXPORT_DIR:-$STATE/export}"
CONF="$STATE/ganesha.conf"
PIDF="$STATE/ganesha.pid"
RPCPIDF="$STATE/rpcbind.pid"
STATDPIDF="$STATE/statd.pid"
PLUGINS=/usr/lib/x86_64-linux-gnu/ganesha
MARK="FERRITE_GANESHA_STATE=$STATE"
# wait_until (waits for a condition under a deadline, not a fixed time).
WAITLIB="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)/wait-lib.sh"
# shellcheck source=tools/wait-lib.sh
. "$WAITLIB"
# The deadlines below are upper bounds on waiting, never measurements: here
# rpcbind and statd are up in well under a second and Ganesha listens
# within a few, and each stops within a second of SIGTERM. A deadline is
# reached only by a daemon that is broken, even on a machine twice as slow.

say() { printf 'ganesha.sh: %s\n' "$*" >&2; }

# ours PIDFILE COMM: the pid in PIDFILE is a live process named COMM that
# carries this instance's environment marker.
ours() {
    [ -f "$1" ] || return 1
    local p; p=$(cat "$1")
    [[ "$p" =~ ^[0-9]+$ ]] || return 1
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$2" ] || return 1
    grep -qzxF "$MARK" "/proc/$p/environ" 2>/dev/null || return 1
    [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ]
}
ganesha_ours() { ours "$PIDF" ganesha.nfsd; }
not_ours() { ! ours "$@"; }
listening() { ss -Hltn "sport = :$1" | grep -q .; }
ganesha_up() { listening "$PORT" && listening "$MNTPORT" && listening "$NLMPORT"; }
ganesha_up_or_gone() { ganesha_up || [ ! -d "/proc/$(cat "$PIDF")" ]; }

install_pkgs() {
    local missing=()
    command -v ganesha.nfsd >/dev/null || missing+=(nfs-ganesha)
    [ -e "$PLUGINS/libfsalvfs.so" ] || missing+=(nfs-ganesha-vfs)
    command -v rpcbind >/dev/null || missing+=(rpcbind)
    command -v rpc.statd >/dev/null || missing+=(nfs-common)
    if [ ${#missing[@]} -gt 0 ]; then
        say "installing ${missing[*]} (apt-get)"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
        # Debian's packages may start their system services; this script
        # uses none of them, and leaves them for the administrator to judge.
        if command -v systemctl >/dev/null; then
            local u
            for u in nfs-ganesha rpcbind rpcbind.socket rpc-statd; do
                if systemctl is-active --quiet "$u" 2>/dev/null; then
                    say "note: the packages started the system service $u, which this script does not use ('systemctl disable --now $u' stops it)"
                fi
            done
        fi
    fi
}

write_conf() {
    mkdir -p "$STATE/recovery" "$STATE/run" "$STATE/statd/sm" "$STATE/statd/sm.bak" "$EXPORT_DIR"
    cat > "$CONF" <<CONF
# generated by tools/ganesha.sh
NFS_CORE_PARAM {
    NFS_Port = $PORT;
    MNT_Port = $MNTPORT;
    NLM_Port = $NLMPORT;
    Bind_addr = $BIND;
    Protocols = 3, 4;
    Enable_UDP = false;
    Enable_NLM = true;
    Enable_RQUOTA = false;
    Clustered = false;
    mount_path_pseudo = true;      # MNT takes the pseudo path: "/"
    Plugins_Dir = "$PLUGINS";
    Dbus_Name_Prefix = "ferritebench";
}
NFSV4 {
    Minor_Versions = 0, 1, 2;
$(if [ "$GRACE" = 0 ]; then
    echo "    Graceless = true;              # no grace period: NLM LOCK works at once"
else
    echo "    Graceless = false;"
    echo "    Grace_Period = $GRACE;"
fi)
    Lease_Lifetime = 15;
    RecoveryBackend = fs;
    RecoveryRoot = "$STATE/recovery";
    Only_Numeric_Owners = true;
}
$(if [ -n "${GANESHA_KRB5_KEYTAB:-}" ]; then
    echo "NFS_KRB5 { Active_krb5 = true; PrincipalName = \"nfs@localhost\"; KeytabPath = \"$GANESHA_KRB5_KEYTAB\"; }"
else
    echo "NFS_KRB5 { Active_krb5 = false; }"
fi)
EXPORT {
    Export_Id = 1;
    Path = "$EXPORT_DIR";
    Pseudo = "/";
    Protocols = 3, 4;
    Transports = TCP;
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = $([ -n "${GANESHA_KRB5_KEYTAB:-}" ] && echo "sys, krb5, krb5i, krb5p" || echo sys);
    PrivilegedPort = false;
    FSAL { Name = VFS; }
}
LOG { Default_Log_Level = EVENT; }
CONF
    # The private namespace's view of /etc: rpcbind sees only TCP over IPv4
    # and the unix-socket transports, statd only TCP over IPv4 (plus the
    # loopback transports it registers through); "sunrpc" is port
    # $RPCBPORT, not 111; no host nfs.conf; tcp_wrappers rules admit only
    # 127.0.0.1 to statd and rpcbind.
    grep -E '^(tcp|local|unix)[[:space:]]' /etc/netconfig > "$STATE/netconfig.rpcbind"
    grep -E '^(tcp|local|unix)[[:space:]]' /etc/netconfig > "$STATE/netconfig.statd"
    {
        grep -vE '^sunrpc[[:space:]]' /etc/services
        printf 'sunrpc\t\t%s/tcp\t\tportmapper\t# tools/ganesha.sh: private portmapper\n' "$RPCBPORT"
        printf 'sunrpc\t\t%s/udp\t\tportmapper\n' "$RPCBPORT"
    } > "$STATE/services"
    printf '# generated by tools/ganesha.sh: no host nfs.conf in the private namespace\n' > "$STATE/nfs.conf"
    local allow=127.0.0.1
    [ "$BIND" != 127.0.0.1 ] && allow="127.0.0.1 ${BIND%.*}."
    printf 'statd: %s\nrpcbind: %s\n' "$allow" "$allow" > "$STATE/hosts.allow"
    printf 'statd: ALL\nrpcbind: ALL\n' > "$STATE/hosts.deny"
    # sm-notify (GANESHA_NOTIFY=1) names the server by the canonical name
    # of its -v address, found by a reverse lookup, and gives up on an
    # address that has none ("my_name ... is unusable"): the private
    # /etc/hosts names $BIND by itself, so that the SM_NOTIFY's mon_name is
    # the address the clients mounted and monitor.
    { cat /etc/hosts; printf '%s\t%s\n' "$BIND" "$BIND"; } > "$STATE/hosts"
    # rpcbind's TCP listener, bound to 127.0.0.1 only and handed over the
    # way systemd socket activation does it (LISTEN_FDS=1, fd 3): rpcbind
    # would otherwise listen on every address.
    cat > "$STATE/listen.pl" <<'PERL'
# listen.pl PORT ADDRS COMMAND...: listen on ADDR:PORT (TCP) for each of
# the comma-separated ADDRS (an ADDR:P in the list listens on port P
# instead), pass the sockets as fds 3, 4, ... with LISTEN_PID/LISTEN_FDS
# (sd_listen_fds(3)) and exec COMMAND.
use strict;
use Socket;
use POSIX ();
my $port = shift @ARGV;
my @addrs = split /,/, shift @ARGV;
$^F = 2 + @addrs;    # fds up to this stay open across exec
my @socks;
for my $spec (@addrs) {
    my ($a, $p) = split /:/, $spec;
    $p //= $port;
    socket(my $s, PF_INET, SOCK_STREAM, 0) or die "socket: $!";
    setsockopt($s, SOL_SOCKET, SO_REUSEADDR, 1) or die "SO_REUSEADDR: $!";
    bind($s, pack_sockaddr_in($p, inet_aton($a))) or die "bind $a:$p: $!";
    listen($s, SOMAXCONN) or die "listen: $!";
    push @socks, $s;
}
# Each socket to its fd (3, 4, ...), above them all first so that no dup2
# overwrites a socket still to be moved; dup2 leaves the new fd without
# close-on-exec.
my $high = 3 + @socks + 16;
my @tmp = map { POSIX::dup($_->fileno) // die "dup: $!" } @socks;
for my $i (0 .. $#tmp) { POSIX::dup2($tmp[$i], $high + $i) // die "dup2: $!"; POSIX::close($tmp[$i]); }
close $_ for @socks;
for my $i (0 .. $#tmp) { POSIX::dup2($high + $i, 3 + $i) // die "dup2: $!"; POSIX::close($high + $i); }
$ENV{LISTEN_PID} = $$;
$ENV{LISTEN_FDS} = scalar @addrs;
delete $ENV{LISTEN_FDNAMES};
exec { $ARGV[0] } @ARGV or die "exec $ARGV[0]: $!";
PERL
    # statd drops root for the owner of its state directory.
    if id statd >/dev/null 2>&1; then chown -R statd "$STATE/statd"; fi
}

start() {
    install_pkgs
    if ganesha_ours; then say "already running: pid $(cat "$PIDF")"; targets; return 0; fi
    stop_helpers
    local p
    for p in "$PORT" "$MNTPORT" "$NLMPORT" "$STATDPORT" "$RPCBPORT"; do
        if listening "$p"; then say "port $p is already in use:"; ss -ltnp "sport = :$p" >&2; exit 1; fi
    done
    mkdir -p "$STATE"
    [ "${FRESH:-0}" = 1 ] && rm -rf "$EXPORT_DIR"
    write_conf
    rm -f "$RPCPIDF" "$STATDPIDF" "$STATE/run/rpcbind.sock" "$STATE/run/rpcbind.lock"
    : > "$STATE/ganesha.log"
    : > "$STATE/statd.log"
    : > "$STATE/rpcbind.log"
    # One private mount namespace for all three. Each `unshare ... exec`
    # (or perl ... exec) chain keeps its pid, so $! is the daemon itself:
    # rpcbind and statd each get one more nested namespace for their own
    # /etc/netconfig; ganesha replaces the outer shell.
    export FERRITE_GANESHA_STATE="$STATE"
    local rpcb_addrs=127.0.0.1
    [ "$BIND" != 127.0.0.1 ] && rpcb_addrs="127.0.0.1,$BIND:$RPCBBINDPORT"
    local notify=":"
    if [ "$NOTIFY" = 1 ]; then
        # sm-notify moves the records it notifies out of its directory's
        # sm/, and statd (-L) loads them from there too: sm-notify gets
        # copies (and the state number), so that statd still monitors
        # the hosts whose records it loaded.
        rm -rf "$STATE/notify" && mkdir -p "$STATE/notify/sm" "$STATE/notify/sm.bak"
        cp -a "$STATE/statd/sm/." "$STATE/notify/sm/" 2>/dev/null || true
        cp "$STATE/statd/state" "$STATE/notify/state" 2>/dev/null || true
        if id statd >/dev/null 2>&1; then chown -R statd "$STATE/notify"; fi
        # It goes out once Ganesha has started (its log says "NFS SERVER
        # INITIALIZED" once its NLM is registered and served), so that the
        # clients' reclaims find it; 120 s is the upper bound on that wait.
        notify="(wait_until 120 grep -q 'NFS SERVER INITIALIZED' '$STATE/ganesha.log' || echo 'ganesha.sh: Ganesha not initialized after 120 s: sm-notify sent anyway'; exec sm-notify -f -d -v $BIND -P '$STATE/notify') >> '$STATE/statd.log' 2>&1 < /dev/null &"
    fi
    nohup unshare -m --propagation private sh -c "
        set -e
        . '$WAITLIB'
        mount --bind '$STATE/run' /run
        mount --bind '$STATE/services' /etc/services
        mount --bind '$STATE/hosts' /etc/hosts
        if [ -e /etc/nfs.conf ]; then mount --bind '$STATE/nfs.conf' /etc/nfs.conf; fi
        for f in hosts.allow hosts.deny; do
            if [ -e /etc/\$f ]; then mount --bind '$STATE/'\$f /etc/\$f; else echo \"no /etc/\$f: tcp_wrappers rules not applied\" >&2; fi
        done
        unshare -m --propagation private sh -c \"mount --bind '$STATE/netconfig.rpcbind' /etc/netconfig && exec perl '$STATE/listen.pl' $RPCBPORT $rpcb_addrs rpcbind -f\" \
            > '$STATE/rpcbind.log' 2>&1 < /dev/null &
        echo \$! > '$RPCPIDF'
        wait_until 60 test -S /run/rpcbind.sock || echo 'no /run/rpcbind.sock 60 s after rpcbind started' >&2
        unshare -m --propagation private sh -c \"mount --bind '$STATE/netconfig.statd' /etc/netconfig && exec rpc.statd -F -d -L -n 127.0.0.1 -p $STATDPORT -P '$STATE/statd'\" \
            > '$STATE/statd.log' 2>&1 < /dev/null &
        echo \$! > '$STATDPIDF'
        wait_until 60 grep -q 'Waiting for client connections' '$STATE/statd.log' || echo 'rpc.statd not waiting for connections 60 s after it started' >&2
        $notify
        exec ganesha.nfsd -F -f '$CONF' -L '$STATE/ganesha.log' -p '$STATE/ganesha.nfsd.pid' -N NIV_EVENT
    " > "$STATE/stdout.log" 2>&1 < /dev/null &
    echo $! > "$PIDF"
    wait_until 120 ganesha_up_or_gone || true
    if ! ganesha_up || ! ganesha_ours || ! ours "$STATDPIDF" rpc.statd || ! ours "$RPCPIDF" rpcbind; then
        say "start failed; logs:"
        tail -n 20 "$STATE/stdout.log" "$STATE/ganesha.log" "$STATE/statd.log" "$STATE/rpcbind.log" >&2 || true
        stop >/dev/null 2>&1 || true
        exit 1
    fi
    say "started ganesha.nfsd pid $(cat "$PIDF") (rpcbind $(cat "$RPCPIDF"), rpc.statd $(cat "$STATDPIDF")): export $EXPORT_DIR, logs in $STATE"
    targets
}

targets() {
    echo "nfs4://$BIND:$PORT/"
    echo "nfs3://$BIND:$PORT/?mountport=$MNTPORT&nlmport=$NLMPORT"
    echo "FERRITE_GANESHA_V3=$BIND:$PORT:$MNTPORT FERRITE_GANESHA_V3_EXPORT=/ FERRITE_GANESHA_NLM=$BIND:$NLMPORT FERRITE_GANESHA_PMAP=127.0.0.1:$RPCBPORT"
}

# kill_ours PIDFILE COMM: TERM (then KILL after 60 s) the process if it is ours.
kill_ours() {
    if ours "$1" "$2"; then
        local p; p=$(cat "$1")
        kill "$p"
        if ! wait_until 60 not_ours "$1" "$2"; then say "$2 pid $p ignored SIGTERM for 60 s, SIGKILL"; kill -9 "$p"; fi
        say "stopped $2 pid $p"
    fi
    rm -f "$1"
}

stop_helpers() {
    kill_ours "$STATDPIDF" rpc.statd
    kill_ours "$RPCPIDF" rpcbind
}

stop() {
    if ganesha_ours; then kill_ours "$PIDF" ganesha.nfsd; else say "ganesha not running (none started by this script)"; rm -f "$PIDF"; fi
    stop_helpers
}

status() {
    local rc=0 f c
    for f in "$PIDF:ganesha.nfsd" "$STATDPIDF:rpc.statd" "$RPCPIDF:rpcbind"; do
        c=${f#*:}; f=${f%%:*}
        if ours "$f" "$c"; then echo "$c: running pid $(cat "$f")"; else echo "$c: not running"; rc=1; fi
    done
    if [ $rc = 0 ]; then targets; fi
    return $rc
}

case "${1:-}" in
start) start ;;
stop) stop ;;
restart) stop; start ;;
status) status ;;
log)
    n="${2:-50}"
    tail -n "$n" "$STATE/ganesha.log"
    if [ -s "$STATE/statd.log" ]; then echo "--- $STATE/statd.log"; tail -n "$n" "$STATE/statd.log"; fi
    ;;
*) echo "usage: $0 start|stop|restart|status|log [N]" >&2; exit 2 ;;
esac
