//! Ferrite's protocol logic: the NFSv4.1/4.2 server over the vfs backends.

pub mod admin;
mod cache;
pub mod conflicts;
pub mod errors;
pub mod exports;
pub mod handoff;
pub mod ids;
pub mod instance;
pub mod load;
pub mod metrics;
pub mod mount;
pub mod nfs3;
pub mod nfs4;
pub mod nlm;
pub mod nsm;
pub mod portmap;
pub mod reload;
pub mod run;
pub mod stable;
pub mod stats;
