//! NFSv4.1 (RFC 8881) and NFSv4.2 (RFC 7862) wire types, and those of the
//! pNFS flexible file layout (RFC 8435).

mod attr;
mod callback;
mod compound;
mod flexfiles;
mod ops;
mod res;
mod types;

pub use attr::*;
pub use callback::*;
pub use compound::*;
pub use flexfiles::*;
pub use ops::*;
pub use res::*;
pub use types::*;

/// ONC RPC program number of NFS (RFC 8881 §16.1).
pub const NFS_PROGRAM: u32 = 100003;
/// NFSv4 program version.
pub const NFS_V4: u32 = 4;
