//! `compound_run`: see `crates/fuzz-harness/src` and `docs/fuzzing.md`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_harness::run::compound_run(data));
