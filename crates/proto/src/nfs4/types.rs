//! Basic NFSv4.1/4.2 data types, status codes, operation numbers and the
//! flag constants used by the operations (RFC 8881 §3, §15, §16.2, §18;
//! RFC 7862 §11, §15).

use bytes::Bytes;
use xdr::{Pack, Unpack};

use super::*;

// ---------------------------------------------------------------------------
// RFC 8881 §3.2: sizes and limits
// ---------------------------------------------------------------------------

/// RFC 8881 §3.2: largest file handle, in bytes.
pub const NFS4_FHSIZE: usize = 128;
/// RFC 8881 §3.2: size of a `verifier4`.
pub const NFS4_VERIFIER_SIZE: usize = 8;
/// RFC 8881 §3.2: size of `stateid4.other`.
pub const NFS4_OTHER_SIZE: usize = 12;
/// RFC 8881 §3.2: bound on owner and client identifier opaques.
pub const NFS4_OPAQUE_LIMIT: usize = 1024;
/// RFC 8881 §3.2: size of a `sessionid4`.
pub const NFS4_SESSIONID_SIZE: usize = 16;
/// RFC 8881 §3.2: size of a `deviceid4`.
pub const NFS4_DEVICEID4_SIZE: usize = 16;
/// RFC 8881 §3.2: `NFS4_INT64_MAX`.
pub const NFS4_INT64_MAX: i64 = i64::MAX;
/// RFC 8881 §3.2: `NFS4_UINT64_MAX`.
pub const NFS4_UINT64_MAX: u64 = u64::MAX;
/// RFC 8881 §3.2: `NFS4_INT32_MAX`.
pub const NFS4_INT32_MAX: i32 = i32::MAX;
/// RFC 8881 §3.2: `NFS4_UINT32_MAX`.
pub const NFS4_UINT32_MAX: u32 = u32::MAX;
/// RFC 8881 §3.2: `NFS4_MAXFILELEN`.
pub const NFS4_MAXFILELEN: u64 = u64::MAX;
/// RFC 8881 §3.2: `NFS4_MAXFILEOFF`.
pub const NFS4_MAXFILEOFF: u64 = u64::MAX - 1;

// ---------------------------------------------------------------------------
// RFC 8881 §3.2: basic data types
// ---------------------------------------------------------------------------

/// RFC 8881 §3.2: `attrlist4`, encoded attribute values.
pub type AttrList4 = Bytes;
/// RFC 8881 §3.2: `changeid4`.
pub type ChangeId4 = u64;
/// RFC 8881 §3.2: `clientid4`.
pub type ClientId4 = u64;
/// RFC 8881 §3.2: `count4`.
pub type Count4 = u32;
/// RFC 8881 §3.2: `length4`.
pub type Length4 = u64;
/// RFC 8881 §3.2: `mode4`.
pub type Mode4 = u32;
/// RFC 8881 §3.2: `nfs_cookie4`.
pub type NfsCookie4 = u64;
/// RFC 8881 §3.2: `offset4`.
pub type Offset4 = u64;
/// RFC 8881 §3.2: `qop4`.
pub type Qop4 = u32;
/// RFC 8881 §3.2: `sec_oid4`, a DER-encoded GSS-API mechanism OID.
pub type SecOid4 = Bytes;
/// RFC 8881 §3.2: `sequenceid4`.
pub type SequenceId4 = u32;
/// RFC 8881 §3.2: `seqid4` (NFSv4.0 owner sequencing; zero in 4.1).
pub type SeqId4 = u32;
/// RFC 8881 §3.2: `sessionid4`.
pub type SessionId4 = [u8; NFS4_SESSIONID_SIZE];
/// RFC 8881 §3.2: `slotid4`.
pub type SlotId4 = u32;
/// RFC 8881 §3.2: `utf8string`. Kept as bytes: the server checks UTF-8
/// itself so it can answer NFS4ERR_INVAL rather than NFS4ERR_BADXDR.
pub type Utf8String = Bytes;
/// RFC 8881 §3.2: `utf8str_cis` (case-insensitive).
pub type Utf8StrCis = Bytes;
/// RFC 8881 §3.2: `utf8str_cs` (case-sensitive).
pub type Utf8StrCs = Bytes;
/// RFC 8881 §3.2: `utf8str_mixed`.
pub type Utf8StrMixed = Bytes;
/// RFC 8881 §3.2: `component4`, one path component.
pub type Component4 = Bytes;
/// RFC 8881 §3.2: `linktext4`, a symbolic link's contents.
pub type LinkText4 = Bytes;
/// RFC 8881 §3.2: `verifier4`.
pub type Verifier4 = [u8; NFS4_VERIFIER_SIZE];
/// RFC 8881 §3.2: `gsshandle4_t`.
pub type GssHandle4 = Bytes;
/// RFC 8881 §3.3.14: `deviceid4`.
pub type DeviceId4 = [u8; NFS4_DEVICEID4_SIZE];
/// RFC 8881 §18.39.1: `attr_notice4`.
pub type AttrNotice4 = NfsTime4;

/// RFC 8881 §3.2: `nfs_fh4`, an opaque file handle of at most
/// [`NFS4_FHSIZE`] bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct NfsFh4(#[xdr(max = NFS4_FHSIZE)] pub Bytes);

// ---------------------------------------------------------------------------
// RFC 8881 §3.3: structured data types
// ---------------------------------------------------------------------------

/// RFC 8881 §3.3.8: `change_info4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct ChangeInfo4 {
    pub atomic: bool,
    pub before: ChangeId4,
    pub after: ChangeId4,
}

/// RFC 8881 §3.3.9: `netaddr4` (`na_r_netid`, `na_r_addr`), a universal
/// address as in RFC 5665.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct NetAddr4 {
    pub netid: String,
    pub addr: String,
}

/// RFC 8881 §3.3.10: `state_owner4`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct StateOwner4 {
    pub clientid: ClientId4,
    #[xdr(max = NFS4_OPAQUE_LIMIT)]
    pub owner: Bytes,
}

/// RFC 8881 §3.3.10: `open_owner4`.
pub type OpenOwner4 = StateOwner4;
/// RFC 8881 §3.3.10: `lock_owner4`.
pub type LockOwner4 = StateOwner4;

/// RFC 8881 §3.3.12: `stateid4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct StateId4 {
    pub seqid: u32,
    pub other: [u8; NFS4_OTHER_SIZE],
}

impl StateId4 {
    /// RFC 8881 §8.2.3: the anonymous stateid (all zeros).
    pub const ANONYMOUS: StateId4 = StateId4 {
        seqid: 0,
        other: [0; NFS4_OTHER_SIZE],
    };
    /// RFC 8881 §8.2.3: the READ bypass stateid (all ones).
    pub const BYPASS: StateId4 = StateId4 {
        seqid: u32::MAX,
        other: [0xff; NFS4_OTHER_SIZE],
    };
    /// RFC 8881 §8.2.3: the current stateid (seqid 1, other zero).
    pub const CURRENT: StateId4 = StateId4 {
        seqid: 1,
        other: [0; NFS4_OTHER_SIZE],
    };
    /// RFC 8881 §8.2.3: the invalid stateid (seqid all ones, other zero).
    pub const INVALID: StateId4 = StateId4 {
        seqid: u32::MAX,
        other: [0; NFS4_OTHER_SIZE],
    };
}

/// RFC 8881 §3.3.13: `layouttype4`. Kept as a plain number (not an enum)
/// so that an unknown layout type reaches the server, which must answer
/// NFS4ERR_UNKNOWN_LAYOUTTYPE rather than NFS4ERR_BADXDR.
pub type LayoutType4 = u32;
/// RFC 8881 §3.3.13: `LAYOUT4_NFSV4_1_FILES`.
pub const LAYOUT4_NFSV4_1_FILES: LayoutType4 = 0x1;
/// RFC 8881 §3.3.13: `LAYOUT4_OSD2_OBJECTS`.
pub const LAYOUT4_OSD2_OBJECTS: LayoutType4 = 0x2;
/// RFC 8881 §3.3.13: `LAYOUT4_BLOCK_VOLUME`.
pub const LAYOUT4_BLOCK_VOLUME: LayoutType4 = 0x3;
/// RFC 8435 §5 (registered in §16): `LAYOUT4_FLEX_FILES`; its wire
/// types are in `flexfiles.rs`.
pub const LAYOUT4_FLEX_FILES: LayoutType4 = 0x4;
/// RFC 8154 §2: `LAYOUT4_SCSI`.
pub const LAYOUT4_SCSI: LayoutType4 = 0x5;

/// RFC 8881 §3.3.15: `device_addr4`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct DeviceAddr4 {
    pub layout_type: LayoutType4,
    pub addr_body: Bytes,
}

/// RFC 8881 §3.3.16: `layout_content4`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct LayoutContent4 {
    pub layout_type: LayoutType4,
    pub body: Bytes,
}

/// RFC 8881 §3.3.20: `layoutiomode4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum LayoutIoMode4 {
    Read = 1,
    Rw = 2,
    Any = 3,
}

/// RFC 8881 §3.3.17: `layout4`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Layout4 {
    pub offset: Offset4,
    pub length: Length4,
    pub iomode: LayoutIoMode4,
    pub content: LayoutContent4,
}

/// RFC 8881 §3.3.18: `layoutupdate4`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct LayoutUpdate4 {
    pub layout_type: LayoutType4,
    pub body: Bytes,
}

/// RFC 8881 §18.44.1: `layoutreturn_type4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum LayoutReturnType4 {
    File = 1,
    Fsid = 2,
    All = 3,
}

/// RFC 8881 §18.44.1: `layoutreturn_file4`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct LayoutReturnFile4 {
    pub offset: Offset4,
    pub length: Length4,
    pub stateid: StateId4,
    /// Layout-type-specific data.
    pub body: Bytes,
}

/// RFC 8881 §18.44.1: `layoutreturn4`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub enum LayoutReturn4 {
    #[xdr(value = LayoutReturnType4::File)]
    File(LayoutReturnFile4),
    #[xdr(value = LayoutReturnType4::Fsid)]
    Fsid,
    #[xdr(value = LayoutReturnType4::All)]
    All,
}

// ---------------------------------------------------------------------------
// RFC 8881 §15.1: nfsstat4
// ---------------------------------------------------------------------------

/// RFC 8881 §15.1 (and RFC 7862 §11.1, RFC 8276 §8.4): `nfsstat4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum NfsStat4 {
    Nfs4Ok = 0,
    Nfs4errPerm = 1,
    Nfs4errNoent = 2,
    Nfs4errIo = 5,
    Nfs4errNxio = 6,
    Nfs4errAccess = 13,
    Nfs4errExist = 17,
    Nfs4errXdev = 18,
    Nfs4errNotdir = 20,
    Nfs4errIsdir = 21,
    Nfs4errInval = 22,
    Nfs4errFbig = 27,
    Nfs4errNospc = 28,
    Nfs4errRofs = 30,
    Nfs4errMlink = 31,
    Nfs4errNametoolong = 63,
    Nfs4errNotempty = 66,
    Nfs4errDquot = 69,
    Nfs4errStale = 70,
    Nfs4errBadhandle = 10001,
    Nfs4errBadCookie = 10003,
    Nfs4errNotsupp = 10004,
    Nfs4errToosmall = 10005,
    Nfs4errServerfault = 10006,
    Nfs4errBadtype = 10007,
    Nfs4errDelay = 10008,
    Nfs4errSame = 10009,
    Nfs4errDenied = 10010,
    Nfs4errExpired = 10011,
    Nfs4errLocked = 10012,
    Nfs4errGrace = 10013,
    Nfs4errFhexpired = 10014,
    Nfs4errShareDenied = 10015,
    Nfs4errWrongsec = 10016,
    Nfs4errClidInuse = 10017,
    /// NFSv4.0 only.
    Nfs4errResource = 10018,
    Nfs4errMoved = 10019,
    Nfs4errNofilehandle = 10020,
    Nfs4errMinorVersMismatch = 10021,
    Nfs4errStaleClientid = 10022,
    Nfs4errStaleStateid = 10023,
    Nfs4errOldStateid = 10024,
    Nfs4errBadStateid = 10025,
    Nfs4errBadSeqid = 10026,
    Nfs4errNotSame = 10027,
    Nfs4errLockRange = 10028,
    Nfs4errSymlink = 10029,
    Nfs4errRestorefh = 10030,
    Nfs4errLeaseMoved = 10031,
    Nfs4errAttrnotsupp = 10032,
    Nfs4errNoGrace = 10033,
    Nfs4errReclaimBad = 10034,
    Nfs4errReclaimConflict = 10035,
    Nfs4errBadxdr = 10036,
    Nfs4errLocksHeld = 10037,
    Nfs4errOpenmode = 10038,
    Nfs4errBadowner = 10039,
    Nfs4errBadchar = 10040,
    Nfs4errBadname = 10041,
    Nfs4errBadRange = 10042,
    Nfs4errLockNotsupp = 10043,
    Nfs4errOpIllegal = 10044,
    Nfs4errDeadlock = 10045,
    Nfs4errFileOpen = 10046,
    Nfs4errAdminRevoked = 10047,
    Nfs4errCbPathDown = 10048,
    Nfs4errBadiomode = 10049,
    Nfs4errBadlayout = 10050,
    Nfs4errBadSessionDigest = 10051,
    Nfs4errBadsession = 10052,
    Nfs4errBadslot = 10053,
    Nfs4errCompleteAlready = 10054,
    Nfs4errConnNotBoundToSession = 10055,
    Nfs4errDelegAlreadyWanted = 10056,
    Nfs4errBackChanBusy = 10057,
    Nfs4errLayouttrylater = 10058,
    Nfs4errLayoutunavailable = 10059,
    Nfs4errNomatchingLayout = 10060,
    Nfs4errRecallconflict = 10061,
    Nfs4errUnknownLayouttype = 10062,
    Nfs4errSeqMisordered = 10063,
    Nfs4errSequencePos = 10064,
    Nfs4errReqTooBig = 10065,
    Nfs4errRepTooBig = 10066,
    Nfs4errRepTooBigToCache = 10067,
    Nfs4errRetryUncachedRep = 10068,
    Nfs4errUnsafeCompound = 10069,
    Nfs4errTooManyOps = 10070,
    Nfs4errOpNotInSession = 10071,
    Nfs4errHashAlgUnsupp = 10072,
    // 10073 is unused.
    Nfs4errClientidBusy = 10074,
    Nfs4errPnfsIoHole = 10075,
    Nfs4errSeqFalseRetry = 10076,
    Nfs4errBadHighSlot = 10077,
    Nfs4errDeadsession = 10078,
    Nfs4errEncrAlgUnsupp = 10079,
    Nfs4errPnfsNoLayout = 10080,
    Nfs4errNotOnlyOp = 10081,
    Nfs4errWrongCred = 10082,
    Nfs4errWrongType = 10083,
    Nfs4errDirdelegUnavail = 10084,
    Nfs4errRejectDeleg = 10085,
    Nfs4errReturnconflict = 10086,
    Nfs4errDelegRevoked = 10087,
    /// RFC 7862 §11.1.
    Nfs4errPartnerNotsupp = 10088,
    /// RFC 7862 §11.1.
    Nfs4errPartnerNoAuth = 10089,
    /// RFC 7862 §11.1.
    Nfs4errUnionNotsupp = 10090,
    /// RFC 7862 §11.1.
    Nfs4errOffloadDenied = 10091,
    /// RFC 7862 §11.1.
    Nfs4errWrongLfs = 10092,
    /// RFC 7862 §11.1.
    Nfs4errBadlabel = 10093,
    /// RFC 7862 §11.1.
    Nfs4errOffloadNoReqs = 10094,
    /// RFC 8276 §8.4.
    Nfs4errNoxattr = 10095,
    /// RFC 8276 §8.4.
    Nfs4errXattr2big = 10096,
}

impl NfsStat4 {
    /// True for [`NfsStat4::Nfs4Ok`].
    pub fn is_ok(self) -> bool {
        self == NfsStat4::Nfs4Ok
    }

    /// Whether an NFSv4.0 open or lock owner's sequence id moves on after
    /// an operation with this status: after every status but those that
    /// say the request was not really seen (RFC 7530 §9.1.7).
    pub fn moves_seqid(self) -> bool {
        !matches!(
            self,
            NfsStat4::Nfs4errStaleClientid
                | NfsStat4::Nfs4errStaleStateid
                | NfsStat4::Nfs4errBadStateid
                | NfsStat4::Nfs4errBadSeqid
                | NfsStat4::Nfs4errBadxdr
                | NfsStat4::Nfs4errResource
                | NfsStat4::Nfs4errNofilehandle
                | NfsStat4::Nfs4errMoved
        )
    }
}

// ---------------------------------------------------------------------------
// RFC 8881 §16.2 / RFC 7862 §15: operation numbers
// ---------------------------------------------------------------------------

/// RFC 8881 §16.2.1 `nfs_opnum4`, with the RFC 7862 §15 (NFSv4.2) and
/// RFC 8276 §8 (extended attribute) operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Pack, Unpack)]
#[repr(u32)]
pub enum OpNum4 {
    Access = 3,
    Close = 4,
    Commit = 5,
    Create = 6,
    DelegPurge = 7,
    DelegReturn = 8,
    GetAttr = 9,
    GetFh = 10,
    Link = 11,
    Lock = 12,
    LockT = 13,
    LockU = 14,
    Lookup = 15,
    LookupP = 16,
    NVerify = 17,
    Open = 18,
    OpenAttr = 19,
    /// NFSv4.0 only.
    OpenConfirm = 20,
    OpenDowngrade = 21,
    PutFh = 22,
    PutPubFh = 23,
    PutRootFh = 24,
    Read = 25,
    ReadDir = 26,
    ReadLink = 27,
    Remove = 28,
    Rename = 29,
    /// NFSv4.0 only.
    Renew = 30,
    RestoreFh = 31,
    SaveFh = 32,
    SecInfo = 33,
    SetAttr = 34,
    /// NFSv4.0 only.
    SetClientId = 35,
    /// NFSv4.0 only.
    SetClientIdConfirm = 36,
    Verify = 37,
    Write = 38,
    /// NFSv4.0 only.
    ReleaseLockOwner = 39,
    BackchannelCtl = 40,
    BindConnToSession = 41,
    ExchangeId = 42,
    CreateSession = 43,
    DestroySession = 44,
    FreeStateId = 45,
    GetDirDelegation = 46,
    GetDeviceInfo = 47,
    GetDeviceList = 48,
    LayoutCommit = 49,
    LayoutGet = 50,
    LayoutReturn = 51,
    SecInfoNoName = 52,
    Sequence = 53,
    SetSsv = 54,
    TestStateId = 55,
    WantDelegation = 56,
    DestroyClientId = 57,
    ReclaimComplete = 58,
    Allocate = 59,
    Copy = 60,
    CopyNotify = 61,
    Deallocate = 62,
    IoAdvise = 63,
    LayoutError = 64,
    LayoutStats = 65,
    OffloadCancel = 66,
    OffloadStatus = 67,
    ReadPlus = 68,
    Seek = 69,
    WriteSame = 70,
    Clone = 71,
    /// RFC 8276 §8.
    GetXattr = 72,
    /// RFC 8276 §8.
    SetXattr = 73,
    /// RFC 8276 §8.
    ListXattrs = 74,
    /// RFC 8276 §8.
    RemoveXattr = 75,
    Illegal = 10044,
}

impl OpNum4 {
    /// The operation's name as RFC 8881 §16.2.1 (and RFC 7862, RFC 8276)
    /// spells it: "ACCESS", "OPEN_DOWNGRADE", "ILLEGAL".
    pub const fn name(self) -> &'static str {
        match self {
            OpNum4::Access => "ACCESS",
            OpNum4::Close => "CLOSE",
            OpNum4::Commit => "COMMIT",
            OpNum4::Create => "CREATE",
            OpNum4::DelegPurge => "DELEGPURGE",
            OpNum4::DelegReturn => "DELEGRETURN",
            OpNum4::GetAttr => "GETATTR",
            OpNum4::GetFh => "GETFH",
            OpNum4::Link => "LINK",
            OpNum4::Lock => "LOCK",
            OpNum4::LockT => "LOCKT",
            OpNum4::LockU => "LOCKU",
            OpNum4::Lookup => "LOOKUP",
            OpNum4::LookupP => "LOOKUPP",
            OpNum4::NVerify => "NVERIFY",
            OpNum4::Open => "OPEN",
            OpNum4::OpenAttr => "OPENATTR",
            OpNum4::OpenConfirm => "OPEN_CONFIRM",
            OpNum4::OpenDowngrade => "OPEN_DOWNGRADE",
            OpNum4::PutFh => "PUTFH",
            OpNum4::PutPubFh => "PUTPUBFH",
            OpNum4::PutRootFh => "PUTROOTFH",
            OpNum4::Read => "READ",
            OpNum4::ReadDir => "READDIR",
            OpNum4::ReadLink => "READLINK",
            OpNum4::Remove => "REMOVE",
            OpNum4::Rename => "RENAME",
            OpNum4::Renew => "RENEW",
            OpNum4::RestoreFh => "RESTOREFH",
            OpNum4::SaveFh => "SAVEFH",
            OpNum4::SecInfo => "SECINFO",
            OpNum4::SetAttr => "SETATTR",
            OpNum4::SetClientId => "SETCLIENTID",
            OpNum4::SetClientIdConfirm => "SETCLIENTID_CONFIRM",
            OpNum4::Verify => "VERIFY",
            OpNum4::Write => "WRITE",
            OpNum4::ReleaseLockOwner => "RELEASE_LOCKOWNER",
            OpNum4::BackchannelCtl => "BACKCHANNEL_CTL",
            OpNum4::BindConnToSession => "BIND_CONN_TO_SESSION",
            OpNum4::ExchangeId => "EXCHANGE_ID",
            OpNum4::CreateSession => "CREATE_SESSION",
            OpNum4::DestroySession => "DESTROY_SESSION",
            OpNum4::FreeStateId => "FREE_STATEID",
            OpNum4::GetDirDelegation => "GET_DIR_DELEGATION",
            OpNum4::GetDeviceInfo => "GETDEVICEINFO",
            OpNum4::GetDeviceList => "GETDEVICELIST",
            OpNum4::LayoutCommit => "LAYOUTCOMMIT",
            OpNum4::LayoutGet => "LAYOUTGET",
            OpNum4::LayoutReturn => "LAYOUTRETURN",
            OpNum4::SecInfoNoName => "SECINFO_NO_NAME",
            OpNum4::Sequence => "SEQUENCE",
            OpNum4::SetSsv => "SET_SSV",
            OpNum4::TestStateId => "TEST_STATEID",
            OpNum4::WantDelegation => "WANT_DELEGATION",
            OpNum4::DestroyClientId => "DESTROY_CLIENTID",
            OpNum4::ReclaimComplete => "RECLAIM_COMPLETE",
            OpNum4::Allocate => "ALLOCATE",
            OpNum4::Copy => "COPY",
            OpNum4::CopyNotify => "COPY_NOTIFY",
            OpNum4::Deallocate => "DEALLOCATE",
            OpNum4::IoAdvise => "IO_ADVISE",
            OpNum4::LayoutError => "LAYOUTERROR",
            OpNum4::LayoutStats => "LAYOUTSTATS",
            OpNum4::OffloadCancel => "OFFLOAD_CANCEL",
            OpNum4::OffloadStatus => "OFFLOAD_STATUS",
            OpNum4::ReadPlus => "READ_PLUS",
            OpNum4::Seek => "SEEK",
            OpNum4::WriteSame => "WRITE_SAME",
            OpNum4::Clone => "CLONE",
            OpNum4::GetXattr => "GETXATTR",
            OpNum4::SetXattr => "SETXATTR",
            OpNum4::ListXattrs => "LISTXATTRS",
            OpNum4::RemoveXattr => "REMOVEXATTR",
            OpNum4::Illegal => "ILLEGAL",
        }
    }
}

// ---------------------------------------------------------------------------
// RFC 8881 §18: flag constants
// ---------------------------------------------------------------------------

/// RFC 8881 §18.1.1: ACCESS4 bits.
pub const ACCESS4_READ: u32 = 0x0000_0001;
pub const ACCESS4_LOOKUP: u32 = 0x0000_0002;
pub const ACCESS4_MODIFY: u32 = 0x0000_0004;
pub const ACCESS4_EXTEND: u32 = 0x0000_0008;
pub const ACCESS4_DELETE: u32 = 0x0000_0010;
pub const ACCESS4_EXECUTE: u32 = 0x0000_0020;
/// RFC 8276 §8.6: extended attribute access bits.
pub const ACCESS4_XAREAD: u32 = 0x0000_0040;
pub const ACCESS4_XAWRITE: u32 = 0x0000_0080;
pub const ACCESS4_XALIST: u32 = 0x0000_0100;

/// RFC 8881 §18.16.1: share access and deny bits.
pub const OPEN4_SHARE_ACCESS_READ: u32 = 0x0000_0001;
pub const OPEN4_SHARE_ACCESS_WRITE: u32 = 0x0000_0002;
pub const OPEN4_SHARE_ACCESS_BOTH: u32 = 0x0000_0003;
pub const OPEN4_SHARE_DENY_NONE: u32 = 0x0000_0000;
pub const OPEN4_SHARE_DENY_READ: u32 = 0x0000_0001;
pub const OPEN4_SHARE_DENY_WRITE: u32 = 0x0000_0002;
pub const OPEN4_SHARE_DENY_BOTH: u32 = 0x0000_0003;

/// RFC 8881 §18.16.1: delegation wants in `share_access`.
pub const OPEN4_SHARE_ACCESS_WANT_DELEG_MASK: u32 = 0xFF00;
pub const OPEN4_SHARE_ACCESS_WANT_NO_PREFERENCE: u32 = 0x0000;
pub const OPEN4_SHARE_ACCESS_WANT_READ_DELEG: u32 = 0x0100;
pub const OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG: u32 = 0x0200;
pub const OPEN4_SHARE_ACCESS_WANT_ANY_DELEG: u32 = 0x0300;
pub const OPEN4_SHARE_ACCESS_WANT_NO_DELEG: u32 = 0x0400;
pub const OPEN4_SHARE_ACCESS_WANT_CANCEL: u32 = 0x0500;
pub const OPEN4_SHARE_ACCESS_WANT_SIGNAL_DELEG_WHEN_RESRC_AVAIL: u32 = 0x10000;
pub const OPEN4_SHARE_ACCESS_WANT_PUSH_DELEG_WHEN_UNCONTENDED: u32 = 0x20000;
/// NFSv4.2 (RFC 9754 §5, §6): the client would have the delegation cover
/// the file's timestamps, or have a delegation instead of an open.
pub const OPEN4_SHARE_ACCESS_WANT_DELEG_TIMESTAMPS: u32 = 0x100000;
pub const OPEN4_SHARE_ACCESS_WANT_OPEN_XOR_DELEGATION: u32 = 0x200000;

/// RFC 8881 §18.16.2: `rflags` result bits.
pub const OPEN4_RESULT_CONFIRM: u32 = 0x0000_0002;
pub const OPEN4_RESULT_LOCKTYPE_POSIX: u32 = 0x0000_0004;
pub const OPEN4_RESULT_PRESERVE_UNLINKED: u32 = 0x0000_0008;
pub const OPEN4_RESULT_MAY_NOTIFY_LOCK: u32 = 0x0000_0020;

/// RFC 8881 §18.35.1: EXCHANGE_ID flags.
pub const EXCHGID4_FLAG_SUPP_MOVED_REFER: u32 = 0x0000_0001;
pub const EXCHGID4_FLAG_SUPP_MOVED_MIGR: u32 = 0x0000_0002;
pub const EXCHGID4_FLAG_SUPP_FENCE_OPS: u32 = 0x0000_0004;
pub const EXCHGID4_FLAG_BIND_PRINC_STATEID: u32 = 0x0000_0100;
pub const EXCHGID4_FLAG_USE_NON_PNFS: u32 = 0x0001_0000;
pub const EXCHGID4_FLAG_USE_PNFS_MDS: u32 = 0x0002_0000;
pub const EXCHGID4_FLAG_USE_PNFS_DS: u32 = 0x0004_0000;
pub const EXCHGID4_FLAG_MASK_PNFS: u32 = 0x0007_0000;
pub const EXCHGID4_FLAG_UPD_CONFIRMED_REC_A: u32 = 0x4000_0000;
pub const EXCHGID4_FLAG_CONFIRMED_R: u32 = 0x8000_0000;

/// RFC 8881 §18.36.1: CREATE_SESSION flags.
pub const CREATE_SESSION4_FLAG_PERSIST: u32 = 0x0000_0001;
pub const CREATE_SESSION4_FLAG_CONN_BACK_CHAN: u32 = 0x0000_0002;
pub const CREATE_SESSION4_FLAG_CONN_RDMA: u32 = 0x0000_0004;

/// RFC 8881 §18.46.3: SEQUENCE `sr_status_flags`.
pub const SEQ4_STATUS_CB_PATH_DOWN: u32 = 0x0000_0001;
pub const SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRING: u32 = 0x0000_0002;
pub const SEQ4_STATUS_CB_GSS_CONTEXTS_EXPIRED: u32 = 0x0000_0004;
pub const SEQ4_STATUS_EXPIRED_ALL_STATE_REVOKED: u32 = 0x0000_0008;
pub const SEQ4_STATUS_EXPIRED_SOME_STATE_REVOKED: u32 = 0x0000_0010;
pub const SEQ4_STATUS_ADMIN_STATE_REVOKED: u32 = 0x0000_0020;
pub const SEQ4_STATUS_RECALLABLE_STATE_REVOKED: u32 = 0x0000_0040;
pub const SEQ4_STATUS_LEASE_MOVED: u32 = 0x0000_0080;
pub const SEQ4_STATUS_RESTART_RECLAIM_NEEDED: u32 = 0x0000_0100;
pub const SEQ4_STATUS_CB_PATH_DOWN_SESSION: u32 = 0x0000_0200;
pub const SEQ4_STATUS_BACKCHANNEL_FAULT: u32 = 0x0000_0400;
pub const SEQ4_STATUS_DEVID_CHANGED: u32 = 0x0000_0800;
pub const SEQ4_STATUS_DEVID_DELETED: u32 = 0x0000_1000;

/// RFC 7862 §15.5.1: IO_ADVISE hint bit numbers (`IO_ADVISE_type4`).
pub const IO_ADVISE4_NORMAL: u32 = 0;
pub const IO_ADVISE4_SEQUENTIAL: u32 = 1;
pub const IO_ADVISE4_SEQUENTIAL_BACKWARDS: u32 = 2;
pub const IO_ADVISE4_RANDOM: u32 = 3;
pub const IO_ADVISE4_WILLNEED: u32 = 4;
pub const IO_ADVISE4_WILLNEED_OPPORTUNISTIC: u32 = 5;
pub const IO_ADVISE4_DONTNEED: u32 = 6;
pub const IO_ADVISE4_NOREUSE: u32 = 7;
pub const IO_ADVISE4_READ: u32 = 8;
pub const IO_ADVISE4_WRITE: u32 = 9;
pub const IO_ADVISE4_INIT_PROXIMITY: u32 = 10;

/// RFC 5531 §8.2 / RFC 8881 §18.36.1: security flavors used in
/// `callback_sec_parms4` and `secinfo4`.
pub const AUTH_NONE: u32 = 0;
pub const AUTH_SYS: u32 = 1;
pub const RPCSEC_GSS: u32 = 6;

// ---------------------------------------------------------------------------
// RFC 8881 §18: enums and structures shared by several operations
// ---------------------------------------------------------------------------

/// RFC 8881 §18.10.1: `nfs_lock_type4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum NfsLockType4 {
    ReadLt = 1,
    WriteLt = 2,
    /// Blocking read lock.
    ReadwLt = 3,
    /// Blocking write lock.
    WritewLt = 4,
}

/// RFC 8881 §18.32.1: `stable_how4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Pack, Unpack)]
#[repr(u32)]
pub enum StableHow4 {
    Unstable4 = 0,
    DataSync4 = 1,
    FileSync4 = 2,
}

/// RFC 8881 §18.16.1: `opentype4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum OpenType4 {
    Open4Nocreate = 0,
    Open4Create = 1,
}

/// RFC 8881 §18.16.1: `createmode4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum CreateMode4 {
    Unchecked4 = 0,
    Guarded4 = 1,
    /// Deprecated in NFSv4.1 in favour of `Exclusive4_1`.
    Exclusive4 = 2,
    Exclusive41 = 3,
}

/// RFC 8881 §18.16.1: `open_claim_type4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum OpenClaimType4 {
    ClaimNull = 0,
    ClaimPrevious = 1,
    ClaimDelegateCur = 2,
    ClaimDelegatePrev = 3,
    ClaimFh = 4,
    ClaimDelegCurFh = 5,
    ClaimDelegPrevFh = 6,
}

/// RFC 8881 §18.16.1: `open_delegation_type4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum OpenDelegationType4 {
    OpenDelegateNone = 0,
    OpenDelegateRead = 1,
    OpenDelegateWrite = 2,
    /// New in NFSv4.1.
    OpenDelegateNoneExt = 3,
    /// NFSv4.2, RFC 9754 §5.2: a read delegation whose holder keeps the
    /// file's access time.
    OpenDelegateReadAttrsDeleg = 4,
    /// NFSv4.2, RFC 9754 §5.2: a write delegation whose holder keeps the
    /// file's access and modification times.
    OpenDelegateWriteAttrsDeleg = 5,
}

/// RFC 8881 §18.16.2: `why_no_delegation4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum WhyNoDelegation4 {
    Wnd4NotWanted = 0,
    Wnd4Contention = 1,
    Wnd4Resource = 2,
    Wnd4NotSuppFtype = 3,
    Wnd4WriteDelegNotSuppFtype = 4,
    Wnd4NotSuppUpgrade = 5,
    Wnd4NotSuppDowngrade = 6,
    Wnd4Cancelled = 7,
    Wnd4IsDir = 8,
}

/// RFC 8881 §3.3.11: `open_to_lock_owner4`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct OpenToLockOwner4 {
    pub open_seqid: SeqId4,
    pub open_stateid: StateId4,
    pub lock_seqid: SeqId4,
    pub lock_owner: LockOwner4,
}

/// RFC 8881 §18.10.1: `exist_lock_owner4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct ExistLockOwner4 {
    pub lock_stateid: StateId4,
    pub lock_seqid: SeqId4,
}

/// RFC 8881 §18.10.1: `locker4`, switched on `bool new_lock_owner`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub enum Locker4 {
    /// `new_lock_owner = TRUE`.
    #[xdr(value = 1)]
    OpenOwner(OpenToLockOwner4),
    /// `new_lock_owner = FALSE`.
    #[xdr(value = 0)]
    LockOwner(ExistLockOwner4),
}

/// RFC 8881 §18.10.2: `LOCK4denied`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Lock4Denied {
    pub offset: Offset4,
    pub length: Length4,
    pub locktype: NfsLockType4,
    pub owner: LockOwner4,
}

// ---------------------------------------------------------------------------
// RFC 8881 §18.35, §18.36: client and session identity
// ---------------------------------------------------------------------------

/// RFC 8881 §18.35.1: `client_owner4`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct ClientOwner4 {
    pub verifier: Verifier4,
    #[xdr(max = NFS4_OPAQUE_LIMIT)]
    pub ownerid: Bytes,
}

/// RFC 8881 §18.35.1: `server_owner4`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct ServerOwner4 {
    pub minor_id: u64,
    #[xdr(max = NFS4_OPAQUE_LIMIT)]
    pub major_id: Bytes,
}

/// RFC 8881 §3.3.21: `nfs_impl_id4`.
#[derive(Debug, Clone, PartialEq, Pack, Unpack)]
pub struct NfsImplId4 {
    pub domain: Utf8StrCis,
    pub name: Utf8StrCs,
    pub date: NfsTime4,
}

/// RFC 8881 §18.35.1: `state_protect_ops4`.
#[derive(Debug, Clone, PartialEq, Pack, Unpack)]
pub struct StateProtectOps4 {
    pub must_enforce: Bitmap4,
    pub must_allow: Bitmap4,
}

/// RFC 8881 §18.35.1: `ssv_sp_parms4`.
#[derive(Debug, Clone, PartialEq, Pack, Unpack)]
pub struct SsvSpParms4 {
    pub ops: StateProtectOps4,
    pub hash_algs: Vec<SecOid4>,
    pub encr_algs: Vec<SecOid4>,
    pub window: u32,
    pub num_gss_handles: u32,
}

/// RFC 8881 §18.35.1: `state_protect_how4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum StateProtectHow4 {
    Sp4None = 0,
    Sp4MachCred = 1,
    Sp4Ssv = 2,
}

/// RFC 8881 §18.35.1: `state_protect4_a`.
#[derive(Debug, Clone, PartialEq, Pack, Unpack)]
pub enum StateProtect4A {
    #[xdr(value = StateProtectHow4::Sp4None)]
    None,
    #[xdr(value = StateProtectHow4::Sp4MachCred)]
    MachCred(StateProtectOps4),
    #[xdr(value = StateProtectHow4::Sp4Ssv)]
    Ssv(SsvSpParms4),
}

/// RFC 8881 §18.35.2: `ssv_prot_info4`.
#[derive(Debug, Clone, PartialEq, Pack, Unpack)]
pub struct SsvProtInfo4 {
    pub ops: StateProtectOps4,
    pub hash_alg: u32,
    pub encr_alg: u32,
    pub ssv_len: u32,
    pub window: u32,
    pub handles: Vec<GssHandle4>,
}

/// RFC 8881 §18.35.2: `state_protect4_r`.
#[derive(Debug, Clone, PartialEq, Pack, Unpack)]
pub enum StateProtect4R {
    #[xdr(value = StateProtectHow4::Sp4None)]
    None,
    #[xdr(value = StateProtectHow4::Sp4MachCred)]
    MachCred(StateProtectOps4),
    #[xdr(value = StateProtectHow4::Sp4Ssv)]
    Ssv(SsvProtInfo4),
}

/// RFC 8881 §18.36.1: `channel_attrs4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct ChannelAttrs4 {
    pub headerpadsize: Count4,
    pub maxrequestsize: Count4,
    pub maxresponsesize: Count4,
    pub maxresponsesize_cached: Count4,
    pub maxoperations: Count4,
    pub maxrequests: Count4,
    /// `ca_rdma_ird<1>`: an array of at most one element has the same
    /// encoding as an optional item.
    pub rdma_ird: Option<u32>,
}

/// RFC 2203 §5: `rpc_gss_svc_t`, as used by RFC 8881 §18.36.1 and §18.29.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum RpcGssSvc {
    RpcGssSvcNone = 1,
    RpcGssSvcIntegrity = 2,
    RpcGssSvcPrivacy = 3,
}

/// RFC 8881 §18.36.1: `gss_cb_handles4`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct GssCbHandles4 {
    pub service: RpcGssSvc,
    pub handle_from_server: GssHandle4,
    pub handle_from_client: GssHandle4,
}

/// RFC 5531 §14.1: `authsys_parms`, the AUTH_SYS credential body.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct AuthSysParms {
    pub stamp: u32,
    #[xdr(max = 255)]
    pub machinename: Bytes,
    pub uid: u32,
    pub gid: u32,
    #[xdr(max = 16)]
    pub gids: Vec<u32>,
}

/// RFC 8881 §18.36.1: `callback_sec_parms4`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub enum CallbackSecParms4 {
    #[xdr(value = AUTH_NONE)]
    AuthNone,
    #[xdr(value = AUTH_SYS)]
    AuthSys(AuthSysParms),
    #[xdr(value = RPCSEC_GSS)]
    RpcSecGss(GssCbHandles4),
}

/// RFC 8881 §18.34.1: `channel_dir_from_client4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum ChannelDirFromClient4 {
    Cdfc4Fore = 0x1,
    Cdfc4Back = 0x2,
    Cdfc4ForeOrBoth = 0x3,
    Cdfc4BackOrBoth = 0x7,
}

/// RFC 8881 §18.34.2: `channel_dir_from_server4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum ChannelDirFromServer4 {
    Cdfs4Fore = 0x1,
    Cdfs4Back = 0x2,
    Cdfs4Both = 0x3,
}

// ---------------------------------------------------------------------------
// RFC 7862: NFSv4.2 shared types
// ---------------------------------------------------------------------------

/// RFC 7862 §15.2.1: `netloc_type4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum NetLocType4 {
    Nl4Name = 1,
    Nl4Url = 2,
    Nl4Netaddr = 3,
}

/// RFC 7862 §15.2.1: `netloc4`, the location of a server.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub enum NetLoc4 {
    #[xdr(value = NetLocType4::Nl4Name)]
    Name(Utf8StrCis),
    #[xdr(value = NetLocType4::Nl4Url)]
    Url(Utf8StrCis),
    #[xdr(value = NetLocType4::Nl4Netaddr)]
    NetAddr(NetAddr4),
}

/// RFC 7862 §15.2.2: `write_response4`, the result of COPY and
/// WRITE_SAME, and the body of CB_OFFLOAD.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct WriteResponse4 {
    /// `wr_callback_id<1>`: present when the operation runs
    /// asynchronously.
    pub callback_id: Option<StateId4>,
    pub count: Length4,
    pub committed: StableHow4,
    pub writeverf: Verifier4,
}

/// RFC 7862 §15.2.2: `copy_requirements4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct CopyRequirements4 {
    pub consecutive: bool,
    pub synchronous: bool,
}

/// RFC 7862 §15.10.1, §15.11.1: `data_content4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum DataContent4 {
    Nfs4ContentData = 0,
    Nfs4ContentHole = 1,
}

/// RFC 7862 §15.6.1: `device_error4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct DeviceError4 {
    pub deviceid: DeviceId4,
    pub status: NfsStat4,
    pub opnum: OpNum4,
}

/// RFC 7862 §15.7.1: `io_info4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Pack, Unpack)]
pub struct IoInfo4 {
    pub count: u64,
    pub bytes: u64,
}

/// RFC 7862 §15.12.1: `app_data_block4`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct AppDataBlock4 {
    pub offset: Offset4,
    pub block_size: Length4,
    pub block_count: Length4,
    pub reloff_blocknum: Length4,
    pub block_num: Count4,
    pub reloff_pattern: Length4,
    pub pattern: Bytes,
}
