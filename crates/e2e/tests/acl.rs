//! NFSv4 ACLs (RFC 8881 §6) kept as the export's POSIX ACLs: set and read
//! through `acl` and `dacl`, seen on disk in `system.posix_acl_access`,
//! enforced by the kernel for other users, kept consistent with the mode
//! both ways, inherited through a directory's default ACL, and refused
//! where POSIX cannot say it.

mod common;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use client::{Client, ClientOptions};
use common::*;
use proto::nfs4::*;
use vfs::acl::{AclTag, PosixAcl};

const R: u32 = ACE4_READ_DATA;
const W: u32 = ACE4_WRITE_DATA | ACE4_APPEND_DATA;
const X: u32 = ACE4_EXECUTE;

fn ace(allow: bool, flag: u32, mask: u32, who: &str) -> Nfsace4 {
    Nfsace4 {
        type_: if allow {
            ACE4_ACCESS_ALLOWED_ACE_TYPE
        } else {
            ACE4_ACCESS_DENIED_ACE_TYPE
        },
        flag,
        access_mask: mask,
        who: b(who),
    }
}

fn mode(m: u32) -> Attrs {
    Attrs {
        mode: Some(m),
        ..Default::default()
    }
}

/// The object's ACL, by GETATTR.
async fn acl_of(c: &Client, fh: &NfsFh4) -> Vec<Nfsace4> {
    let a = c.getattr(fh, &[FATTR4_ACL]).await.expect("getattr acl");
    a.acl.expect("an acl")
}

/// SETATTR with the anonymous stateid.
async fn set(c: &Client, fh: &NfsFh4, a: Attrs) -> client::Result<Bitmap4> {
    c.setattr(fh, StateId4::default(), &a).await
}

fn with_acl(aces: Vec<Nfsace4>) -> Attrs {
    Attrs {
        acl: Some(aces),
        ..Default::default()
    }
}

/// The POSIX ACL on disk (`default`: the default ACL), None if none.
fn on_disk(p: &Path, default: bool) -> Option<PosixAcl> {
    let path = CString::new(p.as_os_str().as_bytes()).unwrap();
    let name = if default {
        c"system.posix_acl_default"
    } else {
        c"system.posix_acl_access"
    };
    let mut buf = vec![0u8; 4096];
    // SAFETY: NUL-terminated path and name; a buffer of its length.
    let n = unsafe {
        libc::getxattr(
            path.as_ptr(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n < 0 {
        return None;
    }
    PosixAcl::from_xattr(&buf[..n as usize])
}

fn mode_on_disk(p: &Path) -> u32 {
    std::os::unix::fs::MetadataExt::mode(&std::fs::metadata(p).unwrap()) & 0o7777
}

async fn as_user(s: &TestServer, uid: u32) -> Client {
    let mut o: ClientOptions = options();
    o.auth = rpc::Auth::sys(uid, uid, Vec::new(), "acl-test");
    Client::connect(s.addr, o).await.expect("connect")
}

/// ACCESS's verdict for read and modify.
async fn may(c: &Client, fh: &NfsFh4) -> (bool, bool) {
    let r = c
        .access(fh, ACCESS4_READ | ACCESS4_MODIFY)
        .await
        .expect("ACCESS");
    (r.access & ACCESS4_READ != 0, r.access & ACCESS4_MODIFY != 0)
}

fn has(aces: &[Nfsace4], allow: bool, who: &str, mask: u32) -> bool {
    aces.iter().any(|a| {
        a.who == b(who)
            && (a.type_ == ACE4_ACCESS_ALLOWED_ACE_TYPE) == allow
            && a.access_mask & (R | W | X) == mask
    })
}

#[tokio::test]
async fn acls_map_to_posix_acls_and_back() {
    within(async {
        let s = TestServer::start().await;
        std::fs::set_permissions(
            s.export.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let c = Client::connect(s.addr, options()).await.expect("connect");
        let root = c.root_fh().await.expect("root");
        let sup = c
            .getattr(&root, &[FATTR4_ACLSUPPORT])
            .await
            .expect("getattr");
        assert_eq!(
            sup.aclsupport,
            Some(ACL4_SUPPORT_ALLOW_ACL | ACL4_SUPPORT_DENY_ACL)
        );
        let f = create_file(&c, &root, "f").await;
        c.close(&f.fh, f.stateid).await.expect("close");
        let path = s.export.path().join("f");
        set(&c, &f.fh, mode(0o640)).await.expect("chmod");

        // A file with only a mode: its ACL says the mode.
        let a = c.getattr(&f.fh, &[FATTR4_ACL]).await.expect("getattr acl");
        let aces = a.acl.expect("an acl");
        assert!(has(&aces, true, "OWNER@", R | W), "{aces:?}");
        assert!(has(&aces, true, "GROUP@", R), "{aces:?}");
        assert!(has(&aces, true, "EVERYONE@", 0), "{aces:?}");
        assert_eq!(on_disk(&path, false), None);

        // alice (4242) may read and write; the group reads; others nothing.
        set(
            &c,
            &f.fh,
            with_acl(vec![
                ace(true, 0, R | W, "OWNER@"),
                ace(true, 0, R | W, "4242"),
                ace(true, ACE4_IDENTIFIER_GROUP, R, "GROUP@"),
                ace(true, 0, 0, "EVERYONE@"),
            ]),
        )
        .await
        .expect("set acl");
        let disk = on_disk(&path, false).expect("a POSIX ACL on disk");
        assert_eq!(disk.perm(AclTag::User(4242)), Some(6));
        assert_eq!(disk.perm(AclTag::Mask), Some(6));
        assert_eq!(disk.perm(AclTag::Other), Some(0));
        // The mode follows: the group bits are the mask.
        assert_eq!(mode_on_disk(&path), 0o660);
        let a = c
            .getattr(&f.fh, &[FATTR4_ACL, FATTR4_MODE])
            .await
            .expect("getattr");
        assert_eq!(a.mode, Some(0o660));
        let aces = a.acl.expect("acl");
        assert!(has(&aces, true, "4242", R | W), "{aces:?}");
        // The kernel enforces it for other users.
        let alice = as_user(&s, 4242).await;
        let bob = as_user(&s, 4343).await;
        assert_eq!(may(&alice, &f.fh).await, (true, true));
        assert_eq!(may(&bob, &f.fh).await, (false, false));

        // chmod 0600 narrows the mask: alice loses what the mask took.
        set(&c, &f.fh, mode(0o600)).await.expect("chmod");
        assert_eq!(may(&alice, &f.fh).await, (false, false));
        let aces = acl_of(&c, &f.fh).await;
        assert!(has(&aces, true, "4242", 0), "{aces:?}");
        assert!(!has(&aces, true, "4242", R | W), "{aces:?}");

        // A DENY that comes first: bob may not write though everyone may.
        c.setattr(
            &f.fh,
            StateId4::default(),
            &Attrs {
                dacl: Some(Nfsacl41 {
                    flag: 0,
                    aces: vec![
                        ace(true, 0, R | W, "OWNER@"),
                        ace(false, 0, W, "4343"),
                        ace(true, 0, R | W, "EVERYONE@"),
                    ],
                }),
                ..Default::default()
            },
        )
        .await
        .expect("set dacl");
        assert_eq!(may(&bob, &f.fh).await, (true, false));
        assert_eq!(may(&alice, &f.fh).await, (true, true));
        let d = c
            .getattr(&f.fh, &[FATTR4_DACL])
            .await
            .expect("getattr dacl");
        let aces = d.dacl.expect("dacl").aces;
        assert!(has(&aces, false, "4343", W), "{aces:?}");
    })
    .await
}

#[tokio::test]
async fn a_default_acl_is_inherited() {
    within(async {
        let s = TestServer::start().await;
        let c = Client::connect(s.addr, options()).await.expect("connect");
        let root = c.root_fh().await.expect("root");
        let d = c.mkdir(&root, "d", 0o755).await.expect("mkdir");
        let inherit = ACE4_FILE_INHERIT_ACE | ACE4_DIRECTORY_INHERIT_ACE;
        set(
            &c,
            &d,
            with_acl(vec![
                // Both on the directory and inherited.
                ace(true, inherit, R | W | X, "OWNER@"),
                ace(true, inherit | ACE4_IDENTIFIER_GROUP, R | X, "GROUP@"),
                ace(true, inherit, R | X, "EVERYONE@"),
                // Inherited only.
                ace(true, inherit | ACE4_INHERIT_ONLY_ACE, R | W, "4242"),
            ]),
        )
        .await
        .expect("set a directory's acl");
        let dpath = s.export.path().join("d");
        let default = on_disk(&dpath, true).expect("a default ACL");
        // rw from its own ACE, and execute from EVERYONE@'s, which
        // nothing denies it (RFC 8881 §6.2.1: the first ACE naming a bit
        // decides).
        assert_eq!(default.perm(AclTag::User(4242)), Some(7));
        assert_eq!(on_disk(&dpath, false), None, "the access ACL is the mode");
        let aces = acl_of(&c, &d).await;
        assert!(aces.iter().any(|a| a.who == b("4242")
            && a.flag & ACE4_INHERIT_ONLY_ACE != 0
            && a.access_mask & (R | W) == R | W));
        // A file made in it carries alice's entry.
        let f = create_file(&c, &d, "inside").await;
        let fpath = dpath.join("inside");
        let acl = on_disk(&fpath, false).expect("an inherited ACL");
        assert!(acl.perm(AclTag::User(4242)).is_some(), "{acl:?}");
        let aces = acl_of(&c, &f.fh).await;
        assert!(aces.iter().any(|a| a.who == b("4242")), "{aces:?}");
    })
    .await
}

/// An ACL among OPEN's create attributes is set on the new file, after
/// its mode.
#[tokio::test]
async fn an_acl_given_at_create_is_set() {
    within(async {
        let s = TestServer::start().await;
        let c = Client::connect(s.addr, options()).await.expect("connect");
        let root = c.root_fh().await.expect("root");
        let mut o = client::OpenOpts::create(0o600);
        o.attrs = Some(with_acl(vec![
            ace(true, 0, R | W, "OWNER@"),
            ace(true, 0, R, "4242"),
            ace(true, ACE4_IDENTIFIER_GROUP, 0, "GROUP@"),
            ace(true, 0, 0, "EVERYONE@"),
        ]));
        let f = c.open(&root, "made", o).await.expect("create with an acl");
        let disk = on_disk(&s.export.path().join("made"), false).expect("an ACL on disk");
        assert_eq!(disk.perm(AclTag::User(4242)), Some(4));
        assert_eq!(mode_on_disk(&s.export.path().join("made")), 0o640);
        assert!(has(&acl_of(&c, &f.fh).await, true, "4242", R));
    })
    .await
}

#[tokio::test]
async fn what_posix_cannot_say_is_refused() {
    within(async {
        let s = TestServer::start().await;
        let c = Client::connect(s.addr, options()).await.expect("connect");
        let root = c.root_fh().await.expect("root");
        let f = create_file(&c, &root, "f").await;
        let set = |aces: Vec<Nfsace4>| {
            let (c, fh) = (&c, f.fh.clone());
            async move { c.setattr(&fh, StateId4::default(), &with_acl(aces)).await }
        };
        let audit = Nfsace4 {
            type_: ACE4_SYSTEM_AUDIT_ACE_TYPE,
            ..ace(true, ACE4_SUCCESSFUL_ACCESS_ACE_FLAG, R, "EVERYONE@")
        };
        assert_eq!(status(set(vec![audit]).await), NfsStat4::Nfs4errAttrnotsupp);
        for (flag, who) in [
            (ACE4_FILE_INHERIT_ACE, "OWNER@"),
            (ACE4_INHERIT_ONLY_ACE, "OWNER@"),
            (0, "INTERACTIVE@"),
            // Inheritance on a file.
            (ACE4_FILE_INHERIT_ACE | ACE4_DIRECTORY_INHERIT_ACE, "OWNER@"),
        ] {
            assert_eq!(
                status(set(vec![ace(true, flag, R, who)]).await),
                NfsStat4::Nfs4errInval,
                "flag {flag:#x} who {who}"
            );
        }
        assert_eq!(
            status(set(vec![ace(true, 0, R, "no-such-user-anywhere")]).await),
            NfsStat4::Nfs4errBadowner
        );
        // Both acl and dacl at once.
        let both = Attrs {
            acl: Some(vec![ace(true, 0, R, "OWNER@")]),
            dacl: Some(Nfsacl41::default()),
            ..Default::default()
        };
        assert_eq!(
            status(c.setattr(&f.fh, StateId4::default(), &both).await),
            NfsStat4::Nfs4errInval
        );
        // Nothing was set.
        assert_eq!(on_disk(&s.export.path().join("f"), false), None);
    })
    .await
}
