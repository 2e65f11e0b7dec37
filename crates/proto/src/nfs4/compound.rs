//! COMPOUND (RFC 8881 §16.2): the request and reply envelopes and the
//! per-operation unions.

use xdr::{Pack, Unpack};

use super::*;

/// RFC 8881 §16.2.3: `nfs_argop4`, one operation of a COMPOUND request.
/// Operations without arguments are unit variants. Operation numbers this
/// crate does not know decode as [`NfsArgOp4::Unknown`] so the server can
/// answer OP_ILLEGAL.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Pack, Unpack)]
pub enum NfsArgOp4 {
    #[xdr(value = OpNum4::Access)]
    Access(Access4Args),
    #[xdr(value = OpNum4::Close)]
    Close(Close4Args),
    #[xdr(value = OpNum4::Commit)]
    Commit(Commit4Args),
    #[xdr(value = OpNum4::Create)]
    Create(Create4Args),
    #[xdr(value = OpNum4::DelegPurge)]
    DelegPurge(DelegPurge4Args),
    #[xdr(value = OpNum4::DelegReturn)]
    DelegReturn(DelegReturn4Args),
    #[xdr(value = OpNum4::GetAttr)]
    GetAttr(GetAttr4Args),
    #[xdr(value = OpNum4::GetFh)]
    GetFh,
    #[xdr(value = OpNum4::Link)]
    Link(Link4Args),
    #[xdr(value = OpNum4::Lock)]
    Lock(Lock4Args),
    #[xdr(value = OpNum4::LockT)]
    LockT(LockT4Args),
    #[xdr(value = OpNum4::LockU)]
    LockU(LockU4Args),
    #[xdr(value = OpNum4::Lookup)]
    Lookup(Lookup4Args),
    #[xdr(value = OpNum4::LookupP)]
    LookupP,
    #[xdr(value = OpNum4::NVerify)]
    NVerify(NVerify4Args),
    #[xdr(value = OpNum4::Open)]
    Open(Open4Args),
    #[xdr(value = OpNum4::OpenAttr)]
    OpenAttr(OpenAttr4Args),
    #[xdr(value = OpNum4::OpenConfirm)]
    OpenConfirm(OpenConfirm4Args),
    #[xdr(value = OpNum4::OpenDowngrade)]
    OpenDowngrade(OpenDowngrade4Args),
    #[xdr(value = OpNum4::PutFh)]
    PutFh(PutFh4Args),
    #[xdr(value = OpNum4::PutPubFh)]
    PutPubFh,
    #[xdr(value = OpNum4::PutRootFh)]
    PutRootFh,
    #[xdr(value = OpNum4::Read)]
    Read(Read4Args),
    #[xdr(value = OpNum4::ReadDir)]
    ReadDir(ReadDir4Args),
    #[xdr(value = OpNum4::ReadLink)]
    ReadLink,
    #[xdr(value = OpNum4::Remove)]
    Remove(Remove4Args),
    #[xdr(value = OpNum4::Rename)]
    Rename(Rename4Args),
    #[xdr(value = OpNum4::Renew)]
    Renew(Renew4Args),
    #[xdr(value = OpNum4::RestoreFh)]
    RestoreFh,
    #[xdr(value = OpNum4::SaveFh)]
    SaveFh,
    #[xdr(value = OpNum4::SecInfo)]
    SecInfo(SecInfo4Args),
    #[xdr(value = OpNum4::SetAttr)]
    SetAttr(SetAttr4Args),
    #[xdr(value = OpNum4::SetClientId)]
    SetClientId(SetClientId4Args),
    #[xdr(value = OpNum4::SetClientIdConfirm)]
    SetClientIdConfirm(SetClientIdConfirm4Args),
    #[xdr(value = OpNum4::Verify)]
    Verify(Verify4Args),
    #[xdr(value = OpNum4::Write)]
    Write(Write4Args),
    #[xdr(value = OpNum4::ReleaseLockOwner)]
    ReleaseLockOwner(ReleaseLockOwner4Args),
    #[xdr(value = OpNum4::BackchannelCtl)]
    BackchannelCtl(BackchannelCtl4Args),
    #[xdr(value = OpNum4::BindConnToSession)]
    BindConnToSession(BindConnToSession4Args),
    #[xdr(value = OpNum4::ExchangeId)]
    ExchangeId(ExchangeId4Args),
    #[xdr(value = OpNum4::CreateSession)]
    CreateSession(CreateSession4Args),
    #[xdr(value = OpNum4::DestroySession)]
    DestroySession(DestroySession4Args),
    #[xdr(value = OpNum4::FreeStateId)]
    FreeStateId(FreeStateId4Args),
    #[xdr(value = OpNum4::GetDirDelegation)]
    GetDirDelegation(GetDirDelegation4Args),
    #[xdr(value = OpNum4::GetDeviceInfo)]
    GetDeviceInfo(GetDeviceInfo4Args),
    #[xdr(value = OpNum4::GetDeviceList)]
    GetDeviceList(GetDeviceList4Args),
    #[xdr(value = OpNum4::LayoutCommit)]
    LayoutCommit(LayoutCommit4Args),
    #[xdr(value = OpNum4::LayoutGet)]
    LayoutGet(LayoutGet4Args),
    #[xdr(value = OpNum4::LayoutReturn)]
    LayoutReturn(LayoutReturn4Args),
    #[xdr(value = OpNum4::SecInfoNoName)]
    SecInfoNoName(SecInfoNoName4Args),
    #[xdr(value = OpNum4::Sequence)]
    Sequence(Sequence4Args),
    #[xdr(value = OpNum4::SetSsv)]
    SetSsv(SetSsv4Args),
    #[xdr(value = OpNum4::TestStateId)]
    TestStateId(TestStateId4Args),
    #[xdr(value = OpNum4::WantDelegation)]
    WantDelegation(WantDelegation4Args),
    #[xdr(value = OpNum4::DestroyClientId)]
    DestroyClientId(DestroyClientId4Args),
    #[xdr(value = OpNum4::ReclaimComplete)]
    ReclaimComplete(ReclaimComplete4Args),
    #[xdr(value = OpNum4::Allocate)]
    Allocate(Allocate4Args),
    #[xdr(value = OpNum4::Copy)]
    Copy(Copy4Args),
    #[xdr(value = OpNum4::CopyNotify)]
    CopyNotify(CopyNotify4Args),
    #[xdr(value = OpNum4::Deallocate)]
    Deallocate(Deallocate4Args),
    #[xdr(value = OpNum4::IoAdvise)]
    IoAdvise(IoAdvise4Args),
    #[xdr(value = OpNum4::LayoutError)]
    LayoutError(LayoutError4Args),
    #[xdr(value = OpNum4::LayoutStats)]
    LayoutStats(LayoutStats4Args),
    #[xdr(value = OpNum4::OffloadCancel)]
    OffloadCancel(OffloadCancel4Args),
    #[xdr(value = OpNum4::OffloadStatus)]
    OffloadStatus(OffloadStatus4Args),
    #[xdr(value = OpNum4::ReadPlus)]
    ReadPlus(ReadPlus4Args),
    #[xdr(value = OpNum4::Seek)]
    Seek(Seek4Args),
    #[xdr(value = OpNum4::WriteSame)]
    WriteSame(WriteSame4Args),
    #[xdr(value = OpNum4::Clone)]
    Clone(Clone4Args),
    #[xdr(value = OpNum4::GetXattr)]
    GetXattr(GetXattr4Args),
    #[xdr(value = OpNum4::SetXattr)]
    SetXattr(SetXattr4Args),
    #[xdr(value = OpNum4::ListXattrs)]
    ListXattrs(ListXattrs4Args),
    #[xdr(value = OpNum4::RemoveXattr)]
    RemoveXattr(RemoveXattr4Args),
    #[xdr(value = OpNum4::Illegal)]
    Illegal,
    /// An operation number that is not defined.
    #[xdr(default)]
    Unknown(u32),
}

impl NfsArgOp4 {
    /// The operation number on the wire.
    pub fn opnum(&self) -> u32 {
        xdr::Union::discriminant(self)
    }
}

/// RFC 8881 §16.2.3: `nfs_resop4`, the result of one operation; its
/// `status()` is the operation's `nfsstat4`.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Pack, Unpack)]
#[xdr(each = status, returns = NfsStat4, otherwise = NfsStat4::Nfs4errOpIllegal)]
pub enum NfsResOp4 {
    #[xdr(value = OpNum4::Access)]
    Access(Access4Res),
    #[xdr(value = OpNum4::Close)]
    Close(Close4Res),
    #[xdr(value = OpNum4::Commit)]
    Commit(Commit4Res),
    #[xdr(value = OpNum4::Create)]
    Create(Create4Res),
    #[xdr(value = OpNum4::DelegPurge)]
    DelegPurge(DelegPurge4Res),
    #[xdr(value = OpNum4::DelegReturn)]
    DelegReturn(DelegReturn4Res),
    #[xdr(value = OpNum4::GetAttr)]
    GetAttr(GetAttr4Res),
    #[xdr(value = OpNum4::GetFh)]
    GetFh(GetFh4Res),
    #[xdr(value = OpNum4::Link)]
    Link(Link4Res),
    #[xdr(value = OpNum4::Lock)]
    Lock(Lock4Res),
    #[xdr(value = OpNum4::LockT)]
    LockT(LockT4Res),
    #[xdr(value = OpNum4::LockU)]
    LockU(LockU4Res),
    #[xdr(value = OpNum4::Lookup)]
    Lookup(Lookup4Res),
    #[xdr(value = OpNum4::LookupP)]
    LookupP(LookupP4Res),
    #[xdr(value = OpNum4::NVerify)]
    NVerify(NVerify4Res),
    #[xdr(value = OpNum4::Open)]
    Open(Open4Res),
    #[xdr(value = OpNum4::OpenAttr)]
    OpenAttr(OpenAttr4Res),
    #[xdr(value = OpNum4::OpenConfirm)]
    OpenConfirm(OpenConfirm4Res),
    #[xdr(value = OpNum4::OpenDowngrade)]
    OpenDowngrade(OpenDowngrade4Res),
    #[xdr(value = OpNum4::PutFh)]
    PutFh(PutFh4Res),
    #[xdr(value = OpNum4::PutPubFh)]
    PutPubFh(PutPubFh4Res),
    #[xdr(value = OpNum4::PutRootFh)]
    PutRootFh(PutRootFh4Res),
    #[xdr(value = OpNum4::Read)]
    Read(Read4Res),
    #[xdr(value = OpNum4::ReadDir)]
    ReadDir(ReadDir4Res),
    #[xdr(value = OpNum4::ReadLink)]
    ReadLink(ReadLink4Res),
    #[xdr(value = OpNum4::Remove)]
    Remove(Remove4Res),
    #[xdr(value = OpNum4::Rename)]
    Rename(Rename4Res),
    #[xdr(value = OpNum4::Renew)]
    Renew(Renew4Res),
    #[xdr(value = OpNum4::RestoreFh)]
    RestoreFh(RestoreFh4Res),
    #[xdr(value = OpNum4::SaveFh)]
    SaveFh(SaveFh4Res),
    #[xdr(value = OpNum4::SecInfo)]
    SecInfo(SecInfo4Res),
    #[xdr(value = OpNum4::SetAttr)]
    SetAttr(SetAttr4Res),
    #[xdr(value = OpNum4::SetClientId)]
    SetClientId(SetClientId4Res),
    #[xdr(value = OpNum4::SetClientIdConfirm)]
    SetClientIdConfirm(SetClientIdConfirm4Res),
    #[xdr(value = OpNum4::Verify)]
    Verify(Verify4Res),
    #[xdr(value = OpNum4::Write)]
    Write(Write4Res),
    #[xdr(value = OpNum4::ReleaseLockOwner)]
    ReleaseLockOwner(ReleaseLockOwner4Res),
    #[xdr(value = OpNum4::BackchannelCtl)]
    BackchannelCtl(BackchannelCtl4Res),
    #[xdr(value = OpNum4::BindConnToSession)]
    BindConnToSession(BindConnToSession4Res),
    #[xdr(value = OpNum4::ExchangeId)]
    ExchangeId(ExchangeId4Res),
    #[xdr(value = OpNum4::CreateSession)]
    CreateSession(CreateSession4Res),
    #[xdr(value = OpNum4::DestroySession)]
    DestroySession(DestroySession4Res),
    #[xdr(value = OpNum4::FreeStateId)]
    FreeStateId(FreeStateId4Res),
    #[xdr(value = OpNum4::GetDirDelegation)]
    GetDirDelegation(GetDirDelegation4Res),
    #[xdr(value = OpNum4::GetDeviceInfo)]
    GetDeviceInfo(GetDeviceInfo4Res),
    #[xdr(value = OpNum4::GetDeviceList)]
    GetDeviceList(GetDeviceList4Res),
    #[xdr(value = OpNum4::LayoutCommit)]
    LayoutCommit(LayoutCommit4Res),
    #[xdr(value = OpNum4::LayoutGet)]
    LayoutGet(LayoutGet4Res),
    #[xdr(value = OpNum4::LayoutReturn)]
    LayoutReturn(LayoutReturn4Res),
    #[xdr(value = OpNum4::SecInfoNoName)]
    SecInfoNoName(SecInfoNoName4Res),
    #[xdr(value = OpNum4::Sequence)]
    Sequence(Sequence4Res),
    #[xdr(value = OpNum4::SetSsv)]
    SetSsv(SetSsv4Res),
    #[xdr(value = OpNum4::TestStateId)]
    TestStateId(TestStateId4Res),
    #[xdr(value = OpNum4::WantDelegation)]
    WantDelegation(WantDelegation4Res),
    #[xdr(value = OpNum4::DestroyClientId)]
    DestroyClientId(DestroyClientId4Res),
    #[xdr(value = OpNum4::ReclaimComplete)]
    ReclaimComplete(ReclaimComplete4Res),
    #[xdr(value = OpNum4::Allocate)]
    Allocate(Allocate4Res),
    #[xdr(value = OpNum4::Copy)]
    Copy(Copy4Res),
    #[xdr(value = OpNum4::CopyNotify)]
    CopyNotify(CopyNotify4Res),
    #[xdr(value = OpNum4::Deallocate)]
    Deallocate(Deallocate4Res),
    #[xdr(value = OpNum4::IoAdvise)]
    IoAdvise(IoAdvise4Res),
    #[xdr(value = OpNum4::LayoutError)]
    LayoutError(LayoutError4Res),
    #[xdr(value = OpNum4::LayoutStats)]
    LayoutStats(LayoutStats4Res),
    #[xdr(value = OpNum4::OffloadCancel)]
    OffloadCancel(OffloadCancel4Res),
    #[xdr(value = OpNum4::OffloadStatus)]
    OffloadStatus(OffloadStatus4Res),
    #[xdr(value = OpNum4::ReadPlus)]
    ReadPlus(ReadPlus4Res),
    #[xdr(value = OpNum4::Seek)]
    Seek(Seek4Res),
    #[xdr(value = OpNum4::WriteSame)]
    WriteSame(WriteSame4Res),
    #[xdr(value = OpNum4::Clone)]
    Clone(Clone4Res),
    #[xdr(value = OpNum4::GetXattr)]
    GetXattr(GetXattr4Res),
    #[xdr(value = OpNum4::SetXattr)]
    SetXattr(SetXattr4Res),
    #[xdr(value = OpNum4::ListXattrs)]
    ListXattrs(ListXattrs4Res),
    #[xdr(value = OpNum4::RemoveXattr)]
    RemoveXattr(RemoveXattr4Res),
    #[xdr(value = OpNum4::Illegal)]
    Illegal(Illegal4Res),
    /// An operation number that is not defined (only seen when decoding a
    /// peer's reply; a server answers unknown operations with `Illegal`).
    #[xdr(default)]
    Unknown(u32),
}

impl NfsResOp4 {
    /// The operation number on the wire.
    pub fn opnum(&self) -> u32 {
        xdr::Union::discriminant(self)
    }
}

/// RFC 8881 §16.2.1: `COMPOUND4args`.
#[derive(Debug, Clone, PartialEq, Pack, Unpack)]
pub struct Compound4Args {
    pub tag: Utf8StrCs,
    pub minorversion: u32,
    pub argarray: Vec<NfsArgOp4>,
}

/// The fixed head of `COMPOUND4args` (`tag`, `minorversion`), for servers
/// that read the operation count themselves and then decode the
/// operations one [`NfsArgOp4`] at a time.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct Compound4ArgsHeader {
    pub tag: Utf8StrCs,
    pub minorversion: u32,
}

/// RFC 8881 §16.2.2: `COMPOUND4res`.
#[derive(Debug, Clone, PartialEq, Pack, Unpack)]
pub struct Compound4Res {
    pub status: NfsStat4,
    pub tag: Utf8StrCs,
    pub resarray: Vec<NfsResOp4>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use xdr::{from_bytes, to_bytes, Decoder};

    fn sid(n: u8) -> StateId4 {
        StateId4 {
            seqid: n as u32,
            other: [n; 12],
        }
    }

    fn roundtrip<T: Pack + Unpack + PartialEq + std::fmt::Debug>(v: &T) {
        let b = to_bytes(v);
        assert_eq!(&from_bytes::<T>(b).unwrap(), v);
    }

    fn sequence() -> Sequence4Args {
        Sequence4Args {
            sessionid: [7; 16],
            sequenceid: 1,
            slotid: 0,
            highest_slotid: 3,
            cachethis: true,
        }
    }

    #[test]
    fn compound_sequence_putrootfh_getattr() {
        let args = Compound4Args {
            tag: Bytes::from_static(b"mount"),
            minorversion: 2,
            argarray: vec![
                NfsArgOp4::Sequence(sequence()),
                NfsArgOp4::PutRootFh,
                NfsArgOp4::GetAttr(GetAttr4Args {
                    attr_request: Bitmap4(vec![0x0010_011a, 0x00b0_a23a]),
                }),
            ],
        };
        roundtrip(&args);
        let opnums: Vec<u32> = args.argarray.iter().map(|o| o.opnum()).collect();
        assert_eq!(opnums, vec![53, 24, 9]);

        let res = Compound4Res {
            status: NfsStat4::Nfs4Ok,
            tag: Bytes::from_static(b"mount"),
            resarray: vec![
                NfsResOp4::Sequence(Res4::Ok(Sequence4ResOk {
                    sessionid: [7; 16],
                    sequenceid: 1,
                    slotid: 0,
                    highest_slotid: 63,
                    target_highest_slotid: 63,
                    status_flags: 0,
                })),
                NfsResOp4::PutRootFh(Res4::Ok(())),
                NfsResOp4::GetAttr(Res4::Ok(GetAttr4ResOk {
                    obj_attributes: Fattr4 {
                        attrmask: Bitmap4(vec![1 << 4]),
                        attr_vals: Bytes::from_static(&[0, 0, 0, 0, 0, 0, 16, 0]),
                    },
                })),
            ],
        };
        roundtrip(&res);
        assert!(res.resarray.iter().all(|r| r.status() == NfsStat4::Nfs4Ok));

        // A failed op ends the reply: status only.
        let err = NfsResOp4::GetAttr(Res4::Err(NfsStat4::Nfs4errNofilehandle));
        assert_eq!(&to_bytes(&err)[..], &[0, 0, 0, 9, 0, 0, 0x27, 0x24]);
        assert_eq!(err.status(), NfsStat4::Nfs4errNofilehandle);
    }

    #[test]
    fn header_then_ops_one_at_a_time() {
        let args = Compound4Args {
            tag: Bytes::new(),
            minorversion: 1,
            argarray: vec![NfsArgOp4::Sequence(sequence()), NfsArgOp4::GetFh],
        };
        let mut d = Decoder::new(to_bytes(&args));
        let h = Compound4ArgsHeader::unpack(&mut d).unwrap();
        assert_eq!(h.minorversion, 1);
        assert!(h.tag.is_empty());
        let n = d.u32().unwrap();
        assert_eq!(n, 2);
        assert_eq!(
            NfsArgOp4::unpack(&mut d).unwrap(),
            NfsArgOp4::Sequence(sequence())
        );
        assert_eq!(NfsArgOp4::unpack(&mut d).unwrap(), NfsArgOp4::GetFh);
        assert_eq!(d.remaining(), 0);
    }

    #[test]
    fn unknown_and_illegal_opnums() {
        // opnum 2 is not an operation; 10044 is OP_ILLEGAL; 9999 unknown.
        let b = Bytes::from_static(&[0, 0, 0, 2]);
        assert_eq!(from_bytes::<NfsArgOp4>(b).unwrap(), NfsArgOp4::Unknown(2));
        let b = Bytes::from_static(&[0, 0, 0x27, 0x0f]);
        let op = from_bytes::<NfsArgOp4>(b).unwrap();
        assert_eq!(op, NfsArgOp4::Unknown(9999));
        assert_eq!(op.opnum(), 9999);
        let b = Bytes::from_static(&[0, 0, 0x27, 0x3c]);
        assert_eq!(from_bytes::<NfsArgOp4>(b).unwrap(), NfsArgOp4::Illegal);

        let r = NfsResOp4::Illegal(Res4::Err(NfsStat4::Nfs4errOpIllegal));
        assert_eq!(r.opnum(), 10044);
        assert_eq!(NfsResOp4::Unknown(77).opnum(), 77);
        assert_eq!(NfsResOp4::Unknown(77).status(), NfsStat4::Nfs4errOpIllegal);
        assert_eq!(&to_bytes(&r)[..], &[0, 0, 0x27, 0x3c, 0, 0, 0x27, 0x3c]);
        roundtrip(&r);

        // A truncated known op is a decode error (the server's BADXDR).
        let b = Bytes::from_static(&[0, 0, 0, 3]);
        assert!(from_bytes::<NfsArgOp4>(b).is_err());
    }

    #[test]
    fn readdir_list_roundtrip() {
        let entry = |c: u64, n: &'static [u8]| Entry4 {
            cookie: c,
            name: Bytes::from_static(n),
            attrs: Fattr4 {
                attrmask: Bitmap4(vec![0, 1 << 3]),
                attr_vals: Bytes::from_static(&[0, 0, 0, 0, 0, 0, 0, 42]),
            },
        };
        let ok = ReadDir4ResOk {
            cookieverf: [1; 8],
            reply: DirList4 {
                entries: vec![entry(3, b"a"), entry(4, b"hello"), entry(5, b"wxyz")],
                eof: true,
            },
        };
        let res = NfsResOp4::ReadDir(Res4::Ok(ok.clone()));
        roundtrip(&res);

        // Entry sizes add up to the encoding.
        let body: usize = ok.reply.entries.iter().map(DirList4::entry_wire_len).sum();
        assert_eq!(to_bytes(&ok.reply).len(), body + 8);

        // Empty list: FALSE then eof.
        let empty = DirList4 {
            entries: vec![],
            eof: true,
        };
        assert_eq!(&to_bytes(&empty)[..], &[0, 0, 0, 0, 0, 0, 0, 1]);
        roundtrip(&empty);

        // A list that never terminates fails cleanly.
        let mut v = to_bytes(&ok.reply).to_vec();
        v.truncate(v.len() - 8);
        assert!(from_bytes::<DirList4>(Bytes::from(v)).is_err());
    }

    #[test]
    fn lock_denied_roundtrip() {
        let denied = Lock4Res::Denied(Lock4Denied {
            offset: 100,
            length: u64::MAX,
            locktype: NfsLockType4::WriteLt,
            owner: StateOwner4 {
                clientid: 0x1122_3344_5566_7788,
                owner: Bytes::from_static(b"owner"),
            },
        });
        assert_eq!(denied.status(), NfsStat4::Nfs4errDenied);
        let b = to_bytes(&NfsResOp4::Lock(denied.clone()));
        assert_eq!(&b[..8], &[0, 0, 0, 12, 0, 0, 0x27, 0x1a]);
        assert_eq!(from_bytes::<NfsResOp4>(b).unwrap(), NfsResOp4::Lock(denied));

        roundtrip(&Lock4Res::Ok(Lock4ResOk {
            lock_stateid: sid(2),
        }));
        roundtrip(&Lock4Res::Err(NfsStat4::Nfs4errGrace));
        roundtrip(&LockT4Res::Ok);
        roundtrip(&LockT4Res::Err(NfsStat4::Nfs4errBadRange));

        let args = Lock4Args {
            locktype: NfsLockType4::ReadwLt,
            reclaim: false,
            offset: 0,
            length: 10,
            locker: Locker4::OpenOwner(OpenToLockOwner4 {
                open_seqid: 0,
                open_stateid: sid(1),
                lock_seqid: 0,
                lock_owner: StateOwner4 {
                    clientid: 9,
                    owner: Bytes::from_static(b"lo"),
                },
            }),
        };
        roundtrip(&NfsArgOp4::Lock(args));
    }

    #[test]
    fn op_unions_stay_small() {
        // Keep per-op decode cheap to move around.
        assert!(
            std::mem::size_of::<NfsArgOp4>() <= 256,
            "{}",
            std::mem::size_of::<NfsArgOp4>()
        );
        assert!(
            std::mem::size_of::<NfsResOp4>() <= 256,
            "{}",
            std::mem::size_of::<NfsResOp4>()
        );
    }

    #[test]
    fn putfh_and_sequence_byte_exact() {
        // PUTFH: opnum 22, then nfs_fh4 as opaque<128> with padding.
        let op = NfsArgOp4::PutFh(PutFh4Args {
            object: NfsFh4(Bytes::from_static(b"abcde")),
        });
        assert_eq!(
            &to_bytes(&op)[..],
            &[0, 0, 0, 22, 0, 0, 0, 5, b'a', b'b', b'c', b'd', b'e', 0, 0, 0]
        );

        // SEQUENCE: opnum 53, sessionid[16], sequenceid, slotid,
        // highest_slotid, cachethis.
        let mut want = vec![0, 0, 0, 53];
        want.extend([7u8; 16]);
        want.extend([0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 1]);
        assert_eq!(&to_bytes(&NfsArgOp4::Sequence(sequence()))[..], &want[..]);

        // Oversized file handle is rejected.
        let mut long = vec![0, 0, 0, 22, 0, 0, 0, 129];
        long.extend([0u8; 132]);
        assert!(from_bytes::<NfsArgOp4>(Bytes::from(long)).is_err());
    }

    #[test]
    fn open_setattr_and_session_ops() {
        let open = Open4Args {
            seqid: 0,
            share_access: OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_NO_DELEG,
            share_deny: OPEN4_SHARE_DENY_NONE,
            owner: StateOwner4 {
                clientid: 1,
                owner: Bytes::from_static(b"open id"),
            },
            openhow: OpenFlag4::Create(CreateHow4::Exclusive41(CreatVerfAttr {
                verf: [9; 8],
                attrs: Fattr4::default(),
            })),
            claim: OpenClaim4::Null(Bytes::from_static(b"file")),
        };
        roundtrip(&NfsArgOp4::Open(open));
        for claim in [
            OpenClaim4::Fh,
            OpenClaim4::DelegPrevFh,
            OpenClaim4::DelegCurFh(sid(3)),
            OpenClaim4::Previous(OpenDelegationType4::OpenDelegateRead),
        ] {
            roundtrip(&claim);
        }
        let ok = Open4ResOk {
            stateid: sid(1),
            cinfo: ChangeInfo4 {
                atomic: true,
                before: 1,
                after: 2,
            },
            rflags: OPEN4_RESULT_LOCKTYPE_POSIX,
            attrset: Bitmap4::default(),
            delegation: OpenDelegation4::NoneExt(OpenNoneDelegation4::Other(
                WhyNoDelegation4::Wnd4NotWanted,
            )),
        };
        roundtrip(&NfsResOp4::Open(Res4::Ok(ok)));
        roundtrip(&OpenDelegation4::NoneExt(OpenNoneDelegation4::Contention(
            true,
        )));

        // SETATTR4res carries the bitmap even on error.
        let r = SetAttr4Res {
            status: NfsStat4::Nfs4errPerm,
            attrsset: Bitmap4::default(),
        };
        assert_eq!(&to_bytes(&r)[..], &[0, 0, 0, 1, 0, 0, 0, 0]);

        let cs = CreateSession4Args {
            clientid: 5,
            sequence: 1,
            flags: CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
            fore_chan_attrs: ChannelAttrs4 {
                maxrequestsize: 1 << 20,
                ..Default::default()
            },
            back_chan_attrs: ChannelAttrs4::default(),
            cb_program: 0x4000_0000,
            sec_parms: vec![
                CallbackSecParms4::AuthNone,
                CallbackSecParms4::AuthSys(AuthSysParms {
                    stamp: 1,
                    machinename: Bytes::from_static(b"host"),
                    uid: 0,
                    gid: 0,
                    gids: vec![1, 2],
                }),
            ],
        };
        roundtrip(&NfsArgOp4::CreateSession(cs));

        let eid = ExchangeId4Args {
            clientowner: ClientOwner4 {
                verifier: [1; 8],
                ownerid: Bytes::from_static(b"Linux NFSv4.2 host"),
            },
            flags: EXCHGID4_FLAG_USE_NON_PNFS,
            state_protect: StateProtect4A::None,
            client_impl_id: None,
        };
        roundtrip(&NfsArgOp4::ExchangeId(eid));
    }

    #[test]
    fn read_write_and_v42_ops() {
        let data = Bytes::from(vec![5u8; 5000]);
        let w = NfsArgOp4::Write(Write4Args {
            stateid: sid(1),
            offset: 4096,
            stable: StableHow4::FileSync4,
            data: data.clone(),
        });
        let msg = to_bytes(&w);
        let back = from_bytes::<NfsArgOp4>(msg.clone()).unwrap();
        match &back {
            NfsArgOp4::Write(a) => {
                assert_eq!(a.data, data);
                // zero-copy: the payload is a slice of the message
                assert_eq!(a.data.as_ptr(), msg[4 + 16 + 8 + 4 + 4..].as_ptr());
            }
            other => panic!("{other:?}"),
        }

        roundtrip(&NfsResOp4::Read(Res4::Ok(Read4ResOk {
            eof: true,
            data: data.into(),
        })));
        roundtrip(&NfsResOp4::Seek(Res4::Ok(SeekRes4 {
            eof: false,
            offset: 8192,
        })));
        roundtrip(&NfsResOp4::ReadPlus(Res4::Ok(ReadPlusRes4 {
            eof: true,
            contents: vec![
                ReadPlusContent::Data(Data4 {
                    offset: 0,
                    data: Bytes::from_static(b"xyz"),
                }),
                ReadPlusContent::Hole(DataInfo4 {
                    offset: 3,
                    length: 100,
                }),
            ],
        })));
        roundtrip(&NfsResOp4::Copy(Copy4Res::NoReqs(CopyRequirements4 {
            consecutive: true,
            synchronous: false,
        })));
        roundtrip(&NfsArgOp4::Copy(Copy4Args {
            src_stateid: sid(1),
            dst_stateid: sid(2),
            src_offset: 0,
            dst_offset: 0,
            count: 0,
            consecutive: true,
            synchronous: true,
            source_server: vec![NetLoc4::NetAddr(NetAddr4 {
                netid: "tcp".into(),
                addr: "10.0.0.1.8.1".into(),
            })],
        }));
        roundtrip(&NfsArgOp4::Clone(Clone4Args {
            src_stateid: sid(1),
            dst_stateid: sid(2),
            src_offset: 0,
            dst_offset: 4096,
            count: 4096,
        }));
        roundtrip(&NfsArgOp4::Create(Create4Args {
            objtype: CreateType4::Link(Bytes::from_static(b"../target")),
            objname: Bytes::from_static(b"l"),
            createattrs: Fattr4::default(),
        }));
        roundtrip(&CreateType4::Other(1));
        roundtrip(&NfsResOp4::SecInfoNoName(Res4::Ok(vec![
            SecInfo4::RpcSecGss(RpcSecGssInfo {
                oid: Bytes::from_static(&[0x2a, 0x86, 0x48]),
                qop: 0,
                service: RpcGssSvc::RpcGssSvcIntegrity,
            }),
            SecInfo4::Flavor(AUTH_SYS),
        ])));
        roundtrip(&NfsResOp4::LayoutReturn(Res4::Ok(Some(sid(4)))));
    }
}
