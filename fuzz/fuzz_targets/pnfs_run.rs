//! `pnfs_run`: `compound_run`'s programs against a pNFS metadata server;
//! see `crates/fuzz-harness/src` and `docs/fuzzing.md`.
#![no_main]

#[global_allocator]
static ALLOC: fuzz_harness::alloc::Limited = fuzz_harness::alloc::Limited;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_harness::run::pnfs_run(data));
