//! The file-system interface workloads are written against, so that one
//! workload runs over NFSv4.1 (`nfs4://`), NFSv3 (`nfs3://`) or
//! POSIX calls on a mounted path (`dir:`). Each backend counts what it
//! sends in the run's [`OpStats`](crate::record::OpStats).

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use proto::nfs4::StateId4;

use crate::Result;

/// A file or directory: a filehandle (NFS) and/or a path (`dir:`, and for
/// messages).
#[derive(Debug, Clone)]
pub struct Node {
    pub fh: Bytes,
    pub path: PathBuf,
}

/// How a file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    Read,
    ReadWrite,
    /// Create if missing (UNCHECKED), read-write, mode 0644; the size is
    /// left alone.
    Create,
}

/// An open file.
#[derive(Debug)]
pub struct OpenFile {
    pub node: Node,
    /// NFSv4 open stateid.
    pub stateid: StateId4,
    /// NFSv4 lock stateid while a lock is held.
    pub lock_stateid: Option<StateId4>,
    /// NFSv4 delegation stateid, if the OPEN granted one.
    pub delegation: Option<StateId4>,
    /// `dir:` targets: the open file.
    pub file: Option<Arc<std::fs::File>>,
    /// The owner index the file was opened with (a worker's index).
    pub owner: u32,
}

/// File-system calls a workload makes. `owner` identifies the worker
/// (NFSv4: it selects the open owner and lock owner, one per worker).
#[async_trait]
pub trait BenchFs: Send + Sync + 'static {
    /// The target's base directory (the URL's path).
    fn root(&self) -> Node;
    /// `None` if `name` does not exist.
    async fn lookup(&self, dir: &Node, name: &str) -> Result<Option<Node>>;
    /// Creates a directory (mode 0755); an existing one is looked up.
    async fn mkdir(&self, dir: &Node, name: &str) -> Result<Node>;
    async fn open(&self, dir: &Node, name: &str, mode: OpenMode, owner: u32) -> Result<OpenFile>;
    /// Reads up to `len` bytes at `off`; returns the bytes read.
    async fn read(&self, f: &OpenFile, off: u64, len: u32) -> Result<u64>;
    /// Writes `data` at `off`: FILE_SYNC when `sync`, else UNSTABLE.
    async fn write(&self, f: &OpenFile, off: u64, data: Bytes, sync: bool) -> Result<()>;
    /// Makes unstable writes durable (COMMIT; `fdatasync`).
    async fn commit(&self, f: &OpenFile) -> Result<()>;
    /// Closes the file (returning a delegation it still holds).
    async fn close(&self, f: OpenFile) -> Result<()>;
    /// Locks the whole file (shared or exclusive), waiting for no one.
    async fn lock(&self, f: &mut OpenFile, write: bool) -> Result<()>;
    async fn unlock(&self, f: &mut OpenFile) -> Result<()>;
    /// Lists a directory completely; returns the number of entries.
    async fn readdir(&self, dir: &Node) -> Result<u64>;
    /// Removes a file (or, where the protocol allows it, anything).
    async fn remove(&self, dir: &Node, name: &str) -> Result<()>;
    /// Removes an empty directory (NFSv4 REMOVE, NFSv3 RMDIR, rmdir(2)).
    async fn rmdir(&self, dir: &Node, name: &str) -> Result<()> {
        self.remove(dir, name).await
    }
    async fn size(&self, node: &Node) -> Result<u64>;
    /// Makes a symbolic link `name` in `dir` pointing at `target`.
    async fn symlink(&self, dir: &Node, name: &str, target: &str) -> Result<Node>;
    /// Reads a symbolic link; returns the length of its target.
    async fn readlink(&self, link: &Node) -> Result<u64>;
    /// Sets the mode bits of a file (SETATTR; chmod).
    async fn set_mode(&self, node: &Node, mode: u32) -> Result<()>;
    /// The file system's free space, in bytes (NFSv4 GETATTR of the space
    /// and files attributes, NFSv3 FSSTAT, statvfs).
    async fn fsstat(&self, node: &Node) -> Result<u64>;
    /// Delegation recalls (CB_RECALL) received so far.
    fn recalls(&self) -> u64 {
        0
    }
    /// Delegations granted by OPENs so far.
    fn delegations(&self) -> u64 {
        0
    }
    /// Slot-table wait statistics (acquired, waited, total wait ns, max ns).
    fn slot_wait(&self) -> (u64, u64, u64, u64) {
        (0, 0, 0, 0)
    }
    /// The measured period ended: what the client does on its own from
    /// now (a callback's DELEGRETURN) belongs to the teardown.
    fn measured(&self) {}
    /// Ends the session (NFSv4: DESTROY_SESSION, DESTROY_CLIENTID).
    async fn shutdown(&self) -> Result<()>;
}

/// Splits "a/b/c" into components.
pub fn components(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|c| !c.is_empty() && *c != ".")
}
