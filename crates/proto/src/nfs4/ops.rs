//! Arguments and results of every COMPOUND operation: RFC 8881 §18
//! (NFSv4.1), the NFSv4.0 operations a 4.1 server must recognise and reject
//! (RFC 7530 §16), RFC 7862 §15 (NFSv4.2) and RFC 8276 §8 (extended
//! attributes).
//!
//! Field names follow the RFC without the per-structure prefixes
//! (`sa_sessionid` becomes `sessionid`). Results of the shape
//! `switch (nfsstat4) { case NFS4_OK: T; default: void; }` are [`Res4<T>`];
//! results with further arms have their own union types.

use bytes::Bytes;
use xdr::{Decoder, Encoder, Pack, Unpack};

use super::*;

// ---------------------------------------------------------------------------
// 18.1 ACCESS
// ---------------------------------------------------------------------------

/// RFC 8881 §18.1.1: `ACCESS4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct Access4Args {
    /// `ACCESS4_*` bits.
    pub access: u32,
}

/// RFC 8881 §18.1.2: `ACCESS4resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct Access4ResOk {
    pub supported: u32,
    pub access: u32,
}

/// RFC 8881 §18.1.2: `ACCESS4res`.
pub type Access4Res = Res4<Access4ResOk>;

// ---------------------------------------------------------------------------
// 18.2 CLOSE
// ---------------------------------------------------------------------------

/// RFC 8881 §18.2.1: `CLOSE4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct Close4Args {
    pub seqid: SeqId4,
    pub open_stateid: StateId4,
}

/// RFC 8881 §18.2.2: `CLOSE4res`; the OK arm is `open_stateid`.
pub type Close4Res = Res4<StateId4>;

// ---------------------------------------------------------------------------
// 18.3 COMMIT
// ---------------------------------------------------------------------------

/// RFC 8881 §18.3.1: `COMMIT4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct Commit4Args {
    pub offset: Offset4,
    pub count: Count4,
}

/// RFC 8881 §18.3.2: `COMMIT4resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct Commit4ResOk {
    pub writeverf: Verifier4,
}

/// RFC 8881 §18.3.2: `COMMIT4res`.
pub type Commit4Res = Res4<Commit4ResOk>;

// ---------------------------------------------------------------------------
// 18.4 CREATE
// ---------------------------------------------------------------------------

/// RFC 8881 §18.4.1: `createtype4`, switched on `nfs_ftype4`. Regular files
/// and the named-attribute types fall in the `default: void` arm so the
/// server can answer NFS4ERR_BADTYPE.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub enum CreateType4 {
    /// `NF4LNK`: the link text.
    #[xdr(value = NfsFtype4::Nf4Lnk)]
    Link(LinkText4),
    /// `NF4BLK`.
    #[xdr(value = NfsFtype4::Nf4Blk)]
    Blk(SpecData4),
    /// `NF4CHR`.
    #[xdr(value = NfsFtype4::Nf4Chr)]
    Chr(SpecData4),
    /// `NF4SOCK`.
    #[xdr(value = NfsFtype4::Nf4Sock)]
    Sock,
    /// `NF4FIFO`.
    #[xdr(value = NfsFtype4::Nf4Fifo)]
    Fifo,
    /// `NF4DIR`.
    #[xdr(value = NfsFtype4::Nf4Dir)]
    Dir,
    /// Any other type: `default: void`.
    #[xdr(default)]
    Other(u32),
}

/// RFC 8881 §18.4.1: `CREATE4args`.
#[derive(Debug, Clone, PartialEq, Pack, Unpack)]
pub struct Create4Args {
    pub objtype: CreateType4,
    pub objname: Component4,
    pub createattrs: Fattr4,
}

/// RFC 8881 §18.4.2: `CREATE4resok`.
#[derive(Debug, Clone, PartialEq, Pack, Unpack)]
pub struct Create4ResOk {
    pub cinfo: ChangeInfo4,
    pub attrset: Bitmap4,
}

/// RFC 8881 §18.4.2: `CREATE4res`.
pub type Create4Res = Res4<Create4ResOk>;

// ---------------------------------------------------------------------------
// 18.5 DELEGPURGE, 18.6 DELEGRETURN
// ---------------------------------------------------------------------------

/// RFC 8881 §18.5.1: `DELEGPURGE4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct DelegPurge4Args {
    pub clientid: ClientId4,
}

/// RFC 8881 §18.5.2: `DELEGPURGE4res`.
pub type DelegPurge4Res = Res4<()>;

/// RFC 8881 §18.6.1: `DELEGRETURN4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct DelegReturn4Args {
    pub deleg_stateid: StateId4,
}

/// RFC 8881 §18.6.2: `DELEGRETURN4res`.
pub type DelegReturn4Res = Res4<()>;

// ---------------------------------------------------------------------------
// 18.7 GETATTR, 18.8 GETFH
// ---------------------------------------------------------------------------

/// RFC 8881 §18.7.1: `GETATTR4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct GetAttr4Args {
    pub attr_request: Bitmap4,
}

/// RFC 8881 §18.7.2: `GETATTR4resok`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct GetAttr4ResOk {
    pub obj_attributes: Fattr4,
}

/// RFC 8881 §18.7.2: `GETATTR4res`.
pub type GetAttr4Res = Res4<GetAttr4ResOk>;

/// RFC 8881 §18.8.2: `GETFH4resok`. (GETFH has no arguments.)
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct GetFh4ResOk {
    pub object: NfsFh4,
}

/// RFC 8881 §18.8.2: `GETFH4res`.
pub type GetFh4Res = Res4<GetFh4ResOk>;

// ---------------------------------------------------------------------------
// 18.9 LINK
// ---------------------------------------------------------------------------

/// RFC 8881 §18.9.1: `LINK4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Link4Args {
    pub newname: Component4,
}

/// RFC 8881 §18.9.2: `LINK4resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct Link4ResOk {
    pub cinfo: ChangeInfo4,
}

/// RFC 8881 §18.9.2: `LINK4res`.
pub type Link4Res = Res4<Link4ResOk>;

// ---------------------------------------------------------------------------
// 18.10 LOCK, 18.11 LOCKT, 18.12 LOCKU
// ---------------------------------------------------------------------------

/// RFC 8881 §18.10.1: `LOCK4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Lock4Args {
    pub locktype: NfsLockType4,
    pub reclaim: bool,
    pub offset: Offset4,
    pub length: Length4,
    pub locker: Locker4,
}

/// RFC 8881 §18.10.2: `LOCK4resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct Lock4ResOk {
    pub lock_stateid: StateId4,
}

/// RFC 8881 §18.10.2: `LOCK4res`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub enum Lock4Res {
    #[xdr(value = NfsStat4::Nfs4Ok)]
    Ok(Lock4ResOk),
    /// NFS4ERR_DENIED: the conflicting lock.
    #[xdr(value = NfsStat4::Nfs4errDenied)]
    Denied(Lock4Denied),
    /// Any other status (never `Nfs4Ok` or `Nfs4errDenied`).
    #[xdr(default)]
    Err(NfsStat4),
}

/// RFC 8881 §18.11.1: `LOCKT4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct LockT4Args {
    pub locktype: NfsLockType4,
    pub offset: Offset4,
    pub length: Length4,
    pub owner: LockOwner4,
}

/// RFC 8881 §18.11.2: `LOCKT4res`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub enum LockT4Res {
    #[xdr(value = NfsStat4::Nfs4Ok)]
    Ok,
    /// NFS4ERR_DENIED: the conflicting lock.
    #[xdr(value = NfsStat4::Nfs4errDenied)]
    Denied(Lock4Denied),
    /// Any other status (never `Nfs4Ok` or `Nfs4errDenied`).
    #[xdr(default)]
    Err(NfsStat4),
}

/// RFC 8881 §18.12.1: `LOCKU4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct LockU4Args {
    pub locktype: NfsLockType4,
    pub seqid: SeqId4,
    pub lock_stateid: StateId4,
    pub offset: Offset4,
    pub length: Length4,
}

/// RFC 8881 §18.12.2: `LOCKU4res`; the OK arm is `lock_stateid`.
pub type LockU4Res = Res4<StateId4>;

// ---------------------------------------------------------------------------
// 18.13 LOOKUP, 18.14 LOOKUPP, 18.15 NVERIFY
// ---------------------------------------------------------------------------

/// RFC 8881 §18.13.1: `LOOKUP4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Lookup4Args {
    pub objname: Component4,
}

/// RFC 8881 §18.13.2: `LOOKUP4res`.
pub type Lookup4Res = Res4<()>;

/// RFC 8881 §18.14.2: `LOOKUPP4res`. (LOOKUPP has no arguments.)
pub type LookupP4Res = Res4<()>;

/// RFC 8881 §18.15.1: `NVERIFY4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct NVerify4Args {
    pub obj_attributes: Fattr4,
}

/// RFC 8881 §18.15.2: `NVERIFY4res`.
pub type NVerify4Res = Res4<()>;

// ---------------------------------------------------------------------------
// 18.16 OPEN
// ---------------------------------------------------------------------------

/// RFC 8881 §18.16.1: `creatverfattr`, for EXCLUSIVE4_1.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct CreatVerfAttr {
    pub verf: Verifier4,
    pub attrs: Fattr4,
}

/// RFC 8881 §18.16.1: `createhow4`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub enum CreateHow4 {
    #[xdr(value = CreateMode4::Unchecked4)]
    Unchecked(Fattr4),
    #[xdr(value = CreateMode4::Guarded4)]
    Guarded(Fattr4),
    #[xdr(value = CreateMode4::Exclusive4)]
    Exclusive(Verifier4),
    #[xdr(value = CreateMode4::Exclusive41)]
    Exclusive41(CreatVerfAttr),
}

/// RFC 8881 §18.16.1: `openflag4`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub enum OpenFlag4 {
    #[xdr(value = OpenType4::Open4Nocreate)]
    NoCreate,
    #[xdr(value = OpenType4::Open4Create)]
    Create(CreateHow4),
}

/// RFC 8881 §18.16.1: `open_claim_delegate_cur4`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct OpenClaimDelegateCur4 {
    pub delegate_stateid: StateId4,
    pub file: Component4,
}

/// RFC 8881 §18.16.1: `open_claim4`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub enum OpenClaim4 {
    /// CLAIM_NULL: open `file` in the current (directory) filehandle.
    #[xdr(value = OpenClaimType4::ClaimNull)]
    Null(Component4),
    /// CLAIM_PREVIOUS: reclaim after server restart; current fh is the file.
    #[xdr(value = OpenClaimType4::ClaimPrevious)]
    Previous(OpenDelegationType4),
    /// CLAIM_DELEGATE_CUR.
    #[xdr(value = OpenClaimType4::ClaimDelegateCur)]
    DelegateCur(OpenClaimDelegateCur4),
    /// CLAIM_DELEGATE_PREV.
    #[xdr(value = OpenClaimType4::ClaimDelegatePrev)]
    DelegatePrev(Component4),
    /// CLAIM_FH: the current filehandle is the file.
    #[xdr(value = OpenClaimType4::ClaimFh)]
    Fh,
    /// CLAIM_DELEG_CUR_FH.
    #[xdr(value = OpenClaimType4::ClaimDelegCurFh)]
    DelegCurFh(StateId4),
    /// CLAIM_DELEG_PREV_FH.
    #[xdr(value = OpenClaimType4::ClaimDelegPrevFh)]
    DelegPrevFh,
}

/// RFC 8881 §18.16.1: `OPEN4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Open4Args {
    pub seqid: SeqId4,
    /// `OPEN4_SHARE_ACCESS_*` plus `OPEN4_SHARE_ACCESS_WANT_*` bits.
    pub share_access: u32,
    /// `OPEN4_SHARE_DENY_*`.
    pub share_deny: u32,
    pub owner: OpenOwner4,
    pub openhow: OpenFlag4,
    pub claim: OpenClaim4,
}

/// RFC 8881 §18.16.2: `open_read_delegation4`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct OpenReadDelegation4 {
    pub stateid: StateId4,
    pub recall: bool,
    pub permissions: Nfsace4,
}

/// RFC 8881 §18.16.2: `open_write_delegation4`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct OpenWriteDelegation4 {
    pub stateid: StateId4,
    pub recall: bool,
    pub space_limit: NfsSpaceLimit4,
    pub permissions: Nfsace4,
}

/// RFC 8881 §18.16.2: `open_none_delegation4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub enum OpenNoneDelegation4 {
    /// WND4_CONTENTION: `ond_server_will_push_deleg`.
    #[xdr(value = WhyNoDelegation4::Wnd4Contention)]
    Contention(bool),
    /// WND4_RESOURCE: `ond_server_will_signal_avail`.
    #[xdr(value = WhyNoDelegation4::Wnd4Resource)]
    Resource(bool),
    /// Any other reason (never `Wnd4Contention` or `Wnd4Resource`).
    #[xdr(default)]
    Other(WhyNoDelegation4),
}

/// RFC 8881 §18.16.2: `open_delegation4`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub enum OpenDelegation4 {
    #[xdr(value = OpenDelegationType4::OpenDelegateNone)]
    None,
    #[xdr(value = OpenDelegationType4::OpenDelegateRead)]
    Read(OpenReadDelegation4),
    #[xdr(value = OpenDelegationType4::OpenDelegateWrite)]
    Write(OpenWriteDelegation4),
    #[xdr(value = OpenDelegationType4::OpenDelegateNoneExt)]
    NoneExt(OpenNoneDelegation4),
    /// RFC 9754 §5.2: a read delegation with the file's access time
    /// delegated (asked with OPEN4_SHARE_ACCESS_WANT_DELEG_TIMESTAMPS).
    #[xdr(value = OpenDelegationType4::OpenDelegateReadAttrsDeleg)]
    ReadAttrs(OpenReadDelegation4),
    /// RFC 9754 §5.2: a write delegation with the file's access and
    /// modification times delegated.
    #[xdr(value = OpenDelegationType4::OpenDelegateWriteAttrsDeleg)]
    WriteAttrs(OpenWriteDelegation4),
}

impl OpenDelegation4 {
    /// The stateid of a delegation granted, and whether it is a write
    /// one, of any of the four kinds.
    pub fn granted(&self) -> Option<(StateId4, bool)> {
        match self {
            OpenDelegation4::Read(d) | OpenDelegation4::ReadAttrs(d) => Some((d.stateid, false)),
            OpenDelegation4::Write(d) | OpenDelegation4::WriteAttrs(d) => Some((d.stateid, true)),
            OpenDelegation4::None | OpenDelegation4::NoneExt(_) => None,
        }
    }
}

/// RFC 8881 §18.16.2: `OPEN4resok`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Open4ResOk {
    pub stateid: StateId4,
    pub cinfo: ChangeInfo4,
    /// `OPEN4_RESULT_*` bits.
    pub rflags: u32,
    pub attrset: Bitmap4,
    pub delegation: OpenDelegation4,
}

/// RFC 8881 §18.16.2: `OPEN4res`.
pub type Open4Res = Res4<Open4ResOk>;

// ---------------------------------------------------------------------------
// 18.17 OPENATTR, OPEN_CONFIRM (4.0), 18.18 OPEN_DOWNGRADE
// ---------------------------------------------------------------------------

/// RFC 8881 §18.17.1: `OPENATTR4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct OpenAttr4Args {
    pub createdir: bool,
}

/// RFC 8881 §18.17.2: `OPENATTR4res`.
pub type OpenAttr4Res = Res4<()>;

/// RFC 7530 §16.18.1: `OPEN_CONFIRM4args` (NFSv4.0 only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct OpenConfirm4Args {
    pub open_stateid: StateId4,
    pub seqid: SeqId4,
}

/// RFC 7530 §16.18.2: `OPEN_CONFIRM4resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct OpenConfirm4ResOk {
    pub open_stateid: StateId4,
}

/// RFC 7530 §16.18.2: `OPEN_CONFIRM4res`.
pub type OpenConfirm4Res = Res4<OpenConfirm4ResOk>;

/// RFC 8881 §18.18.1: `OPEN_DOWNGRADE4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct OpenDowngrade4Args {
    pub open_stateid: StateId4,
    pub seqid: SeqId4,
    pub share_access: u32,
    pub share_deny: u32,
}

/// RFC 8881 §18.18.2: `OPEN_DOWNGRADE4resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct OpenDowngrade4ResOk {
    pub open_stateid: StateId4,
}

/// RFC 8881 §18.18.2: `OPEN_DOWNGRADE4res`.
pub type OpenDowngrade4Res = Res4<OpenDowngrade4ResOk>;

// ---------------------------------------------------------------------------
// 18.19 PUTFH, 18.20 PUTPUBFH, 18.21 PUTROOTFH
// ---------------------------------------------------------------------------

/// RFC 8881 §18.19.1: `PUTFH4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct PutFh4Args {
    pub object: NfsFh4,
}

/// RFC 8881 §18.19.2: `PUTFH4res`.
pub type PutFh4Res = Res4<()>;
/// RFC 8881 §18.20.2: `PUTPUBFH4res`. (No arguments.)
pub type PutPubFh4Res = Res4<()>;
/// RFC 8881 §18.21.2: `PUTROOTFH4res`. (No arguments.)
pub type PutRootFh4Res = Res4<()>;

// ---------------------------------------------------------------------------
// 18.22 READ
// ---------------------------------------------------------------------------

/// RFC 8881 §18.22.1: `READ4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct Read4Args {
    pub stateid: StateId4,
    pub offset: Offset4,
    pub count: Count4,
}

/// RFC 8881 §18.22.2: `READ4resok`. `data` is sent without copying, from
/// the page cache when it is a range of a file.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Read4ResOk {
    pub eof: bool,
    pub data: xdr::Payload,
}

/// RFC 8881 §18.22.2: `READ4res`.
pub type Read4Res = Res4<Read4ResOk>;

// ---------------------------------------------------------------------------
// 18.23 READDIR
// ---------------------------------------------------------------------------

/// RFC 8881 §18.23.1: `READDIR4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct ReadDir4Args {
    pub cookie: NfsCookie4,
    pub cookieverf: Verifier4,
    pub dircount: Count4,
    pub maxcount: Count4,
    pub attr_request: Bitmap4,
}

/// RFC 8881 §18.23.2: `entry4` without its `nextentry` link; the list is
/// held by [`DirList4`].
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Entry4 {
    pub cookie: NfsCookie4,
    pub name: Component4,
    pub attrs: Fattr4,
}

/// RFC 8881 §18.23.2: `dirlist4`. On the wire the entries form a linked
/// list (`entry4 *entries`, each with `entry4 *nextentry`): every entry is
/// preceded by TRUE and the list ends with FALSE, then `eof`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DirList4 {
    pub entries: Vec<Entry4>,
    pub eof: bool,
}

impl DirList4 {
    /// Encoded size of one entry within the list, including its leading
    /// "value follows" boolean: lets a server stop before `maxcount`.
    pub fn entry_wire_len(e: &Entry4) -> usize {
        let name = e.name.len() + xdr::pad_len(e.name.len());
        let vals = e.attrs.attr_vals.len() + xdr::pad_len(e.attrs.attr_vals.len());
        4 + 8 + 4 + name + 4 + 4 * e.attrs.attrmask.0.len() + 4 + vals
    }
}

impl Pack for DirList4 {
    fn pack(&self, e: &mut Encoder) {
        for entry in &self.entries {
            e.bool(true);
            entry.pack(e);
        }
        e.bool(false);
        e.bool(self.eof);
    }
}

impl Unpack for DirList4 {
    fn unpack(d: &mut Decoder) -> xdr::Result<Self> {
        // Every entry consumes at least 20 bytes, so the loop is bounded
        // by the message; nothing is allocated ahead of the data.
        let mut entries = Vec::new();
        while d.bool()? {
            entries.push(Entry4::unpack(d)?);
        }
        Ok(DirList4 {
            entries,
            eof: d.bool()?,
        })
    }
    const MIN_WIRE: usize = 8;
}

/// RFC 8881 §18.23.2: `READDIR4resok`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct ReadDir4ResOk {
    pub cookieverf: Verifier4,
    pub reply: DirList4,
}

/// RFC 8881 §18.23.2: `READDIR4res`.
pub type ReadDir4Res = Res4<ReadDir4ResOk>;

// ---------------------------------------------------------------------------
// 18.24 READLINK, 18.25 REMOVE, 18.26 RENAME, RENEW (4.0)
// ---------------------------------------------------------------------------

/// RFC 8881 §18.24.2: `READLINK4resok`. (No arguments.)
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct ReadLink4ResOk {
    pub link: LinkText4,
}

/// RFC 8881 §18.24.2: `READLINK4res`.
pub type ReadLink4Res = Res4<ReadLink4ResOk>;

/// RFC 8881 §18.25.1: `REMOVE4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Remove4Args {
    pub target: Component4,
}

/// RFC 8881 §18.25.2: `REMOVE4resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct Remove4ResOk {
    pub cinfo: ChangeInfo4,
}

/// RFC 8881 §18.25.2: `REMOVE4res`.
pub type Remove4Res = Res4<Remove4ResOk>;

/// RFC 8881 §18.26.1: `RENAME4args`: `oldname` in the saved filehandle,
/// `newname` in the current one.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Rename4Args {
    pub oldname: Component4,
    pub newname: Component4,
}

/// RFC 8881 §18.26.2: `RENAME4resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct Rename4ResOk {
    pub source_cinfo: ChangeInfo4,
    pub target_cinfo: ChangeInfo4,
}

/// RFC 8881 §18.26.2: `RENAME4res`.
pub type Rename4Res = Res4<Rename4ResOk>;

/// RFC 7530 §16.28.1: `RENEW4args` (NFSv4.0 only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct Renew4Args {
    pub clientid: ClientId4,
}

/// RFC 7530 §16.28.2: `RENEW4res`.
pub type Renew4Res = Res4<()>;

// ---------------------------------------------------------------------------
// 18.27 RESTOREFH, 18.28 SAVEFH (no arguments)
// ---------------------------------------------------------------------------

/// RFC 8881 §18.27.2: `RESTOREFH4res`.
pub type RestoreFh4Res = Res4<()>;
/// RFC 8881 §18.28.2: `SAVEFH4res`.
pub type SaveFh4Res = Res4<()>;

// ---------------------------------------------------------------------------
// 18.29 SECINFO, 18.45 SECINFO_NO_NAME
// ---------------------------------------------------------------------------

/// RFC 8881 §18.29.1: `SECINFO4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct SecInfo4Args {
    pub name: Component4,
}

/// RFC 8881 §18.29.2: `rpcsec_gss_info`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct RpcSecGssInfo {
    pub oid: SecOid4,
    pub qop: Qop4,
    pub service: RpcGssSvc,
}

/// RFC 8881 §18.29.2: `secinfo4`, switched on the flavor number.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub enum SecInfo4 {
    #[xdr(value = RPCSEC_GSS)]
    RpcSecGss(RpcSecGssInfo),
    /// Any other flavor (AUTH_NONE, AUTH_SYS, ...): no further data.
    #[xdr(default)]
    Flavor(u32),
}

/// RFC 8881 §18.29.2: `SECINFO4resok`, a list of `secinfo4`.
pub type SecInfo4ResOk = Vec<SecInfo4>;

/// RFC 8881 §18.29.2: `SECINFO4res`.
pub type SecInfo4Res = Res4<SecInfo4ResOk>;

/// RFC 8881 §18.45.1: `secinfo_style4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum SecInfoStyle4 {
    CurrentFh = 0,
    Parent = 1,
}

/// RFC 8881 §18.45.1: `SECINFO_NO_NAME4args`.
pub type SecInfoNoName4Args = SecInfoStyle4;

/// RFC 8881 §18.45.2: `SECINFO_NO_NAME4res`.
pub type SecInfoNoName4Res = SecInfo4Res;

// ---------------------------------------------------------------------------
// 18.30 SETATTR
// ---------------------------------------------------------------------------

/// RFC 8881 §18.30.1: `SETATTR4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct SetAttr4Args {
    pub stateid: StateId4,
    pub obj_attributes: Fattr4,
}

/// RFC 8881 §18.30.2: `SETATTR4res`: the bitmap follows the status
/// whatever the status is.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct SetAttr4Res {
    pub status: NfsStat4,
    pub attrsset: Bitmap4,
}

// ---------------------------------------------------------------------------
// SETCLIENTID, SETCLIENTID_CONFIRM (NFSv4.0 only)
// ---------------------------------------------------------------------------

/// RFC 7530 §16.33.1: `nfs_client_id4`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct NfsClientId4 {
    pub verifier: Verifier4,
    #[xdr(max = NFS4_OPAQUE_LIMIT)]
    pub id: Bytes,
}

/// RFC 7530 §16.33.1: `cb_client4`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct CbClient4 {
    pub cb_program: u32,
    pub cb_location: NetAddr4,
}

/// RFC 7530 §16.33.1: `SETCLIENTID4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct SetClientId4Args {
    pub client: NfsClientId4,
    pub callback: CbClient4,
    pub callback_ident: u32,
}

/// RFC 7530 §16.33.2: `SETCLIENTID4resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct SetClientId4ResOk {
    pub clientid: ClientId4,
    pub setclientid_confirm: Verifier4,
}

/// RFC 7530 §16.33.2: `SETCLIENTID4res`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub enum SetClientId4Res {
    #[xdr(value = NfsStat4::Nfs4Ok)]
    Ok(SetClientId4ResOk),
    /// NFS4ERR_CLID_INUSE: `client_using`.
    #[xdr(value = NfsStat4::Nfs4errClidInuse)]
    ClidInuse(NetAddr4),
    #[xdr(default)]
    Err(NfsStat4),
}

/// RFC 7530 §16.34.1: `SETCLIENTID_CONFIRM4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct SetClientIdConfirm4Args {
    pub clientid: ClientId4,
    pub setclientid_confirm: Verifier4,
}

/// RFC 7530 §16.34.2: `SETCLIENTID_CONFIRM4res`.
pub type SetClientIdConfirm4Res = Res4<()>;

// ---------------------------------------------------------------------------
// 18.31 VERIFY, 18.32 WRITE, RELEASE_LOCKOWNER (4.0)
// ---------------------------------------------------------------------------

/// RFC 8881 §18.31.1: `VERIFY4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Verify4Args {
    pub obj_attributes: Fattr4,
}

/// RFC 8881 §18.31.2: `VERIFY4res`.
pub type Verify4Res = Res4<()>;

/// RFC 8881 §18.32.1: `WRITE4args`. `data` shares the receive buffer.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Write4Args {
    pub stateid: StateId4,
    pub offset: Offset4,
    pub stable: StableHow4,
    pub data: Bytes,
}

/// RFC 8881 §18.32.2: `WRITE4resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct Write4ResOk {
    pub count: Count4,
    pub committed: StableHow4,
    pub writeverf: Verifier4,
}

/// RFC 8881 §18.32.2: `WRITE4res`.
pub type Write4Res = Res4<Write4ResOk>;

/// RFC 7530 §16.37.1: `RELEASE_LOCKOWNER4args` (NFSv4.0 only).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct ReleaseLockOwner4Args {
    pub lock_owner: LockOwner4,
}

/// RFC 7530 §16.37.2: `RELEASE_LOCKOWNER4res`.
pub type ReleaseLockOwner4Res = Res4<()>;

// ---------------------------------------------------------------------------
// 18.33 BACKCHANNEL_CTL, 18.34 BIND_CONN_TO_SESSION
// ---------------------------------------------------------------------------

/// RFC 8881 §18.33.1: `BACKCHANNEL_CTL4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct BackchannelCtl4Args {
    pub cb_program: u32,
    pub sec_parms: Vec<CallbackSecParms4>,
}

/// RFC 8881 §18.33.2: `BACKCHANNEL_CTL4res`.
pub type BackchannelCtl4Res = Res4<()>;

/// RFC 8881 §18.34.1: `BIND_CONN_TO_SESSION4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct BindConnToSession4Args {
    pub sessid: SessionId4,
    pub dir: ChannelDirFromClient4,
    pub use_conn_in_rdma_mode: bool,
}

/// RFC 8881 §18.34.2: `BIND_CONN_TO_SESSION4resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct BindConnToSession4ResOk {
    pub sessid: SessionId4,
    pub dir: ChannelDirFromServer4,
    pub use_conn_in_rdma_mode: bool,
}

/// RFC 8881 §18.34.2: `BIND_CONN_TO_SESSION4res`.
pub type BindConnToSession4Res = Res4<BindConnToSession4ResOk>;

// ---------------------------------------------------------------------------
// 18.35 EXCHANGE_ID
// ---------------------------------------------------------------------------

/// RFC 8881 §18.35.1: `EXCHANGE_ID4args`.
#[derive(Debug, Clone, PartialEq, Pack, Unpack)]
pub struct ExchangeId4Args {
    pub clientowner: ClientOwner4,
    /// `EXCHGID4_FLAG_*` bits.
    pub flags: u32,
    pub state_protect: StateProtect4A,
    /// `eia_client_impl_id<1>`.
    pub client_impl_id: Option<NfsImplId4>,
}

/// RFC 8881 §18.35.2: `EXCHANGE_ID4resok`.
#[derive(Debug, Clone, PartialEq, Pack, Unpack)]
pub struct ExchangeId4ResOk {
    pub clientid: ClientId4,
    pub sequenceid: SequenceId4,
    pub flags: u32,
    pub state_protect: StateProtect4R,
    pub server_owner: ServerOwner4,
    #[xdr(max = NFS4_OPAQUE_LIMIT)]
    pub server_scope: Bytes,
    /// `eir_server_impl_id<1>`.
    pub server_impl_id: Option<NfsImplId4>,
}

/// RFC 8881 §18.35.2: `EXCHANGE_ID4res`.
pub type ExchangeId4Res = Res4<ExchangeId4ResOk>;

// ---------------------------------------------------------------------------
// 18.36 CREATE_SESSION, 18.37 DESTROY_SESSION
// ---------------------------------------------------------------------------

/// RFC 8881 §18.36.1: `CREATE_SESSION4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct CreateSession4Args {
    pub clientid: ClientId4,
    pub sequence: SequenceId4,
    /// `CREATE_SESSION4_FLAG_*` bits.
    pub flags: u32,
    pub fore_chan_attrs: ChannelAttrs4,
    pub back_chan_attrs: ChannelAttrs4,
    pub cb_program: u32,
    pub sec_parms: Vec<CallbackSecParms4>,
}

/// RFC 8881 §18.36.2: `CREATE_SESSION4resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct CreateSession4ResOk {
    pub sessionid: SessionId4,
    pub sequence: SequenceId4,
    pub flags: u32,
    pub fore_chan_attrs: ChannelAttrs4,
    pub back_chan_attrs: ChannelAttrs4,
}

/// RFC 8881 §18.36.2: `CREATE_SESSION4res`.
pub type CreateSession4Res = Res4<CreateSession4ResOk>;

/// RFC 8881 §18.37.1: `DESTROY_SESSION4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct DestroySession4Args {
    pub sessionid: SessionId4,
}

/// RFC 8881 §18.37.2: `DESTROY_SESSION4res`.
pub type DestroySession4Res = Res4<()>;

// ---------------------------------------------------------------------------
// 18.38 FREE_STATEID, 18.39 GET_DIR_DELEGATION
// ---------------------------------------------------------------------------

/// RFC 8881 §18.38.1: `FREE_STATEID4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct FreeStateId4Args {
    pub stateid: StateId4,
}

/// RFC 8881 §18.38.2: `FREE_STATEID4res`.
pub type FreeStateId4Res = Res4<()>;

/// RFC 8881 §18.39.1: `GET_DIR_DELEGATION4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct GetDirDelegation4Args {
    pub signal_deleg_avail: bool,
    pub notification_types: Bitmap4,
    pub child_attr_delay: AttrNotice4,
    pub dir_attr_delay: AttrNotice4,
    pub child_attributes: Bitmap4,
    pub dir_attributes: Bitmap4,
}

/// RFC 8881 §18.39.2: `GET_DIR_DELEGATION4resok`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct GetDirDelegation4ResOk {
    pub cookieverf: Verifier4,
    pub stateid: StateId4,
    pub notification: Bitmap4,
    pub child_attributes: Bitmap4,
    pub dir_attributes: Bitmap4,
}

/// RFC 8881 §18.39.2: `gddrnf4_status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum GddrNf4Status {
    Gdd4Ok = 0,
    Gdd4Unavail = 1,
}

/// RFC 8881 §18.39.2: `GET_DIR_DELEGATION4res_non_fatal`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub enum GetDirDelegation4ResNonFatal {
    #[xdr(value = GddrNf4Status::Gdd4Ok)]
    Ok(GetDirDelegation4ResOk),
    /// GDD4_UNAVAIL: `gddrnf_will_signal_deleg_avail`.
    #[xdr(value = GddrNf4Status::Gdd4Unavail)]
    Unavail(bool),
}

/// RFC 8881 §18.39.2: `GET_DIR_DELEGATION4res`.
pub type GetDirDelegation4Res = Res4<GetDirDelegation4ResNonFatal>;

// ---------------------------------------------------------------------------
// 18.40 GETDEVICEINFO, 18.41 GETDEVICELIST
// ---------------------------------------------------------------------------

/// RFC 8881 §18.40.1: `GETDEVICEINFO4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct GetDeviceInfo4Args {
    pub device_id: DeviceId4,
    pub layout_type: LayoutType4,
    pub maxcount: Count4,
    pub notify_types: Bitmap4,
}

/// RFC 8881 §18.40.2: `GETDEVICEINFO4resok`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct GetDeviceInfo4ResOk {
    pub device_addr: DeviceAddr4,
    pub notification: Bitmap4,
}

/// RFC 8881 §18.40.2: `GETDEVICEINFO4res`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub enum GetDeviceInfo4Res {
    #[xdr(value = NfsStat4::Nfs4Ok)]
    Ok(GetDeviceInfo4ResOk),
    /// NFS4ERR_TOOSMALL: `gdir_mincount`.
    #[xdr(value = NfsStat4::Nfs4errToosmall)]
    TooSmall(Count4),
    #[xdr(default)]
    Err(NfsStat4),
}

/// RFC 8881 §18.41.1: `GETDEVICELIST4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct GetDeviceList4Args {
    pub layout_type: LayoutType4,
    pub maxdevices: Count4,
    pub cookie: NfsCookie4,
    pub cookieverf: Verifier4,
}

/// RFC 8881 §18.41.2: `GETDEVICELIST4resok`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct GetDeviceList4ResOk {
    pub cookie: NfsCookie4,
    pub cookieverf: Verifier4,
    pub deviceid_list: Vec<DeviceId4>,
    pub eof: bool,
}

/// RFC 8881 §18.41.2: `GETDEVICELIST4res`.
pub type GetDeviceList4Res = Res4<GetDeviceList4ResOk>;

// ---------------------------------------------------------------------------
// 18.42 LAYOUTCOMMIT, 18.43 LAYOUTGET, 18.44 LAYOUTRETURN
// ---------------------------------------------------------------------------

/// RFC 8881 §18.42.1: `LAYOUTCOMMIT4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct LayoutCommit4Args {
    pub offset: Offset4,
    pub length: Length4,
    pub reclaim: bool,
    pub stateid: StateId4,
    /// `newoffset4`: a union on `bool no_newoffset`, encoded like an
    /// optional `offset4`.
    pub last_write_offset: Option<Offset4>,
    /// `newtime4`: a union on `bool nt_timechanged`, encoded like an
    /// optional `nfstime4`.
    pub time_modify: Option<NfsTime4>,
    pub layoutupdate: LayoutUpdate4,
}

/// RFC 8881 §18.42.2: `LAYOUTCOMMIT4resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct LayoutCommit4ResOk {
    /// `newsize4`: a union on `bool ns_sizechanged`, encoded like an
    /// optional `length4`.
    pub newsize: Option<Length4>,
}

/// RFC 8881 §18.42.2: `LAYOUTCOMMIT4res`.
pub type LayoutCommit4Res = Res4<LayoutCommit4ResOk>;

/// RFC 8881 §18.43.1: `LAYOUTGET4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct LayoutGet4Args {
    pub signal_layout_avail: bool,
    pub layout_type: LayoutType4,
    pub iomode: LayoutIoMode4,
    pub offset: Offset4,
    pub length: Length4,
    pub minlength: Length4,
    pub stateid: StateId4,
    pub maxcount: Count4,
}

/// RFC 8881 §18.43.2: `LAYOUTGET4resok`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct LayoutGet4ResOk {
    pub return_on_close: bool,
    pub stateid: StateId4,
    pub layout: Vec<Layout4>,
}

/// RFC 8881 §18.43.2: `LAYOUTGET4res`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub enum LayoutGet4Res {
    #[xdr(value = NfsStat4::Nfs4Ok)]
    Ok(LayoutGet4ResOk),
    /// NFS4ERR_LAYOUTTRYLATER: `logr_will_signal_layout_avail`.
    #[xdr(value = NfsStat4::Nfs4errLayouttrylater)]
    TryLater(bool),
    #[xdr(default)]
    Err(NfsStat4),
}

/// RFC 8881 §18.44.1: `LAYOUTRETURN4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct LayoutReturn4Args {
    pub reclaim: bool,
    pub layout_type: LayoutType4,
    pub iomode: LayoutIoMode4,
    pub layoutreturn: LayoutReturn4,
}

/// RFC 8881 §18.44.2: `LAYOUTRETURN4res`; the OK arm is
/// `layoutreturn_stateid`, a union on `bool lrs_present` encoded like an
/// optional stateid.
pub type LayoutReturn4Res = Res4<Option<StateId4>>;

// ---------------------------------------------------------------------------
// 18.46 SEQUENCE, 18.47 SET_SSV, 18.48 TEST_STATEID
// ---------------------------------------------------------------------------

/// RFC 8881 §18.46.1: `SEQUENCE4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct Sequence4Args {
    pub sessionid: SessionId4,
    pub sequenceid: SequenceId4,
    pub slotid: SlotId4,
    pub highest_slotid: SlotId4,
    pub cachethis: bool,
}

/// RFC 8881 §18.46.2: `SEQUENCE4resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct Sequence4ResOk {
    pub sessionid: SessionId4,
    pub sequenceid: SequenceId4,
    pub slotid: SlotId4,
    pub highest_slotid: SlotId4,
    pub target_highest_slotid: SlotId4,
    /// `SEQ4_STATUS_*` bits.
    pub status_flags: u32,
}

/// RFC 8881 §18.46.2: `SEQUENCE4res`.
pub type Sequence4Res = Res4<Sequence4ResOk>;

/// RFC 8881 §18.47.1: `SET_SSV4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct SetSsv4Args {
    pub ssv: Bytes,
    pub digest: Bytes,
}

/// RFC 8881 §18.47.2: `SET_SSV4resok`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct SetSsv4ResOk {
    pub digest: Bytes,
}

/// RFC 8881 §18.47.2: `SET_SSV4res`.
pub type SetSsv4Res = Res4<SetSsv4ResOk>;

/// RFC 8881 §18.48.1: `TEST_STATEID4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct TestStateId4Args {
    pub stateids: Vec<StateId4>,
}

/// RFC 8881 §18.48.2: `TEST_STATEID4resok`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct TestStateId4ResOk {
    pub status_codes: Vec<NfsStat4>,
}

/// RFC 8881 §18.48.2: `TEST_STATEID4res`.
pub type TestStateId4Res = Res4<TestStateId4ResOk>;

// ---------------------------------------------------------------------------
// 18.49 WANT_DELEGATION, 18.50 DESTROY_CLIENTID, 18.51 RECLAIM_COMPLETE
// ---------------------------------------------------------------------------

/// RFC 8881 §18.49.1: `deleg_claim4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub enum DelegClaim4 {
    #[xdr(value = OpenClaimType4::ClaimFh)]
    Fh,
    #[xdr(value = OpenClaimType4::ClaimDelegPrevFh)]
    DelegPrevFh,
    #[xdr(value = OpenClaimType4::ClaimPrevious)]
    Previous(OpenDelegationType4),
}

/// RFC 8881 §18.49.1: `WANT_DELEGATION4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct WantDelegation4Args {
    /// `OPEN4_SHARE_ACCESS_WANT_*` bits.
    pub want: u32,
    pub claim: DelegClaim4,
}

/// RFC 8881 §18.49.2: `WANT_DELEGATION4res`.
pub type WantDelegation4Res = Res4<OpenDelegation4>;

/// RFC 8881 §18.50.1: `DESTROY_CLIENTID4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct DestroyClientId4Args {
    pub clientid: ClientId4,
}

/// RFC 8881 §18.50.2: `DESTROY_CLIENTID4res`.
pub type DestroyClientId4Res = Res4<()>;

/// RFC 8881 §18.51.1: `RECLAIM_COMPLETE4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct ReclaimComplete4Args {
    pub one_fs: bool,
}

/// RFC 8881 §18.51.2: `RECLAIM_COMPLETE4res`.
pub type ReclaimComplete4Res = Res4<()>;

/// RFC 8881 §18.52.2: `ILLEGAL4res`.
pub type Illegal4Res = Res4<()>;

// ---------------------------------------------------------------------------
// RFC 7862 §15: NFSv4.2 operations
// ---------------------------------------------------------------------------

/// RFC 7862 §15.1.1: `ALLOCATE4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct Allocate4Args {
    pub stateid: StateId4,
    pub offset: Offset4,
    pub length: Length4,
}

/// RFC 7862 §15.1.2: `ALLOCATE4res`.
pub type Allocate4Res = Res4<()>;

/// RFC 7862 §15.2.1: `COPY4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Copy4Args {
    pub src_stateid: StateId4,
    pub dst_stateid: StateId4,
    pub src_offset: Offset4,
    pub dst_offset: Offset4,
    pub count: Length4,
    pub consecutive: bool,
    pub synchronous: bool,
    pub source_server: Vec<NetLoc4>,
}

/// RFC 7862 §15.2.2: `COPY4resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct Copy4ResOk {
    pub response: WriteResponse4,
    pub requirements: CopyRequirements4,
}

/// RFC 7862 §15.2.2: `COPY4res`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub enum Copy4Res {
    #[xdr(value = NfsStat4::Nfs4Ok)]
    Ok(Copy4ResOk),
    /// NFS4ERR_OFFLOAD_NO_REQS: what the server could have honoured.
    #[xdr(value = NfsStat4::Nfs4errOffloadNoReqs)]
    NoReqs(CopyRequirements4),
    #[xdr(default)]
    Err(NfsStat4),
}

/// RFC 7862 §15.3.1: `COPY_NOTIFY4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct CopyNotify4Args {
    pub src_stateid: StateId4,
    pub destination_server: NetLoc4,
}

/// RFC 7862 §15.3.2: `COPY_NOTIFY4resok`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct CopyNotify4ResOk {
    pub lease_time: NfsTime4,
    pub stateid: StateId4,
    pub source_server: Vec<NetLoc4>,
}

/// RFC 7862 §15.3.2: `COPY_NOTIFY4res`.
pub type CopyNotify4Res = Res4<CopyNotify4ResOk>;

/// RFC 7862 §15.4.1: `DEALLOCATE4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct Deallocate4Args {
    pub stateid: StateId4,
    pub offset: Offset4,
    pub length: Length4,
}

/// RFC 7862 §15.4.2: `DEALLOCATE4res`.
pub type Deallocate4Res = Res4<()>;

/// RFC 7862 §15.5.1: `IO_ADVISE4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct IoAdvise4Args {
    pub stateid: StateId4,
    pub offset: Offset4,
    pub count: Length4,
    /// Bits numbered by `IO_ADVISE4_*`.
    pub hints: Bitmap4,
}

/// RFC 7862 §15.5.2: `IO_ADVISE4resok`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct IoAdvise4ResOk {
    pub hints: Bitmap4,
}

/// RFC 7862 §15.5.2: `IO_ADVISE4res`.
pub type IoAdvise4Res = Res4<IoAdvise4ResOk>;

/// RFC 7862 §15.6.1: `LAYOUTERROR4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct LayoutError4Args {
    pub offset: Offset4,
    pub length: Length4,
    pub stateid: StateId4,
    pub errors: Vec<DeviceError4>,
}

/// RFC 7862 §15.6.2: `LAYOUTERROR4res`.
pub type LayoutError4Res = Res4<()>;

/// RFC 7862 §15.7.1: `LAYOUTSTATS4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct LayoutStats4Args {
    pub offset: Offset4,
    pub length: Length4,
    pub stateid: StateId4,
    pub read: IoInfo4,
    pub write: IoInfo4,
    pub deviceid: DeviceId4,
    pub layoutupdate: LayoutUpdate4,
}

/// RFC 7862 §15.7.2: `LAYOUTSTATS4res`.
pub type LayoutStats4Res = Res4<()>;

/// RFC 7862 §15.8.1: `OFFLOAD_CANCEL4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct OffloadCancel4Args {
    pub stateid: StateId4,
}

/// RFC 7862 §15.8.2: `OFFLOAD_CANCEL4res`.
pub type OffloadCancel4Res = Res4<()>;

/// RFC 7862 §15.9.1: `OFFLOAD_STATUS4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct OffloadStatus4Args {
    pub stateid: StateId4,
}

/// RFC 7862 §15.9.2: `OFFLOAD_STATUS4resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct OffloadStatus4ResOk {
    pub count: Length4,
    /// `osr_complete<1>`: present once the copy has finished.
    pub complete: Option<NfsStat4>,
}

/// RFC 7862 §15.9.2: `OFFLOAD_STATUS4res`.
pub type OffloadStatus4Res = Res4<OffloadStatus4ResOk>;

/// RFC 7862 §15.10.1: `READ_PLUS4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct ReadPlus4Args {
    pub stateid: StateId4,
    pub offset: Offset4,
    pub count: Count4,
}

/// RFC 7862 §15.10.2: `data4`, a run of file data. `data` is sent
/// without copying.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Data4 {
    pub offset: Offset4,
    pub data: Bytes,
}

/// RFC 7862 §15.10.2: `data_info4`, a hole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct DataInfo4 {
    pub offset: Offset4,
    pub length: Length4,
}

/// RFC 7862 §15.10.2: `read_plus_content`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub enum ReadPlusContent {
    #[xdr(value = DataContent4::Nfs4ContentData)]
    Data(Data4),
    #[xdr(value = DataContent4::Nfs4ContentHole)]
    Hole(DataInfo4),
    /// `default: void`.
    #[xdr(default)]
    Other(u32),
}

/// RFC 7862 §15.10.2: `read_plus_res4`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct ReadPlusRes4 {
    pub eof: bool,
    pub contents: Vec<ReadPlusContent>,
}

/// RFC 7862 §15.10.2: `READ_PLUS4res`.
pub type ReadPlus4Res = Res4<ReadPlusRes4>;

/// RFC 7862 §15.11.1: `SEEK4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct Seek4Args {
    pub stateid: StateId4,
    pub offset: Offset4,
    pub what: DataContent4,
}

/// RFC 7862 §15.11.2: `seek_res4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct SeekRes4 {
    pub eof: bool,
    pub offset: Offset4,
}

/// RFC 7862 §15.11.2: `SEEK4res`.
pub type Seek4Res = Res4<SeekRes4>;

/// RFC 7862 §15.12.1: `WRITE_SAME4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct WriteSame4Args {
    pub stateid: StateId4,
    pub stable: StableHow4,
    pub adb: AppDataBlock4,
}

/// RFC 7862 §15.12.2: `WRITE_SAME4res`.
pub type WriteSame4Res = Res4<WriteResponse4>;

/// RFC 7862 §15.13.1: `CLONE4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct Clone4Args {
    pub src_stateid: StateId4,
    pub dst_stateid: StateId4,
    pub src_offset: Offset4,
    pub dst_offset: Offset4,
    pub count: Length4,
}

/// RFC 7862 §15.13.2: `CLONE4res`.
pub type Clone4Res = Res4<()>;

// ---------------------------------------------------------------------------
// RFC 8276 §8: extended attribute operations
// ---------------------------------------------------------------------------

/// RFC 8276 §8.3: `xattrkey4`, an extended attribute name.
pub type XattrKey4 = Component4;
/// RFC 8276 §8.3: `xattrvalue4`.
pub type XattrValue4 = Bytes;

/// RFC 8276 §8.4.1.1: `GETXATTR4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct GetXattr4Args {
    pub name: XattrKey4,
}

/// RFC 8276 §8.4.1.2: `GETXATTR4resok`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct GetXattr4ResOk {
    pub value: XattrValue4,
}

/// RFC 8276 §8.4.1.2: `GETXATTR4res`.
pub type GetXattr4Res = Res4<GetXattr4ResOk>;

/// RFC 8276 §8.4.2.1: `setxattr_option4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum SetXattrOption4 {
    Either = 0,
    Create = 1,
    Replace = 2,
}

/// RFC 8276 §8.4.2.1: `SETXATTR4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct SetXattr4Args {
    pub option: SetXattrOption4,
    pub key: XattrKey4,
    pub value: XattrValue4,
}

/// RFC 8276 §8.4.2.2: `SETXATTR4resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct SetXattr4ResOk {
    pub info: ChangeInfo4,
}

/// RFC 8276 §8.4.2.2: `SETXATTR4res`.
pub type SetXattr4Res = Res4<SetXattr4ResOk>;

/// RFC 8276 §8.4.3.1: `LISTXATTRS4args`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct ListXattrs4Args {
    pub cookie: NfsCookie4,
    pub maxcount: Count4,
}

/// RFC 8276 §8.4.3.2: `LISTXATTRS4resok`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct ListXattrs4ResOk {
    pub cookie: NfsCookie4,
    pub names: Vec<XattrKey4>,
    pub eof: bool,
}

/// RFC 8276 §8.4.3.2: `LISTXATTRS4res`.
pub type ListXattrs4Res = Res4<ListXattrs4ResOk>;

/// RFC 8276 §8.4.4.1: `REMOVEXATTR4args`.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct RemoveXattr4Args {
    pub name: XattrKey4,
}

/// RFC 8276 §8.4.4.2: `REMOVEXATTR4resok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct RemoveXattr4ResOk {
    pub info: ChangeInfo4,
}

/// RFC 8276 §8.4.4.2: `REMOVEXATTR4res`.
pub type RemoveXattr4Res = Res4<RemoveXattr4ResOk>;

// ---------------------------------------------------------------------------
// Status accessors for the results that are not `Res4`
// ---------------------------------------------------------------------------

macro_rules! status_of_union {
    ($($ty:ident { $($arm:ident => $st:expr),* $(,)? })*) => {$(
        impl $ty {
            /// The operation's `nfsstat4`.
            pub fn status(&self) -> NfsStat4 {
                #[allow(unreachable_patterns)]
                match self {
                    $( $ty::$arm { .. } => $st, )*
                    $ty::Err(s) => *s,
                }
            }
        }
    )*};
}

status_of_union! {
    Lock4Res { Ok => NfsStat4::Nfs4Ok, Denied => NfsStat4::Nfs4errDenied }
    LockT4Res { Ok => NfsStat4::Nfs4Ok, Denied => NfsStat4::Nfs4errDenied }
    SetClientId4Res { Ok => NfsStat4::Nfs4Ok, ClidInuse => NfsStat4::Nfs4errClidInuse }
    GetDeviceInfo4Res { Ok => NfsStat4::Nfs4Ok, TooSmall => NfsStat4::Nfs4errToosmall }
    LayoutGet4Res { Ok => NfsStat4::Nfs4Ok, TryLater => NfsStat4::Nfs4errLayouttrylater }
    Copy4Res { Ok => NfsStat4::Nfs4Ok, NoReqs => NfsStat4::Nfs4errOffloadNoReqs }
}

impl SetAttr4Res {
    /// The operation's `nfsstat4`.
    pub fn status(&self) -> NfsStat4 {
        self.status
    }
}
