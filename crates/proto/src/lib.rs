//! Wire types only: no logic, no I/O. Each type cites the RFC section it
//! was written from.

pub mod migrate;
pub mod mount;
pub mod nfs3;
pub mod nfs4;
pub mod nlm;
pub mod nsm;
pub mod portmap;
