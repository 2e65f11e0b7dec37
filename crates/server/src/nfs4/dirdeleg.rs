//! Directory delegations (RFC 8881 §10.9): what a change to a directory's
//! entries or attributes does to them. Before the change, the delegations
//! of other clients that did not ask to be told of that kind of change are
//! recalled and the change waits for their return ([`settle`], as a file
//! delegation's conflicts do); after it, those that asked are told with
//! CB_NOTIFY (§20.4; [`added`], [`removed`], [`renamed`],
//! [`attrs_changed`]). The holder's own changes are neither (§10.9.1: it
//! knows them). Changes made on the server by local processes are not
//! seen.
//!
//! Notified: entries added (CREATE, OPEN creating, LINK, RENAME into it),
//! removed (REMOVE, RENAME out of it), renamed within it, and the
//! directory's attributes changed (SETATTR). Not offered: changes of the
//! entries' own attributes and of the cookie verifier (it never changes).
//! An entry removed is named with its READDIR cookie, looked up before the
//! removal; entries carry no attributes (GET_DIR_DELEGATION grants no
//! child attributes).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use proto::nfs4::*;

use super::callback;
use super::compound::{Compound, Fh};
use super::deleg;
use super::state::{DirWatch, FileKey};

/// The notification types granted (those asked for, of these).
pub const TYPES: [NotifyType4; 4] = [
    NotifyType4::ChangeDirAttrs,
    NotifyType4::RemoveEntry,
    NotifyType4::AddEntry,
    NotifyType4::RenameEntry,
];

/// The directory attributes a NOTIFY4_CHANGE_DIR_ATTRS may carry (those
/// asked for, of these).
pub const DIR_ATTRS: [u32; 6] = [
    FATTR4_CHANGE,
    FATTR4_SIZE,
    FATTR4_MODE,
    FATTR4_NUMLINKS,
    FATTR4_TIME_METADATA,
    FATTR4_TIME_MODIFY,
];

/// The longest a change of a directory's attributes waits to be sent with
/// later ones, whatever the client asked.
pub const MAX_ATTR_DELAY: Duration = Duration::from_secs(10);

/// Locks ordering the changes to a directory under delegation with their
/// notifications, by the directory's handle.
pub struct Stripes(Vec<Arc<tokio::sync::Mutex<()>>>);

const STRIPES: usize = 64;

impl Default for Stripes {
    fn default() -> Self {
        Stripes((0..STRIPES).map(|_| Arc::default()).collect())
    }
}

/// Held from before a change to directories under delegation until its
/// notifications are queued: two clients' changes to one directory are
/// then told in the order they were made.
pub struct Order(#[allow(dead_code)] Vec<tokio::sync::OwnedMutexGuard<()>>);

/// Takes the order of the directories `dirs` that some client holds a
/// delegation of (none otherwise), lowest stripe first.
pub async fn order(cx: &Compound, dirs: &[&FileKey]) -> Order {
    let state = cx.srv.state();
    if !state.delegations_outstanding() {
        return Order(Vec::new());
    }
    let mut stripes: Vec<usize> = dirs
        .iter()
        .filter(|d| state.dir_delegated(d))
        .map(|d| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            std::hash::Hash::hash(d, &mut h);
            std::hash::Hasher::finish(&h) as usize % STRIPES
        })
        .collect();
    stripes.sort_unstable();
    stripes.dedup();
    let mut held = Vec::with_capacity(stripes.len());
    for i in stripes {
        held.push(cx.srv.dir_order.0[i].clone().lock_owned().await);
    }
    Order(held)
}

/// Before a change of `kind` to the directory `dir` by this compound's
/// client: recalls the other clients' delegations of it that would not be
/// told, and waits for their return (NFS4ERR_DELAY past the wait).
pub async fn settle(cx: &Compound, dir: &FileKey, kind: NotifyType4) -> Result<(), NfsStat4> {
    let state = cx.srv.state();
    if !state.delegations_outstanding() {
        return Ok(());
    }
    let client = cx.clientid()?;
    deleg::wait_out(cx, || state.break_dir_delegations(dir, client, kind)).await
}

/// Whether another client's delegation of `dir` wants `kind`.
fn watched(cx: &Compound, dir: &FileKey, kind: NotifyType4) -> bool {
    cx.clientid()
        .is_ok_and(|c| cx.srv.state().dir_watched(dir, c, kind))
}

/// The READDIR cookie of `name` in `dir`, for a notification of its
/// removal or renaming (`kind`; 0 if it cannot be found); looked up only
/// when another client's delegation of `dir` wants that notification.
pub async fn cookie_of(cx: &Compound, dir: &Fh, name: &Bytes, kind: NotifyType4) -> u64 {
    if !watched(cx, &dir.key(), kind) {
        return 0;
    }
    let (h, n) = (dir.handle.clone(), name.clone());
    cx.vfs(dir.export, move |v, c| {
        let mut found = 0;
        v.readdir(c, &h, 0, false, &mut |e| {
            if e.name == n {
                found = e.cookie;
                return false;
            }
            true
        })?;
        Ok(found)
    })
    .await
    .unwrap_or(0)
}

fn entry(name: &Bytes) -> NotifyEntry4 {
    NotifyEntry4 {
        file: name.clone(),
        attrs: Fattr4::default(),
    }
}

fn add4(name: &Bytes) -> NotifyAdd4 {
    NotifyAdd4 {
        old_entry: None,
        new_entry: entry(name),
        new_entry_cookie: None,
        prev_entry: None,
        last_entry: false,
    }
}

fn remove4(name: &Bytes, cookie: u64) -> NotifyRemove4 {
    NotifyRemove4 {
        old_entry: entry(name),
        old_entry_cookie: cookie,
    }
}

/// After `name` was added to `dir` (NOTIFY4_ADD_ENTRY).
pub fn added(cx: &Compound, dir: &FileKey, name: &Bytes) {
    let note = Notify4::one(NotifyType4::AddEntry as u32, &add4(name));
    notify(cx, dir, NotifyType4::AddEntry, &|_| note.clone());
}

/// After `name`, whose READDIR cookie was `cookie`, was removed from `dir`
/// (NOTIFY4_REMOVE_ENTRY).
pub fn removed(cx: &Compound, dir: &FileKey, name: &Bytes, cookie: u64) {
    let note = Notify4::one(NotifyType4::RemoveEntry as u32, &remove4(name, cookie));
    notify(cx, dir, NotifyType4::RemoveEntry, &|_| note.clone());
}

/// After `old` (cookie `cookie`) was renamed `new` within `dir`
/// (NOTIFY4_RENAME_ENTRY).
pub fn renamed(cx: &Compound, dir: &FileKey, old: &Bytes, cookie: u64, new: &Bytes) {
    let r = NotifyRename4 {
        old_entry: remove4(old, cookie),
        new_entry: add4(new),
    };
    let note = Notify4::one(NotifyType4::RenameEntry as u32, &r);
    notify(cx, dir, NotifyType4::RenameEntry, &|_| note.clone());
}

/// After the attributes of the directory `dir` changed
/// (NOTIFY4_CHANGE_DIR_ATTRS, carrying those each holder asked for).
pub async fn attrs_changed(cx: &Compound, dir: &Fh) {
    if !watched(cx, &dir.key(), NotifyType4::ChangeDirAttrs) {
        return;
    }
    let want = Bitmap4::from_attrs(&DIR_ATTRS);
    let Ok(now) = super::attrs::get(cx, dir, &want).await else {
        return;
    };
    let Ok(now) = Attrs::decode(&now) else {
        return;
    };
    notify(
        cx,
        &dir.key(),
        NotifyType4::ChangeDirAttrs,
        &|w: &DirWatch| {
            let a = NotifyAttr4 {
                changed_entry: NotifyEntry4 {
                    file: Bytes::new(),
                    attrs: now.encode_only(&w.dir_attrs),
                },
            };
            Notify4::one(NotifyType4::ChangeDirAttrs as u32, &a)
        },
    );
}

/// Queues a notification for the holders that want `kind` and starts the
/// senders that are not running.
fn notify(cx: &Compound, dir: &FileKey, kind: NotifyType4, note: &dyn Fn(&DirWatch) -> Notify4) {
    let Ok(client) = cx.clientid() else {
        return;
    };
    let (senders, recalls) = cx.srv.state().notify_dir(dir, client, kind, note);
    for r in recalls {
        callback::recall(&cx.srv, r);
    }
    let wait = kind == NotifyType4::ChangeDirAttrs;
    for (session, other) in senders {
        callback::notify_dir(&cx.srv, session, other, wait);
    }
}
