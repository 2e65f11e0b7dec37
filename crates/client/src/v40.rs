//! NFSv4.0 (RFC 7530) without sessions: the client ID comes from
//! SETCLIENTID and SETCLIENTID_CONFIRM (§16.33, §16.34), each open and
//! lock owner's requests carry its own sequence id (§9.1.7), an owner's
//! first OPEN is confirmed with OPEN_CONFIRM (§16.18), and the lease is
//! renewed with RENEW (§16.29) when nothing else renewed it.
//!
//! [`Owners`] fills the sequence ids of a COMPOUND's OPEN, OPEN_CONFIRM,
//! OPEN_DOWNGRADE, CLOSE, LOCK and LOCKU in before it is sent, holding
//! each owner it names until the reply is in (one request of an owner on
//! the wire at a time, as §9.1.7 wants), and moves the sequences on by
//! the reply's statuses.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use proto::nfs4::*;

/// An owner's key: open or lock owner, by its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Key {
    Open(Bytes),
    Lock(Bytes),
}

/// A stateid's owner, and for an open stateid the lock stateids taken
/// under it.
type Given = (Key, Vec<[u8; 12]>);

/// The sequence ids of a client's open and lock owners, and which owner
/// each stateid it was given belongs to.
#[derive(Default)]
pub struct Owners {
    /// Each owner's next sequence id, locked while a request of the
    /// owner is out.
    seqs: Mutex<HashMap<Key, Arc<tokio::sync::Mutex<u32>>>>,
    /// A stateid's `other` → its owner; an open's lock stateids, dropped
    /// with it at CLOSE.
    by_other: Mutex<HashMap<[u8; 12], Given>>,
    /// Owners whose OPEN awaits its OPEN_CONFIRM, still held: nothing
    /// else of the owner may go first (the server would take a new OPEN
    /// of an unconfirmed owner for a new owner and drop the first open,
    /// RFC 7530 §16.18.5). The OPEN_CONFIRM takes the hold over.
    unconfirmed: Mutex<HashMap<Key, tokio::sync::OwnedMutexGuard<u32>>>,
    /// When a request last renewed the lease (ms since `started`).
    renewed_ms: AtomicU64,
    started: Option<Instant>,
}

/// The owners a COMPOUND names, held until [`Owners::end`].
pub struct Begun {
    held: Vec<(Key, tokio::sync::OwnedMutexGuard<u32>)>,
    /// Per operation, the owners it names (index into `held`).
    named: Vec<Vec<usize>>,
}

impl Owners {
    pub fn new() -> Owners {
        Owners {
            started: Some(Instant::now()),
            ..Default::default()
        }
    }

    fn lock_map<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn owner_of(&self, sid: &StateId4) -> Option<Key> {
        Self::lock_map(&self.by_other)
            .get(&sid.other)
            .map(|(k, _)| k.clone())
    }

    /// The owners operation `op` names: an open owner's requests, a lock
    /// owner's, and for a lock owner's first LOCK both.
    fn keys(&self, op: &NfsArgOp4) -> Vec<Key> {
        match op {
            NfsArgOp4::Open(a) => vec![Key::Open(a.owner.owner.clone())],
            NfsArgOp4::OpenConfirm(a) => self.owner_of(&a.open_stateid).into_iter().collect(),
            NfsArgOp4::OpenDowngrade(a) => self.owner_of(&a.open_stateid).into_iter().collect(),
            NfsArgOp4::Close(a) => self.owner_of(&a.open_stateid).into_iter().collect(),
            NfsArgOp4::Lock(a) => match &a.locker {
                Locker4::OpenOwner(o) => self
                    .owner_of(&o.open_stateid)
                    .into_iter()
                    .chain([Key::Lock(o.lock_owner.owner.clone())])
                    .collect(),
                Locker4::LockOwner(l) => self.owner_of(&l.lock_stateid).into_iter().collect(),
            },
            NfsArgOp4::LockU(a) => self.owner_of(&a.lock_stateid).into_iter().collect(),
            _ => Vec::new(),
        }
    }

    /// Takes every owner `ops` name (in one order, so two COMPOUNDs never
    /// wait on each other) and writes their sequence ids into `ops`: an
    /// owner named twice gets successive ones.
    pub async fn begin(&self, ops: &mut [NfsArgOp4]) -> Begun {
        let per_op: Vec<Vec<Key>> = ops.iter().map(|op| self.keys(op)).collect();
        let mut keys: Vec<Key> = per_op.iter().flatten().cloned().collect();
        keys.sort();
        keys.dedup();
        let confirming: Vec<&Key> = ops
            .iter()
            .zip(&per_op)
            .filter(|(op, _)| matches!(op, NfsArgOp4::OpenConfirm(_)))
            .flat_map(|(_, ks)| ks)
            .collect();
        let mut held = Vec::with_capacity(keys.len());
        for k in keys {
            if confirming.contains(&&k) {
                if let Some(g) = Self::lock_map(&self.unconfirmed).remove(&k) {
                    held.push((k, g));
                    continue;
                }
            }
            let m = Self::lock_map(&self.seqs)
                .entry(k.clone())
                .or_default()
                .clone();
            held.push((k, m.lock_owned().await));
        }
        let index = |k: &Key| held.iter().position(|(h, _)| h == k).unwrap_or(0);
        let named: Vec<Vec<usize>> = per_op
            .iter()
            .map(|ks| ks.iter().map(index).collect())
            .collect();
        let mut next: Vec<u32> = held.iter().map(|(_, g)| **g).collect();
        for (op, owners) in ops.iter_mut().zip(&named) {
            let mut take = |i: usize| {
                let s = next[i];
                next[i] = s.wrapping_add(1);
                s
            };
            match op {
                NfsArgOp4::Open(a) => a.seqid = take(owners[0]),
                NfsArgOp4::OpenConfirm(a) if !owners.is_empty() => a.seqid = take(owners[0]),
                NfsArgOp4::OpenDowngrade(a) if !owners.is_empty() => a.seqid = take(owners[0]),
                NfsArgOp4::Close(a) if !owners.is_empty() => a.seqid = take(owners[0]),
                NfsArgOp4::Lock(a) => match &mut a.locker {
                    // An open stateid this client was not given: the
                    // lock owner's sequence alone.
                    Locker4::OpenOwner(o) if owners.len() == 2 => {
                        o.open_seqid = take(owners[0]);
                        o.lock_seqid = take(owners[1]);
                    }
                    Locker4::OpenOwner(o) => o.lock_seqid = take(owners[0]),
                    Locker4::LockOwner(l) if !owners.is_empty() => l.lock_seqid = take(owners[0]),
                    _ => {}
                },
                NfsArgOp4::LockU(a) if !owners.is_empty() => a.seqid = take(owners[0]),
                _ => {}
            }
        }
        Begun { held, named }
    }

    /// After the reply `res` to `ops` (begun with [`Owners::begin`]): the
    /// sequence of each owner moves on for each of its operations that
    /// ran, unless its error is one that does not count; the stateids
    /// returned are remembered as their owners', those CLOSE ended
    /// forgotten. `res` `None`: no reply (the connection failed); the
    /// server may or may not have seen the request, and the sequences
    /// stay (a retry would be a replay, or the next request).
    pub fn end(&self, begun: Begun, ops: &[NfsArgOp4], res: Option<&Compound4Res>) {
        let Begun { mut held, named } = begun;
        let Some(res) = res else {
            return;
        };
        let ran = res.resarray.len();
        let mut renewed = false;
        let mut to_confirm = Vec::new();
        for (i, (op, r)) in ops.iter().zip(&res.resarray).enumerate() {
            let status = if i + 1 == ran {
                res.status
            } else {
                NfsStat4::Nfs4Ok
            };
            if status.moves_seqid() {
                for &o in &named[i] {
                    let g = &mut held[o].1;
                    **g = g.wrapping_add(1);
                }
            }
            renewed |= status == NfsStat4::Nfs4Ok && renews(op);
            if status != NfsStat4::Nfs4Ok {
                continue;
            }
            let mut others = Self::lock_map(&self.by_other);
            match (op, r) {
                (NfsArgOp4::Open(a), NfsResOp4::Open(Res4::Ok(ok))) => {
                    let key = Key::Open(a.owner.owner.clone());
                    if ok.rflags & OPEN4_RESULT_CONFIRM != 0 {
                        to_confirm.push(key.clone());
                    }
                    others
                        .entry(ok.stateid.other)
                        .or_insert_with(|| (key, Vec::new()));
                }
                (NfsArgOp4::Lock(a), NfsResOp4::Lock(Lock4Res::Ok(ok))) => {
                    if let Locker4::OpenOwner(o) = &a.locker {
                        let lock = ok.lock_stateid.other;
                        others.insert(lock, (Key::Lock(o.lock_owner.owner.clone()), Vec::new()));
                        if let Some((_, locks)) = others.get_mut(&o.open_stateid.other) {
                            if !locks.contains(&lock) {
                                locks.push(lock);
                            }
                        }
                    }
                }
                (NfsArgOp4::Close(a), _) => {
                    if let Some((_, locks)) = others.remove(&a.open_stateid.other) {
                        for l in locks {
                            others.remove(&l);
                        }
                    }
                }
                _ => {}
            }
        }
        // An OPEN to confirm keeps its owner held for the OPEN_CONFIRM:
        // the caller sends it if the COMPOUND succeeded, and sends none if
        // a later operation failed (the owner is let go).
        if res.status != NfsStat4::Nfs4Ok {
            to_confirm.clear();
        }
        let mut waiting = Self::lock_map(&self.unconfirmed);
        for (k, g) in held {
            if to_confirm.contains(&k) {
                waiting.insert(k, g);
            }
        }
        drop(waiting);
        if renewed {
            self.renewed();
        }
    }

    /// Notes that the lease was renewed now.
    pub fn renewed(&self) {
        if let Some(s) = self.started {
            self.renewed_ms
                .store(s.elapsed().as_millis() as u64, Ordering::Relaxed);
        }
    }

    /// How long since the lease was last renewed.
    pub fn since_renewal(&self) -> std::time::Duration {
        let now = self.started.map_or(0, |s| s.elapsed().as_millis() as u64);
        std::time::Duration::from_millis(
            now.saturating_sub(self.renewed_ms.load(Ordering::Relaxed)),
        )
    }

    /// The OPENs in `results` (the reply to `ops`) that must be confirmed
    /// (OPEN4_RESULT_CONFIRM): each one's index, the file (the GETFH
    /// after it) and its stateid. Their owners stay held until the
    /// caller sends each its OPEN_CONFIRM ([`confirm_ops`]), next; one
    /// with no GETFH after it cannot be confirmed, and its owner is let
    /// go.
    pub fn unconfirmed(&self, results: &[NfsResOp4]) -> Vec<(usize, NfsFh4, StateId4)> {
        let mut out = Vec::new();
        for (i, r) in results.iter().enumerate() {
            let NfsResOp4::Open(Res4::Ok(ok)) = r else {
                continue;
            };
            if ok.rflags & OPEN4_RESULT_CONFIRM == 0 {
                continue;
            }
            let fh = results[i + 1..].iter().find_map(|r| match r {
                NfsResOp4::GetFh(Res4::Ok(f)) => Some(f.object.clone()),
                _ => None,
            });
            match fh {
                Some(fh) => out.push((i, fh, ok.stateid)),
                None => {
                    if let Some(k) = self.owner_of(&ok.stateid) {
                        Self::lock_map(&self.unconfirmed).remove(&k);
                    }
                }
            }
        }
        out
    }
}

/// Sends RENEW (RFC 7530 §16.29) whenever a third of `lease` passed with
/// nothing renewing the lease, until the client is dropped. A client
/// that stays busy sends none: its OPENs, READs and WRITEs renew it.
pub(crate) fn spawn_renewer(client: std::sync::Weak<crate::Inner>, lease: std::time::Duration) {
    let every = lease / 3;
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every / 2).await;
            let Some(c) = crate::Client::upgrade(&client) else {
                return;
            };
            let Some(owners) = c.v40().cloned() else {
                return;
            };
            if owners.since_renewal() < every {
                continue;
            }
            let renew = NfsArgOp4::Renew(Renew4Args {
                clientid: c.clientid(),
            });
            match c.compound_raw(b"renew", 0, &[renew]).await {
                Ok(r) if r.status == NfsStat4::Nfs4Ok => owners.renewed(),
                Ok(r) => tracing::debug!(status = ?r.status, "RENEW"),
                // The connection is gone: so is the client.
                Err(_) => return,
            }
        }
    });
}

/// Whether an operation that succeeded renewed the client's lease (RFC
/// 7530 §9.5: one naming the client ID, or a stateid of its state).
fn renews(op: &NfsArgOp4) -> bool {
    matches!(
        op,
        NfsArgOp4::Open(_)
            | NfsArgOp4::OpenConfirm(_)
            | NfsArgOp4::OpenDowngrade(_)
            | NfsArgOp4::Close(_)
            | NfsArgOp4::Lock(_)
            | NfsArgOp4::LockU(_)
            | NfsArgOp4::LockT(_)
            | NfsArgOp4::Read(_)
            | NfsArgOp4::Write(_)
            | NfsArgOp4::Renew(_)
            | NfsArgOp4::DelegReturn(_)
    )
}

/// `PUTFH fh; OPEN_CONFIRM stateid` (its sequence id filled in by
/// [`Owners::begin`]).
pub fn confirm_ops(fh: &NfsFh4, stateid: StateId4) -> Vec<NfsArgOp4> {
    vec![
        NfsArgOp4::PutFh(PutFh4Args { object: fh.clone() }),
        NfsArgOp4::OpenConfirm(OpenConfirm4Args {
            open_stateid: stateid,
            seqid: 0,
        }),
    ]
}

/// The stateid OPEN_CONFIRM returned (the reply to [`confirm_ops`]).
pub fn confirmed(results: &[NfsResOp4]) -> Option<StateId4> {
    match results.get(1) {
        Some(NfsResOp4::OpenConfirm(Res4::Ok(ok))) => Some(ok.open_stateid),
        _ => None,
    }
}

/// Puts the confirmed stateid in the OPEN result at `index`.
pub fn patch_open(results: &mut [NfsResOp4], index: usize, stateid: StateId4) {
    if let Some(NfsResOp4::Open(Res4::Ok(ok))) = results.get_mut(index) {
        ok.stateid = stateid;
        ok.rflags &= !OPEN4_RESULT_CONFIRM;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(owner: &'static str) -> NfsArgOp4 {
        NfsArgOp4::Open(Open4Args {
            seqid: 99,
            share_access: OPEN4_SHARE_ACCESS_READ,
            share_deny: 0,
            owner: StateOwner4 {
                clientid: 1,
                owner: Bytes::from_static(owner.as_bytes()),
            },
            openhow: OpenFlag4::NoCreate,
            claim: OpenClaim4::Null(Bytes::from_static(b"f")),
        })
    }

    fn sid(n: u8) -> StateId4 {
        StateId4 {
            seqid: 1,
            other: [n; 12],
        }
    }

    fn open_ok(s: StateId4) -> NfsResOp4 {
        NfsResOp4::Open(Res4::Ok(Open4ResOk {
            stateid: s,
            cinfo: ChangeInfo4::default(),
            rflags: 0,
            attrset: Bitmap4::default(),
            delegation: OpenDelegation4::None,
        }))
    }

    fn reply(status: NfsStat4, resarray: Vec<NfsResOp4>) -> Compound4Res {
        Compound4Res {
            status,
            tag: Bytes::new(),
            resarray,
        }
    }

    fn seqid(op: &NfsArgOp4) -> u32 {
        match op {
            NfsArgOp4::Open(a) => a.seqid,
            NfsArgOp4::Close(a) => a.seqid,
            NfsArgOp4::LockU(a) => a.seqid,
            NfsArgOp4::Lock(a) => match &a.locker {
                Locker4::OpenOwner(o) => o.open_seqid * 1000 + o.lock_seqid,
                Locker4::LockOwner(l) => l.lock_seqid,
            },
            _ => u32::MAX,
        }
    }

    #[tokio::test]
    async fn sequences_move_on_by_status_and_follow_stateids() {
        let o = Owners::new();
        // First OPEN: seqid 0; it succeeds.
        let mut ops = vec![open("a")];
        let b = o.begin(&mut ops).await;
        assert_eq!(seqid(&ops[0]), 0);
        o.end(
            b,
            &ops,
            Some(&reply(NfsStat4::Nfs4Ok, vec![open_ok(sid(1))])),
        );
        // A refused one (BAD_SEQID) does not move it on; another error does.
        let mut ops = vec![open("a")];
        let b = o.begin(&mut ops).await;
        assert_eq!(seqid(&ops[0]), 1);
        let bad = NfsResOp4::Open(Res4::Err(NfsStat4::Nfs4errBadSeqid));
        o.end(b, &ops, Some(&reply(NfsStat4::Nfs4errBadSeqid, vec![bad])));
        let mut ops = vec![open("a")];
        let b = o.begin(&mut ops).await;
        assert_eq!(seqid(&ops[0]), 1);
        let noent = NfsResOp4::Open(Res4::Err(NfsStat4::Nfs4errNoent));
        o.end(b, &ops, Some(&reply(NfsStat4::Nfs4errNoent, vec![noent])));
        // Another owner has its own sequence.
        let mut ops = vec![open("b")];
        let b = o.begin(&mut ops).await;
        assert_eq!(seqid(&ops[0]), 0);
        drop(b);
        // CLOSE by the open's stateid is the owner's; a lock owner's first
        // LOCK carries both sequences, its LOCKU the lock owner's.
        let lock = NfsArgOp4::Lock(Lock4Args {
            locktype: NfsLockType4::WriteLt,
            reclaim: false,
            offset: 0,
            length: 1,
            locker: Locker4::OpenOwner(OpenToLockOwner4 {
                open_seqid: 0,
                open_stateid: sid(1),
                lock_seqid: 0,
                lock_owner: StateOwner4 {
                    clientid: 1,
                    owner: Bytes::from_static(b"l"),
                },
            }),
        });
        let mut ops = vec![lock];
        let b = o.begin(&mut ops).await;
        assert_eq!(seqid(&ops[0]), 2000);
        let ok = NfsResOp4::Lock(Lock4Res::Ok(Lock4ResOk {
            lock_stateid: sid(2),
        }));
        o.end(b, &ops, Some(&reply(NfsStat4::Nfs4Ok, vec![ok])));
        let locku = NfsArgOp4::LockU(LockU4Args {
            locktype: NfsLockType4::WriteLt,
            seqid: 0,
            lock_stateid: sid(2),
            offset: 0,
            length: 1,
        });
        let close = NfsArgOp4::Close(Close4Args {
            seqid: 0,
            open_stateid: sid(1),
        });
        // Two operations of two owners in one COMPOUND; both ran.
        let mut ops = vec![locku, close];
        let b = o.begin(&mut ops).await;
        assert_eq!((seqid(&ops[0]), seqid(&ops[1])), (1, 3));
        let r = vec![
            NfsResOp4::LockU(Res4::Ok(sid(2))),
            NfsResOp4::Close(Res4::Ok(sid(1))),
        ];
        o.end(b, &ops, Some(&reply(NfsStat4::Nfs4Ok, r)));
        // CLOSE forgot the open's stateid and its lock's.
        assert!(o.owner_of(&sid(1)).is_none());
        assert!(o.owner_of(&sid(2)).is_none());
        // The open owner's next OPEN is its fifth request.
        let mut ops = vec![open("a")];
        let b = o.begin(&mut ops).await;
        assert_eq!(seqid(&ops[0]), 4);
        // No reply: the sequence stays.
        o.end(b, &ops, None);
        let mut ops = vec![open("a")];
        let _b = o.begin(&mut ops).await;
        assert_eq!(seqid(&ops[0]), 4);
    }

    #[tokio::test]
    async fn an_open_to_confirm_holds_its_owner_until_the_confirmation() {
        use std::future::Future;
        use std::task::{Context, Poll, Waker};
        let o = Owners::new();
        let mut ops = vec![open("a")];
        let b = o.begin(&mut ops).await;
        let mut res = open_ok(sid(1));
        if let NfsResOp4::Open(Res4::Ok(ok)) = &mut res {
            ok.rflags = OPEN4_RESULT_CONFIRM;
        }
        o.end(b, &ops, Some(&reply(NfsStat4::Nfs4Ok, vec![res])));
        // Another OPEN of the owner waits...
        let mut second = vec![open("a")];
        let mut waiting = Box::pin(o.begin(&mut second));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(waiting.as_mut().poll(&mut cx).is_pending());
        // ...while the OPEN_CONFIRM goes, with the next sequence id.
        let mut confirm = confirm_ops(&NfsFh4(Bytes::from_static(b"fh")), sid(1));
        let c = o.begin(&mut confirm).await;
        assert!(matches!(&confirm[1], NfsArgOp4::OpenConfirm(a) if a.seqid == 1));
        let r = vec![
            NfsResOp4::PutFh(Res4::Ok(())),
            NfsResOp4::OpenConfirm(Res4::Ok(OpenConfirm4ResOk {
                open_stateid: StateId4 {
                    seqid: 2,
                    other: [1; 12],
                },
            })),
        ];
        o.end(c, &confirm, Some(&reply(NfsStat4::Nfs4Ok, r)));
        let Poll::Ready(b) = waiting.as_mut().poll(&mut cx) else {
            panic!("the owner is still held after its OPEN_CONFIRM");
        };
        drop(b);
        drop(waiting);
        assert_eq!(seqid(&second[0]), 2);
    }

    #[tokio::test]
    async fn an_open_to_confirm_in_a_failed_compound_lets_its_owner_go() {
        let o = Owners::new();
        let mut ops = vec![open("a"), NfsArgOp4::GetFh, NfsArgOp4::ReadLink];
        let b = o.begin(&mut ops).await;
        let mut res = open_ok(sid(1));
        if let NfsResOp4::Open(Res4::Ok(ok)) = &mut res {
            ok.rflags = OPEN4_RESULT_CONFIRM;
        }
        let r = vec![
            res,
            NfsResOp4::GetFh(Res4::Ok(GetFh4ResOk {
                object: NfsFh4(Bytes::from_static(b"fh")),
            })),
            NfsResOp4::ReadLink(Res4::Err(NfsStat4::Nfs4errInval)),
        ];
        o.end(b, &ops, Some(&reply(NfsStat4::Nfs4errInval, r)));
        // Not held: the owner's next OPEN goes at once.
        let mut next = vec![open("a")];
        let _b = tokio::time::timeout(std::time::Duration::from_secs(60), o.begin(&mut next))
            .await
            .expect("the owner is still held");
        assert_eq!(seqid(&next[0]), 1);
    }

    #[test]
    fn opens_to_confirm_are_found_with_their_file() {
        let mut r = vec![
            NfsResOp4::PutFh(Res4::Ok(())),
            open_ok(sid(3)),
            NfsResOp4::GetFh(Res4::Ok(GetFh4ResOk {
                object: NfsFh4(Bytes::from_static(b"fh")),
            })),
        ];
        let o = Owners::new();
        assert!(o.unconfirmed(&r).is_empty());
        if let NfsResOp4::Open(Res4::Ok(ok)) = &mut r[1] {
            ok.rflags = OPEN4_RESULT_CONFIRM;
        }
        let u = o.unconfirmed(&r);
        assert_eq!(u, vec![(1, NfsFh4(Bytes::from_static(b"fh")), sid(3))]);
        patch_open(&mut r, 1, sid(4));
        assert!(o.unconfirmed(&r).is_empty());
        assert!(matches!(&r[1], NfsResOp4::Open(Res4::Ok(ok)) if ok.stateid == sid(4)));
    }
}
