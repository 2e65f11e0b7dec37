//! Network Lock Manager version 4 client (RFC 1813 Appendix II): byte-range
//! locks on NFSv3 files.
//!
//! [`Nlm::connect`] opens one TCP connection to the server's lock manager;
//! every method sends one procedure on it (any number may be in flight;
//! clone the [`Nlm`] to share it). Locks are never blocking (`block` =
//! false): a conflicting LOCK answers NLM4_DENIED at once, so the server
//! never calls back (NLMPROC4_GRANTED) and no callback service is needed.
//!
//! A lock owner is the pair (`oh`, `svid`) within the client named by
//! `caller_name` (XNFS ch. 10): two owners conflict, one owner's locks
//! merge. Each call carries a fresh cookie (a counter), which the server
//! echoes in its result.
//!
//! The client does not run an NSM (status monitor): every LOCK carries the
//! fixed state number [`NSM_STATE`]. A server that monitors clients (SM_MON
//! to its own statd on the first LOCK) still grants locks; it just can
//! never be told that this client restarted, so locks left behind by a
//! client that died are freed with [`Nlm::free_all`] (or by the server's
//! administrator), not by reboot recovery.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use proto::nfs3::NfsFh3;
use proto::nlm::*;
use rpc::{Connection, OpaqueAuth};
use xdr::{Encoder, Pack, Unpack};

use super::{Error, Result};
use crate::observe::{CallInfo, Observer};

/// The NSM state number sent in every LOCK (`nlm4_lockargs.state`). NSM
/// state numbers are odd while a host is up (even once it has gone down);
/// this client never restarts its "NSM", so it always claims 1.
pub const NSM_STATE: i32 = 1;

/// An NLM version 4 client on one connection. Cheap to clone; clones share
/// the connection, the cookie counter and the observer.
#[derive(Clone)]
pub struct Nlm {
    inner: Arc<Inner>,
}

struct Inner {
    conn: Arc<Connection>,
    cred: OpaqueAuth,
    caller_name: Bytes,
    next_cookie: AtomicU64,
    observer: OnceLock<Observer>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.conn.close();
    }
}

impl std::fmt::Debug for Nlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("v3::Nlm")
            .field("conn", &self.inner.conn)
            .field(
                "caller_name",
                &String::from_utf8_lossy(&self.inner.caller_name),
            )
            .finish()
    }
}

fn invalid(msg: String) -> Error {
    Error::Io(std::io::Error::new(std::io::ErrorKind::InvalidInput, msg))
}

/// A reply whose status decides whether the call counts as successful.
trait NlmReply {
    /// The status is NLM4_GRANTED (true for replies without one: NULL).
    fn granted(&self) -> bool;
}

impl NlmReply for () {
    fn granted(&self) -> bool {
        true
    }
}

impl NlmReply for Nlm4Res {
    fn granted(&self) -> bool {
        self.stat == Nlm4Stats::Granted
    }
}

impl NlmReply for Nlm4TestRes {
    fn granted(&self) -> bool {
        self.stat.stat() == Nlm4Stats::Granted
    }
}

impl Nlm {
    /// Connects to the lock manager at `addr`. `caller_name` names this
    /// client host in every lock (at most [`LM_MAXSTRLEN`] bytes); `auth`
    /// is sent with every call.
    pub async fn connect(addr: SocketAddr, caller_name: &str, auth: rpc::Auth) -> Result<Nlm> {
        Self::connect_with(addr, caller_name, auth, rpc::ConnConfig::default()).await
    }

    /// [`Nlm::connect`] with explicit connection limits.
    pub async fn connect_with(
        addr: SocketAddr,
        caller_name: &str,
        auth: rpc::Auth,
        cfg: rpc::ConnConfig,
    ) -> Result<Nlm> {
        if caller_name.len() > LM_MAXSTRLEN {
            return Err(invalid(format!(
                "NLM caller name of {} bytes (at most {LM_MAXSTRLEN})",
                caller_name.len()
            )));
        }
        let conn = rpc::connect(addr, None, cfg).await?;
        Ok(Self::from_connection(conn, caller_name, auth))
    }

    /// A client on an existing connection.
    pub fn from_connection(conn: Arc<Connection>, caller_name: &str, auth: rpc::Auth) -> Nlm {
        Nlm {
            inner: Arc::new(Inner {
                conn,
                cred: auth.to_opaque(),
                caller_name: Bytes::copy_from_slice(caller_name.as_bytes()),
                next_cookie: AtomicU64::new(1),
                observer: OnceLock::new(),
            }),
        }
    }

    /// The connection to the lock manager.
    pub fn connection(&self) -> &Arc<Connection> {
        &self.inner.conn
    }

    /// The `caller_name` sent in every lock.
    pub fn caller_name(&self) -> &[u8] {
        &self.inner.caller_name
    }

    /// Sets the observer told of every call (once per client; later calls
    /// are ignored and return false). A call is `ok` when its reply decoded
    /// and its status is NLM4_GRANTED (NULL: when it got a reply).
    pub fn set_observer(&self, o: Observer) -> bool {
        self.inner.observer.set(o).is_ok()
    }

    /// Closes the connection.
    pub fn close(&self) {
        self.inner.conn.close();
    }

    fn cookie(&self) -> Netobj {
        let n = self.inner.next_cookie.fetch_add(1, Ordering::Relaxed);
        Netobj(Bytes::copy_from_slice(&n.to_be_bytes()))
    }

    fn alock(
        &self,
        fh: &NfsFh3,
        owner: &[u8],
        svid: i32,
        offset: u64,
        len: u64,
    ) -> Result<Nlm4Lock> {
        if owner.len() > MAXNETOBJ_SZ {
            return Err(invalid(format!(
                "NLM lock owner of {} bytes (at most {MAXNETOBJ_SZ})",
                owner.len()
            )));
        }
        Ok(Nlm4Lock {
            caller_name: self.inner.caller_name.clone(),
            fh: Netobj(fh.data.clone()),
            oh: Netobj(Bytes::copy_from_slice(owner)),
            svid,
            l_offset: offset,
            l_len: len,
        })
    }

    fn observe(&self, proc_: u32, args_len: usize, results_len: usize, rtt: Duration, ok: bool) {
        if let Some(o) = self.inner.observer.get() {
            o(&CallInfo {
                program: NLM_PROG,
                proc_,
                args_len: args_len as u64,
                results_len: results_len as u64,
                rtt,
                ok,
            });
        }
    }

    /// Sends procedure `proc_` and decodes its result, telling the observer.
    async fn call<A: Pack, R: Unpack + NlmReply>(&self, proc_: u32, args: &A) -> Result<R> {
        let mut e = Encoder::new();
        args.pack(&mut e);
        let sent = e.len();
        let started = Instant::now();
        let reply = self
            .inner
            .conn
            .call(NLM_PROG, NLM4_VERS, proc_, &self.inner.cred, e.finish())
            .await;
        let rtt = started.elapsed();
        let mut d = match reply {
            Ok(d) => d,
            Err(err) => {
                self.observe(proc_, sent, 0, rtt, false);
                return Err(err.into());
            }
        };
        let received = d.remaining();
        match R::unpack(&mut d) {
            Ok(r) => {
                self.observe(proc_, sent, received, rtt, r.granted());
                Ok(r)
            }
            Err(err) => {
                self.observe(proc_, sent, received, rtt, false);
                Err(Error::Xdr(err))
            }
        }
    }

    /// [`Nlm::call`] for an `nlm4_res`: Ok if NLM4_GRANTED, else
    /// [`Error::Nlm`].
    async fn call_res<A: Pack>(&self, proc_: u32, args: &A) -> Result<()> {
        let r: Nlm4Res = self.call(proc_, args).await?;
        match r.stat {
            Nlm4Stats::Granted => Ok(()),
            stat => Err(Error::Nlm { proc_, stat }),
        }
    }

    /// NLMPROC4_NULL.
    pub async fn null(&self) -> Result<()> {
        self.call(NLMPROC4_NULL, &()).await
    }

    /// NLMPROC4_LOCK, non-blocking, of `[offset, offset + len)` of `fh`
    /// (`len` 0: to the end of the file) for the owner (`owner`, `svid`),
    /// shared or `exclusive`. Ok if granted; otherwise [`Error::Nlm`] with
    /// the status (NLM4_DENIED: a conflicting lock is held).
    pub async fn lock(
        &self,
        fh: &NfsFh3,
        owner: &[u8],
        svid: i32,
        exclusive: bool,
        offset: u64,
        len: u64,
    ) -> Result<()> {
        let args = Nlm4LockArgs {
            cookie: self.cookie(),
            block: false,
            exclusive,
            alock: self.alock(fh, owner, svid, offset, len)?,
            reclaim: false,
            state: NSM_STATE,
        };
        self.call_res(NLMPROC4_LOCK, &args).await
    }

    /// NLMPROC4_UNLOCK of `[offset, offset + len)` of `fh` held by
    /// (`owner`, `svid`). Servers answer NLM4_GRANTED even when nothing
    /// was locked.
    pub async fn unlock(
        &self,
        fh: &NfsFh3,
        owner: &[u8],
        svid: i32,
        offset: u64,
        len: u64,
    ) -> Result<()> {
        let args = Nlm4UnlockArgs {
            cookie: self.cookie(),
            alock: self.alock(fh, owner, svid, offset, len)?,
        };
        self.call_res(NLMPROC4_UNLOCK, &args).await
    }

    /// NLMPROC4_TEST: could (`owner`, `svid`) lock `[offset, offset + len)`
    /// of `fh` (shared or `exclusive`)? `None` if so; the holder of a
    /// conflicting lock if not (NLM4_DENIED); [`Error::Nlm`] for any other
    /// status.
    pub async fn test(
        &self,
        fh: &NfsFh3,
        owner: &[u8],
        svid: i32,
        exclusive: bool,
        offset: u64,
        len: u64,
    ) -> Result<Option<Nlm4Holder>> {
        let args = Nlm4TestArgs {
            cookie: self.cookie(),
            exclusive,
            alock: self.alock(fh, owner, svid, offset, len)?,
        };
        let r: Nlm4TestRes = self.call(NLMPROC4_TEST, &args).await?;
        match r.stat {
            Nlm4TestRply::Denied(h) => Ok(Some(h)),
            Nlm4TestRply::Other(Nlm4Stats::Granted) => Ok(None),
            Nlm4TestRply::Other(stat) => Err(Error::Nlm {
                proc_: NLMPROC4_TEST,
                stat,
            }),
        }
    }

    /// NLMPROC4_FREE_ALL: asks the server to drop every lock held by this
    /// `caller_name` (no reply is defined, so nothing says it happened).
    /// Sent as a call; servers that treat it as a one-way message never
    /// answer, so this waits at most `timeout` and then returns Ok.
    pub async fn free_all(&self, timeout: Duration) -> Result<()> {
        let args = Nlm4Notify {
            name: self.inner.caller_name.clone(),
            state: NSM_STATE,
        };
        match tokio::time::timeout(timeout, self.call::<_, ()>(NLMPROC4_FREE_ALL, &args)).await {
            Ok(r) => r,
            Err(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::Mutex;

    use rpc::{Call, Programs, Reply, ReplyFuture, Service};

    use super::*;

    /// A lock of a whole file: (fh, caller, oh, svid, exclusive).
    type Held = (Bytes, Bytes, Bytes, i32, bool);

    #[derive(Default)]
    struct FakeNlm {
        locks: Mutex<Vec<Held>>,
        last_lock: Mutex<Option<Nlm4LockArgs>>,
        cookies: Mutex<Vec<(Bytes, Bytes)>>,
    }

    impl FakeNlm {
        fn conflict(&self, l: &Nlm4Lock, exclusive: bool) -> Option<Nlm4Holder> {
            let locks = self.locks.lock().unwrap();
            locks
                .iter()
                .find(|(fh, caller, oh, svid, ex)| {
                    *fh == l.fh.0
                        && (caller, oh, *svid) != (&l.caller_name, &l.oh.0, l.svid)
                        && (*ex || exclusive)
                })
                .map(|(_, _, oh, svid, ex)| Nlm4Holder {
                    exclusive: *ex,
                    svid: *svid,
                    oh: Netobj(oh.clone()),
                    l_offset: 0,
                    l_len: 0,
                })
        }

        fn handle(&self, proc_: u32, d: &mut xdr::Decoder) -> xdr::Result<Reply> {
            Ok(match proc_ {
                NLMPROC4_NULL => Reply::success(&()),
                NLMPROC4_LOCK => {
                    let a = Nlm4LockArgs::unpack(d)?;
                    self.cookies
                        .lock()
                        .unwrap()
                        .push((a.alock.caller_name.clone(), a.cookie.0.clone()));
                    let stat = if &a.alock.fh.0[..] == b"stale" {
                        Nlm4Stats::StaleFh
                    } else if self.conflict(&a.alock, a.exclusive).is_some() {
                        Nlm4Stats::Denied
                    } else {
                        let l = &a.alock;
                        self.locks.lock().unwrap().push((
                            l.fh.0.clone(),
                            l.caller_name.clone(),
                            l.oh.0.clone(),
                            l.svid,
                            a.exclusive,
                        ));
                        Nlm4Stats::Granted
                    };
                    let cookie = a.cookie.clone();
                    *self.last_lock.lock().unwrap() = Some(a);
                    Reply::success(&Nlm4Res { cookie, stat })
                }
                NLMPROC4_UNLOCK => {
                    let a = Nlm4UnlockArgs::unpack(d)?;
                    let l = &a.alock;
                    self.locks
                        .lock()
                        .unwrap()
                        .retain(|(fh, caller, oh, svid, _)| {
                            (fh, caller, oh, *svid) != (&l.fh.0, &l.caller_name, &l.oh.0, l.svid)
                        });
                    Reply::success(&Nlm4Res {
                        cookie: a.cookie,
                        stat: Nlm4Stats::Granted,
                    })
                }
                NLMPROC4_TEST => {
                    let a = Nlm4TestArgs::unpack(d)?;
                    let stat = match self.conflict(&a.alock, a.exclusive) {
                        Some(h) => Nlm4TestRply::Denied(h),
                        None => Nlm4TestRply::Other(Nlm4Stats::Granted),
                    };
                    Reply::success(&Nlm4TestRes {
                        cookie: a.cookie,
                        stat,
                    })
                }
                NLMPROC4_FREE_ALL => {
                    let a = Nlm4Notify::unpack(d)?;
                    self.locks
                        .lock()
                        .unwrap()
                        .retain(|(_, caller, ..)| *caller != a.name);
                    Reply::success(&())
                }
                // A reply that does not decode as nlm4_res.
                NLMPROC4_CANCEL => Reply::success(&Netobj::default()),
                _ => Reply::Error(rpc::ReplyError::ProcUnavail),
            })
        }
    }

    struct Svc(Arc<FakeNlm>);

    impl Service for Svc {
        fn call(&self, mut call: Call) -> ReplyFuture {
            let fake = self.0.clone();
            Box::pin(async move {
                fake.handle(call.proc_, &mut call.args)
                    .unwrap_or(Reply::Error(rpc::ReplyError::GarbageArgs))
            })
        }
    }

    async fn start() -> (SocketAddr, Arc<FakeNlm>) {
        let fake = Arc::new(FakeNlm::default());
        let programs = Programs::new().add(NLM_PROG, 4, 4, Arc::new(Svc(fake.clone())));
        let addr = crate::serve_loopback(programs).await;
        (addr, fake)
    }

    fn fh(b: &'static [u8]) -> NfsFh3 {
        NfsFh3 {
            data: Bytes::from_static(b),
        }
    }

    #[tokio::test]
    async fn lock_test_unlock_against_a_fake_server() {
        let (addr, fake) = start().await;
        let auth = rpc::Auth::sys(0, 0, Vec::new(), "t");
        let nlm = Nlm::connect(addr, "host-1", auth.clone()).await.unwrap();
        let (calls, oks) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (c2, o2) = (calls.clone(), oks.clone());
        assert!(nlm.set_observer(Arc::new(move |i: &CallInfo| {
            assert_eq!(i.program, NLM_PROG);
            c2.fetch_add(1, Ordering::Relaxed);
            if i.ok {
                o2.fetch_add(1, Ordering::Relaxed);
            }
        })));
        nlm.null().await.unwrap();
        let f = fh(b"file");

        nlm.lock(&f, b"a", 1, true, 10, 20).await.unwrap();
        let sent = fake.last_lock.lock().unwrap().clone().unwrap();
        assert!(!sent.block && sent.exclusive && !sent.reclaim);
        assert_eq!(sent.state, NSM_STATE);
        assert_eq!(&sent.alock.caller_name[..], b"host-1");
        assert_eq!(&sent.alock.fh.0[..], b"file");
        assert_eq!((&sent.alock.oh.0[..], sent.alock.svid), (&b"a"[..], 1));
        assert_eq!((sent.alock.l_offset, sent.alock.l_len), (10, 20));

        let e = nlm.lock(&f, b"b", 2, false, 0, 0).await.unwrap_err();
        assert_eq!(e.nlm_stat(), Some(Nlm4Stats::Denied));
        assert_eq!(e.to_string(), "NLMPROC4_LOCK failed: Denied");
        let h = nlm.test(&f, b"b", 2, false, 0, 0).await.unwrap().unwrap();
        assert_eq!((&h.oh.0[..], h.svid, h.exclusive), (&b"a"[..], 1, true));
        nlm.unlock(&f, b"a", 1, 10, 20).await.unwrap();
        assert_eq!(nlm.test(&f, b"b", 2, true, 0, 0).await.unwrap(), None);

        // Another caller name is another owner; FREE_ALL drops one host's.
        let other = Nlm::connect(addr, "host-2", auth).await.unwrap();
        other.lock(&f, b"a", 1, false, 0, 0).await.unwrap();
        nlm.lock(&f, b"a", 1, false, 0, 0).await.unwrap();
        assert!(nlm.lock(&f, b"c", 3, true, 0, 0).await.is_err());
        // The fake answers FREE_ALL: the limit is only for a hang.
        nlm.free_all(Duration::from_secs(30)).await.unwrap();
        other.free_all(Duration::from_secs(30)).await.unwrap();
        nlm.lock(&f, b"c", 3, true, 0, 0).await.unwrap();

        let e = nlm
            .lock(&fh(b"stale"), b"a", 1, true, 0, 0)
            .await
            .unwrap_err();
        assert!(matches!(
            e,
            Error::Nlm {
                proc_: NLMPROC4_LOCK,
                stat: Nlm4Stats::StaleFh
            }
        ));
        // A reply that does not decode is an error, not a panic.
        let r: Result<Nlm4Res> = nlm
            .call(
                NLMPROC4_CANCEL,
                &Nlm4CancArgs {
                    cookie: Netobj::default(),
                    block: false,
                    exclusive: false,
                    alock: nlm.alock(&f, b"a", 1, 0, 0).unwrap(),
                },
            )
            .await;
        assert!(matches!(r, Err(Error::Xdr(_))), "{r:?}");
        // Owners and caller names beyond the protocol's bounds never leave.
        let long = vec![0u8; MAXNETOBJ_SZ + 1];
        assert!(matches!(
            nlm.lock(&f, &long, 1, true, 0, 0).await,
            Err(Error::Io(_))
        ));
        let name = "n".repeat(LM_MAXSTRLEN + 1);
        assert!(Nlm::connect(addr, &name, rpc::Auth::None).await.is_err());

        // Cookies are fresh per call (of each client).
        let cookies = fake.cookies.lock().unwrap().clone();
        let mut uniq = cookies.clone();
        uniq.sort();
        uniq.dedup();
        assert_eq!(uniq.len(), cookies.len());

        // Counted on the first client only: NULL, 6 LOCKs, 2 TESTs, UNLOCK,
        // FREE_ALL, CANCEL; not ok: 2 denied LOCKs, the stale LOCK, the
        // TEST that found a holder and the undecodable CANCEL.
        assert_eq!(calls.load(Ordering::Relaxed), 12);
        assert_eq!(oks.load(Ordering::Relaxed), 7);
    }
}
