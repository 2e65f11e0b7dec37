//! POSIX access control lists (POSIX.1e draft 17, as Linux keeps them):
//! the entries, the minimal ACL a mode stands for, and the binary form of
//! the `system.posix_acl_access` and `system.posix_acl_default` extended
//! attributes (version 2, little-endian `{u16 tag, u16 perm, u32 id}`
//! after a `u32` version).

/// Read, write and execute, as in a mode's three bits.
pub const ACL_READ: u8 = 4;
pub const ACL_WRITE: u8 = 2;
pub const ACL_EXECUTE: u8 = 1;

/// An entry's kind, in the order entries are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AclTag {
    /// The file's owner.
    UserObj,
    /// A named user.
    User(u32),
    /// The file's group.
    GroupObj,
    /// A named group.
    Group(u32),
    /// The most any named entry or the group entry grants.
    Mask,
    /// Everyone else.
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AclEntry {
    pub tag: AclTag,
    /// `ACL_READ | ACL_WRITE | ACL_EXECUTE` bits.
    pub perm: u8,
}

/// A POSIX ACL: its entries sorted by tag (then id), as the kernel wants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PosixAcl {
    pub entries: Vec<AclEntry>,
}

/// What setting an NFSv4 ACL comes to: the access ACL and, for a
/// directory, the default ACL (None: none, any there is removed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AclSet {
    pub access: PosixAcl,
    pub default: Option<PosixAcl>,
}

/// The most entries read or written (the kernel allows 32 for a 64 KiB
/// attribute on most file systems; more is refused).
pub const MAX_ENTRIES: usize = 1024;

const VERSION: u32 = 2;
const TAG_USER_OBJ: u16 = 0x01;
const TAG_USER: u16 = 0x02;
const TAG_GROUP_OBJ: u16 = 0x04;
const TAG_GROUP: u16 = 0x08;
const TAG_MASK: u16 = 0x10;
const TAG_OTHER: u16 = 0x20;
const NO_ID: u32 = u32::MAX;

impl PosixAcl {
    /// The ACL mode bits `mode` stand for: owner, group, other.
    pub fn from_mode(mode: u32) -> PosixAcl {
        let bits = |shift: u32| ((mode >> shift) & 7) as u8;
        PosixAcl {
            entries: vec![
                AclEntry {
                    tag: AclTag::UserObj,
                    perm: bits(6),
                },
                AclEntry {
                    tag: AclTag::GroupObj,
                    perm: bits(3),
                },
                AclEntry {
                    tag: AclTag::Other,
                    perm: bits(0),
                },
            ],
        }
    }

    /// The permission of the entry `tag`, if present.
    pub fn perm(&self, tag: AclTag) -> Option<u8> {
        self.entries.iter().find(|e| e.tag == tag).map(|e| e.perm)
    }

    /// Whether it says no more than a mode does (no named entries, no
    /// mask).
    pub fn is_minimal(&self) -> bool {
        self.entries
            .iter()
            .all(|e| matches!(e.tag, AclTag::UserObj | AclTag::GroupObj | AclTag::Other))
    }

    /// The mode's permission bits it stands for: owner, mask (or group
    /// when there is none), other (as `chmod` and `stat` see them).
    pub fn mode_bits(&self) -> u32 {
        let p = |t| u32::from(self.perm(t).unwrap_or(0));
        let group = self
            .perm(AclTag::Mask)
            .map_or(p(AclTag::GroupObj), u32::from);
        p(AclTag::UserObj) << 6 | group << 3 | p(AclTag::Other)
    }

    /// Sorts the entries as the kernel requires and checks the ACL is
    /// well formed: one owner, group and other entry, no id twice, and a
    /// mask when there are named entries.
    pub fn normalize(mut self) -> Result<PosixAcl, &'static str> {
        self.entries.sort_by_key(|e| e.tag);
        if self.entries.len() > MAX_ENTRIES {
            return Err("too many entries");
        }
        if self.entries.windows(2).any(|w| w[0].tag == w[1].tag) {
            return Err("an entry given twice");
        }
        for t in [AclTag::UserObj, AclTag::GroupObj, AclTag::Other] {
            if self.perm(t).is_none() {
                return Err("an owner, group or other entry missing");
            }
        }
        let named = self
            .entries
            .iter()
            .any(|e| matches!(e.tag, AclTag::User(_) | AclTag::Group(_)));
        if named && self.perm(AclTag::Mask).is_none() {
            return Err("named entries without a mask");
        }
        if self.entries.iter().any(|e| e.perm > 7) {
            return Err("permission bits beyond rwx");
        }
        Ok(self)
    }

    /// The extended attribute's bytes.
    pub fn to_xattr(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(4 + 8 * self.entries.len());
        v.extend_from_slice(&VERSION.to_le_bytes());
        for e in &self.entries {
            let (tag, id) = match e.tag {
                AclTag::UserObj => (TAG_USER_OBJ, NO_ID),
                AclTag::User(u) => (TAG_USER, u),
                AclTag::GroupObj => (TAG_GROUP_OBJ, NO_ID),
                AclTag::Group(g) => (TAG_GROUP, g),
                AclTag::Mask => (TAG_MASK, NO_ID),
                AclTag::Other => (TAG_OTHER, NO_ID),
            };
            v.extend_from_slice(&tag.to_le_bytes());
            v.extend_from_slice(&u16::from(e.perm).to_le_bytes());
            v.extend_from_slice(&id.to_le_bytes());
        }
        v
    }

    /// Reads the extended attribute's bytes; None if they are not a
    /// version 2 ACL of known tags.
    pub fn from_xattr(b: &[u8]) -> Option<PosixAcl> {
        let (head, rest) = b.split_at_checked(4)?;
        if u32::from_le_bytes(head.try_into().ok()?) != VERSION || rest.len() % 8 != 0 {
            return None;
        }
        if rest.len() / 8 > MAX_ENTRIES {
            return None;
        }
        let mut entries = Vec::with_capacity(rest.len() / 8);
        for e in rest.chunks_exact(8) {
            let tag = u16::from_le_bytes([e[0], e[1]]);
            let perm = u16::from_le_bytes([e[2], e[3]]);
            let id = u32::from_le_bytes([e[4], e[5], e[6], e[7]]);
            let tag = match tag {
                TAG_USER_OBJ => AclTag::UserObj,
                TAG_USER => AclTag::User(id),
                TAG_GROUP_OBJ => AclTag::GroupObj,
                TAG_GROUP => AclTag::Group(id),
                TAG_MASK => AclTag::Mask,
                TAG_OTHER => AclTag::Other,
                _ => return None,
            };
            entries.push(AclEntry {
                tag,
                perm: (perm & 7) as u8,
            });
        }
        Some(PosixAcl { entries })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xattr_round_trip_and_mode() {
        let acl = PosixAcl {
            entries: vec![
                AclEntry {
                    tag: AclTag::Other,
                    perm: 4,
                },
                AclEntry {
                    tag: AclTag::User(1001),
                    perm: 6,
                },
                AclEntry {
                    tag: AclTag::UserObj,
                    perm: 7,
                },
                AclEntry {
                    tag: AclTag::Mask,
                    perm: 6,
                },
                AclEntry {
                    tag: AclTag::GroupObj,
                    perm: 4,
                },
            ],
        }
        .normalize()
        .unwrap();
        assert_eq!(acl.entries[0].tag, AclTag::UserObj);
        assert_eq!(acl.entries[1].tag, AclTag::User(1001));
        let x = acl.to_xattr();
        assert_eq!(x.len(), 4 + 5 * 8);
        assert_eq!(PosixAcl::from_xattr(&x), Some(acl.clone()));
        assert_eq!(acl.mode_bits(), 0o764);
        assert!(!acl.is_minimal());
        assert!(PosixAcl::from_mode(0o750).is_minimal());
        assert_eq!(PosixAcl::from_mode(0o750).mode_bits(), 0o750);
        // Truncated, wrong version, unknown tag.
        assert_eq!(PosixAcl::from_xattr(&x[..x.len() - 1]), None);
        assert_eq!(PosixAcl::from_xattr(&[1, 0, 0, 0]), None);
        let mut bad = x.clone();
        bad[4] = 0x40;
        assert_eq!(PosixAcl::from_xattr(&bad), None);
        // Named entries need a mask.
        let mut no_mask = acl.clone();
        no_mask.entries.retain(|e| e.tag != AclTag::Mask);
        assert!(no_mask.normalize().is_err());
    }
}
