//! The NFSv3 client against a small in-process MOUNT + NFSv3 server
//! holding one flat directory in memory.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use proto::mount::*;
use proto::nfs3::*;
use rpc::{Call, Programs, Reply, ReplyFuture, Service};
use xdr::Unpack;

use super::*;

const ROOT: &[u8] = b"root";

/// Files by name; file handles are `f:` + name.
#[derive(Default)]
struct Fs {
    files: Mutex<BTreeMap<String, Vec<u8>>>,
    /// While set, GETATTRs of the root wait for it to be cleared (and
    /// `released` notified), counted in `held`: so replies overtake one
    /// another on the connection, whatever the machine's speed.
    hold: std::sync::atomic::AtomicBool,
    held: std::sync::atomic::AtomicUsize,
    released: tokio::sync::Notify,
}

impl Fs {
    async fn wait_while_held(&self) {
        use std::sync::atomic::Ordering::SeqCst;
        self.held.fetch_add(1, SeqCst);
        loop {
            let released = self.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            if !self.hold.load(SeqCst) {
                return;
            }
            released.await;
        }
    }
}

fn attrs(type_: Ftype3, size: u64, fileid: u64) -> Fattr3 {
    Fattr3 {
        type_,
        mode: 0o644,
        nlink: 1,
        uid: 0,
        gid: 0,
        size,
        used: size,
        rdev: SpecData3::default(),
        fsid: 1,
        fileid,
        atime: NfsTime3::default(),
        mtime: NfsTime3::default(),
        ctime: NfsTime3::default(),
    }
}

fn file_fh(name: &[u8]) -> NfsFh3 {
    let mut b = BytesMut::from(&b"f:"[..]);
    b.extend_from_slice(name);
    NfsFh3 { data: b.freeze() }
}

fn name_of(fh: &NfsFh3) -> Option<String> {
    fh.data
        .strip_prefix(b"f:")
        .map(|n| String::from_utf8_lossy(n).into_owned())
}

struct Mountd;

impl Service for Mountd {
    fn call(&self, mut call: Call) -> ReplyFuture {
        Box::pin(async move {
            match call.proc_ {
                MOUNTPROC3_MNT => match DirPath::unpack(&mut call.args) {
                    Ok(p) if &p.0[..] == b"/export" => {
                        Reply::success(&MountRes3::Ok(MountRes3Ok {
                            fhandle: FHandle3(Bytes::from_static(ROOT)),
                            auth_flavors: vec![rpc::AUTH_SYS],
                        }))
                    }
                    Ok(_) => Reply::success(&MountRes3::Err(MountStat3::Noent)),
                    Err(_) => Reply::Error(rpc::ReplyError::GarbageArgs),
                },
                MOUNTPROC3_UMNT => Reply::success(&()),
                _ => Reply::Error(rpc::ReplyError::ProcUnavail),
            }
        })
    }
}

struct Nfsd(Arc<Fs>);

impl Nfsd {
    fn handle(&self, proc_: u32, d: &mut Decoder) -> xdr::Result<Reply> {
        let mut files = self.0.files.lock().unwrap();
        Ok(match proc_ {
            NFSPROC3_GETATTR => {
                let a = GetAttr3Args::unpack(d)?;
                let r: GetAttr3Res = if &a.object.data[..] == ROOT {
                    Res3::Ok(GetAttr3ResOk {
                        obj_attributes: attrs(Ftype3::Dir, 4096, 1),
                    })
                } else {
                    match name_of(&a.object).and_then(|n| files.get(&n)) {
                        Some(data) => Res3::Ok(GetAttr3ResOk {
                            obj_attributes: attrs(Ftype3::Reg, data.len() as u64, 2),
                        }),
                        None => Res3::Fail(NfsStat3::Stale, ()),
                    }
                };
                Reply::success(&r)
            }
            NFSPROC3_LOOKUP => {
                let a = Lookup3Args::unpack(d)?;
                let name = String::from_utf8_lossy(&a.what.name).into_owned();
                let r: Lookup3Res = if files.contains_key(&name) {
                    Res3::Ok(Lookup3ResOk {
                        object: file_fh(&a.what.name),
                        obj_attributes: None,
                        dir_attributes: None,
                    })
                } else {
                    Res3::Fail(NfsStat3::Noent, Lookup3ResFail::default())
                };
                Reply::success(&r)
            }
            NFSPROC3_CREATE => {
                let a = Create3Args::unpack(d)?;
                let name = String::from_utf8_lossy(&a.where_.name).into_owned();
                let exists = files.contains_key(&name);
                let r: Create3Res = match a.how {
                    CreateHow3::Guarded(_) if exists => {
                        Res3::Fail(NfsStat3::Exist, DirWcc3::default())
                    }
                    _ => {
                        files.entry(name).or_default();
                        Res3::Ok(Create3ResOk {
                            // Leave the handle out: the client must LOOKUP.
                            obj: None,
                            obj_attributes: None,
                            dir_wcc: WccData::default(),
                        })
                    }
                };
                Reply::success(&r)
            }
            NFSPROC3_WRITE => {
                let a = Write3Args::unpack(d)?;
                let r: Write3Res = match name_of(&a.file).and_then(|n| files.get_mut(&n)) {
                    Some(data) => {
                        let end = a.offset as usize + a.data.len();
                        if data.len() < end {
                            data.resize(end, 0);
                        }
                        data[a.offset as usize..end].copy_from_slice(&a.data);
                        Res3::Ok(Write3ResOk {
                            file_wcc: WccData::default(),
                            count: a.count,
                            committed: StableHow::FileSync,
                            verf: [1; 8],
                        })
                    }
                    None => Res3::Fail(NfsStat3::Stale, FileWccFail3::default()),
                };
                Reply::success(&r)
            }
            NFSPROC3_READ => {
                let a = Read3Args::unpack(d)?;
                let r: Read3Res = match name_of(&a.file).and_then(|n| files.get(&n)) {
                    Some(data) => {
                        let start = (a.offset as usize).min(data.len());
                        let end = (start + a.count as usize).min(data.len());
                        Res3::Ok(Read3ResOk {
                            file_attributes: None,
                            count: (end - start) as u32,
                            eof: end == data.len(),
                            data: Bytes::copy_from_slice(&data[start..end]).into(),
                        })
                    }
                    None => Res3::Fail(NfsStat3::Stale, ObjAttrFail3::default()),
                };
                Reply::success(&r)
            }
            NFSPROC3_READDIR => {
                // Two entries a page; cookie n means "after the n-th".
                let a = ReadDir3Args::unpack(d)?;
                let names: Vec<&String> = files.keys().collect();
                let start = a.cookie as usize;
                let page: Vec<Entry3> = names
                    .iter()
                    .enumerate()
                    .skip(start)
                    .take(2)
                    .map(|(i, n)| Entry3 {
                        fileid: 100 + i as u64,
                        name: Bytes::copy_from_slice(n.as_bytes()),
                        cookie: i as u64 + 1,
                    })
                    .collect();
                let eof = start + page.len() >= names.len();
                Reply::success(&ReadDir3Res::Ok(ReadDir3ResOk {
                    dir_attributes: None,
                    cookieverf: [9; 8],
                    reply: DirList3 {
                        entries: List(page),
                        eof,
                    },
                }))
            }
            NFSPROC3_REMOVE => {
                let a = Remove3Args::unpack(d)?;
                let name = String::from_utf8_lossy(&a.object.name).into_owned();
                let r: Remove3Res = match files.remove(&name) {
                    Some(_) => Res3::Ok(DirWcc3::default()),
                    None => Res3::Fail(NfsStat3::Noent, DirWcc3::default()),
                };
                Reply::success(&r)
            }
            _ => Reply::Error(rpc::ReplyError::ProcUnavail),
        })
    }
}

impl Service for Nfsd {
    fn call(&self, mut call: Call) -> ReplyFuture {
        // GETATTRs of the root are answered once let go ([`Fs::hold`]).
        let slow = call.proc_ == NFSPROC3_GETATTR && call.args.rest().ends_with(ROOT);
        let reply = self
            .handle(call.proc_, &mut call.args)
            .unwrap_or(Reply::Error(rpc::ReplyError::GarbageArgs));
        let fs = self.0.clone();
        Box::pin(async move {
            if slow {
                fs.wait_while_held().await;
            }
            reply
        })
    }
}

async fn start_server() -> (SocketAddr, Arc<Fs>) {
    let fs = Arc::new(Fs::default());
    let programs = Programs::new()
        .add(MOUNT_PROGRAM, 3, 3, Arc::new(Mountd))
        .add(NFS_PROGRAM, 3, 3, Arc::new(Nfsd(fs.clone())));
    let addr = crate::serve_loopback(programs).await;
    (addr, fs)
}

fn auth() -> rpc::Auth {
    rpc::Auth::sys(0, 0, Vec::new(), "v3-test")
}

#[tokio::test]
async fn mount_create_write_read_readdir_remove() {
    let (addr, fs) = start_server().await;
    let err = Client::connect(addr, addr, "/nope", auth())
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        Error::Mount {
            status: MountStat3::Noent,
            ..
        }
    ));

    let c = Client::connect(addr, addr, "/export", auth())
        .await
        .unwrap();
    assert_eq!(&c.root().data[..], ROOT);
    assert_eq!(c.auth_flavors(), &[rpc::AUTH_SYS]);
    c.null().await.unwrap();

    let f = c
        .create(c.root(), "a", CreateHow3::Unchecked(Sattr3::default()))
        .await
        .unwrap();
    assert_eq!(f.fh, file_fh(b"a"));
    let e = c
        .create(c.root(), "a", CreateHow3::Guarded(Sattr3::default()))
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(NfsStat3::Exist));

    let w = c
        .write(
            &f.fh,
            0,
            Bytes::from_static(b"hello world"),
            StableHow::FileSync,
        )
        .await
        .unwrap();
    assert_eq!(w.count, 11);
    let r = c.read(&f.fh, 6, 100).await.unwrap();
    assert_eq!((&r.data[..], r.eof), (&b"world"[..], true));
    assert_eq!(c.getattr(&f.fh).await.unwrap().size, 11);
    assert_eq!(c.lookup_path("/a").await.unwrap(), f.fh);

    for n in ["b", "c", "d", "e"] {
        c.create(c.root(), n, CreateHow3::Exclusive([0; 8]))
            .await
            .unwrap();
    }
    // Five entries at two a page: three READDIRs.
    let before = c.stats().get(NFSPROC3_READDIR).calls;
    let names: Vec<Bytes> = c
        .readdir(c.root())
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(
        names,
        ["a", "b", "c", "d", "e"].map(|n| Bytes::from_static(n.as_bytes()))
    );
    assert_eq!(c.stats().get(NFSPROC3_READDIR).calls - before, 3);

    c.remove(c.root(), "a").await.unwrap();
    assert_eq!(
        c.remove(c.root(), "a").await.unwrap_err().status(),
        Some(NfsStat3::Noent)
    );
    assert!(!fs.files.lock().unwrap().contains_key("a"));

    let s = c.stats();
    let w = s.get(NFSPROC3_WRITE);
    assert_eq!((w.calls, w.errors), (1, 0));
    assert!(w.bytes_sent > 11 && w.bytes_received > 0);
    assert_eq!(s.get(NFSPROC3_REMOVE).errors, 1);
    assert_eq!(s.get(NFSPROC3_CREATE).errors, 1);
    // Each successful CREATE (the fake leaves the handle out) costs a
    // LOOKUP, and lookup_path one more.
    assert_eq!(s.get(NFSPROC3_LOOKUP).calls, 5 + 1);
    let names: Vec<&str> = s.called().map(|(_, n, _)| n).collect();
    assert!(names.contains(&"READDIR") && !names.contains(&"COMMIT"));
    assert!(s.total().calls >= 20);
    c.unmount().await.unwrap();
}

#[tokio::test]
async fn calls_are_concurrent_on_one_connection() {
    let (addr, fs) = start_server().await;
    let c = Client::connect(addr, addr, "/export", auth())
        .await
        .unwrap();
    c.create(c.root(), "x", CreateHow3::Unchecked(Sattr3::default()))
        .await
        .unwrap();
    let fh = file_fh(b"x");
    // Ten GETATTRs of the root held by the server, and a GETATTR of x
    // started after them: x's reply comes back while they wait, and all
    // ten are at the server at once (they overlap).
    use std::sync::atomic::Ordering::SeqCst;
    fs.hold.store(true, SeqCst);
    let slow: Vec<_> = (0..10)
        .map(|_| {
            let c = c.clone();
            tokio::spawn(async move { c.getattr(c.root()).await.map(|a| a.type_) })
        })
        .collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while fs.held.load(SeqCst) < 10 {
        assert!(tokio::time::Instant::now() < deadline, "not all ten sent");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Every held call was sent before this.
    let all_sent = tokio::time::Instant::now();
    assert_eq!(c.getattr(&fh).await.unwrap().type_, Ftype3::Reg);
    assert!(
        slow.iter().all(|t| !t.is_finished()),
        "x's reply came first"
    );
    // Held 100 ms at least, so their round trips are that long.
    tokio::time::sleep_until(all_sent + Duration::from_millis(100)).await;
    fs.hold.store(false, SeqCst);
    fs.released.notify_waiters();
    for t in slow {
        assert_eq!(t.await.unwrap().unwrap(), Ftype3::Dir);
    }
    let g = c.stats().get(NFSPROC3_GETATTR);
    assert_eq!(g.calls, 11);
    assert!(g.rtt_max >= Duration::from_millis(100));
    assert!(g.rtt_mean().unwrap() < g.rtt_max);
    let before = c.stats();
    c.null().await.unwrap();
    let d = c.stats().since(&before);
    assert_eq!(d.total().calls, 1);
    c.reset_stats();
    assert_eq!(c.stats().total().calls, 0);
}
