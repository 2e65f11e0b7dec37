#!/usr/bin/env bash
# Ferrite's test command: what CI runs (.ci/run) and what the README names.
#   ./test.sh            everything
# Environment: FERRITE_SKIP_REALCLIENT=1 skips the real Linux client suite,
# FERRITE_SKIP_GANESHA=1 the tests against NFS-Ganesha (each then says so);
# FERRITE_FUZZ_CASES sets the fuzz run's case count.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")"

step() { printf '\n==== %s ====\n' "$*"; }

step "rustfmt"
cargo fmt --all -- --check

step "clippy (warnings denied)"
cargo clippy --workspace --all-targets -- -D warnings

step "unit and end-to-end tests"
cargo test --workspace

step "NFSv3/NLM client and nfs3:// benchmark against NFS-Ganesha (tests/peer-ganesha.sh)"
bash tests/peer-ganesha.sh

step "real Linux client suite (tests/realclient)"
bash tests/realclient-ferrite.sh

step "real Linux client: export rules (tests/realclient-exports.sh)"
bash tests/realclient-exports.sh
