//! The operations a COMPOUND runs after SEQUENCE, and the filehandles,
//! stateids and owners they name, picked among earlier results.

use bytes::Bytes;
use proto::nfs4::*;

use super::args::{attrs, count, length, lock_type, mask, name, offset, sec_parms, share_access};
use super::program::{op, Input, OPS};
use super::world::World;

impl World {
    /// SEQUENCE: session, slot, and how the sequence id relates to the
    /// slot's last (mostly the next one).
    pub(super) fn sequence(&mut self, inp: &mut Input<'_>) -> Sequence4Args {
        let which = inp.u8();
        let slotid = u32::from(inp.u8() % 10);
        let how = inp.u8();
        let (sessionid, last) = match self.sessions.get(usize::from(which) % 9) {
            Some(s) if which < 0xf0 => {
                self.cur_client = s.clientid;
                (s.id, s.slots.get(slotid as usize).copied().unwrap_or(0))
            }
            _ => ([which; 16], 0),
        };
        let sequenceid = match how & 7 {
            0..=4 => last.wrapping_add(1),
            5 => last,
            6 => last.wrapping_add(2),
            _ => inp.u32(),
        };
        Sequence4Args {
            sessionid,
            sequenceid,
            slotid,
            highest_slotid: u32::from(how >> 3 & 7).max(slotid),
            cachethis: how & 0x80 != 0,
        }
    }

    /// One operation to follow SEQUENCE.
    pub(super) fn op(&mut self, inp: &mut Input<'_>) -> NfsArgOp4 {
        use NfsArgOp4 as A;
        let code = inp.u8() % OPS;
        match code {
            op::PUTROOTFH => A::PutRootFh,
            op::PUTFH => A::PutFh(PutFh4Args {
                object: self.fh(inp),
            }),
            op::GETFH => A::GetFh,
            op::LOOKUP => A::Lookup(Lookup4Args { objname: name(inp) }),
            op::GETATTR => A::GetAttr(GetAttr4Args {
                attr_request: mask(inp),
            }),
            op::SAVEFH => A::SaveFh,
            op::RESTOREFH => A::RestoreFh,
            op::LOOKUPP => A::LookupP,
            op::ACCESS => A::Access(Access4Args {
                access: u32::from(inp.u8()) | u32::from(inp.u8() & 1) << 8,
            }),
            op::READDIR => A::ReadDir(ReadDir4Args {
                cookie: inp.pick(&[0, 1, 2, 3, 4, 100, u64::MAX]),
                cookieverf: [inp.u8() & 1; 8],
                dircount: count(inp),
                maxcount: count(inp),
                attr_request: mask(inp),
            }),
            op::CREATE => A::Create(Create4Args {
                objtype: match inp.u8() % 9 {
                    0 | 1 => CreateType4::Dir,
                    2 => CreateType4::Link(name(inp)),
                    3 => CreateType4::Fifo,
                    4 => CreateType4::Sock,
                    5 => CreateType4::Blk(SpecData4 {
                        specdata1: 8,
                        specdata2: 1,
                    }),
                    6 => CreateType4::Chr(SpecData4::default()),
                    7 => CreateType4::Other(1),
                    _ => CreateType4::Other(inp.u32()),
                },
                objname: name(inp),
                createattrs: attrs(inp),
            }),
            op::OPEN => self.open(inp),
            op::CLOSE => A::Close(Close4Args {
                seqid: 0,
                open_stateid: self.sid(inp),
            }),
            op::OPEN_DOWNGRADE => A::OpenDowngrade(OpenDowngrade4Args {
                open_stateid: self.sid(inp),
                seqid: 0,
                share_access: share_access(inp),
                share_deny: u32::from(inp.u8() % 5),
            }),
            op::READ => A::Read(Read4Args {
                stateid: self.sid(inp),
                offset: offset(inp),
                count: count(inp),
            }),
            op::WRITE => {
                let stateid = self.sid(inp);
                let offset = offset(inp);
                let stable = inp.pick(&[
                    StableHow4::Unstable4,
                    StableHow4::DataSync4,
                    StableHow4::FileSync4,
                ]);
                let len = inp.pick(&[1usize, 10, 0, 100, 4096, 4097, 65536]);
                let fill = inp.u8();
                A::Write(Write4Args {
                    stateid,
                    offset,
                    stable,
                    data: Bytes::from(vec![fill; len]),
                })
            }
            op::COMMIT => A::Commit(Commit4Args {
                offset: offset(inp),
                count: count(inp),
            }),
            op::LOCK => {
                let locktype = lock_type(inp);
                let reclaim = inp.u8() == 0xff;
                let offset = offset(inp);
                let length = length(inp);
                let locker = if inp.u8() & 1 == 0 {
                    Locker4::OpenOwner(OpenToLockOwner4 {
                        open_seqid: 0,
                        open_stateid: self.sid(inp),
                        lock_seqid: 0,
                        lock_owner: self.owner(inp),
                    })
                } else {
                    Locker4::LockOwner(ExistLockOwner4 {
                        lock_stateid: self.sid(inp),
                        lock_seqid: 0,
                    })
                };
                A::Lock(Lock4Args {
                    locktype,
                    reclaim,
                    offset,
                    length,
                    locker,
                })
            }
            op::LOCKT => A::LockT(LockT4Args {
                locktype: lock_type(inp),
                offset: offset(inp),
                length: length(inp),
                owner: self.owner(inp),
            }),
            op::LOCKU => A::LockU(LockU4Args {
                locktype: lock_type(inp),
                seqid: 0,
                lock_stateid: self.sid(inp),
                offset: offset(inp),
                length: length(inp),
            }),
            op::REMOVE => A::Remove(Remove4Args { target: name(inp) }),
            op::RENAME => A::Rename(Rename4Args {
                oldname: name(inp),
                newname: name(inp),
            }),
            op::LINK => A::Link(Link4Args { newname: name(inp) }),
            op::READLINK => A::ReadLink,
            op::SETATTR => A::SetAttr(SetAttr4Args {
                stateid: self.sid(inp),
                obj_attributes: attrs(inp),
            }),
            op::VERIFY => A::Verify(Verify4Args {
                obj_attributes: attrs(inp),
            }),
            op::NVERIFY => A::NVerify(NVerify4Args {
                obj_attributes: attrs(inp),
            }),
            op::SECINFO => A::SecInfo(SecInfo4Args { name: name(inp) }),
            op::SECINFO_NO_NAME => A::SecInfoNoName(if inp.u8() & 1 == 0 {
                SecInfoStyle4::CurrentFh
            } else {
                SecInfoStyle4::Parent
            }),
            op::TEST_STATEID => {
                let n = inp.u8() % 5;
                A::TestStateId(TestStateId4Args {
                    stateids: (0..n).map(|_| self.sid(inp)).collect(),
                })
            }
            op::FREE_STATEID => A::FreeStateId(FreeStateId4Args {
                stateid: self.sid(inp),
            }),
            op::DELEGRETURN => A::DelegReturn(DelegReturn4Args {
                deleg_stateid: self.sid(inp),
            }),
            op::SEEK => A::Seek(Seek4Args {
                stateid: self.sid(inp),
                offset: offset(inp),
                what: if inp.u8() & 1 == 0 {
                    DataContent4::Nfs4ContentData
                } else {
                    DataContent4::Nfs4ContentHole
                },
            }),
            op::ALLOCATE => A::Allocate(Allocate4Args {
                stateid: self.sid(inp),
                offset: offset(inp),
                length: length(inp),
            }),
            op::DEALLOCATE => A::Deallocate(Deallocate4Args {
                stateid: self.sid(inp),
                offset: offset(inp),
                length: length(inp),
            }),
            op::COPY => {
                let src_stateid = self.sid(inp);
                let dst_stateid = self.sid(inp);
                let flags = inp.u8();
                A::Copy(Copy4Args {
                    src_stateid,
                    dst_stateid,
                    src_offset: offset(inp),
                    dst_offset: offset(inp),
                    count: length(inp),
                    consecutive: flags & 1 != 0,
                    synchronous: flags & 2 == 0,
                    source_server: if flags & 4 == 0 {
                        Vec::new()
                    } else {
                        vec![NetLoc4::Name("elsewhere".into())]
                    },
                })
            }
            op::CLONE => A::Clone(Clone4Args {
                src_stateid: self.sid(inp),
                dst_stateid: self.sid(inp),
                src_offset: offset(inp),
                dst_offset: offset(inp),
                count: length(inp),
            }),
            op::OFFLOAD_STATUS => A::OffloadStatus(OffloadStatus4Args {
                stateid: self.sid(inp),
            }),
            op::OFFLOAD_CANCEL => A::OffloadCancel(OffloadCancel4Args {
                stateid: self.sid(inp),
            }),
            op::RECLAIM_COMPLETE => A::ReclaimComplete(ReclaimComplete4Args {
                one_fs: inp.u8() & 1 != 0,
            }),
            op::BACKCHANNEL_CTL => A::BackchannelCtl(BackchannelCtl4Args {
                cb_program: inp.pick(&[0x4000_0000, 0, u32::MAX]),
                sec_parms: sec_parms(inp),
            }),
            op::SESSIONLESS => self.sessionless(inp),
            op::SEQUENCE => A::Sequence(self.sequence(inp)),
            op::PUTPUBFH => A::PutPubFh,
            op::LAYOUTGET..=op::LAYOUTSTATS => self.pnfs_op(inp, code - op::LAYOUTGET),
            _ => match inp.u8() % 10 {
                8 => A::OpenConfirm(OpenConfirm4Args {
                    open_stateid: self.sid(inp),
                    seqid: u32::from(inp.u8() % 4),
                }),
                9 => A::ReleaseLockOwner(ReleaseLockOwner4Args {
                    lock_owner: self.owner(inp),
                }),
                0 => A::Illegal,
                1 => A::Unknown(inp.pick(&[0, 1, 2, 77, 10044, u32::MAX])),
                2 => A::OpenAttr(OpenAttr4Args { createdir: true }),
                3 => A::Renew(Renew4Args {
                    clientid: self.cur_client,
                }),
                4 => A::DelegPurge(DelegPurge4Args {
                    clientid: self.cur_client,
                }),
                5 => A::WantDelegation(WantDelegation4Args {
                    want: OPEN4_SHARE_ACCESS_WANT_ANY_DELEG,
                    claim: DelegClaim4::Fh,
                }),
                6 => A::ReadPlus(ReadPlus4Args {
                    stateid: self.sid(inp),
                    offset: offset(inp),
                    count: count(inp),
                }),
                _ => A::IoAdvise(IoAdvise4Args {
                    stateid: self.sid(inp),
                    offset: offset(inp),
                    count: length(inp),
                    hints: Bitmap4(vec![inp.u32()]),
                }),
            },
        }
    }

    /// A pNFS operation: flexible-file layouts mostly, with bodies well
    /// formed, truncated or garbage, stateids remembered or forged.
    /// `kind`: LAYOUTGET, LAYOUTRETURN, LAYOUTCOMMIT, GETDEVICEINFO,
    /// GETDEVICELIST, LAYOUTERROR, LAYOUTSTATS in that order.
    fn pnfs_op(&mut self, inp: &mut Input<'_>, kind: u8) -> NfsArgOp4 {
        use NfsArgOp4 as A;
        let layout_type = inp.pick(&[
            LAYOUT4_FLEX_FILES,
            LAYOUT4_FLEX_FILES,
            LAYOUT4_NFSV4_1_FILES,
            0,
        ]);
        let iomode = inp.pick(&[LayoutIoMode4::Rw, LayoutIoMode4::Read, LayoutIoMode4::Any]);
        let gen = self.pnfs.as_ref().map_or(0, |p| p.generation);
        let body = |inp: &mut Input<'_>| -> Bytes {
            match inp.u8() % 4 {
                0 => Bytes::new(),
                1 => FfLayoutReturn4 {
                    ioerr_report: vec![FfIoErr4 {
                        offset: 0,
                        length: u64::MAX,
                        stateid: StateId4::ANONYMOUS,
                        errors: vec![DeviceError4 {
                            deviceid: device_id(inp, gen),
                            status: NfsStat4::Nfs4errNxio,
                            opnum: OpNum4::Read,
                        }],
                    }],
                    iostats_report: Vec::new(),
                }
                .to_body(),
                2 => FfLayoutReturn4::default().to_body(),
                _ => {
                    let n = usize::from(inp.u8() % 40);
                    Bytes::copy_from_slice(inp.bytes(n))
                }
            }
        };
        match kind {
            0 => A::LayoutGet(LayoutGet4Args {
                signal_layout_avail: inp.u8() & 1 != 0,
                layout_type,
                iomode,
                offset: offset(inp),
                length: length(inp),
                minlength: inp.pick(&[0, 1, 4096, u64::MAX]),
                stateid: self.sid(inp),
                maxcount: inp.pick(&[4096, 0, 100, u32::MAX]),
            }),
            1 => A::LayoutReturn(LayoutReturn4Args {
                reclaim: inp.u8().is_multiple_of(8),
                layout_type,
                iomode,
                layoutreturn: match inp.u8() % 4 {
                    0 => LayoutReturn4::Fsid,
                    1 => LayoutReturn4::All,
                    _ => LayoutReturn4::File(LayoutReturnFile4 {
                        offset: offset(inp),
                        length: length(inp),
                        stateid: self.sid(inp),
                        body: body(inp),
                    }),
                },
            }),
            2 => A::LayoutCommit(LayoutCommit4Args {
                offset: offset(inp),
                length: length(inp),
                reclaim: inp.u8().is_multiple_of(8),
                stateid: self.sid(inp),
                last_write_offset: inp.pick(&[None, Some(0), Some(4095), Some(u64::MAX - 1)]),
                time_modify: inp.pick(&[
                    None,
                    Some(NfsTime4 {
                        seconds: 1,
                        nseconds: 0,
                    }),
                    Some(NfsTime4 {
                        seconds: -1,
                        nseconds: 2_000_000_000,
                    }),
                ]),
                layoutupdate: LayoutUpdate4 {
                    layout_type,
                    body: if inp.u8().is_multiple_of(4) {
                        body(inp)
                    } else {
                        Bytes::new()
                    },
                },
            }),
            3 => A::GetDeviceInfo(GetDeviceInfo4Args {
                device_id: device_id(inp, gen),
                layout_type,
                maxcount: inp.pick(&[4096, 0, 8, u32::MAX]),
                notify_types: Bitmap4(vec![inp.u32()]),
            }),
            4 => A::GetDeviceList(GetDeviceList4Args {
                layout_type,
                maxdevices: inp.pick(&[0, 1, 3, u32::MAX]),
                cookie: inp.pick(&[0, 1, 2, u64::MAX]),
                cookieverf: [inp.u8(); 8],
            }),
            5 => A::LayoutError(LayoutError4Args {
                offset: offset(inp),
                length: length(inp),
                stateid: self.sid(inp),
                errors: vec![DeviceError4 {
                    deviceid: device_id(inp, gen),
                    status: inp.pick(&[
                        NfsStat4::Nfs4errNxio,
                        NfsStat4::Nfs4errIo,
                        NfsStat4::Nfs4errAccess,
                    ]),
                    opnum: OpNum4::Write,
                }],
            }),
            _ => A::LayoutStats(LayoutStats4Args {
                offset: offset(inp),
                length: length(inp),
                stateid: self.sid(inp),
                read: IoInfo4::default(),
                write: IoInfo4 {
                    count: 1,
                    bytes: 4096,
                },
                deviceid: device_id(inp, gen),
                layoutupdate: LayoutUpdate4 {
                    layout_type,
                    body: body(inp),
                },
            }),
        }
    }

    fn open(&mut self, inp: &mut Input<'_>) -> NfsArgOp4 {
        let share_access = share_access(inp);
        let share_deny = u32::from(inp.u8() % 5);
        let owner = self.owner(inp);
        let how = inp.u8();
        let openhow = match how & 7 {
            2 => OpenFlag4::NoCreate,
            3 => OpenFlag4::Create(CreateHow4::Guarded(attrs(inp))),
            4 => OpenFlag4::Create(CreateHow4::Exclusive41(CreatVerfAttr {
                verf: [inp.u8() % 3; 8],
                attrs: attrs(inp),
            })),
            5 => OpenFlag4::Create(CreateHow4::Exclusive([inp.u8() % 3; 8])),
            _ => OpenFlag4::Create(CreateHow4::Unchecked(attrs(inp))),
        };
        let claim = match how >> 3 & 7 {
            0..=3 => OpenClaim4::Null(name(inp)),
            4 => OpenClaim4::Fh,
            5 => OpenClaim4::Previous(OpenDelegationType4::OpenDelegateNone),
            6 => OpenClaim4::DelegCurFh(self.sid(inp)),
            _ => match inp.u8() % 3 {
                0 => OpenClaim4::DelegateCur(OpenClaimDelegateCur4 {
                    delegate_stateid: self.sid(inp),
                    file: name(inp),
                }),
                1 => OpenClaim4::DelegatePrev(name(inp)),
                _ => OpenClaim4::DelegPrevFh,
            },
        };
        NfsArgOp4::Open(Open4Args {
            seqid: 0,
            share_access,
            share_deny,
            owner,
            openhow,
            claim,
        })
    }

    /// A filehandle a result returned (usually), a damaged one, or junk.
    fn fh(&self, inp: &mut Input<'_>) -> NfsFh4 {
        let v = inp.u8();
        if self.fhs.is_empty() || v >= 0xf0 {
            return NfsFh4(match v & 3 {
                0 => Bytes::new(),
                1 => Bytes::from(vec![0xab; NFS4_FHSIZE]),
                2 => Bytes::from(vec![v; 40]),
                _ => Bytes::from_static(&[1, 2, 3]),
            });
        }
        let fh = &self.fhs[usize::from(v) % self.fhs.len()];
        if v < 0xe0 {
            return fh.clone();
        }
        // One byte changed.
        let mut b = fh.0.to_vec();
        if !b.is_empty() {
            let i = usize::from(inp.u8()) % b.len();
            b[i] ^= 1 << (v & 7);
        }
        NfsFh4(Bytes::from(b))
    }

    /// A stateid a result returned (usually, some with its seqid moved), a
    /// special one, or a damaged one.
    fn sid(&self, inp: &mut Input<'_>) -> StateId4 {
        let v = inp.u8();
        let special = match v {
            0xfc => Some(StateId4::ANONYMOUS),
            0xfd => Some(StateId4::BYPASS),
            0xfe => Some(StateId4::INVALID),
            0xff => Some(StateId4::CURRENT),
            _ => None,
        };
        if let Some(s) = special {
            return s;
        }
        let Some(&s) = self
            .sids
            .get(usize::from(v & 0x1f) % self.sids.len().max(1))
        else {
            return StateId4::CURRENT;
        };
        match v >> 5 {
            0..=3 => s,
            4 => StateId4 { seqid: 0, ..s },
            5 => StateId4 {
                seqid: s.seqid.wrapping_add(1),
                ..s
            },
            6 => StateId4 {
                seqid: s.seqid.wrapping_sub(1),
                ..s
            },
            _ => {
                let mut other = s.other;
                other[usize::from(v) % 12] ^= 0x40;
                StateId4 { other, ..s }
            }
        }
    }

    fn owner(&self, inp: &mut Input<'_>) -> StateOwner4 {
        let v = inp.u8();
        let names: [&'static [u8]; 4] = [b"o1", b"o2", b"o3", b""];
        StateOwner4 {
            clientid: match v >> 6 {
                0..=2 => self.cur_client,
                _ => self.client_id(inp),
            },
            owner: Bytes::from_static(names[usize::from(v & 3)]),
        }
    }
}

/// A device id: one of the server's (export 0, data server 0, 1 or 2,
/// of its generation), one of another generation, or junk.
fn device_id(inp: &mut Input<'_>, generation: u64) -> DeviceId4 {
    let mut d = [0u8; 16];
    match inp.u8() % 3 {
        0 => {
            d[0] = b'F';
            d[1] = b'F';
            d[7] = inp.u8() % 3;
            d[8..].copy_from_slice(&generation.to_be_bytes());
        }
        1 => {
            d[0] = b'F';
            d[1] = b'F';
            d[8] = inp.u8();
        }
        _ => d = [inp.u8(); 16],
    }
    d
}
