//! The file sets under `ferrite-bench/`: their names, their layout (files
//! in `dK` directories, the 5-ary tree) and their resolved nodes.

use crate::fs::Node;

/// Files per subdirectory of a `files-*` set.
pub const FILES_PER_DIR: u64 = 1000;
/// Filebench's fileserver and webserver: a mean directory width of 20.
pub const PERSONALITY_DIR_WIDTH: u64 = 20;
/// Entries per directory of a `tree-*` set.
pub const TREE_WIDTH: u64 = 5;
/// The directory all file sets live in, under the target's path.
pub const BENCH_DIR: &str = "ferrite-bench";

/// A prepared file set, under `ferrite-bench/` in the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileSet {
    None,
    /// `n` files of `size` bytes: `large-SIZE`, then `large-SIZE.1` ...
    /// `large-SIZE.{n-1}` (so one file is `large-SIZE`, as before sets
    /// of several existed).
    Large {
        size: u64,
        n: u64,
    },
    /// `KIND-NxSIZE/dK/fI`, 1000 files per `dK`; KIND is "files", or
    /// the personality whose runs change the set.
    Files {
        n: u64,
        size: u64,
        kind: &'static str,
    },
    /// `tree-N/…`: a 5-ary directory tree whose leaves hold 5 empty files.
    Tree {
        n: u64,
    },
}

impl FileSet {
    pub fn name(&self) -> String {
        match self {
            FileSet::None => String::new(),
            FileSet::Large { size, n: 1 } => format!("large-{size}"),
            FileSet::Large { size, n } => format!("large-{n}x{size}"),
            FileSet::Files { n, size, kind } => format!("{kind}-{n}x{size}"),
            FileSet::Tree { n } => format!("tree-{n}"),
        }
    }

    pub(super) fn marker(&self) -> String {
        format!("{}.ready", self.name())
    }

    /// The name of file `i` of a `large` set (in `ferrite-bench/`).
    pub fn large_file(&self, i: u64) -> String {
        match self {
            FileSet::Large { size, .. } if i == 0 => format!("large-{size}"),
            FileSet::Large { size, .. } => format!("large-{size}.{i}"),
            _ => String::new(),
        }
    }

    /// Files per `dK` directory of a `files` set: Filebench's width for
    /// the fileserver and webserver sets (20), one directory for
    /// varmail's, [`FILES_PER_DIR`] otherwise.
    pub fn per_dir(&self) -> u64 {
        match self {
            FileSet::Files {
                kind: "fileserver" | "webserver",
                ..
            } => PERSONALITY_DIR_WIDTH,
            FileSet::Files {
                kind: "varmail", ..
            } => u64::MAX,
            _ => FILES_PER_DIR,
        }
    }
}

/// Depth of the tree for `n` files: leaves (5 files each) are addressed by
/// `depth` base-5 digits.
pub fn tree_depth(n: u64) -> u32 {
    let leaves = n.div_ceil(TREE_WIDTH).max(1);
    let mut d = 1;
    let mut cap = TREE_WIDTH;
    while cap < leaves {
        cap *= TREE_WIDTH;
        d += 1;
    }
    d
}

/// The directory path (relative to the set) of leaf `l`.
pub fn tree_leaf(l: u64, depth: u32) -> Vec<String> {
    let mut digits = Vec::with_capacity(depth as usize);
    let mut x = l;
    for _ in 0..depth {
        digits.push(format!("d{}", x % TREE_WIDTH));
        x /= TREE_WIDTH;
    }
    digits.reverse();
    digits
}

/// Every directory of the tree (relative paths, parents before children;
/// the set's own directory is the empty path).
pub fn tree_dirs(n: u64) -> Vec<Vec<String>> {
    let depth = tree_depth(n);
    let leaves = n.div_ceil(TREE_WIDTH).max(1);
    let mut seen = std::collections::BTreeSet::new();
    for l in 0..leaves {
        let p = tree_leaf(l, depth);
        for k in 0..=p.len() {
            seen.insert(p[..k].to_vec());
        }
    }
    let mut v: Vec<Vec<String>> = seen.into_iter().collect();
    v.sort_by_key(|p| p.len());
    v
}

/// The resolved nodes of a file set, shared by every worker of a run.
#[derive(Debug, Clone)]
pub struct SetNodes {
    /// `ferrite-bench/`.
    pub bench: Node,
    /// The set's directory (files, tree) or `ferrite-bench/` (large).
    pub base: Node,
    /// files: `dK` directories; tree: every directory.
    pub dirs: Vec<Node>,
    /// files: how many files each `dK` holds ([`FileSet::per_dir`]).
    pub per_dir: u64,
}

impl SetNodes {
    /// The directory of file `i` of a `files` set.
    pub fn dir_of(&self, i: u64) -> &Node {
        &self.dirs[(i / self.per_dir.max(1)) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_shape() {
        assert_eq!(tree_depth(50_000), 6);
        assert_eq!(tree_depth(5), 1);
        assert_eq!(tree_depth(26), 2);
        let dirs = tree_dirs(50_000);
        // 10,000 leaves plus their ancestors.
        let leaves = dirs.iter().filter(|d| d.len() == 6).count();
        assert_eq!(leaves, 10_000);
        let entries = 50_000 + dirs.len() - 1;
        let width = entries as f64 / dirs.len() as f64;
        assert!((4.5..=5.5).contains(&width), "mean width {width}");
        assert_eq!(tree_leaf(7, 2), vec!["d1".to_string(), "d2".to_string()]);
    }
}
