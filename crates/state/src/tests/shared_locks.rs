//! Locks shared with local processes (`crate::shared`), over an
//! in-memory kernel: NFS locks and local ones deny each other both ways,
//! waiters blocked by a local lock are polled and get the range held for
//! them, a dead client stops blocking local processes at its lease's
//! end, and no descriptor means NFS4ERR_DELAY.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

use super::*;
use crate::locks::FileLocks;
use crate::shared::{LocalLock, Shared, SharedLocks, LOCAL_CLIENT};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Who {
    Nfs(OwnerKey),
    Local(u32),
}

/// The kernel's locks of each file, and the descriptions NFS owners
/// hold (open for writing or not).
#[derive(Default)]
struct Kernel {
    locks: Mutex<HashMap<FileKey, FileLocks<Who>>>,
    descs: Mutex<HashMap<(OwnerKey, FileKey), bool>>,
    busy: AtomicBool,
}

impl Kernel {
    fn local_lock(&self, pid: u32, f: &FileKey, range: (u64, u64), kind: LockKind) -> bool {
        let mut l = self.locks.lock().unwrap();
        let fl = l.entry(f.clone()).or_default();
        fl.lock(&Who::Local(pid), range.0, range.1, kind).is_ok()
    }

    fn local_unlock(&self, pid: u32, f: &FileKey) {
        if let Some(fl) = self.locks.lock().unwrap().get_mut(f) {
            fl.remove_owner(&Who::Local(pid));
        }
    }

    fn descs(&self) -> usize {
        self.descs.lock().unwrap().len()
    }
}

impl SharedLocks for Kernel {
    fn lock(
        &self,
        owner: &OwnerKey,
        file: &FileKey,
        range: (u64, u64),
        kind: LockKind,
        writable: bool,
    ) -> Shared {
        let key = (owner.clone(), file.clone());
        let mut descs = self.descs.lock().unwrap();
        let fresh = match descs.get(&key) {
            None if self.busy.load(Ordering::Relaxed) => return Shared::Busy,
            None => {
                descs.insert(key.clone(), writable);
                true
            }
            Some(false) if kind == LockKind::Write => return Shared::Reopen,
            Some(_) => false,
        };
        let mut l = self.locks.lock().unwrap();
        let fl = l.entry(file.clone()).or_default();
        match fl.lock(&Who::Nfs(owner.clone()), range.0, range.1, kind) {
            Ok(()) => Shared::Taken,
            // A description opened for a lock refused is closed again.
            Err(h) => {
                if fresh {
                    descs.remove(&key);
                }
                Shared::Local(LocalLock {
                    start: h.start,
                    end: h.end,
                    kind: h.kind,
                    pid: match h.owner {
                        Who::Local(p) => p,
                        Who::Nfs(_) => panic!("the table let two NFS owners conflict"),
                    },
                })
            }
        }
    }

    fn reopen(&self, owner: &OwnerKey, file: &FileKey, _held: &[(u64, u64, LockKind)]) -> bool {
        self.descs
            .lock()
            .unwrap()
            .insert((owner.clone(), file.clone()), true);
        true
    }

    fn unlock(&self, owner: &OwnerKey, file: &FileKey, range: (u64, u64)) {
        if let Some(fl) = self.locks.lock().unwrap().get_mut(file) {
            fl.unlock(&Who::Nfs(owner.clone()), range.0, range.1);
        }
    }

    fn release(&self, owner: &OwnerKey, file: &FileKey) {
        self.descs
            .lock()
            .unwrap()
            .remove(&(owner.clone(), file.clone()));
        if let Some(fl) = self.locks.lock().unwrap().get_mut(file) {
            fl.remove_owner(&Who::Nfs(owner.clone()));
        }
    }

    fn test(
        &self,
        owner: &OwnerKey,
        file: &FileKey,
        range: (u64, u64),
        kind: LockKind,
    ) -> Option<LocalLock> {
        let l = self.locks.lock().unwrap();
        let h = l
            .get(file)?
            .test(&Who::Nfs(owner.clone()), range.0, range.1, kind)?;
        match h.owner {
            Who::Local(pid) => Some(LocalLock {
                start: h.start,
                end: h.end,
                kind: h.kind,
                pid,
            }),
            Who::Nfs(_) => None,
        }
    }
}

fn shared() -> (Fixture, Arc<Kernel>) {
    let f = Fixture::new();
    let k = Arc::new(Kernel::default());
    f.st.share_locks(k.clone());
    (f, k)
}

const WR: LockKind = LockKind::Write;

/// An NFSv4 lock and a local one deny each other both ways; LOCKT sees a
/// local lock; the kernel lets go with the last unlock.
#[test]
fn nfs_and_local_locks_deny_each_other() {
    let (f, k) = shared();
    let (c, _) = f.client("a");
    let fl = file(1);
    let open =
        f.st.open(c, &Bytes::from_static(b"o"), &fl, R | W, 0)
            .unwrap();
    // A local process first: NFSv4 is denied and told who.
    assert!(k.local_lock(77, &fl, (0, 10), WR));
    match f.lock(c, Some("lo"), open, &fl, (5, 6), false) {
        Err(LockError::Denied(h)) => {
            assert_eq!(h.owner.0, LOCAL_CLIENT);
            assert_eq!(&h.owner.1[..], b"local pid 77");
            assert_eq!((h.start, h.end), (0, 10));
        }
        other => panic!("{other:?}"),
    }
    let probe = (c, Bytes::from_static(b"other"));
    let h = f.st.test_lock(&probe, &fl, 0, 1, WR).unwrap();
    assert_eq!(h.owner.0, LOCAL_CLIENT);
    // Nothing was left taken for the denied owner.
    assert_eq!(k.descs(), 0);
    // Beside it, granted in both.
    let ls = f.lock(c, Some("lo"), open, &fl, (10, 20), false).unwrap();
    assert!(!k.local_lock(78, &fl, (15, 16), LockKind::Read));
    assert!(k.local_lock(78, &fl, (20, 30), LockKind::Read));
    // Part of it unlocked: the kernel's range too.
    let (ls, _) = f.st.unlock(c, &ls, &fl, 10, 15).unwrap();
    assert!(k.local_lock(78, &fl, (10, 15), LockKind::Read));
    assert_eq!(k.descs(), 1);
    // The last range unlocked: the description goes.
    f.st.unlock(c, &ls, &fl, 0, u64::MAX).unwrap();
    assert_eq!(k.descs(), 0);
    assert!(k.local_lock(79, &fl, (15, 20), LockKind::Read));
}

/// A blocked NFSv4 waiter denied by a local lock is not told while it
/// is held; once the local process lets go, polling holds the range for
/// the waiter (no local process can take it first) and tells it; its
/// retry is granted. A range held for a waiter that does not come back
/// is let go after a lease.
#[test]
fn a_waiter_blocked_by_a_local_lock_is_polled_and_the_range_held_for_it() {
    let (f, k) = shared();
    let (c, sess) = f.client("a");
    let fl = file(2);
    let open =
        f.st.open(c, &Bytes::from_static(b"o"), &fl, R | W, 0)
            .unwrap();
    assert!(k.local_lock(5, &fl, (0, 100), WR));
    assert_eq!(
        denied_by(f.lock(c, Some("lo"), open, &fl, (0, 10), true)),
        LOCAL_CLIENT
    );
    assert!(f.st.shared_waiters());
    assert!(f.st.poll_shared().is_empty());
    k.local_unlock(5, &fl);
    let notes = f.st.poll_shared();
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].owner.clientid, c);
    // Held for the waiter: a local process cannot take it now.
    assert!(!k.local_lock(6, &fl, (5, 6), LockKind::Read));
    assert!(k.local_lock(6, &fl, (10, 20), LockKind::Read));
    // Told once.
    assert!(f.st.poll_shared().is_empty());
    f.advance_to(s(1));
    let ls = f.lock(c, Some("lo"), open, &fl, (0, 10), true).unwrap();
    assert!(!f.st.shared_waiters());
    f.st.unlock(c, &ls, &fl, 0, 10).unwrap();
    assert_eq!(k.descs(), 0);

    // Again, and this time the waiter does not come back.
    k.local_unlock(6, &fl);
    assert!(k.local_lock(7, &fl, (0, 100), WR));
    f.advance_to(s(2));
    assert_eq!(
        denied_by(f.lock(c, Some("lo2"), open, &fl, (50, 60), true)),
        LOCAL_CLIENT
    );
    k.local_unlock(7, &fl);
    assert_eq!(f.st.poll_shared().len(), 1);
    assert!(!k.local_lock(8, &fl, (55, 56), WR));
    f.advance_to(s(2) + L + s(1));
    f.st.sequence(&sess).unwrap();
    f.st.poll_shared();
    assert!(k.local_lock(8, &fl, (55, 56), WR));
    assert_eq!(k.descs(), 0);
}

/// An NLM waiter blocked by a local lock is granted by polling once the
/// local process lets go.
#[test]
fn an_nlm_waiter_is_granted_after_a_local_unlock() {
    let (f, k) = shared();
    let granted = Arc::new(std::sync::Mutex::new(Vec::new()));
    let g = granted.clone();
    f.st.on_nlm_granted(Box::new(move |v| g.lock().unwrap().extend(v)));
    let fl = file(3);
    let owner = (crate::nlm::nlm_client(1), Bytes::from_static(b"svid"));
    assert!(k.local_lock(9, &fl, (0, u64::MAX), LockKind::Read));
    match f.st.nlm_lock(&owner, &fl, 0, 1, WR, false, false) {
        Err(crate::nlm::NlmRefusal::Denied(h)) => assert_eq!(h.owner.0, LOCAL_CLIENT),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        f.st.nlm_lock(&owner, &fl, 0, 1, WR, true, false),
        Err(crate::nlm::NlmRefusal::Blocked)
    );
    f.st.poll_shared();
    assert!(granted.lock().unwrap().is_empty());
    k.local_unlock(9, &fl);
    f.st.poll_shared();
    assert_eq!(granted.lock().unwrap().len(), 1);
    assert!(!k.local_lock(10, &fl, (0, 1), LockKind::Read));
    // The host's FREE_ALL lets the kernel go.
    f.st.nlm_free_host(owner.0);
    assert!(k.local_lock(10, &fl, (0, 1), LockKind::Read));
    assert_eq!(k.descs(), 0);
}

/// A client that stops renewing while holding a lock loses it at its
/// lease's end (no courtesy while locks are shared), so a local process
/// gets it; one holding no lock keeps its courtesy.
#[test]
fn a_dead_client_stops_blocking_local_processes_at_its_leases_end() {
    let (f, k) = shared();
    let (c, _) = f.client("dies");
    let (quiet, _) = f.client("quiet");
    let fl = file(4);
    let open =
        f.st.open(c, &Bytes::from_static(b"o"), &fl, R | W, 0)
            .unwrap();
    f.st.open(quiet, &Bytes::from_static(b"o"), &file(5), R, 0)
        .unwrap();
    f.lock(c, Some("lo"), open, &fl, (0, 10), false).unwrap();
    assert!(!k.local_lock(1, &fl, (0, 1), WR));
    f.advance_to(L + s(2));
    f.st.reap();
    assert!(k.local_lock(1, &fl, (0, 1), WR));
    assert_eq!(f.st.client_count(), 1);
    let _ = quiet;
}

/// No descriptor for a new owner's lock: NFS4ERR_DELAY (NLM: no locks),
/// and nothing changes.
#[test]
fn no_descriptor_means_delay() {
    let (f, k) = shared();
    let (c, _) = f.client("a");
    let fl = file(6);
    let open =
        f.st.open(c, &Bytes::from_static(b"o"), &fl, R | W, 0)
            .unwrap();
    k.busy.store(true, Ordering::Relaxed);
    assert!(matches!(
        f.lock(c, Some("lo"), open, &fl, (0, 1), false),
        Err(LockError::Status(NfsStat4::Nfs4errDelay))
    ));
    let owner = (crate::nlm::nlm_client(2), Bytes::from_static(b"x"));
    assert_eq!(
        f.st.nlm_lock(&owner, &fl, 0, 1, WR, true, false),
        Err(crate::nlm::NlmRefusal::NoLocks)
    );
    k.busy.store(false, Ordering::Relaxed);
    f.lock(c, Some("lo"), open, &fl, (0, 1), false).unwrap();
}

/// A shared lock taken through a read-only description, then an
/// exclusive one by the same owner: the description is reopened for
/// writing with what it holds.
#[test]
fn an_exclusive_lock_reopens_a_read_only_description() {
    let (f, k) = shared();
    let (c, _) = f.client("a");
    let fl = file(7);
    let o = Bytes::from_static(b"o");
    let open = f.st.open(c, &o, &fl, R, 0).unwrap();
    let mut req = LockRequest {
        client: c,
        new_owner: Some(Bytes::from_static(b"lo")),
        presented: open,
        file: fl.clone(),
        start: 0,
        end: 10,
        kind: LockKind::Read,
        blocking: false,
        reclaim: false,
        fh: Bytes::new(),
    };
    let ls = f.st.lock(&req).unwrap();
    assert_eq!(k.descs.lock().unwrap().values().next(), Some(&false));
    f.st.open(c, &o, &fl, R | W, 0).unwrap();
    req.new_owner = None;
    req.presented = ls;
    req.kind = WR;
    req.start = 20;
    req.end = 30;
    f.st.lock(&req).unwrap();
    assert_eq!(k.descs.lock().unwrap().values().next(), Some(&true));
    assert!(!k.local_lock(3, &fl, (25, 26), LockKind::Read));
}

/// A range held for a waiter that stopped retrying goes as soon as
/// another owner asks for it, not only at the next poll.
#[test]
fn a_range_held_for_a_waiter_gone_from_the_queue_goes_at_the_next_request() {
    let (f, k) = shared();
    let (c, sc) = f.client("a");
    let (d, sd) = f.client("b");
    let fl = file(8);
    let oc =
        f.st.open(c, &Bytes::from_static(b"o"), &fl, R | W, 0)
            .unwrap();
    let od =
        f.st.open(d, &Bytes::from_static(b"o"), &fl, R | W, 0)
            .unwrap();
    assert!(k.local_lock(1, &fl, (0, 10), WR));
    assert_eq!(
        denied_by(f.lock(c, Some("w"), oc, &fl, (0, 10), true)),
        LOCAL_CLIENT
    );
    k.local_unlock(1, &fl);
    assert_eq!(f.st.poll_shared().len(), 1);
    assert!(!k.local_lock(2, &fl, (0, 1), WR));
    // The waiter does not come back within a lease; the other client
    // asks (both keep their leases).
    f.advance_to(L + s(1));
    f.st.sequence(&sc).unwrap();
    f.st.sequence(&sd).unwrap();
    f.lock(d, Some("x"), od, &fl, (0, 10), false).unwrap();
}
