//! NFSv4 ACLs (RFC 8881 §6) kept as the exported file system's POSIX
//! ACLs, mapped both ways in the manner of the Linux server
//! (draft-ietf-nfsv4-acl-mapping): `docs/acls.md` says what maps to what
//! and what cannot be expressed.
//!
//! POSIX to NFSv4: for each class of the POSIX ACL, in POSIX's order of
//! evaluation, an ALLOW of what the class gets, preceded by a DENY of what
//! a later ACE would otherwise give it: so that the NFSv4 rule (the first
//! ACE that names a principal and a bit decides it, §6.2.1) gives every
//! class exactly its POSIX permissions. Named and owning groups allow
//! first and deny after, as a user in several groups gets the union.
//! A directory's default ACL follows with inherit-only ACEs.
//!
//! NFSv4 to POSIX: each class's permission is what the NFSv4 rule gives a
//! principal of that class alone (the owner: OWNER@ and EVERYONE@ ACEs; a
//! named user: its ACEs and EVERYONE@; and so on), for read
//! (READ_DATA), write (WRITE_DATA) and execute (EXECUTE); named entries
//! bring a mask of their union. Inheritable ACEs make the default ACL.

pub mod attr;

use proto::nfs4::*;
use vfs::acl::{AclEntry, AclSet, AclTag, PosixAcl, ACL_EXECUTE, ACL_READ, ACL_WRITE};

/// The principal an ACE names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Who {
    Owner,
    Group,
    Everyone,
    User(u32),
    GroupId(u32),
}

impl Who {
    /// The special principals' names (§6.2.1.5); None for ids.
    pub fn special(self) -> Option<&'static str> {
        match self {
            Who::Owner => Some("OWNER@"),
            Who::Group => Some("GROUP@"),
            Who::Everyone => Some("EVERYONE@"),
            _ => None,
        }
    }

    fn is_group(self) -> bool {
        matches!(self, Who::Group | Who::GroupId(_))
    }
}

/// Where an ACE applies: to the object, to what is created in the
/// directory (inherit-only), or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Object,
    Inherited,
    Both,
}

/// An ALLOW or DENY ACE with its principal resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ace {
    pub allow: bool,
    pub scope: Scope,
    pub mask: u32,
    pub who: Who,
}

/// What each class may do without asking: read attributes and the ACL.
const ANYONE: u32 = ACE4_READ_ATTRIBUTES | ACE4_READ_ACL | ACE4_SYNCHRONIZE;
/// What the owner may do besides: change attributes and the ACL.
const OWNER: u32 = ACE4_WRITE_ATTRIBUTES | ACE4_WRITE_ACL;

/// The NFSv4 access bits POSIX permission `perm` stands for.
fn access_bits(perm: u8, dir: bool) -> u32 {
    let mut m = 0;
    if perm & ACL_READ != 0 {
        m |= ACE4_READ_DATA;
    }
    if perm & ACL_WRITE != 0 {
        m |= ACE4_WRITE_DATA | ACE4_APPEND_DATA;
        if dir {
            m |= ACE4_DELETE_CHILD;
        }
    }
    if perm & ACL_EXECUTE != 0 {
        m |= ACE4_EXECUTE;
    }
    m
}

/// The ACEs of one POSIX ACL, in the order that makes the NFSv4 rule
/// give each class its POSIX permissions.
fn aces_of(acl: &PosixAcl, dir: bool, scope: Scope, out: &mut Vec<Ace>) {
    let perm = |t| acl.perm(t).unwrap_or(0);
    let mask = acl.perm(AclTag::Mask).unwrap_or(7);
    let users: Vec<(u32, u8)> = acl
        .entries
        .iter()
        .filter_map(|e| match e.tag {
            AclTag::User(u) => Some((u, e.perm & mask)),
            _ => None,
        })
        .collect();
    let groups: Vec<(u32, u8)> = acl
        .entries
        .iter()
        .filter_map(|e| match e.tag {
            AclTag::Group(g) => Some((g, e.perm & mask)),
            _ => None,
        })
        .collect();
    let group = perm(AclTag::GroupObj) & mask;
    let other = perm(AclTag::Other);
    let union = |v: &[(u32, u8)]| v.iter().fold(0u8, |a, (_, p)| a | p);
    let mut push = |allow: bool, perm: u8, who: Who, extra: u32| {
        let bits = access_bits(perm, dir);
        if allow || bits != 0 {
            out.push(Ace {
                allow,
                scope,
                mask: bits | if allow { extra } else { 0 },
                who,
            });
        }
    };
    // The owner: denied what any later ACE could give, then allowed.
    let owner = perm(AclTag::UserObj);
    let later = union(&users) | group | union(&groups) | other;
    push(false, !owner & later & 7, Who::Owner, 0);
    push(true, owner, Who::Owner, ANYONE | OWNER);
    // Named users: the same, against the groups and others after them.
    let after_users = group | union(&groups) | other;
    for &(u, p) in &users {
        push(false, !p & after_users & 7, Who::User(u), 0);
        push(true, p, Who::User(u), ANYONE);
    }
    // Groups: all allows, then all denies of what EVERYONE@ would give.
    push(true, group, Who::Group, ANYONE);
    for &(g, p) in &groups {
        push(true, p, Who::GroupId(g), ANYONE);
    }
    push(false, !group & other & 7, Who::Group, 0);
    for &(g, p) in &groups {
        push(false, !p & other & 7, Who::GroupId(g), 0);
    }
    push(true, other, Who::Everyone, ANYONE);
}

/// The NFSv4 ACL of an object whose access ACL is `access` (or, without
/// one, the minimal ACL of its mode) and, a directory, default ACL
/// `default`.
pub fn from_posix(access: &PosixAcl, default: Option<&PosixAcl>, dir: bool) -> Vec<Ace> {
    let mut out = Vec::new();
    aces_of(access, dir, Scope::Object, &mut out);
    if let Some(d) = default.filter(|_| dir) {
        aces_of(d, dir, Scope::Inherited, &mut out);
    }
    out
}

/// Why an NFSv4 ACL has no POSIX form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// An AUDIT or ALARM ACE: NFS4ERR_ATTRNOTSUPP.
    Type,
    /// Flags POSIX cannot express (inheritance of files but not
    /// directories, no-propagate, inherit-only without inheritance, audit
    /// flags), inheritance on a file, too many principals: NFS4ERR_INVAL.
    Inexpressible,
}

impl Refused {
    pub fn status(self) -> NfsStat4 {
        match self {
            Refused::Type => NfsStat4::Nfs4errAttrnotsupp,
            Refused::Inexpressible => NfsStat4::Nfs4errInval,
        }
    }
}

/// The flags this mapping takes on an ACE.
const INHERIT: u32 = ACE4_FILE_INHERIT_ACE | ACE4_DIRECTORY_INHERIT_ACE;

/// An ACE's scope from its flags, or why it has none in POSIX.
pub fn scope(flag: u32) -> Result<Scope, Refused> {
    let known = INHERIT | ACE4_INHERIT_ONLY_ACE | ACE4_IDENTIFIER_GROUP | ACE4_INHERITED_ACE;
    if flag & !known != 0 {
        return Err(Refused::Inexpressible);
    }
    match (flag & INHERIT, flag & ACE4_INHERIT_ONLY_ACE != 0) {
        (0, false) => Ok(Scope::Object),
        (INHERIT, true) => Ok(Scope::Inherited),
        (INHERIT, false) => Ok(Scope::Both),
        _ => Err(Refused::Inexpressible),
    }
}

/// What the NFSv4 rule gives a principal named by `whos` (and
/// EVERYONE@): each of read, write and execute decided by the first ACE
/// that names it and holds the bit.
fn evaluate<'a>(aces: impl Iterator<Item = &'a Ace> + Clone, whos: &[Who]) -> u8 {
    let mut perm = 0;
    for (bit, key) in [
        (ACL_READ, ACE4_READ_DATA),
        (ACL_WRITE, ACE4_WRITE_DATA),
        (ACL_EXECUTE, ACE4_EXECUTE),
    ] {
        let first = aces
            .clone()
            .find(|a| a.mask & key != 0 && (a.who == Who::Everyone || whos.contains(&a.who)));
        if first.is_some_and(|a| a.allow) {
            perm |= bit;
        }
    }
    perm
}

/// The POSIX ACL the ACEs `aces` (those of one scope) come to.
fn posix_of(aces: &[&Ace]) -> PosixAcl {
    let it = || aces.iter().copied();
    let mut named: Vec<Who> = aces
        .iter()
        .map(|a| a.who)
        .filter(|w| matches!(w, Who::User(_) | Who::GroupId(_)))
        .collect();
    named.sort();
    named.dedup();
    let mut entries = vec![
        AclEntry {
            tag: AclTag::UserObj,
            perm: evaluate(it(), &[Who::Owner]),
        },
        AclEntry {
            tag: AclTag::GroupObj,
            perm: evaluate(it(), &[Who::Group]),
        },
        AclEntry {
            tag: AclTag::Other,
            perm: evaluate(it(), &[]),
        },
    ];
    let mut mask = entries[1].perm;
    for w in named {
        let perm = evaluate(it(), &[w]);
        mask |= perm;
        let tag = match w {
            Who::User(u) => AclTag::User(u),
            Who::GroupId(g) => AclTag::Group(g),
            _ => continue,
        };
        entries.push(AclEntry { tag, perm });
    }
    if entries.len() > 3 {
        entries.push(AclEntry {
            tag: AclTag::Mask,
            perm: mask,
        });
    }
    entries.sort_by_key(|e| e.tag);
    PosixAcl { entries }
}

/// The POSIX form of an NFSv4 ACL: the access ACL and, if any ACE is
/// inheritable, the default ACL.
pub fn to_posix(aces: &[Ace]) -> Result<AclSet, Refused> {
    if aces.len() > vfs::acl::MAX_ENTRIES {
        return Err(Refused::Inexpressible);
    }
    let object: Vec<&Ace> = aces
        .iter()
        .filter(|a| a.scope != Scope::Inherited)
        .collect();
    let inherited: Vec<&Ace> = aces.iter().filter(|a| a.scope != Scope::Object).collect();
    Ok(AclSet {
        access: posix_of(&object),
        default: (!inherited.is_empty()).then(|| posix_of(&inherited)),
    })
}

/// An ACE on the wire, its principal named by `name` (ids as names or
/// numbers, as owners are).
pub fn to_wire(a: &Ace, name: impl Fn(Who) -> String) -> Nfsace4 {
    let mut flag = match a.scope {
        Scope::Object => 0,
        Scope::Inherited => INHERIT | ACE4_INHERIT_ONLY_ACE,
        Scope::Both => INHERIT,
    };
    if a.who.is_group() {
        flag |= ACE4_IDENTIFIER_GROUP;
    }
    Nfsace4 {
        type_: if a.allow {
            ACE4_ACCESS_ALLOWED_ACE_TYPE
        } else {
            ACE4_ACCESS_DENIED_ACE_TYPE
        },
        flag,
        access_mask: a.mask,
        who: bytes::Bytes::from(a.who.special().map_or_else(|| name(a.who), String::from)),
    }
}

/// An ACE's type: ALLOW (true) or DENY; AUDIT and ALARM have no POSIX
/// form.
pub fn allows(type_: u32) -> Result<bool, Refused> {
    match type_ {
        ACE4_ACCESS_ALLOWED_ACE_TYPE => Ok(true),
        ACE4_ACCESS_DENIED_ACE_TYPE => Ok(false),
        _ => Err(Refused::Type),
    }
}

#[cfg(test)]
mod tests;
