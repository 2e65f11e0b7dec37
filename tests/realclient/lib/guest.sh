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

# True when something accepts TCP connections on 127.0.0.1:$1.
rc_port_open() {
    timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
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
# server can call the guests back (NLM_GRANTED, SM_NOTIFY).
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

# rc_bridge_up BRIDGE CIDR: the bridge, with CIDR (say 10.77.0.1/24), made
# if missing (idempotent). Only the guests are on it: no forwarding, no
# route anywhere else.
rc_bridge_up() {
    local br="$1" cidr="$2"
    if ! ip link show "$br" >/dev/null 2>&1; then
        ip link add "$br" type bridge || return 1
    fi
    ip -4 -o addr show dev "$br" | grep -q " ${cidr%/*}/" || ip addr add "$cidr" dev "$br" || return 1
    ip link set "$br" up
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
