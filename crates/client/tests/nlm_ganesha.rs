//! The NLM v4 and port mapper clients against a real NFS-Ganesha (or any
//! NFSv3 server with MOUNT and NLM on TCP, registered with a port mapper).
//! Ignored unless asked for (`-- --ignored`, as tests/peer-ganesha.sh
//! does); it then needs `FERRITE_GANESHA_V3=host:nfsport:mountport` (as for
//! `v3_ganesha.rs`), `FERRITE_GANESHA_NLM=host:nlmport` and
//! `FERRITE_GANESHA_PMAP=host:port`, a port mapper that knows the server's
//! programs (checked with GETPORT); `FERRITE_GANESHA_V3_EXPORT` names the
//! export (default `/export`). `tools/ganesha.sh start` prints all of these.
//!
//! Everything happens on a fresh file in a fresh directory, both removed at
//! the end.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use client::observe::CallInfo;
use client::portmap::getport;
use client::v3::nlm::Nlm;
use client::v3::{Client, Error};
use proto::nfs3::*;
use proto::nlm::*;

struct Target {
    nfs: SocketAddr,
    mnt: SocketAddr,
    nlm: SocketAddr,
    pmap: SocketAddr,
    export: String,
}

fn resolve(what: &str, hostport: &str) -> SocketAddr {
    hostport
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .unwrap_or_else(|| panic!("{what}: cannot resolve {hostport:?}"))
}

/// An environment variable the test cannot run without.
fn required(name: &str, what: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name}={what} is not set: this test needs a live NFSv3 server with NLM \
             (tests/peer-ganesha.sh starts NFS-Ganesha and runs it)"
        )
    })
}

fn target() -> Target {
    let spec = required("FERRITE_GANESHA_V3", "host:nfsport:mountport");
    let nlm = required("FERRITE_GANESHA_NLM", "host:nlmport");
    let pmap = required("FERRITE_GANESHA_PMAP", "host:port");
    let mut parts = spec.rsplitn(3, ':');
    let (mnt, nfs, host) = match (parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(n), Some(h)) => (m, n, h),
        _ => panic!("FERRITE_GANESHA_V3 must be host:nfsport:mountport, got {spec:?}"),
    };
    Target {
        nfs: resolve("FERRITE_GANESHA_V3", &format!("{host}:{nfs}")),
        mnt: resolve("FERRITE_GANESHA_V3", &format!("{host}:{mnt}")),
        nlm: resolve("FERRITE_GANESHA_NLM", &nlm),
        pmap: resolve("FERRITE_GANESHA_PMAP", &pmap),
        export: std::env::var("FERRITE_GANESHA_V3_EXPORT").unwrap_or_else(|_| "/export".into()),
    }
}

fn denied(r: Result<(), Error>) -> bool {
    matches!(
        r,
        Err(Error::Nlm {
            proc_: NLMPROC4_LOCK,
            stat: Nlm4Stats::Denied
        })
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs NFS-Ganesha: run by tests/peer-ganesha.sh"]
async fn nlm_and_portmap_against_live_server() {
    let t = target();
    let auth = rpc::Auth::sys(0, 0, Vec::new(), "ferrite-nlm-test");

    // Port mapper: the server's programs are where the URL says.
    let pmap = t.pmap;
    client::portmap::null(pmap).await.unwrap();
    assert_eq!(
        getport(pmap, NLM_PROG, NLM4_VERS).await.unwrap(),
        Some(t.nlm.port())
    );
    assert_eq!(
        getport(pmap, proto::mount::MOUNT_PROGRAM, proto::mount::MOUNT_V3)
            .await
            .unwrap(),
        Some(t.mnt.port())
    );
    assert_eq!(
        getport(pmap, NFS_PROGRAM, NFS_V3).await.unwrap(),
        Some(t.nfs.port())
    );
    // Not registered: 0, which is None.
    assert_eq!(getport(pmap, 0x2fff_fff0, 1).await.unwrap(), None);
    // (A version that is not registered is not necessarily None:
    // rpcbind answers with the port of another version of the
    // program, leaving the mismatch to the program itself.)
    let all = client::portmap::dump(pmap).await.unwrap();
    eprintln!("port mapper {pmap}: {} mappings", all.len());
    assert!(all
        .iter()
        .any(|m| m.prog == NLM_PROG && m.vers == NLM4_VERS && m.port == t.nlm.port() as u32));

    let c = Client::connect(t.nfs, t.mnt, &t.export, auth.clone())
        .await
        .unwrap();
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dname = format!("ferrite-nlm-{}-{stamp}", std::process::id());
    let dir = c
        .mkdir(
            c.root(),
            &dname,
            Sattr3 {
                mode: Some(0o755),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .fh;
    let fh = c
        .create(
            &dir,
            "locked",
            CreateHow3::Guarded(Sattr3 {
                mode: Some(0o644),
                ..Default::default()
            }),
        )
        .await
        .unwrap()
        .fh;

    let nlm = Nlm::connect(t.nlm, "ferrite-nlm-test", auth.clone())
        .await
        .unwrap();
    let (calls, oks) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    {
        let (calls, oks) = (calls.clone(), oks.clone());
        assert!(nlm.set_observer(Arc::new(move |i: &CallInfo| {
            assert_eq!(i.program, NLM_PROG);
            assert!(i.args_len > 0 || i.proc_ == NLMPROC4_NULL);
            calls.fetch_add(1, Ordering::Relaxed);
            if i.ok {
                oks.fetch_add(1, Ordering::Relaxed);
            }
        })));
        assert!(!nlm.set_observer(Arc::new(|_: &CallInfo| {})));
    }
    nlm.null().await.unwrap();

    let (a, sa) = (&b"owner-a"[..], 1001);
    let (b, sb) = (&b"owner-b"[..], 1002);
    let (x, sx) = (&b"owner-c"[..], 1003);

    // Exclusive, whole file: A holds it, B is denied and told who.
    nlm.lock(&fh, a, sa, true, 0, 0).await.unwrap();
    let r = nlm.lock(&fh, b, sb, true, 0, 0).await;
    eprintln!("LOCK by B while A holds it: {r:?}");
    assert!(denied(r));
    let h = nlm
        .test(&fh, b, sb, true, 0, 0)
        .await
        .unwrap()
        .expect("TEST by B finds A's lock");
    eprintln!("TEST holder: {h:?}");
    assert!(h.exclusive);
    assert_eq!(h.svid, sa);
    assert_eq!(&h.oh.0[..], a);
    // A's own lock does not conflict with A; A may relock (no-op).
    assert_eq!(nlm.test(&fh, a, sa, true, 0, 0).await.unwrap(), None);
    nlm.lock(&fh, a, sa, true, 0, 0).await.unwrap();
    nlm.unlock(&fh, a, sa, 0, 0).await.unwrap();
    assert_eq!(nlm.test(&fh, b, sb, true, 0, 0).await.unwrap(), None);
    nlm.lock(&fh, b, sb, true, 0, 0).await.unwrap();
    nlm.unlock(&fh, b, sb, 0, 0).await.unwrap();
    // Unlocking what is not locked is granted.
    nlm.unlock(&fh, b, sb, 0, 0).await.unwrap();

    // Shared: A and B both; an exclusive lock by a third owner is denied.
    nlm.lock(&fh, a, sa, false, 0, 0).await.unwrap();
    nlm.lock(&fh, b, sb, false, 0, 0).await.unwrap();
    assert!(denied(nlm.lock(&fh, x, sx, true, 0, 0).await));
    let h = nlm.test(&fh, x, sx, true, 0, 0).await.unwrap().unwrap();
    assert!(!h.exclusive);
    assert!(h.svid == sa || h.svid == sb, "{h:?}");
    assert_eq!(nlm.test(&fh, x, sx, false, 0, 0).await.unwrap(), None);
    nlm.unlock(&fh, a, sa, 0, 0).await.unwrap();
    nlm.unlock(&fh, b, sb, 0, 0).await.unwrap();
    nlm.lock(&fh, x, sx, true, 0, 0).await.unwrap();
    nlm.unlock(&fh, x, sx, 0, 0).await.unwrap();

    // Byte ranges: disjoint ranges do not conflict, overlapping ones do,
    // including beyond 4 GiB (64-bit offsets, RFC 1813 §6.3.1).
    nlm.lock(&fh, a, sa, true, 0, 100).await.unwrap();
    nlm.lock(&fh, b, sb, true, 100, 100).await.unwrap();
    assert!(denied(nlm.lock(&fh, b, sb, true, 50, 10).await));
    let h = nlm.test(&fh, x, sx, true, 150, 1).await.unwrap().unwrap();
    assert_eq!((h.svid, h.l_offset, h.l_len), (sb, 100, 100));
    let big = 5u64 << 30;
    nlm.lock(&fh, x, sx, true, big, 0).await.unwrap();
    assert!(denied(nlm.lock(&fh, a, sa, false, big + 1, 1).await));
    let h = nlm
        .test(&fh, a, sa, true, big + (1 << 40), 1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((h.svid, h.l_offset), (sx, big));
    // Past 2^63 servers with a signed off_t (Ganesha) answer NLM4_FBIG.
    let r = nlm.test(&fh, a, sa, true, u64::MAX - 1, 1).await;
    eprintln!("TEST at 2^64 - 2: {r:?}");
    assert!(
        matches!(
            r,
            Ok(Some(_))
                | Err(Error::Nlm {
                    stat: Nlm4Stats::Fbig,
                    ..
                })
        ),
        "{r:?}"
    );
    nlm.unlock(&fh, a, sa, 0, 0).await.unwrap();
    nlm.unlock(&fh, b, sb, 0, 0).await.unwrap();
    nlm.unlock(&fh, x, sx, 0, 0).await.unwrap();
    assert_eq!(nlm.test(&fh, a, sa, true, 0, 0).await.unwrap(), None);

    // The same owner handle and svid from another host (caller_name) is
    // another owner.
    let other = Nlm::connect(t.nlm, "ferrite-nlm-test-2", auth.clone())
        .await
        .unwrap();
    nlm.lock(&fh, a, sa, true, 0, 0).await.unwrap();
    assert!(denied(other.lock(&fh, a, sa, true, 0, 0).await));
    nlm.unlock(&fh, a, sa, 0, 0).await.unwrap();
    other.lock(&fh, a, sa, true, 0, 0).await.unwrap();
    other.unlock(&fh, a, sa, 0, 0).await.unwrap();

    // A handle the server never issued is not a lock.
    let bogus = NfsFh3 {
        data: bytes::Bytes::from_static(&[0x5a; 32]),
    };
    let r = nlm.lock(&bogus, a, sa, true, 0, 0).await;
    eprintln!("LOCK of a bogus handle: {r:?}");
    assert!(
        matches!(r, Err(Error::Nlm { proc_: NLMPROC4_LOCK, stat }) if stat != Nlm4Stats::Granted),
        "{r:?}"
    );
    if let Err(e) = &r {
        assert!(e.nlm_stat().is_some());
        eprintln!("as an error: {e}");
    }

    let (n, ok) = (calls.load(Ordering::Relaxed), oks.load(Ordering::Relaxed));
    eprintln!("observer: {n} calls, {ok} granted");
    // Not granted on this client: 4 denied LOCKs, the bogus LOCK, the 4
    // TESTs that found a holder (NLM4_DENIED) and the NLM4_FBIG TEST.
    assert_eq!(n - ok, 10, "{n} calls, {ok} ok");

    // FREE_ALL drops every lock of this caller_name.
    nlm.lock(&fh, a, sa, true, 0, 100).await.unwrap();
    nlm.lock(&fh, b, sb, false, 1 << 20, 1).await.unwrap();
    assert!(denied(other.lock(&fh, x, sx, true, 0, 0).await));
    let started = std::time::Instant::now();
    nlm.free_all(std::time::Duration::from_secs(2))
        .await
        .unwrap();
    eprintln!("FREE_ALL took {:?}", started.elapsed());
    // A server that takes FREE_ALL as a one-way message may not have acted
    // on it when free_all gives up waiting for a reply: the lock is tried
    // until granted, for 30 s at most.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        match other.lock(&fh, x, sx, true, 0, 0).await {
            Ok(_) => break,
            Err(Error::Nlm {
                stat: Nlm4Stats::Denied,
                ..
            }) if std::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(e) => panic!("after FREE_ALL: {e}"),
        }
    }
    other.unlock(&fh, x, sx, 0, 0).await.unwrap();

    c.remove(&dir, "locked").await.unwrap();
    c.rmdir(c.root(), &dname).await.unwrap();
    c.unmount().await.unwrap();
}
