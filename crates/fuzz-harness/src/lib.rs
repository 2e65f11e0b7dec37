//! The bodies of Ferrite's fuzz targets (`fuzz/fuzz_targets/`), kept here
//! so that `tests/corpus.rs` replays the committed corpora and crash
//! reproducers through the same code without libFuzzer.
//!
//! Every target panics on a finding; anything else an input provokes is
//! fine. See `docs/fuzzing.md`.

pub mod alloc;
pub mod decode;
pub mod gss;
pub mod nfs3_run;
pub mod record;
pub mod run;
pub mod seeds;
pub mod tls;

/// A target's body: runs one input, panics on a finding.
pub type Target = fn(&[u8]);

/// The targets by name, as `fuzz/fuzz_targets/<name>.rs` calls them.
pub const TARGETS: &[(&str, Target)] = &[
    ("rpc_record", record::rpc_record),
    ("compound_decode", decode::compound_decode),
    ("compound_run", run::compound_run),
    ("pnfs_run", run::pnfs_run),
    ("nfs3_run", nfs3_run::nfs3_run),
    ("gss_call", gss::gss_call),
    ("tls_probe", tls::tls_probe),
];
