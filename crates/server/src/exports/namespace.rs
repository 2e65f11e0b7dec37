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
use std::sync::Arc;

use bytes::Bytes;
use tracing::warn;

use crate::exports::export::Export;
use crate::exports::referral::ReferralConfig;

/// The export id pseudo filehandles carry in [`super::compound::context::Fh`]: no
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
    /// A referral ([`super::referral`]), by its index.
    Referral(u16),
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
    /// A referral lies below (shown to every client).
    pub referral_below: bool,
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
    /// By number; empty when a single export is the root. A number whose
    /// directory a reload took away stays unused ([`numbering`]).
    pub nodes: Vec<Option<PseudoNode>>,
    /// The export that is the root ("/"), if any.
    pub root_export: Option<u16>,
    pub parents: HashMap<u16, Parent>,
    /// mounted_on_fileid of export roots (RFC 8881 §5.8.2.23).
    pub mounted_on: HashMap<u16, u64>,
    /// The fileid of each export's root.
    pub root_fileids: HashMap<u16, u64>,
    /// Directories of an export where another export is mounted.
    pub junctions: HashMap<(u16, vfs::Handle), u16>,
    /// Reloads since the server started: part of every pseudo directory's
    /// change attribute, since a reload may change who sees which entry
    /// even where the entries stay.
    pub generation: u64,
    /// The referrals, by index ([`Child::Referral`]).
    pub referrals: Vec<Arc<ReferralConfig>>,
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
    /// nested exports through the outer export's backend. The directories
    /// `previous` had keep their numbers (a reload).
    pub fn build(
        exports: &[Arc<Export>],
        referrals: &[Arc<ReferralConfig>],
        previous: Option<&Namespace>,
    ) -> Namespace {
        let mut ns = Namespace {
            generation: previous.map_or(0, |p| p.generation + 1),
            ..Namespace::default()
        };
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
            if !referrals.is_empty() {
                warn!("referrals need a pseudo root: with an export at \"/\" they are not served");
            }
            return ns;
        }
        // Referrals sit in pseudo directories only: not inside or above
        // an export, nor inside another referral (the configuration
        // refuses those; one left is skipped with a warning).
        let ref_comps: Vec<(u16, Vec<&str>)> = referrals
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let c = components(&r.path);
                let clash = comps.iter().any(|(_, e)| is_prefix(e, &c) || is_prefix(&c, e))
                    || referrals
                        .iter()
                        .enumerate()
                        .any(|(j, o)| {
                            let oc = components(&o.path);
                            j != i && !oc.is_empty() && is_prefix(&oc, &c)
                        });
                if c.is_empty() || clash || i >= usize::from(u16::MAX) {
                    warn!("referral {}: inside or above an export, or inside another referral: not served", r.path);
                    return None;
                }
                Some((i as u16, c))
            })
            .collect();
        ns.referrals = referrals.to_vec();
        let covered = |p: &[&str]| comps.iter().any(|(_, c)| is_prefix(c, p));
        // The pseudo nodes, sorted by path so indices are stable.
        let mut paths: Vec<Vec<&str>> = vec![Vec::new()];
        for (_, c) in comps.iter().chain(&ref_comps) {
            for k in 1..c.len() {
                let p = c[..k].to_vec();
                if !covered(&p) && !paths.contains(&p) {
                    paths.push(p);
                }
            }
        }
        paths.sort();
        let index = numbering(&paths, previous);
        let at = |p: &[&str]| paths.iter().position(|q| q[..] == p[..]).map(|x| index[x]);
        let slots = index.iter().map(|&i| usize::from(i) + 1).max().unwrap_or(0);
        ns.nodes = vec![None; slots];
        for (i, p) in paths.iter().enumerate() {
            let below = comps
                .iter()
                .filter(|(_, c)| is_prefix(p, c))
                .map(|(id, _)| *id)
                .collect();
            let parent = if p.is_empty() {
                None
            } else {
                at(&p[..p.len() - 1])
            };
            ns.nodes[usize::from(index[i])] = Some(PseudoNode {
                path: format!("/{}", p.join("/")),
                parent,
                children: Vec::new(),
                below,
                referral_below: ref_comps.iter().any(|(_, c)| is_prefix(p, c)),
                fileid: u64::from(index[i]) + 1,
                change: 0,
            });
        }
        for (i, p) in paths.iter().enumerate().skip(1) {
            let me = usize::from(index[i]);
            if let Some(parent) = ns.nodes[me].as_ref().and_then(|n| n.parent) {
                let name = Bytes::copy_from_slice(p[p.len() - 1].as_bytes());
                if let Some(pn) = ns.nodes[usize::from(parent)].as_mut() {
                    pn.children.push((name, Child::Node(index[i])));
                }
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
                    let Some(n) = at(&c[..c.len() - 1]) else {
                        continue;
                    };
                    let Some(node) = ns.nodes[usize::from(n)].as_mut() else {
                        continue;
                    };
                    let name = Bytes::copy_from_slice(c[c.len() - 1].as_bytes());
                    node.children.push((name, Child::Export(*id)));
                    ns.parents.insert(*id, Parent::Pseudo(n));
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
        for (i, c) in &ref_comps {
            let Some(node) = at(&c[..c.len() - 1]).and_then(|n| ns.nodes[usize::from(n)].as_mut())
            else {
                continue;
            };
            let name = Bytes::copy_from_slice(c[c.len() - 1].as_bytes());
            node.children.push((name, Child::Referral(*i)));
        }
        for n in ns.nodes.iter_mut().flatten() {
            n.children.sort_by(|a, b| a.0.cmp(&b.0));
            let mut h = 0xcbf2_9ce4_8422_2325;
            if ns.generation > 0 {
                h = fnv(&ns.generation.to_be_bytes(), h);
            }
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
        self.nodes.iter().any(Option::is_some)
    }

    pub fn node(&self, i: u16) -> Option<&PseudoNode> {
        self.nodes.get(i as usize)?.as_ref()
    }

    /// Referral `i`, if it is one.
    pub fn referral(&self, i: u16) -> Option<&Arc<ReferralConfig>> {
        self.referrals.get(usize::from(i))
    }

    /// The entry `name` of node `i`.
    pub fn child(&self, i: u16, name: &[u8]) -> Option<Child> {
        self.node(i)?
            .children
            .iter()
            .find(|(n, _)| &n[..] == name)
            .map(|(_, c)| *c)
    }
}

/// The number of each of `paths` (sorted): its number in `previous` if it
/// was there; otherwise the next one above every number `previous` used,
/// so that a filehandle of a directory a reload took away is stale rather
/// than another directory's. Without `previous` (or should the numbers
/// run out), positions in the sorted order.
fn numbering(paths: &[Vec<&str>], previous: Option<&Namespace>) -> Vec<u16> {
    let fresh = || (0..paths.len()).map(|i| i as u16).collect();
    let Some(prev) = previous.filter(|p| p.active()) else {
        return fresh();
    };
    let mut next = prev.nodes.len();
    let mut out = Vec::with_capacity(paths.len());
    for p in paths {
        let path = format!("/{}", p.join("/"));
        let kept = prev
            .nodes
            .iter()
            .position(|n| n.as_ref().is_some_and(|n| n.path == path));
        match kept {
            Some(i) => out.push(i as u16),
            None if next < usize::from(u16::MAX) => {
                out.push(next as u16);
                next += 1;
            }
            None => {
                warn!("pseudo filesystem: numbers exhausted by reloads; renumbered");
                return fresh();
            }
        }
    }
    out
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
    use crate::exports::export::ExportRules;

    fn export(id: u16, path: &str, dir: &std::path::Path) -> Arc<Export> {
        Arc::new(Export {
            id,
            path: path.into(),
            vfs: Arc::new(vfs::local::LocalFs::new(dir).unwrap()),
            fsid: (0x4645_5252, id as u64 + 1),
            rules: ExportRules::open(),
            log: None,
            delegations: false,
            shared_locks: false,
            pnfs: None,
        })
    }

    fn paths(ns: &Namespace) -> Vec<Option<&str>> {
        ns.nodes
            .iter()
            .map(|n| n.as_ref().map(|n| n.path.as_str()))
            .collect()
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
        let ns = Namespace::build(&ex, &[], None);
        assert!(ns.active());
        assert_eq!(paths(&ns), [Some("/"), Some("/home")]);
        assert_eq!(ns.child(0, b"data"), Some(Child::Export(0)));
        assert_eq!(ns.child(0, b"home"), Some(Child::Node(1)));
        assert_eq!(ns.child(1, b"shared"), Some(Child::Export(1)));
        assert_eq!(ns.child(0, b"x"), None);
        assert_eq!(ns.parents[&0], Parent::Pseudo(0));
        assert_eq!(ns.parents[&1], Parent::Pseudo(1));
        assert!(matches!(ns.parents[&2], Parent::Junction { export: 0, .. }));
        assert_eq!(ns.junctions.len(), 1);
        assert_eq!(ns.node(1).unwrap().below, vec![1]);
        assert_eq!(ns.node(0).unwrap().below.len(), 3);

        let single = Namespace::build(&[export(0, "/", a.path())], &[], None);
        assert!(!single.active());
        assert_eq!(single.root_export, Some(0));
    }

    /// A reload keeps the numbers (and fileids) of the pseudo directories
    /// that stay, gives new ones numbers never used before, and leaves
    /// the number of one that went unused: its filehandles are stale, not
    /// another directory's.
    #[test]
    fn reload_keeps_numbers() {
        let a = tempfile::tempdir().unwrap();
        let first = Namespace::build(
            &[
                export(0, "/home/a", a.path()),
                export(1, "/srv/b", a.path()),
            ],
            &[],
            None,
        );
        assert_eq!(paths(&first), [Some("/"), Some("/home"), Some("/srv")]);
        let second = Namespace::build(
            &[
                export(1, "/srv/b", a.path()),
                export(2, "/data/c", a.path()),
                export(3, "/mnt/d", a.path()),
            ],
            &[],
            Some(&first),
        );
        assert_eq!(
            paths(&second),
            [Some("/"), None, Some("/srv"), Some("/data"), Some("/mnt")]
        );
        assert_eq!(
            second.node(2).unwrap().fileid,
            first.node(2).unwrap().fileid
        );
        assert_eq!(second.node(1).map(|n| &n.path), None);
        assert_eq!(second.child(0, b"srv"), Some(Child::Node(2)));
        assert_eq!(second.child(0, b"data"), Some(Child::Node(3)));
        assert_eq!(second.child(0, b"home"), None);
        assert_eq!(second.child(3, b"c"), Some(Child::Export(2)));
        assert_eq!(second.parents[&3], Parent::Pseudo(4));
        // The root's listing changed, and with it its change attribute.
        assert_ne!(
            second.node(0).unwrap().change,
            first.node(0).unwrap().change
        );
        // Back to a single export at "/": no pseudo filesystem; and from
        // there a fresh numbering.
        let root = Namespace::build(&[export(5, "/", a.path())], &[], Some(&second));
        assert!(!root.active());
        let again = Namespace::build(&[export(0, "/x/y", a.path())], &[], Some(&root));
        assert_eq!(paths(&again), [Some("/"), Some("/x")]);
    }

    /// Referrals hang in pseudo directories, made for them where needed;
    /// one inside or above an export, or inside another referral, is left
    /// out.
    #[test]
    fn referrals_in_the_pseudo_filesystem() {
        use crate::exports::referral::{Location, ReferralConfig};
        let a = tempfile::tempdir().unwrap();
        let r = |p: &str| {
            Arc::new(ReferralConfig {
                path: p.into(),
                locations: vec![Location::parse("10.0.0.2:/x").unwrap()],
            })
        };
        let ns = Namespace::build(
            &[export(0, "/data", a.path())],
            &[
                r("/far"),
                r("/remote/b"),
                r("/data/in"),
                r("/remote/b/c"),
                r("/"),
            ],
            None,
        );
        assert_eq!(paths(&ns), [Some("/"), Some("/remote")]);
        assert_eq!(ns.child(0, b"far"), Some(Child::Referral(0)));
        assert_eq!(ns.child(0, b"remote"), Some(Child::Node(1)));
        assert_eq!(ns.child(1, b"b"), Some(Child::Referral(1)));
        assert_eq!(ns.child(0, b"data"), Some(Child::Export(0)));
        assert!(ns.node(0).unwrap().referral_below);
        assert!(ns.node(1).unwrap().referral_below);
        assert!(ns.node(1).unwrap().below.is_empty());
        assert_eq!(ns.referral(0).unwrap().path, "/far");
        assert_eq!(ns.referral(1).unwrap().path, "/remote/b");
    }
}
