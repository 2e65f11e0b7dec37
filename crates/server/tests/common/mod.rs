//! Shared by the per-operation tests (`ops_*.rs`): a server over
//! `vfs::mem` on a manual clock, builders for the usual operations, and
//! accessors for their results, so each test states only what it checks.

// Each test file uses its own part of this module.
#![allow(dead_code, unused_imports)]

use std::sync::Arc;
use std::time::Duration;

pub use bytes::Bytes;
pub use proto::nfs4::*;
pub use server::exports::export::{ExportRules, Flavor};
pub use server::nfs4::inproc::{ClientOpts, InProcess, Session};

/// The lease of every test server.
pub const LEASE: Duration = Duration::from_secs(10);

/// A server with one open export of an empty `MemFs` at "/".
pub fn server() -> InProcess {
    InProcess::new(Arc::new(vfs::mem::MemFs::default()), LEASE)
}

/// A server whose only export, at "/", is read-only for everyone and
/// holds file "f" (mode 0666) with `b"data"`.
pub fn read_only_server() -> InProcess {
    let mut rules = ExportRules::open();
    rules.clients[0].read_only = true;
    let e = export(1, "/", rules);
    let (fs, root, c) = (&e.vfs, e.vfs.root(), vfs::Creds::root());
    let set = vfs::SetAttr {
        mode: Some(0o666),
        ..Default::default()
    };
    let made = fs
        .create_file(&c, &root, b"f", vfs::CreateMode::Guarded, &set)
        .and_then(|(f, _, _)| fs.write(&c, &f, 0, b"data", vfs::Stability::FileSync));
    assert!(made.is_ok(), "{made:?}");
    InProcess::with_exports(vec![e], LEASE)
}

/// A server just restarted, in its grace period for the clients named in
/// `recorded`, whose export holds file "f" (mode 0666, empty).
pub fn restarted_server(recorded: &[&str]) -> InProcess {
    use vfs::Vfs;
    let fs = vfs::mem::MemFs::default();
    let set = vfs::SetAttr {
        mode: Some(0o666),
        ..Default::default()
    };
    let made = fs.create_file(
        &vfs::Creds::root(),
        &fs.root(),
        b"f",
        vfs::CreateMode::Guarded,
        &set,
    );
    assert!(made.is_ok(), "{made:?}");
    InProcess::after_restart(Arc::new(fs), LEASE, recorded)
}

/// Export `id` of a fresh `MemFs` at `path` with `rules`.
pub fn export(id: u16, path: &str, rules: ExportRules) -> server::exports::export::Export {
    server::exports::export::Export {
        id,
        path: path.into(),
        vfs: Arc::new(vfs::mem::MemFs::default()),
        fsid: (0x4645_5252, id as u64),
        rules,
        log: None,
        delegations: false,
        shared_locks: false,
        pnfs: None,
    }
}

pub fn root_auth() -> rpc::Auth {
    rpc::Auth::sys(0, 0, vec![], "m")
}

/// An unprivileged AUTH_SYS user: uid and gid 1000.
pub fn user_auth() -> rpc::Auth {
    rpc::Auth::sys(1000, 1000, vec![], "m")
}

/// A client with a session, speaking NFSv4.2.
pub async fn client42(h: &InProcess, name: &str) -> Session {
    let opts = ClientOpts {
        minorversion: 2,
        ..Default::default()
    };
    h.client_with(name, opts).await
}

// ---------------------------------------------------------------------
// Operation builders
// ---------------------------------------------------------------------

pub fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

pub fn putfh(fh: &NfsFh4) -> NfsArgOp4 {
    NfsArgOp4::PutFh(PutFh4Args { object: fh.clone() })
}

pub fn putroot() -> NfsArgOp4 {
    NfsArgOp4::PutRootFh
}

pub fn getfh() -> NfsArgOp4 {
    NfsArgOp4::GetFh
}

pub fn lookup(name: &str) -> NfsArgOp4 {
    NfsArgOp4::Lookup(Lookup4Args { objname: b(name) })
}

pub fn getattr(attrs: &[u32]) -> NfsArgOp4 {
    NfsArgOp4::GetAttr(GetAttr4Args {
        attr_request: Bitmap4::from_attrs(attrs),
    })
}

pub fn setattr(stateid: StateId4, a: Attrs) -> NfsArgOp4 {
    NfsArgOp4::SetAttr(SetAttr4Args {
        stateid,
        obj_attributes: a.encode(),
    })
}

pub fn mode_attr(mode: u32) -> Attrs {
    Attrs {
        mode: Some(mode),
        ..Default::default()
    }
}

pub fn size_attr(size: u64) -> Attrs {
    Attrs {
        size: Some(size),
        ..Default::default()
    }
}

pub fn owner(s: &Session, name: &str) -> StateOwner4 {
    StateOwner4 {
        clientid: s.clientid,
        owner: b(name),
    }
}

/// OPEN with every argument given.
pub fn open(
    s: &Session,
    owner_name: &str,
    access: u32,
    deny: u32,
    openhow: OpenFlag4,
    claim: OpenClaim4,
) -> NfsArgOp4 {
    NfsArgOp4::Open(Open4Args {
        seqid: 0,
        share_access: access,
        share_deny: deny,
        owner: owner(s, owner_name),
        openhow,
        claim,
    })
}

/// OPEN of `name` in the current directory, GUARDED4 create with `mode`,
/// for reading and writing, denying nothing.
pub fn open_create(s: &Session, name: &str, mode: u32) -> NfsArgOp4 {
    open(
        s,
        "o",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        OpenFlag4::Create(CreateHow4::Guarded(mode_attr(mode).encode())),
        OpenClaim4::Null(b(name)),
    )
}

/// OPEN of an existing `name` in the current directory.
pub fn open_name(s: &Session, owner_name: &str, name: &str, access: u32, deny: u32) -> NfsArgOp4 {
    open(
        s,
        owner_name,
        access,
        deny,
        OpenFlag4::NoCreate,
        OpenClaim4::Null(b(name)),
    )
}

/// OPEN of the current filehandle (CLAIM_FH).
pub fn open_fh(s: &Session, owner_name: &str, access: u32, deny: u32) -> NfsArgOp4 {
    open(
        s,
        owner_name,
        access,
        deny,
        OpenFlag4::NoCreate,
        OpenClaim4::Fh,
    )
}

pub fn close(sid: StateId4) -> NfsArgOp4 {
    NfsArgOp4::Close(Close4Args {
        seqid: 0,
        open_stateid: sid,
    })
}

pub fn read(sid: StateId4, offset: u64, count: u32) -> NfsArgOp4 {
    NfsArgOp4::Read(Read4Args {
        stateid: sid,
        offset,
        count,
    })
}

pub fn write(sid: StateId4, offset: u64, data: &[u8]) -> NfsArgOp4 {
    NfsArgOp4::Write(Write4Args {
        stateid: sid,
        offset,
        stable: StableHow4::FileSync4,
        data: Bytes::copy_from_slice(data),
    })
}

pub fn create(name: &str, objtype: CreateType4) -> NfsArgOp4 {
    NfsArgOp4::Create(Create4Args {
        objtype,
        objname: b(name),
        createattrs: Fattr4::default(),
    })
}

pub fn mkdir(name: &str) -> NfsArgOp4 {
    create(name, CreateType4::Dir)
}

pub fn symlink(name: &str, target: &str) -> NfsArgOp4 {
    create(name, CreateType4::Link(b(target)))
}

pub fn remove(name: &str) -> NfsArgOp4 {
    NfsArgOp4::Remove(Remove4Args { target: b(name) })
}

pub fn rename(old: &str, new: &str) -> NfsArgOp4 {
    NfsArgOp4::Rename(Rename4Args {
        oldname: b(old),
        newname: b(new),
    })
}

pub fn link(name: &str) -> NfsArgOp4 {
    NfsArgOp4::Link(Link4Args { newname: b(name) })
}

pub fn readdir(cookie: u64, attrs: &[u32]) -> NfsArgOp4 {
    NfsArgOp4::ReadDir(ReadDir4Args {
        cookie,
        cookieverf: [0; 8],
        dircount: 0,
        maxcount: 8192,
        attr_request: Bitmap4::from_attrs(attrs),
    })
}

/// LOCK for a new lock owner `lock_owner` of the open `open_sid`.
pub fn lock_new(
    s: &Session,
    locktype: NfsLockType4,
    offset: u64,
    length: u64,
    open_sid: StateId4,
    lock_owner: &str,
) -> NfsArgOp4 {
    NfsArgOp4::Lock(Lock4Args {
        locktype,
        reclaim: false,
        offset,
        length,
        locker: Locker4::OpenOwner(OpenToLockOwner4 {
            open_seqid: 0,
            open_stateid: open_sid,
            lock_seqid: 0,
            lock_owner: owner(s, lock_owner),
        }),
    })
}

/// LOCK by the owner of the lock stateid `lock_sid`.
pub fn lock_more(
    locktype: NfsLockType4,
    offset: u64,
    length: u64,
    lock_sid: StateId4,
) -> NfsArgOp4 {
    NfsArgOp4::Lock(Lock4Args {
        locktype,
        reclaim: false,
        offset,
        length,
        locker: Locker4::LockOwner(ExistLockOwner4 {
            lock_stateid: lock_sid,
            lock_seqid: 0,
        }),
    })
}

pub fn lockt(
    s: &Session,
    locktype: NfsLockType4,
    offset: u64,
    length: u64,
    lock_owner: &str,
) -> NfsArgOp4 {
    NfsArgOp4::LockT(LockT4Args {
        locktype,
        offset,
        length,
        owner: owner(s, lock_owner),
    })
}

pub fn locku(lock_sid: StateId4, offset: u64, length: u64) -> NfsArgOp4 {
    NfsArgOp4::LockU(LockU4Args {
        locktype: NfsLockType4::WriteLt,
        seqid: 0,
        lock_stateid: lock_sid,
        offset,
        length,
    })
}

// ---------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------

/// The OK result of operation `$i` of reply `$r`, which must be an
/// `NfsResOp4::$v(Res4::Ok(..))`; panics showing the reply otherwise.
#[macro_export]
macro_rules! resok {
    ($r:expr, $i:expr, $v:ident) => {
        match $r.resarray.get($i) {
            Some(NfsResOp4::$v(Res4::Ok(x))) => x.clone(),
            _ => panic!("result {} is not an OK {}: {:?}", $i, stringify!($v), $r),
        }
    };
}

/// Asserts the compound succeeded, showing the reply otherwise.
#[track_caller]
pub fn ok(r: &Compound4Res) {
    assert_eq!(r.status, NfsStat4::Nfs4Ok, "{r:?}");
}

/// Asserts the compound stopped at operation `op` with `status`: the
/// compound's status, and the last result is `op`'s with that status.
#[track_caller]
pub fn fails(r: &Compound4Res, op: OpNum4, status: NfsStat4) {
    let last = r
        .resarray
        .last()
        .unwrap_or_else(|| panic!("no results: {r:?}"));
    assert_eq!(
        (r.status, last.opnum(), last.status()),
        (status, op as u32, status),
        "{r:?}"
    );
}

/// The attributes of a GETATTR result at `i`, decoded.
#[track_caller]
pub fn attrs_at(r: &Compound4Res, i: usize) -> Attrs {
    let g = resok!(r, i, GetAttr);
    Attrs::decode(&g.obj_attributes).unwrap_or_else(|e| panic!("bad attributes: {e:?}"))
}

pub fn fh_at(r: &Compound4Res, i: usize) -> NfsFh4 {
    resok!(r, i, GetFh).object
}

pub fn sid_at(r: &Compound4Res, i: usize) -> StateId4 {
    resok!(r, i, Open).stateid
}

/// The lock stateid of a granted LOCK at `i`.
#[track_caller]
pub fn lock_sid_at(r: &Compound4Res, i: usize) -> StateId4 {
    match r.resarray.get(i) {
        Some(NfsResOp4::Lock(Lock4Res::Ok(l))) => l.lock_stateid,
        _ => panic!("result {i} is not a granted LOCK: {r:?}"),
    }
}

/// The conflicting lock of a LOCK or LOCKT denied at `i`.
#[track_caller]
pub fn denied_at(r: &Compound4Res, i: usize) -> Lock4Denied {
    match r.resarray.get(i) {
        Some(NfsResOp4::Lock(Lock4Res::Denied(d))) => d.clone(),
        Some(NfsResOp4::LockT(LockT4Res::Denied(d))) => d.clone(),
        _ => panic!("result {i} is not a LOCK4denied: {r:?}"),
    }
}

// ---------------------------------------------------------------------
// Whole steps
// ---------------------------------------------------------------------

/// The root's filehandle.
pub async fn root_fh(h: &InProcess, s: &Session) -> NfsFh4 {
    let r = h.seq(s, &[putroot(), getfh()]).await;
    ok(&r);
    fh_at(&r, 2)
}

/// The filehandle of `name` in `dir`.
pub async fn lookup_fh(h: &InProcess, s: &Session, dir: &NfsFh4, name: &str) -> NfsFh4 {
    let r = h.seq(s, &[putfh(dir), lookup(name), getfh()]).await;
    ok(&r);
    fh_at(&r, 3)
}

/// Creates file `name` in the root with `mode` holding `data`, left open
/// for reading and writing by owner "o": its filehandle and open stateid.
pub async fn open_new(
    h: &InProcess,
    s: &Session,
    name: &str,
    mode: u32,
    data: &[u8],
) -> (NfsFh4, StateId4) {
    let mut ops = vec![putroot(), open_create(s, name, mode), getfh()];
    if !data.is_empty() {
        ops.push(write(StateId4::CURRENT, 0, data));
    }
    let r = h.seq(s, &ops).await;
    ok(&r);
    (fh_at(&r, 3), sid_at(&r, 2))
}

/// Creates file `name` in the root with `mode` holding `data`, closed.
pub async fn new_file(h: &InProcess, s: &Session, name: &str, mode: u32, data: &[u8]) -> NfsFh4 {
    let (fh, sid) = open_new(h, s, name, mode, data).await;
    let r = h.seq(s, &[putfh(&fh), close(sid)]).await;
    ok(&r);
    fh
}

/// Makes directory `name` in `dir` (mode 0777 unless `mode`).
pub async fn new_dir(
    h: &InProcess,
    s: &Session,
    dir: &NfsFh4,
    name: &str,
    mode: Option<u32>,
) -> NfsFh4 {
    let op = NfsArgOp4::Create(Create4Args {
        objtype: CreateType4::Dir,
        objname: b(name),
        createattrs: mode.map(|m| mode_attr(m).encode()).unwrap_or_default(),
    });
    let r = h.seq(s, &[putfh(dir), op, getfh()]).await;
    ok(&r);
    fh_at(&r, 3)
}

/// Opens the existing file `fh` (CLAIM_FH) as owner `owner_name`.
pub async fn open_existing(
    h: &InProcess,
    s: &Session,
    fh: &NfsFh4,
    owner_name: &str,
    access: u32,
    deny: u32,
) -> StateId4 {
    let r = h
        .seq(s, &[putfh(fh), open_fh(s, owner_name, access, deny)])
        .await;
    ok(&r);
    sid_at(&r, 2)
}

/// The attributes `want` of `fh`.
pub async fn attrs_of(h: &InProcess, s: &Session, fh: &NfsFh4, want: &[u32]) -> Attrs {
    let r = h.seq(s, &[putfh(fh), getattr(want)]).await;
    ok(&r);
    attrs_at(&r, 2)
}

/// The whole content of file `fh`, read with the anonymous stateid.
pub async fn content(h: &InProcess, s: &Session, fh: &NfsFh4) -> Bytes {
    let r = h
        .seq(s, &[putfh(fh), read(StateId4::ANONYMOUS, 0, 1 << 16)])
        .await;
    ok(&r);
    resok!(r, 2, Read).data.into_mem().unwrap()
}

/// The change attribute of `fh`.
pub async fn change_of(h: &InProcess, s: &Session, fh: &NfsFh4) -> u64 {
    attrs_of(h, s, fh, &[FATTR4_CHANGE])
        .await
        .change
        .unwrap_or_else(|| panic!("no change attribute"))
}

/// The status LOOKUP of `name` in `dir` answers.
pub async fn lookup_status(h: &InProcess, s: &Session, dir: &NfsFh4, name: &str) -> NfsStat4 {
    h.seq(s, &[putfh(dir), lookup(name)]).await.status
}

/// A stateid like `sid` but of another server instance (its epoch
/// changed: RFC 8881 §8.2.2, NFS4ERR_STALE_STATEID).
pub fn stale(sid: StateId4) -> StateId4 {
    let mut other = sid.other;
    other[0] ^= 0xff;
    StateId4 { other, ..sid }
}

/// A stateid like `sid` with a `other` nobody was given.
pub fn unknown(sid: StateId4) -> StateId4 {
    let mut other = sid.other;
    other[11] ^= 0x5a;
    StateId4 { other, ..sid }
}

/// `sid` with its seqid moved by `delta`.
pub fn seq_moved(sid: StateId4, delta: i64) -> StateId4 {
    StateId4 {
        seqid: (sid.seqid as i64 + delta) as u32,
        ..sid
    }
}
