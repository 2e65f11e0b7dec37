//! Client records and EXCHANGE_ID's case analysis (RFC 8881 §18.35.4).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use proto::nfs4::*;

use super::lease::Lease;
use super::stateid::StateEntry;
use crate::types::FileKey;

/// Who a client is, as its RPC credential says (RFC 8881 §2.4.3).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Principal {
    None,
    Sys {
        uid: u32,
        gid: u32,
    },
    /// An RPCSEC_GSS principal (`nfs/client.example@REALM`).
    Gss(String),
}

/// A client record, with everything the client holds.
#[derive(Debug)]
pub struct Client {
    pub id: ClientId4,
    pub owner: Bytes,
    pub verifier: Verifier4,
    pub principal: Principal,
    pub confirmed: bool,
    /// Sequence id of the last CREATE_SESSION executed (RFC 8881 §18.36.4).
    pub cs_seq: u32,
    /// Its reply, replayed for a retransmission.
    pub cs_reply: Option<CreateSession4ResOk>,
    pub sessions: HashSet<SessionId4>,
    /// Shared with its sessions, which renew it without the state lock.
    pub lease: Arc<Lease>,
    pub reclaim_complete: bool,
    /// EXCHANGE_ID flags granted.
    pub flags: u32,
    /// Its open and lock stateids, by `other`.
    pub states: HashMap<[u8; 12], StateEntry>,
    /// (open owner, file) to its open stateid.
    pub opens_by_owner: HashMap<(Bytes, FileKey), [u8; 12]>,
    /// (lock owner, file) to its lock stateid.
    pub locks_by_owner: HashMap<(Bytes, FileKey), [u8; 12]>,
    /// Its delegation of each file (at most one; revoked ones included).
    pub delegs_by_file: HashMap<FileKey, [u8; 12]>,
    /// Its layout stateid of each file (at most one, RFC 8881 §12.5.3).
    pub layouts_by_file: HashMap<FileKey, [u8; 12]>,
    /// Files where one of its lock owners waits for a blocking lock, and
    /// the filehandle it asked with (CB_NOTIFY_LOCK names the file so).
    pub waiting_on: HashMap<FileKey, Bytes>,
    /// Serial of its last stateid.
    pub last_serial: u32,
    /// The deadline it is filed under in the expiry queue.
    pub deadline: Duration,
    /// Where its last EXCHANGE_ID came from, and its minor version (for
    /// `ferrite stat`).
    pub address: Option<std::net::SocketAddr>,
    pub minorversion: u32,
    /// Its client ids at servers exports migrated from (their stateids
    /// name it by them, `crate::migration`).
    pub aliases: Vec<ClientId4>,
    /// An NFSv4.0 client's SETCLIENTID details and owners
    /// (`crate::v40`); none for NFSv4.1 clients.
    pub v40: Option<Box<crate::v40::V40>>,
}

impl Client {
    pub fn new(id: ClientId4, owner: &ClientOwner4, principal: Principal, now: Duration) -> Self {
        Client {
            id,
            owner: owner.ownerid.clone(),
            verifier: owner.verifier,
            principal,
            confirmed: false,
            cs_seq: 0,
            cs_reply: None,
            sessions: HashSet::new(),
            lease: Arc::new(Lease::new(now)),
            reclaim_complete: false,
            flags: 0,
            states: HashMap::new(),
            opens_by_owner: HashMap::new(),
            locks_by_owner: HashMap::new(),
            delegs_by_file: HashMap::new(),
            layouts_by_file: HashMap::new(),
            waiting_on: HashMap::new(),
            last_serial: 0,
            deadline: Duration::ZERO,
            address: None,
            minorversion: 0,
            aliases: Vec::new(),
            v40: None,
        }
    }

    pub fn expired(&self, now: Duration, lease: Duration) -> bool {
        self.lease.expired(now, lease)
    }

    pub fn has_state(&self) -> bool {
        !self.sessions.is_empty() || !self.states.is_empty()
    }
}

/// What EXCHANGE_ID decided, given the records for the client's owner.
#[derive(Debug, PartialEq, Eq)]
pub enum ExchangeDecision {
    /// Answer with this existing, confirmed record.
    Existing(ClientId4),
    /// Make a new unconfirmed record; remove these records first.
    New {
        remove: Vec<ClientId4>,
    },
    Err(NfsStat4),
}

/// RFC 8881 §18.35.4: the EXCHANGE_ID cases, for a request with `verifier`
/// from `principal`, against the owner's `confirmed` and `unconfirmed`
/// records (at most one of each).
pub fn exchange_decision(
    update: bool,
    verifier: &Verifier4,
    principal: &Principal,
    confirmed: Option<&Client>,
    unconfirmed: Option<&Client>,
) -> ExchangeDecision {
    let mut remove: Vec<ClientId4> = unconfirmed.map(|u| u.id).into_iter().collect();
    match (update, confirmed) {
        // Case 7: an update of a record that does not exist (or is not
        // confirmed).
        (true, None) => ExchangeDecision::Err(NfsStat4::Nfs4errNoent),
        (true, Some(c)) => {
            if c.verifier != *verifier {
                // Case 8: update with the wrong verifier.
                ExchangeDecision::Err(NfsStat4::Nfs4errNotSame)
            } else if c.principal != *principal {
                // Case 9: update from another principal.
                ExchangeDecision::Err(NfsStat4::Nfs4errPerm)
            } else {
                // Case 6: a real update.
                ExchangeDecision::Existing(c.id)
            }
        }
        (false, Some(c)) if c.principal != *principal => {
            // Case 3: client collision. A record holding state is in use.
            if c.has_state() {
                ExchangeDecision::Err(NfsStat4::Nfs4errClidInuse)
            } else {
                remove.push(c.id);
                ExchangeDecision::New { remove }
            }
        }
        // Case 2: a retransmission or the same client again.
        (false, Some(c)) if c.verifier == *verifier => ExchangeDecision::Existing(c.id),
        // Case 5: the client rebooted. The old record stays until the new
        // one is confirmed by CREATE_SESSION.
        (false, Some(_)) => ExchangeDecision::New { remove },
        // Cases 1 and 4: new client, or an unconfirmed record replaced.
        (false, None) => ExchangeDecision::New { remove },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(id: u64, verf: u8, uid: u32, confirmed: bool) -> Client {
        let mut c = Client::new(
            id,
            &ClientOwner4 {
                verifier: [verf; 8],
                ownerid: Bytes::from_static(b"owner"),
            },
            Principal::Sys { uid, gid: 0 },
            Duration::ZERO,
        );
        c.confirmed = confirmed;
        c
    }

    const P0: Principal = Principal::Sys { uid: 0, gid: 0 };
    const P1: Principal = Principal::Sys { uid: 1111, gid: 0 };

    #[test]
    fn case_table() {
        use ExchangeDecision::*;
        let c = client(1, 1, 0, true);
        let u = client(2, 1, 0, false);
        assert_eq!(
            exchange_decision(false, &[1; 8], &P0, None, None),
            New { remove: vec![] }
        );
        assert_eq!(
            exchange_decision(false, &[1; 8], &P0, None, Some(&u)),
            New { remove: vec![2] }
        );
        assert_eq!(
            exchange_decision(false, &[1; 8], &P0, Some(&c), None),
            Existing(1)
        );
        assert_eq!(
            exchange_decision(false, &[2; 8], &P0, Some(&c), None),
            New { remove: vec![] }
        );
        assert_eq!(
            exchange_decision(false, &[1; 8], &P1, Some(&c), None),
            New { remove: vec![1] }
        );
        let mut busy = client(1, 1, 0, true);
        busy.sessions.insert([0; 16]);
        assert_eq!(
            exchange_decision(false, &[1; 8], &P1, Some(&busy), None),
            Err(NfsStat4::Nfs4errClidInuse)
        );
        assert_eq!(
            exchange_decision(true, &[1; 8], &P0, None, Some(&u)),
            Err(NfsStat4::Nfs4errNoent)
        );
        assert_eq!(
            exchange_decision(true, &[2; 8], &P0, Some(&c), None),
            Err(NfsStat4::Nfs4errNotSame)
        );
        assert_eq!(
            exchange_decision(true, &[1; 8], &P1, Some(&c), None),
            Err(NfsStat4::Nfs4errPerm)
        );
        assert_eq!(
            exchange_decision(true, &[1; 8], &P0, Some(&c), None),
            Existing(1)
        );
    }
}
