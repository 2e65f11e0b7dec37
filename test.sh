#!/usr/bin/env bash
# Ferrite's test command: what CI runs (.ci/run) and what the README names.
#   ./test.sh            everything
# Every stage runs even when an earlier one fails, so that one failure does
# not hide the state of the rest; the run ends with each stage's result and
# time, and exits non-zero if any stage failed.
# Environment: FERRITE_SKIP_REALCLIENT=1 skips the real Linux client suites,
# FERRITE_SKIP_GANESHA=1 the tests against NFS-Ganesha, FERRITE_SKIP_FUSE=1
# the crashfs and power-loss tests and the fail-over over GlusterFS (a FUSE
# client) (each then says so);
# FERRITE_FUZZ_CASES sets the proptest fuzz tests' case count,
# FERRITE_FUZZ_SECS the seconds per target of the libFuzzer run (60).
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")"

results=()
failed=0
started=$SECONDS

# stage NAME COMMAND...: runs one stage, timing it and keeping its result.
stage() {
    local name=$1
    shift
    printf '\n==== %s ====\n' "$name"
    local t0=$SECONDS rc
    # Not in an `||` list: bash would ignore set -e inside it.
    ( set -e; "$@" )
    rc=$?
    local took=$((SECONDS - t0))
    if [ "$rc" -eq 0 ]; then
        results+=("$(printf 'ok      %5ds  %s' "$took" "$name")")
    else
        results+=("$(printf 'FAILED  %5ds  %s (exit %d)' "$took" "$name" "$rc")")
        failed=$((failed + 1))
    fi
}

fmt() {
    cargo fmt --all -- --check
    cargo fmt --manifest-path fuzz/Cargo.toml -- --check
}

clippy() {
    # The kerberos feature is linted too: its build needs headers.
    . tools/krb5-lib.sh && kr_build_deps test.sh
    cargo clippy --workspace --all-targets --all-features -- -D warnings
    cargo clippy --manifest-path fuzz/Cargo.toml --all-targets -- -D warnings
}

# The server's house (docs/architecture.md, "The server crate's folders"):
# no circle of imports between files of different folders, no file over
# 800 lines of logic, no protocol folder importing another protocol's, no
# shared folder importing a protocol's; the state crate likewise.
layout() {
    command -v python3 >/dev/null ||
        { apt-get install -y -q python3 >/dev/null && command -v python3 >/dev/null; } ||
        { echo "test.sh: python3 is needed to read the import graph and could not be installed" >&2; return 1; }
    local deny=(--deny v3/:nfs4/ --deny nfs4/:v3/)
    # migrate/ (the peer program of migrations) is a protocol folder too.
    deny+=(--deny migrate/:nfs4/ --deny migrate/:v3/ --deny nfs4/:migrate/ --deny v3/:migrate/)
    for shared in conflicts/ exports/ stable/ observe/ handoff/ security/ pnfs/ instance.rs errors.rs ids.rs cache.rs; do
        deny+=(--deny "$shared:nfs4/" --deny "$shared:v3/" --deny "$shared:migrate/")
    done
    python3 tools/imports.py --crate crates/server --check "${deny[@]}"
    python3 tools/imports.py --crate crates/state --check
}

stage "rustfmt" fmt
stage "the server's folders and imports (tools/imports.py --check)" layout
stage "clippy (warnings denied)" clippy
stage "unit and end-to-end tests (cargo test --workspace)" cargo test --workspace
# Builds the targets (about 2 minutes on 2 cores, 1.5 more the first time
# to install cargo-fuzz), then runs each for FERRITE_FUZZ_SECS.
stage "coverage-guided fuzzing, a short bounded run (tools/fuzz.sh short; docs/fuzzing.md)" \
    bash tools/fuzz.sh short "${FERRITE_FUZZ_SECS:-60}"
stage "crashfs and the power-loss crash harness (tests/crash-power.sh)" \
    bash tests/crash-power.sh
stage "fail-over to a standby over GlusterFS (tests/failover-gluster.sh)" \
    bash tests/failover-gluster.sh
stage "RPCSEC_GSS with Kerberos against a real KDC (tests/kerberos.sh)" \
    bash tests/kerberos.sh
stage "libnfs's tools over NFSv4.0: nfs-ls, nfs-cat, nfs-cp (tests/libnfs.sh)" \
    bash tests/libnfs.sh
stage "NFSv3/NLM client and nfs3:// benchmark against NFS-Ganesha (tests/peer-ganesha.sh)" \
    bash tests/peer-ganesha.sh
stage "real Linux client suite (tests/realclient-ferrite.sh)" \
    bash tests/realclient-ferrite.sh
stage "real Linux client: export rules (tests/realclient-exports.sh)" \
    bash tests/realclient-exports.sh
stage "real Linux clients: fail-over over GlusterFS (tests/realclient-failover.sh)" \
    bash tests/realclient-failover.sh
stage "real Linux client with Kerberos: krb5, krb5i, krb5p (tests/realclient-kerberos.sh)" \
    bash tests/realclient-kerberos.sh

printf '\n==== summary (%d s in all) ====\n' "$((SECONDS - started))"
printf '%s\n' "${results[@]}"
if [ "$failed" -gt 0 ]; then
    printf '%d stage(s) failed\n' "$failed"
    exit 1
fi
echo "every stage passed"
