# Sourced by tools/ab.sh, tools/floor.sh, tools/krb5-ab.sh and
# tools/tls-ab.sh: what they need to set Ferrite beside NFS-Ganesha, to
# drive nfs-rs, and the rows the security comparisons share. The caller is
# at the repository's top and sets OUT.

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

# The rows of the security comparisons (tools/krb5-ab.sh, tools/tls-ab.sh;
# tools/ab_totals.py names them in the tables).
SEC_ROWS=(randread-16 seqread randwrite-16 dirlist)

# sec_args ROW: the `ferrite bench run` arguments of ROW, DURATION a run.
sec_args() {
    local large=(--file-size 64m) timed=(--duration "$DURATION" --warmup 1s --runs 1)
    case "$1" in
    randread-16) echo randread "${large[@]}" --io-size 4k --threads 16 "${timed[@]}" ;;
    seqread) echo seqread "${large[@]}" --io-size 1m --threads 4 "${timed[@]}" ;;
    randwrite-16) echo randwrite "${large[@]}" --io-size 4k --threads 16 "${timed[@]}" ;;
    dirlist) echo dirlist --threads 4 "${timed[@]}" ;;
    esac
}

# sec_prepare FERRITE TARGET: the data sets the rows in ONLY need, made
# on TARGET with the `ferrite` binary FERRITE.
sec_prepare() {
    if [[ " $ONLY " == *" randread-16 "* || " $ONLY " == *" seqread "* || " $ONLY " == *" randwrite-16 "* ]]; then
        "$1" bench prepare randread --target "$2" --file-size 64m >/dev/null
    fi
    if [[ " $ONLY " == *" dirlist "* ]]; then "$1" bench prepare dirlist --target "$2" >/dev/null; fi
}
