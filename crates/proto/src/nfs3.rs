//! NFS version 3 wire types (RFC 1813), written from the RFC text.
//!
//! Field names follow the RFC. Results have the shape
//! `union switch (nfsstat3 status) { case NFS3_OK: T resok; default: F
//! resfail; }` and are [`Res3<T, F>`]. Optional data (`post_op_attr`,
//! `pre_op_attr`, `post_op_fh3`, the `set_*` unions switched on a bool) is
//! an [`Option`], which has exactly that encoding (RFC 4506 §4.19). The
//! readdir entry chains (`entry3 *nextentry`) are [`List`]s.
//!
//! Every variable-length item is bounded on decode: file handles by
//! [`NFS3_FHSIZE`], names and paths by [`NFS3_NAME_BOUND`] and
//! [`NFS3_PATH_BOUND`] (implementation limits; the RFC leaves `filename3`
//! and `nfspath3` unbounded), READ/WRITE data by the message itself.

use bytes::Bytes;
use xdr::{Decoder, Encoder, Pack, Unpack};

// ---------------------------------------------------------------------------
// RFC 1813 §2.2 and §2.5: program, procedures and sizes
// ---------------------------------------------------------------------------

/// RFC 1813 §3: the NFS program number.
pub const NFS_PROGRAM: u32 = 100003;
/// RFC 1813 §3: `NFS_V3`.
pub const NFS_V3: u32 = 3;

/// RFC 1813 §3: procedure numbers of `NFS_V3`.
pub const NFSPROC3_NULL: u32 = 0;
pub const NFSPROC3_GETATTR: u32 = 1;
pub const NFSPROC3_SETATTR: u32 = 2;
pub const NFSPROC3_LOOKUP: u32 = 3;
pub const NFSPROC3_ACCESS: u32 = 4;
pub const NFSPROC3_READLINK: u32 = 5;
pub const NFSPROC3_READ: u32 = 6;
pub const NFSPROC3_WRITE: u32 = 7;
pub const NFSPROC3_CREATE: u32 = 8;
pub const NFSPROC3_MKDIR: u32 = 9;
pub const NFSPROC3_SYMLINK: u32 = 10;
pub const NFSPROC3_MKNOD: u32 = 11;
pub const NFSPROC3_REMOVE: u32 = 12;
pub const NFSPROC3_RMDIR: u32 = 13;
pub const NFSPROC3_RENAME: u32 = 14;
pub const NFSPROC3_LINK: u32 = 15;
pub const NFSPROC3_READDIR: u32 = 16;
pub const NFSPROC3_READDIRPLUS: u32 = 17;
pub const NFSPROC3_FSSTAT: u32 = 18;
pub const NFSPROC3_FSINFO: u32 = 19;
pub const NFSPROC3_PATHCONF: u32 = 20;
pub const NFSPROC3_COMMIT: u32 = 21;

/// Number of NFSv3 procedures (0 through 21).
pub const NFSPROC3_COUNT: usize = 22;

/// The RFC's name of each procedure, indexed by procedure number.
pub const NFSPROC3_NAMES: [&str; NFSPROC3_COUNT] = [
    "NULL",
    "GETATTR",
    "SETATTR",
    "LOOKUP",
    "ACCESS",
    "READLINK",
    "READ",
    "WRITE",
    "CREATE",
    "MKDIR",
    "SYMLINK",
    "MKNOD",
    "REMOVE",
    "RMDIR",
    "RENAME",
    "LINK",
    "READDIR",
    "READDIRPLUS",
    "FSSTAT",
    "FSINFO",
    "PATHCONF",
    "COMMIT",
];

/// RFC 1813 §2.4: largest file handle, in bytes.
pub const NFS3_FHSIZE: usize = 64;
/// RFC 1813 §2.4: size of `cookieverf3`.
pub const NFS3_COOKIEVERFSIZE: usize = 8;
/// RFC 1813 §2.4: size of `createverf3`.
pub const NFS3_CREATEVERFSIZE: usize = 8;
/// RFC 1813 §2.4: size of `writeverf3`.
pub const NFS3_WRITEVERFSIZE: usize = 8;

/// Decode bound on a `filename3` (not in the RFC; well above any real
/// `NAME_MAX`, so an overlong name still reaches the server, which answers
/// NFS3ERR_NAMETOOLONG).
pub const NFS3_NAME_BOUND: usize = 1024;
/// Decode bound on an `nfspath3` (not in the RFC; `PATH_MAX`).
pub const NFS3_PATH_BOUND: usize = 4096;

// ---------------------------------------------------------------------------
// RFC 1813 §2.5: basic data types
// ---------------------------------------------------------------------------

/// RFC 1813 §2.5: `filename3`. Kept as bytes: NFSv3 names are not required
/// to be UTF-8.
pub type Filename3 = Bytes;
/// RFC 1813 §2.5: `nfspath3`.
pub type NfsPath3 = Bytes;
/// RFC 1813 §2.5: `fileid3`.
pub type FileId3 = u64;
/// RFC 1813 §2.5: `cookie3`.
pub type Cookie3 = u64;
/// RFC 1813 §2.5: `cookieverf3`.
pub type CookieVerf3 = [u8; NFS3_COOKIEVERFSIZE];
/// RFC 1813 §2.5: `createverf3`.
pub type CreateVerf3 = [u8; NFS3_CREATEVERFSIZE];
/// RFC 1813 §2.5: `writeverf3`.
pub type WriteVerf3 = [u8; NFS3_WRITEVERFSIZE];
/// RFC 1813 §2.5: `uid3`.
pub type Uid3 = u32;
/// RFC 1813 §2.5: `gid3`.
pub type Gid3 = u32;
/// RFC 1813 §2.5: `size3`.
pub type Size3 = u64;
/// RFC 1813 §2.5: `offset3`.
pub type Offset3 = u64;
/// RFC 1813 §2.5: `mode3`.
pub type Mode3 = u32;
/// RFC 1813 §2.5: `count3`.
pub type Count3 = u32;

/// RFC 1813 §2.6: `nfsstat3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum NfsStat3 {
    Ok = 0,
    Perm = 1,
    Noent = 2,
    Io = 5,
    Nxio = 6,
    Acces = 13,
    Exist = 17,
    Xdev = 18,
    Nodev = 19,
    Notdir = 20,
    Isdir = 21,
    Inval = 22,
    Fbig = 27,
    Nospc = 28,
    Rofs = 30,
    Mlink = 31,
    NameTooLong = 63,
    NotEmpty = 66,
    Dquot = 69,
    Stale = 70,
    Remote = 71,
    BadHandle = 10001,
    NotSync = 10002,
    BadCookie = 10003,
    NotSupp = 10004,
    TooSmall = 10005,
    ServerFault = 10006,
    BadType = 10007,
    Jukebox = 10008,
}

/// RFC 1813 §2.5: `ftype3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum Ftype3 {
    Reg = 1,
    Dir = 2,
    Blk = 3,
    Chr = 4,
    Lnk = 5,
    Sock = 6,
    Fifo = 7,
}

/// RFC 1813 §2.5: `specdata3`, the major and minor device numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct SpecData3 {
    pub specdata1: u32,
    pub specdata2: u32,
}

/// RFC 1813 §2.5: `nfs_fh3`, an opaque file handle of at most
/// [`NFS3_FHSIZE`] bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct NfsFh3 {
    #[xdr(max = NFS3_FHSIZE)]
    pub data: Bytes,
}

/// RFC 1813 §2.5: `nfstime3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord, Pack, Unpack)]
pub struct NfsTime3 {
    pub seconds: u32,
    pub nseconds: u32,
}

/// RFC 1813 §2.5: `fattr3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct Fattr3 {
    pub type_: Ftype3,
    pub mode: Mode3,
    pub nlink: u32,
    pub uid: Uid3,
    pub gid: Gid3,
    pub size: Size3,
    pub used: Size3,
    pub rdev: SpecData3,
    pub fsid: u64,
    pub fileid: FileId3,
    pub atime: NfsTime3,
    pub mtime: NfsTime3,
    pub ctime: NfsTime3,
}

/// RFC 1813 §2.5: `post_op_attr` (`attributes_follow`).
pub type PostOpAttr = Option<Fattr3>;

/// RFC 1813 §2.5: `wcc_attr`, the attributes kept for weak cache
/// consistency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct WccAttr {
    pub size: Size3,
    pub mtime: NfsTime3,
    pub ctime: NfsTime3,
}

/// RFC 1813 §2.5: `pre_op_attr` (`attributes_follow`).
pub type PreOpAttr = Option<WccAttr>;

/// RFC 1813 §2.5: `wcc_data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct WccData {
    pub before: PreOpAttr,
    pub after: PostOpAttr,
}

/// RFC 1813 §2.5: `post_op_fh3` (`handle_follows`).
pub type PostOpFh3 = Option<NfsFh3>;

/// RFC 1813 §2.5: `time_how`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum TimeHow {
    DontChange = 0,
    SetToServerTime = 1,
    SetToClientTime = 2,
}

/// RFC 1813 §2.5: `set_mode3` (`set_it`).
pub type SetMode3 = Option<Mode3>;
/// RFC 1813 §2.5: `set_uid3`.
pub type SetUid3 = Option<Uid3>;
/// RFC 1813 §2.5: `set_gid3`.
pub type SetGid3 = Option<Gid3>;
/// RFC 1813 §2.5: `set_size3`.
pub type SetSize3 = Option<Size3>;

/// RFC 1813 §2.5: `set_atime` and `set_mtime`, switched on [`TimeHow`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub enum SetTime3 {
    #[default]
    #[xdr(value = TimeHow::DontChange)]
    DontChange,
    #[xdr(value = TimeHow::SetToServerTime)]
    ServerTime,
    #[xdr(value = TimeHow::SetToClientTime)]
    ClientTime(NfsTime3),
}

/// RFC 1813 §2.5: `sattr3`. The default changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct Sattr3 {
    pub mode: SetMode3,
    pub uid: SetUid3,
    pub gid: SetGid3,
    pub size: SetSize3,
    pub atime: SetTime3,
    pub mtime: SetTime3,
}

/// RFC 1813 §2.5: `diropargs3`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct DirOpArgs3 {
    pub dir: NfsFh3,
    #[xdr(max = NFS3_NAME_BOUND)]
    pub name: Filename3,
}

// ---------------------------------------------------------------------------
// Result envelope and linked lists
// ---------------------------------------------------------------------------

/// A procedure result: `union switch (nfsstat3 status) { case NFS3_OK: T
/// resok; default: F resfail; }` (for example RFC 1813 §3.3.3,
/// `LOOKUP3res`). `F` is `()` where the failure arm is void.
#[derive(Debug, Clone, PartialEq)]
pub enum Res3<T, F> {
    Ok(T),
    /// A status other than NFS3_OK and the failure arm's data.
    Fail(NfsStat3, F),
}

impl<T, F> Res3<T, F> {
    pub fn status(&self) -> NfsStat3 {
        match self {
            Res3::Ok(_) => NfsStat3::Ok,
            Res3::Fail(s, _) => *s,
        }
    }

    /// The OK arm, or the status and failure data.
    pub fn into_result(self) -> Result<T, (NfsStat3, F)> {
        match self {
            Res3::Ok(v) => Ok(v),
            Res3::Fail(s, f) => Err((s, f)),
        }
    }
}

impl<T: Pack, F: Pack> Pack for Res3<T, F> {
    fn pack(&self, e: &mut Encoder) {
        match self {
            Res3::Ok(v) => {
                NfsStat3::Ok.pack(e);
                v.pack(e)
            }
            Res3::Fail(s, f) => {
                // A failure must not claim NFS3_OK: the peer would decode
                // the failure arm as the OK arm.
                let s = if *s == NfsStat3::Ok {
                    NfsStat3::ServerFault
                } else {
                    *s
                };
                s.pack(e);
                f.pack(e)
            }
        }
    }
}

impl<T: Unpack, F: Unpack> Unpack for Res3<T, F> {
    fn unpack(d: &mut Decoder) -> xdr::Result<Self> {
        match NfsStat3::unpack(d)? {
            NfsStat3::Ok => Ok(Res3::Ok(T::unpack(d)?)),
            s => Ok(Res3::Fail(s, F::unpack(d)?)),
        }
    }
}

/// A chain of optional-data pointers, `T *first` where each `T` ends in
/// `T *next` (RFC 4506 §4.19; for example `entry3` in RFC 1813 §3.3.16 or
/// `mountbody` in Appendix I). On the wire every element is preceded by
/// TRUE and the chain ends with FALSE.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct List<T>(pub Vec<T>);

impl<T> Default for List<T> {
    fn default() -> Self {
        List(Vec::new())
    }
}

impl<T: Pack> Pack for List<T> {
    fn pack(&self, e: &mut Encoder) {
        for v in &self.0 {
            e.bool(true);
            v.pack(e);
        }
        e.bool(false);
    }
}

impl<T: Unpack> Unpack for List<T> {
    fn unpack(d: &mut Decoder) -> xdr::Result<Self> {
        // Every element consumes at least its 4-byte "value follows", so
        // the loop is bounded by the message and nothing is allocated
        // ahead of the data.
        let mut v = Vec::new();
        while d.bool()? {
            v.push(T::unpack(d)?);
        }
        Ok(List(v))
    }
}

impl<T> From<Vec<T>> for List<T> {
    fn from(v: Vec<T>) -> Self {
        List(v)
    }
}

// ---------------------------------------------------------------------------
// §3.3.1 GETATTR, §3.3.2 SETATTR
// ---------------------------------------------------------------------------

/// RFC 1813 §3.3.1: `GETATTR3args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct GetAttr3Args {
    pub object: NfsFh3,
}

/// RFC 1813 §3.3.1: `GETATTR3resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct GetAttr3ResOk {
    pub obj_attributes: Fattr3,
}

/// RFC 1813 §3.3.1: `GETATTR3res`.
pub type GetAttr3Res = Res3<GetAttr3ResOk, ()>;

/// RFC 1813 §3.3.2: `sattrguard3` (`check`): the ctime the object must
/// still have.
pub type SattrGuard3 = Option<NfsTime3>;

/// RFC 1813 §3.3.2: `SETATTR3args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct SetAttr3Args {
    pub object: NfsFh3,
    pub new_attributes: Sattr3,
    pub guard: SattrGuard3,
}

/// RFC 1813 §3.3.2: `SETATTR3resok` and `SETATTR3resfail` (both `obj_wcc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Pack, Unpack)]
pub struct SetAttr3ResBody {
    pub obj_wcc: WccData,
}

/// RFC 1813 §3.3.2: `SETATTR3res`.
pub type SetAttr3Res = Res3<SetAttr3ResBody, SetAttr3ResBody>;

// ---------------------------------------------------------------------------
// §3.3.3 LOOKUP, §3.3.4 ACCESS, §3.3.5 READLINK
// ---------------------------------------------------------------------------

/// RFC 1813 §3.3.3: `LOOKUP3args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Lookup3Args {
    pub what: DirOpArgs3,
}

/// RFC 1813 §3.3.3: `LOOKUP3resok`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Lookup3ResOk {
    pub object: NfsFh3,
    pub obj_attributes: PostOpAttr,
    pub dir_attributes: PostOpAttr,
}

/// RFC 1813 §3.3.3: `LOOKUP3resfail`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Pack, Unpack)]
pub struct Lookup3ResFail {
    pub dir_attributes: PostOpAttr,
}

/// RFC 1813 §3.3.3: `LOOKUP3res`.
pub type Lookup3Res = Res3<Lookup3ResOk, Lookup3ResFail>;

/// RFC 1813 §3.3.4: `ACCESS3_*` permission bits.
pub const ACCESS3_READ: u32 = 0x0001;
pub const ACCESS3_LOOKUP: u32 = 0x0002;
pub const ACCESS3_MODIFY: u32 = 0x0004;
pub const ACCESS3_EXTEND: u32 = 0x0008;
pub const ACCESS3_DELETE: u32 = 0x0010;
pub const ACCESS3_EXECUTE: u32 = 0x0020;

/// RFC 1813 §3.3.4: `ACCESS3args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Access3Args {
    pub object: NfsFh3,
    pub access: u32,
}

/// RFC 1813 §3.3.4: `ACCESS3resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct Access3ResOk {
    pub obj_attributes: PostOpAttr,
    pub access: u32,
}

/// RFC 1813 §3.3.4: `ACCESS3resfail`, and every failure arm that holds
/// only the object's `post_op_attr` (READLINK, READ, FSSTAT, FSINFO,
/// PATHCONF).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Pack, Unpack)]
pub struct ObjAttrFail3 {
    pub obj_attributes: PostOpAttr,
}

/// RFC 1813 §3.3.4: `ACCESS3res`.
pub type Access3Res = Res3<Access3ResOk, ObjAttrFail3>;

/// RFC 1813 §3.3.5: `READLINK3args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct ReadLink3Args {
    pub symlink: NfsFh3,
}

/// RFC 1813 §3.3.5: `READLINK3resok`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct ReadLink3ResOk {
    pub symlink_attributes: PostOpAttr,
    #[xdr(max = NFS3_PATH_BOUND)]
    pub data: NfsPath3,
}

/// RFC 1813 §3.3.5: `READLINK3res` (the failure arm is
/// `symlink_attributes`).
pub type ReadLink3Res = Res3<ReadLink3ResOk, ObjAttrFail3>;

// ---------------------------------------------------------------------------
// §3.3.6 READ, §3.3.7 WRITE
// ---------------------------------------------------------------------------

/// RFC 1813 §3.3.6: `READ3args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Read3Args {
    pub file: NfsFh3,
    pub offset: Offset3,
    pub count: Count3,
}

/// RFC 1813 §3.3.6: `READ3resok`. `data` is a zero-copy slice of the
/// reply buffer, or a range of a file sent from the page cache.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Read3ResOk {
    pub file_attributes: PostOpAttr,
    pub count: Count3,
    pub eof: bool,
    pub data: xdr::Payload,
}

/// RFC 1813 §3.3.6: `READ3res` (the failure arm is `file_attributes`).
pub type Read3Res = Res3<Read3ResOk, ObjAttrFail3>;

/// RFC 1813 §3.3.7: `stable_how`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Pack, Unpack)]
#[repr(u32)]
pub enum StableHow {
    Unstable = 0,
    DataSync = 1,
    FileSync = 2,
}

/// RFC 1813 §3.3.7: `WRITE3args`. `data` joins the gather list without
/// being copied when large.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Write3Args {
    pub file: NfsFh3,
    pub offset: Offset3,
    pub count: Count3,
    pub stable: StableHow,
    pub data: Bytes,
}

/// RFC 1813 §3.3.7: `WRITE3resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct Write3ResOk {
    pub file_wcc: WccData,
    pub count: Count3,
    pub committed: StableHow,
    pub verf: WriteVerf3,
}

/// RFC 1813 §3.3.7: `WRITE3resfail`, and the other failure arms holding
/// only a file's `wcc_data` (COMMIT).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Pack, Unpack)]
pub struct FileWccFail3 {
    pub file_wcc: WccData,
}

/// RFC 1813 §3.3.7: `WRITE3res`.
pub type Write3Res = Res3<Write3ResOk, FileWccFail3>;

// ---------------------------------------------------------------------------
// §3.3.8 CREATE, §3.3.9 MKDIR, §3.3.10 SYMLINK, §3.3.11 MKNOD
// ---------------------------------------------------------------------------

/// RFC 1813 §3.3.8: `createmode3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum CreateMode3 {
    Unchecked = 0,
    Guarded = 1,
    Exclusive = 2,
}

/// RFC 1813 §3.3.8: `createhow3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
pub enum CreateHow3 {
    #[xdr(value = CreateMode3::Unchecked)]
    Unchecked(Sattr3),
    #[xdr(value = CreateMode3::Guarded)]
    Guarded(Sattr3),
    #[xdr(value = CreateMode3::Exclusive)]
    Exclusive(CreateVerf3),
}

/// RFC 1813 §3.3.8: `CREATE3args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Create3Args {
    pub where_: DirOpArgs3,
    pub how: CreateHow3,
}

/// RFC 1813 §3.3.8: `CREATE3resok`, also `MKDIR3resok`, `SYMLINK3resok`
/// and `MKNOD3resok`, which have the same shape.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Create3ResOk {
    pub obj: PostOpFh3,
    pub obj_attributes: PostOpAttr,
    pub dir_wcc: WccData,
}

/// RFC 1813 §3.3.8: `CREATE3resfail`, and every failure arm holding only
/// the directory's `wcc_data` (MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Pack, Unpack)]
pub struct DirWcc3 {
    pub dir_wcc: WccData,
}

/// RFC 1813 §3.3.8: `CREATE3res`.
pub type Create3Res = Res3<Create3ResOk, DirWcc3>;

/// RFC 1813 §3.3.9: `MKDIR3args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct MkDir3Args {
    pub where_: DirOpArgs3,
    pub attributes: Sattr3,
}

/// RFC 1813 §3.3.9: `MKDIR3res`.
pub type MkDir3Res = Res3<Create3ResOk, DirWcc3>;

/// RFC 1813 §3.3.10: `symlinkdata3`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct SymlinkData3 {
    pub symlink_attributes: Sattr3,
    #[xdr(max = NFS3_PATH_BOUND)]
    pub symlink_data: NfsPath3,
}

/// RFC 1813 §3.3.10: `SYMLINK3args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Symlink3Args {
    pub where_: DirOpArgs3,
    pub symlink: SymlinkData3,
}

/// RFC 1813 §3.3.10: `SYMLINK3res`.
pub type Symlink3Res = Res3<Create3ResOk, DirWcc3>;

/// RFC 1813 §3.3.11: `devicedata3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct DeviceData3 {
    pub dev_attributes: Sattr3,
    pub spec: SpecData3,
}

/// RFC 1813 §3.3.11: `mknoddata3`, switched on [`Ftype3`]. Regular files,
/// directories and symbolic links fall in the `default: void` arm so the
/// server can answer NFS3ERR_BADTYPE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
pub enum MknodData3 {
    #[xdr(value = Ftype3::Chr)]
    Chr(DeviceData3),
    #[xdr(value = Ftype3::Blk)]
    Blk(DeviceData3),
    #[xdr(value = Ftype3::Sock)]
    Sock(Sattr3),
    #[xdr(value = Ftype3::Fifo)]
    Fifo(Sattr3),
    #[xdr(default)]
    Other(Ftype3),
}

/// RFC 1813 §3.3.11: `MKNOD3args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Mknod3Args {
    pub where_: DirOpArgs3,
    pub what: MknodData3,
}

/// RFC 1813 §3.3.11: `MKNOD3res`.
pub type Mknod3Res = Res3<Create3ResOk, DirWcc3>;

// ---------------------------------------------------------------------------
// §3.3.12 REMOVE, §3.3.13 RMDIR, §3.3.14 RENAME, §3.3.15 LINK
// ---------------------------------------------------------------------------

/// RFC 1813 §3.3.12: `REMOVE3args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Remove3Args {
    pub object: DirOpArgs3,
}

/// RFC 1813 §3.3.12: `REMOVE3res` (both arms are `dir_wcc`).
pub type Remove3Res = Res3<DirWcc3, DirWcc3>;

/// RFC 1813 §3.3.13: `RMDIR3args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct RmDir3Args {
    pub object: DirOpArgs3,
}

/// RFC 1813 §3.3.13: `RMDIR3res` (both arms are `dir_wcc`).
pub type RmDir3Res = Res3<DirWcc3, DirWcc3>;

/// RFC 1813 §3.3.14: `RENAME3args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Rename3Args {
    pub from: DirOpArgs3,
    pub to: DirOpArgs3,
}

/// RFC 1813 §3.3.14: `RENAME3resok` and `RENAME3resfail`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Pack, Unpack)]
pub struct Rename3ResBody {
    pub fromdir_wcc: WccData,
    pub todir_wcc: WccData,
}

/// RFC 1813 §3.3.14: `RENAME3res`.
pub type Rename3Res = Res3<Rename3ResBody, Rename3ResBody>;

/// RFC 1813 §3.3.15: `LINK3args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Link3Args {
    pub file: NfsFh3,
    pub link: DirOpArgs3,
}

/// RFC 1813 §3.3.15: `LINK3resok` and `LINK3resfail`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Pack, Unpack)]
pub struct Link3ResBody {
    pub file_attributes: PostOpAttr,
    pub linkdir_wcc: WccData,
}

/// RFC 1813 §3.3.15: `LINK3res`.
pub type Link3Res = Res3<Link3ResBody, Link3ResBody>;

// ---------------------------------------------------------------------------
// §3.3.16 READDIR, §3.3.17 READDIRPLUS
// ---------------------------------------------------------------------------

/// RFC 1813 §3.3.16: `READDIR3args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct ReadDir3Args {
    pub dir: NfsFh3,
    pub cookie: Cookie3,
    pub cookieverf: CookieVerf3,
    pub count: Count3,
}

/// RFC 1813 §3.3.16: `entry3` without its `nextentry` pointer, which
/// [`List`] supplies.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct Entry3 {
    pub fileid: FileId3,
    #[xdr(max = NFS3_NAME_BOUND)]
    pub name: Filename3,
    pub cookie: Cookie3,
}

impl Entry3 {
    /// Encoded size of this entry within a `dirlist3`, including its
    /// leading "value follows": lets a server stop before `count`.
    pub fn wire_len(&self) -> usize {
        4 + 8 + 4 + self.name.len() + xdr::pad_len(self.name.len()) + 8
    }
}

/// RFC 1813 §3.3.16: `dirlist3`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Pack, Unpack)]
pub struct DirList3 {
    pub entries: List<Entry3>,
    pub eof: bool,
}

/// RFC 1813 §3.3.16: `READDIR3resok`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct ReadDir3ResOk {
    pub dir_attributes: PostOpAttr,
    pub cookieverf: CookieVerf3,
    pub reply: DirList3,
}

/// RFC 1813 §3.3.16: `READDIR3resfail`, also `READDIRPLUS3resfail`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Pack, Unpack)]
pub struct DirAttrFail3 {
    pub dir_attributes: PostOpAttr,
}

/// RFC 1813 §3.3.16: `READDIR3res`.
pub type ReadDir3Res = Res3<ReadDir3ResOk, DirAttrFail3>;

/// RFC 1813 §3.3.17: `READDIRPLUS3args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct ReadDirPlus3Args {
    pub dir: NfsFh3,
    pub cookie: Cookie3,
    pub cookieverf: CookieVerf3,
    pub dircount: Count3,
    pub maxcount: Count3,
}

/// RFC 1813 §3.3.17: `entryplus3` without its `nextentry` pointer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct EntryPlus3 {
    pub fileid: FileId3,
    #[xdr(max = NFS3_NAME_BOUND)]
    pub name: Filename3,
    pub cookie: Cookie3,
    pub name_attributes: PostOpAttr,
    pub name_handle: PostOpFh3,
}

impl EntryPlus3 {
    /// Encoded size of this entry within a `dirlistplus3`, including its
    /// leading "value follows" (counted against `maxcount`).
    pub fn wire_len(&self) -> usize {
        let attrs = if self.name_attributes.is_some() {
            4 + 84
        } else {
            4
        };
        let fh = match &self.name_handle {
            Some(fh) => 4 + 4 + fh.data.len() + xdr::pad_len(fh.data.len()),
            None => 4,
        };
        4 + 8 + 4 + self.name.len() + xdr::pad_len(self.name.len()) + 8 + attrs + fh
    }
}

/// RFC 1813 §3.3.17: `dirlistplus3`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Pack, Unpack)]
pub struct DirListPlus3 {
    pub entries: List<EntryPlus3>,
    pub eof: bool,
}

/// RFC 1813 §3.3.17: `READDIRPLUS3resok`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct ReadDirPlus3ResOk {
    pub dir_attributes: PostOpAttr,
    pub cookieverf: CookieVerf3,
    pub reply: DirListPlus3,
}

/// RFC 1813 §3.3.17: `READDIRPLUS3res`.
pub type ReadDirPlus3Res = Res3<ReadDirPlus3ResOk, DirAttrFail3>;

// ---------------------------------------------------------------------------
// §3.3.18 FSSTAT, §3.3.19 FSINFO, §3.3.20 PATHCONF, §3.3.21 COMMIT
// ---------------------------------------------------------------------------

/// RFC 1813 §3.3.18: `FSSTAT3args`, also `FSINFO3args` (`fsroot`).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct FsRoot3Args {
    pub fsroot: NfsFh3,
}

/// RFC 1813 §3.3.18: `FSSTAT3resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct FsStat3ResOk {
    pub obj_attributes: PostOpAttr,
    pub tbytes: Size3,
    pub fbytes: Size3,
    pub abytes: Size3,
    pub tfiles: Size3,
    pub ffiles: Size3,
    pub afiles: Size3,
    pub invarsec: u32,
}

/// RFC 1813 §3.3.18: `FSSTAT3res`.
pub type FsStat3Res = Res3<FsStat3ResOk, ObjAttrFail3>;

/// RFC 1813 §3.3.19: `FSF3_*` property bits.
pub const FSF3_LINK: u32 = 0x0001;
pub const FSF3_SYMLINK: u32 = 0x0002;
pub const FSF3_HOMOGENEOUS: u32 = 0x0008;
pub const FSF3_CANSETTIME: u32 = 0x0010;

/// RFC 1813 §3.3.19: `FSINFO3resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct FsInfo3ResOk {
    pub obj_attributes: PostOpAttr,
    pub rtmax: u32,
    pub rtpref: u32,
    pub rtmult: u32,
    pub wtmax: u32,
    pub wtpref: u32,
    pub wtmult: u32,
    pub dtpref: u32,
    pub maxfilesize: Size3,
    pub time_delta: NfsTime3,
    pub properties: u32,
}

/// RFC 1813 §3.3.19: `FSINFO3res`.
pub type FsInfo3Res = Res3<FsInfo3ResOk, ObjAttrFail3>;

/// RFC 1813 §3.3.20: `PATHCONF3args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct PathConf3Args {
    pub object: NfsFh3,
}

/// RFC 1813 §3.3.20: `PATHCONF3resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct PathConf3ResOk {
    pub obj_attributes: PostOpAttr,
    pub linkmax: u32,
    pub name_max: u32,
    pub no_trunc: bool,
    pub chown_restricted: bool,
    pub case_insensitive: bool,
    pub case_preserving: bool,
}

/// RFC 1813 §3.3.20: `PATHCONF3res`.
pub type PathConf3Res = Res3<PathConf3ResOk, ObjAttrFail3>;

/// RFC 1813 §3.3.21: `COMMIT3args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Commit3Args {
    pub file: NfsFh3,
    pub offset: Offset3,
    pub count: Count3,
}

/// RFC 1813 §3.3.21: `COMMIT3resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct Commit3ResOk {
    pub file_wcc: WccData,
    pub verf: WriteVerf3,
}

/// RFC 1813 §3.3.21: `COMMIT3res`.
pub type Commit3Res = Res3<Commit3ResOk, FileWccFail3>;

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip<T: Pack + Unpack + PartialEq + std::fmt::Debug>(v: &T) -> Bytes {
        let b = xdr::to_bytes(v);
        assert_eq!(&xdr::from_bytes::<T>(b.clone()).unwrap(), v);
        // Every strict prefix fails cleanly.
        for n in 0..b.len() {
            assert!(xdr::from_bytes::<T>(b.slice(..n)).is_err(), "prefix {n}");
        }
        b
    }

    fn fh(n: u8) -> NfsFh3 {
        NfsFh3 {
            data: Bytes::from(vec![n; 20]),
        }
    }

    fn attrs() -> Fattr3 {
        Fattr3 {
            type_: Ftype3::Reg,
            mode: 0o644,
            nlink: 1,
            uid: 1000,
            gid: 100,
            size: 12345,
            used: 16384,
            rdev: SpecData3::default(),
            fsid: 7,
            fileid: 42,
            atime: NfsTime3 {
                seconds: 1,
                nseconds: 2,
            },
            mtime: NfsTime3 {
                seconds: 3,
                nseconds: 4,
            },
            ctime: NfsTime3 {
                seconds: 5,
                nseconds: 6,
            },
        }
    }

    fn wcc() -> WccData {
        WccData {
            before: Some(WccAttr {
                size: 1,
                mtime: NfsTime3::default(),
                ctime: NfsTime3::default(),
            }),
            after: Some(attrs()),
        }
    }

    fn name(s: &str) -> DirOpArgs3 {
        DirOpArgs3 {
            dir: fh(1),
            name: Bytes::copy_from_slice(s.as_bytes()),
        }
    }

    #[test]
    fn fattr3_is_84_bytes() {
        assert_eq!(roundtrip(&attrs()).len(), 84);
        assert_eq!(<Fattr3 as Unpack>::MIN_WIRE, 84);
    }

    #[test]
    fn sattr3_encoding() {
        // Nothing set: six FALSE/DONT_CHANGE words.
        assert_eq!(&roundtrip(&Sattr3::default())[..], &[0u8; 24][..]);
        let s = Sattr3 {
            mode: Some(0o755),
            uid: None,
            gid: Some(5),
            size: Some(1 << 33),
            atime: SetTime3::ServerTime,
            mtime: SetTime3::ClientTime(NfsTime3 {
                seconds: 9,
                nseconds: 10,
            }),
        };
        let b = roundtrip(&s);
        let words: Vec<u32> = b
            .chunks(4)
            .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        assert_eq!(words, [1, 0o755, 0, 1, 5, 1, 2, 0, 1, 2, 9, 10]);
        // time_how 3 is not a valid discriminant.
        let mut e = Encoder::new();
        e.u32(3);
        assert!(xdr::from_bytes::<SetTime3>(e.to_bytes()).is_err());
    }

    #[test]
    fn file_handle_is_bounded() {
        roundtrip(&NfsFh3 {
            data: Bytes::from(vec![9; NFS3_FHSIZE]),
        });
        let b = xdr::to_bytes(&Bytes::from(vec![9; NFS3_FHSIZE + 1]));
        assert!(matches!(
            xdr::from_bytes::<NfsFh3>(b),
            Err(xdr::Error::TooLong { .. })
        ));
        let b = xdr::to_bytes(&DirOpArgs3 {
            dir: fh(1),
            name: Bytes::from(vec![b'x'; NFS3_NAME_BOUND + 1]),
        });
        assert!(xdr::from_bytes::<DirOpArgs3>(b).is_err());
    }

    #[test]
    fn args_roundtrip() {
        roundtrip(&GetAttr3Args { object: fh(2) });
        roundtrip(&SetAttr3Args {
            object: fh(2),
            new_attributes: Sattr3 {
                size: Some(0),
                ..Default::default()
            },
            guard: Some(NfsTime3 {
                seconds: 1,
                nseconds: 0,
            }),
        });
        roundtrip(&Lookup3Args { what: name("a") });
        roundtrip(&Access3Args {
            object: fh(3),
            access: ACCESS3_READ | ACCESS3_MODIFY,
        });
        roundtrip(&ReadLink3Args { symlink: fh(3) });
        roundtrip(&Read3Args {
            file: fh(4),
            offset: 1 << 40,
            count: 65536,
        });
        roundtrip(&Write3Args {
            file: fh(4),
            offset: 4096,
            count: 5,
            stable: StableHow::DataSync,
            data: Bytes::from_static(b"hello"),
        });
        for how in [
            CreateHow3::Unchecked(Sattr3::default()),
            CreateHow3::Guarded(Sattr3 {
                mode: Some(0o600),
                ..Default::default()
            }),
            CreateHow3::Exclusive([7; 8]),
        ] {
            roundtrip(&Create3Args {
                where_: name("f"),
                how,
            });
        }
        roundtrip(&MkDir3Args {
            where_: name("d"),
            attributes: Sattr3::default(),
        });
        roundtrip(&Symlink3Args {
            where_: name("l"),
            symlink: SymlinkData3 {
                symlink_attributes: Sattr3::default(),
                symlink_data: Bytes::from_static(b"../target"),
            },
        });
        for what in [
            MknodData3::Chr(DeviceData3 {
                dev_attributes: Sattr3::default(),
                spec: SpecData3 {
                    specdata1: 1,
                    specdata2: 3,
                },
            }),
            MknodData3::Fifo(Sattr3::default()),
            MknodData3::Other(Ftype3::Reg),
        ] {
            roundtrip(&Mknod3Args {
                where_: name("n"),
                what,
            });
        }
        roundtrip(&Remove3Args { object: name("f") });
        roundtrip(&RmDir3Args { object: name("d") });
        roundtrip(&Rename3Args {
            from: name("a"),
            to: name("b"),
        });
        roundtrip(&Link3Args {
            file: fh(5),
            link: name("h"),
        });
        roundtrip(&ReadDir3Args {
            dir: fh(1),
            cookie: 0,
            cookieverf: [0; 8],
            count: 4096,
        });
        roundtrip(&ReadDirPlus3Args {
            dir: fh(1),
            cookie: 77,
            cookieverf: [1; 8],
            dircount: 4096,
            maxcount: 32768,
        });
        roundtrip(&FsRoot3Args { fsroot: fh(1) });
        roundtrip(&PathConf3Args { object: fh(1) });
        roundtrip(&Commit3Args {
            file: fh(4),
            offset: 0,
            count: 0,
        });
    }

    #[test]
    fn results_roundtrip() {
        roundtrip(&GetAttr3Res::Ok(GetAttr3ResOk {
            obj_attributes: attrs(),
        }));
        assert_eq!(
            &roundtrip(&GetAttr3Res::Fail(NfsStat3::Stale, ()))[..],
            &[0, 0, 0, 70][..]
        );
        roundtrip(&SetAttr3Res::Fail(
            NfsStat3::NotSync,
            SetAttr3ResBody { obj_wcc: wcc() },
        ));
        roundtrip(&Lookup3Res::Ok(Lookup3ResOk {
            object: fh(9),
            obj_attributes: Some(attrs()),
            dir_attributes: None,
        }));
        roundtrip(&Lookup3Res::Fail(
            NfsStat3::Noent,
            Lookup3ResFail {
                dir_attributes: Some(attrs()),
            },
        ));
        roundtrip(&Access3Res::Ok(Access3ResOk {
            obj_attributes: None,
            access: ACCESS3_READ,
        }));
        roundtrip(&ReadLink3Res::Ok(ReadLink3ResOk {
            symlink_attributes: None,
            data: Bytes::from_static(b"/x/y"),
        }));
        roundtrip(&Read3Res::Ok(Read3ResOk {
            file_attributes: Some(attrs()),
            count: 3,
            eof: true,
            data: Bytes::from_static(b"abc").into(),
        }));
        roundtrip(&Write3Res::Ok(Write3ResOk {
            file_wcc: wcc(),
            count: 5,
            committed: StableHow::FileSync,
            verf: [3; 8],
        }));
        roundtrip(&Write3Res::Fail(
            NfsStat3::Nospc,
            FileWccFail3 {
                file_wcc: WccData::default(),
            },
        ));
        roundtrip(&Create3Res::Ok(Create3ResOk {
            obj: Some(fh(6)),
            obj_attributes: Some(attrs()),
            dir_wcc: wcc(),
        }));
        roundtrip(&MkDir3Res::Fail(
            NfsStat3::Exist,
            DirWcc3 { dir_wcc: wcc() },
        ));
        roundtrip(&Remove3Res::Ok(DirWcc3::default()));
        roundtrip(&Rename3Res::Ok(Rename3ResBody::default()));
        roundtrip(&Link3Res::Fail(NfsStat3::Xdev, Link3ResBody::default()));
        roundtrip(&FsStat3Res::Ok(FsStat3ResOk {
            obj_attributes: None,
            tbytes: 1 << 40,
            fbytes: 1 << 39,
            abytes: 1 << 38,
            tfiles: 1000,
            ffiles: 900,
            afiles: 800,
            invarsec: 0,
        }));
        roundtrip(&FsInfo3Res::Ok(FsInfo3ResOk {
            obj_attributes: None,
            rtmax: 1 << 20,
            rtpref: 1 << 20,
            rtmult: 4096,
            wtmax: 1 << 20,
            wtpref: 1 << 20,
            wtmult: 4096,
            dtpref: 65536,
            maxfilesize: u64::MAX,
            time_delta: NfsTime3 {
                seconds: 0,
                nseconds: 1,
            },
            properties: FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME,
        }));
        roundtrip(&PathConf3Res::Ok(PathConf3ResOk {
            obj_attributes: None,
            linkmax: 32000,
            name_max: 255,
            no_trunc: true,
            chown_restricted: true,
            case_insensitive: false,
            case_preserving: true,
        }));
        roundtrip(&Commit3Res::Ok(Commit3ResOk {
            file_wcc: wcc(),
            verf: [8; 8],
        }));
    }

    #[test]
    fn failure_never_encodes_as_ok() {
        let b = xdr::to_bytes(&GetAttr3Res::Fail(NfsStat3::Ok, ()));
        assert_eq!(
            xdr::from_bytes::<GetAttr3Res>(b).unwrap().status(),
            NfsStat3::ServerFault
        );
    }

    #[test]
    fn readdir_lists() {
        let ok = ReadDir3ResOk {
            dir_attributes: None,
            cookieverf: [2; 8],
            reply: DirList3 {
                entries: List(vec![
                    Entry3 {
                        fileid: 10,
                        name: Bytes::from_static(b"."),
                        cookie: 1,
                    },
                    Entry3 {
                        fileid: 11,
                        name: Bytes::from_static(b"hello"),
                        cookie: 2,
                    },
                ]),
                eof: true,
            },
        };
        let b = roundtrip(&ReadDir3Res::Ok(ok.clone()));
        // status, post_op_attr, verifier, then the entries' own bytes and
        // the terminating FALSE and eof.
        let entries: usize = ok.reply.entries.0.iter().map(Entry3::wire_len).sum();
        assert_eq!(b.len(), 4 + 4 + 8 + entries + 4 + 4);

        let plus = ReadDirPlus3ResOk {
            dir_attributes: Some(attrs()),
            cookieverf: [0; 8],
            reply: DirListPlus3 {
                entries: List(vec![
                    EntryPlus3 {
                        fileid: 1,
                        name: Bytes::from_static(b"a"),
                        cookie: 5,
                        name_attributes: Some(attrs()),
                        name_handle: Some(fh(3)),
                    },
                    EntryPlus3 {
                        fileid: 2,
                        name: Bytes::from_static(b"bcdef"),
                        cookie: 6,
                        name_attributes: None,
                        name_handle: None,
                    },
                ]),
                eof: false,
            },
        };
        let b = roundtrip(&ReadDirPlus3Res::Ok(plus.clone()));
        let entries: usize = plus.reply.entries.0.iter().map(EntryPlus3::wire_len).sum();
        assert_eq!(b.len(), 4 + 4 + 84 + 8 + entries + 4 + 4);
        roundtrip(&ReadDir3Res::Ok(ReadDir3ResOk {
            dir_attributes: None,
            cookieverf: [0; 8],
            reply: DirList3::default(),
        }));
    }

    #[test]
    fn hostile_bytes_never_panic() {
        // A deterministic byte soup through every result type.
        let mut x: u32 = 0x1234_5678;
        for len in 0..400usize {
            let b: Vec<u8> = (0..len)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    // Bias towards small words so lists and unions go deep.
                    if i % 4 == 3 {
                        (x % 3) as u8
                    } else if x.is_multiple_of(5) {
                        x as u8
                    } else {
                        0
                    }
                })
                .collect();
            let b = Bytes::from(b);
            let _ = xdr::from_bytes::<ReadDirPlus3Res>(b.clone());
            let _ = xdr::from_bytes::<ReadDir3Res>(b.clone());
            let _ = xdr::from_bytes::<Create3Res>(b.clone());
            let _ = xdr::from_bytes::<Read3Res>(b.clone());
            let _ = xdr::from_bytes::<Write3Args>(b.clone());
            let _ = xdr::from_bytes::<SetAttr3Args>(b.clone());
            let _ = xdr::from_bytes::<Mknod3Args>(b.clone());
            let _ = xdr::from_bytes::<crate::mount::Exports>(b);
        }
    }

    #[test]
    fn procedure_names() {
        assert_eq!(NFSPROC3_NAMES[NFSPROC3_READDIRPLUS as usize], "READDIRPLUS");
        assert_eq!(NFSPROC3_NAMES[NFSPROC3_COMMIT as usize], "COMMIT");
    }
}
