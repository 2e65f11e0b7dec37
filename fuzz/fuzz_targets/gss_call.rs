//! `gss_call`: see `crates/fuzz-harness/src` and `docs/fuzzing.md`.
#![no_main]

#[global_allocator]
static ALLOC: fuzz_harness::alloc::Limited = fuzz_harness::alloc::Limited;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_harness::gss::gss_call(data));
