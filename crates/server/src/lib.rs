//! Ferrite's NFS server over the vfs backends and the `state` crate: one
//! server instance (`instance`) that NFSv4.1/4.2 (`nfs4`) and the NFSv3
//! family (`v3`: NFSv3, MOUNT, NLM, NSM, the port mapper) serve from, with
//! what they share in folders named for it (`exports`, `stable`,
//! `conflicts`, `handoff`, `errors`), watching it in `observe`, and
//! starting it in `run` from a `config`. docs/architecture.md has the map.

mod cache;
pub mod config;
pub mod conflicts;
pub mod errors;
pub mod exports;
pub mod handoff;
pub mod ids;
pub mod instance;
pub mod migrate;
pub mod nfs4;
pub mod observe;
pub mod pnfs;
pub mod run;
pub mod security;
pub mod stable;
pub mod v3;
