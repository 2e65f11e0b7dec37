#!/usr/bin/env bash
# Ferrite's test command: what CI runs (.ci/run) and what the README names.
#   ./test.sh            everything
# Environment: FERRITE_SKIP_REALCLIENT=1 skips the real Linux client suite,
# FERRITE_SKIP_GANESHA=1 the tests against NFS-Ganesha, FERRITE_SKIP_FUSE=1
# the crashfs and power-loss tests (each then says so);
# FERRITE_FUZZ_CASES sets the proptest fuzz tests' case count,
# FERRITE_FUZZ_SECS the seconds per target of the libFuzzer run (60).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")"

step() { printf '\n==== %s ====\n' "$*"; }

step "rustfmt"
cargo fmt --all -- --check
cargo fmt --manifest-path fuzz/Cargo.toml -- --check

step "clippy (warnings denied)"
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy --manifest-path fuzz/Cargo.toml --all-targets -- -D warnings

step "unit and end-to-end tests"
cargo test --workspace

# Builds the targets (about 2 minutes on 2 cores, 1.5 more the first time
# to install cargo-fuzz), then runs each for FERRITE_FUZZ_SECS.
step "coverage-guided fuzzing, a short bounded run (tools/fuzz.sh short; docs/fuzzing.md)"
bash tools/fuzz.sh short "${FERRITE_FUZZ_SECS:-60}"

step "crashfs and the power-loss crash harness (tests/crash-power.sh)"
bash tests/crash-power.sh

step "NFSv3/NLM client and nfs3:// benchmark against NFS-Ganesha (tests/peer-ganesha.sh)"
bash tests/peer-ganesha.sh

step "real Linux client suite (tests/realclient)"
bash tests/realclient-ferrite.sh

step "real Linux client: export rules (tests/realclient-exports.sh)"
bash tests/realclient-exports.sh
