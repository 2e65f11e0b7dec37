//! The NFSv3 backend (RFC 1813): one [`client::v3::Client`] (its own MOUNT,
//! its own TCP connection to the NFS server) per benchmark client, and, for
//! workloads that lock, one connection to the server's lock manager (NLM
//! version 4, RFC 1813 Appendix II).
//!
//! NFSv3 has no OPEN or CLOSE. What a client does where NFSv4 opens a file
//! is a name lookup and a permission check, so an open here is LOOKUP +
//! ACCESS (what the Linux client sends for an open of a name it has not
//! cached), a create is CREATE (UNCHECKED, mode 0644), and a close sends
//! nothing. Locks are NLM4_LOCK / NLM4_UNLOCK of the whole file
//! (non-blocking; a conflict is an error). Every call is counted through
//! the client's observer: its procedure name is the call kind and its only
//! operation, its bytes include the RPC header and record marker.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use client::observe::{CallInfo, Observer};
use client::v3::nlm::Nlm;
use client::v3::{self, Client};
use proto::mount::{MOUNT_PROGRAM, MOUNT_V3};
use proto::nfs3::*;
use proto::nlm::{NLM4_VERS, NLM_PROG};

use crate::fs::{BenchFs, Node, OpenFile, OpenMode};
use crate::record::{call_overhead, current_phase, CallRecord, OpStats, Phase, REPLY_OVERHEAD};
use crate::{Error, Result};

/// The name a lock-manager procedure is counted under.
fn nlm_name(proc_: u32) -> &'static str {
    match proc_ {
        0 => "NLM4_NULL",
        1 => "NLM4_TEST",
        2 => "NLM4_LOCK",
        3 => "NLM4_CANCEL",
        4 => "NLM4_UNLOCK",
        _ => "NLM4_?",
    }
}

/// Where the MOUNT and NLM servers are: given in the URL, or asked of the
/// portmapper on the server's port 111 (RFC 1833 PMAPPROC_GETPORT).
async fn service_port(
    host: SocketAddr,
    given: Option<u16>,
    program: u32,
    version: u32,
    what: &str,
    option: &str,
) -> Result<SocketAddr> {
    if let Some(p) = given {
        return Ok(SocketAddr::new(host.ip(), p));
    }
    let pmap = SocketAddr::new(host.ip(), 111);
    match client::portmap::getport(pmap, program, version).await {
        Ok(Some(p)) => Ok(SocketAddr::new(host.ip(), p)),
        Ok(None) => Err(Error::Msg(format!(
            "the portmapper at {pmap} has no {what} (program {program} version {version}) over TCP; give its port with ?{option}=N"
        ))),
        Err(e) => Err(Error::Msg(format!(
            "no {option} given and the portmapper at {pmap} did not answer ({e}); give the {what} port with ?{option}=N"
        ))),
    }
}

/// An NFSv3 mount used by one benchmark client.
pub struct Nfs3Fs {
    client: Client,
    nlm: Option<Nlm>,
    stats: Arc<OpStats>,
    root: Node,
    /// Prefix of this client's NLM lock owners (unique per client).
    owner_prefix: String,
}

/// Where an `nfs3://` target's three services are.
#[derive(Debug, Clone, Copy)]
pub struct Nfs3Addrs {
    pub nfs: SocketAddr,
    pub mount: SocketAddr,
    /// `None`: the workload takes no locks, NLM is not contacted.
    pub nlm: Option<SocketAddr>,
}

impl Nfs3Addrs {
    /// Resolves the MOUNT (and, if `locks`, NLM) ports.
    pub async fn resolve(
        nfs: SocketAddr,
        mountport: Option<u16>,
        nlmport: Option<u16>,
        locks: bool,
    ) -> Result<Nfs3Addrs> {
        let mount = service_port(
            nfs,
            mountport,
            MOUNT_PROGRAM,
            MOUNT_V3,
            "MOUNT",
            "mountport",
        )
        .await?;
        let nlm = if locks {
            Some(service_port(nfs, nlmport, NLM_PROG, NLM4_VERS, "NLM", "nlmport").await?)
        } else {
            None
        };
        Ok(Nfs3Addrs { nfs, mount, nlm })
    }
}

fn observer(stats: Arc<OpStats>, call_overhead: u64, name: fn(u32) -> &'static str) -> Observer {
    Arc::new(move |c: &CallInfo| {
        let kind = name(c.proc_);
        stats.record(CallRecord {
            phase: current_phase(&stats),
            kind,
            ops: &[kind],
            bytes_sent: call_overhead + c.args_len,
            bytes_recv: if c.results_len > 0 {
                REPLY_OVERHEAD + c.results_len
            } else {
                0
            },
            queue: Duration::ZERO,
            rtt: c.rtt,
            ok: c.ok,
        })
    })
}

impl Nfs3Fs {
    /// MNT of `path` (counted as setup), a connection to the NFS server
    /// and, if `addrs.nlm`, one to the lock manager. `owner` names this
    /// client (NLM caller name and lock-owner prefix).
    pub async fn connect(
        addrs: Nfs3Addrs,
        path: &str,
        owner: String,
        stats: Arc<OpStats>,
    ) -> Result<Arc<Nfs3Fs>> {
        let auth = rpc::Auth::sys(0, 0, Vec::new(), "ferrite-bench");
        let call_overhead = call_overhead(&auth.to_opaque());
        let path = if path.is_empty() { "/" } else { path };
        let client = Client::connect(addrs.nfs, addrs.mount, path, auth.clone()).await?;
        stats.count_ops(Phase::Setup, "MNT", &["MNT"]);
        client.set_observer(observer(stats.clone(), call_overhead, v3::proc_name));
        let nlm = match addrs.nlm {
            Some(a) => {
                let n = Nlm::connect(a, &crate::runner::hostname(), auth).await?;
                n.set_observer(observer(stats.clone(), call_overhead, nlm_name));
                Some(n)
            }
            None => None,
        };
        let root = Node {
            fh: client.root().data.clone(),
            path: path.into(),
        };
        Ok(Arc::new(Nfs3Fs {
            client,
            nlm,
            stats,
            root,
            owner_prefix: owner,
        }))
    }

    fn nlm(&self) -> Result<&Nlm> {
        self.nlm
            .as_ref()
            .ok_or_else(|| Error::Msg("this workload was connected without NLM".into()))
    }

    /// The NLM owner handle and svid of worker `owner`.
    fn lock_owner(&self, owner: u32) -> (Vec<u8>, i32) {
        (
            format!("{}-lock-{owner}", self.owner_prefix).into_bytes(),
            owner as i32,
        )
    }
}

fn fh3(n: &Node) -> NfsFh3 {
    NfsFh3 { data: n.fh.clone() }
}

fn is(e: &v3::Error, s: NfsStat3) -> bool {
    e.status() == Some(s)
}

#[async_trait]
impl BenchFs for Nfs3Fs {
    fn root(&self) -> Node {
        self.root.clone()
    }

    /// LOOKUP.
    async fn lookup(&self, dir: &Node, n: &str) -> Result<Option<Node>> {
        match self.client.lookup(&fh3(dir), n).await {
            Ok(ok) => Ok(Some(Node {
                fh: ok.object.data,
                path: dir.path.join(n),
            })),
            Err(e) if is(&e, NfsStat3::Noent) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// MKDIR (mode 0755); on NFS3ERR_EXIST, LOOKUP.
    async fn mkdir(&self, dir: &Node, n: &str) -> Result<Node> {
        let attrs = Sattr3 {
            mode: Some(0o755),
            ..Default::default()
        };
        match self.client.mkdir(&fh3(dir), n, attrs).await {
            Ok(c) => Ok(Node {
                fh: c.fh.data,
                path: dir.path.join(n),
            }),
            Err(e) if is(&e, NfsStat3::Exist) => self
                .lookup(dir, n)
                .await?
                .ok_or_else(|| Error::Msg(format!("{n} exists but cannot be looked up"))),
            Err(e) => Err(e.into()),
        }
    }

    /// LOOKUP + ACCESS (read, or read and modify); create: CREATE
    /// (UNCHECKED, mode 0644; LOOKUP if the reply has no handle).
    async fn open(&self, dir: &Node, n: &str, mode: OpenMode, owner: u32) -> Result<OpenFile> {
        let fh = match mode {
            OpenMode::Read | OpenMode::ReadWrite => {
                let fh = self.client.lookup(&fh3(dir), n).await?.object;
                let want = if mode == OpenMode::Read {
                    ACCESS3_READ
                } else {
                    ACCESS3_READ | ACCESS3_MODIFY
                };
                let got = self.client.access(&fh, want).await?;
                if got & want != want {
                    return Err(Error::Msg(format!(
                        "ACCESS of {n}: asked {want:#x}, allowed {got:#x}"
                    )));
                }
                fh
            }
            OpenMode::Create => {
                let attrs = Sattr3 {
                    mode: Some(0o644),
                    ..Default::default()
                };
                self.client
                    .create(&fh3(dir), n, CreateHow3::Unchecked(attrs))
                    .await?
                    .fh
            }
        };
        Ok(OpenFile {
            node: Node {
                fh: fh.data,
                path: dir.path.join(n),
            },
            stateid: Default::default(),
            lock_stateid: None,
            delegation: None,
            file: None,
            owner,
        })
    }

    /// READ.
    async fn read(&self, f: &OpenFile, off: u64, len: u32) -> Result<u64> {
        let r = self.client.read(&fh3(&f.node), off, len).await?;
        Ok(r.data.len() as u64)
    }

    /// WRITE (FILE_SYNC or UNSTABLE); a short write is an error.
    async fn write(&self, f: &OpenFile, off: u64, data: Bytes, sync: bool) -> Result<()> {
        let stable = if sync {
            StableHow::FileSync
        } else {
            StableHow::Unstable
        };
        let len = data.len();
        let r = self.client.write(&fh3(&f.node), off, data, stable).await?;
        if (r.count as usize) < len {
            return Err(Error::Msg(format!("short WRITE: {} of {len}", r.count)));
        }
        Ok(())
    }

    /// COMMIT of the whole file.
    async fn commit(&self, f: &OpenFile) -> Result<()> {
        self.client.commit(&fh3(&f.node), 0, 0).await?;
        Ok(())
    }

    /// Nothing: NFSv3 has no close.
    async fn close(&self, _f: OpenFile) -> Result<()> {
        Ok(())
    }

    /// NLM4_LOCK of the whole file (offset 0, length 0 = to the end),
    /// non-blocking.
    async fn lock(&self, f: &mut OpenFile, write: bool) -> Result<()> {
        let (oh, svid) = self.lock_owner(f.owner);
        self.nlm()?
            .lock(&fh3(&f.node), &oh, svid, write, 0, 0)
            .await?;
        f.lock_stateid = Some(Default::default());
        Ok(())
    }

    /// NLM4_UNLOCK of the whole file.
    async fn unlock(&self, f: &mut OpenFile) -> Result<()> {
        let (oh, svid) = self.lock_owner(f.owner);
        self.nlm()?.unlock(&fh3(&f.node), &oh, svid, 0, 0).await?;
        f.lock_stateid = None;
        Ok(())
    }

    /// READDIR (count 32 KiB, like the NFSv4 backend's maxcount) until eof.
    /// The count includes `.` and `..` when the server lists them.
    async fn readdir(&self, dir: &Node) -> Result<u64> {
        let entries = self.client.readdir_all(&fh3(dir), 32768).await?;
        Ok(entries.len() as u64)
    }

    /// REMOVE.
    async fn remove(&self, dir: &Node, n: &str) -> Result<()> {
        self.client.remove(&fh3(dir), n).await?;
        Ok(())
    }

    /// RMDIR.
    async fn rmdir(&self, dir: &Node, n: &str) -> Result<()> {
        self.client.rmdir(&fh3(dir), n).await?;
        Ok(())
    }

    /// GETATTR.
    async fn size(&self, node: &Node) -> Result<u64> {
        Ok(self.client.getattr(&fh3(node)).await?.size)
    }

    /// SYMLINK.
    async fn symlink(&self, dir: &Node, n: &str, target: &str) -> Result<Node> {
        let c = self
            .client
            .symlink(&fh3(dir), n, target, Sattr3::default())
            .await?;
        Ok(Node {
            fh: c.fh.data,
            path: dir.path.join(n),
        })
    }

    /// READLINK.
    async fn readlink(&self, link: &Node) -> Result<u64> {
        Ok(self.client.readlink(&fh3(link)).await?.len() as u64)
    }

    /// SETATTR (mode, no guard).
    async fn set_mode(&self, node: &Node, mode: u32) -> Result<()> {
        let attrs = Sattr3 {
            mode: Some(mode),
            ..Default::default()
        };
        self.client
            .setattr(&fh3(node), attrs, SattrGuard3::default())
            .await?;
        Ok(())
    }

    /// FSSTAT.
    async fn fsstat(&self, node: &Node) -> Result<u64> {
        Ok(self.client.fsstat(&fh3(node)).await?.abytes)
    }

    /// UMNT (counted as teardown) and closes the connections.
    async fn shutdown(&self) -> Result<()> {
        self.stats.count_ops(Phase::Teardown, "UMNT", &["UMNT"]);
        if let Some(n) = &self.nlm {
            n.close();
        }
        self.client.unmount().await?;
        Ok(())
    }
}
