# Sourced by tools/ab.sh and tools/floor.sh: what both need to set
# Ferrite beside NFS-Ganesha and to drive nfs-rs. The caller is at the
# repository's top and sets OUT.

# The third-party client, in a virtual environment outside the repository.
NFSRS_VENV=/var/tmp/ferrite-nfsrs-venv

# nfsrs_venv: installs nfs-rs 0.8.7 from PyPI into $NFSRS_VENV unless
# it is there.
nfsrs_venv() {
    "$NFSRS_VENV/bin/python" -c 'import nfs_rs' 2>/dev/null && return 0
    echo "$(basename "$0"): installing nfs-rs 0.8.7 from PyPI into $NFSRS_VENV" >&2
    python3 -m venv "$NFSRS_VENV"
    "$NFSRS_VENV/bin/pip" install -q nfs-rs==0.8.7
}

# wait_port PORT [WHERE]: returns once something listens on
# 127.0.0.1:PORT; exits after 10 s saying so (and where to look).
wait_port() {
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "$(basename "$0"): nothing listens on port $1${2:+; see $2}" >&2
    exit 1
}

# ganesha_restart [EXPORT]: NFS-Ganesha (tools/ganesha.sh) restarted on
# EXPORT (default: its own), every thread pinned to CPU 1; sets gpid.
# FRESH=1 in the environment empties the export first.
ganesha_restart() {
    GANESHA_EXPORT_DIR="${1:-${GANESHA_EXPORT_DIR:-${GANESHA_STATE:-/var/tmp/ferrite-bench-ganesha}/export}}" \
        bash tools/ganesha.sh restart >>"$OUT/ganesha-start.log" 2>&1
    gpid="$(cat "${GANESHA_STATE:-/var/tmp/ferrite-bench-ganesha}/ganesha.pid")"
    taskset -a -cp 1 "$gpid" >/dev/null
}
