//! One fixture per backend, and shorthands for the tests.

use std::os::unix::fs::PermissionsExt;

use tempfile::TempDir;
use vfs::local::LocalFs;
use vfs::mem::MemFs;
use vfs::{Attr, CreateKind, CreateMode, Creds, Errno, Handle, SetAttr, Vfs};

/// A backend whose root is a directory owned by 0:0 with mode 0777.
pub struct Fx {
    pub fs: Box<dyn Vfs>,
    pub root: Handle,
    pub name: &'static str,
    _dir: Option<TempDir>,
}

fn local() -> Fx {
    let dir = TempDir::new().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let fs = LocalFs::new(dir.path()).unwrap();
    Fx {
        root: fs.root(),
        fs: Box::new(fs),
        name: "LocalFs",
        _dir: Some(dir),
    }
}

fn mem() -> Fx {
    let fs = MemFs::default();
    fs.setattr(&root(), &fs.root(), &mode(0o777)).unwrap();
    Fx {
        root: fs.root(),
        fs: Box::new(fs),
        name: "MemFs",
        _dir: None,
    }
}

/// Runs `case` against a fresh `LocalFs` and a fresh `MemFs`.
pub fn each(case: impl Fn(&Fx)) {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(
        euid, 0,
        "run as root (CI and ./test.sh do): LocalFs checks other users' permissions by switching fsuid"
    );
    for fx in [local(), mem()] {
        eprintln!("--- {}", fx.name);
        case(&fx);
    }
}

pub fn root() -> Creds {
    Creds::root()
}

pub fn user(uid: u32) -> Creds {
    Creds {
        uid,
        gid: uid,
        groups: vec![],
    }
}

pub fn mode(m: u32) -> SetAttr {
    SetAttr {
        mode: Some(m),
        ..Default::default()
    }
}

pub fn err(e: i32) -> Errno {
    Errno(e)
}

impl Fx {
    /// Creates a regular file as `c` with `mode`.
    pub fn file_as(&self, c: &Creds, dir: &Handle, name: &str, m: u32) -> Handle {
        self.fs
            .create_file(c, dir, name.as_bytes(), CreateMode::Guarded, &mode(m))
            .unwrap_or_else(|e| panic!("{}: create {name}: {e}", self.name))
            .0
    }

    pub fn file(&self, dir: &Handle, name: &str) -> Handle {
        self.file_as(&root(), dir, name, 0o644)
    }

    /// Creates a directory as `c` with `mode`.
    pub fn dir_as(&self, c: &Creds, dir: &Handle, name: &str, m: u32) -> Handle {
        self.fs
            .create(c, dir, name.as_bytes(), &CreateKind::Directory, &mode(m))
            .unwrap_or_else(|e| panic!("{}: mkdir {name}: {e}", self.name))
            .0
    }

    pub fn dir(&self, dir: &Handle, name: &str) -> Handle {
        self.dir_as(&root(), dir, name, 0o755)
    }

    pub fn attr(&self, h: &Handle) -> Attr {
        self.fs.getattr(h).unwrap()
    }

    pub fn set(&self, c: &Creds, h: &Handle, set: SetAttr) -> Result<Attr, Errno> {
        self.fs.setattr(c, h, &set)
    }

    /// chown and chmod as root.
    pub fn own(&self, h: &Handle, uid: u32, gid: u32, m: u32) {
        let set = SetAttr {
            uid: Some(uid),
            gid: Some(gid),
            mode: Some(m),
            ..Default::default()
        };
        self.fs.setattr(&root(), h, &set).unwrap();
    }

    pub fn write(&self, c: &Creds, h: &Handle, off: u64, data: &[u8]) -> Result<(), Errno> {
        self.fs
            .write(c, h, off, data, vfs::Stability::Unstable)
            .map(drop)
    }

    pub fn read_all(&self, h: &Handle) -> Vec<u8> {
        self.fs.read(&root(), h, 0, 1 << 20).unwrap().0.to_vec()
    }

    pub fn lookup(&self, dir: &Handle, name: &str) -> Result<Handle, Errno> {
        self.fs
            .lookup(&root(), dir, name.as_bytes())
            .map(|(h, _)| h)
    }
}
