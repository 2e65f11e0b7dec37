//! Decoding hostile bytes never panics and never allocates beyond what
//! the input could hold: random bytes, and valid encodings cut short or
//! with bytes changed, through every top-level NFSv4 type.

use bytes::Bytes;
use proptest::prelude::*;
use proto::nfs4::*;
use xdr::{Decoder, Unpack};

/// Decodes `b` as every top-level type; only the absence of panics counts.
fn decode_all(b: &[u8]) {
    let bytes = Bytes::copy_from_slice(b);
    let _ = xdr::from_bytes::<Compound4Args>(bytes.clone());
    let _ = xdr::from_bytes::<Compound4Res>(bytes.clone());
    let _ = xdr::from_bytes::<CbCompound4Args>(bytes.clone());
    let _ = xdr::from_bytes::<CbCompound4Res>(bytes.clone());
    let _ = xdr::from_bytes::<Fattr4>(bytes.clone());
    // The flexible file layout's bodies (RFC 8435).
    let _ = FfLayout4::decode_body(&bytes);
    let _ = FfDeviceAddr4::decode_body(&bytes);
    let _ = FfLayoutReturn4::decode_body(&bytes);
    let _ = FfLayoutUpdate4::decode_body(&bytes);
    let _ = FfIoStats4::decode_body(&bytes);
    let _ = FfLayoutHint4::decode_body(&bytes);
    // Operation by operation, as the server reads a COMPOUND.
    let mut d = Decoder::new(bytes.clone());
    if Compound4ArgsHeader::unpack(&mut d).is_ok() {
        if let Ok(n) = d.count(u32::MAX as usize, 4) {
            for _ in 0..n {
                if NfsArgOp4::unpack(&mut d).is_err() {
                    break;
                }
            }
        }
    }
    let mut d = Decoder::new(bytes.clone());
    while d.remaining() > 0 {
        if NfsArgOp4::unpack(&mut d).is_err() {
            break;
        }
    }
    let mut d = Decoder::new(bytes.clone());
    while d.remaining() > 0 {
        if NfsResOp4::unpack(&mut d).is_err() {
            break;
        }
    }
    let mut d = Decoder::new(bytes);
    while d.remaining() > 0 {
        if NfsCbArgOp4::unpack(&mut d).is_err() {
            break;
        }
    }
    // Attribute values behind a mask taken from the input.
    if b.len() >= 8 {
        let f = Fattr4 {
            attrmask: Bitmap4(vec![
                u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
                u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
            ]),
            attr_vals: Bytes::copy_from_slice(&b[8..]),
        };
        let _ = Attrs::decode(&f);
    }
}

fn sample_compound() -> Bytes {
    let fh = NfsFh4(Bytes::from_static(&[9; 40]));
    let sid = StateId4 {
        seqid: 1,
        other: [3; 12],
    };
    xdr::to_bytes(&Compound4Args {
        tag: Bytes::from_static(b"tag"),
        minorversion: 1,
        argarray: vec![
            NfsArgOp4::Sequence(Sequence4Args {
                sessionid: [1; 16],
                sequenceid: 1,
                slotid: 0,
                highest_slotid: 0,
                cachethis: false,
            }),
            NfsArgOp4::PutFh(PutFh4Args { object: fh }),
            NfsArgOp4::Open(Open4Args {
                seqid: 0,
                share_access: OPEN4_SHARE_ACCESS_BOTH,
                share_deny: 0,
                owner: StateOwner4 {
                    clientid: 1,
                    owner: Bytes::from_static(b"o"),
                },
                openhow: OpenFlag4::Create(CreateHow4::Exclusive41(CreatVerfAttr {
                    verf: [1; 8],
                    attrs: Attrs {
                        mode: Some(0o644),
                        ..Default::default()
                    }
                    .encode(),
                })),
                claim: OpenClaim4::Null(Bytes::from_static(b"file")),
            }),
            NfsArgOp4::Write(Write4Args {
                stateid: sid,
                offset: 0,
                stable: StableHow4::FileSync4,
                data: Bytes::from_static(b"some data"),
            }),
            NfsArgOp4::Lock(Lock4Args {
                locktype: NfsLockType4::WriteLt,
                reclaim: false,
                offset: 0,
                length: 10,
                locker: Locker4::LockOwner(ExistLockOwner4 {
                    lock_stateid: sid,
                    lock_seqid: 0,
                }),
            }),
            NfsArgOp4::ReadDir(ReadDir4Args {
                cookie: 0,
                cookieverf: [0; 8],
                dircount: 100,
                maxcount: 1000,
                attr_request: Bitmap4::from_attrs(&[FATTR4_TYPE, FATTR4_SIZE]),
            }),
            NfsArgOp4::SetAttr(SetAttr4Args {
                stateid: sid,
                obj_attributes: Attrs {
                    size: Some(5),
                    time_modify_set: Some(SetTime4::SetToServerTime4),
                    owner: Some(Bytes::from_static(b"1000")),
                    ..Default::default()
                }
                .encode(),
            }),
            NfsArgOp4::Create(Create4Args {
                objtype: CreateType4::Link(Bytes::from_static(b"target")),
                objname: Bytes::from_static(b"l"),
                createattrs: Fattr4::default(),
            }),
        ],
    })
}

fn sample_reply() -> Bytes {
    xdr::to_bytes(&Compound4Res {
        status: NfsStat4::Nfs4Ok,
        tag: Bytes::new(),
        resarray: vec![
            NfsResOp4::Sequence(Res4::Ok(Sequence4ResOk {
                sessionid: [1; 16],
                sequenceid: 1,
                slotid: 0,
                highest_slotid: 0,
                target_highest_slotid: 0,
                status_flags: 0,
            })),
            NfsResOp4::GetAttr(Res4::Ok(GetAttr4ResOk {
                obj_attributes: Attrs {
                    type_: Some(NfsFtype4::Nf4Reg),
                    size: Some(1),
                    ..Default::default()
                }
                .encode(),
            })),
            NfsResOp4::ReadDir(Res4::Ok(ReadDir4ResOk {
                cookieverf: [0; 8],
                reply: DirList4 {
                    entries: vec![Entry4 {
                        cookie: 3,
                        name: Bytes::from_static(b"x"),
                        attrs: Fattr4::default(),
                    }],
                    eof: true,
                },
            })),
        ],
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..1024)) {
        decode_all(&b);
    }

    #[test]
    fn random_words_never_panic(w in proptest::collection::vec(
        prop_oneof![0u32..100, Just(u32::MAX), Just(0x7fff_ffff), Just(10044u32), any::<u32>()],
        0..256,
    )) {
        let b: Vec<u8> = w.iter().flat_map(|x| x.to_be_bytes()).collect();
        decode_all(&b);
    }

    #[test]
    fn mutated_valid_encodings_never_panic(
        which in 0..2usize,
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..8),
        cut in any::<usize>(),
    ) {
        let base = if which == 0 { sample_compound() } else { sample_reply() };
        let mut b = base.to_vec();
        for (i, v) in edits {
            let n = b.len();
            b[i % n] = v;
        }
        let n = b.len();
        b.truncate(cut % (n + 1));
        decode_all(&b);
    }
}

#[test]
fn valid_samples_decode_and_every_prefix_fails_cleanly() {
    let c = sample_compound();
    assert!(xdr::from_bytes::<Compound4Args>(c.clone()).is_ok());
    for n in 0..c.len() {
        assert!(
            xdr::from_bytes::<Compound4Args>(c.slice(..n)).is_err(),
            "prefix {n}"
        );
    }
    let r = sample_reply();
    assert!(xdr::from_bytes::<Compound4Res>(r.clone()).is_ok());
    for n in 0..r.len() {
        assert!(
            xdr::from_bytes::<Compound4Res>(r.slice(..n)).is_err(),
            "prefix {n}"
        );
    }
}

#[test]
fn huge_counts_do_not_allocate() {
    // An array count of 2^32-1 with nothing behind it.
    let mut b = vec![0, 0, 0, 0, 0, 0, 0, 1];
    b.extend_from_slice(&u32::MAX.to_be_bytes());
    assert!(xdr::from_bytes::<Compound4Args>(Bytes::from(b)).is_err());
    // An opaque of length 2^31.
    let mut b = 0x8000_0000u32.to_be_bytes().to_vec();
    b.extend_from_slice(&[0; 16]);
    assert!(xdr::from_bytes::<Compound4Args>(Bytes::from(b)).is_err());
}
