//! MOUNT version 3 (RFC 1813 Appendix I), on the NFS port: MNT hands out an
//! export's root filehandle to a client its rules admit, with the
//! security flavors the export accepts; EXPORT lists the exports and
//! whom they are for (`showmount -e`); DUMP lists who mounted what, as
//! far as MNT and UMNT told (a hint, kept in memory, bounded); UMNT and
//! UMNTALL take entries off it.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use proto::mount::*;
use proto::nfs3::List;
use rpc::{Call, Reply, ReplyError, ReplyFuture, Service};

use crate::export::{ClientMatch, Flavor};
use crate::nfs4::filehandle::FhTarget;
use crate::nfs4::Nfs4Server;

/// Mount-list entries kept at most (DUMP is a hint: past it, new MNTs are
/// not recorded).
const MAX_MOUNTS: usize = 4096;

/// The MOUNT program's service.
#[derive(Clone)]
pub struct MountService {
    srv: Arc<Nfs4Server>,
    /// (client address, export path) of MNTs not yet UMNTed.
    mounts: Arc<Mutex<BTreeSet<(String, Bytes)>>>,
}

impl MountService {
    pub fn new(srv: Arc<Nfs4Server>) -> Self {
        MountService {
            srv,
            mounts: Arc::default(),
        }
    }

    /// MNT (RFC 1813 §5.2.1).
    fn mnt(&self, call: &Call, path: &DirPath) -> MountRes3 {
        let peer = call.conn.peer();
        let want = normalize(&path.0);
        let Some(e) = self
            .srv
            .exports
            .iter()
            .find(|e| e.path.as_bytes() == &want[..])
        else {
            return MountRes3::Err(MountStat3::Noent);
        };
        if e.rules.admit(peer).is_err() {
            return MountRes3::Err(MountStat3::Acces);
        }
        let root = e.vfs.root();
        let fh = self.srv.fh.encode(&FhTarget::Object {
            export: e.id,
            handle: root,
            parent: None,
        });
        let mut m = self.mounts.lock().unwrap_or_else(|p| p.into_inner());
        if m.len() < MAX_MOUNTS {
            m.insert((peer.ip().to_string(), want));
        }
        MountRes3::Ok(MountRes3Ok {
            fhandle: FHandle3(fh),
            auth_flavors: e.rules.sec.iter().map(|f: &Flavor| f.number()).collect(),
        })
    }

    /// EXPORT (RFC 1813 §5.2.5): each export with the clients its rules
    /// name ("*" for any).
    fn export_list(&self) -> Exports {
        List(
            self.srv
                .exports
                .iter()
                .map(|e| ExportNode {
                    ex_dir: DirPath(Bytes::from(e.path.clone())),
                    ex_groups: List(
                        e.rules
                            .clients
                            .iter()
                            .map(|r| {
                                Name(Bytes::from(match &r.matches {
                                    ClientMatch::Any => "*".to_string(),
                                    ClientMatch::Net { addr, prefix } => format!("{addr}/{prefix}"),
                                    ClientMatch::Host { name, .. } => name.clone(),
                                }))
                            })
                            .collect(),
                    ),
                })
                .collect(),
        )
    }

    fn dump(&self) -> MountList {
        let m = self.mounts.lock().unwrap_or_else(|p| p.into_inner());
        List(
            m.iter()
                .map(|(host, dir)| MountBody {
                    ml_hostname: Name(Bytes::from(host.clone())),
                    ml_directory: DirPath(dir.clone()),
                })
                .collect(),
        )
    }

    fn umnt(&self, call: &Call, path: Option<&DirPath>) {
        let host = call.conn.peer().ip().to_string();
        let mut m = self.mounts.lock().unwrap_or_else(|p| p.into_inner());
        match path {
            Some(p) => {
                m.remove(&(host, normalize(&p.0)));
            }
            None => m.retain(|(h, _)| *h != host),
        }
    }
}

/// An export path as the configuration spells it: one leading "/", no
/// trailing or doubled ones.
fn normalize(p: &Bytes) -> Bytes {
    let parts: Vec<&[u8]> = p.split(|b| *b == b'/').filter(|s| !s.is_empty()).collect();
    let mut out = Vec::with_capacity(p.len() + 1);
    for s in &parts {
        out.push(b'/');
        out.extend_from_slice(s);
    }
    if out.is_empty() {
        out.push(b'/');
    }
    Bytes::from(out)
}

impl Service for MountService {
    fn call(&self, mut call: Call) -> ReplyFuture {
        let me = self.clone();
        Box::pin(async move {
            match call.proc_ {
                MOUNTPROC3_MNT => match crate::nfs3::args::<DirPath>(&mut call) {
                    Ok(p) => Reply::success(&me.mnt(&call, &p)),
                    Err(r) => r,
                },
                MOUNTPROC3_DUMP => Reply::success(&me.dump()),
                MOUNTPROC3_UMNT => match crate::nfs3::args::<DirPath>(&mut call) {
                    Ok(p) => {
                        me.umnt(&call, Some(&p));
                        Reply::Success(Vec::new())
                    }
                    Err(r) => r,
                },
                MOUNTPROC3_UMNTALL => {
                    me.umnt(&call, None);
                    Reply::Success(Vec::new())
                }
                MOUNTPROC3_EXPORT => Reply::success(&me.export_list()),
                _ => Reply::Error(ReplyError::ProcUnavail),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_normalized() {
        for (given, want) in [
            ("/", "/"),
            ("", "/"),
            ("//data/", "/data"),
            ("/a//b", "/a/b"),
        ] {
            assert_eq!(&normalize(&Bytes::from(given))[..], want.as_bytes());
        }
    }
}
