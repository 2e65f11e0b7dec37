//! The `dir:` backend: the same workloads through POSIX calls on a path
//! (normally an NFS mount made by the kernel client), each call run on
//! tokio's blocking pool. Calls are counted by system-call name; "queue" is
//! the time a call waited for a blocking-pool thread, "RTT" the call itself.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;
use proto::nfs4::StateId4;

use crate::fs::{BenchFs, Node, OpenFile, OpenMode};
use crate::record::{current_phase, CallRecord, OpStats};
use crate::{Error, Result};

pub struct PosixFs {
    root: PathBuf,
    stats: Arc<OpStats>,
}

impl PosixFs {
    pub fn new(root: PathBuf, stats: Arc<OpStats>) -> Result<Arc<PosixFs>> {
        if !root.is_dir() {
            return Err(Error::Msg(format!(
                "dir target {} is not a directory",
                root.display()
            )));
        }
        Ok(Arc::new(PosixFs { root, stats }))
    }

    /// Runs `f` on the blocking pool and records it as system call `name`.
    async fn call<T: Send + 'static>(
        &self,
        name: &'static str,
        f: impl FnOnce() -> std::io::Result<T> + Send + 'static,
    ) -> Result<T> {
        let phase = current_phase(&self.stats);
        let t0 = Instant::now();
        let (t1, t2, r) = tokio::task::spawn_blocking(move || {
            let t1 = Instant::now();
            let r = f();
            (t1, Instant::now(), r)
        })
        .await
        .map_err(|e| Error::Msg(format!("blocking task: {e}")))?;
        self.stats.record(CallRecord {
            phase,
            kind: name,
            ops: &[name],
            bytes_sent: 0,
            bytes_recv: 0,
            queue: t1 - t0,
            rtt: t2 - t1,
            ok: r.is_ok(),
        });
        Ok(r?)
    }
}

fn node(p: PathBuf) -> Node {
    Node {
        fh: Bytes::new(),
        path: p,
    }
}

fn file_of(f: &OpenFile) -> Result<Arc<File>> {
    f.file
        .clone()
        .ok_or_else(|| Error::Msg("not a dir: open file".into()))
}

fn fcntl_lock(file: &File, typ: libc::c_short) -> std::io::Result<()> {
    // SAFETY: a zeroed flock is a valid argument; fcntl reads it only.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = typ;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = 0;
    fl.l_len = 0;
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLKW, &fl) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[async_trait]
impl BenchFs for PosixFs {
    fn root(&self) -> Node {
        node(self.root.clone())
    }

    async fn lookup(&self, dir: &Node, name: &str) -> Result<Option<Node>> {
        let p = dir.path.join(name);
        let q = p.clone();
        match self.call("stat", move || std::fs::metadata(&q)).await {
            Ok(_) => Ok(Some(node(p))),
            Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn mkdir(&self, dir: &Node, name: &str) -> Result<Node> {
        let p = dir.path.join(name);
        let q = p.clone();
        let r = self
            .call("mkdir", move || {
                use std::os::unix::fs::DirBuilderExt;
                std::fs::DirBuilder::new().mode(0o755).create(&q)
            })
            .await;
        match r {
            Ok(()) => Ok(node(p)),
            Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(node(p)),
            Err(e) => Err(e),
        }
    }

    async fn open(&self, dir: &Node, name: &str, mode: OpenMode, owner: u32) -> Result<OpenFile> {
        let p = dir.path.join(name);
        let q = p.clone();
        let f = self
            .call("open", move || {
                let mut o = OpenOptions::new();
                o.read(true);
                match mode {
                    OpenMode::Read => {}
                    OpenMode::ReadWrite => {
                        o.write(true);
                    }
                    OpenMode::Create => {
                        o.write(true).create(true).mode(0o644);
                    }
                }
                o.open(&q)
            })
            .await?;
        Ok(OpenFile {
            node: node(p),
            stateid: StateId4::default(),
            lock_stateid: None,
            delegation: None,
            file: Some(Arc::new(f)),
            owner,
        })
    }

    async fn read(&self, f: &OpenFile, off: u64, len: u32) -> Result<u64> {
        let file = file_of(f)?;
        self.call("pread", move || {
            let mut buf = vec![0u8; len as usize];
            file.read_at(&mut buf, off).map(|n| n as u64)
        })
        .await
    }

    async fn write(&self, f: &OpenFile, off: u64, data: Bytes, sync: bool) -> Result<()> {
        let file = file_of(f)?;
        let file2 = file.clone();
        self.call("pwrite", move || file.write_all_at(&data, off))
            .await?;
        if sync {
            self.call("fdatasync", move || file2.sync_data()).await?;
        }
        Ok(())
    }

    async fn commit(&self, f: &OpenFile) -> Result<()> {
        let file = file_of(f)?;
        self.call("fdatasync", move || file.sync_data()).await
    }

    async fn close(&self, f: OpenFile) -> Result<()> {
        let file = file_of(&f)?;
        drop(f);
        self.call("close", move || {
            drop(file);
            Ok(())
        })
        .await
    }

    async fn lock(&self, f: &mut OpenFile, write: bool) -> Result<()> {
        let file = file_of(f)?;
        let typ = if write { libc::F_WRLCK } else { libc::F_RDLCK } as libc::c_short;
        self.call("fcntl(F_SETLKW)", move || fcntl_lock(&file, typ))
            .await
    }

    async fn unlock(&self, f: &mut OpenFile) -> Result<()> {
        let file = file_of(f)?;
        self.call("fcntl(F_UNLCK)", move || {
            fcntl_lock(&file, libc::F_UNLCK as libc::c_short)
        })
        .await
    }

    async fn readdir(&self, dir: &Node) -> Result<u64> {
        let p = dir.path.clone();
        self.call("readdir", move || {
            let mut n = 0;
            for e in std::fs::read_dir(&p)? {
                e?;
                n += 1;
            }
            Ok(n)
        })
        .await
    }

    async fn remove(&self, dir: &Node, name: &str) -> Result<()> {
        let p = dir.path.join(name);
        self.call("unlink", move || {
            if Path::new(&p).is_dir() {
                std::fs::remove_dir(&p)
            } else {
                std::fs::remove_file(&p)
            }
        })
        .await
    }

    async fn size(&self, n: &Node) -> Result<u64> {
        let p = n.path.clone();
        self.call("stat", move || std::fs::metadata(&p).map(|m| m.len()))
            .await
    }

    async fn symlink(&self, dir: &Node, name: &str, target: &str) -> Result<Node> {
        let (p, t) = (dir.path.join(name), PathBuf::from(target));
        let node = Node {
            fh: Bytes::new(),
            path: p.clone(),
        };
        self.call("symlink", move || std::os::unix::fs::symlink(&t, &p))
            .await?;
        Ok(node)
    }

    async fn readlink(&self, link: &Node) -> Result<u64> {
        let p = link.path.clone();
        self.call("readlink", move || {
            std::fs::read_link(&p).map(|t| t.as_os_str().len() as u64)
        })
        .await
    }

    async fn set_mode(&self, node: &Node, mode: u32) -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let p = node.path.clone();
        self.call("chmod", move || {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode))
        })
        .await
    }

    async fn fsstat(&self, node: &Node) -> Result<u64> {
        let p = node.path.clone();
        self.call("statvfs", move || {
            let c = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(p.as_os_str()))
                .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
            let mut st = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
            // SAFETY: `c` is a NUL-terminated path and `st` a buffer of
            // the size statvfs writes.
            if unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: statvfs succeeded, so it filled `st`.
            let st = unsafe { st.assume_init() };
            Ok(st.f_bavail.saturating_mul(st.f_frsize))
        })
        .await
    }

    async fn shutdown(&self) -> Result<()> {
        Ok(())
    }
}
