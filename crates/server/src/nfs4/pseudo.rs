//! The pseudo filesystem (RFC 8881 §7.3, §7.4): the read-only directories
//! that join the exports into one namespace.
//!
//! With a single export at "/" there is no pseudo filesystem: PUTROOTFH is
//! that export's root. Otherwise the root and every path component leading
//! to an export, and not inside another export, is a pseudo node: a
//! directory owned by root, mode 0555, on its own fsid, whose entries are
//! child pseudo nodes and export roots. An export whose path lies inside
//! another export (say "/data/archive" below "/data") is reached through a
//! junction: the directory of the outer export at that path, which LOOKUP
//! crosses into the inner export's root.

use std::collections::HashMap;
use std::net::IpAddr;

use bytes::Bytes;
use tracing::warn;

use crate::export::Export;

/// The export id pseudo filehandles carry in [`super::compound::Fh`]: no
/// real export has it, so a backend call for a pseudo node answers
/// NFS4ERR_STALE rather than reaching an export.
pub const PSEUDO_EXPORT: u16 = u16::MAX;

/// The pseudo filesystem's fsid; exports have (0x46455252, id + 1).
pub const PSEUDO_FSID: (u64, u64) = (0x4645_5252, 0);

/// What a name in a pseudo node leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Child {
    Node(u16),
    Export(u16),
}

/// A directory of the pseudo filesystem.
#[derive(Debug, Clone)]
pub struct PseudoNode {
    /// Its path ("/" for the root, "/home" ...).
    pub path: String,
    /// None for the root.
    pub parent: Option<u16>,
    /// Entries, sorted by name.
    pub children: Vec<(Bytes, Child)>,
    /// Every export at or below this node (for hiding nodes that lead
    /// only to exports a client may not use).
    pub below: Vec<u16>,
    pub fileid: u64,
    /// Constant for a given configuration.
    pub change: u64,
}

/// Where LOOKUPP from an export's root leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parent {
    /// The export is the namespace root: NFS4ERR_NOENT.
    None,
    Pseudo(u16),
    /// A directory of another export (the junction itself).
    Junction {
        export: u16,
        handle: vfs::Handle,
    },
}

/// The namespace: pseudo nodes and how exports hang off them.
#[derive(Debug, Default)]
pub struct Namespace {
    /// Empty when a single export is the root.
    pub nodes: Vec<PseudoNode>,
    /// The export that is the root ("/"), if any.
    pub root_export: Option<u16>,
    pub parents: HashMap<u16, Parent>,
    /// mounted_on_fileid of export roots (RFC 8881 §5.8.2.23).
    pub mounted_on: HashMap<u16, u64>,
    /// The fileid of each export's root.
    pub root_fileids: HashMap<u16, u64>,
    /// Directories of an export where another export is mounted.
    pub junctions: HashMap<(u16, vfs::Handle), u16>,
}

/// The path components of an export path.
pub fn components(path: &str) -> Vec<&str> {
    path.split('/').filter(|c| !c.is_empty()).collect()
}

fn is_prefix(p: &[&str], of: &[&str]) -> bool {
    p.len() <= of.len() && p.iter().zip(of).all(|(a, b)| a == b)
}

fn fnv(data: &[u8], mut h: u64) -> u64 {
    for b in data {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// The pseudo fileid an export root is mounted on.
fn junction_fileid(export: u16) -> u64 {
    0x1_0000 + export as u64
}

impl Namespace {
    /// Lays out the namespace of `exports`, resolving the junctions of
    /// nested exports through the outer export's backend.
    pub fn build(exports: &[Export]) -> Namespace {
        let mut ns = Namespace::default();
        for e in exports {
            match e.vfs.getattr(&e.vfs.root()) {
                Ok(a) => {
                    ns.root_fileids.insert(e.id, a.fileid);
                }
                Err(err) => warn!("export {}: root unreadable: {err}", e.path),
            }
        }
        let comps: Vec<(u16, Vec<&str>)> = exports
            .iter()
            .map(|e| (e.id, components(&e.path)))
            .collect();
        if let Some((id, _)) = comps.iter().find(|(_, c)| c.is_empty()) {
            // A root export: no pseudo filesystem (configurations with a
            // root export and others are refused before we get here).
            ns.root_export = Some(*id);
            for e in exports {
                ns.parents.insert(e.id, Parent::None);
            }
            return ns;
        }
        let covered = |p: &[&str]| comps.iter().any(|(_, c)| is_prefix(c, p));
        // The pseudo nodes, sorted by path so indices are stable.
        let mut paths: Vec<Vec<&str>> = vec![Vec::new()];
        for (_, c) in &comps {
            for k in 1..c.len() {
                let p = c[..k].to_vec();
                if !covered(&p) && !paths.contains(&p) {
                    paths.push(p);
                }
            }
        }
        paths.sort();
        for (i, p) in paths.iter().enumerate() {
            let below = comps
                .iter()
                .filter(|(_, c)| is_prefix(p, c))
                .map(|(id, _)| *id)
                .collect();
            let parent = if p.is_empty() {
                None
            } else {
                paths
                    .iter()
                    .position(|q| q[..] == p[..p.len() - 1])
                    .map(|x| x as u16)
            };
            ns.nodes.push(PseudoNode {
                path: format!("/{}", p.join("/")),
                parent,
                children: Vec::new(),
                below,
                fileid: i as u64 + 1,
                change: 0,
            });
        }
        for (i, p) in paths.iter().enumerate().skip(1) {
            if let Some(parent) = ns.nodes[i].parent {
                let name = Bytes::copy_from_slice(p[p.len() - 1].as_bytes());
                ns.nodes[parent as usize]
                    .children
                    .push((name, Child::Node(i as u16)));
            }
        }
        for (id, c) in &comps {
            // The innermost other export containing this one, if any.
            let outer = comps
                .iter()
                .filter(|(o, oc)| o != id && oc.len() < c.len() && is_prefix(oc, c))
                .max_by_key(|(_, oc)| oc.len());
            match outer {
                None => {
                    let parent = &c[..c.len() - 1];
                    let Some(n) = paths.iter().position(|q| q[..] == parent[..]) else {
                        continue;
                    };
                    let name = Bytes::copy_from_slice(c[c.len() - 1].as_bytes());
                    ns.nodes[n].children.push((name, Child::Export(*id)));
                    ns.parents.insert(*id, Parent::Pseudo(n as u16));
                    ns.mounted_on.insert(*id, junction_fileid(*id));
                }
                Some((oid, oc)) => {
                    let Some(outer) = exports.iter().find(|e| e.id == *oid) else {
                        continue;
                    };
                    match resolve(outer, &c[oc.len()..]) {
                        Ok((handle, attr)) => {
                            ns.junctions.insert((*oid, handle.clone()), *id);
                            ns.mounted_on.insert(*id, attr.fileid);
                            ns.parents.insert(
                                *id,
                                Parent::Junction {
                                    export: *oid,
                                    handle,
                                },
                            );
                        }
                        Err(e) => warn!(
                            "export {} is inside export {} but its directory there \
                             cannot be found ({e}): it is reachable only by filehandle",
                            exports
                                .iter()
                                .find(|x| x.id == *id)
                                .map_or("?", |x| &x.path),
                            outer.path
                        ),
                    }
                }
            }
        }
        for n in &mut ns.nodes {
            n.children.sort_by(|a, b| a.0.cmp(&b.0));
            let mut h = 0xcbf2_9ce4_8422_2325;
            for (name, _) in &n.children {
                h = fnv(name, h);
                h = fnv(b"/", h);
            }
            n.change = h;
        }
        ns
    }

    /// The mounted_on_fileid to report for the object `fileid` of
    /// `export`, when it is that export's root and the export is mounted
    /// on something.
    pub fn root_mounted_on(&self, export: u16, fileid: u64) -> Option<u64> {
        if self.root_fileids.get(&export) == Some(&fileid) {
            self.mounted_on.get(&export).copied()
        } else {
            None
        }
    }

    /// Whether there is a pseudo filesystem at all.
    pub fn active(&self) -> bool {
        !self.nodes.is_empty()
    }

    pub fn node(&self, i: u16) -> Option<&PseudoNode> {
        self.nodes.get(i as usize)
    }

    /// The entry `name` of node `i`.
    pub fn child(&self, i: u16, name: &[u8]) -> Option<Child> {
        self.node(i)?
            .children
            .iter()
            .find(|(n, _)| &n[..] == name)
            .map(|(_, c)| *c)
    }

    /// Whether a client at `peer` sees `child` in a pseudo directory: an
    /// export it has a rule for, or a node leading to one.
    pub fn visible(&self, exports: &[Export], child: Child, peer: IpAddr) -> bool {
        let has_rule = |id: u16| {
            exports
                .iter()
                .find(|e| e.id == id)
                .is_some_and(|e| e.rules.rule_for(peer).is_some())
        };
        match child {
            Child::Export(id) => has_rule(id),
            Child::Node(n) => self
                .node(n)
                .is_some_and(|n| n.below.iter().any(|&id| has_rule(id))),
        }
    }
}

/// Walks `comps` from `outer`'s root with the server's authority.
fn resolve(outer: &Export, comps: &[&str]) -> vfs::Result<(vfs::Handle, vfs::Attr)> {
    let fs = &outer.vfs;
    let root = vfs::Creds::root();
    let mut h = fs.root();
    let mut a = fs.getattr(&h)?;
    for c in comps {
        (h, a) = fs.lookup(&root, &h, c.as_bytes())?;
    }
    if a.ftype != vfs::FileType::Directory {
        return Err(vfs::Errno(libc::ENOTDIR));
    }
    Ok((h, a))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::ExportRules;
    use std::sync::Arc;

    fn export(id: u16, path: &str, dir: &std::path::Path) -> Export {
        Export {
            id,
            path: path.into(),
            vfs: Arc::new(vfs::local::LocalFs::new(dir).unwrap()),
            fsid: (0x4645_5252, id as u64 + 1),
            rules: ExportRules::open(),
            log: None,
            delegations: false,
        }
    }

    #[test]
    fn layout() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(a.path().join("x/y")).unwrap();
        let ex = vec![
            export(0, "/data", a.path()),
            export(1, "/home/shared", b.path()),
            export(2, "/data/x/y", b.path()),
        ];
        let ns = Namespace::build(&ex);
        assert!(ns.active());
        let paths: Vec<&str> = ns.nodes.iter().map(|n| n.path.as_str()).collect();
        assert_eq!(paths, ["/", "/home"]);
        assert_eq!(ns.child(0, b"data"), Some(Child::Export(0)));
        assert_eq!(ns.child(0, b"home"), Some(Child::Node(1)));
        assert_eq!(ns.child(1, b"shared"), Some(Child::Export(1)));
        assert_eq!(ns.child(0, b"x"), None);
        assert_eq!(ns.parents[&0], Parent::Pseudo(0));
        assert_eq!(ns.parents[&1], Parent::Pseudo(1));
        assert!(matches!(ns.parents[&2], Parent::Junction { export: 0, .. }));
        assert_eq!(ns.junctions.len(), 1);
        assert_eq!(ns.nodes[1].below, vec![1]);
        assert_eq!(ns.nodes[0].below.len(), 3);

        let single = Namespace::build(&[export(0, "/", a.path())]);
        assert!(!single.active());
        assert_eq!(single.root_export, Some(0));
    }
}
