//! Ferrite's protocol logic: the NFSv4.1/4.2 server over the vfs backends.

mod cache;
pub mod config;
pub mod conflicts;
pub mod errors;
pub mod exports;
pub mod handoff;
pub mod ids;
pub mod instance;
pub mod nfs4;
pub mod observe;
pub mod run;
pub mod stable;
pub mod v3;
