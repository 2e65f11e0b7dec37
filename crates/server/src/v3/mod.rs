//! The NFSv3 family (RFC 1813, the X/Open NLM and NSM, RFC 1833): NFSv3
//! (`nfs3`, one procedure per file), MOUNT v3 (`mount`), NLM v4 (`nlm`),
//! NSM (`nsm`) and the port mapper (`portmap`). They serve from the same
//! server instance as NFSv4 (`crate::instance`) and share its exports,
//! state and stable storage, but import nothing of `crate::nfs4`: what a
//! change does to NFSv4 clients goes through `crate::conflicts`.

pub mod mount;
pub mod nfs3;
pub mod nlm;
pub mod nsm;
pub mod portmap;
