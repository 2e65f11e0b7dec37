//! `rpc_record`: see `crates/fuzz-harness/src` and `docs/fuzzing.md`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_harness::record::rpc_record(data));
