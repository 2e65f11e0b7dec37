#!/usr/bin/env bash
# The tests that need a real NFSv3 + MOUNT + NLM server: Ferrite's NFSv3
# client (crates/client/tests/v3_ganesha.rs), its NLM and portmapper
# clients (nlm_ganesha.rs) and the benchmark's nfs3:// backend
# (crates/bench/tests/nfs3_ganesha.rs), against an NFS-Ganesha that
# tools/ganesha.sh starts (installing its packages if missing) on its own
# ports and state directory, and stops afterwards. ./test.sh runs this.
#
# FERRITE_SKIP_GANESHA=1 skips it (and says so). Without that, a Ganesha
# that cannot be installed or started fails the run.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

if [ "${FERRITE_SKIP_GANESHA:-0}" = 1 ]; then
    echo "================================================================"
    echo "peer-ganesha: SKIPPED (FERRITE_SKIP_GANESHA=1): NFSv3/NLM client and nfs3:// benchmark tests not run"
    echo "================================================================"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "peer-ganesha: ERROR: must run as root (tools/ganesha.sh uses mount namespaces); FERRITE_SKIP_GANESHA=1 skips" >&2
    exit 1
fi

# Ports of our own (tools/ganesha.sh refuses ports in use), a fresh state.
base=22045
export GANESHA_RPCBIND_PORT=$base GANESHA_STATD_PORT=$((base + 1)) GANESHA_NLM_PORT=$((base + 2))
export GANESHA_MNT_PORT=$((base + 3)) GANESHA_PORT=$((base + 5))
GANESHA_STATE="$(mktemp -d /var/tmp/ferrite-ci-ganesha.XXXXXX)"
export GANESHA_STATE
chmod 755 "$GANESHA_STATE" # rpc.statd runs as user statd inside it
cleanup() {
    tools/ganesha.sh stop || true
    rm -rf "$GANESHA_STATE"
}
trap cleanup EXIT

if ! tools/ganesha.sh start; then
    echo "peer-ganesha: ERROR: NFS-Ganesha could not be started (see above); FERRITE_SKIP_GANESHA=1 skips these tests" >&2
    exit 1
fi

export FERRITE_GANESHA_V3="127.0.0.1:$GANESHA_PORT:$GANESHA_MNT_PORT"
export FERRITE_GANESHA_V3_EXPORT=/
export FERRITE_GANESHA_NLM="127.0.0.1:$GANESHA_NLM_PORT"
export FERRITE_GANESHA_PMAP="127.0.0.1:$GANESHA_RPCBIND_PORT"
export FERRITE_BENCH_NFS3="nfs3://127.0.0.1:$GANESHA_PORT/?mountport=$GANESHA_MNT_PORT&nlmport=$GANESHA_NLM_PORT"

# These tests are #[ignore]d so that a plain `cargo test` does not pass
# them without a server; here they run, and fail if anything is missing.
cargo test -p client --test v3_ganesha --test nlm_ganesha -- --ignored
cargo test -p bench --test nfs3_ganesha -- --ignored
echo "peer-ganesha: all passed against NFS-Ganesha ($(ganesha.nfsd -v 2>&1 | head -n 1 || true))"
