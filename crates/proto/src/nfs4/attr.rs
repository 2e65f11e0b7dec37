//! File and file system attributes (RFC 8881 §5, §6; RFC 7862 §12.2).
//!
//! On the wire attributes travel as a [`Fattr4`]: a [`Bitmap4`] of attribute
//! numbers plus the XDR encodings of their values, concatenated in
//! ascending attribute number order (RFC 8881 §3.3.7). [`Attrs`] is the typed
//! form of the attributes this server understands.

use bytes::Bytes;
use xdr::{Decoder, Encoder, Pack, Unpack};

use super::*;

// ---------------------------------------------------------------------------
// Attribute numbers (RFC 8881 §5.6, §5.7 and the table in §5.8; RFC 7862
// §12.2; RFC 8275; RFC 8276).
// ---------------------------------------------------------------------------

/// REQUIRED attributes (RFC 8881 §5.6).
pub const FATTR4_SUPPORTED_ATTRS: u32 = 0;
pub const FATTR4_TYPE: u32 = 1;
pub const FATTR4_FH_EXPIRE_TYPE: u32 = 2;
pub const FATTR4_CHANGE: u32 = 3;
pub const FATTR4_SIZE: u32 = 4;
pub const FATTR4_LINK_SUPPORT: u32 = 5;
pub const FATTR4_SYMLINK_SUPPORT: u32 = 6;
pub const FATTR4_NAMED_ATTR: u32 = 7;
pub const FATTR4_FSID: u32 = 8;
pub const FATTR4_UNIQUE_HANDLES: u32 = 9;
pub const FATTR4_LEASE_TIME: u32 = 10;
pub const FATTR4_RDATTR_ERROR: u32 = 11;
pub const FATTR4_FILEHANDLE: u32 = 19;
/// REQUIRED in NFSv4.1 (RFC 8881 §5.6).
pub const FATTR4_SUPPATTR_EXCLCREAT: u32 = 75;

/// RECOMMENDED attributes (RFC 8881 §5.7).
pub const FATTR4_ACL: u32 = 12;
pub const FATTR4_ACLSUPPORT: u32 = 13;
pub const FATTR4_ARCHIVE: u32 = 14;
pub const FATTR4_CANSETTIME: u32 = 15;
pub const FATTR4_CASE_INSENSITIVE: u32 = 16;
pub const FATTR4_CASE_PRESERVING: u32 = 17;
pub const FATTR4_CHOWN_RESTRICTED: u32 = 18;
pub const FATTR4_FILEID: u32 = 20;
pub const FATTR4_FILES_AVAIL: u32 = 21;
pub const FATTR4_FILES_FREE: u32 = 22;
pub const FATTR4_FILES_TOTAL: u32 = 23;
pub const FATTR4_FS_LOCATIONS: u32 = 24;
pub const FATTR4_HIDDEN: u32 = 25;
pub const FATTR4_HOMOGENEOUS: u32 = 26;
pub const FATTR4_MAXFILESIZE: u32 = 27;
pub const FATTR4_MAXLINK: u32 = 28;
pub const FATTR4_MAXNAME: u32 = 29;
pub const FATTR4_MAXREAD: u32 = 30;
pub const FATTR4_MAXWRITE: u32 = 31;
pub const FATTR4_MIMETYPE: u32 = 32;
pub const FATTR4_MODE: u32 = 33;
pub const FATTR4_NO_TRUNC: u32 = 34;
pub const FATTR4_NUMLINKS: u32 = 35;
pub const FATTR4_OWNER: u32 = 36;
pub const FATTR4_OWNER_GROUP: u32 = 37;
pub const FATTR4_QUOTA_AVAIL_HARD: u32 = 38;
pub const FATTR4_QUOTA_AVAIL_SOFT: u32 = 39;
pub const FATTR4_QUOTA_USED: u32 = 40;
pub const FATTR4_RAWDEV: u32 = 41;
pub const FATTR4_SPACE_AVAIL: u32 = 42;
pub const FATTR4_SPACE_FREE: u32 = 43;
pub const FATTR4_SPACE_TOTAL: u32 = 44;
pub const FATTR4_SPACE_USED: u32 = 45;
pub const FATTR4_SYSTEM: u32 = 46;
pub const FATTR4_TIME_ACCESS: u32 = 47;
pub const FATTR4_TIME_ACCESS_SET: u32 = 48;
pub const FATTR4_TIME_BACKUP: u32 = 49;
pub const FATTR4_TIME_CREATE: u32 = 50;
pub const FATTR4_TIME_DELTA: u32 = 51;
pub const FATTR4_TIME_METADATA: u32 = 52;
pub const FATTR4_TIME_MODIFY: u32 = 53;
pub const FATTR4_TIME_MODIFY_SET: u32 = 54;
pub const FATTR4_MOUNTED_ON_FILEID: u32 = 55;
/// NFSv4.1 additions (RFC 8881 §5.7).
pub const FATTR4_DIR_NOTIF_DELAY: u32 = 56;
pub const FATTR4_DIRENT_NOTIF_DELAY: u32 = 57;
pub const FATTR4_DACL: u32 = 58;
pub const FATTR4_SACL: u32 = 59;
pub const FATTR4_CHANGE_POLICY: u32 = 60;
pub const FATTR4_FS_STATUS: u32 = 61;
pub const FATTR4_FS_LAYOUT_TYPES: u32 = 62;
pub const FATTR4_LAYOUT_HINT: u32 = 63;
pub const FATTR4_LAYOUT_TYPES: u32 = 64;
pub const FATTR4_LAYOUT_BLKSIZE: u32 = 65;
pub const FATTR4_LAYOUT_ALIGNMENT: u32 = 66;
pub const FATTR4_FS_LOCATIONS_INFO: u32 = 67;
pub const FATTR4_MDSTHRESHOLD: u32 = 68;
pub const FATTR4_RETENTION_GET: u32 = 69;
pub const FATTR4_RETENTION_SET: u32 = 70;
pub const FATTR4_RETENTEVT_GET: u32 = 71;
pub const FATTR4_RETENTEVT_SET: u32 = 72;
pub const FATTR4_RETENTION_HOLD: u32 = 73;
pub const FATTR4_MODE_SET_MASKED: u32 = 74;
pub const FATTR4_FS_CHARSET_CAP: u32 = 76;
/// NFSv4.2 additions (RFC 7862 §12.2).
pub const FATTR4_CLONE_BLKSIZE: u32 = 77;
pub const FATTR4_SPACE_FREED: u32 = 78;
pub const FATTR4_CHANGE_ATTR_TYPE: u32 = 79;
pub const FATTR4_SEC_LABEL: u32 = 80;
/// `mode_umask` (RFC 8275 §3).
pub const FATTR4_MODE_UMASK: u32 = 81;
/// `xattr_support` (RFC 8276 §8.1).
pub const FATTR4_XATTR_SUPPORT: u32 = 82;
/// `time_deleg_access`, `time_deleg_modify` (RFC 9754 §5): the times a
/// client holding a delegation of them reports (in CB_GETATTR).
pub const FATTR4_TIME_DELEG_ACCESS: u32 = 84;
pub const FATTR4_TIME_DELEG_MODIFY: u32 = 85;
/// `open_arguments` (RFC 9754 §4.1): what OPEN supports.
pub const FATTR4_OPEN_ARGUMENTS: u32 = 86;

/// `open_arguments4` (RFC 9754 §4.1): bitmaps of the share access, share
/// deny, want flags, claim types and create modes OPEN supports, each bit
/// numbered by the `open_args_*` values below.
#[derive(Debug, Clone, Default, PartialEq, Eq, Pack, Unpack)]
pub struct OpenArguments4 {
    pub share_access: Bitmap4,
    pub share_deny: Bitmap4,
    pub share_access_want: Bitmap4,
    pub open_claim: Bitmap4,
    pub create_mode: Bitmap4,
}

/// `open_args_share_access4` (RFC 9754 §4.1).
pub const OPEN_ARGS_SHARE_ACCESS_READ: u32 = 1;
pub const OPEN_ARGS_SHARE_ACCESS_WRITE: u32 = 2;
pub const OPEN_ARGS_SHARE_ACCESS_BOTH: u32 = 3;
/// `open_args_share_deny4`.
pub const OPEN_ARGS_SHARE_DENY_NONE: u32 = 0;
pub const OPEN_ARGS_SHARE_DENY_READ: u32 = 1;
pub const OPEN_ARGS_SHARE_DENY_WRITE: u32 = 2;
pub const OPEN_ARGS_SHARE_DENY_BOTH: u32 = 3;
/// `open_args_share_access_want4`.
pub const OPEN_ARGS_SHARE_ACCESS_WANT_ANY_DELEG: u32 = 3;
pub const OPEN_ARGS_SHARE_ACCESS_WANT_NO_DELEG: u32 = 4;
pub const OPEN_ARGS_SHARE_ACCESS_WANT_CANCEL: u32 = 5;
pub const OPEN_ARGS_SHARE_ACCESS_WANT_SIGNAL_DELEG_WHEN_RESRC_AVAIL: u32 = 17;
pub const OPEN_ARGS_SHARE_ACCESS_WANT_PUSH_DELEG_WHEN_UNCONTENDED: u32 = 18;
pub const OPEN_ARGS_SHARE_ACCESS_WANT_DELEG_TIMESTAMPS: u32 = 20;
pub const OPEN_ARGS_SHARE_ACCESS_WANT_OPEN_XOR_DELEGATION: u32 = 21;
/// `open_args_open_claim4`.
pub const OPEN_ARGS_OPEN_CLAIM_NULL: u32 = 0;
pub const OPEN_ARGS_OPEN_CLAIM_PREVIOUS: u32 = 1;
pub const OPEN_ARGS_OPEN_CLAIM_DELEGATE_CUR: u32 = 2;
pub const OPEN_ARGS_OPEN_CLAIM_DELEGATE_PREV: u32 = 3;
pub const OPEN_ARGS_OPEN_CLAIM_FH: u32 = 4;
pub const OPEN_ARGS_OPEN_CLAIM_DELEG_CUR_FH: u32 = 5;
pub const OPEN_ARGS_OPEN_CLAIM_DELEG_PREV_FH: u32 = 6;
/// `open_args_createmode4`.
pub const OPEN_ARGS_CREATEMODE_UNCHECKED4: u32 = 0;
pub const OPEN_ARGS_CREATE_MODE_GUARDED: u32 = 1;
pub const OPEN_ARGS_CREATEMODE_EXCLUSIVE4: u32 = 2;
pub const OPEN_ARGS_CREATE_MODE_EXCLUSIVE4_1: u32 = 3;

/// Attributes that are write-only: they may appear in SETATTR/CREATE/OPEN
/// but never in GETATTR replies (RFC 8881 §5.5, §5.7).
pub const WRITE_ONLY_ATTRS: &[u32] = &[
    FATTR4_TIME_ACCESS_SET,
    FATTR4_TIME_MODIFY_SET,
    FATTR4_MODE_SET_MASKED,
    FATTR4_RETENTION_SET,
    FATTR4_RETENTEVT_SET,
    FATTR4_MODE_UMASK,
];

// ---------------------------------------------------------------------------
// bitmap4 and fattr4 (RFC 8881 §3.3.6, §3.3.7)
// ---------------------------------------------------------------------------

/// `bitmap4`: bit `n % 32` of word `n / 32` is set when attribute `n` is
/// present (RFC 8881 §3.3.6).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct Bitmap4(#[xdr(max = 64)] pub Vec<u32>);

impl Bitmap4 {
    /// An empty bitmap.
    pub const fn new() -> Self {
        Bitmap4(Vec::new())
    }

    /// The bitmap with exactly these bits set.
    pub fn from_attrs(attrs: &[u32]) -> Self {
        let mut b = Bitmap4::new();
        for &a in attrs {
            b.insert(a);
        }
        b
    }

    pub fn contains(&self, n: u32) -> bool {
        self.0
            .get((n / 32) as usize)
            .is_some_and(|w| w & (1 << (n % 32)) != 0)
    }

    pub fn insert(&mut self, n: u32) {
        let word = (n / 32) as usize;
        if self.0.len() <= word {
            self.0.resize(word + 1, 0);
        }
        self.0[word] |= 1 << (n % 32);
    }

    pub fn remove(&mut self, n: u32) {
        if let Some(w) = self.0.get_mut((n / 32) as usize) {
            *w &= !(1 << (n % 32));
        }
        self.trim();
    }

    /// The set bits, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros();
                w &= w - 1;
                Some(i as u32 * 32 + b)
            })
        })
    }

    /// Bits set in both, without trailing zero words.
    pub fn intersect(&self, other: &Bitmap4) -> Bitmap4 {
        let mut b = Bitmap4(
            self.0
                .iter()
                .zip(other.0.iter())
                .map(|(a, b)| a & b)
                .collect(),
        );
        b.trim();
        b
    }

    /// Bits set in `self` but not in `other`.
    pub fn difference(&self, other: &Bitmap4) -> Bitmap4 {
        let mut b = Bitmap4(
            self.0
                .iter()
                .enumerate()
                .map(|(i, a)| a & !other.0.get(i).copied().unwrap_or(0))
                .collect(),
        );
        b.trim();
        b
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }
}

/// `fattr4`: the attribute mask and the concatenated attribute values
/// (RFC 8881 §3.3.7). Decode the values with [`Attrs::decode`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Pack, Unpack)]
pub struct Fattr4 {
    pub attrmask: Bitmap4,
    pub attr_vals: Bytes,
}

// ---------------------------------------------------------------------------
// Value types (RFC 8881 §3.3, §5.8)
// ---------------------------------------------------------------------------

/// `nfstime4` (RFC 8881 §3.3.4): seconds and nanoseconds since the epoch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Pack, Unpack)]
pub struct NfsTime4 {
    pub seconds: i64,
    pub nseconds: u32,
}

/// `time_how4` (RFC 8881 §3.3.5).
pub const SET_TO_SERVER_TIME4: u32 = 0;
pub const SET_TO_CLIENT_TIME4: u32 = 1;

/// `settime4` (RFC 8881 §3.3.5), for time_access_set / time_modify_set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
pub enum SetTime4 {
    #[xdr(value = SET_TO_SERVER_TIME4)]
    SetToServerTime4,
    #[xdr(value = SET_TO_CLIENT_TIME4)]
    SetToClientTime4(NfsTime4),
}

/// `specdata4` (RFC 8881 §3.3.9): major and minor device numbers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct SpecData4 {
    pub specdata1: u32,
    pub specdata2: u32,
}

/// `fsid4` (RFC 8881 §3.3.12).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct FsId4 {
    pub major: u64,
    pub minor: u64,
}

/// `nfs_ftype4` (RFC 8881 §5.8.1.2, the `type` attribute).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
pub enum NfsFtype4 {
    Nf4Reg = 1,
    Nf4Dir = 2,
    Nf4Blk = 3,
    Nf4Chr = 4,
    Nf4Lnk = 5,
    Nf4Sock = 6,
    Nf4Fifo = 7,
    Nf4Attrdir = 8,
    Nf4Namedattr = 9,
}

/// `fh_expire_type` bits (RFC 8881 §4.2.1).
pub const FH4_PERSISTENT: u32 = 0x0000_0000;
pub const FH4_NOEXPIRE_WITH_OPEN: u32 = 0x0000_0001;
pub const FH4_VOLATILE_ANY: u32 = 0x0000_0002;
pub const FH4_VOL_MIGRATION: u32 = 0x0000_0004;
pub const FH4_VOL_RENAME: u32 = 0x0000_0008;

/// `mode4` bits (RFC 8881 §6.2.4).
pub const MODE4_SUID: u32 = 0o4000;
pub const MODE4_SGID: u32 = 0o2000;
pub const MODE4_SVTX: u32 = 0o1000;
pub const MODE4_RUSR: u32 = 0o400;
pub const MODE4_WUSR: u32 = 0o200;
pub const MODE4_XUSR: u32 = 0o100;
pub const MODE4_RGRP: u32 = 0o040;
pub const MODE4_WGRP: u32 = 0o020;
pub const MODE4_XGRP: u32 = 0o010;
pub const MODE4_ROTH: u32 = 0o004;
pub const MODE4_WOTH: u32 = 0o002;
pub const MODE4_XOTH: u32 = 0o001;

/// `mode_masked4` (RFC 8881 §6.2.5, the `mode_set_masked` attribute): set
/// the bits of `value_to_set` selected by `mask_bits`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct ModeMasked4 {
    pub value_to_set: u32,
    pub mask_bits: u32,
}

/// `mode_umask4` (RFC 8275 §3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct ModeUmask4 {
    pub mode: u32,
    pub umask: u32,
}

/// `pathname4` (RFC 8881 §3.3.10): components, each a `component4`.
pub type Pathname4 = Vec<Bytes>;

/// `fs_location4` (RFC 8881 §11.16): servers (`utf8str_cis`) and the path
/// of the file system on them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Pack, Unpack)]
pub struct FsLocation4 {
    pub server: Vec<Bytes>,
    pub rootpath: Pathname4,
}

/// `fs_locations4` (RFC 8881 §11.16, the `fs_locations` attribute).
#[derive(Debug, Clone, Default, PartialEq, Eq, Pack, Unpack)]
pub struct FsLocations4 {
    pub fs_root: Pathname4,
    pub locations: Vec<FsLocation4>,
}

/// `info` byte indices of `fs_locations_server4` (RFC 8881 §11.17.1).
pub const FSLI4BX_GFLAGS: usize = 0;
pub const FSLI4BX_TFLAGS: usize = 1;
pub const FSLI4BX_CLSIMUL: usize = 2;
pub const FSLI4BX_CLHANDLE: usize = 3;
pub const FSLI4BX_CLFILEID: usize = 4;
pub const FSLI4BX_CLWRITEVER: usize = 5;
pub const FSLI4BX_CLCHANGE: usize = 6;
pub const FSLI4BX_CLREADDIR: usize = 7;
pub const FSLI4BX_READRANK: usize = 8;
pub const FSLI4BX_WRITERANK: usize = 9;
pub const FSLI4BX_READORDER: usize = 10;
pub const FSLI4BX_WRITEORDER: usize = 11;
/// `flags` bit (RFC 8881 §11.17.3).
pub const FSLI4IF_VAR_SUB: u32 = 0x0000_0001;

/// `fs_locations_server4` (RFC 8881 §11.17).
#[derive(Debug, Clone, Default, PartialEq, Eq, Pack, Unpack)]
pub struct FsLocationsServer4 {
    pub currency: i32,
    pub info: Bytes,
    pub server: Bytes,
}

/// `fs_locations_item4` (RFC 8881 §11.17).
#[derive(Debug, Clone, Default, PartialEq, Eq, Pack, Unpack)]
pub struct FsLocationsItem4 {
    pub entries: Vec<FsLocationsServer4>,
    pub rootpath: Pathname4,
}

/// `fs_locations_info4` (RFC 8881 §11.17, the `fs_locations_info` attribute).
#[derive(Debug, Clone, Default, PartialEq, Eq, Pack, Unpack)]
pub struct FsLocationsInfo4 {
    pub flags: u32,
    pub valid_for: i32,
    pub fs_root: Pathname4,
    pub items: Vec<FsLocationsItem4>,
}

/// `fs4_status_type` (RFC 8881 §11.18).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
pub enum Fs4StatusType {
    Status4Fixed = 1,
    Status4Updated = 2,
    Status4Versioned = 3,
    Status4Writable = 4,
    Status4Referral = 5,
}

/// `fs4_status` (RFC 8881 §11.18, the `fs_status` attribute).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Fs4Status {
    pub absent: bool,
    pub type_: Fs4StatusType,
    pub source: Bytes,
    pub current: Bytes,
    pub age: i32,
    pub version: NfsTime4,
}

/// `change_policy4` (RFC 8881 §5.8.2.12).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct ChangePolicy4 {
    pub major: u64,
    pub minor: u64,
}

/// `layouthint4` (RFC 8881 §3.3.19, the `layout_hint` attribute).
#[derive(Debug, Clone, Default, PartialEq, Eq, Pack, Unpack)]
pub struct LayoutHint4 {
    pub type_: LayoutType4,
    pub body: Bytes,
}

/// `threshold_item4` hint bits (RFC 8881 §5.12.1).
pub const THRESHOLD_RD: u32 = 0;
pub const THRESHOLD_WR: u32 = 1;
pub const THRESHOLD_RD_IO: u32 = 2;
pub const THRESHOLD_WR_IO: u32 = 3;

/// `threshold_item4` (RFC 8881 §3.3.22).
#[derive(Debug, Clone, Default, PartialEq, Eq, Pack, Unpack)]
pub struct ThresholdItem4 {
    pub layout_type: LayoutType4,
    pub hintset: Bitmap4,
    pub hintlist: Bytes,
}

/// `mdsthreshold4` (RFC 8881 §3.3.23, the `mdsthreshold` attribute).
#[derive(Debug, Clone, Default, PartialEq, Eq, Pack, Unpack)]
pub struct MdsThreshold4 {
    pub hints: Vec<ThresholdItem4>,
}

/// `retention_get4` (RFC 8881 §5.13.1): `rg_begin_time<1>` as an Option.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct RetentionGet4 {
    pub duration: u64,
    pub begin_time: Option<NfsTime4>,
}

/// `retention_set4` (RFC 8881 §5.13.2): `rs_duration<1>` as an Option.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct RetentionSet4 {
    pub enable: bool,
    pub duration: Option<u64>,
}

/// `fs_charset_cap4` bits (RFC 8881 §5.8.2.11).
pub const FSCHARSET_CAP4_CONTAINS_NON_UTF8: u32 = 0x1;
pub const FSCHARSET_CAP4_ALLOWS_ONLY_UTF8: u32 = 0x2;

/// `change_attr_type4` (RFC 7862 §12.2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
pub enum ChangeAttrType4 {
    Nfs4ChangeTypeIsMonotonicIncr = 0,
    Nfs4ChangeTypeIsVersionCounter = 1,
    Nfs4ChangeTypeIsVersionCounterNopnfs = 2,
    Nfs4ChangeTypeIsTimeMetadata = 3,
    Nfs4ChangeTypeIsUndefined = 4,
}

/// `policy4` (RFC 7862 §12.2.4).
pub type Policy4 = u32;

/// `labelformat_spec4` (RFC 7862 §12.2.4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct LabelFormatSpec4 {
    pub lfs: Policy4,
    pub pi: Policy4,
}

/// `sec_label4` (RFC 7862 §12.2.4, the `sec_label` attribute).
#[derive(Debug, Clone, Default, PartialEq, Eq, Pack, Unpack)]
pub struct SecLabel4 {
    pub lfs: LabelFormatSpec4,
    pub data: Bytes,
}

/// `limitby4` (RFC 8881 §18.16.1).
pub const NFS_LIMIT_SIZE: u32 = 1;
pub const NFS_LIMIT_BLOCKS: u32 = 2;

/// `nfs_modified_limit4` (RFC 8881 §18.16.1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct NfsModifiedLimit4 {
    pub num_blocks: u32,
    pub bytes_per_block: u32,
}

/// `nfs_space_limit4` (RFC 8881 §18.16.1): how far a write delegation
/// holder may extend the file before flushing, in OPEN's
/// `open_write_delegation4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
pub enum NfsSpaceLimit4 {
    #[xdr(value = NFS_LIMIT_SIZE)]
    Size(u64),
    #[xdr(value = NFS_LIMIT_BLOCKS)]
    Blocks(NfsModifiedLimit4),
}

// ---------------------------------------------------------------------------
// ACLs (RFC 8881 §6)
// ---------------------------------------------------------------------------

/// `acetype4` values (RFC 8881 §6.2.1.1).
pub const ACE4_ACCESS_ALLOWED_ACE_TYPE: u32 = 0x0000_0000;
pub const ACE4_ACCESS_DENIED_ACE_TYPE: u32 = 0x0000_0001;
pub const ACE4_SYSTEM_AUDIT_ACE_TYPE: u32 = 0x0000_0002;
pub const ACE4_SYSTEM_ALARM_ACE_TYPE: u32 = 0x0000_0003;

/// `aclsupport` bits (RFC 8881 §6.2.1.2).
pub const ACL4_SUPPORT_ALLOW_ACL: u32 = 0x0000_0001;
pub const ACL4_SUPPORT_DENY_ACL: u32 = 0x0000_0002;
pub const ACL4_SUPPORT_AUDIT_ACL: u32 = 0x0000_0004;
pub const ACL4_SUPPORT_ALARM_ACL: u32 = 0x0000_0008;

/// `acemask4` bits (RFC 8881 §6.2.1.3.1).
pub const ACE4_READ_DATA: u32 = 0x0000_0001;
pub const ACE4_LIST_DIRECTORY: u32 = 0x0000_0001;
pub const ACE4_WRITE_DATA: u32 = 0x0000_0002;
pub const ACE4_ADD_FILE: u32 = 0x0000_0002;
pub const ACE4_APPEND_DATA: u32 = 0x0000_0004;
pub const ACE4_ADD_SUBDIRECTORY: u32 = 0x0000_0004;
pub const ACE4_READ_NAMED_ATTRS: u32 = 0x0000_0008;
pub const ACE4_WRITE_NAMED_ATTRS: u32 = 0x0000_0010;
pub const ACE4_EXECUTE: u32 = 0x0000_0020;
pub const ACE4_DELETE_CHILD: u32 = 0x0000_0040;
pub const ACE4_READ_ATTRIBUTES: u32 = 0x0000_0080;
pub const ACE4_WRITE_ATTRIBUTES: u32 = 0x0000_0100;
pub const ACE4_WRITE_RETENTION: u32 = 0x0000_0200;
pub const ACE4_WRITE_RETENTION_HOLD: u32 = 0x0000_0400;
pub const ACE4_DELETE: u32 = 0x0001_0000;
pub const ACE4_READ_ACL: u32 = 0x0002_0000;
pub const ACE4_WRITE_ACL: u32 = 0x0004_0000;
pub const ACE4_WRITE_OWNER: u32 = 0x0008_0000;
pub const ACE4_SYNCHRONIZE: u32 = 0x0010_0000;
/// Generic masks (RFC 8881 §6.2.1.3.2).
pub const ACE4_GENERIC_READ: u32 = 0x0012_0081;
pub const ACE4_GENERIC_WRITE: u32 = 0x0016_0106;
pub const ACE4_GENERIC_EXECUTE: u32 = 0x0012_00A0;

/// `aceflag4` bits (RFC 8881 §6.2.1.4).
pub const ACE4_FILE_INHERIT_ACE: u32 = 0x0000_0001;
pub const ACE4_DIRECTORY_INHERIT_ACE: u32 = 0x0000_0002;
pub const ACE4_NO_PROPAGATE_INHERIT_ACE: u32 = 0x0000_0004;
pub const ACE4_INHERIT_ONLY_ACE: u32 = 0x0000_0008;
pub const ACE4_SUCCESSFUL_ACCESS_ACE_FLAG: u32 = 0x0000_0010;
pub const ACE4_FAILED_ACCESS_ACE_FLAG: u32 = 0x0000_0020;
pub const ACE4_IDENTIFIER_GROUP: u32 = 0x0000_0040;
pub const ACE4_INHERITED_ACE: u32 = 0x0000_0080;

/// `aclflag4` bits (RFC 8881 §6.4.3.2).
pub const ACL4_AUTO_INHERIT: u32 = 0x0000_0001;
pub const ACL4_PROTECTED: u32 = 0x0000_0002;
pub const ACL4_DEFAULTED: u32 = 0x0000_0004;

/// `nfsace4` (RFC 8881 §6.2.1). `who` is a `utf8str_mixed` such as
/// `OWNER@` or `user@domain`, left for the server to validate.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct Nfsace4 {
    pub type_: u32,
    pub flag: u32,
    pub access_mask: u32,
    pub who: Bytes,
}

/// `nfsacl41` (RFC 8881 §6.2.3, the `dacl` and `sacl` attributes).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct Nfsacl41 {
    pub flag: u32,
    pub aces: Vec<Nfsace4>,
}

// ---------------------------------------------------------------------------
// The typed attribute set
// ---------------------------------------------------------------------------

/// Why a `fattr4` could not be turned into [`Attrs`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttrDecodeError {
    /// The mask names an attribute [`Attrs`] has no field for: the server
    /// answers NFS4ERR_ATTRNOTSUPP.
    #[error("attribute {0} not supported")]
    Unsupported(u32),
    /// The values do not decode (or bytes are left over): NFS4ERR_BADXDR.
    #[error("bad attribute encoding: {0}")]
    Xdr(#[from] xdr::Error),
}

/// Generates [`Attrs`] and its codec from one table of
/// `NUMBER => field: Type`, which must be in ascending attribute order.
macro_rules! attr_table {
    ($( $num:ident => $field:ident : $ty:ty, )*) => {
        /// A typed set of attributes: `Some` fields are present. Field
        /// names follow the RFC 8881 §5 attribute names (`type_` for
        /// `type`).
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct Attrs {
            $(
                #[doc = concat!("`", stringify!($num), "`")]
                pub $field: Option<$ty>,
            )*
        }

        /// The attribute numbers [`Attrs`] carries, in table order.
        const ATTR_TABLE: &[u32] = &[$($num),*];

        impl Attrs {
            /// Encodes every `Some` attribute, ascending by number, with
            /// the mask of exactly those.
            pub fn encode(&self) -> Fattr4 {
                self.encode_inner(None)
            }

            /// Encodes the `Some` attributes that are also in `want` (as
            /// GETATTR/READDIR reply with what was asked for and is known).
            pub fn encode_only(&self, want: &Bitmap4) -> Fattr4 {
                self.encode_inner(Some(want))
            }

            fn encode_inner(&self, want: Option<&Bitmap4>) -> Fattr4 {
                let mut mask = Bitmap4(Vec::with_capacity(3));
                let mut e = Encoder::with_capacity(256);
                $(
                    if let Some(v) = &self.$field {
                        if want.is_none_or(|w| w.contains($num)) {
                            mask.insert($num);
                            Pack::pack(v, &mut e);
                        }
                    }
                )*
                Fattr4 { attrmask: mask, attr_vals: e.to_bytes() }
            }

            /// Decodes `f`, walking its mask in ascending order. Bytes left
            /// after the last attribute are an XDR error.
            pub fn decode(f: &Fattr4) -> Result<Attrs, AttrDecodeError> {
                let mut d = Decoder::new(f.attr_vals.clone());
                let mut a = Attrs::default();
                for n in f.attrmask.iter() {
                    match n {
                        $( $num => a.$field = Some(<$ty as Unpack>::unpack(&mut d)?), )*
                        other => return Err(AttrDecodeError::Unsupported(other)),
                    }
                }
                if d.remaining() != 0 {
                    return Err(AttrDecodeError::Xdr(xdr::Error::TooLong {
                        len: d.remaining(),
                        max: 0,
                    }));
                }
                Ok(a)
            }

            /// The mask of the attributes that are `Some`.
            pub fn mask(&self) -> Bitmap4 {
                let mut mask = Bitmap4(Vec::with_capacity(3));
                $( if self.$field.is_some() { mask.insert($num); } )*
                mask
            }

            /// Every attribute [`Attrs`] can carry.
            pub fn supported() -> Bitmap4 {
                Bitmap4::from_attrs(ATTR_TABLE)
            }
        }
    };
}

attr_table! {
    FATTR4_SUPPORTED_ATTRS => supported_attrs: Bitmap4,
    FATTR4_TYPE => type_: NfsFtype4,
    FATTR4_FH_EXPIRE_TYPE => fh_expire_type: u32,
    FATTR4_CHANGE => change: u64,
    FATTR4_SIZE => size: u64,
    FATTR4_LINK_SUPPORT => link_support: bool,
    FATTR4_SYMLINK_SUPPORT => symlink_support: bool,
    FATTR4_NAMED_ATTR => named_attr: bool,
    FATTR4_FSID => fsid: FsId4,
    FATTR4_UNIQUE_HANDLES => unique_handles: bool,
    FATTR4_LEASE_TIME => lease_time: u32,
    FATTR4_RDATTR_ERROR => rdattr_error: NfsStat4,
    FATTR4_ACL => acl: Vec<Nfsace4>,
    FATTR4_ACLSUPPORT => aclsupport: u32,
    FATTR4_ARCHIVE => archive: bool,
    FATTR4_CANSETTIME => cansettime: bool,
    FATTR4_CASE_INSENSITIVE => case_insensitive: bool,
    FATTR4_CASE_PRESERVING => case_preserving: bool,
    FATTR4_CHOWN_RESTRICTED => chown_restricted: bool,
    FATTR4_FILEHANDLE => filehandle: NfsFh4,
    FATTR4_FILEID => fileid: u64,
    FATTR4_FILES_AVAIL => files_avail: u64,
    FATTR4_FILES_FREE => files_free: u64,
    FATTR4_FILES_TOTAL => files_total: u64,
    FATTR4_FS_LOCATIONS => fs_locations: FsLocations4,
    FATTR4_HIDDEN => hidden: bool,
    FATTR4_HOMOGENEOUS => homogeneous: bool,
    FATTR4_MAXFILESIZE => maxfilesize: u64,
    FATTR4_MAXLINK => maxlink: u32,
    FATTR4_MAXNAME => maxname: u32,
    FATTR4_MAXREAD => maxread: u64,
    FATTR4_MAXWRITE => maxwrite: u64,
    FATTR4_MIMETYPE => mimetype: Bytes,
    FATTR4_MODE => mode: u32,
    FATTR4_NO_TRUNC => no_trunc: bool,
    FATTR4_NUMLINKS => numlinks: u32,
    FATTR4_OWNER => owner: Bytes,
    FATTR4_OWNER_GROUP => owner_group: Bytes,
    FATTR4_QUOTA_AVAIL_HARD => quota_avail_hard: u64,
    FATTR4_QUOTA_AVAIL_SOFT => quota_avail_soft: u64,
    FATTR4_QUOTA_USED => quota_used: u64,
    FATTR4_RAWDEV => rawdev: SpecData4,
    FATTR4_SPACE_AVAIL => space_avail: u64,
    FATTR4_SPACE_FREE => space_free: u64,
    FATTR4_SPACE_TOTAL => space_total: u64,
    FATTR4_SPACE_USED => space_used: u64,
    FATTR4_SYSTEM => system: bool,
    FATTR4_TIME_ACCESS => time_access: NfsTime4,
    FATTR4_TIME_ACCESS_SET => time_access_set: SetTime4,
    FATTR4_TIME_BACKUP => time_backup: NfsTime4,
    FATTR4_TIME_CREATE => time_create: NfsTime4,
    FATTR4_TIME_DELTA => time_delta: NfsTime4,
    FATTR4_TIME_METADATA => time_metadata: NfsTime4,
    FATTR4_TIME_MODIFY => time_modify: NfsTime4,
    FATTR4_TIME_MODIFY_SET => time_modify_set: SetTime4,
    FATTR4_MOUNTED_ON_FILEID => mounted_on_fileid: u64,
    FATTR4_DIR_NOTIF_DELAY => dir_notif_delay: NfsTime4,
    FATTR4_DIRENT_NOTIF_DELAY => dirent_notif_delay: NfsTime4,
    FATTR4_DACL => dacl: Nfsacl41,
    FATTR4_SACL => sacl: Nfsacl41,
    FATTR4_CHANGE_POLICY => change_policy: ChangePolicy4,
    FATTR4_FS_STATUS => fs_status: Fs4Status,
    FATTR4_FS_LAYOUT_TYPES => fs_layout_types: Vec<LayoutType4>,
    FATTR4_LAYOUT_HINT => layout_hint: LayoutHint4,
    FATTR4_LAYOUT_TYPES => layout_types: Vec<LayoutType4>,
    FATTR4_LAYOUT_BLKSIZE => layout_blksize: u32,
    FATTR4_LAYOUT_ALIGNMENT => layout_alignment: u32,
    FATTR4_FS_LOCATIONS_INFO => fs_locations_info: FsLocationsInfo4,
    FATTR4_MDSTHRESHOLD => mdsthreshold: MdsThreshold4,
    FATTR4_RETENTION_GET => retention_get: RetentionGet4,
    FATTR4_RETENTION_SET => retention_set: RetentionSet4,
    FATTR4_RETENTEVT_GET => retentevt_get: RetentionGet4,
    FATTR4_RETENTEVT_SET => retentevt_set: RetentionSet4,
    FATTR4_RETENTION_HOLD => retention_hold: u64,
    FATTR4_MODE_SET_MASKED => mode_set_masked: ModeMasked4,
    FATTR4_SUPPATTR_EXCLCREAT => suppattr_exclcreat: Bitmap4,
    FATTR4_FS_CHARSET_CAP => fs_charset_cap: u32,
    FATTR4_CLONE_BLKSIZE => clone_blksize: u32,
    FATTR4_SPACE_FREED => space_freed: u64,
    FATTR4_CHANGE_ATTR_TYPE => change_attr_type: ChangeAttrType4,
    FATTR4_SEC_LABEL => sec_label: SecLabel4,
    FATTR4_MODE_UMASK => mode_umask: ModeUmask4,
    FATTR4_XATTR_SUPPORT => xattr_support: bool,
    FATTR4_TIME_DELEG_ACCESS => time_deleg_access: NfsTime4,
    FATTR4_TIME_DELEG_MODIFY => time_deleg_modify: NfsTime4,
    FATTR4_OPEN_ARGUMENTS => open_arguments: OpenArguments4,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_ascending() {
        assert!(ATTR_TABLE.windows(2).all(|w| w[0] < w[1]));
        let s: Vec<u32> = Attrs::supported().iter().collect();
        assert_eq!(s, ATTR_TABLE);
    }

    fn sample() -> Attrs {
        Attrs {
            type_: Some(NfsFtype4::Nf4Dir),
            change: Some(42),
            size: Some(4096),
            fsid: Some(FsId4 { major: 1, minor: 2 }),
            acl: Some(vec![Nfsace4 {
                type_: ACE4_ACCESS_ALLOWED_ACE_TYPE,
                flag: ACE4_IDENTIFIER_GROUP,
                access_mask: ACE4_GENERIC_READ,
                who: Bytes::from_static(b"GROUP@"),
            }]),
            filehandle: Some(NfsFh4(Bytes::from_static(&[1, 2, 3, 4, 5]))),
            fs_locations: Some(FsLocations4 {
                fs_root: vec![Bytes::from_static(b"export")],
                locations: vec![FsLocation4 {
                    server: vec![Bytes::from_static(b"srv")],
                    rootpath: vec![Bytes::from_static(b"a"), Bytes::from_static(b"b")],
                }],
            }),
            mode: Some(0o755),
            owner: Some(Bytes::from_static(b"root@example")),
            rawdev: Some(SpecData4 {
                specdata1: 8,
                specdata2: 1,
            }),
            time_modify_set: Some(SetTime4::SetToClientTime4(NfsTime4 {
                seconds: -1,
                nseconds: 5,
            })),
            time_access_set: Some(SetTime4::SetToServerTime4),
            mounted_on_fileid: Some(77),
            dacl: Some(Nfsacl41 {
                flag: ACL4_AUTO_INHERIT,
                aces: vec![],
            }),
            mode_set_masked: Some(ModeMasked4 {
                value_to_set: 0o600,
                mask_bits: 0o777,
            }),
            suppattr_exclcreat: Some(Bitmap4::from_attrs(&[FATTR4_SIZE, FATTR4_MODE])),
            change_attr_type: Some(ChangeAttrType4::Nfs4ChangeTypeIsVersionCounter),
            space_freed: Some(9),
            ..Default::default()
        }
    }

    #[test]
    fn roundtrip() {
        let a = sample();
        let f = a.encode();
        assert_eq!(f.attrmask, a.mask());
        // through the wire form of fattr4 too
        let f2: Fattr4 = xdr::from_bytes(xdr::to_bytes(&f)).unwrap();
        assert_eq!(Attrs::decode(&f2).unwrap(), a);
        assert_eq!(
            Attrs::decode(&Attrs::default().encode()).unwrap(),
            Attrs::default()
        );
    }

    #[test]
    fn encode_only_filters() {
        let a = sample();
        let want = Bitmap4::from_attrs(&[FATTR4_SIZE, FATTR4_MODE, FATTR4_NUMLINKS]);
        let f = a.encode_only(&want);
        assert_eq!(f.attrmask, Bitmap4::from_attrs(&[FATTR4_SIZE, FATTR4_MODE]));
        let b = Attrs::decode(&f).unwrap();
        assert_eq!(b.size, Some(4096));
        assert_eq!(b.mode, Some(0o755));
        assert_eq!(b.type_, None);
    }

    #[test]
    fn type_and_size_layout() {
        let a = Attrs {
            type_: Some(NfsFtype4::Nf4Reg),
            size: Some(0x1_0000_0002),
            ..Default::default()
        };
        let f = a.encode();
        assert_eq!(f.attrmask, Bitmap4(vec![(1 << 1) | (1 << 4)]));
        assert_eq!(
            &xdr::to_bytes(&f)[..],
            &[
                0, 0, 0, 1, // bitmap4: one word
                0, 0, 0, 0x12, // bits 1 (type) and 4 (size)
                0, 0, 0, 12, // attr_vals length
                0, 0, 0, 1, // NF4REG
                0, 0, 0, 1, 0, 0, 0, 2, // size
            ][..]
        );
    }

    #[test]
    fn unknown_attr_is_unsupported() {
        let f = Fattr4 {
            attrmask: Bitmap4::from_attrs(&[FATTR4_SIZE, 100]),
            attr_vals: Bytes::from_static(&[0, 0, 0, 0, 0, 0, 0, 1]),
        };
        assert_eq!(Attrs::decode(&f), Err(AttrDecodeError::Unsupported(100)));
    }

    #[test]
    fn truncated_and_trailing_are_xdr_errors() {
        let f = Fattr4 {
            attrmask: Bitmap4::from_attrs(&[FATTR4_SIZE]),
            attr_vals: Bytes::from_static(&[0, 0, 0, 0, 0, 0]),
        };
        assert!(matches!(
            Attrs::decode(&f),
            Err(AttrDecodeError::Xdr(xdr::Error::Short { .. }))
        ));
        let f = Fattr4 {
            attrmask: Bitmap4::from_attrs(&[FATTR4_MODE]),
            attr_vals: Bytes::from_static(&[0, 0, 1, 0xed, 0, 0, 0, 0]),
        };
        assert!(matches!(Attrs::decode(&f), Err(AttrDecodeError::Xdr(_))));
        let f = Fattr4 {
            attrmask: Bitmap4::from_attrs(&[FATTR4_TYPE]),
            attr_vals: Bytes::from_static(&[0, 0, 0, 10]),
        };
        assert!(matches!(
            Attrs::decode(&f),
            Err(AttrDecodeError::Xdr(xdr::Error::BadDiscriminant(10, _)))
        ));
    }

    #[test]
    fn bitmap_across_words() {
        let mut b = Bitmap4::from_attrs(&[75, 33, 55]);
        assert_eq!(b.0.len(), 3);
        assert_eq!(b.iter().collect::<Vec<_>>(), vec![33, 55, 75]);
        assert!(b.contains(33) && b.contains(55) && b.contains(75));
        assert!(!b.contains(1) && !b.contains(200));
        b.insert(0);
        assert_eq!(b.iter().collect::<Vec<_>>(), vec![0, 33, 55, 75]);
        let i = b.intersect(&Bitmap4::from_attrs(&[0, 33]));
        assert_eq!(i, Bitmap4(vec![1, 2]));
        assert!(b.intersect(&Bitmap4::from_attrs(&[1])).is_empty());
        assert!(Bitmap4(vec![0, 0]).is_empty());
        assert_eq!(
            b.difference(&Bitmap4::from_attrs(&[55, 75]))
                .iter()
                .collect::<Vec<_>>(),
            vec![0, 33]
        );
        b.remove(75);
        assert_eq!(b.0.len(), 2);
        let all: Vec<u32> = Attrs::supported().iter().collect();
        assert!(all.contains(&FATTR4_SUPPATTR_EXCLCREAT));
    }

    #[test]
    fn oversized_bitmap_rejected() {
        // Up to 64 words (attribute numbers to 2047: pynfs asks for 1000,
        // GATT4) are read; longer is refused.
        let words = vec![0u32; 64];
        assert!(xdr::from_bytes::<Bitmap4>(xdr::to_bytes(&words)).is_ok());
        let words = vec![0u32; 65];
        assert!(xdr::from_bytes::<Bitmap4>(xdr::to_bytes(&words)).is_err());
    }
}
