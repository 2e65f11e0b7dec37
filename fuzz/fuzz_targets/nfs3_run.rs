//! `nfs3_run`: see `crates/fuzz-harness/src` and `docs/fuzzing.md`.
#![no_main]

#[global_allocator]
static ALLOC: fuzz_harness::alloc::Limited = fuzz_harness::alloc::Limited;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_harness::nfs3_run::nfs3_run(data));
