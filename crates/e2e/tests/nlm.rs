//! NLM version 4 and NSM beside NFSv4 (RFC 1813 Appendix II, XNFS chapters
//! 10 and 11), found through the built-in port mapper: NLM and NFSv4 locks
//! contend in one table; a blocked NLM lock is granted with an NLM_GRANTED
//! call to the client's lock manager; a restart sends SM_NOTIFY to the
//! client's status monitor and grants only reclaims in the grace period;
//! SM_NOTIFY from a restarted client frees its locks; shares and NFSv4
//! deny modes exclude each other and NFSv3 I/O. The client's lock manager,
//! status monitor and port mapper are played by this test.

mod common;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use client::v3::Client as Client3;
use common::*;
use proto::nfs3::*;
use proto::nfs4::*;
use proto::nlm::*;
use proto::nsm::*;
use rpc::{Call, Reply, ReplyError, ReplyFuture, Service};
use server::config::{AuxConfig, PortmapMode};
use tokio::sync::mpsc;
use xdr::{Pack, Unpack};

fn root_auth() -> rpc::Auth {
    rpc::Auth::sys(0, 0, Vec::new(), "nlm-test")
}

/// The client host's lock manager and status monitor: records the
/// NLM_GRANTED and SM_NOTIFY calls it gets, answering GRANTED with
/// `answer`.
struct FakeHostSvc {
    granted: mpsc::UnboundedSender<Nlm4TestArgs>,
    notified: mpsc::UnboundedSender<StatChge>,
    answer: Arc<Mutex<Nlm4Stats>>,
}

impl Service for FakeHostSvc {
    fn call(&self, mut call: Call) -> ReplyFuture {
        let r = match (call.prog, call.proc_) {
            (NLM_PROG, NLMPROC4_GRANTED) => match Nlm4TestArgs::unpack(&mut call.args) {
                Ok(a) => {
                    let stat = *self.answer.lock().unwrap();
                    let cookie = a.cookie.clone();
                    let _ = self.granted.send(a);
                    Reply::success(&Nlm4Res { cookie, stat })
                }
                Err(_) => Reply::Error(ReplyError::GarbageArgs),
            },
            (SM_PROG, SM_NOTIFY) => match StatChge::unpack(&mut call.args) {
                Ok(a) => {
                    let _ = self.notified.send(a);
                    Reply::Success(Vec::new())
                }
                Err(_) => Reply::Error(ReplyError::GarbageArgs),
            },
            _ => Reply::Error(ReplyError::ProcUnavail),
        };
        Box::pin(async move { r })
    }
}

struct FakeHost {
    /// Its port mapper.
    pmap: SocketAddr,
    granted: mpsc::UnboundedReceiver<Nlm4TestArgs>,
    notified: mpsc::UnboundedReceiver<StatChge>,
    answer: Arc<Mutex<Nlm4Stats>>,
    _stop: tokio::sync::watch::Sender<bool>,
}

async fn fake_host() -> FakeHost {
    let (gtx, granted) = mpsc::unbounded_channel();
    let (ntx, notified) = mpsc::unbounded_channel();
    let answer = Arc::new(Mutex::new(Nlm4Stats::Granted));
    let svc: Arc<dyn Service> = Arc::new(FakeHostSvc {
        granted: gtx,
        notified: ntx,
        answer: answer.clone(),
    });
    let (stop, rx) = tokio::sync::watch::channel(false);
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let at = l.local_addr().unwrap();
    let programs: Arc<dyn Service> = Arc::new(
        rpc::Programs::new()
            .add(NLM_PROG, NLM4_VERS, NLM4_VERS, svc.clone())
            .add(SM_PROG, SM_VERS, SM_VERS, svc),
    );
    tokio::spawn(rpc::serve(l, programs, Default::default(), rx.clone()));
    // Its port mapper, which knows the two.
    let entry = |prog, vers| server::v3::portmap::Entry {
        prog,
        vers,
        netid: "tcp".into(),
        addr: at,
        owner: "fake".into(),
    };
    let pm = server::v3::portmap::Portmap::new(vec![
        entry(NLM_PROG, NLM4_VERS),
        entry(SM_PROG, SM_VERS),
    ]);
    let pl = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let pmap = pl.local_addr().unwrap();
    let psvc: Arc<dyn Service> = Arc::new(rpc::Programs::new().add(
        proto::portmap::PMAP_PROG,
        2,
        4,
        Arc::new(server::v3::portmap::PortmapService(pm)),
    ));
    tokio::spawn(rpc::serve(pl, psvc, Default::default(), rx));
    FakeHost {
        pmap,
        granted,
        notified,
        answer,
        _stop: stop,
    }
}

fn aux_for(host: &FakeHost) -> AuxConfig {
    AuxConfig {
        portmap: PortmapMode::At("127.0.0.1:0".parse().unwrap()),
        client_portmap_port: host.pmap.port(),
        ..Default::default()
    }
}

async fn server_for(host: &FakeHost, grace: Duration) -> TestServer {
    TestServer::start_aux(grace, aux_for(host)).await
}

/// One NLM connection as host `name`, found through the server's port
/// mapper.
struct Host {
    conn: Arc<rpc::Connection>,
    name: Bytes,
}

impl Host {
    async fn connect(srv: &TestServer, name: &str) -> Host {
        let pm = srv.running.as_ref().unwrap().portmap.expect("port mapper");
        let port = client::portmap::getport(pm, NLM_PROG, NLM4_VERS)
            .await
            .unwrap()
            .expect("NLM registered");
        assert_eq!(port, srv.addr.port());
        let conn = rpc::connect(SocketAddr::new(pm.ip(), port), None, Default::default())
            .await
            .unwrap();
        Host {
            conn,
            name: Bytes::copy_from_slice(name.as_bytes()),
        }
    }

    async fn call<A: Pack, R: Unpack>(&self, proc_: u32, a: &A) -> R {
        let mut d = self
            .conn
            .call_with(NLM_PROG, NLM4_VERS, proc_, &root_auth().to_opaque(), a)
            .await
            .unwrap();
        R::unpack(&mut d).unwrap()
    }

    fn alock(&self, fh: &NfsFh3, svid: i32, off: u64, len: u64) -> Nlm4Lock {
        Nlm4Lock {
            caller_name: self.name.clone(),
            fh: Netobj(fh.data.clone()),
            oh: Netobj(Bytes::from(format!(
                "{svid}@{}",
                String::from_utf8_lossy(&self.name)
            ))),
            svid,
            l_offset: off,
            l_len: len,
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn lock_as(
        &self,
        fh: &NfsFh3,
        svid: i32,
        off: u64,
        len: u64,
        exclusive: bool,
        block: bool,
        reclaim: bool,
    ) -> Nlm4Stats {
        let a = Nlm4LockArgs {
            cookie: Netobj(Bytes::from_static(b"ck")),
            block,
            exclusive,
            alock: self.alock(fh, svid, off, len),
            reclaim,
            state: 1,
        };
        let r: Nlm4Res = self.call(NLMPROC4_LOCK, &a).await;
        assert_eq!(&r.cookie.0[..], b"ck", "cookie echoed");
        r.stat
    }

    async fn lock(&self, fh: &NfsFh3, svid: i32, off: u64, len: u64, block: bool) -> Nlm4Stats {
        self.lock_as(fh, svid, off, len, true, block, false).await
    }

    async fn unlock(&self, fh: &NfsFh3, svid: i32, off: u64, len: u64) -> Nlm4Stats {
        let a = Nlm4UnlockArgs {
            cookie: Netobj::default(),
            alock: self.alock(fh, svid, off, len),
        };
        let r: Nlm4Res = self.call(NLMPROC4_UNLOCK, &a).await;
        r.stat
    }

    /// FREE_ALL of this host (its client restarted without NSM).
    async fn free_all(&self) {
        let free = Nlm4Notify {
            name: self.name.clone(),
            state: 0,
        };
        self.conn
            .call_with(
                NLM_PROG,
                NLM4_VERS,
                NLMPROC4_FREE_ALL,
                &root_auth().to_opaque(),
                &free,
            )
            .await
            .unwrap();
    }

    async fn test(&self, fh: &NfsFh3, svid: i32, off: u64, len: u64) -> Nlm4TestRply {
        let a = Nlm4TestArgs {
            cookie: Netobj::default(),
            exclusive: true,
            alock: self.alock(fh, svid, off, len),
        };
        let r: Nlm4TestRes = self.call(NLMPROC4_TEST, &a).await;
        r.stat
    }

    async fn share(
        &self,
        fh: &NfsFh3,
        access: Fsh4Access,
        mode: Fsh4Mode,
        proc_: u32,
    ) -> Nlm4Stats {
        let a = Nlm4ShareArgs {
            cookie: Netobj::default(),
            share: Nlm4Share {
                caller_name: self.name.clone(),
                fh: Netobj(fh.data.clone()),
                oh: Netobj(Bytes::from_static(b"sharer")),
                mode,
                access,
            },
            reclaim: false,
        };
        let r: Nlm4ShareRes = self.call(proc_, &a).await;
        r.stat
    }
}

/// An NFSv3 file named `name` in the export's root.
async fn v3_file(srv: &TestServer, name: &str) -> (Client3, NfsFh3) {
    let c = Client3::connect(srv.addr, srv.addr, "/", root_auth())
        .await
        .unwrap();
    let root = c.root().clone();
    let f = c
        .create(&root, name, CreateHow3::Unchecked(Sattr3::default()))
        .await
        .unwrap();
    (c, f.fh)
}

/// An NFSv4 client with `name` in the export's root open for reading
/// and writing.
async fn v4_open(srv: &TestServer, name: &str) -> (client::Client, client::Open) {
    let c4 = srv.client().await;
    let root4 = c4.root_fh().await.unwrap();
    let o = c4
        .open(&root4, name, client::OpenOpts::both())
        .await
        .unwrap();
    (c4, o)
}

fn denied_holder(r: Nlm4TestRply) -> Nlm4Holder {
    match r {
        Nlm4TestRply::Denied(h) => h,
        other => panic!("expected NLM4_DENIED, got {other:?}"),
    }
}

/// NLM and NFSv4 locks on one file see each other, both ways; the port
/// mapper says where NLM, MOUNT and NSM are.
#[tokio::test]
async fn nlm_and_nfsv4_contend_for_one_range() {
    within(async {
        let fake = fake_host().await;
        let srv = server_for(&fake, Duration::ZERO).await;
        let pm = srv.running.as_ref().unwrap().portmap.unwrap();
        for prog in [proto::mount::MOUNT_PROGRAM, SM_PROG] {
            let v = if prog == SM_PROG { SM_VERS } else { 3 };
            assert_eq!(
                client::portmap::getport(pm, prog, v).await.unwrap(),
                Some(srv.addr.port())
            );
        }
        let (_c3, fh) = v3_file(&srv, "shared").await;
        let a = Host::connect(&srv, "host-a").await;
        let b = Host::connect(&srv, "host-b").await;
        assert_eq!(a.lock(&fh, 11, 0, 10, false).await, Nlm4Stats::Granted);
        // The same owner again (and a sub-range): granted; another
        // owner of the same host: denied.
        assert_eq!(a.lock(&fh, 11, 2, 3, false).await, Nlm4Stats::Granted);
        assert_eq!(a.lock(&fh, 12, 5, 1, false).await, Nlm4Stats::Denied);
        let h = denied_holder(b.test(&fh, 7, 9, 100).await);
        assert_eq!(
            (h.svid, &h.oh.0[..], h.l_offset, h.l_len),
            (11, &b"11@host-a"[..], 0, 10)
        );
        assert_eq!(b.lock(&fh, 7, 9, 100, false).await, Nlm4Stats::Denied);

        // NFSv4 on the same file.
        let (c4, o) = v4_open(&srv, "shared").await;
        let owner = c4.new_owner("v4-lock");
        let e = c4
            .lock(
                &o.fh,
                NfsLockType4::ReadLt,
                5,
                1,
                c4.new_locker(o.stateid, owner.clone()),
            )
            .await
            .unwrap_err();
        assert_eq!(e.status(), Some(NfsStat4::Nfs4errDenied));
        assert_eq!(e.denied().map(|d| (d.offset, d.length)), Some((0, 10)));
        let ls = c4
            .lock(
                &o.fh,
                NfsLockType4::WriteLt,
                100,
                50,
                c4.new_locker(o.stateid, owner.clone()),
            )
            .await
            .unwrap();
        let h = denied_holder(b.test(&fh, 7, 120, 0).await);
        assert_eq!(
            (h.svid, h.l_offset, h.l_len, h.exclusive),
            (0, 100, 50, true)
        );
        assert_eq!(b.lock(&fh, 7, 149, 1, false).await, Nlm4Stats::Denied);
        // Released by NFSv4: NLM gets it.
        c4.locku(&o.fh, NfsLockType4::WriteLt, ls, 100, 50)
            .await
            .unwrap();
        assert_eq!(b.lock(&fh, 7, 149, 1, false).await, Nlm4Stats::Granted);
        // Released by NLM: NFSv4 gets it.
        assert_eq!(a.unlock(&fh, 11, 0, 0).await, Nlm4Stats::Granted);
        c4.lock(
            &o.fh,
            NfsLockType4::WriteLt,
            0,
            10,
            c4.new_locker(o.stateid, c4.new_owner("v4-2")),
        )
        .await
        .unwrap();
    })
    .await;
}

/// An NFSv4 client waiting (WRITEW_LT) behind an NLM lock is told when it
/// goes (CB_NOTIFY_LOCK naming the file as the waiter did), by UNLOCK and
/// by its host's FREE_ALL, and its retry is granted.
#[tokio::test]
async fn nfsv4_waiter_behind_nlm_is_notified() {
    within(async {
        let fake = fake_host().await;
        let srv = server_for(&fake, Duration::ZERO).await;
        let (_c3, fh) = v3_file(&srv, "w").await;
        let a = Host::connect(&srv, "host-a").await;
        assert_eq!(a.lock(&fh, 1, 0, 10, false).await, Nlm4Stats::Granted);
        let (c4, o) = v4_open(&srv, "w").await;
        let owner = c4.new_owner("waiter");
        let e = c4
            .lock(
                &o.fh,
                NfsLockType4::WritewLt,
                0,
                10,
                c4.new_locker(o.stateid, owner.clone()),
            )
            .await
            .unwrap_err();
        assert_eq!(e.status(), Some(NfsStat4::Nfs4errDenied));
        assert!(c4.callbacks().lock_notices().is_empty());
        assert_eq!(a.unlock(&fh, 1, 0, 0).await, Nlm4Stats::Granted);
        let n = notices(&c4, 1).await;
        assert_eq!(n.len(), 1, "CB_NOTIFY_LOCK");
        assert_eq!((&n[0].fh, &n[0].lock_owner.owner), (&o.fh, &owner.owner));
        let ls = c4
            .lock(
                &o.fh,
                NfsLockType4::WritewLt,
                0,
                10,
                c4.new_locker(o.stateid, owner.clone()),
            )
            .await
            .unwrap();
        // Again behind host B, which restarts (FREE_ALL).
        c4.locku(&o.fh, NfsLockType4::WriteLt, ls, 0, 10)
            .await
            .unwrap();
        let b = Host::connect(&srv, "host-b").await;
        assert_eq!(b.lock(&fh, 2, 5, 1, false).await, Nlm4Stats::Granted);
        let owner2 = c4.new_owner("waiter2");
        let e = c4
            .lock(
                &o.fh,
                NfsLockType4::WritewLt,
                0,
                10,
                c4.new_locker(o.stateid, owner2.clone()),
            )
            .await
            .unwrap_err();
        assert_eq!(e.status(), Some(NfsStat4::Nfs4errDenied));
        b.free_all().await;
        let n = notices(&c4, 2).await;
        assert_eq!(n.len(), 2, "a second CB_NOTIFY_LOCK");
        assert_eq!(n[1].lock_owner.owner, owner2.owner);
    })
    .await;
}

/// A blocked NLM lock is granted when the NFSv4 lock in its way goes: the
/// server calls the host back with NLM_GRANTED naming the lock as it was
/// asked for. A host that answers it no longer waits gets the lock
/// released.
#[tokio::test]
async fn blocked_nlm_lock_is_granted_by_callback() {
    within(async {
        let mut fake = fake_host().await;
        let srv = server_for(&fake, Duration::ZERO).await;
        let (_c3, fh) = v3_file(&srv, "queue").await;
        let (c4, o) = v4_open(&srv, "queue").await;
        let ls = c4
            .lock(
                &o.fh,
                NfsLockType4::WriteLt,
                0,
                u64::MAX,
                c4.new_locker(o.stateid, c4.new_owner("w")),
            )
            .await
            .unwrap();
        let b = Host::connect(&srv, "host-b").await;
        assert_eq!(b.lock(&fh, 42, 10, 5, true).await, Nlm4Stats::Blocked);
        assert!(fake.granted.try_recv().is_err());
        c4.locku(&o.fh, NfsLockType4::WriteLt, ls, 0, u64::MAX)
            .await
            .unwrap();
        let g = tokio::time::timeout(PATIENCE, fake.granted.recv())
            .await
            .expect("NLM_GRANTED in time")
            .unwrap();
        assert_eq!(
            (g.alock.svid, g.alock.l_offset, g.alock.l_len, g.exclusive),
            (42, 10, 5, true)
        );
        assert_eq!(g.alock.fh.0, fh.data);
        assert_eq!(&g.cookie.0[..], b"ck");
        // B holds it now.
        let a = Host::connect(&srv, "host-a").await;
        assert_eq!(denied_holder(a.test(&fh, 1, 12, 1).await).svid, 42);
        // B's client retries its LOCK (as Linux does): granted.
        assert_eq!(b.lock(&fh, 42, 10, 5, true).await, Nlm4Stats::Granted);

        // A waits behind B; the host answers NLM_GRANTED with DENIED:
        // the lock goes again.
        *fake.answer.lock().unwrap() = Nlm4Stats::Denied;
        assert_eq!(a.lock(&fh, 1, 0, 0, true).await, Nlm4Stats::Blocked);
        assert_eq!(b.unlock(&fh, 42, 10, 5).await, Nlm4Stats::Granted);
        let g = tokio::time::timeout(PATIENCE, fake.granted.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(g.alock.svid, 1);
        let free = async {
            loop {
                if matches!(
                    b.test(&fh, 9, 0, 0).await,
                    Nlm4TestRply::Other(Nlm4Stats::Granted)
                ) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(PATIENCE, free)
            .await
            .expect("released");

        // CANCEL of a queued request: nothing is granted later.
        assert_eq!(b.lock(&fh, 5, 0, 1, false).await, Nlm4Stats::Granted);
        assert_eq!(a.lock(&fh, 2, 0, 1, true).await, Nlm4Stats::Blocked);
        let cancel = Nlm4CancArgs {
            cookie: Netobj::default(),
            block: true,
            exclusive: true,
            alock: a.alock(&fh, 2, 0, 1),
        };
        let r: Nlm4Res = a.call(NLMPROC4_CANCEL, &cancel).await;
        assert_eq!(r.stat, Nlm4Stats::Granted);
        assert_eq!(b.unlock(&fh, 5, 0, 1).await, Nlm4Stats::Granted);
        tokio::time::sleep(QUIET).await;
        assert!(
            fake.granted.try_recv().is_err(),
            "a cancelled request was granted"
        );
        assert!(matches!(
            b.test(&fh, 9, 0, 0).await,
            Nlm4TestRply::Other(Nlm4Stats::Granted)
        ));
    })
    .await;
}

/// After a restart the server tells each host that held locks
/// (SM_NOTIFY, with a new odd state number and the server's address as
/// the host reached it), and in the grace period grants only reclaims.
/// SM_NOTIFY from a host that restarted frees its locks; so does FREE_ALL.
#[tokio::test]
async fn restart_notifies_and_grace_admits_reclaims() {
    within(async {
        let mut fake = fake_host().await;
        // Long enough that the refusals and the reclaim below all come in
        // it on a busy machine (they take milliseconds).
        let grace = Duration::from_secs(10);
        let mut srv = server_for(&fake, grace).await;
        let (_c3, fh) = v3_file(&srv, "reclaimed").await;
        let a = Host::connect(&srv, "host-a").await;
        assert_eq!(a.lock(&fh, 3, 0, 100, false).await, Nlm4Stats::Granted);
        drop(a);
        srv.restart().await;
        let n = tokio::time::timeout(PATIENCE, fake.notified.recv())
            .await
            .expect("SM_NOTIFY in time")
            .unwrap();
        assert_eq!(&n.mon_name[..], b"127.0.0.1");
        assert_eq!(n.state % 2, 1);
        assert!(n.state >= 3, "state {}", n.state);
        let a = Host::connect(&srv, "host-a").await;
        let b = Host::connect(&srv, "host-b").await;
        assert_eq!(
            b.lock(&fh, 4, 0, 1, false).await,
            Nlm4Stats::DeniedGracePeriod
        );
        assert!(matches!(
            b.test(&fh, 4, 0, 1).await,
            Nlm4TestRply::Other(Nlm4Stats::DeniedGracePeriod)
        ));
        assert_eq!(
            a.lock_as(&fh, 3, 0, 100, true, false, true).await,
            Nlm4Stats::Granted
        );
        // After the grace period (its end moves while reclaims come, and
        // the reaper ends it): B is denied by A's reclaimed lock.
        let after = async {
            loop {
                match b.lock(&fh, 4, 0, 1, false).await {
                    Nlm4Stats::DeniedGracePeriod => {
                        tokio::time::sleep(Duration::from_millis(200)).await
                    }
                    s => break s,
                }
            }
        };
        // At most its length plus two leases (10 s here: it lasts while
        // recorded hosts make progress), then the reaper's turn.
        let s = tokio::time::timeout(grace + 2 * Duration::from_secs(10) + PATIENCE, after)
            .await
            .expect("the grace period ends");
        assert_eq!(s, Nlm4Stats::Denied);
        // A's host restarts and says so: its locks go.
        let sm = rpc::connect(srv.addr, None, Default::default())
            .await
            .unwrap();
        let notify = StatChge {
            mon_name: Bytes::from_static(b"host-a"),
            state: 5,
        };
        sm.call_with(
            SM_PROG,
            SM_VERS,
            SM_NOTIFY,
            &root_auth().to_opaque(),
            &notify,
        )
        .await
        .unwrap();
        assert_eq!(b.lock(&fh, 4, 0, 1, false).await, Nlm4Stats::Granted);
        // FREE_ALL of B (a client without a status monitor).
        b.free_all().await;
        assert_eq!(a.lock(&fh, 3, 0, 1, false).await, Nlm4Stats::Granted);
        // SM_STAT answers the state number.
        let mut d = sm
            .call_with(
                SM_PROG,
                SM_VERS,
                SM_STAT,
                &root_auth().to_opaque(),
                &SmName {
                    mon_name: Bytes::from_static(b"x"),
                },
            )
            .await
            .unwrap();
        assert_eq!(SmStatRes::unpack(&mut d).unwrap().state, n.state);
    })
    .await;
}

/// NLM shares and NFSv4 share reservations exclude each other; NFSv3
/// WRITE is refused under a deny-write reservation.
#[tokio::test]
async fn shares_and_deny_modes() {
    within(async {
        let fake = fake_host().await;
        let srv = server_for(&fake, Duration::ZERO).await;
        let (c3, fh) = v3_file(&srv, "shared").await;
        let a = Host::connect(&srv, "host-a").await;
        assert_eq!(
            a.share(&fh, Fsh4Access::Read, Fsh4Mode::DenyWrite, NLMPROC4_SHARE)
                .await,
            Nlm4Stats::Granted
        );
        let c4 = srv.client().await;
        let root4 = c4.root_fh().await.unwrap();
        let e = c4
            .open(&root4, "shared", client::OpenOpts::write())
            .await
            .unwrap_err();
        assert_eq!(e.status(), Some(NfsStat4::Nfs4errShareDenied));
        let w = c3
            .write(&fh, 0, Bytes::from_static(b"x"), StableHow::FileSync)
            .await
            .unwrap_err();
        assert_eq!(w.status(), Some(NfsStat3::Acces));
        c3.read(&fh, 0, 10).await.unwrap();
        assert_eq!(
            a.share(&fh, Fsh4Access::Read, Fsh4Mode::DenyWrite, NLMPROC4_UNSHARE)
                .await,
            Nlm4Stats::Granted
        );
        c3.write(&fh, 0, Bytes::from_static(b"x"), StableHow::FileSync)
            .await
            .unwrap();
        // An NFSv4 deny-read open: NLM may not share for reading, NFSv3
        // may not read.
        let mut opts = client::OpenOpts::read();
        opts.deny = OPEN4_SHARE_DENY_READ;
        let o = c4.open(&root4, "shared", opts).await.unwrap();
        assert_eq!(
            a.share(&fh, Fsh4Access::Read, Fsh4Mode::DenyNone, NLMPROC4_SHARE)
                .await,
            Nlm4Stats::Denied
        );
        assert_eq!(
            c3.read(&fh, 0, 10).await.unwrap_err().status(),
            Some(NfsStat3::Acces)
        );
        c4.close(&o.fh, o.stateid).await.unwrap();
        c3.read(&fh, 0, 10).await.unwrap();
    })
    .await;
}

/// An NLM lock recalls the NFSv4 delegations of its file, read ones too
/// (the Linux client takes locks under either kind in its cache, unseen
/// by the server), and no delegation is granted of a file with NLM locks.
#[tokio::test]
async fn nlm_locks_recall_and_forbid_delegations() {
    within(async {
        let fake = fake_host().await;
        let srv = TestServer::start_aux_delegating(aux_for(&fake)).await;
        let (_c3, fh) = v3_file(&srv, "d").await;
        let c4 = srv.client().await;
        let root4 = c4.root_fh().await.unwrap();
        let want = client::OpenOpts {
            access: OPEN4_SHARE_ACCESS_READ | OPEN4_SHARE_ACCESS_WANT_READ_DELEG,
            ..Default::default()
        };
        let o = c4.open(&root4, "d", want.clone()).await.unwrap();
        assert!(
            matches!(o.delegation, OpenDelegation4::Read(_)),
            "{:?}",
            o.delegation
        );
        let a = Host::connect(&srv, "host-a").await;
        assert_eq!(
            a.lock_as(&fh, 1, 0, 1, false, false, false).await,
            Nlm4Stats::Granted
        );
        assert_eq!(
            recalls(&c4, 1).await.len(),
            1,
            "the read delegation was recalled"
        );
        c4.close(&o.fh, o.stateid).await.unwrap();
        // While the NLM lock is held: no delegation, read or write.
        let again = c4.open(&root4, "d", want).await.unwrap();
        assert!(
            matches!(
                again.delegation,
                OpenDelegation4::NoneExt(_) | OpenDelegation4::None
            ),
            "{:?}",
            again.delegation
        );
        c4.close(&again.fh, again.stateid).await.unwrap();
        // A file locked through NLM first (no recall, no recent conflict):
        // still no delegation.
        let (_c3e, fe) = v3_file(&srv, "e").await;
        assert_eq!(
            a.lock_as(&fe, 1, 0, 1, false, false, false).await,
            Nlm4Stats::Granted
        );
        let mut w = client::OpenOpts::both();
        w.access |= OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG;
        let ow = c4.open(&root4, "e", w).await.unwrap();
        assert!(
            !matches!(
                ow.delegation,
                OpenDelegation4::Write(_) | OpenDelegation4::Read(_)
            ),
            "{:?}",
            ow.delegation
        );
    })
    .await;
}

/// Bad input: undecodable arguments are GARBAGE_ARGS, a filehandle this
/// server did not make is NLM4_STALE_FH, a range past 2^64 NLM4_FBIG; the
/// connection keeps serving.
#[tokio::test]
async fn bad_nlm_input() {
    within(async {
        let fake = fake_host().await;
        let srv = server_for(&fake, Duration::ZERO).await;
        let (_c3, fh) = v3_file(&srv, "f").await;
        let a = Host::connect(&srv, "host-a").await;
        let junk = a
            .conn
            .call(
                NLM_PROG,
                NLM4_VERS,
                NLMPROC4_LOCK,
                &root_auth().to_opaque(),
                vec![Bytes::from_static(&[0, 0, 0, 9, 1])],
            )
            .await
            .unwrap_err();
        assert_eq!(junk, rpc::CallError::Rejected(ReplyError::GarbageArgs));
        let forged = NfsFh3 {
            data: Bytes::from(vec![7u8; 40]),
        };
        assert_eq!(a.lock(&forged, 1, 0, 1, false).await, Nlm4Stats::StaleFh);
        let long = NfsFh3 {
            data: Bytes::from(vec![7u8; 100]),
        };
        assert_eq!(a.lock(&long, 1, 0, 1, false).await, Nlm4Stats::StaleFh);
        assert_eq!(a.lock(&fh, 1, u64::MAX, 2, false).await, Nlm4Stats::Fbig);
        let bad = a
            .conn
            .call(NLM_PROG, NLM4_VERS, 99, &root_auth().to_opaque(), vec![])
            .await
            .unwrap_err();
        assert_eq!(bad, rpc::CallError::Rejected(ReplyError::ProcUnavail));
        assert_eq!(a.lock(&fh, 1, 0, 1, false).await, Nlm4Stats::Granted);
        // NLM_GRANTED to the server: it waits for no lock.
        let g = Nlm4TestArgs {
            cookie: Netobj::default(),
            exclusive: true,
            alock: a.alock(&fh, 1, 0, 1),
        };
        let r: Nlm4Res = a.call(NLMPROC4_GRANTED, &g).await;
        assert_eq!(r.stat, Nlm4Stats::Denied);
    })
    .await;
}

/// Where a system port mapper holds port 111, Ferrite registers its
/// programs there: every transport of each (UNSET clears all of a
/// program's transports, so all are cleared before any is set), and
/// takes them off at stop. A port mapper that takes local SETs stands for
/// the system's.
#[tokio::test]
async fn registration_with_a_system_port_mapper() {
    within(async {
        let pm = server::v3::portmap::Portmap::new(Vec::new());
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let at = l.local_addr().unwrap();
        let svc: Arc<dyn Service> = Arc::new(rpc::Programs::new().add(
            proto::portmap::PMAP_PROG,
            2,
            4,
            Arc::new(server::v3::portmap::PortmapService(pm)),
        ));
        let (_stop, rx) = tokio::sync::watch::channel(false);
        tokio::spawn(rpc::serve(l, svc, Default::default(), rx));
        let nfs: SocketAddr = "127.0.0.1:2049".parse().unwrap();
        let entry = |prog, vers, netid: &str| server::v3::portmap::Entry {
            prog,
            vers,
            netid: netid.into(),
            addr: nfs,
            owner: "ferrite".into(),
        };
        let entries = vec![
            entry(NLM_PROG, NLM4_VERS, "tcp"),
            entry(NLM_PROG, NLM4_VERS, "udp"),
            entry(SM_PROG, SM_VERS, "tcp"),
        ];
        assert_eq!(
            server::v3::portmap::register_with(at, &entries, false).await,
            3
        );
        let mut got: Vec<(u32, u32)> = client::portmap::dump(at)
            .await
            .unwrap()
            .iter()
            .map(|m| (m.prog, m.prot))
            .collect();
        got.sort();
        assert_eq!(
            got,
            vec![
                (NLM_PROG, proto::portmap::IPPROTO_TCP),
                (NLM_PROG, proto::portmap::IPPROTO_UDP),
                (SM_PROG, proto::portmap::IPPROTO_TCP)
            ]
        );
        // Again (a restart): the same three, not duplicates.
        assert_eq!(
            server::v3::portmap::register_with(at, &entries, false).await,
            3
        );
        assert_eq!(client::portmap::dump(at).await.unwrap().len(), 3);
        server::v3::portmap::register_with(at, &entries, true).await;
        assert!(client::portmap::dump(at).await.unwrap().is_empty());
    })
    .await;
}

/// NLM locks are shared with local processes too (issue 33): a host's
/// lock and a local one refuse each other both ways (NLM TEST names the
/// local one), and a host blocked by a local lock is granted (NLM_GRANTED)
/// once the local process lets go.
#[tokio::test]
async fn nlm_and_local_locks_refuse_each_other_and_a_blocked_host_is_granted() {
    within(async {
        let mut fake = fake_host().await;
        let srv = server_for(&fake, Duration::ZERO).await;
        let (_c3, fh) = v3_file(&srv, "shared").await;
        let local = local_file(&srv, "shared");
        let a = Host::connect(&srv, "host-a").await;
        // The host's lock refuses the local one.
        assert_eq!(a.lock(&fh, 7, 0, 100, false).await, Nlm4Stats::Granted);
        assert!(!local_lock(&local, libc::F_RDLCK, 10, 1));
        assert!(local_lock(&local, libc::F_WRLCK, 100, 50));
        // The local one refuses the host's, and TEST names it.
        assert_eq!(a.lock(&fh, 8, 120, 1, false).await, Nlm4Stats::Denied);
        let h = denied_holder(a.test(&fh, 8, 110, 1).await);
        assert_eq!((h.l_offset, h.l_len, h.exclusive), (100, 50, true));
        // UNLOCK: the local process may take that range.
        assert_eq!(a.unlock(&fh, 7, 0, 50).await, Nlm4Stats::Granted);
        assert!(local_lock(&local, libc::F_RDLCK, 0, 10));
        assert!(!local_lock(&local, libc::F_RDLCK, 60, 1));
        // Blocked behind the local lock, granted after the local unlock.
        assert_eq!(a.lock(&fh, 9, 100, 10, true).await, Nlm4Stats::Blocked);
        tokio::time::sleep(QUIET).await;
        assert!(fake.granted.try_recv().is_err());
        assert!(local_lock(&local, libc::F_UNLCK, 0, 0));
        let g = tokio::time::timeout(PATIENCE, fake.granted.recv())
            .await
            .expect("NLM_GRANTED after the local unlock")
            .unwrap();
        assert_eq!(
            (g.alock.svid, g.alock.l_offset, g.alock.l_len),
            (9, 100, 10)
        );
        assert!(!local_lock(&local, libc::F_RDLCK, 105, 1));
        // FREE_ALL: nothing of the host's is left in the kernel.
        a.free_all().await;
        assert!(local_lock(&local, libc::F_WRLCK, 0, 0));
    })
    .await;
}
