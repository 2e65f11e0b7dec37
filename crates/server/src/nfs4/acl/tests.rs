use super::*;

fn e(tag: AclTag, perm: u8) -> AclEntry {
    AclEntry { tag, perm }
}

/// What a class of the POSIX ACL may do (POSIX.1e's evaluation for a
/// principal in that class alone).
fn effective(acl: &PosixAcl, tag: AclTag) -> u8 {
    let mask = acl.perm(AclTag::Mask).unwrap_or(7);
    match tag {
        AclTag::UserObj | AclTag::Other => acl.perm(tag).unwrap_or(0),
        t => acl.perm(t).unwrap_or(0) & mask,
    }
}

fn classes(acl: &PosixAcl) -> Vec<AclTag> {
    acl.entries
        .iter()
        .map(|e| e.tag)
        .filter(|t| *t != AclTag::Mask)
        .collect()
}

#[test]
fn a_mode_maps_to_allows_and_back() {
    for mode in [0o640u32, 0o755, 0o000, 0o777, 0o407, 0o070] {
        let acl = PosixAcl::from_mode(mode);
        let aces = from_posix(&acl, None, false);
        let back = to_posix(&aces).unwrap();
        assert_eq!(back.access, acl, "mode {mode:o}: {aces:?}");
        assert_eq!(back.default, None);
        assert_eq!(back.access.mode_bits(), mode);
    }
    // 0640: OWNER@ allowed rw, denied nothing later ACEs could give it.
    let aces = from_posix(&PosixAcl::from_mode(0o640), None, false);
    assert!(aces[0].allow && aces[0].who == Who::Owner);
    assert_eq!(
        aces[0].mask & (ACE4_READ_DATA | ACE4_WRITE_DATA | ACE4_EXECUTE),
        ACE4_READ_DATA | ACE4_WRITE_DATA
    );
    assert!(aces[0].mask & ACE4_WRITE_ACL != 0);
    // 0407: the owner is denied what others get.
    let aces = from_posix(&PosixAcl::from_mode(0o407), None, false);
    assert!(!aces[0].allow && aces[0].who == Who::Owner);
    assert_eq!(
        aces[0].mask,
        ACE4_WRITE_DATA | ACE4_APPEND_DATA | ACE4_EXECUTE
    );
}

/// Every POSIX ACL of up to two named users and groups, over a spread
/// of permissions: mapped to NFSv4 and back, every class keeps its
/// effective permission.
#[test]
fn every_class_keeps_its_effective_permission() {
    let perms = [0u8, 4, 6, 7, 5, 1];
    let mut n = 0;
    for &owner in &perms {
        for &group in &perms {
            for &other in &perms {
                for &mask in &[7u8, 4, 6, 0] {
                    for &(u1, g1) in &[(6u8, 4u8), (7, 0), (0, 7), (5, 6)] {
                        let acl = PosixAcl {
                            entries: vec![
                                e(AclTag::UserObj, owner),
                                e(AclTag::User(1001), u1),
                                e(AclTag::User(1002), other),
                                e(AclTag::GroupObj, group),
                                e(AclTag::Group(2001), g1),
                                e(AclTag::Mask, mask),
                                e(AclTag::Other, other),
                            ],
                        };
                        for dir in [false, true] {
                            let back = to_posix(&from_posix(&acl, None, dir)).unwrap().access;
                            for t in classes(&acl) {
                                assert_eq!(
                                    effective(&back, t),
                                    effective(&acl, t),
                                    "{t:?} of {acl:?} came back as {back:?}"
                                );
                            }
                            n += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(n, 6 * 6 * 6 * 4 * 4 * 2);
}

fn ace(allow: bool, mask: u32, who: Who) -> Ace {
    Ace {
        allow,
        scope: Scope::Object,
        mask,
        who,
    }
}

const R: u32 = ACE4_READ_DATA;
const W: u32 = ACE4_WRITE_DATA | ACE4_APPEND_DATA;
const X: u32 = ACE4_EXECUTE;

#[test]
fn a_client_acl_becomes_posix() {
    // As nfs4_setfacl writes one: the owner all, alice read-write, the
    // group read, everyone read.
    let aces = [
        ace(true, R | W | X, Who::Owner),
        ace(true, R | W, Who::User(1001)),
        ace(true, R, Who::Group),
        ace(true, R, Who::Everyone),
    ];
    let p = to_posix(&aces).unwrap();
    assert_eq!(
        p.access.entries,
        vec![
            e(AclTag::UserObj, 7),
            e(AclTag::User(1001), 6),
            e(AclTag::GroupObj, 4),
            e(AclTag::Mask, 6),
            e(AclTag::Other, 4),
        ]
    );
    assert_eq!(p.access.mode_bits(), 0o764);
    // A DENY first decides: bob may not write, though everyone may.
    let aces = [
        ace(false, W, Who::User(1002)),
        ace(true, R | W, Who::Everyone),
    ];
    let p = to_posix(&aces).unwrap().access;
    assert_eq!(p.perm(AclTag::User(1002)), Some(4));
    assert_eq!(p.perm(AclTag::UserObj), Some(6));
    assert_eq!(p.perm(AclTag::Other), Some(6));
    // What the mapping gives back says the same.
    let again = to_posix(&from_posix(&p, None, false)).unwrap().access;
    for t in classes(&p) {
        assert_eq!(effective(&again, t), effective(&p, t));
    }
}

#[test]
fn inheritable_aces_make_the_default_acl() {
    let mut inherit = ace(true, R | X, Who::User(1001));
    inherit.scope = Scope::Inherited;
    let mut both = ace(true, R | W | X, Who::Owner);
    both.scope = Scope::Both;
    let aces = [both, ace(true, R, Who::Everyone), inherit];
    let p = to_posix(&aces).unwrap();
    let d = p.default.expect("a default ACL");
    assert_eq!(d.perm(AclTag::User(1001)), Some(5));
    assert_eq!(d.perm(AclTag::UserObj), Some(7));
    assert_eq!(p.access.perm(AclTag::User(1001)), None);
    // And a directory's default ACL comes back inherit-only.
    let out = from_posix(&p.access, Some(&d), true);
    assert!(out
        .iter()
        .any(|a| a.scope == Scope::Inherited && a.who == Who::User(1001)));
    let wire = to_wire(out.last().unwrap(), |_| unreachable!());
    assert_eq!(wire.flag, INHERIT | ACE4_INHERIT_ONLY_ACE);
    assert_eq!(&wire.who[..], b"EVERYONE@");
}

#[test]
fn what_posix_cannot_say_is_refused() {
    assert_eq!(scope(0), Ok(Scope::Object));
    assert_eq!(scope(INHERIT | ACE4_INHERIT_ONLY_ACE), Ok(Scope::Inherited));
    assert_eq!(scope(INHERIT | ACE4_IDENTIFIER_GROUP), Ok(Scope::Both));
    for f in [
        ACE4_FILE_INHERIT_ACE,
        ACE4_DIRECTORY_INHERIT_ACE,
        ACE4_INHERIT_ONLY_ACE,
        INHERIT | ACE4_NO_PROPAGATE_INHERIT_ACE,
        ACE4_SUCCESSFUL_ACCESS_ACE_FLAG,
        ACE4_FAILED_ACCESS_ACE_FLAG,
        0x100,
    ] {
        assert_eq!(scope(f), Err(Refused::Inexpressible), "flag {f:#x}");
    }
    assert_eq!(allows(ACE4_ACCESS_ALLOWED_ACE_TYPE), Ok(true));
    assert_eq!(allows(ACE4_ACCESS_DENIED_ACE_TYPE), Ok(false));
    assert_eq!(allows(ACE4_SYSTEM_AUDIT_ACE_TYPE), Err(Refused::Type));
    assert_eq!(allows(ACE4_SYSTEM_ALARM_ACE_TYPE), Err(Refused::Type));
    assert_eq!(Refused::Type.status(), NfsStat4::Nfs4errAttrnotsupp);
}
