# shellcheck shell=bash
# Shared by run.sh and two-guests.sh (sourced, not executed): boot pieces for
# one qemu guest. Expects CACHE (the prepared guest, see prepare.sh) to be set.
# RC_NAME (default "realclient") prefixes the messages of rc_guest_unavailable.

# Guest-start failures: loud (exit 125), or a clear SKIP (exit 0) when
# FERRITE_SKIP_REALCLIENT=1 explicitly allows it.
rc_guest_unavailable() {
    local why="$1" n="${RC_NAME:-realclient}"
    if [ "${FERRITE_SKIP_REALCLIENT:-0}" = 1 ]; then
        echo "================================================================"
        echo "$n: SKIPPED (FERRITE_SKIP_REALCLIENT=1): the guest could not be started:"
        echo "$n:   $why"
        echo "================================================================"
        exit 0
    fi
    echo "################################################################" >&2
    echo "$n: ERROR: the test guest could not be started:" >&2
    echo "$n:   $why" >&2
    echo "$n: (set FERRITE_SKIP_REALCLIENT=1 to skip this suite instead)" >&2
    echo "################################################################" >&2
    exit 125
}

# Upper bound, in seconds, on a guest's boot (qemu started to RC-BOOTED on
# its status port): a boot takes about 15 s under TCG here, two at once
# about 30 s; 300 s is ten times that, so only a guest that cannot boot
# reaches it, never a slow or loaded host.
# shellcheck disable=SC2034 # used by the scripts that source this file
rc_boot_limit=300

# rc_port_open PORT [HOST]: true when something accepts TCP connections on
# HOST:PORT (127.0.0.1). A connection on this host is accepted or refused
# at once; the 30 s timeout only bounds a connect that hangs.
rc_port_open() {
    timeout 30 bash -c "exec 3<>/dev/tcp/${2:-127.0.0.1}/$1" 2>/dev/null
}

# Sets $accel (kvm|tcg) and the qemu arguments $acc: KVM only where it can run
# a stock kernel (kvm_intel/kvm_amd loaded), else TCG. FERRITE_RC_ACCEL overrides.
rc_pick_accel() {
    accel="${FERRITE_RC_ACCEL:-auto}"
    if [ "$accel" = auto ]; then
        accel=tcg
        if [ -w /dev/kvm ] && { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; }; then accel=kvm; fi
    fi
    if [ "$accel" = kvm ]; then acc=(-accel kvm -cpu host); else acc=(-accel tcg,thread=multi -cpu max); fi
}

# rc_make_initrd WORK: WORK/payload/ holds the per-run files (rc/init, rc/env,
# scripts); writes WORK/initrd.img = the cached initramfs + that cpio layer.
rc_make_initrd() {
    local work="$1"
    ( cd "$work/payload" && find . -mindepth 1 | cpio -o -H newc --quiet -R 0:0 ) > "$work/payload.cpio"
    cat "$CACHE/initrd.cpio" "$work/payload.cpio" > "$work/initrd.img"
}

# rc_tap_up BRIDGE TAP: a tap device TAP attached to BRIDGE (made by
# tests/realclient-ferrite.sh, see rc_bridge_up), for a guest's second NIC:
# the host and the guests then reach each other by address, so that the
# server can call the guests back (NLM_GRANTED, SM_NOTIFY). The caller
# removes it with rc_tap_down at exit (a trap set before this call, so that
# a half-made tap goes too). TAP is named frc-t<the caller's pid>[a|b]:
# rc_bridge_up and rc_bridge_down know a tap left by a run that was killed
# by that pid being gone.
rc_tap_up() {
    local br="$1" tap="$2"
    ip link del "$tap" 2>/dev/null
    ip tuntap add "$tap" mode tap &&
        ip link set "$tap" master "$br" &&
        ip link set "$tap" up
}

rc_tap_down() {
    ip link del "$1" 2>/dev/null || true
}

# rc_bridge_ip BRIDGE: its IPv4 address.
rc_bridge_ip() {
    ip -4 -o addr show dev "$1" 2>/dev/null | awk '{split($4, a, "/"); print a[1]; exit}'
}

# The alias (ip link ... alias) of a bridge rc_bridge_up made.
RC_BRIDGE_ALIAS="ferrite-realclient test bridge"

# rc_bridge_ports BRIDGE: the devices attached to BRIDGE, after removing
# the taps (frc-t<pid>...) of runs that ended without removing them (their
# pid is gone: a run killed with SIGKILL).
rc_bridge_ports() {
    local d p pid
    for d in "/sys/class/net/$1/brif"/*; do
        [ -e "$d" ] || continue
        p="${d##*/}" pid="${p#frc-t}"; pid="${pid%[ab]}"
        if [ "$p" != "$pid" ] && [[ "$pid" =~ ^[0-9]+$ ]] && [ ! -d "/proc/$pid" ]; then
            ip link del "$p" 2>/dev/null && continue
        fi
        echo "$p"
    done
}

# rc_bridge_up BRIDGE CIDR: the bridge, with CIDR (say 10.77.0.1/24), made
# if missing. Only the guests are on it: no forwarding, no route anywhere
# else, no firewall rule, no DHCP (the guests configure their addresses).
# Records what it did for rc_bridge_down, which the caller runs at exit
# (trap ... EXIT, set before this call): a bridge it made, or one of this
# suite's (alias RC_BRIDGE_ALIAS, or named frc-*) that an earlier run left
# with no guest on it, is removed then; on another bridge that was there
# before, only the address and the "up" it added are undone.
rc_bridge_up() {
    local br="$1" cidr="$2"
    rc_bridge_name="$br" rc_bridge_made=0 rc_bridge_addr="" rc_bridge_was_down=0
    if ! ip link show "$br" >/dev/null 2>&1; then
        rc_bridge_made=1
        ip link add "$br" type bridge || return 1
        ip link set dev "$br" alias "$RC_BRIDGE_ALIAS" || true
    elif [ -z "$(rc_bridge_ports "$br")" ] &&
        { [[ "$br" == frc-* ]] || [ "$(cat "/sys/class/net/$br/ifalias" 2>/dev/null)" = "$RC_BRIDGE_ALIAS" ]; }; then
        echo "realclient: the bridge $br was left by an earlier run: this run removes it at exit" >&2
        rc_bridge_made=1
    fi
    if ! ip -4 -o addr show dev "$br" | grep -q " ${cidr%/*}/"; then
        ip addr add "$cidr" dev "$br" || return 1
        rc_bridge_addr="$cidr"
    fi
    ip link show "$br" | grep -q '[<,]UP[,>]' || rc_bridge_was_down=1
    ip link set "$br" up
}

# rc_bridge_down: undoes what rc_bridge_up did (nothing if it did not run):
# the bridge removed if it made it (its taps are gone by then: every
# script removes its own; a killed run's are removed here), else its
# address and "up" taken back. A bridge another live run's guest is still
# on stays, with a note.
rc_bridge_down() {
    local br="${rc_bridge_name:-}" ports
    [ -n "$br" ] && ip link show "$br" >/dev/null 2>&1 || return 0
    ports="$(rc_bridge_ports "$br")"
    if [ -n "$ports" ]; then
        echo "realclient: NOTE: the bridge $br is left: devices are still on it (${ports//$'\n'/ })" >&2
    elif [ "$rc_bridge_made" = 1 ]; then
        ip link del "$br" || echo "realclient: WARNING: could not remove the bridge $br" >&2
    else
        [ -z "$rc_bridge_addr" ] || ip addr del "$rc_bridge_addr" dev "$br" 2>/dev/null || true
        [ "$rc_bridge_was_down" = 0 ] || ip link set "$br" down 2>/dev/null || true
    fi
    rc_bridge_name=""
}

# rc_qemu_argv NAME CPUS MEM INITRD UNIQUE_ID LOGDIR OUTSHARE [TAG=DIR ...]
# Sets the array $qemu: the guest with its root disk as a snapshot (each qemu
# gets its own throw-away overlay), user-mode networking, OUTSHARE as the 9p
# share "rcout", every TAG=DIR as an extra 9p share, and the serial ports
# LOGDIR/console.log (ttyS0), output.log (ttyS1) and status.log (ttyS2).
# With RC_TAP set (a tap device, rc_tap_up), a second NIC on it (eth1).
# Call rc_pick_accel first.
rc_qemu_argv() {
    local name="$1" cpus="$2" mem="$3" initrd="$4" uid="$5" logs="$6" share="$7" x
    shift 7
    local kernel="$CACHE/vmlinux"; [ -f "$kernel" ] || kernel="$CACHE/vmlinuz"
    local cmdline="console=ttyS0,115200 root=/dev/vda rw panic=-1 quiet loglevel=4 net.ifnames=0 8250.nr_uarts=3 tsc=reliable cryptomgr.notests nfs.nfs4_unique_id=$uid"
    qemu=(qemu-system-x86_64 -name "$name" -nodefaults -no-user-config -display none -no-reboot
        "${acc[@]}" -M pc -smp "$cpus" -m "$mem"
        -kernel "$kernel" -initrd "$initrd" -append "$cmdline"
        -drive "file=$CACHE/rootfs.img,format=raw,if=virtio,snapshot=on"
        -netdev user,id=n0,ipv6=off -device virtio-net-pci,netdev=n0
        -virtfs "local,path=$share,mount_tag=rcout,security_model=none,id=rcout")
    if [ -n "${RC_TAP:-}" ]; then
        qemu+=(-netdev "tap,id=n1,ifname=$RC_TAP,script=no,downscript=no"
            -device "virtio-net-pci,netdev=n1,mac=${RC_TAP_MAC:-52:54:00:77:00:10}")
    fi
    for x in "$@"; do
        qemu+=(-virtfs "local,path=${x#*=},mount_tag=${x%%=*},security_model=none,id=${x%%=*}")
    done
    qemu+=(-serial "file:$logs/console.log" -serial "file:$logs/output.log" -serial "file:$logs/status.log")
}
