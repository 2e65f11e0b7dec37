//! Exports: a backend published at a path of the server's namespace.

use std::sync::Arc;

/// One exported file system.
pub struct Export {
    /// Stable id, carried in filehandles.
    pub id: u16,
    /// Where clients see it (for example "/" or "/data").
    pub path: String,
    pub vfs: Arc<dyn vfs::Vfs>,
    /// The fsid clients see for this export (RFC 8881 §5.8.1.9).
    pub fsid: (u64, u64),
}
