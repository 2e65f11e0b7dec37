//! MOUNT version 3 (RFC 1813 Appendix I), on the NFS port: MNT hands out an
//! export's root filehandle, or a directory's inside it, to a client its
//! rules admit, with the security flavors the export accepts; EXPORT
//! lists the exports and
//! whom they are for (`showmount -e`); DUMP lists who mounted what, as
//! far as MNT and UMNT told (a hint, kept in memory, bounded); UMNT and
//! UMNTALL take entries off it.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use proto::mount::*;
use proto::nfs3::List;
use rpc::{Call, Reply, ReplyError, ReplyFuture, Service};

use crate::exports::export::{ClientMatch, Flavor};
use crate::exports::filehandle::FhTarget;
use crate::instance::Server;

/// Mount-list entries kept at most (DUMP is a hint: past it, new MNTs are
/// not recorded).
const MAX_MOUNTS: usize = 4096;

/// The MOUNT program's service.
#[derive(Clone)]
pub struct MountService {
    srv: Arc<Server>,
    /// (client address, export path) of MNTs not yet UMNTed.
    mounts: Arc<Mutex<BTreeSet<(String, Bytes)>>>,
}

impl MountService {
    pub fn new(srv: Arc<Server>) -> Self {
        MountService {
            srv,
            mounts: Arc::default(),
        }
    }

    /// The export serving `want` (a normalized path): the one with the
    /// longest path that is `want` or a directory above it, and the
    /// components of `want` below that path.
    fn export_of(&self, want: &[u8]) -> Option<(Arc<crate::exports::export::Export>, Vec<Bytes>)> {
        let below = |p: &[u8]| -> Option<Vec<Bytes>> {
            let rest = if p == b"/" {
                want
            } else if want == p {
                b""
            } else {
                want.strip_prefix(p)?.strip_prefix(b"/")?
            };
            Some(
                rest.split(|b| *b == b'/')
                    .filter(|c| !c.is_empty())
                    .map(Bytes::copy_from_slice)
                    .collect(),
            )
        };
        self.srv
            .exports()
            .iter()
            .filter_map(|e| Some((e.clone(), below(e.path.as_bytes())?)))
            .max_by_key(|(e, _)| e.path.len())
    }

    /// MNT (RFC 1813 §5.2.1): the root of an export, or a directory inside
    /// one, looked up a component at a time with the caller's identity
    /// under the export's rule (as `mount SERVER:/export/sub` expects).
    async fn mnt(&self, call: &Call, path: &DirPath) -> MountRes3 {
        let peer = call.conn.peer();
        let want = normalize(&path.0);
        let Some((e, rest)) = self.export_of(&want) else {
            return MountRes3::Err(MountStat3::Noent);
        };
        if e.rules.admit(peer).is_err() {
            return MountRes3::Err(MountStat3::Acces);
        }
        let (export, root) = (e.id, e.vfs.root());
        let auth_flavors = e.rules.sec.iter().map(|f: &Flavor| f.number()).collect();
        let fh = if rest.is_empty() {
            self.srv.fh.encode(&FhTarget::Object {
                export,
                handle: root,
                parent: None,
            })
        } else {
            if rest.iter().any(|c| &c[..] == b"." || &c[..] == b"..") {
                return MountRes3::Err(MountStat3::Inval);
            }
            let cx = crate::v3::nfs3::Ctx {
                exports: self.srv.exports(),
                srv: self.srv.clone(),
                auth: call.auth.clone(),
                peer,
                xprt: None,
            };
            let walked = cx
                .vfs(export, move |v, c| {
                    let (mut dir, mut above) = (root, None);
                    let mut attr = None;
                    for name in &rest {
                        let (h, a) = v.lookup(c, &dir, name)?;
                        above = Some(std::mem::replace(&mut dir, h));
                        attr = Some(a);
                    }
                    Ok((dir, attr, above))
                })
                .await;
            match walked {
                Ok((h, Some(a), above)) if a.ftype == vfs::FileType::Directory => {
                    cx.fh(export, h, &a, above.as_ref()).data
                }
                Ok(_) => return MountRes3::Err(MountStat3::Notdir),
                Err(s) => return MountRes3::Err(mount_stat(s)),
            }
        };
        let mut m = self.mounts.lock().unwrap_or_else(|p| p.into_inner());
        if m.len() < MAX_MOUNTS {
            m.insert((peer.ip().to_string(), want));
        }
        MountRes3::Ok(MountRes3Ok {
            fhandle: FHandle3(fh),
            auth_flavors,
        })
    }

    /// EXPORT (RFC 1813 §5.2.5): each export with the clients its rules
    /// name ("*" for any).
    fn export_list(&self) -> Exports {
        List(
            self.srv
                .exports()
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

/// The MOUNT status of an NFSv3 one from walking a path.
fn mount_stat(s: proto::nfs3::NfsStat3) -> MountStat3 {
    use proto::nfs3::NfsStat3 as S;
    match s {
        S::Noent | S::Stale => MountStat3::Noent,
        S::Acces => MountStat3::Acces,
        S::Perm => MountStat3::Perm,
        S::Notdir => MountStat3::Notdir,
        S::NameTooLong => MountStat3::NameTooLong,
        S::Inval => MountStat3::Inval,
        S::Io => MountStat3::Io,
        _ => MountStat3::ServerFault,
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
                MOUNTPROC3_MNT => match crate::v3::nfs3::args::<DirPath>(&mut call) {
                    Ok(p) => Reply::success(&me.mnt(&call, &p).await),
                    Err(r) => r,
                },
                MOUNTPROC3_DUMP => Reply::success(&me.dump()),
                MOUNTPROC3_UMNT => match crate::v3::nfs3::args::<DirPath>(&mut call) {
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
