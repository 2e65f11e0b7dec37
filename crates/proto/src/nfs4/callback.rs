//! The NFSv4.1 callback program (RFC 8881 §20; CB_OFFLOAD from RFC 7862
//! §16.1): CB_COMPOUND and its operations, sent by the server over the
//! backchannel of a session.
//!
//! The RPC program number is chosen by the client (`cb_program` in
//! CREATE_SESSION or BACKCHANNEL_CTL); the version is 1.

use bytes::Bytes;
use xdr::{Decoder, Encoder, Pack, Unpack};

use super::*;

/// Callback program version (RFC 8881 §16.1: `NFS_CB` version 1).
pub const NFS_CB_V1: u32 = 1;
/// `CB_NULL` procedure (RFC 8881 §20).
pub const CB_NULL: u32 = 0;
/// `CB_COMPOUND` procedure (RFC 8881 §20).
pub const CB_COMPOUND: u32 = 1;

/// `nfs_cb_opnum4` (RFC 8881 §20, RFC 7862 §16).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum NfsCbOpNum4 {
    CbGetattr = 3,
    CbRecall = 4,
    CbLayoutRecall = 5,
    CbNotify = 6,
    CbPushDeleg = 7,
    CbRecallAny = 8,
    CbRecallableObjAvail = 9,
    CbRecallSlot = 10,
    CbSequence = 11,
    CbWantsCancelled = 12,
    CbNotifyLock = 13,
    CbNotifyDeviceId = 14,
    CbOffload = 15,
    CbIllegal = 10044,
}

// ---------------------------------------------------------------------------
// 20.1 CB_GETATTR
// ---------------------------------------------------------------------------

/// `CB_GETATTR4args` (RFC 8881 §20.1.1).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct CbGetattr4Args {
    pub fh: NfsFh4,
    pub attr_request: Bitmap4,
}

/// `CB_GETATTR4resok` (RFC 8881 §20.1.2).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct CbGetattr4ResOk {
    pub obj_attributes: Fattr4,
}

/// `CB_GETATTR4res` (RFC 8881 §20.1.2).
pub type CbGetattr4Res = Res4<CbGetattr4ResOk>;

// ---------------------------------------------------------------------------
// 20.2 CB_RECALL
// ---------------------------------------------------------------------------

/// `CB_RECALL4args` (RFC 8881 §20.2.1).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct CbRecall4Args {
    pub stateid: StateId4,
    pub truncate: bool,
    pub fh: NfsFh4,
}

/// `CB_RECALL4res` (RFC 8881 §20.2.2).
pub type CbRecall4Res = Res4<()>;

// ---------------------------------------------------------------------------
// 20.3 CB_LAYOUTRECALL
// ---------------------------------------------------------------------------

/// `layoutrecall_type4` (RFC 8881 §20.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum LayoutRecallType4 {
    File = 1,
    Fsid = 2,
    All = 3,
}

/// `layoutrecall_file4` (RFC 8881 §20.3.1).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct LayoutRecallFile4 {
    pub fh: NfsFh4,
    pub offset: Offset4,
    pub length: Length4,
    pub stateid: StateId4,
}

/// `layoutrecall4` (RFC 8881 §20.3.1).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub enum LayoutRecall4 {
    #[xdr(value = LayoutRecallType4::File)]
    File(LayoutRecallFile4),
    #[xdr(value = LayoutRecallType4::Fsid)]
    Fsid(FsId4),
    #[xdr(value = LayoutRecallType4::All)]
    All,
}

/// `CB_LAYOUTRECALL4args` (RFC 8881 §20.3.1).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct CbLayoutRecall4Args {
    pub layout_type: LayoutType4,
    pub iomode: LayoutIoMode4,
    pub changed: bool,
    pub recall: LayoutRecall4,
}

/// `CB_LAYOUTRECALL4res` (RFC 8881 §20.3.2).
pub type CbLayoutRecall4Res = Res4<()>;

// ---------------------------------------------------------------------------
// 20.4 CB_NOTIFY
// ---------------------------------------------------------------------------

/// `notify_type4` bit numbers (RFC 8881 §20.4.1), also used in
/// GET_DIR_DELEGATION's notification masks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum NotifyType4 {
    ChangeChildAttrs = 0,
    ChangeDirAttrs = 1,
    RemoveEntry = 2,
    AddEntry = 3,
    RenameEntry = 4,
    ChangeCookieVerifier = 5,
}

/// `notify_entry4` (RFC 8881 §20.4.1).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct NotifyEntry4 {
    pub file: Component4,
    pub attrs: Fattr4,
}

/// `prev_entry4` (RFC 8881 §20.4.1).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct PrevEntry4 {
    pub prev_entry: NotifyEntry4,
    pub prev_entry_cookie: NfsCookie4,
}

/// `notify_remove4` (RFC 8881 §20.4.1).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct NotifyRemove4 {
    pub old_entry: NotifyEntry4,
    pub old_entry_cookie: NfsCookie4,
}

/// `notify_add4` (RFC 8881 §20.4.1); the `<1>` arrays are Options (same
/// encoding).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct NotifyAdd4 {
    pub old_entry: Option<NotifyRemove4>,
    pub new_entry: NotifyEntry4,
    pub new_entry_cookie: Option<NfsCookie4>,
    pub prev_entry: Option<PrevEntry4>,
    pub last_entry: bool,
}

/// `notify_attr4` (RFC 8881 §20.4.1).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct NotifyAttr4 {
    pub changed_entry: NotifyEntry4,
}

/// `notify_rename4` (RFC 8881 §20.4.1).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct NotifyRename4 {
    pub old_entry: NotifyRemove4,
    pub new_entry: NotifyAdd4,
}

/// `notify_verifier4` (RFC 8881 §20.4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct NotifyVerifier4 {
    pub old_cookieverf: Verifier4,
    pub new_cookieverf: Verifier4,
}

/// `notify4` (RFC 8881 §20.4.1, §3.3.17): a mask of notification types
/// and `notifylist4`, the XDR of one value per set bit, in bit order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Pack, Unpack)]
pub struct Notify4 {
    pub mask: Bitmap4,
    pub values: Bytes,
}

impl Notify4 {
    /// A notification of one type `kind` (a `notify_type4` or
    /// `notify_deviceid_type4` value) carrying `value`.
    pub fn one<T: Pack>(kind: u32, value: &T) -> Self {
        Notify4 {
            mask: Bitmap4::from_attrs(&[kind]),
            values: xdr::to_bytes(value),
        }
    }
}

/// `CB_NOTIFY4args` (RFC 8881 §20.4.1).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct CbNotify4Args {
    pub stateid: StateId4,
    pub fh: NfsFh4,
    pub changes: Vec<Notify4>,
}

/// `CB_NOTIFY4res` (RFC 8881 §20.4.2).
pub type CbNotify4Res = Res4<()>;

// ---------------------------------------------------------------------------
// 20.5 CB_PUSH_DELEG
// ---------------------------------------------------------------------------

/// `CB_PUSH_DELEG4args` (RFC 8881 §20.5.1).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct CbPushDeleg4Args {
    pub fh: NfsFh4,
    pub delegation: OpenDelegation4,
}

/// `CB_PUSH_DELEG4res` (RFC 8881 §20.5.2).
pub type CbPushDeleg4Res = Res4<()>;

// ---------------------------------------------------------------------------
// 20.6 CB_RECALL_ANY, 20.7 CB_RECALLABLE_OBJ_AVAIL
// ---------------------------------------------------------------------------

/// `craa_type_mask` bits (RFC 8881 §20.6.1).
pub const RCA4_TYPE_MASK_RDATA_DLG: u32 = 0;
pub const RCA4_TYPE_MASK_WDATA_DLG: u32 = 1;
pub const RCA4_TYPE_MASK_DIR_DLG: u32 = 2;
pub const RCA4_TYPE_MASK_FILE_LAYOUT: u32 = 3;
pub const RCA4_TYPE_MASK_BLK_LAYOUT: u32 = 4;
pub const RCA4_TYPE_MASK_OBJ_LAYOUT_MIN: u32 = 8;
pub const RCA4_TYPE_MASK_OBJ_LAYOUT_MAX: u32 = 9;
pub const RCA4_TYPE_MASK_OTHER_LAYOUT_MIN: u32 = 12;
pub const RCA4_TYPE_MASK_OTHER_LAYOUT_MAX: u32 = 15;

/// `CB_RECALL_ANY4args` (RFC 8881 §20.6.1).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct CbRecallAny4Args {
    pub objects_to_keep: u32,
    pub type_mask: Bitmap4,
}

/// `CB_RECALL_ANY4res` (RFC 8881 §20.6.2).
pub type CbRecallAny4Res = Res4<()>;

/// `CB_RECALLABLE_OBJ_AVAIL4args` (RFC 8881 §20.7.1).
pub type CbRecallableObjAvail4Args = CbRecallAny4Args;
/// `CB_RECALLABLE_OBJ_AVAIL4res` (RFC 8881 §20.7.2).
pub type CbRecallableObjAvail4Res = Res4<()>;

// ---------------------------------------------------------------------------
// 20.8 CB_RECALL_SLOT
// ---------------------------------------------------------------------------

/// `CB_RECALL_SLOT4args` (RFC 8881 §20.8.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct CbRecallSlot4Args {
    pub target_highest_slotid: SlotId4,
}

/// `CB_RECALL_SLOT4res` (RFC 8881 §20.8.2).
pub type CbRecallSlot4Res = Res4<()>;

// ---------------------------------------------------------------------------
// 20.9 CB_SEQUENCE
// ---------------------------------------------------------------------------

/// `referring_call4` (RFC 8881 §20.9.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct ReferringCall4 {
    pub sequenceid: SequenceId4,
    pub slotid: SlotId4,
}

/// `referring_call_list4` (RFC 8881 §20.9.1).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct ReferringCallList4 {
    pub sessionid: SessionId4,
    pub referring_calls: Vec<ReferringCall4>,
}

/// `CB_SEQUENCE4args` (RFC 8881 §20.9.1).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct CbSequence4Args {
    pub sessionid: SessionId4,
    pub sequenceid: SequenceId4,
    pub slotid: SlotId4,
    pub highest_slotid: SlotId4,
    pub cachethis: bool,
    pub referring_call_lists: Vec<ReferringCallList4>,
}

/// `CB_SEQUENCE4resok` (RFC 8881 §20.9.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct CbSequence4ResOk {
    pub sessionid: SessionId4,
    pub sequenceid: SequenceId4,
    pub slotid: SlotId4,
    pub highest_slotid: SlotId4,
    pub target_highest_slotid: SlotId4,
}

/// `CB_SEQUENCE4res` (RFC 8881 §20.9.2).
pub type CbSequence4Res = Res4<CbSequence4ResOk>;

// ---------------------------------------------------------------------------
// 20.10 CB_WANTS_CANCELLED
// ---------------------------------------------------------------------------

/// `CB_WANTS_CANCELLED4args` (RFC 8881 §20.10.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct CbWantsCancelled4Args {
    pub contended_wants_cancelled: bool,
    pub resourced_wants_cancelled: bool,
}

/// `CB_WANTS_CANCELLED4res` (RFC 8881 §20.10.2).
pub type CbWantsCancelled4Res = Res4<()>;

// ---------------------------------------------------------------------------
// 20.11 CB_NOTIFY_LOCK
// ---------------------------------------------------------------------------

/// `CB_NOTIFY_LOCK4args` (RFC 8881 §20.11.1).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct CbNotifyLock4Args {
    pub fh: NfsFh4,
    pub lock_owner: LockOwner4,
}

/// `CB_NOTIFY_LOCK4res` (RFC 8881 §20.11.2).
pub type CbNotifyLock4Res = Res4<()>;

// ---------------------------------------------------------------------------
// 20.12 CB_NOTIFY_DEVICEID
// ---------------------------------------------------------------------------

/// `notify_deviceid_type4` bit numbers (RFC 8881 §20.12.1), also used in
/// GETDEVICEINFO's `notify_types`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum NotifyDeviceIdType4 {
    Change = 1,
    Delete = 2,
}

/// `notify_deviceid_delete4` (RFC 8881 §20.12.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct NotifyDeviceIdDelete4 {
    pub layouttype: LayoutType4,
    pub deviceid: DeviceId4,
}

/// `notify_deviceid_change4` (RFC 8881 §20.12.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
pub struct NotifyDeviceIdChange4 {
    pub layouttype: LayoutType4,
    pub deviceid: DeviceId4,
    pub immediate: bool,
}

/// `CB_NOTIFY_DEVICEID4args` (RFC 8881 §20.12.1).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct CbNotifyDeviceId4Args {
    pub changes: Vec<Notify4>,
}

/// `CB_NOTIFY_DEVICEID4res` (RFC 8881 §20.12.2).
pub type CbNotifyDeviceId4Res = Res4<()>;

// ---------------------------------------------------------------------------
// CB_OFFLOAD (RFC 7862 §16.1)
// ---------------------------------------------------------------------------

/// `offload_info4` (RFC 7862 §16.1.1): `union switch (nfsstat4
/// coa_status) { case NFS4_OK: write_response4 coa_resok4; default:
/// length4 coa_bytes_copied; }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffloadInfo4 {
    Ok(WriteResponse4),
    /// The copy failed with `status` (never `Nfs4Ok`) after
    /// `bytes_copied` bytes.
    Err {
        status: NfsStat4,
        bytes_copied: Length4,
    },
}

impl Pack for OffloadInfo4 {
    fn pack(&self, e: &mut Encoder) {
        match self {
            OffloadInfo4::Ok(r) => {
                NfsStat4::Nfs4Ok.pack(e);
                r.pack(e);
            }
            OffloadInfo4::Err {
                status,
                bytes_copied,
            } => {
                status.pack(e);
                bytes_copied.pack(e);
            }
        }
    }
}

impl Unpack for OffloadInfo4 {
    fn unpack(d: &mut Decoder) -> xdr::Result<Self> {
        match NfsStat4::unpack(d)? {
            NfsStat4::Nfs4Ok => Ok(OffloadInfo4::Ok(WriteResponse4::unpack(d)?)),
            status => Ok(OffloadInfo4::Err {
                status,
                bytes_copied: Length4::unpack(d)?,
            }),
        }
    }
    const MIN_WIRE: usize = 12;
}

/// `CB_OFFLOAD4args` (RFC 7862 §16.1.1).
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct CbOffload4Args {
    pub fh: NfsFh4,
    pub stateid: StateId4,
    pub offload_info: OffloadInfo4,
}

/// `CB_OFFLOAD4res` (RFC 7862 §16.1.2).
pub type CbOffload4Res = Res4<()>;

/// `CB_ILLEGAL4res` (RFC 8881 §20.13).
pub type CbIllegal4Res = Res4<()>;

// ---------------------------------------------------------------------------
// CB_COMPOUND (RFC 8881 §20 / §16.2-style envelope)
// ---------------------------------------------------------------------------

/// `nfs_cb_argop4` (RFC 8881 §20): one operation of a CB_COMPOUND request.
/// Unknown operation numbers decode as [`NfsCbArgOp4::Unknown`] (with no
/// body).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Pack, Unpack)]
pub enum NfsCbArgOp4 {
    #[xdr(value = NfsCbOpNum4::CbGetattr)]
    CbGetattr(CbGetattr4Args),
    #[xdr(value = NfsCbOpNum4::CbRecall)]
    CbRecall(CbRecall4Args),
    #[xdr(value = NfsCbOpNum4::CbLayoutRecall)]
    CbLayoutRecall(CbLayoutRecall4Args),
    #[xdr(value = NfsCbOpNum4::CbNotify)]
    CbNotify(CbNotify4Args),
    #[xdr(value = NfsCbOpNum4::CbPushDeleg)]
    CbPushDeleg(CbPushDeleg4Args),
    #[xdr(value = NfsCbOpNum4::CbRecallAny)]
    CbRecallAny(CbRecallAny4Args),
    #[xdr(value = NfsCbOpNum4::CbRecallableObjAvail)]
    CbRecallableObjAvail(CbRecallableObjAvail4Args),
    #[xdr(value = NfsCbOpNum4::CbRecallSlot)]
    CbRecallSlot(CbRecallSlot4Args),
    #[xdr(value = NfsCbOpNum4::CbSequence)]
    CbSequence(CbSequence4Args),
    #[xdr(value = NfsCbOpNum4::CbWantsCancelled)]
    CbWantsCancelled(CbWantsCancelled4Args),
    #[xdr(value = NfsCbOpNum4::CbNotifyLock)]
    CbNotifyLock(CbNotifyLock4Args),
    #[xdr(value = NfsCbOpNum4::CbNotifyDeviceId)]
    CbNotifyDeviceId(CbNotifyDeviceId4Args),
    #[xdr(value = NfsCbOpNum4::CbOffload)]
    CbOffload(CbOffload4Args),
    #[xdr(value = NfsCbOpNum4::CbIllegal)]
    CbIllegal,
    #[xdr(default)]
    Unknown(u32),
}

impl NfsCbArgOp4 {
    /// The operation number on the wire.
    pub fn opnum(&self) -> u32 {
        xdr::Union::discriminant(self)
    }
}

/// `nfs_cb_resop4` (RFC 8881 §20): one result of a CB_COMPOUND reply.
/// Unknown operation numbers decode as [`NfsCbResOp4::Unknown`] (with no
/// body; the rest of the reply cannot be decoded after it). Its
/// `status()` is the operation's.
#[derive(Debug, Clone, PartialEq, Pack, Unpack)]
#[xdr(each = status, returns = NfsStat4, otherwise = NfsStat4::Nfs4errOpIllegal)]
pub enum NfsCbResOp4 {
    #[xdr(value = NfsCbOpNum4::CbGetattr)]
    CbGetattr(CbGetattr4Res),
    #[xdr(value = NfsCbOpNum4::CbRecall)]
    CbRecall(CbRecall4Res),
    #[xdr(value = NfsCbOpNum4::CbLayoutRecall)]
    CbLayoutRecall(CbLayoutRecall4Res),
    #[xdr(value = NfsCbOpNum4::CbNotify)]
    CbNotify(CbNotify4Res),
    #[xdr(value = NfsCbOpNum4::CbPushDeleg)]
    CbPushDeleg(CbPushDeleg4Res),
    #[xdr(value = NfsCbOpNum4::CbRecallAny)]
    CbRecallAny(CbRecallAny4Res),
    #[xdr(value = NfsCbOpNum4::CbRecallableObjAvail)]
    CbRecallableObjAvail(CbRecallableObjAvail4Res),
    #[xdr(value = NfsCbOpNum4::CbRecallSlot)]
    CbRecallSlot(CbRecallSlot4Res),
    #[xdr(value = NfsCbOpNum4::CbSequence)]
    CbSequence(CbSequence4Res),
    #[xdr(value = NfsCbOpNum4::CbWantsCancelled)]
    CbWantsCancelled(CbWantsCancelled4Res),
    #[xdr(value = NfsCbOpNum4::CbNotifyLock)]
    CbNotifyLock(CbNotifyLock4Res),
    #[xdr(value = NfsCbOpNum4::CbNotifyDeviceId)]
    CbNotifyDeviceId(CbNotifyDeviceId4Res),
    #[xdr(value = NfsCbOpNum4::CbOffload)]
    CbOffload(CbOffload4Res),
    #[xdr(value = NfsCbOpNum4::CbIllegal)]
    CbIllegal(CbIllegal4Res),
    #[xdr(default)]
    Unknown(u32),
}

impl NfsCbResOp4 {
    /// The operation number on the wire.
    pub fn opnum(&self) -> u32 {
        xdr::Union::discriminant(self)
    }
}

/// `CB_COMPOUND4args` (RFC 8881 §20). `callback_ident` is unused in
/// NFSv4.1 (the session identifies the client).
#[derive(Debug, Clone, PartialEq, Pack, Unpack)]
pub struct CbCompound4Args {
    pub tag: Utf8StrCs,
    pub minorversion: u32,
    pub callback_ident: u32,
    pub argarray: Vec<NfsCbArgOp4>,
}

/// `CB_COMPOUND4res` (RFC 8881 §20).
#[derive(Debug, Clone, PartialEq, Pack, Unpack)]
pub struct CbCompound4Res {
    pub status: NfsStat4,
    pub tag: Utf8StrCs,
    pub resarray: Vec<NfsCbResOp4>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sid() -> SessionId4 {
        [7; 16]
    }

    #[test]
    fn sequence_and_recall_roundtrip() {
        let args = CbCompound4Args {
            tag: Bytes::from_static(b"cb"),
            minorversion: 1,
            callback_ident: 0,
            argarray: vec![
                NfsCbArgOp4::CbSequence(CbSequence4Args {
                    sessionid: sid(),
                    sequenceid: 5,
                    slotid: 0,
                    highest_slotid: 0,
                    cachethis: false,
                    referring_call_lists: vec![ReferringCallList4 {
                        sessionid: sid(),
                        referring_calls: vec![ReferringCall4 {
                            sequenceid: 9,
                            slotid: 2,
                        }],
                    }],
                }),
                NfsCbArgOp4::CbRecall(CbRecall4Args {
                    stateid: StateId4 {
                        seqid: 1,
                        other: [3; 12],
                    },
                    truncate: true,
                    fh: NfsFh4(Bytes::from_static(&[1, 2, 3])),
                }),
            ],
        };
        let b = xdr::to_bytes(&args);
        // tag, minorversion, callback_ident, count, then CB_SEQUENCE opnum
        assert_eq!(
            &b[..24],
            &[0, 0, 0, 2, b'c', b'b', 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 11][..]
        );
        assert_eq!(xdr::from_bytes::<CbCompound4Args>(b).unwrap(), args);
        assert_eq!(args.argarray[1].opnum(), 4);

        let res = CbCompound4Res {
            status: NfsStat4::Nfs4Ok,
            tag: Bytes::from_static(b"cb"),
            resarray: vec![
                NfsCbResOp4::CbSequence(Res4::Ok(CbSequence4ResOk {
                    sessionid: sid(),
                    sequenceid: 5,
                    slotid: 0,
                    highest_slotid: 0,
                    target_highest_slotid: 0,
                })),
                NfsCbResOp4::CbRecall(Res4::Err(NfsStat4::Nfs4errBadhandle)),
            ],
        };
        let b = xdr::to_bytes(&res);
        let back = xdr::from_bytes::<CbCompound4Res>(b).unwrap();
        assert_eq!(back, res);
        assert_eq!(back.resarray[1].status(), NfsStat4::Nfs4errBadhandle);
        assert_eq!(back.resarray[0].opnum(), 11);
    }

    #[test]
    fn layoutrecall_notify_offload_roundtrip() {
        let ops = vec![
            NfsCbArgOp4::CbLayoutRecall(CbLayoutRecall4Args {
                layout_type: LAYOUT4_NFSV4_1_FILES,
                iomode: LayoutIoMode4::Any,
                changed: false,
                recall: LayoutRecall4::Fsid(FsId4 { major: 1, minor: 2 }),
            }),
            NfsCbArgOp4::CbNotify(CbNotify4Args {
                stateid: StateId4::default(),
                fh: NfsFh4(Bytes::from_static(b"fh")),
                changes: vec![Notify4::one(
                    NotifyType4::RemoveEntry as u32,
                    &NotifyRemove4 {
                        old_entry: NotifyEntry4 {
                            file: Bytes::from_static(b"x"),
                            attrs: Fattr4::default(),
                        },
                        old_entry_cookie: 3,
                    },
                )],
            }),
            NfsCbArgOp4::CbOffload(CbOffload4Args {
                fh: NfsFh4(Bytes::from_static(b"fh")),
                stateid: StateId4::default(),
                offload_info: OffloadInfo4::Err {
                    status: NfsStat4::Nfs4errNospc,
                    bytes_copied: 4096,
                },
            }),
            NfsCbArgOp4::CbRecallAny(CbRecallAny4Args {
                objects_to_keep: 0,
                type_mask: Bitmap4::from_attrs(&[RCA4_TYPE_MASK_RDATA_DLG]),
            }),
            NfsCbArgOp4::CbIllegal,
        ];
        let b = xdr::to_bytes(&ops);
        assert_eq!(xdr::from_bytes::<Vec<NfsCbArgOp4>>(b).unwrap(), ops);
        // unknown opnum
        let u: NfsCbArgOp4 = xdr::from_bytes(xdr::to_bytes(&99u32)).unwrap();
        assert_eq!(u, NfsCbArgOp4::Unknown(99));
    }
}
