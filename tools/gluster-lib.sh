# shellcheck shell=bash
# Sourced by the fail-over tests: a single-node GlusterFS volume for the
# length of a test (tests/failover-gluster.sh, tests/realclient-failover.sh).
#
#   gl_ensure ME              installs glusterfs-server/-client if missing
#                             (root, apt) and starts glusterd if it is not
#                             running; fails loudly when it cannot
#   gl_volume ME NAME DIR MOUNT...
#                             a volume NAME with one brick DIR/brick, the
#                             client caches off (each mount sees what the
#                             others wrote), mounted at each MOUNT
#   gl_cleanup                unmounts, stops and deletes the volume, and
#                             stops glusterd if gl_ensure started it
#
# GlusterFS refuses loopback names for bricks: the brick is named by this
# machine's own name (whatever address that resolves to, the traffic
# stays on the machine).

GL_VOL="" GL_MOUNTS=() GL_DIR="" GL_STARTED=0

gl_ensure() {
    local me=$1
    if ! command -v glusterd >/dev/null || ! command -v mount.glusterfs >/dev/null; then
        echo "$me: installing GlusterFS (glusterfs-server, glusterfs-client)" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q glusterfs-server glusterfs-client >/dev/null ||
            { echo "$me: GlusterFS is not installed and could not be (apt-get install glusterfs-server glusterfs-client)" >&2; return 1; }
    fi
    [ -c /dev/fuse ] || modprobe fuse 2>/dev/null || true
    [ -c /dev/fuse ] || { echo "$me: no /dev/fuse: GlusterFS's client cannot mount" >&2; return 1; }
    if ! pgrep -x glusterd >/dev/null; then
        glusterd --log-level=WARNING || { echo "$me: glusterd did not start" >&2; return 1; }
        GL_STARTED=1
    fi
    gl_up() { gluster --mode=script volume list >/dev/null 2>&1; }
    wait_until 60 gl_up || { echo "$me: glusterd did not answer within 60 s" >&2; return 1; }
}

gl_volume() {
    local me=$1 name=$2 dir=$3 host o m
    shift 3
    host="$(hostname)"
    GL_VOL="$name" GL_DIR="$dir"
    mkdir -p "$dir/brick"
    gluster --mode=script volume create "$name" "$host:$dir/brick" force >/dev/null ||
        { echo "$me: gluster volume create $name $host:$dir/brick failed" >&2; return 1; }
    for o in performance.quick-read performance.io-cache performance.read-ahead performance.stat-prefetch; do
        gluster --mode=script volume set "$name" "$o" off >/dev/null
    done
    gluster --mode=script volume start "$name" >/dev/null ||
        { echo "$me: gluster volume start $name failed" >&2; return 1; }
    for m in "$@"; do
        mkdir -p "$m"
        mount -t glusterfs "$host:/$name" "$m" || { echo "$me: mount of $host:/$name at $m failed" >&2; return 1; }
        GL_MOUNTS+=("$m")
    done
    echo "$me: GlusterFS volume $name ($host:$dir/brick) mounted at ${GL_MOUNTS[*]}"
}

gl_cleanup() {
    local m
    for m in "${GL_MOUNTS[@]+"${GL_MOUNTS[@]}"}"; do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
    done
    if [ -n "$GL_VOL" ]; then
        gluster --mode=script volume stop "$GL_VOL" force >/dev/null 2>&1
        gluster --mode=script volume delete "$GL_VOL" >/dev/null 2>&1
    fi
    [ -n "$GL_DIR" ] && rm -rf "$GL_DIR/brick"
    [ "$GL_STARTED" = 1 ] && pkill -x glusterd
    return 0
}
