//! Stateids (RFC 8881 §8.2): what one names, and its `other` field's
//! layout, which carries the client it belongs to.
//!
//! `other` = `[server epoch: 4][client: 4][serial: 4]`: the epoch tells a
//! stateid of an earlier server instance (NFS4ERR_STALE_STATEID) without a
//! lookup, and the client part (the low half of its client id, whose high
//! half is the epoch) finds the client record, which holds the client's
//! stateids: no lookup goes through a table of every client's state.

use bytes::Bytes;
use proto::nfs4::*;

use crate::types::FileKey;

/// What a stateid stands for.
#[derive(Debug, Clone)]
pub enum StateKind {
    Open {
        owner: Bytes,
        access: u32,
        deny: u32,
        /// The share access and deny values its OPENs asked for, as bits
        /// `1 << value`: OPEN_DOWNGRADE may only go to values asked for
        /// (RFC 7530 §16.19.4, RFC 8881 §18.18.3).
        modes: Modes,
        /// The lock stateids opened through this open (§8.2.4).
        locks: Vec<[u8; 12]>,
    },
    Lock {
        owner: Bytes,
        open: [u8; 12],
    },
    /// A read or write delegation (RFC 8881 §10.2), held by its client
    /// whatever it opens or closes until it is returned or revoked.
    Deleg {
        /// A write delegation (§10.4): the holder may write the file from
        /// its cache; no other client may have it open.
        write: bool,
        /// What CB_GETATTR last learnt of a write delegation's file.
        seen: Option<CbSeen>,
        /// A CB_GETATTR to the holder is under way (one at a time).
        asking: bool,
        /// A directory delegation (§10.9): what its holder is notified of
        /// instead of having it recalled.
        dir: Option<Box<DirWatch>>,
        /// The open owner whose OPEN was granted it: an OPEN of the same
        /// client and owner does not recall it (nfs4::deleg).
        owner: Bytes,
        /// The file's filehandle as the client was given it, for CB_RECALL.
        fh: Bytes,
        /// When CB_RECALL was decided, if it was (§10.4.6: revoked a
        /// lease later if still held).
        recalled: Option<std::time::Duration>,
        /// Revoked (§10.2.1): kept, answering NFS4ERR_DELEG_REVOKED,
        /// until the client frees it with FREE_STATEID.
        revoked: bool,
        /// Delegated timestamps (RFC 9754 §5): the file's times when it
        /// was granted, the holder keeping them since.
        times: Option<DelegTimes>,
    },
    /// A pNFS layout of the file (RFC 8881 §12.5.3): one per client and
    /// file, whatever ranges and modes it holds.
    Layout(Box<crate::layouts::LayoutState>),
}

/// The share access and deny values an open's OPENs asked for
/// ([`StateKind::Open`]), one bit per value (0 to 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Modes {
    pub access: u8,
    pub deny: u8,
}

impl Modes {
    pub fn of(access: u32, deny: u32) -> Modes {
        Modes {
            access: 1 << (access & 3),
            deny: 1 << (deny & 3),
        }
    }

    /// An OPEN asked for `access` and `deny` too.
    pub fn add(&mut self, access: u32, deny: u32) {
        let m = Modes::of(access, deny);
        self.access |= m.access;
        self.deny |= m.deny;
    }

    /// OPEN_DOWNGRADE to `access` and `deny`: only to values an OPEN
    /// asked for; afterwards only the values within them remain.
    pub fn downgrade(&mut self, access: u32, deny: u32) -> bool {
        let m = Modes::of(access, deny);
        if self.access & m.access == 0 || self.deny & m.deny == 0 {
            return false;
        }
        let within = |bits: u8, to: u32| {
            (0..4u32)
                .filter(|v| bits & (1 << v) != 0 && v & !to == 0)
                .fold(0u8, |b, v| b | 1 << v)
        };
        self.access = within(self.access, access);
        self.deny = within(self.deny, deny);
        true
    }
}

/// The attributes other clients are shown of a file under a write
/// delegation after a CB_GETATTR found it modified in the holder's cache
/// (RFC 8881 §10.4.3): the holder's change attribute as it reported it,
/// and the size, change attribute and modification time presented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CbSeen {
    pub client_change: u64,
    pub change: u64,
    pub size: u64,
    pub mtime: NfsTime4,
}

/// The times a delegation with delegated timestamps (RFC 9754 §5) was
/// granted at: its holder's times for the file older than these are not
/// taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DelegTimes {
    pub atime: NfsTime4,
    pub mtime: NfsTime4,
}

/// A directory delegation's notifications (RFC 8881 §10.9, §20.4): the
/// changes by other clients its holder asked to be told of, and those
/// queued for its CB_NOTIFY sender.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirWatch {
    /// The `notify_type4` values granted, as bits.
    pub types: u32,
    /// The directory attributes a NOTIFY4_CHANGE_DIR_ATTRS carries.
    pub dir_attrs: Bitmap4,
    /// How long a change of the directory's attributes may wait, to be
    /// sent with later ones (`gdda_dir_attr_delay`).
    pub attr_delay: std::time::Duration,
    /// Notifications not sent yet, oldest first.
    pub queue: Vec<Notify4>,
    /// A sender is draining `queue`.
    pub sending: bool,
}

impl DirWatch {
    pub fn wants(&self, kind: NotifyType4) -> bool {
        self.types & (1 << kind as u32) != 0
    }
}

/// One stateid's record, under its client.
#[derive(Debug, Clone)]
pub struct StateEntry {
    pub seqid: u32,
    pub file: FileKey,
    pub kind: StateKind,
}

impl StateEntry {
    pub fn stateid(&self, other: [u8; 12]) -> StateId4 {
        StateId4 {
            seqid: self.seqid,
            other,
        }
    }

    /// The open owner or lock owner (none for a delegation).
    pub fn owner(&self) -> Option<&Bytes> {
        match &self.kind {
            StateKind::Open { owner, .. } | StateKind::Lock { owner, .. } => Some(owner),
            StateKind::Deleg { .. } | StateKind::Layout(_) => None,
        }
    }
}

/// The `other` of a client's `serial`th stateid.
pub fn make_other(epoch: u32, client: ClientId4, serial: u32) -> [u8; 12] {
    let mut o = [0u8; 12];
    o[..4].copy_from_slice(&epoch.to_be_bytes());
    o[4..8].copy_from_slice(&(client as u32).to_be_bytes());
    o[8..].copy_from_slice(&serial.to_be_bytes());
    o
}

/// The client a stateid of this server instance belongs to; `None` for one
/// of another instance.
pub fn client_of(epoch: u32, other: &[u8; 12]) -> Option<ClientId4> {
    if other[..4] != epoch.to_be_bytes() {
        return None;
    }
    let low = u32::from_be_bytes([other[4], other[5], other[6], other[7]]);
    Some((epoch as u64) << 32 | low as u64)
}

/// The client id a stateid's issuer gave its client (its epoch and
/// client parts), whichever instance or server issued it: a migrated
/// stateid is found through it (`crate::migration`).
pub fn issuer_client(other: &[u8; 12]) -> ClientId4 {
    let hi = u32::from_be_bytes([other[0], other[1], other[2], other[3]]);
    let low = u32::from_be_bytes([other[4], other[5], other[6], other[7]]);
    (hi as u64) << 32 | low as u64
}

/// The special stateids of RFC 8881 §8.2.3: anonymous (all zeros) and
/// READ bypass (all ones).
pub fn is_special(other: &[u8; 12]) -> bool {
    *other == [0; 12] || *other == [0xff; 12]
}

/// Stateid sequence numbers skip 0 when they wrap (RFC 8881 §8.2.2).
pub fn next_seqid(s: u32) -> u32 {
    match s.wrapping_add(1) {
        0 => 1,
        n => n,
    }
}

/// RFC 8881 §8.2.2: seqid 0 means "the current one"; an older one is
/// NFS4ERR_OLD_STATEID, one not issued yet NFS4ERR_BAD_STATEID.
pub fn check_seqid(presented: u32, current: u32) -> Result<(), NfsStat4> {
    if presented == 0 || presented == current {
        Ok(())
    } else if presented > current {
        Err(NfsStat4::Nfs4errBadStateid)
    } else {
        Err(NfsStat4::Nfs4errOldStateid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_carries_epoch_and_client() {
        let cid = (7u64 << 32) | 0xdead_beef;
        let o = make_other(7, cid, 42);
        assert_eq!(client_of(7, &o), Some(cid));
        assert_eq!(client_of(8, &o), None);
        assert!(is_special(&[0; 12]) && is_special(&[0xff; 12]) && !is_special(&o));
    }

    #[test]
    fn seqids() {
        assert_eq!(next_seqid(u32::MAX), 1);
        assert_eq!(check_seqid(0, 5), Ok(()));
        assert_eq!(check_seqid(5, 5), Ok(()));
        assert_eq!(check_seqid(4, 5), Err(NfsStat4::Nfs4errOldStateid));
        assert_eq!(check_seqid(6, 5), Err(NfsStat4::Nfs4errBadStateid));
    }
}
