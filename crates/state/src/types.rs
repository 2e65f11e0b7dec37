//! The values the state's transitions take and return: what a file and a
//! lock owner are to it, requests (a LOCK, a new session), and the effects
//! a caller carries out (recalls, lock notifications, directory
//! notification senders).

use std::any::Any;
use std::sync::Arc;

use bytes::Bytes;
use proto::nfs4::*;

use crate::locks::{Held, LockKind};
use crate::nlm::NlmGrant;
use crate::session::{BackConn, Session};
use crate::slots::CacheMemory;
use crate::stateid::CbSeen;

use crate::client::Principal;

/// An object that state attaches to: export id and the backend's handle
/// of the object (opaque bytes).
pub type FileKey = (u16, Bytes);

/// A lock owner on the server: its client and its opaque name.
pub type OwnerKey = (ClientId4, Bytes);

/// A CB_NOTIFY_LOCK to send (RFC 8881 §20.11): the waiter's lock owner,
/// and a session of its client to call back on.
#[derive(Debug, Clone)]
pub struct LockNotify {
    pub session: Arc<Session>,
    pub owner: LockOwner4,
    /// The file as the waiter named it in its LOCK.
    pub fh: NfsFh4,
}

/// A CB_RECALL to send (RFC 8881 §20.2): the delegation, its file as the
/// client knows it, and a session of its client to call back on.
#[derive(Debug, Clone)]
pub struct DelegRecall {
    pub session: Arc<Session>,
    pub stateid: StateId4,
    pub fh: NfsFh4,
}

/// A directory delegation's CB_NOTIFY sender to start: a session of its
/// holder and the delegation's stateid `other`.
pub type DirSender = (Arc<Session>, [u8; 12]);

/// A write delegation in force, for CB_GETATTR
/// ([`State::write_delegation`]).
#[derive(Debug, Clone)]
pub struct WriteDeleg {
    pub holder: ClientId4,
    pub session: Option<Arc<Session>>,
    pub stateid: StateId4,
    pub fh: NfsFh4,
    pub seen: Option<CbSeen>,
    /// Its timestamps are delegated (RFC 9754 §5): CB_GETATTR asks the
    /// holder's.
    pub timestamps: bool,
}

/// Who makes a change that may conflict with delegations (RFC 8881
/// §10.4.6; `nfs4::deleg` says who conflicts with whom).
#[derive(Debug, Clone)]
pub enum Breaker {
    /// Conflicts with every delegation of the file.
    Anyone,
    /// An OPEN by this client and open owner: its own delegations, read or
    /// write, do not conflict.
    Opener(OwnerKey),
    /// I/O by this client under this stateid: the write delegation of the
    /// stateid's open owner does not conflict (its holder writes through).
    Io(ClientId4, StateId4),
}

/// Called with the files of the delegations that went in a transition.
pub type DelegEnded = Box<dyn Fn(&[FileKey]) + Send + Sync>;

/// What a change to a file found of other clients' delegations.
#[derive(Debug, Default)]
pub struct Breaking {
    /// Recalls to send now (each delegation is recalled once).
    pub recalls: Vec<DelegRecall>,
    /// Conflicting delegations remain: the change waits for their return.
    pub pending: bool,
}

/// What a lock request ran into.
#[derive(Debug)]
pub enum LockError {
    Status(NfsStat4),
    Denied(Held<OwnerKey>),
}

impl From<NfsStat4> for LockError {
    fn from(s: NfsStat4) -> Self {
        LockError::Status(s)
    }
}

/// A LOCK request (RFC 8881 §18.10.1).
#[derive(Debug, Clone)]
pub struct LockRequest {
    pub client: ClientId4,
    /// The lock owner of `open_to_lock_owner4`; `None` when an existing
    /// lock stateid was presented.
    pub new_owner: Option<Bytes>,
    /// The open stateid (new lock owner) or lock stateid presented.
    pub presented: StateId4,
    pub file: FileKey,
    /// The range `[start, end)`.
    pub start: u64,
    pub end: u64,
    pub kind: LockKind,
    /// READW_LT or WRITEW_LT: queue the owner if denied (§9.6).
    pub blocking: bool,
    pub reclaim: bool,
    /// The file's filehandle as the client sent it (for CB_NOTIFY_LOCK).
    pub fh: Bytes,
}

/// What EXCHANGE_ID grants (RFC 8881 §18.35.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExchangeIdOk {
    pub clientid: ClientId4,
    pub sequenceid: u32,
    pub confirmed: bool,
}

/// A CREATE_SESSION request, its channel attributes already negotiated
/// (RFC 8881 §18.36).
pub struct NewSession {
    pub clientid: ClientId4,
    pub sequence: u32,
    pub principal: Principal,
    pub flags: u32,
    pub fore: ChannelAttrs4,
    pub back: ChannelAttrs4,
    pub cb_program: u32,
    pub sec_parms: Vec<CallbackSecParms4>,
    pub minorversion: u32,
    /// The connection it arrived on (bound to the back channel when
    /// CREATE_SESSION4_FLAG_CONN_BACK_CHAN is granted).
    pub conn: Option<Arc<dyn BackConn>>,
    pub drc: Arc<CacheMemory>,
    /// What the driver keeps beside the session ([`Session::io`]).
    pub io: Box<dyn Any + Send + Sync>,
}

/// What CREATE_SESSION did: its reply and, when a back channel was
/// bound, the session whose back channel the caller should probe.
pub struct SessionCreated {
    pub resok: CreateSession4ResOk,
    pub probe: Option<Arc<Session>>,
}

/// Called with the layouts that ended without being returned.
pub type LayoutsLost = Box<dyn Fn(Vec<crate::layouts::LayoutLost>) + Send + Sync>;

/// Called with blocked NLM requests just granted.
pub type NlmGranted = Box<dyn Fn(Vec<NlmGrant>) + Send + Sync>;

/// What SETCLIENTID_CONFIRM did.
pub struct Confirmed40 {
    /// The session carrying the client's callback path.
    pub session: Arc<Session>,
    /// A callback to open a connection to (and probe), if it is new.
    pub callback: Option<crate::v40::Callback40>,
    /// The client's id string, when its record is new: written to stable
    /// storage before the reply (`State::recorded40`).
    pub record: Option<Bytes>,
}
