//! `tls_probe`: see `crates/fuzz-harness/src` and `docs/fuzzing.md`.
#![no_main]

#[global_allocator]
static ALLOC: fuzz_harness::alloc::Limited = fuzz_harness::alloc::Limited;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_harness::tls::tls_probe(data));
