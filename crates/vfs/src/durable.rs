//! Directories made durably: what the state directory, a write log and
//! persistent sessions rest on must itself survive a power loss, and a
//! directory's name is durable only once its parent is synced.

use std::fs::{self, File};
use std::io;
use std::path::Path;

/// Makes a directory's entries durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// `create_dir_all`, with each directory it makes named durably (its
/// parent synced after it is made). Nothing is synced when `path`
/// already exists.
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    if path.is_dir() {
        return Ok(());
    }
    let mut missing = Vec::new();
    let mut p = path;
    while !p.exists() {
        missing.push(p);
        match p.parent() {
            Some(q) if !q.as_os_str().is_empty() => p = q,
            _ => break,
        }
    }
    for d in missing.iter().rev() {
        match fs::create_dir(d) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && d.is_dir() => continue,
            Err(e) => return Err(e),
        }
        let parent = match d.parent() {
            Some(q) if !q.as_os_str().is_empty() => q,
            _ => Path::new("."),
        };
        sync_dir(parent)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn makes_every_missing_level() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("a/b/c");
        super::create_dir_all(&p).unwrap();
        assert!(p.is_dir());
        super::create_dir_all(&p).unwrap();
        std::fs::write(t.path().join("f"), b"").unwrap();
        assert!(super::create_dir_all(&t.path().join("f/x")).is_err());
    }
}
