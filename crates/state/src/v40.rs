//! What NFSv4.0 (RFC 7530) keeps beyond NFSv4.1's state: a client record's
//! SETCLIENTID details (its confirm verifier and callback, §16.33), and
//! the open and lock owners whose sequence ids order their requests, each
//! with its last reply for a retransmission (§9.1.7). Opens, locks,
//! delegations, leases and grace are the same tables as NFSv4.1's; only
//! how a client is made and how an owner's requests are ordered differ.
//!
//! The rules here are pure (no tables): SETCLIENTID's cases
//! ([`setclientid_decision`], §16.33.5) and an owner's sequence check
//! ([`OwnerSeq::check`], §9.1.7).

use std::collections::HashMap;

use bytes::Bytes;
use proto::nfs4::*;

use crate::client::{Client, Principal};

/// Open and lock owners one client may have records for. Past it, an
/// owner holding nothing is forgotten to make room; if every one holds
/// state, a new owner is NFS4ERR_RESOURCE.
pub const MAX_OWNERS: usize = 4096;

/// The callback a client gave in SETCLIENTID (RFC 7530 §16.33.1):
/// program, network id, universal address and the `callback_ident` it
/// wants in every CB_COMPOUND.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Callback40 {
    pub program: u32,
    pub netid: String,
    pub addr: String,
    pub ident: u32,
}

impl Callback40 {
    pub fn of(args: &SetClientId4Args) -> Callback40 {
        Callback40 {
            program: args.callback.cb_program,
            netid: args.callback.cb_location.netid.clone(),
            addr: args.callback.cb_location.addr.clone(),
            ident: args.callback_ident,
        }
    }
}

/// An open or lock owner of a client, by kind and name (RFC 7530 §9.1.5).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OwnerName {
    Open(Bytes),
    Lock(Bytes),
}

/// An owner's place in its sequence (RFC 7530 §9.1.7).
#[derive(Debug, Clone, Default)]
pub struct OwnerSeq {
    /// The sequence id of its last request that counted.
    pub seqid: u32,
    /// That request's operation and its encoded result, sent again for a
    /// retransmission.
    pub reply: Option<(u32, Bytes)>,
    /// An open owner's first OPEN was confirmed (OPEN_CONFIRM, §16.18);
    /// lock owners are born confirmed.
    pub confirmed: bool,
    /// A request of it is running, with this sequence id.
    pub busy: Option<u32>,
    /// The stateid its last request named or returned: a retransmitted
    /// CLOSE or LOCKU finds the owner through it after the stateid is
    /// gone.
    pub last_other: Option<[u8; 12]>,
}

/// What an owner's next request gets.
#[derive(Debug, PartialEq, Eq)]
pub enum SeqVerdict {
    /// The next in sequence: run it.
    Run,
    /// The last one again: answer with its reply.
    Replay(Bytes),
    /// Out of sequence (NFS4ERR_BAD_SEQID).
    Bad,
    /// A request of the owner is still running (NFS4ERR_DELAY: the
    /// client retries and then gets its reply).
    Busy,
}

impl OwnerSeq {
    /// RFC 7530 §9.1.7: the next sequence id runs, the last one is
    /// answered from its reply (if it was the same operation), anything
    /// else is out of sequence. Sequence ids wrap from 2^32 - 1 to 0.
    pub fn check(&self, seqid: u32, opnum: u32) -> SeqVerdict {
        if self.busy.is_some() {
            return SeqVerdict::Busy;
        }
        if seqid == self.seqid.wrapping_add(1) {
            return SeqVerdict::Run;
        }
        match &self.reply {
            Some((op, r)) if seqid == self.seqid && *op == opnum => SeqVerdict::Replay(r.clone()),
            _ => SeqVerdict::Bad,
        }
    }
}

/// How an owner's request begins (`State::seq_begin`).
#[derive(Debug, PartialEq, Eq)]
pub enum SeqStart {
    /// Run it; for an OPEN, `confirm` says the owner is new or not yet
    /// confirmed (OPEN4_RESULT_CONFIRM).
    Run { confirm: bool },
    /// Answer with this reply (a retransmission).
    Replay(Bytes),
}

/// An NFSv4.0 client record's own part.
#[derive(Debug, Clone, Default)]
pub struct V40 {
    /// The verifier SETCLIENTID_CONFIRM must present.
    pub confirm: Verifier4,
    pub callback: Callback40,
    /// A new callback for this confirmed record (SETCLIENTID with the
    /// same verifier and principal, §16.33.5), waiting for its confirm
    /// verifier.
    pub update: Option<(Verifier4, Callback40)>,
    pub owners: HashMap<OwnerName, OwnerSeq>,
    /// Its record is on stable storage (written at its confirmation):
    /// purging it removes the record.
    pub recorded: bool,
}

/// What SETCLIENTID decided (RFC 7530 §16.33.5), given the id string's
/// confirmed and unconfirmed records.
#[derive(Debug, PartialEq, Eq)]
pub enum SetClientIdDecision {
    /// The confirmed record's callback is to change: it keeps its client
    /// id and state; the change waits for a new confirm verifier.
    Update(ClientId4),
    /// A new unconfirmed record (new client id); these go first.
    New { remove: Vec<ClientId4> },
    /// Another principal uses the id string (NFS4ERR_CLID_INUSE): the
    /// confirmed record's callback address, for `client_using`.
    InUse(String),
}

/// RFC 7530 §16.33.5 for a SETCLIENTID with `verifier` from `principal`:
/// a confirmed record of another principal that holds state is in use; of the same principal with the same verifier, the
/// callback is updated; otherwise (a new client, or one that rebooted) a
/// new unconfirmed record replaces any unconfirmed one, the confirmed
/// record staying until the new one is confirmed.
pub fn setclientid_decision(
    verifier: &Verifier4,
    principal: &Principal,
    confirmed: Option<&Client>,
    unconfirmed: Option<&Client>,
) -> SetClientIdDecision {
    let remove: Vec<ClientId4> = unconfirmed.map(|u| u.id).into_iter().collect();
    // Its callback session is not state; its opens, locks, delegations
    // and owners are.
    let holds =
        |c: &Client| !c.states.is_empty() || c.v40.as_ref().is_some_and(|v| !v.owners.is_empty());
    match confirmed {
        Some(c) if c.principal != *principal && holds(c) => {
            let addr = c
                .v40
                .as_ref()
                .map(|v| v.callback.addr.clone())
                .unwrap_or_default();
            SetClientIdDecision::InUse(addr)
        }
        Some(c) if c.principal == *principal && c.verifier == *verifier && c.v40.is_some() => {
            SetClientIdDecision::Update(c.id)
        }
        _ => SetClientIdDecision::New { remove },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn client(id: u64, verf: u8, uid: u32, confirmed: bool) -> Client {
        let mut c = Client::new(
            id,
            &ClientOwner4 {
                verifier: [verf; 8],
                ownerid: Bytes::from_static(b"x"),
            },
            Principal::Sys { uid, gid: 0 },
            Duration::ZERO,
        );
        c.confirmed = confirmed;
        c.v40 = Some(Box::default());
        c
    }

    const P0: Principal = Principal::Sys { uid: 0, gid: 0 };
    const P1: Principal = Principal::Sys { uid: 1, gid: 0 };

    #[test]
    fn setclientid_cases() {
        use SetClientIdDecision::*;
        let c = client(1, 1, 0, true);
        let u = client(2, 1, 0, false);
        // New id string; an unconfirmed record replaced.
        assert_eq!(
            setclientid_decision(&[1; 8], &P0, None, None),
            New { remove: vec![] }
        );
        assert_eq!(
            setclientid_decision(&[1; 8], &P0, None, Some(&u)),
            New { remove: vec![2] }
        );
        // Same principal and verifier: the callback is updated.
        assert_eq!(
            setclientid_decision(&[1; 8], &P0, Some(&c), Some(&u)),
            Update(1)
        );
        // Another verifier: the client rebooted.
        assert_eq!(
            setclientid_decision(&[2; 8], &P0, Some(&c), None),
            New { remove: vec![] }
        );
        // Another principal while the record holds state: in use.
        let mut busy = client(1, 1, 0, true);
        if let Some(v) = busy.v40.as_mut() {
            v.owners.insert(
                OwnerName::Open(Bytes::from_static(b"o")),
                OwnerSeq::default(),
            );
        }
        assert_eq!(
            setclientid_decision(&[1; 8], &P1, Some(&busy), None),
            InUse(String::new())
        );
        // ... and with nothing held: a new client.
        assert_eq!(
            setclientid_decision(&[1; 8], &P1, Some(&c), None),
            New { remove: vec![] }
        );
    }

    #[test]
    fn sequence_ids() {
        let mut o = OwnerSeq {
            seqid: 5,
            reply: Some((4, Bytes::from_static(b"close"))),
            ..Default::default()
        };
        assert_eq!(o.check(6, 4), SeqVerdict::Run);
        assert_eq!(
            o.check(5, 4),
            SeqVerdict::Replay(Bytes::from_static(b"close"))
        );
        // The last sequence id for another operation, or one too far.
        assert_eq!(o.check(5, 12), SeqVerdict::Bad);
        assert_eq!(o.check(7, 4), SeqVerdict::Bad);
        assert_eq!(o.check(4, 4), SeqVerdict::Bad);
        o.busy = Some(6);
        assert_eq!(o.check(6, 4), SeqVerdict::Busy);
        // Wrapping: after 2^32 - 1 comes 0.
        let w = OwnerSeq {
            seqid: u32::MAX,
            ..Default::default()
        };
        assert_eq!(w.check(0, 4), SeqVerdict::Run);
        assert_eq!(w.check(1, 4), SeqVerdict::Bad);
        assert!(!NfsStat4::Nfs4errBadSeqid.moves_seqid());
        assert!(NfsStat4::Nfs4errDenied.moves_seqid());
    }
}
