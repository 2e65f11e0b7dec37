//! File attributes (RFC 8881 §5): what GETATTR and READDIR report, what
//! SETATTR, CREATE and OPEN may set, and VERIFY/NVERIFY comparisons.

use std::sync::Arc;

use bytes::Bytes;
use proto::nfs4::*;

pub use super::compound::context::View;
use super::compound::context::{Compound, Fh};
use crate::exports::export::Export;
use crate::instance::Server;

/// FH4_PERSISTENT (RFC 8881 §4.2.3).
const FH4_PERSISTENT: u32 = 0;

/// Every attribute this server reports.
pub const SUPPORTED: &[u32] = &[
    FATTR4_SUPPORTED_ATTRS,
    FATTR4_TYPE,
    FATTR4_FH_EXPIRE_TYPE,
    FATTR4_CHANGE,
    FATTR4_SIZE,
    FATTR4_LINK_SUPPORT,
    FATTR4_SYMLINK_SUPPORT,
    FATTR4_NAMED_ATTR,
    FATTR4_FSID,
    FATTR4_UNIQUE_HANDLES,
    FATTR4_LEASE_TIME,
    FATTR4_RDATTR_ERROR,
    FATTR4_ACLSUPPORT,
    FATTR4_CANSETTIME,
    FATTR4_CASE_INSENSITIVE,
    FATTR4_CASE_PRESERVING,
    FATTR4_CHOWN_RESTRICTED,
    FATTR4_FILEHANDLE,
    FATTR4_FILEID,
    FATTR4_FILES_AVAIL,
    FATTR4_FILES_FREE,
    FATTR4_FILES_TOTAL,
    FATTR4_HOMOGENEOUS,
    FATTR4_MAXFILESIZE,
    FATTR4_MAXLINK,
    FATTR4_MAXNAME,
    FATTR4_MAXREAD,
    FATTR4_MAXWRITE,
    FATTR4_MODE,
    FATTR4_NO_TRUNC,
    FATTR4_NUMLINKS,
    FATTR4_OWNER,
    FATTR4_OWNER_GROUP,
    FATTR4_RAWDEV,
    FATTR4_SPACE_AVAIL,
    FATTR4_SPACE_FREE,
    FATTR4_SPACE_TOTAL,
    FATTR4_SPACE_USED,
    FATTR4_TIME_ACCESS,
    FATTR4_TIME_ACCESS_SET,
    FATTR4_TIME_DELTA,
    FATTR4_TIME_METADATA,
    FATTR4_TIME_MODIFY,
    FATTR4_TIME_MODIFY_SET,
    FATTR4_MOUNTED_ON_FILEID,
    FATTR4_FS_LAYOUT_TYPES,
    FATTR4_LAYOUT_TYPES,
    FATTR4_LAYOUT_BLKSIZE,
    FATTR4_SUPPATTR_EXCLCREAT,
    // A server that answers NFS4ERR_MOVED MUST support it (RFC 8881
    // §11.3); present file systems answer their root and no locations.
    FATTR4_FS_LOCATIONS,
    // NFSv4 ACLs kept as POSIX ACLs (`nfs4::acl`).
    FATTR4_ACL,
    FATTR4_DACL,
];

/// What the root of an absent file system (a referral) answers (RFC 8881
/// §11.4.1): where it is, and enough to tell it apart.
pub const ABSENT: &[u32] = &[
    FATTR4_FSID,
    FATTR4_RDATTR_ERROR,
    FATTR4_FS_LOCATIONS,
    FATTR4_MOUNTED_ON_FILEID,
    FATTR4_FS_STATUS,
    FATTR4_FS_LOCATIONS_INFO,
];

/// Whether `want` asks where a file system is (fs_locations,
/// fs_locations_info or fs_status): a GETATTR of an absent file system
/// is answered only then, and NFS4ERR_MOVED otherwise (§11.4.1); a
/// READDIR entry of one then has rdattr_error NFS4_OK (§11.4.2).
pub fn asks_locations(want: &Bitmap4) -> bool {
    [
        FATTR4_FS_LOCATIONS,
        FATTR4_FS_LOCATIONS_INFO,
        FATTR4_FS_STATUS,
    ]
    .iter()
    .any(|a| want.contains(*a))
}

/// NFSv4.2 adds these when the compound's minor version is 2.
/// `time_deleg_access` and `time_deleg_modify` (RFC 9754 §5) are set only,
/// by a delegation's holder (SETATTR), and asked of it (CB_GETATTR).
pub const SUPPORTED_42: &[u32] = &[
    FATTR4_XATTR_SUPPORT,
    FATTR4_OPEN_ARGUMENTS,
    FATTR4_TIME_DELEG_ACCESS,
    FATTR4_TIME_DELEG_MODIFY,
];

/// What OPEN supports (RFC 9754 §4.1; `ops::open`): every share access
/// and deny, the want flags it honours, every claim and every create
/// mode.
fn open_arguments() -> OpenArguments4 {
    OpenArguments4 {
        share_access: Bitmap4::from_attrs(&[
            OPEN_ARGS_SHARE_ACCESS_READ,
            OPEN_ARGS_SHARE_ACCESS_WRITE,
            OPEN_ARGS_SHARE_ACCESS_BOTH,
        ]),
        share_deny: Bitmap4::from_attrs(&[
            OPEN_ARGS_SHARE_DENY_NONE,
            OPEN_ARGS_SHARE_DENY_READ,
            OPEN_ARGS_SHARE_DENY_WRITE,
            OPEN_ARGS_SHARE_DENY_BOTH,
        ]),
        share_access_want: Bitmap4::from_attrs(&[
            OPEN_ARGS_SHARE_ACCESS_WANT_ANY_DELEG,
            OPEN_ARGS_SHARE_ACCESS_WANT_NO_DELEG,
            OPEN_ARGS_SHARE_ACCESS_WANT_CANCEL,
            OPEN_ARGS_SHARE_ACCESS_WANT_DELEG_TIMESTAMPS,
        ]),
        open_claim: Bitmap4::from_attrs(&[
            OPEN_ARGS_OPEN_CLAIM_NULL,
            OPEN_ARGS_OPEN_CLAIM_PREVIOUS,
            OPEN_ARGS_OPEN_CLAIM_DELEGATE_CUR,
            OPEN_ARGS_OPEN_CLAIM_DELEGATE_PREV,
            OPEN_ARGS_OPEN_CLAIM_FH,
            OPEN_ARGS_OPEN_CLAIM_DELEG_CUR_FH,
            OPEN_ARGS_OPEN_CLAIM_DELEG_PREV_FH,
        ]),
        create_mode: Bitmap4::from_attrs(&[
            OPEN_ARGS_CREATEMODE_UNCHECKED4,
            OPEN_ARGS_CREATE_MODE_GUARDED,
            OPEN_ARGS_CREATEMODE_EXCLUSIVE4,
            OPEN_ARGS_CREATE_MODE_EXCLUSIVE4_1,
        ]),
    }
}

/// Attributes a client may set.
pub const WRITABLE: &[u32] = &[
    FATTR4_SIZE,
    FATTR4_MODE,
    FATTR4_OWNER,
    FATTR4_OWNER_GROUP,
    FATTR4_TIME_ACCESS_SET,
    FATTR4_TIME_MODIFY_SET,
    FATTR4_ACL,
    FATTR4_DACL,
];

/// Attributes that may be set by an EXCLUSIVE4_1 create (RFC 8881 §5.8.1.14):
/// not the times, which hold the verifier.
pub const EXCLCREAT: &[u32] = &[FATTR4_SIZE, FATTR4_MODE, FATTR4_OWNER, FATTR4_OWNER_GROUP];

pub fn supported(minorversion: u32) -> Bitmap4 {
    if minorversion == 0 {
        // NFSv4.0's attributes end at mounted_on_fileid (RFC 7530 §5.8).
        let v40: Vec<u32> = SUPPORTED
            .iter()
            .copied()
            .filter(|a| *a <= FATTR4_MOUNTED_ON_FILEID)
            .collect();
        return Bitmap4::from_attrs(&v40);
    }
    let mut b = Bitmap4::from_attrs(SUPPORTED);
    if minorversion >= 2 {
        for a in SUPPORTED_42 {
            b.insert(*a);
        }
    }
    b
}

/// What a directory listing gives of each entry without a lookup: its type
/// (`d_type`) and file id (`d_ino`).
const FROM_DIRENT: [u32; 4] = [
    FATTR4_TYPE,
    FATTR4_FILEID,
    FATTR4_MOUNTED_ON_FILEID,
    FATTR4_RDATTR_ERROR,
];

/// Whether `want` asks only for what a directory listing gives
/// ([`from_dirent`]).
pub fn dirent_only(want: &Bitmap4) -> bool {
    want.iter().all(|a| FROM_DIRENT.contains(&a))
}

/// A directory entry's attributes from the listing alone, for a `want`
/// that [`dirent_only`] accepts. The mounted-on file id is the entry's
/// own: an export mounted on it is found by handle, so listings of a
/// directory holding one take the general path.
pub fn from_dirent(t: vfs::FileType, fileid: u64, want: &Bitmap4) -> Fattr4 {
    Attrs {
        type_: Some(ftype(t)),
        fileid: Some(fileid),
        mounted_on_fileid: Some(fileid),
        ..Default::default()
    }
    .encode_only(want)
}

/// Whether `want` asks for anything that needs file-system statistics.
pub fn needs_fsstat(want: &Bitmap4) -> bool {
    [
        FATTR4_FILES_AVAIL,
        FATTR4_FILES_FREE,
        FATTR4_FILES_TOTAL,
        FATTR4_SPACE_AVAIL,
        FATTR4_SPACE_FREE,
        FATTR4_SPACE_TOTAL,
        FATTR4_MAXNAME,
    ]
    .iter()
    .any(|a| want.contains(*a))
}

/// The most the `fattr4` of a GETATTR for `want` can take: mask, length
/// and each supported attribute asked for at its largest (the reply size
/// estimate of RFC 8881 §2.10.6.4).
pub fn max_len(want: &Bitmap4) -> usize {
    let vals: usize = want
        .iter()
        .filter(|n| SUPPORTED.contains(n) || SUPPORTED_42.contains(n))
        .map(|n| match n {
            FATTR4_FILEHANDLE => 4 + NFS4_FHSIZE,
            // A user or group name (LOGIN_NAME_MAX).
            FATTR4_OWNER | FATTR4_OWNER_GROUP => 4 + 256,
            FATTR4_SUPPORTED_ATTRS | FATTR4_SUPPATTR_EXCLCREAT => 4 + 3 * 4,
            // The export's path as components; no location.
            FATTR4_FS_LOCATIONS => 4 + 4 + 4096 + 4,
            // Five one-word bitmaps.
            FATTR4_OPEN_ARGUMENTS => 5 * (4 + 4),
            // Up to 32 POSIX entries each way (access and default), two
            // ACEs each, a name apiece.
            FATTR4_ACL | FATTR4_DACL => 4 + 4 + 128 * (16 + 4 + 256),
            _ => 16,
        })
        .sum();
    4 + 3 * 4 + 4 + vals
}

/// Whether building `want` may need the name service (owner names).
fn needs_names(view: View, want: &Bitmap4) -> bool {
    view.names && (want.contains(FATTR4_OWNER) || want.contains(FATTR4_OWNER_GROUP))
}

/// Whether `want` asks for the ACL (a backend call to read it).
fn wants_acl(want: &Bitmap4) -> bool {
    want.contains(FATTR4_ACL) || want.contains(FATTR4_DACL)
}

fn ftype(t: vfs::FileType) -> NfsFtype4 {
    match t {
        vfs::FileType::Regular => NfsFtype4::Nf4Reg,
        vfs::FileType::Directory => NfsFtype4::Nf4Dir,
        vfs::FileType::Symlink => NfsFtype4::Nf4Lnk,
        vfs::FileType::Block => NfsFtype4::Nf4Blk,
        vfs::FileType::Char => NfsFtype4::Nf4Chr,
        vfs::FileType::Socket => NfsFtype4::Nf4Sock,
        vfs::FileType::Fifo => NfsFtype4::Nf4Fifo,
    }
}

fn time(t: vfs::Timespec) -> NfsTime4 {
    NfsTime4 {
        seconds: t.sec,
        nseconds: t.nsec,
    }
}

/// Builds the attributes of one object, restricted to `want`.
pub fn build(
    srv: &Server,
    view: View,
    export: &Export,
    fh: &Bytes,
    a: &vfs::Attr,
    fs: Option<&vfs::FsStat>,
    want: &Bitmap4,
) -> Fattr4 {
    build_with_acl(srv, view, export, fh, a, fs, want, None)
}

/// [`build`] with the object's ACL, read if asked for
/// ([`super::acl::attr::read`]).
#[allow(clippy::too_many_arguments)]
pub fn build_with_acl(
    srv: &Server,
    view: View,
    export: &Export,
    fh: &Bytes,
    a: &vfs::Attr,
    fs: Option<&vfs::FsStat>,
    want: &Bitmap4,
    acl: Option<Vec<Nfsace4>>,
) -> Fattr4 {
    let mounted_on = srv.exports().ns.root_mounted_on(export.id, a.fileid);
    let place = Place {
        fsid: export.fsid,
        mounted_on,
        xattrs: export.vfs.xattrs(),
        acls: export.vfs.acls(),
        acl,
        layout_blksize: export
            .pnfs
            .as_ref()
            .map(|p| p.geometry.stripe_unit.min(u32::MAX as u64) as u32),
    };
    build_full(srv, view, place, fh, a, fs, want)
}

/// The attributes of a pseudo directory (RFC 8881 §7.4): read-only, owned
/// by root, constant.
pub fn pseudo_attr(srv: &Server, node: u16) -> Option<vfs::Attr> {
    let exports = srv.exports();
    let n = exports.ns.node(node)?;
    let subdirs = n.children.len() as u32;
    let t = vfs::Timespec {
        sec: srv.started.as_secs() as i64,
        nsec: 0,
    };
    Some(vfs::Attr {
        ftype: vfs::FileType::Directory,
        mode: 0o555,
        nlink: 2 + subdirs,
        uid: 0,
        gid: 0,
        size: 4096,
        used: 4096,
        rdev: (0, 0),
        fileid: n.fileid,
        atime: t,
        mtime: t,
        ctime: t,
        change: n.change,
    })
}

/// The attributes of pseudo node `node`, restricted to `want`.
pub fn build_pseudo(
    srv: &Server,
    view: View,
    node: u16,
    fh: &Bytes,
    want: &Bitmap4,
) -> Result<Fattr4, NfsStat4> {
    let a = pseudo_attr(srv, node).ok_or(NfsStat4::Nfs4errStale)?;
    let fs = vfs::FsStat {
        max_name: 255,
        ..Default::default()
    };
    let place = Place {
        fsid: crate::exports::namespace::PSEUDO_FSID,
        mounted_on: None,
        xattrs: false,
        acls: false,
        acl: None,
        layout_blksize: None,
    };
    Ok(build_full(srv, view, place, fh, &a, Some(&fs), want))
}

/// Where an object lies: what its attributes take from its file system.
#[derive(Debug, Clone)]
pub struct Place {
    pub fsid: (u64, u64),
    /// mounted_on_fileid, when not the object's own fileid.
    pub mounted_on: Option<u64>,
    /// The file system keeps extended attributes (xattr_support).
    pub xattrs: bool,
    /// The file system keeps POSIX ACLs (aclsupport).
    pub acls: bool,
    /// The object's ACL, when asked for and read.
    pub acl: Option<Vec<Nfsace4>>,
    /// The file system hands out flexible-file layouts (RFC 8435) whose
    /// stripes are this many bytes (`fs_layout_types`, `layout_types`,
    /// `layout_blksize`; RFC 8881 §5.12).
    pub layout_blksize: Option<u32>,
}

/// [`build`] for an object at `place`.
pub fn build_full(
    srv: &Server,
    view: View,
    place: Place,
    fh: &Bytes,
    a: &vfs::Attr,
    fs: Option<&vfs::FsStat>,
    want: &Bitmap4,
) -> Fattr4 {
    let Place {
        fsid,
        mounted_on,
        xattrs,
        acls,
        acl,
        layout_blksize,
    } = place;
    // An NFSv4.0 client is not given NFSv4.1's attributes.
    let v40;
    let want = if view.minor == 0 {
        v40 = want.intersect(&supported(0));
        &v40
    } else {
        want
    };
    let w = |n| want.contains(n);
    let mut r = Attrs::default();
    if w(FATTR4_SUPPORTED_ATTRS) {
        r.supported_attrs = Some(supported(view.minor));
    }
    r.type_ = Some(ftype(a.ftype));
    r.fh_expire_type = Some(FH4_PERSISTENT);
    r.change = Some(a.change);
    r.size = Some(a.size);
    r.link_support = Some(true);
    r.symlink_support = Some(true);
    r.named_attr = Some(false);
    r.fsid = Some(FsId4 {
        major: fsid.0,
        minor: fsid.1,
    });
    r.unique_handles = Some(true);
    let layouts: Vec<LayoutType4> = layout_blksize
        .map(|_| LAYOUT4_FLEX_FILES)
        .into_iter()
        .collect();
    if w(FATTR4_FS_LAYOUT_TYPES) {
        r.fs_layout_types = Some(layouts.clone());
    }
    if w(FATTR4_LAYOUT_TYPES) && a.ftype == vfs::FileType::Regular {
        r.layout_types = Some(layouts);
    }
    if let (true, Some(b)) = (w(FATTR4_LAYOUT_BLKSIZE), layout_blksize) {
        r.layout_blksize = Some(b);
    }
    r.lease_time = Some(srv.cfg.lease.as_secs() as u32);
    r.rdattr_error = Some(NfsStat4::Nfs4Ok);
    r.aclsupport = Some(if acls {
        ACL4_SUPPORT_ALLOW_ACL | ACL4_SUPPORT_DENY_ACL
    } else {
        0
    });
    if let Some(aces) = acl {
        if w(FATTR4_DACL) {
            r.dacl = Some(Nfsacl41 {
                flag: 0,
                aces: aces.clone(),
            });
        }
        if w(FATTR4_ACL) {
            r.acl = Some(aces);
        }
    }
    r.cansettime = Some(true);
    r.case_insensitive = Some(false);
    r.case_preserving = Some(true);
    r.chown_restricted = Some(true);
    if w(FATTR4_FILEHANDLE) {
        r.filehandle = Some(NfsFh4(fh.clone()));
    }
    r.fileid = Some(a.fileid);
    if let Some(fs) = fs {
        r.files_avail = Some(fs.avail_files);
        r.files_free = Some(fs.free_files);
        r.files_total = Some(fs.total_files);
        r.space_avail = Some(fs.avail_bytes);
        r.space_free = Some(fs.free_bytes);
        r.space_total = Some(fs.total_bytes);
        r.maxname = Some(fs.max_name);
    } else {
        r.maxname = Some(255);
    }
    r.homogeneous = Some(true);
    r.maxfilesize = Some(vfs::MAX_FILE_SIZE);
    r.maxlink = Some(65000);
    r.maxread = Some(srv.cfg.max_io as u64);
    r.maxwrite = Some(srv.cfg.max_io as u64);
    r.mode = Some(a.mode & 0o7777);
    r.no_trunc = Some(true);
    r.numlinks = Some(a.nlink);
    if w(FATTR4_OWNER) {
        r.owner = Some(Bytes::from(if view.names {
            srv.ids.owner_name(a.uid)
        } else {
            a.uid.to_string()
        }));
    }
    if w(FATTR4_OWNER_GROUP) {
        r.owner_group = Some(Bytes::from(if view.names {
            srv.ids.group_owner_name(a.gid)
        } else {
            a.gid.to_string()
        }));
    }
    r.rawdev = Some(SpecData4 {
        specdata1: a.rdev.0,
        specdata2: a.rdev.1,
    });
    r.space_used = Some(a.used);
    r.time_access = Some(time(a.atime));
    r.time_delta = Some(NfsTime4 {
        seconds: 0,
        nseconds: 1,
    });
    r.time_metadata = Some(time(a.ctime));
    r.time_modify = Some(time(a.mtime));
    r.mounted_on_fileid = Some(mounted_on.unwrap_or(a.fileid));
    r.suppattr_exclcreat = Some(Bitmap4::from_attrs(EXCLCREAT));
    if w(FATTR4_FS_LOCATIONS) {
        // Present here: the file system's root in the namespace, and no
        // other location (RFC 8881 §11.16).
        let exports = srv.exports();
        let root = exports
            .iter()
            .find(|e| e.fsid == fsid)
            .map_or(String::new(), |e| e.path.clone());
        r.fs_locations = Some(FsLocations4 {
            fs_root: crate::exports::referral::pathname(&root),
            locations: Vec::new(),
        });
    }
    if view.minor >= 2 {
        r.xattr_support = Some(xattrs);
        if w(FATTR4_OPEN_ARGUMENTS) {
            r.open_arguments = Some(open_arguments());
        }
    }
    r.encode_only(want)
}

/// GETATTR's work for the object `fh` (RFC 8881 §18.7). Built here when
/// the backend can answer without blocking ([`vfs::Vfs::getattr_nowait`])
/// and neither file-system statistics nor owner names are asked for;
/// otherwise on the blocking pool, like the backend call (owner names may
/// need the name service).
pub async fn get(cx: &Compound, fh: &Fh, want: &Bitmap4) -> Result<Fattr4, NfsStat4> {
    get_with(cx, fh, want, None).await
}

/// [`get`], from the object's attributes `known` when given (those a
/// write delegation's holder reported, `nfs4::deleg::holder_attrs`).
pub async fn get_with(
    cx: &Compound,
    fh: &Fh,
    want: &Bitmap4,
    known: Option<vfs::Attr>,
) -> Result<Fattr4, NfsStat4> {
    if let Some(node) = fh.pseudo {
        return pseudo(cx, node, &fh.wire, want).await;
    }
    if let Some(r) = fh.absent {
        return absent(cx, r, want);
    }
    if let Some(crate::exports::away::Away::Elsewhere(to)) = cx.srv.away.get(fh.export) {
        return moved(cx, fh, &to, want).await;
    }
    let with_fs = needs_fsstat(want);
    let view = cx.view();
    if !with_fs && !needs_names(view, want) && (known.is_none() || !wants_acl(want)) {
        let a = match &known {
            Some(a) => Some(Ok(a.clone())),
            None => cx.vfs_nowait(fh.export, |v, _| v.getattr_nowait(&fh.handle)),
        };
        if let Some(a) = a {
            let a = a?;
            let export = cx.export(fh.export)?;
            // The ACL too, where the backend still knows it unchanged.
            let acl = match wants_acl(want) && export.vfs.acls() {
                true => {
                    let fs = export.vfs.as_ref();
                    super::acl::attr::known(&cx.srv, view.names, fs, &fh.handle, &a).map(Some)
                }
                false => Some(None),
            };
            if let Some(acl) = acl {
                return Ok(build_with_acl(
                    &cx.srv, view, export, &fh.wire, &a, None, want, acl,
                ));
            }
        }
    }
    let handle = fh.handle.clone();
    let (srv, id) = (cx.srv.clone(), fh.export);
    let (wire, want) = (fh.wire.clone(), want.clone());
    cx.vfs(fh.export, move |v, c| {
        let a = match known {
            Some(a) => a,
            None => v.getattr(&handle)?,
        };
        let fs = if with_fs {
            Some(v.fsstat(&handle)?)
        } else {
            None
        };
        // A back end without ACLs has none to show (aclsupport 0).
        let acl = if wants_acl(&want) && v.acls() {
            Some(super::acl::attr::read(&srv, view.names, v, c, &handle, &a)?)
        } else {
            None
        };
        let export = srv.export(id).ok_or(vfs::Errno(libc::ESTALE))?;
        Ok(build_with_acl(
            &srv,
            view,
            &export,
            &wire,
            &a,
            fs.as_ref(),
            &want,
            acl,
        ))
    })
    .await
}

/// The attributes of referral `r`'s root, an absent file system (RFC
/// 8881 §11.4.1): NFS4ERR_MOVED unless `want` asks where it went
/// (fs_locations, fs_locations_info or fs_status); then those of
/// [`ABSENT`] it asks for, rdattr_error NFS4_OK (§11.4.2).
pub fn absent(cx: &Compound, r: u16, want: &Bitmap4) -> Result<Fattr4, NfsStat4> {
    if !asks_locations(want) {
        return Err(NfsStat4::Nfs4errMoved);
    }
    let referral = cx.exports.ns.referral(r).ok_or(NfsStat4::Nfs4errStale)?;
    Ok(absent_attrs(referral, r, NfsStat4::Nfs4Ok).encode_only(want))
}

/// The attributes of an object of an export that moved to `to` (RFC
/// 8881 §11.14; absent here, §11.4.1): NFS4ERR_MOVED unless `want` asks
/// where it went; then those of [`ABSENT`] it asks for, the export's own
/// fsid (the same file system, elsewhere). Either way the client has
/// been told its lease moved (§18.46.3).
async fn moved(
    cx: &Compound,
    fh: &Fh,
    to: &crate::exports::referral::Location,
    want: &Bitmap4,
) -> Result<Fattr4, NfsStat4> {
    if let Some(s) = &cx.session {
        cx.srv.state().moved_seen(s.client, fh.export);
    }
    if !asks_locations(want) {
        return Err(NfsStat4::Nfs4errMoved);
    }
    let export = cx.export(fh.export)?;
    let at = crate::exports::referral::ReferralConfig {
        path: export.path.clone(),
        locations: vec![to.clone()],
    };
    let mounted_on = if want.contains(FATTR4_MOUNTED_ON_FILEID) {
        let h = fh.handle.clone();
        cx.vfs(fh.export, move |v, _| v.getattr(&h))
            .await
            .ok()
            .map(|a| {
                cx.exports
                    .ns
                    .root_mounted_on(fh.export, a.fileid)
                    .unwrap_or(a.fileid)
            })
    } else {
        None
    };
    let (major, minor) = export.fsid;
    Ok(Attrs {
        fsid: Some(FsId4 { major, minor }),
        rdattr_error: Some(NfsStat4::Nfs4Ok),
        fs_locations: Some(at.fs_locations()),
        mounted_on_fileid: mounted_on,
        fs_status: Some(Fs4Status {
            absent: true,
            type_: Fs4StatusType::Status4Writable,
            source: Bytes::new(),
            current: Bytes::new(),
            age: 0,
            version: NfsTime4::default(),
        }),
        fs_locations_info: Some(at.fs_locations_info()),
        ..Default::default()
    }
    .encode_only(want))
}

/// Every attribute of [`ABSENT`] for referral `r`, rdattr_error
/// `error` (NFS4ERR_MOVED in a READDIR that does not ask for the
/// locations, §11.4.2).
pub fn absent_attrs(
    referral: &crate::exports::referral::ReferralConfig,
    r: u16,
    error: NfsStat4,
) -> Attrs {
    let (major, minor) = crate::exports::referral::fsid(r);
    Attrs {
        fsid: Some(FsId4 { major, minor }),
        rdattr_error: Some(error),
        fs_locations: Some(referral.fs_locations()),
        mounted_on_fileid: Some(crate::exports::referral::mounted_on_fileid(r)),
        fs_status: Some(referral.fs_status()),
        fs_locations_info: Some(referral.fs_locations_info()),
        ..Default::default()
    }
}

/// [`build_pseudo`] for this compound, on the blocking pool when owner
/// names are asked for.
pub async fn pseudo(
    cx: &Compound,
    node: u16,
    wire: &Bytes,
    want: &Bitmap4,
) -> Result<Fattr4, NfsStat4> {
    let view = cx.view();
    if !needs_names(view, want) {
        return build_pseudo(&cx.srv, view, node, wire, want);
    }
    let srv = cx.srv.clone();
    let (wire, want) = (wire.clone(), want.clone());
    crate::handoff::off_thread(move || build_pseudo(&srv, view, node, &wire, &want))
        .await
        .unwrap_or(Err(NfsStat4::Nfs4errServerfault))
}

/// Decodes a client's attributes to set (SETATTR, CREATE, OPEN), checking
/// each is writable. Returns what to set and the mask of what will be set.
pub async fn to_setattr(cx: &Compound, f: &Fattr4) -> Result<(vfs::SetAttr, Bitmap4), NfsStat4> {
    let srv = &cx.srv;
    for n in f.attrmask.iter() {
        // A delegation's holder sets its delegated times (RFC 9754 §5;
        // `ops::setattr` checks the delegation).
        let deleg_time = cx.minorversion >= 2
            && matches!(n, FATTR4_TIME_DELEG_ACCESS | FATTR4_TIME_DELEG_MODIFY);
        if !supported(cx.minorversion).contains(n) && !deleg_time {
            return Err(NfsStat4::Nfs4errAttrnotsupp);
        }
        if !WRITABLE.contains(&n) && !deleg_time {
            return Err(NfsStat4::Nfs4errInval);
        }
    }
    let a = Attrs::decode(f).map_err(|e| match e {
        AttrDecodeError::Unsupported(_) => NfsStat4::Nfs4errAttrnotsupp,
        AttrDecodeError::Xdr(_) => NfsStat4::Nfs4errBadxdr,
    })?;
    let mut s = vfs::SetAttr::default();
    if let Some(m) = a.mode {
        if m & !0o7777 != 0 {
            return Err(NfsStat4::Nfs4errInval);
        }
        s.mode = Some(m);
    }
    // NFSv4.0 takes an empty owner for no owner at all: NFS4ERR_INVAL, as
    // its servers answer (pynfs SATT16, SATT17).
    let empty = |b: &Option<Bytes>| b.as_ref().is_some_and(|n| n.is_empty());
    if cx.minorversion == 0 && (empty(&a.owner) || empty(&a.owner_group)) {
        return Err(NfsStat4::Nfs4errInval);
    }
    if let Some(o) = &a.owner {
        s.uid = Some(owner_id(srv, o, false).await?);
    }
    if let Some(g) = &a.owner_group {
        s.gid = Some(owner_id(srv, g, true).await?);
    }
    // A client that sends names gets names back (RFC 8881 §5.9): its
    // session remembers that it did.
    let named = |b: &Option<Bytes>| b.as_ref().is_some_and(|n| crate::ids::is_name(n));
    if named(&a.owner) || named(&a.owner_group) {
        if let Some(sess) = &cx.session {
            sess.owner_names
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
    let aces = match (&a.acl, &a.dacl) {
        (Some(_), Some(_)) => return Err(NfsStat4::Nfs4errInval),
        (Some(aces), None) => Some(aces.clone()),
        (None, Some(d)) => Some(d.aces.clone()),
        (None, None) => None,
    };
    if let Some(aces) = aces {
        let acls = cx
            .cfh()
            .ok()
            .and_then(|f| cx.export(f.export).ok())
            .is_some_and(|e| e.vfs.acls());
        if !acls {
            return Err(NfsStat4::Nfs4errAttrnotsupp);
        }
        s.acl = Some(acl_to_set(srv, &aces).await?);
    }
    s.size = a.size;
    let set_time = |t: SetTime4| -> Result<vfs::SetTime, NfsStat4> {
        match t {
            SetTime4::SetToServerTime4 => Ok(vfs::SetTime::ServerNow),
            SetTime4::SetToClientTime4(t) if t.nseconds >= 1_000_000_000 => {
                Err(NfsStat4::Nfs4errInval)
            }
            SetTime4::SetToClientTime4(t) => Ok(vfs::SetTime::Client(vfs::Timespec {
                sec: t.seconds,
                nsec: t.nseconds,
            })),
        }
    };
    // A time set both ways is one too many.
    if (a.time_access_set.is_some() && a.time_deleg_access.is_some())
        || (a.time_modify_set.is_some() && a.time_deleg_modify.is_some())
    {
        return Err(NfsStat4::Nfs4errInval);
    }
    let client = |t: NfsTime4| set_time(SetTime4::SetToClientTime4(t));
    s.atime = match (a.time_access_set, a.time_deleg_access) {
        (Some(t), _) => Some(set_time(t)?),
        (None, t) => t.map(client).transpose()?,
    };
    s.mtime = match (a.time_modify_set, a.time_deleg_modify) {
        (Some(t), _) => Some(set_time(t)?),
        (None, t) => t.map(client).transpose()?,
    };
    Ok((s, a.mask()))
}

/// The POSIX ACLs an NFSv4 ACL from a client comes to (`nfs4::acl`):
/// principals resolved as owners are, what POSIX cannot express refused.
async fn acl_to_set(srv: &Arc<Server>, aces: &[Nfsace4]) -> Result<vfs::acl::AclSet, NfsStat4> {
    use super::acl::{allows, scope, to_posix, Ace, Who};
    if aces.len() > vfs::acl::MAX_ENTRIES {
        return Err(NfsStat4::Nfs4errInval);
    }
    let mut out = Vec::with_capacity(aces.len());
    for x in aces {
        let allow = allows(x.type_).map_err(|r| r.status())?;
        let scope = scope(x.flag).map_err(|r| r.status())?;
        let group = x.flag & ACE4_IDENTIFIER_GROUP != 0;
        let who = match &x.who[..] {
            b"OWNER@" => Who::Owner,
            b"GROUP@" => Who::Group,
            b"EVERYONE@" => Who::Everyone,
            // Other special principals (INTERACTIVE@, NETWORK@, ...) have
            // no POSIX form.
            w if w.ends_with(b"@") => return Err(NfsStat4::Nfs4errInval),
            _ if group => Who::GroupId(owner_id(srv, &x.who, true).await?),
            _ => Who::User(owner_id(srv, &x.who, false).await?),
        };
        out.push(Ace {
            allow,
            scope,
            mask: x.access_mask,
            who,
        });
    }
    to_posix(&out).map_err(|r| r.status())
}

/// The id an owner (or, `group`, owner_group) string names (RFC 8881
/// §5.9), NFS4ERR_BADOWNER if none. A name not in the cache is looked up
/// on the blocking pool.
async fn owner_id(srv: &Arc<Server>, name: &Bytes, group: bool) -> Result<u32, NfsStat4> {
    let known = if group {
        srv.ids.try_gid(name)
    } else {
        srv.ids.try_uid(name)
    };
    let id = match known {
        Some(id) => id,
        None => {
            let (srv, name) = (srv.clone(), name.clone());
            crate::handoff::off_thread(move || {
                if group {
                    srv.ids.gid(&name)
                } else {
                    srv.ids.uid(&name)
                }
            })
            .await
            .map_err(|_| NfsStat4::Nfs4errServerfault)?
        }
    };
    id.ok_or(NfsStat4::Nfs4errBadowner)
}

/// VERIFY/NVERIFY (RFC 8881 §18.31, §18.15): whether the object's
/// attributes equal the given ones, compared as encoded.
pub async fn same(cx: &Compound, fh: &Fh, given: &Fattr4) -> Result<bool, NfsStat4> {
    // An absent file system: only its location attributes compare
    // (RFC 8881 §11.4.1).
    if fh.absent.is_some() && given.attrmask.iter().any(|n| !ABSENT.contains(&n)) {
        return Err(NfsStat4::Nfs4errMoved);
    }
    let sup = supported(cx.minorversion);
    for n in given.attrmask.iter() {
        if !sup.contains(n) {
            return Err(NfsStat4::Nfs4errAttrnotsupp);
        }
        if [
            FATTR4_RDATTR_ERROR,
            FATTR4_TIME_ACCESS_SET,
            FATTR4_TIME_MODIFY_SET,
        ]
        .contains(&n)
        {
            return Err(NfsStat4::Nfs4errInval);
        }
    }
    // The client's values must at least decode.
    Attrs::decode(given).map_err(|_| NfsStat4::Nfs4errBadxdr)?;
    let mine = get(cx, fh, &given.attrmask).await?;
    Ok(mine.attrmask == given.attrmask && mine.attr_vals == given.attr_vals)
}
