//! Directory delegations (RFC 8881 §10.9): what a change to a directory's
//! entries or attributes, by a request of any protocol, does to them. Before the change, the delegations
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

use state::{DirWatch, FileKey};

use super::delegations;
pub use super::order::{Order, Stripes};
use crate::instance::Server;

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

/// Who makes a change to a directory: the server, and the NFSv4 client
/// making it ([`NFSV3`] for an NFSv3 client, whose changes every holder
/// is told of, or recalled for).
#[derive(Clone, Copy)]
pub struct Changer<'a> {
    pub srv: &'a Arc<Server>,
    pub client: ClientId4,
}

/// The client ID of no NFSv4 client (this server's are never 0).
pub const NFSV3: ClientId4 = 0;

/// Takes the order of the directories `dirs` that some client holds a
/// delegation of (none otherwise), lowest stripe first.
pub async fn order(who: Changer<'_>, dirs: &[&FileKey]) -> Order {
    let state = who.srv.state();
    if !state.delegations_outstanding() {
        return Order::none();
    }
    let delegated: Vec<&FileKey> = dirs
        .iter()
        .copied()
        .filter(|d| state.dir_delegated(d))
        .collect();
    who.srv.dir_order.lock(&delegated).await
}

/// Before a change of `kind` to the directory `dir` by `who`: recalls
/// the other clients' delegations of it that would not be told, and
/// waits for their return (NFS4ERR_DELAY past the wait).
pub async fn settle(who: Changer<'_>, dir: &FileKey, kind: NotifyType4) -> Result<(), NfsStat4> {
    let state = who.srv.state();
    if !state.delegations_outstanding() {
        return Ok(());
    }
    delegations::wait_out(who.srv, || {
        state.break_dir_delegations(dir, who.client, kind)
    })
    .await
}

/// Whether another client's delegation of `dir` wants `kind`.
pub fn watched(who: Changer<'_>, dir: &FileKey, kind: NotifyType4) -> bool {
    who.srv.state().dir_watched(dir, who.client, kind)
}

/// The READDIR cookie of `name` in `dir`, for a notification of its
/// removal or renaming (`kind`; 0 if it cannot be found); looked up only
/// when another client's delegation of `dir` wants that notification.
/// The server's own lookup: as root.
pub async fn cookie_of(who: Changer<'_>, dir: &FileKey, name: &Bytes, kind: NotifyType4) -> u64 {
    if !watched(who, dir, kind) {
        return 0;
    }
    let Some(e) = who.srv.export(dir.0) else {
        return 0;
    };
    let (fs, h, n) = (e.vfs.clone(), vfs::Handle(dir.1.clone()), name.clone());
    let found = crate::handoff::off_thread(move || {
        let mut found = 0;
        let _ = fs.readdir(&vfs::Creds::root(), &h, 0, false, &mut |e| {
            if e.name == n {
                found = e.cookie;
                return false;
            }
            true
        });
        found
    })
    .await;
    found.unwrap_or(0)
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
pub fn added(who: Changer<'_>, dir: &FileKey, name: &Bytes) {
    let note = Notify4::one(NotifyType4::AddEntry as u32, &add4(name));
    notify(who, dir, NotifyType4::AddEntry, &|_| note.clone());
}

/// After `name`, whose READDIR cookie was `cookie`, was removed from `dir`
/// (NOTIFY4_REMOVE_ENTRY).
pub fn removed(who: Changer<'_>, dir: &FileKey, name: &Bytes, cookie: u64) {
    let note = Notify4::one(NotifyType4::RemoveEntry as u32, &remove4(name, cookie));
    notify(who, dir, NotifyType4::RemoveEntry, &|_| note.clone());
}

/// After `old` (cookie `cookie`) was renamed `new` within `dir`
/// (NOTIFY4_RENAME_ENTRY).
pub fn renamed(who: Changer<'_>, dir: &FileKey, old: &Bytes, cookie: u64, new: &Bytes) {
    let r = NotifyRename4 {
        old_entry: remove4(old, cookie),
        new_entry: add4(new),
    };
    let note = Notify4::one(NotifyType4::RenameEntry as u32, &r);
    notify(who, dir, NotifyType4::RenameEntry, &|_| note.clone());
}

/// After the attributes of the directory `dir` changed: its attributes now
/// `a` (NOTIFY4_CHANGE_DIR_ATTRS, carrying those each holder asked for).
pub fn attrs_changed(who: Changer<'_>, dir: &FileKey, a: &vfs::Attr) {
    if !watched(who, dir, NotifyType4::ChangeDirAttrs) {
        return;
    }
    let Some(e) = who.srv.export(dir.0) else {
        return;
    };
    let Some(cb) = who.srv.callbacks() else {
        return;
    };
    let want = Bitmap4::from_attrs(&DIR_ATTRS);
    let now = cb.dir_attrs(&e, a, &want);
    let Ok(now) = Attrs::decode(&now) else {
        return;
    };
    notify(who, dir, NotifyType4::ChangeDirAttrs, &|w: &DirWatch| {
        let a = NotifyAttr4 {
            changed_entry: NotifyEntry4 {
                file: Bytes::new(),
                attrs: now.encode_only(&w.dir_attrs),
            },
        };
        Notify4::one(NotifyType4::ChangeDirAttrs as u32, &a)
    });
}

/// Queues a notification for the holders that want `kind` and starts the
/// senders that are not running.
fn notify(who: Changer<'_>, dir: &FileKey, kind: NotifyType4, note: &dyn Fn(&DirWatch) -> Notify4) {
    let (senders, recalls) = who.srv.state().notify_dir(dir, who.client, kind, note);
    for r in recalls {
        if let Some(cb) = who.srv.callbacks() {
            cb.recall(r);
        }
    }
    let wait = kind == NotifyType4::ChangeDirAttrs;
    for (session, other) in senders {
        if let Some(cb) = who.srv.callbacks() {
            cb.notify_dir(session, other, wait);
        }
    }
}
