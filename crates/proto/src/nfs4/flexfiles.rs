//! The pNFS flexible file layout type (RFC 8435), `LAYOUT4_FLEX_FILES`:
//! the layout-type-specific bodies carried in the opaque fields of the
//! generic pNFS structures, and the piece of RFC 8881 they use
//! (`multipath_list4`).
//!
//! Where each body travels:
//!
//! | XDR type            | carried in                                             | RFC 8435 |
//! |---------------------|--------------------------------------------------------|----------|
//! | `ff_device_addr4`   | `device_addr4.da_addr_body` (GETDEVICEINFO)            | §4.1     |
//! | `ff_layout4`        | `layout_content4.loc_body` (LAYOUTGET)                 | §5.1     |
//! | —                   | `layoutupdate4.lou_body` of LAYOUTCOMMIT: empty        | §5.2     |
//! | `ff_layoutreturn4`  | `layoutreturn_file4.lrf_body` (LAYOUTRETURN)           | §9       |
//! | `ff_ioerr4`         | the same shape as `LAYOUTERROR4args`                   | §10      |
//! | `ff_layoutupdate4`  | `LAYOUTSTATS4args.lsa_layoutupdate.lou_body`           | §11      |
//! | `ff_layouthint4`    | `layouthint4.loh_body` (the `layout_hint` attribute)   | §12      |
//!
//! The XDR leaves every array unbounded; on decode each is bounded here
//! (the `FF_MAX_*` constants and [`MULTIPATH_LIST4_MAX`]) so that a peer
//! cannot make us build large structures, on top of the decoder's own
//! check that a declared count fits in the bytes actually sent. Encoding
//! does not check the bounds: a value built with more elements than its
//! bound encodes, but does not decode.

use bytes::Bytes;
use xdr::{Pack, Unpack};

use super::*;

// ---------------------------------------------------------------------------
// Bounds on decode (not in the RFC)
// ---------------------------------------------------------------------------

/// Most network addresses accepted in a `multipath_list4`. Each names a
/// path to one storage device (RFC 8435 §4.2); a handful of interfaces is
/// plenty.
pub const MULTIPATH_LIST4_MAX: usize = 8;
/// Most `ffda_versions` (NFS version, minor version, coupling
/// combinations) accepted for one storage device. NFSv3 plus NFSv4.0,
/// 4.1 and 4.2, tightly or loosely coupled, is at most eight.
pub const FF_MAX_VERSIONS: usize = 8;
/// Most `ffds_fh_vers` accepted for one data server: RFC 8435 §5.1 wants
/// exactly one per `ffda_versions` entry, so the same bound.
pub const FF_MAX_FH_VERS: usize = FF_MAX_VERSIONS;
/// Most bytes accepted in `ffds_user` / `ffds_group`, the same bound
/// RFC 8881 §3.2 puts on owner opaques.
pub const FF_MAX_OWNER_LEN: usize = NFS4_OPAQUE_LIMIT;
/// Most mirrors (`ffl_mirrors`) accepted in one layout segment.
pub const FF_MAX_MIRRORS: usize = 16;
/// Most data servers (`ffm_data_servers`, that is stripes) accepted in
/// one mirror.
pub const FF_MAX_DATA_SERVERS: usize = 16;
/// Most `device_error4` entries accepted in one `ff_ioerr4`.
pub const FF_MAX_DEVICE_ERRORS: usize = 64;
/// Most error reports (`fflr_ioerr_report`) accepted in one
/// `ff_layoutreturn4`.
pub const FF_MAX_IOERR_REPORTS: usize = 64;
/// Most statistics reports (`fflr_iostats_report`) accepted in one
/// `ff_layoutreturn4`.
pub const FF_MAX_IOSTATS_REPORTS: usize = 64;

// ---------------------------------------------------------------------------
// RFC 8881 §13.3: multipath_list4
// ---------------------------------------------------------------------------

/// RFC 8881 §13.3: `multipath_list4` (`typedef netaddr4
/// multipath_list4<>`), the network addresses of one storage device, any
/// of which the client may use. At most [`MULTIPATH_LIST4_MAX`] on
/// decode.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct MultipathList4(#[xdr(max = MULTIPATH_LIST4_MAX)] pub Vec<NetAddr4>);

// ---------------------------------------------------------------------------
// RFC 8435 §4.1: device addressing
// ---------------------------------------------------------------------------

/// RFC 8435 §4.1: `ff_device_versions4`, one NFS version a storage device
/// can be reached with. For `version` 3, `minorversion` must be 0 and
/// `tightly_coupled` false.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct FfDeviceVersions4 {
    pub version: u32,
    pub minorversion: u32,
    /// Largest READ the storage device accepts.
    pub rsize: u32,
    /// Largest WRITE the storage device accepts.
    pub wsize: u32,
    pub tightly_coupled: bool,
}

/// RFC 8435 §4.1: `ff_device_addr4`, the `da_addr_body` of a
/// `LAYOUT4_FLEX_FILES` device: where the storage device is
/// (`ffda_netaddrs`, at least one) and which NFS versions it speaks
/// (`ffda_versions`, at most [`FF_MAX_VERSIONS`] on decode).
#[derive(Debug, Clone, PartialEq, Eq, Default, Pack, Unpack)]
pub struct FfDeviceAddr4 {
    pub netaddrs: MultipathList4,
    #[xdr(max = FF_MAX_VERSIONS)]
    pub versions: Vec<FfDeviceVersions4>,
}

// ---------------------------------------------------------------------------
// RFC 8435 §5.1: ff_layout4
// ---------------------------------------------------------------------------

/// RFC 8435 §5.1: `ff_flags4`, the `FF_FLAGS_*` bits of `ffl_flags`.
pub type FfFlags4 = u32;
/// RFC 8435 §5.1: the client need not send LAYOUTCOMMIT.
pub const FF_FLAGS_NO_LAYOUTCOMMIT: FfFlags4 = 0x0000_0001;
/// RFC 8435 §5.1: the client should not send I/O through the metadata
/// server (a hint, §5.1.2).
pub const FF_FLAGS_NO_IO_THRU_MDS: FfFlags4 = 0x0000_0002;
/// RFC 8435 §5.1: the client should not READ with a LAYOUTIOMODE4_RW
/// layout, but get a LAYOUTIOMODE4_READ one.
pub const FF_FLAGS_NO_READ_IO: FfFlags4 = 0x0000_0004;
/// RFC 8435 §5.1: the client need only write one of the mirrors (§8.2).
pub const FF_FLAGS_WRITE_ONE_MIRROR: FfFlags4 = 0x0000_0008;

/// RFC 8435 §5.1: `ff_data_server4`, one stripe of one mirror: the data
/// file on one storage device.
#[derive(Debug, Clone, PartialEq, Eq, Default, Pack, Unpack)]
pub struct FfDataServer4 {
    pub deviceid: DeviceId4,
    /// The metadata server's view of this mirror's utility; higher is
    /// better (§8.1).
    pub efficiency: u32,
    /// The stateid for I/O to the storage device: a global stateid when
    /// tightly coupled, the anonymous stateid when loosely coupled.
    pub stateid: StateId4,
    /// The data file's handle for each entry of the device's
    /// `ffda_versions`, in the same order; at most [`FF_MAX_FH_VERS`]
    /// on decode.
    #[xdr(max = FF_MAX_FH_VERS)]
    pub fh_vers: Vec<NfsFh4>,
    /// `fattr4_owner`: the synthetic user for the RPC credential when
    /// loosely coupled (for example `"1001"` for uid 1001). A
    /// `utf8str_mixed`, kept as bytes as the `owner` attribute is; at
    /// most [`FF_MAX_OWNER_LEN`] bytes on decode.
    #[xdr(max = FF_MAX_OWNER_LEN)]
    pub user: Utf8StrMixed,
    /// `fattr4_owner_group`: the synthetic group, as `user`.
    #[xdr(max = FF_MAX_OWNER_LEN)]
    pub group: Utf8StrMixed,
}

/// RFC 8435 §5.1: `ff_mirror4`, one copy of the layout segment, striped
/// over its data servers (at most [`FF_MAX_DATA_SERVERS`] on decode).
#[derive(Debug, Clone, PartialEq, Eq, Default, Pack, Unpack)]
pub struct FfMirror4 {
    #[xdr(max = FF_MAX_DATA_SERVERS)]
    pub data_servers: Vec<FfDataServer4>,
}

/// RFC 8435 §5.1: `ff_layout4`, the `loc_body` of a `LAYOUT4_FLEX_FILES`
/// layout segment.
#[derive(Debug, Clone, PartialEq, Eq, Default, Pack, Unpack)]
pub struct FfLayout4 {
    /// Stripe unit in bytes; zero when each mirror has one data server.
    pub stripe_unit: Length4,
    /// The mirrors, at most [`FF_MAX_MIRRORS`] on decode.
    #[xdr(max = FF_MAX_MIRRORS)]
    pub mirrors: Vec<FfMirror4>,
    /// `FF_FLAGS_*` bits.
    pub flags: FfFlags4,
    /// How often, in seconds, the server would have LAYOUTSTATS sent.
    pub stats_collect_hint: u32,
}

// ---------------------------------------------------------------------------
// RFC 8435 §9: layout return
// ---------------------------------------------------------------------------

/// RFC 8435 §9.1.1: `ff_ioerr4`, errors seen on a byte range of the data
/// files (at most [`FF_MAX_DEVICE_ERRORS`] on decode). RFC 8435 §10:
/// LAYOUTERROR's arguments are read as one of these.
#[derive(Debug, Clone, PartialEq, Eq, Default, Pack, Unpack)]
pub struct FfIoErr4 {
    pub offset: Offset4,
    pub length: Length4,
    pub stateid: StateId4,
    #[xdr(max = FF_MAX_DEVICE_ERRORS)]
    pub errors: Vec<DeviceError4>,
}

/// RFC 8435 §9.2.1: `ff_io_latency4`, cumulative counters for READs, or
/// for WRITEs and COMMITs. The times are durations since the first I/O
/// under the layout, not dates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct FfIoLatency4 {
    pub ops_requested: u64,
    pub bytes_requested: u64,
    pub ops_completed: u64,
    pub bytes_completed: u64,
    pub bytes_not_delivered: u64,
    pub total_busy_time: NfsTime4,
    pub aggregate_completion_time: NfsTime4,
}

/// RFC 8435 §9.2.2: `ff_layoutupdate4`, statistics for one path to one
/// storage device. RFC 8435 §11: also the `lou_body` of LAYOUTSTATS's
/// `lsa_layoutupdate`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Pack, Unpack)]
pub struct FfLayoutUpdate4 {
    /// The storage device address the client is connected to.
    pub addr: NetAddr4,
    /// Which (read-only) copy of the file was used.
    pub fhandle: NfsFh4,
    pub read: FfIoLatency4,
    pub write: FfIoLatency4,
    /// The period the statistics cover.
    pub duration: NfsTime4,
    /// The I/O was served from the client's cache.
    pub local: bool,
}

/// RFC 8435 §9.2.3: `ff_iostats4`, I/O statistics for one byte range.
#[derive(Debug, Clone, PartialEq, Eq, Default, Pack, Unpack)]
pub struct FfIoStats4 {
    pub offset: Offset4,
    pub length: Length4,
    pub stateid: StateId4,
    pub read: IoInfo4,
    pub write: IoInfo4,
    pub deviceid: DeviceId4,
    pub layoutupdate: FfLayoutUpdate4,
}

/// RFC 8435 §9.3: `ff_layoutreturn4`, the `lrf_body` of a
/// `LAYOUT4_FLEX_FILES` LAYOUTRETURN4_FILE return: error reports (at most
/// [`FF_MAX_IOERR_REPORTS`] on decode) and statistics (at most
/// [`FF_MAX_IOSTATS_REPORTS`]). Both arrays empty encodes as 8 zero
/// bytes; a zero-length `lrf_body` is not a valid encoding and
/// [`FfLayoutReturn4::decode_body`] rejects it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Pack, Unpack)]
pub struct FfLayoutReturn4 {
    #[xdr(max = FF_MAX_IOERR_REPORTS)]
    pub ioerr_report: Vec<FfIoErr4>,
    #[xdr(max = FF_MAX_IOSTATS_REPORTS)]
    pub iostats_report: Vec<FfIoStats4>,
}

// ---------------------------------------------------------------------------
// RFC 8435 §12: creation hint
// ---------------------------------------------------------------------------

/// RFC 8435 §12.1: `ff_mirrors_hint`, a union on `bool ffmc_valid`,
/// encoded like an optional `uint32_t ffmc_mirrors`: the number of
/// mirrors the client would like.
pub type FfMirrorsHint = Option<u32>;

/// RFC 8435 §12.1: `ff_layouthint4`, the `loh_body` of a
/// `LAYOUT4_FLEX_FILES` `layouthint4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct FfLayoutHint4 {
    pub mirrors_hint: FfMirrorsHint,
}

// ---------------------------------------------------------------------------
// RFC 8435 §13.1: CB_RECALL_ANY
// ---------------------------------------------------------------------------

/// RFC 8435 §13.1 (registered in §16): the first recallable-object bit
/// of `craa_type_mask` for flexible file layouts.
pub const RCA4_TYPE_MASK_FF_LAYOUT_MIN: u32 = 16;
/// RFC 8435 §13.1 (registered in §16): the last such bit.
pub const RCA4_TYPE_MASK_FF_LAYOUT_MAX: u32 = 17;
/// RFC 8435 §13.1: `PNFS_FF_RCA4_TYPE_MASK_READ`, recall
/// LAYOUTIOMODE4_READ flexible file layouts.
pub const PNFS_FF_RCA4_TYPE_MASK_READ: u32 = FfCbRecallAnyMask::Read as u32;
/// RFC 8435 §13.1: `PNFS_FF_RCA4_TYPE_MASK_RW`, recall
/// LAYOUTIOMODE4_RW flexible file layouts.
pub const PNFS_FF_RCA4_TYPE_MASK_RW: u32 = FfCbRecallAnyMask::Rw as u32;

/// RFC 8435 §13.1: `ff_cb_recall_any_mask`, bit numbers in
/// `CB_RECALL_ANY4args.craa_type_mask`, one per layout iomode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum FfCbRecallAnyMask {
    Read = 16,
    Rw = 17,
}

impl FfCbRecallAnyMask {
    /// The iomode of the layouts this bit recalls.
    pub fn iomode(self) -> LayoutIoMode4 {
        match self {
            FfCbRecallAnyMask::Read => LayoutIoMode4::Read,
            FfCbRecallAnyMask::Rw => LayoutIoMode4::Rw,
        }
    }
}

// ---------------------------------------------------------------------------
// Conversions to and from the generic pNFS structures
// ---------------------------------------------------------------------------

/// `body` decoded as exactly one `T`: a short body, a bound exceeded or
/// trailing bytes are an error.
fn decode_exact<T: Unpack>(body: &Bytes) -> xdr::Result<T> {
    xdr::from_bytes(body.clone())
}

/// The error for a generic structure of some other layout type.
fn not_flex_files(layout_type: LayoutType4) -> xdr::Error {
    xdr::Error::BadDiscriminant(layout_type, "layouttype4 (want LAYOUT4_FLEX_FILES)")
}

/// `to_body` and `decode_body` for the types sent inside an opaque.
macro_rules! opaque_body {
    ($($ty:ident),* $(,)?) => {$(
        impl $ty {
            /// The XDR encoding, to go in the opaque body that carries it.
            pub fn to_body(&self) -> Bytes {
                xdr::to_bytes(self)
            }

            /// Decodes an opaque body holding exactly one value; fails,
            /// without panicking, on short or malformed input, on an
            /// array over its bound and on trailing bytes.
            pub fn decode_body(body: &Bytes) -> xdr::Result<Self> {
                decode_exact(body)
            }
        }
    )*};
}

opaque_body!(
    FfDeviceAddr4,
    FfLayout4,
    FfIoErr4,
    FfLayoutUpdate4,
    FfIoStats4,
    FfLayoutReturn4,
    FfLayoutHint4,
);

impl FfDeviceAddr4 {
    /// The GETDEVICEINFO `device_addr4` for this device.
    pub fn to_device_addr(&self) -> DeviceAddr4 {
        DeviceAddr4 {
            layout_type: LAYOUT4_FLEX_FILES,
            addr_body: self.to_body(),
        }
    }

    /// The flexible file address in a `device_addr4`; an error if it is of
    /// another layout type or its body does not decode.
    pub fn from_device_addr(addr: &DeviceAddr4) -> xdr::Result<Self> {
        if addr.layout_type != LAYOUT4_FLEX_FILES {
            return Err(not_flex_files(addr.layout_type));
        }
        Self::decode_body(&addr.addr_body)
    }
}

impl FfLayout4 {
    /// The LAYOUTGET `layout_content4` for this layout segment.
    pub fn to_content(&self) -> LayoutContent4 {
        LayoutContent4 {
            layout_type: LAYOUT4_FLEX_FILES,
            body: self.to_body(),
        }
    }

    /// The flexible file layout in a `layout_content4`; an error if it is
    /// of another layout type or its body does not decode.
    pub fn from_content(content: &LayoutContent4) -> xdr::Result<Self> {
        if content.layout_type != LAYOUT4_FLEX_FILES {
            return Err(not_flex_files(content.layout_type));
        }
        Self::decode_body(&content.body)
    }

    /// Whether `ffl_flags` has all the bits of `flags`.
    pub fn has_flags(&self, flags: FfFlags4) -> bool {
        self.flags & flags == flags
    }
}

impl FfLayoutUpdate4 {
    /// The LAYOUTSTATS `lsa_layoutupdate` carrying these statistics
    /// (RFC 8435 §11).
    pub fn to_update(&self) -> LayoutUpdate4 {
        LayoutUpdate4 {
            layout_type: LAYOUT4_FLEX_FILES,
            body: self.to_body(),
        }
    }

    /// The statistics in a LAYOUTSTATS `layoutupdate4`; an error if it is
    /// of another layout type or its body does not decode.
    pub fn from_update(update: &LayoutUpdate4) -> xdr::Result<Self> {
        if update.layout_type != LAYOUT4_FLEX_FILES {
            return Err(not_flex_files(update.layout_type));
        }
        Self::decode_body(&update.body)
    }
}

impl FfIoErr4 {
    /// LAYOUTERROR's arguments, read as the `ff_ioerr4` they stand for
    /// (RFC 8435 §10).
    pub fn from_layout_error(args: &LayoutError4Args) -> Self {
        FfIoErr4 {
            offset: args.offset,
            length: args.length,
            stateid: args.stateid,
            errors: args.errors.clone(),
        }
    }
}

impl FfIoStats4 {
    /// LAYOUTSTATS's arguments, read as the `ff_iostats4` they stand for
    /// (RFC 8435 §11); an error if the layout update is not a flexible
    /// file one or does not decode.
    pub fn from_layout_stats(args: &LayoutStats4Args) -> xdr::Result<Self> {
        Ok(FfIoStats4 {
            offset: args.offset,
            length: args.length,
            stateid: args.stateid,
            read: args.read,
            write: args.write,
            deviceid: args.deviceid,
            layoutupdate: FfLayoutUpdate4::from_update(&args.layoutupdate)?,
        })
    }
}

impl FfLayoutHint4 {
    /// The `layouthint4` carrying this hint.
    pub fn to_hint(&self) -> LayoutHint4 {
        LayoutHint4 {
            type_: LAYOUT4_FLEX_FILES,
            body: self.to_body(),
        }
    }

    /// The flexible file hint in a `layouthint4`; an error if it is of
    /// another layout type or its body does not decode.
    pub fn from_hint(hint: &LayoutHint4) -> xdr::Result<Self> {
        if hint.type_ != LAYOUT4_FLEX_FILES {
            return Err(not_flex_files(hint.type_));
        }
        Self::decode_body(&hint.body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use xdr::Error;

    fn roundtrip<T: Pack + Unpack + PartialEq + std::fmt::Debug>(v: &T) -> Bytes {
        let b = xdr::to_bytes(v);
        assert_eq!(&xdr::from_bytes::<T>(b.clone()).unwrap(), v);
        for n in 0..b.len() {
            assert!(xdr::from_bytes::<T>(b.slice(..n)).is_err(), "prefix {n}");
        }
        b
    }

    fn sid(n: u8) -> StateId4 {
        StateId4 {
            seqid: n as u32,
            other: [n; 12],
        }
    }

    fn addr(port: u8) -> NetAddr4 {
        NetAddr4 {
            netid: "tcp".into(),
            addr: format!("192.0.2.1.8.{port}"),
        }
    }

    fn data_server(n: u8) -> FfDataServer4 {
        FfDataServer4 {
            deviceid: [n; 16],
            efficiency: n as u32,
            stateid: StateId4::ANONYMOUS,
            fh_vers: vec![NfsFh4(Bytes::from(vec![n; 3]))],
            user: Bytes::from_static(b"1001"),
            group: Bytes::from_static(b"1001"),
        }
    }

    fn latency(n: u64) -> FfIoLatency4 {
        FfIoLatency4 {
            ops_requested: n,
            bytes_requested: n * 4096,
            ops_completed: n - 1,
            bytes_completed: (n - 1) * 4096,
            bytes_not_delivered: 4096,
            total_busy_time: NfsTime4 {
                seconds: 1,
                nseconds: 500,
            },
            aggregate_completion_time: NfsTime4 {
                seconds: 0,
                nseconds: 999_999_999,
            },
        }
    }

    fn layoutupdate() -> FfLayoutUpdate4 {
        FfLayoutUpdate4 {
            addr: addr(1),
            fhandle: NfsFh4(Bytes::from_static(b"data-fh")),
            read: latency(10),
            write: latency(20),
            duration: NfsTime4 {
                seconds: 30,
                nseconds: 0,
            },
            local: true,
        }
    }

    fn iostats() -> FfIoStats4 {
        FfIoStats4 {
            offset: 1 << 20,
            length: 1 << 20,
            stateid: sid(4),
            read: IoInfo4 {
                count: 3,
                bytes: 12288,
            },
            write: IoInfo4 { count: 0, bytes: 0 },
            deviceid: [4; 16],
            layoutupdate: layoutupdate(),
        }
    }

    fn ioerr() -> FfIoErr4 {
        FfIoErr4 {
            offset: 0,
            length: NFS4_UINT64_MAX,
            stateid: sid(2),
            errors: vec![
                DeviceError4 {
                    deviceid: [1; 16],
                    status: NfsStat4::Nfs4errNxio,
                    opnum: OpNum4::Write,
                },
                DeviceError4 {
                    deviceid: [2; 16],
                    status: NfsStat4::Nfs4errAccess,
                    opnum: OpNum4::Read,
                },
            ],
        }
    }

    fn layout() -> FfLayout4 {
        FfLayout4 {
            stripe_unit: 65536,
            mirrors: vec![
                FfMirror4 {
                    data_servers: vec![data_server(1), data_server(2)],
                },
                FfMirror4 {
                    data_servers: vec![data_server(3), data_server(4)],
                },
            ],
            flags: FF_FLAGS_NO_LAYOUTCOMMIT | FF_FLAGS_NO_IO_THRU_MDS,
            stats_collect_hint: 60,
        }
    }

    #[test]
    fn every_type_roundtrips() {
        roundtrip(&MultipathList4(vec![addr(1), addr(2)]));
        roundtrip(&MultipathList4::default());
        roundtrip(&FfDeviceVersions4 {
            version: 4,
            minorversion: 2,
            rsize: 1 << 20,
            wsize: 1 << 20,
            tightly_coupled: true,
        });
        roundtrip(&FfDeviceAddr4 {
            netaddrs: MultipathList4(vec![addr(1)]),
            versions: vec![
                FfDeviceVersions4 {
                    version: 3,
                    minorversion: 0,
                    rsize: 65536,
                    wsize: 65536,
                    tightly_coupled: false,
                },
                FfDeviceVersions4 {
                    version: 4,
                    minorversion: 1,
                    rsize: 1 << 20,
                    wsize: 1 << 20,
                    tightly_coupled: true,
                },
            ],
        });
        roundtrip(&data_server(9));
        roundtrip(&FfMirror4 {
            data_servers: vec![data_server(1)],
        });
        roundtrip(&layout());
        roundtrip(&FfLayout4::default());
        roundtrip(&ioerr());
        roundtrip(&latency(7));
        roundtrip(&layoutupdate());
        roundtrip(&iostats());
        roundtrip(&FfLayoutReturn4 {
            ioerr_report: vec![ioerr(), ioerr()],
            iostats_report: vec![iostats()],
        });
        roundtrip(&FfLayoutHint4 {
            mirrors_hint: Some(3),
        });
        roundtrip(&FfLayoutHint4 { mirrors_hint: None });
        roundtrip(&FfCbRecallAnyMask::Read);
        roundtrip(&FfCbRecallAnyMask::Rw);
    }

    #[test]
    fn known_encoding_of_one_mirror_one_data_server() {
        let l = FfLayout4 {
            stripe_unit: 0x1_0000,
            mirrors: vec![FfMirror4 {
                data_servers: vec![FfDataServer4 {
                    deviceid: [0x11; 16],
                    efficiency: 7,
                    stateid: StateId4 {
                        seqid: 1,
                        other: [0xaa; 12],
                    },
                    fh_vers: vec![NfsFh4(Bytes::from_static(&[1, 2, 3, 4, 5]))],
                    user: Bytes::from_static(b"1001"),
                    group: Bytes::from_static(b"10"),
                }],
            }],
            flags: FF_FLAGS_NO_LAYOUTCOMMIT | FF_FLAGS_NO_IO_THRU_MDS,
            stats_collect_hint: 60,
        };
        let mut want: Vec<u8> = Vec::new();
        want.extend([0, 0, 0, 0, 0, 1, 0, 0]); // ffl_stripe_unit = 65536
        want.extend([0, 0, 0, 1]); // ffl_mirrors<>: 1
        want.extend([0, 0, 0, 1]); //   ffm_data_servers<>: 1
        want.extend([0x11; 16]); //     ffds_deviceid
        want.extend([0, 0, 0, 7]); //     ffds_efficiency
        want.extend([0, 0, 0, 1]); //     ffds_stateid.seqid
        want.extend([0xaa; 12]); //       ffds_stateid.other
        want.extend([0, 0, 0, 1]); //     ffds_fh_vers<>: 1
        want.extend([0, 0, 0, 5, 1, 2, 3, 4, 5, 0, 0, 0]); // nfs_fh4, 3 pad
        want.extend([0, 0, 0, 4, b'1', b'0', b'0', b'1']); // ffds_user
        want.extend([0, 0, 0, 2, b'1', b'0', 0, 0]); // ffds_group, 2 pad
        want.extend([0, 0, 0, 3]); // ffl_flags
        want.extend([0, 0, 0, 60]); // ffl_stats_collect_hint
        assert_eq!(want.len(), 92);

        let b = l.to_body();
        assert_eq!(&b[..], &want[..]);
        assert_eq!(FfLayout4::decode_body(&Bytes::from(want)).unwrap(), l);

        let c = l.to_content();
        assert_eq!(c.layout_type, LAYOUT4_FLEX_FILES);
        assert_eq!(c.layout_type, 4);
        assert_eq!(c.body, b);
        assert_eq!(FfLayout4::from_content(&c).unwrap(), l);
        // Inside a layout4, the body is an opaque: length then data.
        let lc = xdr::to_bytes(&c);
        assert_eq!(&lc[..8], &[0, 0, 0, 4, 0, 0, 0, 92]);
        assert!(l.has_flags(FF_FLAGS_NO_LAYOUTCOMMIT));
        assert!(!l.has_flags(FF_FLAGS_NO_READ_IO));
    }

    #[test]
    fn known_encodings_of_small_bodies() {
        // An empty return: two zero counts.
        assert_eq!(
            &FfLayoutReturn4::default().to_body()[..],
            &[0, 0, 0, 0, 0, 0, 0, 0]
        );
        // ff_mirrors_hint: TRUE then the count, or FALSE alone.
        let h = FfLayoutHint4 {
            mirrors_hint: Some(2),
        };
        assert_eq!(&h.to_body()[..], &[0, 0, 0, 1, 0, 0, 0, 2]);
        let n = FfLayoutHint4 { mirrors_hint: None };
        assert_eq!(&n.to_body()[..], &[0, 0, 0, 0]);
        assert_eq!(FfLayoutHint4::from_hint(&h.to_hint()).unwrap(), h);
        // ff_device_addr4: ffda_netaddrs comes before ffda_versions.
        let a = FfDeviceAddr4 {
            netaddrs: MultipathList4(vec![NetAddr4 {
                netid: "tcp".into(),
                addr: "10.0.0.1.8.1".into(),
            }]),
            versions: vec![FfDeviceVersions4 {
                version: 3,
                minorversion: 0,
                rsize: 0x0010_0000,
                wsize: 0x0010_0000,
                tightly_coupled: false,
            }],
        };
        let mut want: Vec<u8> = vec![0, 0, 0, 1]; // ffda_netaddrs<>: 1
        want.extend([0, 0, 0, 3, b't', b'c', b'p', 0]); // na_r_netid
        want.extend([0, 0, 0, 12]); // na_r_addr
        want.extend(b"10.0.0.1.8.1");
        want.extend([0, 0, 0, 1]); // ffda_versions<>: 1
        want.extend([0, 0, 0, 3, 0, 0, 0, 0]); // NFSv3, minor 0
        want.extend([0, 0x10, 0, 0, 0, 0x10, 0, 0]); // rsize, wsize
        want.extend([0, 0, 0, 0]); // loosely coupled
        assert_eq!(&a.to_body()[..], &want[..]);
        let d = a.to_device_addr();
        assert_eq!(d.layout_type, LAYOUT4_FLEX_FILES);
        assert_eq!(FfDeviceAddr4::from_device_addr(&d).unwrap(), a);
        // The recall bits and their iomodes.
        assert_eq!(PNFS_FF_RCA4_TYPE_MASK_READ, RCA4_TYPE_MASK_FF_LAYOUT_MIN);
        assert_eq!(PNFS_FF_RCA4_TYPE_MASK_RW, RCA4_TYPE_MASK_FF_LAYOUT_MAX);
        assert_eq!(&xdr::to_bytes(&FfCbRecallAnyMask::Rw)[..], &[0, 0, 0, 17]);
        assert_eq!(FfCbRecallAnyMask::Read.iomode(), LayoutIoMode4::Read);
        assert_eq!(FfCbRecallAnyMask::Rw.iomode(), LayoutIoMode4::Rw);
        assert!(xdr::from_bytes::<FfCbRecallAnyMask>(xdr::to_bytes(&18u32)).is_err());
    }

    /// Whether a body decodes as the type the test case names.
    type Decodes = fn(&Bytes) -> bool;

    /// Each decoder with a valid body of its type.
    fn decoders() -> Vec<(&'static str, Bytes, Decodes)> {
        vec![
            ("ff_layout4", layout().to_body(), |b| {
                FfLayout4::decode_body(b).is_ok()
            }),
            (
                "ff_layoutreturn4",
                FfLayoutReturn4 {
                    ioerr_report: vec![ioerr()],
                    iostats_report: vec![iostats()],
                }
                .to_body(),
                |b| FfLayoutReturn4::decode_body(b).is_ok(),
            ),
            ("ff_layoutupdate4", layoutupdate().to_body(), |b| {
                FfLayoutUpdate4::decode_body(b).is_ok()
            }),
            ("ff_iostats4", iostats().to_body(), |b| {
                FfIoStats4::decode_body(b).is_ok()
            }),
            ("ff_ioerr4", ioerr().to_body(), |b| {
                FfIoErr4::decode_body(b).is_ok()
            }),
            (
                "ff_device_addr4",
                FfDeviceAddr4 {
                    netaddrs: MultipathList4(vec![addr(1), addr(2)]),
                    versions: vec![FfDeviceVersions4::default()],
                }
                .to_body(),
                |b| FfDeviceAddr4::decode_body(b).is_ok(),
            ),
        ]
    }

    #[test]
    fn truncated_bodies_fail() {
        for (what, b, decodes) in decoders() {
            assert!(decodes(&b), "{what}");
            for n in 0..b.len() {
                assert!(!decodes(&b.slice(..n)), "{what} cut to {n}");
            }
        }
        // An empty lrf_body is not an ff_layoutreturn4.
        assert!(matches!(
            FfLayoutReturn4::decode_body(&Bytes::new()),
            Err(Error::Short { .. })
        ));
    }

    #[test]
    fn trailing_bytes_fail() {
        for (what, b, decodes) in decoders() {
            let mut long = b.to_vec();
            long.extend([0, 0, 0, 0]);
            assert!(!decodes(&Bytes::from(long)), "{what}");
        }
        let mut long = layout().to_body().to_vec();
        long.push(0);
        assert_eq!(
            FfLayout4::decode_body(&Bytes::from(long)),
            Err(Error::TooLong { len: 1, max: 0 })
        );
    }

    #[test]
    fn arrays_over_their_bound_fail() {
        // 17 mirrors.
        let l = FfLayout4 {
            mirrors: vec![FfMirror4::default(); FF_MAX_MIRRORS + 1],
            ..FfLayout4::default()
        };
        assert_eq!(
            FfLayout4::decode_body(&l.to_body()),
            Err(Error::TooLong {
                len: FF_MAX_MIRRORS + 1,
                max: FF_MAX_MIRRORS
            })
        );
        let ok = FfLayout4 {
            mirrors: vec![FfMirror4::default(); FF_MAX_MIRRORS],
            ..FfLayout4::default()
        };
        assert_eq!(FfLayout4::decode_body(&ok.to_body()).unwrap(), ok);
        // 17 data servers in a mirror.
        let l = FfLayout4 {
            mirrors: vec![FfMirror4 {
                data_servers: vec![FfDataServer4::default(); FF_MAX_DATA_SERVERS + 1],
            }],
            ..FfLayout4::default()
        };
        assert!(matches!(
            FfLayout4::decode_body(&l.to_body()),
            Err(Error::TooLong { .. })
        ));
        // 9 file handles for one data server.
        let mut ds = data_server(1);
        ds.fh_vers = vec![NfsFh4::default(); FF_MAX_FH_VERS + 1];
        assert!(xdr::from_bytes::<FfDataServer4>(xdr::to_bytes(&ds)).is_err());
        // An over-long synthetic user.
        let mut ds = data_server(1);
        ds.user = Bytes::from(vec![b'u'; FF_MAX_OWNER_LEN + 1]);
        assert!(xdr::from_bytes::<FfDataServer4>(xdr::to_bytes(&ds)).is_err());
        // 9 network addresses.
        let a = FfDeviceAddr4 {
            netaddrs: MultipathList4(vec![addr(1); MULTIPATH_LIST4_MAX + 1]),
            versions: vec![],
        };
        assert!(matches!(
            FfDeviceAddr4::decode_body(&a.to_body()),
            Err(Error::TooLong { .. })
        ));
        // 9 versions.
        let a = FfDeviceAddr4 {
            netaddrs: MultipathList4(vec![addr(1)]),
            versions: vec![FfDeviceVersions4::default(); FF_MAX_VERSIONS + 1],
        };
        assert!(FfDeviceAddr4::decode_body(&a.to_body()).is_err());
        // 65 error reports, 65 statistics reports, 65 device errors.
        let r = FfLayoutReturn4 {
            ioerr_report: vec![FfIoErr4::default(); FF_MAX_IOERR_REPORTS + 1],
            iostats_report: vec![],
        };
        assert_eq!(
            FfLayoutReturn4::decode_body(&r.to_body()),
            Err(Error::TooLong {
                len: FF_MAX_IOERR_REPORTS + 1,
                max: FF_MAX_IOERR_REPORTS
            })
        );
        let r = FfLayoutReturn4 {
            ioerr_report: vec![],
            iostats_report: vec![FfIoStats4::default(); FF_MAX_IOSTATS_REPORTS + 1],
        };
        assert!(FfLayoutReturn4::decode_body(&r.to_body()).is_err());
        let mut e = ioerr();
        e.errors = vec![e.errors[0]; FF_MAX_DEVICE_ERRORS + 1];
        assert!(FfIoErr4::decode_body(&e.to_body()).is_err());
        // A huge count with nothing behind it: refused before allocating.
        let mut b = vec![0; 8];
        b.extend(u32::MAX.to_be_bytes());
        assert!(FfLayout4::decode_body(&Bytes::from(b)).is_err());
        let b = Bytes::from(vec![0x7f, 0xff, 0xff, 0xff]);
        assert!(FfLayoutReturn4::decode_body(&b).is_err());
    }

    #[test]
    fn other_layout_types_are_refused() {
        let c = LayoutContent4 {
            layout_type: LAYOUT4_NFSV4_1_FILES,
            body: layout().to_body(),
        };
        assert!(matches!(
            FfLayout4::from_content(&c),
            Err(Error::BadDiscriminant(1, _))
        ));
        let d = DeviceAddr4 {
            layout_type: LAYOUT4_BLOCK_VOLUME,
            addr_body: Bytes::new(),
        };
        assert!(FfDeviceAddr4::from_device_addr(&d).is_err());
        let u = LayoutUpdate4 {
            layout_type: LAYOUT4_SCSI,
            body: layoutupdate().to_body(),
        };
        assert!(FfLayoutUpdate4::from_update(&u).is_err());
        let h = LayoutHint4 {
            type_: 0,
            body: Bytes::new(),
        };
        assert!(FfLayoutHint4::from_hint(&h).is_err());
    }

    #[test]
    fn layouterror_and_layoutstats_arguments() {
        let e = ioerr();
        let args = LayoutError4Args {
            offset: e.offset,
            length: e.length,
            stateid: e.stateid,
            errors: e.errors.clone(),
        };
        assert_eq!(FfIoErr4::from_layout_error(&args), e);
        // LAYOUTERROR4args and ff_ioerr4 have the same encoding.
        assert_eq!(xdr::to_bytes(&args), e.to_body());

        let s = iostats();
        let args = LayoutStats4Args {
            offset: s.offset,
            length: s.length,
            stateid: s.stateid,
            read: s.read,
            write: s.write,
            deviceid: s.deviceid,
            layoutupdate: s.layoutupdate.to_update(),
        };
        assert_eq!(FfIoStats4::from_layout_stats(&args).unwrap(), s);
        let mut bad = args.clone();
        bad.layoutupdate.body = Bytes::from_static(&[0, 0, 0]);
        assert!(FfIoStats4::from_layout_stats(&bad).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 1000,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// Hostile bodies give errors, never panics.
        #[test]
        fn random_bodies_never_panic(b in proptest::collection::vec(any::<u8>(), 0..512)) {
            let b = Bytes::from(b);
            let _ = FfLayout4::decode_body(&b);
            let _ = FfDeviceAddr4::decode_body(&b);
            let _ = FfLayoutReturn4::decode_body(&b);
            let _ = FfLayoutUpdate4::decode_body(&b);
            let _ = FfIoStats4::decode_body(&b);
            let _ = FfIoErr4::decode_body(&b);
            let _ = FfLayoutHint4::decode_body(&b);
        }

        /// Small words (likely counts and lengths) decode or fail cleanly.
        #[test]
        fn random_words_never_panic(w in proptest::collection::vec(
            prop_oneof![0u32..20, Just(u32::MAX), any::<u32>()],
            0..128,
        )) {
            let b: Vec<u8> = w.iter().flat_map(|x| x.to_be_bytes()).collect();
            let b = Bytes::from(b);
            let _ = FfLayout4::decode_body(&b);
            let _ = FfDeviceAddr4::decode_body(&b);
            let _ = FfLayoutReturn4::decode_body(&b);
        }
    }
}
