//! `compound_decode`: see `crates/fuzz-harness/src` and `docs/fuzzing.md`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_harness::decode::compound_decode(data));
