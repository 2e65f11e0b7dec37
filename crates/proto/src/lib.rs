//! Wire types only: no logic, no I/O. Each type cites the RFC section it
//! was written from.

pub mod nfs4;
