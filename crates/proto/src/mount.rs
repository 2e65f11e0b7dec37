//! MOUNT protocol version 3 wire types (RFC 1813 Appendix I), written from
//! the RFC text. MOUNT hands out the root file handle of an export that
//! NFSv3 then works from.
//!
//! The linked lists (`mountlist`, `groups`, `exports`) are
//! [`List`](crate::nfs3::List)s of their nodes without the `next` pointer.

use bytes::Bytes;
use xdr::{Pack, Unpack};

use crate::nfs3::List;

/// RFC 1813 Appendix I: the MOUNT program number.
pub const MOUNT_PROGRAM: u32 = 100005;
/// RFC 1813 Appendix I: `MOUNT_V3`.
pub const MOUNT_V3: u32 = 3;

/// RFC 1813 Appendix I: procedure numbers of `MOUNT_V3`.
pub const MOUNTPROC3_NULL: u32 = 0;
pub const MOUNTPROC3_MNT: u32 = 1;
pub const MOUNTPROC3_DUMP: u32 = 2;
pub const MOUNTPROC3_UMNT: u32 = 3;
pub const MOUNTPROC3_UMNTALL: u32 = 4;
pub const MOUNTPROC3_EXPORT: u32 = 5;

/// RFC 1813 Appendix I: largest `dirpath`, in bytes.
pub const MNTPATHLEN: usize = 1024;
/// RFC 1813 Appendix I: largest `name`, in bytes.
pub const MNTNAMLEN: usize = 255;
/// RFC 1813 Appendix I: largest `fhandle3`, in bytes.
pub const FHSIZE3: usize = 64;

/// RFC 1813 Appendix I: `fhandle3`. The same bytes as an `nfs_fh3`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct FHandle3(#[xdr(max = FHSIZE3)] pub Bytes);

/// RFC 1813 Appendix I: `dirpath`, the server path of an export. Kept as
/// bytes (the RFC's `string`, not required to be UTF-8).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct DirPath(#[xdr(max = MNTPATHLEN)] pub Bytes);

/// RFC 1813 Appendix I: `name`, a host or netgroup name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Pack, Unpack)]
pub struct Name(#[xdr(max = MNTNAMLEN)] pub Bytes);

/// RFC 1813 Appendix I: `mountstat3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Pack, Unpack)]
#[repr(u32)]
pub enum MountStat3 {
    Ok = 0,
    Perm = 1,
    Noent = 2,
    Io = 5,
    Acces = 13,
    Notdir = 20,
    Inval = 22,
    NameTooLong = 63,
    NotSupp = 10004,
    ServerFault = 10006,
}

/// RFC 1813 Appendix I: `mountres3_ok`. `auth_flavors` lists the RPC
/// authentication flavors (RFC 5531 §8.2) the export accepts, best first.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct MountRes3Ok {
    pub fhandle: FHandle3,
    /// Implementation bound: no server has more than a handful of flavors.
    #[xdr(max = 64)]
    pub auth_flavors: Vec<u32>,
}

/// RFC 1813 Appendix I: `mountres3`, the result of MNT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MountRes3 {
    Ok(MountRes3Ok),
    Err(MountStat3),
}

impl Pack for MountRes3 {
    fn pack(&self, e: &mut xdr::Encoder) {
        match self {
            MountRes3::Ok(ok) => {
                MountStat3::Ok.pack(e);
                ok.pack(e)
            }
            // An error must not claim MNT3_OK.
            MountRes3::Err(MountStat3::Ok) => MountStat3::ServerFault.pack(e),
            MountRes3::Err(s) => s.pack(e),
        }
    }
}

impl Unpack for MountRes3 {
    fn unpack(d: &mut xdr::Decoder) -> xdr::Result<Self> {
        match MountStat3::unpack(d)? {
            MountStat3::Ok => Ok(MountRes3::Ok(MountRes3Ok::unpack(d)?)),
            s => Ok(MountRes3::Err(s)),
        }
    }
}

/// RFC 1813 Appendix I: `mountbody` without `ml_next`: one entry of the
/// DUMP result.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct MountBody {
    pub ml_hostname: Name,
    pub ml_directory: DirPath,
}

/// RFC 1813 Appendix I: `mountlist`, the result of DUMP.
pub type MountList = List<MountBody>;

/// RFC 1813 Appendix I: `groups`, the hosts or netgroups an export is
/// offered to (`groupnode` without `gr_next`).
pub type Groups = List<Name>;

/// RFC 1813 Appendix I: `exportnode` without `ex_next`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Pack, Unpack)]
pub struct ExportNode {
    pub ex_dir: DirPath,
    pub ex_groups: Groups,
}

/// RFC 1813 Appendix I: `exports`, the result of EXPORT.
pub type Exports = List<ExportNode>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mnt_ok_roundtrip_and_layout() {
        let r = MountRes3::Ok(MountRes3Ok {
            fhandle: FHandle3(Bytes::from_static(&[1, 2, 3, 4, 5])),
            auth_flavors: vec![1, 0],
        });
        let b = xdr::to_bytes(&r);
        assert_eq!(
            &b[..],
            &[
                0, 0, 0, 0, // MNT3_OK
                0, 0, 0, 5, 1, 2, 3, 4, 5, 0, 0, 0, // fhandle<64>
                0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, // auth_flavors<>
            ]
        );
        assert_eq!(xdr::from_bytes::<MountRes3>(b).unwrap(), r);
    }

    #[test]
    fn mnt_error_is_just_the_status() {
        let r = MountRes3::Err(MountStat3::Acces);
        let b = xdr::to_bytes(&r);
        assert_eq!(&b[..], &[0, 0, 0, 13]);
        assert_eq!(xdr::from_bytes::<MountRes3>(b).unwrap(), r);
        // An "error" of MNT3_OK goes out as SERVERFAULT, never as OK.
        let b = xdr::to_bytes(&MountRes3::Err(MountStat3::Ok));
        assert_eq!(
            xdr::from_bytes::<MountRes3>(b).unwrap(),
            MountRes3::Err(MountStat3::ServerFault)
        );
    }

    #[test]
    fn oversized_handle_and_path_are_rejected() {
        let mut e = xdr::Encoder::new();
        e.u32(0);
        e.opaque(&[0u8; FHSIZE3 + 1]);
        e.u32(0);
        assert!(xdr::from_bytes::<MountRes3>(e.to_bytes()).is_err());
        let long = xdr::to_bytes(&Bytes::from(vec![b'a'; MNTPATHLEN + 1]));
        assert!(xdr::from_bytes::<DirPath>(long).is_err());
    }

    #[test]
    fn exports_nest_lists() {
        let ex: Exports = List(vec![
            ExportNode {
                ex_dir: DirPath(Bytes::from_static(b"/export")),
                ex_groups: List(vec![
                    Name(Bytes::from_static(b"*")),
                    Name(Bytes::from_static(b"@admins")),
                ]),
            },
            ExportNode {
                ex_dir: DirPath(Bytes::from_static(b"/tmp")),
                ex_groups: List(Vec::new()),
            },
        ]);
        let b = xdr::to_bytes(&ex);
        assert_eq!(xdr::from_bytes::<Exports>(b.clone()).unwrap(), ex);
        // Cut anywhere, it fails cleanly.
        for n in 0..b.len() {
            assert!(xdr::from_bytes::<Exports>(b.slice(..n)).is_err());
        }
        let dump: MountList = List(vec![MountBody {
            ml_hostname: Name(Bytes::from_static(b"client")),
            ml_directory: DirPath(Bytes::from_static(b"/export")),
        }]);
        let b = xdr::to_bytes(&dump);
        assert_eq!(xdr::from_bytes::<MountList>(b).unwrap(), dump);
        assert_eq!(&xdr::to_bytes(&MountList::default())[..], &[0, 0, 0, 0]);
    }
}
