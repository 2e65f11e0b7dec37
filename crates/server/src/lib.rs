//! Ferrite's protocol logic: the NFSv4.1/4.2 server over the vfs backends.

pub mod admin;
mod cache;
pub mod export;
pub mod ids;
pub mod iopool;
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
pub mod stats;
pub mod writelog;
