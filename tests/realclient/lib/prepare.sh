#!/usr/bin/env bash
# Build (or verify) the cached real-client guest for tests/realclient.
# Idempotent: every stage is keyed by a signature file; only stale stages rerun.
#
#   lib/prepare.sh [--force]
#
# Cache (outside the repo): $FERRITE_RC_CACHE, default /var/cache/ferrite-realclient
#   rootfs/        debootstrap'ed Debian (minbase + nfs-common, python3, ...)
#   debs/          the downloaded linux-image-*.deb (never installed on the host)
#   vmlinuz/vmlinux  kernel (vmlinux = uncompressed, PVH direct boot, faster under TCG)
#   initrd.cpio    busybox + virtio/ext4 modules + guest/initramfs-init
#   rootfs.img     ext4 image of rootfs (booted as a qemu snapshot: never modified)
#   READY          written last; its content is the combined signature
set -euo pipefail

RC_DIR="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
CACHE="${FERRITE_RC_CACHE:-/var/cache/ferrite-realclient}"
SUITE="${FERRITE_RC_SUITE:-bookworm}"
MIRROR="${FERRITE_RC_MIRROR:-http://deb.debian.org/debian}"
# Guest userland. minbase already has tar, diffutils, passwd (useradd), coreutils.
GUEST_PKGS="nfs-common,iproute2,procps,kmod,util-linux,python3,busybox-static,netbase,psmisc"
# Modules the initramfs needs to mount the ext4 root on virtio-blk.
INITRD_MODS="virtio_pci virtio_blk crc32c_generic ext4"
# Unprivileged users created in the guest for permission scenarios.
GUEST_USERS="rcuser:1000 rcother:1001"
LAYOUT=3   # bump to force a full rebuild when this script's layout changes

say() { printf 'realclient-prepare: %s\n' "$*" >&2; }
die() { printf 'realclient-prepare: ERROR: %s\n' "$*" >&2; exit 1; }
sig_ok() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }

[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, chroot)"
force=0; [ "${1:-}" = --force ] && force=1

# ---- host tools (idempotent apt-get) ------------------------------------------
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v cpio >/dev/null || need+=(cpio)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
command -v xz >/dev/null || need+=(xz-utils)
command -v zstd >/dev/null || need+=(zstd)
if [ ${#need[@]} -gt 0 ]; then
    say "installing host packages: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends "${need[@]}" >&2 ||
        { apt-get update -q >&2 && apt-get install -y -q --no-install-recommends "${need[@]}" >&2; } ||
        die "apt-get install ${need[*]} failed"
fi

mkdir -p "$CACHE"
exec 8>"$CACHE/.lock"
flock 8
[ $force = 1 ] && rm -f "$CACHE"/sig.* "$CACHE/READY"

# ---- resolve the kernel package ------------------------------------------------
kpkg="${FERRITE_RC_KERNEL_PKG:-}"
if [ -z "$kpkg" ]; then
    kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
    if [ -z "$kpkg" ]; then
        apt-get update -q >&2 || true
        kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
    fi
fi
[ -n "$kpkg" ] || die "cannot resolve the Debian kernel package (set FERRITE_RC_KERNEL_PKG)"
kver="${kpkg#linux-image-}"

s_rootfs="L$LAYOUT $SUITE $GUEST_PKGS users=$GUEST_USERS"
s_kernel="$s_rootfs | $kpkg"
s_initrd="$s_kernel | $INITRD_MODS $(sha256sum "$RC_DIR/guest/initramfs-init" | cut -c1-16)"
s_image="$s_kernel"

# ---- stage 1: root filesystem ----------------------------------------------------
if ! sig_ok "$CACHE/sig.rootfs" "$s_rootfs" || [ ! -x "$CACHE/rootfs/usr/bin/python3" ]; then
    rm -f "$CACHE"/sig.* "$CACHE/READY"
    say "stage 1/4: debootstrap $SUITE minbase + $GUEST_PKGS (takes a few minutes)"
    r="$CACHE/rootfs.tmp"; rm -rf "$r"
    debootstrap --variant=minbase --include="$GUEST_PKGS" "$SUITE" "$r" "$MIRROR" \
        > "$CACHE/debootstrap.log" 2>&1 ||
        { tail -20 "$CACHE/debootstrap.log" >&2; die "debootstrap failed (full log: $CACHE/debootstrap.log)"; }
    rm -f "$r"/var/cache/apt/archives/*.deb
    printf '#!/bin/sh\nexit 101\n' > "$r/usr/sbin/policy-rc.d"; chmod 755 "$r/usr/sbin/policy-rc.d"
    : > "$r/etc/fstab"; : > "$r/etc/resolv.conf"   # no DNS: the guest only ever talks to 10.0.2.2
    printf '127.0.0.1\tlocalhost\n10.0.2.2\tnfshost\n' > "$r/etc/hosts"
    echo ferrite-rc > "$r/etc/hostname"
    for u in $GUEST_USERS; do
        chroot "$r" /usr/sbin/groupadd -g "${u#*:}" "${u%%:*}"
        chroot "$r" /usr/sbin/useradd -m -u "${u#*:}" -g "${u#*:}" -s /bin/bash "${u%%:*}"
    done
    rm -rf "$CACHE/rootfs"; mv "$r" "$CACHE/rootfs"
    echo "$s_rootfs" > "$CACHE/sig.rootfs"
fi

# ---- stage 2: kernel + modules (dpkg -x; nothing is installed on the host) ------
if ! sig_ok "$CACHE/sig.kernel" "$s_kernel"; then
    rm -f "$CACHE/sig.kernel" "$CACHE/sig.initrd" "$CACHE/sig.image" "$CACHE/READY"
    say "stage 2/4: kernel $kpkg"
    mkdir -p "$CACHE/debs"
    if ! ls "$CACHE/debs/${kpkg}_"*.deb >/dev/null 2>&1; then
        ( cd "$CACHE/debs" && apt-get -q -o APT::Sandbox::User=root download "$kpkg" >&2 ) ||
        { apt-get update -q >&2; ( cd "$CACHE/debs" && apt-get -q -o APT::Sandbox::User=root download "$kpkg" >&2 ); } ||
        die "apt-get download $kpkg failed"
    fi
    x="$CACHE/kernel.x"; rm -rf "$x"; mkdir -p "$x"
    dpkg -x "$CACHE/debs/${kpkg}_"*.deb "$x"
    mdir="$x/lib/modules/$kver"; [ -d "$mdir" ] || mdir="$x/usr/lib/modules/$kver"
    [ -d "$mdir" ] || die "no modules for $kver in $kpkg"
    rm -rf "$CACHE/rootfs/usr/lib/modules"; mkdir -p "$CACHE/rootfs/usr/lib/modules"
    cp -a "$mdir" "$CACHE/rootfs/usr/lib/modules/"
    chroot "$CACHE/rootfs" /sbin/depmod -a "$kver"
    cp "$x/boot/vmlinuz-$kver" "$CACHE/vmlinuz"
    rm -rf "$x"
    # Uncompressed ELF vmlinux with a PVH note boots directly (no xz decompressor
    # under TCG, which saves several seconds per boot). Optional.
    rm -f "$CACHE/vmlinux"
    off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$CACHE/vmlinuz" | head -1 | cut -d: -f1 || true)
    if [ -n "$off" ]; then
        tail -c +"$((off + 1))" "$CACHE/vmlinuz" | xz -dc > "$CACHE/vmlinux.tmp" 2>/dev/null || true
        if [ "$(head -c 4 "$CACHE/vmlinux.tmp" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] &&
           { ! command -v readelf >/dev/null || readelf -n "$CACHE/vmlinux.tmp" | grep -q '0x00000012'; }; then
            mv "$CACHE/vmlinux.tmp" "$CACHE/vmlinux"
        fi
        rm -f "$CACHE/vmlinux.tmp"
    fi
    echo "$kver" > "$CACHE/kver"
    echo "$s_kernel" > "$CACHE/sig.kernel"
fi

# ---- stage 3: initramfs (static busybox + root-disk modules + our /init) --------
if ! sig_ok "$CACHE/sig.initrd" "$s_initrd"; then
    rm -f "$CACHE/sig.initrd" "$CACHE/READY"
    say "stage 3/4: initramfs"
    d="$CACHE/initrd.d"; rm -rf "$d"; mkdir -p "$d"/{bin,dev,proc,sys,newroot,mods}
    cp "$CACHE/rootfs/bin/busybox" "$d/bin/busybox"
    for a in sh mount umount insmod switch_root sleep cat mkdir cp rm echo; do ln -s busybox "$d/bin/$a"; done
    install -m 755 "$RC_DIR/guest/initramfs-init" "$d/init"
    : > "$d/mods/order"
    for m in $INITRD_MODS; do
        chroot "$CACHE/rootfs" /sbin/modprobe -S "$kver" --show-depends "$m" 2>/dev/null |
        awk '$1=="insmod"{print $2}' | while read -r p; do
            b=$(basename "$p"); b=${b%.xz}; b=${b%.zst}; b=${b%.gz}
            grep -qx "$b" "$d/mods/order" && continue
            case "$p" in
            *.xz)  xz -dc "$CACHE/rootfs$p" > "$d/mods/$b" ;;
            *.zst) zstd -qdc "$CACHE/rootfs$p" > "$d/mods/$b" ;;
            *.gz)  gzip -dc "$CACHE/rootfs$p" > "$d/mods/$b" ;;
            *)     cp "$CACHE/rootfs$p" "$d/mods/$b" ;;
            esac
            echo "$b" >> "$d/mods/order"
        done
    done
    grep -q '^ext4' "$d/mods/order" || say "note: ext4 not a module (built in?)"
    ( cd "$d" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 ) > "$CACHE/initrd.cpio"
    rm -rf "$d"
    echo "$s_initrd" > "$CACHE/sig.initrd"
fi

# ---- stage 4: ext4 disk image ------------------------------------------------------
if ! sig_ok "$CACHE/sig.image" "$s_image" || [ ! -f "$CACHE/rootfs.img" ]; then
    rm -f "$CACHE/sig.image" "$CACHE/READY"
    say "stage 4/4: ext4 image"
    mb=$(du -sm "$CACHE/rootfs" | cut -f1)
    rm -f "$CACHE/rootfs.img.tmp"
    truncate -s "$(( mb * 12 / 10 + 768 ))M" "$CACHE/rootfs.img.tmp"
    mkfs.ext4 -q -F -L ferrite-rc -d "$CACHE/rootfs" "$CACHE/rootfs.img.tmp"
    mv "$CACHE/rootfs.img.tmp" "$CACHE/rootfs.img"
    echo "$s_image" > "$CACHE/sig.image"
fi

echo "$s_initrd" > "$CACHE/READY"
say "guest ready: kernel $kver, cache $CACHE"
