//! The exports being served, as one snapshot: the list, and the pseudo
//! filesystem joining them (RFC 8881 §7.3).
//!
//! A reload ([`crate::run::Running::reload`]) replaces the snapshot whole;
//! a COMPOUND or an NFSv3 call works on the snapshot it started with, so
//! it never sees half of a reload. An export kept by a reload keeps its
//! backend (open files, caches, write log), and its filehandles, which
//! carry its id and its root's tag, stay valid.

pub mod away;
pub mod export;
pub mod filehandle;
pub mod namespace;
pub mod referral;

use std::net::IpAddr;
use std::sync::Arc;

use crate::exports::export::Export;

use namespace::{Child, Namespace};
use referral::ReferralConfig;

/// The cookie verifier READDIR hands out (RFC 8881 §18.23.3, RFC 1813
/// §3.3.16): every export's directory cookies stay valid across restarts
/// (its backend's cookies are stable), so it never changes.
pub const COOKIEVERF: [u8; 8] = [0; 8];

/// The exports, the referrals, and their namespace.
pub struct Exports {
    list: Vec<Arc<Export>>,
    pub ns: Namespace,
}

impl Exports {
    /// Lays out `list`'s namespace (blocking: junctions of nested exports
    /// are looked up in the outer export). Pseudo directories that were in
    /// `previous` keep their numbers, so clients' filehandles of them stay
    /// valid across a reload.
    pub fn new(
        list: Vec<Arc<Export>>,
        referrals: Vec<Arc<ReferralConfig>>,
        previous: Option<&Exports>,
    ) -> Exports {
        let ns = Namespace::build(&list, &referrals, previous.map(|p| &p.ns));
        Exports { list, ns }
    }

    pub fn get(&self, id: u16) -> Option<&Arc<Export>> {
        self.list.iter().find(|e| e.id == id)
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Arc<Export>> {
        self.list.iter()
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Whether a client at `peer` sees `child` in a pseudo directory: an
    /// export it has a rule for, or a node leading to one.
    pub fn visible(&self, child: Child, peer: IpAddr) -> bool {
        let has_rule = |id: u16| {
            self.get(id)
                .is_some_and(|e| e.rules.rule_for(peer).is_some())
        };
        match child {
            Child::Export(id) => has_rule(id),
            // Anyone may learn where a referral leads.
            Child::Referral(_) => true,
            Child::Node(n) => self
                .ns
                .node(n)
                .is_some_and(|n| n.referral_below || n.below.iter().any(|&id| has_rule(id))),
        }
    }
}
