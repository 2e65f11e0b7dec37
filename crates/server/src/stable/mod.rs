//! What must survive a restart, and how it gets to stable storage: the
//! group commit of stable writes (`groups`) and making a file's writes
//! durable through it (`durable`), the write log (`writelog`),
//! client records for reboot recovery (`records`), persistent sessions'
//! reply caches (`sessions`).

pub mod durable;
pub mod groups;
pub mod records;
pub mod serving;
pub mod sessions;
pub mod writelog;
