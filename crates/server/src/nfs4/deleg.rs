//! NFSv4's side of delegation conflicts (RFC 8881 §10.4.6; the rules are
//! in `crate::conflicts::delegations`): who breaks, as an NFSv4 request
//! names itself (an OPEN's owner, an I/O's stateid), and CB_GETATTR for a
//! GETATTR of a file under another client's write delegation
//! ([`holder_attrs`], §10.4.3); guards against local writers for the
//! delegations it grants.

use proto::nfs4::*;

use super::callback;
use super::compound::context::{Compound, Fh};
use crate::conflicts::delegations;
use state::{Breaker, CbSeen, FileKey, WriteDeleg};

/// Settles the conflicts of a change to `file` with its delegations (any
/// client's): Ok once none is held, else NFS4ERR_DELAY when the wait is
/// over.
pub async fn settle(cx: &Compound, file: &FileKey) -> Result<(), NfsStat4> {
    delegations::settle(&cx.srv, file, Breaker::Anyone, false).await
}

/// [`settle`] for an OPEN by `owner` of this compound's client (`reads`:
/// for reading only, which conflicts with write delegations alone): the
/// delegation that client and owner hold does not conflict.
pub async fn settle_open(
    cx: &Compound,
    file: &FileKey,
    owner: &bytes::Bytes,
    reads: bool,
) -> Result<(), NfsStat4> {
    let breaker = Breaker::Opener((cx.clientid()?, owner.clone()));
    delegations::settle(&cx.srv, file, breaker, reads).await
}

/// [`settle`] for I/O under the stateid `sid` (READ when `reads`; WRITE,
/// a change of size, ALLOCATE and the like when not): the write
/// delegation of the stateid's client and open owner does not conflict,
/// its holder writing through it; any other does (a reader conflicts with
/// write delegations alone).
pub async fn settle_io(
    cx: &Compound,
    file: &FileKey,
    sid: &StateId4,
    reads: bool,
) -> Result<(), NfsStat4> {
    let breaker = match (cx.clientid(), cx.resolve_stateid(sid)) {
        (Ok(client), Ok(sid)) => Breaker::Io(client, sid),
        _ => Breaker::Anyone,
    };
    delegations::settle(&cx.srv, file, breaker, reads).await
}

/// The attributes of `fh`, a file under another client's write delegation
/// `w`, for a GETATTR asking its size, change attribute or times (RFC 8881
/// §10.4.3): the holder may have changed it in its cache, so it is asked
/// with CB_GETATTR (waiting at most [`crate::instance::Nfs4Config::recall_wait`]).
/// A holder that cannot be asked, or does not answer, has the delegation
/// recalled instead, and the server's own attributes are given once it is
/// back.
pub async fn holder_attrs(cx: &Compound, fh: &Fh, w: WriteDeleg) -> Result<vfs::Attr, NfsStat4> {
    let handle = fh.handle.clone();
    let server = cx.vfs(fh.export, move |v, _| v.getattr(&handle)).await?;
    // With delegated timestamps (RFC 9754 §5) the holder's times too.
    let mut want = Bitmap4::from_attrs(&[FATTR4_CHANGE, FATTR4_SIZE]);
    if w.timestamps {
        want.insert(FATTR4_TIME_DELEG_ACCESS);
        want.insert(FATTR4_TIME_DELEG_MODIFY);
    }
    // One CB_GETATTR at a time per delegation: a GETATTR meanwhile, or
    // once it is being recalled, waits for the return instead.
    let reply = match w.session {
        Some(s) if cx.srv.state().begin_cb_getattr(&w.stateid) => {
            let wait = cx.srv.cfg.recall_wait;
            callback::getattr(&cx.srv, s, w.stateid, w.fh, want, wait).await
        }
        Some(_) => Err(callback::CbError::Busy),
        None => Err(callback::CbError::NoConnection),
    };
    let reported = match reply {
        Ok(a) => a,
        Err(e) => {
            tracing::debug!(stateid = ?w.stateid, "CB_GETATTR: {e}; recalling the delegation");
            delegations::settle(&cx.srv, &fh.key(), Breaker::Anyone, true).await?;
            let handle = fh.handle.clone();
            return cx.vfs(fh.export, move |v, _| v.getattr(&handle)).await;
        }
    };
    let now = vfs::Timespec::now();
    let ts = |t: NfsTime4| vfs::Timespec {
        sec: t.seconds,
        nsec: t.nseconds.min(999_999_999),
    };
    // The holder's own modification time, where its times are delegated
    // (never past now); else the time it was seen modified.
    let mtime = reported.time_deleg_modify.map_or(now, |t| ts(t).min(now));
    let seen = present(&server, w.seen, reported.change, reported.size, mtime);
    let mut a = server;
    if let Some(t) = reported.time_deleg_access {
        a.atime = a.atime.max(ts(t).min(now));
    }
    if let Some(s) = seen {
        if w.seen != Some(s) {
            cx.srv.state().set_cb_seen(&w.stateid, s);
        }
        a.size = s.size;
        a.change = s.change;
        let t = vfs::Timespec {
            sec: s.mtime.seconds,
            nsec: s.mtime.nseconds,
        };
        a.mtime = t;
        a.ctime = t;
    }
    Ok(a)
}

/// What other clients are shown of a file under a write delegation, from
/// the server's attributes, what was shown last (`seen`) and what the
/// holder's CB_GETATTR reported (RFC 8881 §10.4.3): the file was modified
/// in the holder's cache when its change attribute is not the one it was
/// given (the server's), or not the one it reported last time; the server
/// then presents the holder's size and a change attribute greater than
/// any it presented before, with `now` as the modification time. None:
/// present the server's own attributes.
pub fn present(
    server: &vfs::Attr,
    seen: Option<CbSeen>,
    change: Option<u64>,
    size: Option<u64>,
    now: vfs::Timespec,
) -> Option<CbSeen> {
    let (last_change, last_size) = match seen {
        Some(s) => (s.client_change, s.size),
        None => (server.change, server.size),
    };
    let modified = match change {
        Some(c) => c != last_change,
        None => size.is_some_and(|z| z != last_size),
    };
    if !modified {
        // Unchanged since last time; the server's own attributes once
        // they are newer (the holder wrote its changes through).
        return seen.filter(|s| s.change > server.change);
    }
    let base = seen.map_or(server.change, |s| s.change.max(server.change));
    Some(CbSeen {
        client_change: change.unwrap_or(last_change),
        change: base.wrapping_add(1),
        size: size.unwrap_or(last_size),
        mtime: NfsTime4 {
            seconds: now.sec,
            nseconds: now.nsec,
        },
    })
}

/// Why a delegation about to be granted cannot be protected from local
/// processes ([`protect`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unprotected {
    /// The file is open for writing somewhere (no lease).
    OpenForWriting,
    /// Its changes cannot be watched.
    Unwatched,
    /// A local process holds a byte-range lock on it: a write
    /// delegation's holder would lock in its cache without asking.
    LockedLocally,
}

/// The kind of a delegation [`protect`] protects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Read,
    Write,
    Dir,
}

/// Protects `file` from local processes for a delegation of `kind` about
/// to be granted, in one backend call:
/// * for a read delegation, guards it against local writers
///   (`vfs::Vfs::guard_local_writes`, a kernel read lease on a local
///   export): a local process that opens it for writing, or truncates
///   it, then recalls its delegations and waits in the kernel until they
///   are gone;
/// * for any, watches it for other local changes
///   (`vfs::Vfs::watch_local_changes`, fanotify): a local rename, remove,
///   link, chmod, chown, utimes, xattr change, write or truncation of it
///   (or, for a directory, of its entries) recalls its delegations at
///   once; under a write delegation a local open also recalls them, and
///   waits in the kernel until they are gone.
///
/// On an error no delegation may be granted, and nothing is left taken;
/// on success [`unprotect`] undoes it if the delegation is not granted
/// after all (else its end does, `State::on_delegation_ended`).
/// `created`: the OPEN granting it made the file, so no local process
/// can hold a lock on it.
pub async fn protect(
    cx: &Compound,
    file: &FileKey,
    kind: Kind,
    created: bool,
) -> Result<(), Unprotected> {
    let on_change = recaller(cx, file);
    let h = vfs::Handle(file.1.clone());
    let shared = cx.export(file.0).is_ok_and(|e| e.shared_locks);
    let fast = kind != Kind::Read
        && matches!(
            cx.vfs_nowait(file.0, |v, _| v.getattr_nowait(&h)),
            Some(Ok(_))
        );
    let body = move |v: &dyn vfs::Vfs| {
        // A client locks under its delegation without telling the
        // server (the Linux client does, under read and write ones);
        // under a read one only shared locks, which a local lock cannot
        // be refused by unless it is exclusive, and a local process
        // locking exclusively has the file open for writing (no lease,
        // no read delegation). Under a write one any local lock would go
        // unseen: none is granted while one is held (and a local open
        // afterwards recalls it first).
        if shared && kind == Kind::Write && !created {
            let nobody = vfs::LockOwner {
                group: 0,
                name: b"",
            };
            if v.share_test(&h, nobody, (0, u64::MAX), true).is_some() {
                return Err(Unprotected::LockedLocally);
            }
        }
        let guarded = kind == Kind::Read;
        if guarded && !v.guard_local_writes(&h, on_change.clone()).unwrap_or(false) {
            return Err(Unprotected::OpenForWriting);
        }
        let hold_opens = kind == Kind::Write;
        if !v
            .watch_local_changes(&h, hold_opens, on_change)
            .unwrap_or(false)
        {
            if guarded {
                v.unguard_local_writes(&h);
            }
            return Err(Unprotected::Unwatched);
        }
        Ok(())
    };
    // A write or directory delegation's protection is a lock test and
    // fanotify marks on an object whose descriptor is cached: system
    // calls that wait for no disk, made here without a hand-off to the
    // pool. A read delegation's lease opens the file (and may close the
    // server's writable descriptor of it): on the pool.
    if fast {
        if let Ok(e) = cx.export(file.0) {
            return body(e.vfs.as_ref());
        }
    }
    cx.vfs(file.0, move |v, _| Ok(body(v)))
        .await
        .unwrap_or(Err(Unprotected::Unwatched))
}

/// Undoes a [`protect`] of `file` for a delegation that was not granted.
pub fn unprotect(cx: &Compound, file: &FileKey, kind: Kind) {
    if let Ok(e) = cx.export(file.0) {
        let h = vfs::Handle(file.1.clone());
        if kind == Kind::Read {
            e.vfs.unguard_local_writes(&h);
        }
        e.vfs.unwatch_local_changes(&h);
    }
}

/// What a local change to `file` calls (from a kernel-facing thread):
/// recalls every delegation of it, of a file or of a directory, as a
/// conflicting request by anyone would.
fn recaller(cx: &Compound, file: &FileKey) -> vfs::lease::OnBreak {
    let srv = std::sync::Arc::downgrade(&cx.srv);
    let rt = tokio::runtime::Handle::current();
    let key = file.clone();
    std::sync::Arc::new(move || {
        let (srv, key) = (srv.clone(), key.clone());
        rt.spawn(async move {
            let Some(srv) = srv.upgrade() else { return };
            let b = srv.state().break_delegations(&key, &Breaker::Anyone, false);
            for r in b.recalls {
                callback::recall(&srv, r);
            }
        });
    })
}

/// [`settle`] for the object `name` in the directory `dir`, if it exists
/// (REMOVE, RENAME): looked up only when some delegation is held.
pub async fn settle_name(
    cx: &Compound,
    dir: &super::compound::context::Fh,
    name: &bytes::Bytes,
) -> Result<(), NfsStat4> {
    let state = cx.srv.state();
    if !state.delegations_outstanding() && !state.layouts_outstanding() {
        return Ok(());
    }
    let (dh, n) = (dir.handle.clone(), name.clone());
    let found = cx
        .vfs(dir.export, move |v, c| Ok(v.lookup(c, &dh, &n).ok()))
        .await?;
    match found {
        Some((h, _)) => settle(cx, &(dir.export, h.0)).await,
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(change: u64, size: u64) -> vfs::Attr {
        vfs::Attr {
            ftype: vfs::FileType::Regular,
            mode: 0o644,
            nlink: 1,
            uid: 0,
            gid: 0,
            size,
            used: 0,
            rdev: (0, 0),
            fileid: 1,
            atime: Default::default(),
            mtime: Default::default(),
            ctime: Default::default(),
            change,
        }
    }

    const T: vfs::Timespec = vfs::Timespec { sec: 7, nsec: 8 };

    #[test]
    fn an_unchanged_cache_shows_the_servers_attributes() {
        assert_eq!(present(&server(100, 3), None, Some(100), Some(3), T), None);
        // Without a change attribute, the size alone tells.
        assert_eq!(present(&server(100, 3), None, None, Some(3), T), None);
        assert_eq!(present(&server(100, 3), None, None, None, T), None);
    }

    #[test]
    fn a_changed_cache_shows_its_size_and_a_new_change_attribute() {
        let s = present(&server(100, 3), None, Some(101), Some(10), T).unwrap();
        assert_eq!(
            s,
            CbSeen {
                client_change: 101,
                change: 101,
                size: 10,
                mtime: NfsTime4 {
                    seconds: 7,
                    nseconds: 8
                }
            }
        );
        // Asked again, unchanged: the same.
        assert_eq!(
            present(&server(100, 3), Some(s), Some(101), Some(10), T),
            Some(s)
        );
        // Changed again: greater than anything shown before.
        let t = present(&server(100, 3), Some(s), Some(102), Some(12), T).unwrap();
        assert_eq!((t.change, t.size, t.client_change), (102, 12, 102));
        // A size alone that moved counts as a change.
        let u = present(&server(100, 3), Some(t), None, Some(20), T).unwrap();
        assert_eq!((u.change, u.size), (103, 20));
        // The holder wrote through and the server's own attribute is past
        // what was shown: the server's attributes again.
        assert_eq!(
            present(&server(500, 20), Some(u), Some(102), Some(20), T),
            None
        );
        // Its change above a greater server value.
        let v = present(&server(500, 20), Some(u), Some(103), Some(25), T).unwrap();
        assert_eq!(v.change, 501);
    }
}
