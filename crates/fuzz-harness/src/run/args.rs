//! Argument values drawn from the input alone (credentials, names,
//! offsets, lengths, counts, attributes...), edge values most often.

use bytes::Bytes;
use proto::nfs4::*;
use rpc::Auth;

use super::program::Input;

/// Names operations use; the first ones most often.
const NAMES: [&[u8]; 12] = [
    b"a",
    b"b",
    b"c",
    b"d",
    b"sub",
    b".",
    b"..",
    b"",
    b"x/y",
    b"\xff\xfe",
    b"n\0",
    b"long",
];

pub(super) fn auth(inp: &mut Input<'_>) -> Auth {
    auth_by(inp.u8() & 3)
}

/// Root (mostly), an ordinary user, or AUTH_NONE.
pub(super) fn auth_by(v: u8) -> Auth {
    match v & 3 {
        0 | 1 => Auth::sys(0, 0, Vec::new(), "fuzz"),
        2 => Auth::sys(1000, 1000, vec![1000, 10], "fuzz"),
        _ => Auth::None,
    }
}

pub(super) fn name(inp: &mut Input<'_>) -> Bytes {
    let v = usize::from(inp.u8());
    // The first four names three times as often as the rest.
    let i = if v < 192 { v % 4 } else { v % NAMES.len() };
    match NAMES[i] {
        b"long" => Bytes::from(vec![b'l'; 256]),
        n => Bytes::from_static(n),
    }
}

pub(super) fn offset(inp: &mut Input<'_>) -> u64 {
    match inp.u8() % 13 {
        0 => 0,
        1 => 1,
        2 => 100,
        3 => 4095,
        4 => 4096,
        5 => 8192,
        6 => 1 << 20,
        7 => 1 << 32,
        8 => 1 << 62,
        9 => u64::MAX - 1,
        10 => u64::MAX,
        11 => i64::MAX as u64,
        _ => inp.u64(),
    }
}

pub(super) fn length(inp: &mut Input<'_>) -> u64 {
    match inp.u8() % 9 {
        0 => u64::MAX,
        1 => 1,
        2 => 10,
        3 => 0,
        4 => 4096,
        5 => 1 << 20,
        6 => u64::MAX - 1,
        7 => 1 << 63,
        _ => inp.u64(),
    }
}

pub(super) fn count(inp: &mut Input<'_>) -> u32 {
    match inp.u8() % 9 {
        0 => 4096,
        1 => 0,
        2 => 1,
        3 => 100,
        4 => 600,
        5 => 1 << 20,
        6 => 2 << 20,
        7 => u32::MAX,
        _ => inp.u32(),
    }
}

pub(super) fn lock_type(inp: &mut Input<'_>) -> NfsLockType4 {
    inp.pick(&[
        NfsLockType4::WriteLt,
        NfsLockType4::ReadLt,
        NfsLockType4::WritewLt,
        NfsLockType4::ReadwLt,
    ])
}

pub(super) fn share_access(inp: &mut Input<'_>) -> u32 {
    let v = inp.u8();
    let base = u32::from(v & 3);
    match v >> 2 & 7 {
        0..=4 => base,
        5 => base | OPEN4_SHARE_ACCESS_WANT_NO_DELEG,
        6 => base | OPEN4_SHARE_ACCESS_WANT_ANY_DELEG,
        _ => base | 4,
    }
}

/// An attribute mask for GETATTR and READDIR.
pub(super) fn mask(inp: &mut Input<'_>) -> Bitmap4 {
    match inp.u8() % 7 {
        0 => Bitmap4::from_attrs(&[FATTR4_TYPE, FATTR4_SIZE, FATTR4_FILEID, FATTR4_MODE]),
        1 => {
            // Every attribute that can be read.
            let mut all = Attrs::supported();
            all.remove(FATTR4_TIME_ACCESS_SET);
            all.remove(FATTR4_TIME_MODIFY_SET);
            all
        }
        2 => Bitmap4::default(),
        6 => Attrs::supported(),
        3 => Bitmap4::from_attrs(&[
            FATTR4_SUPPORTED_ATTRS,
            FATTR4_FILEHANDLE,
            FATTR4_RDATTR_ERROR,
            FATTR4_OWNER,
            FATTR4_OWNER_GROUP,
            FATTR4_ACL,
            FATTR4_FS_LOCATIONS,
        ]),
        4 => Bitmap4::from_attrs(&[
            FATTR4_SPACE_USED,
            FATTR4_TIME_MODIFY,
            FATTR4_MOUNTED_ON_FILEID,
            FATTR4_CHANGE,
            FATTR4_NUMLINKS,
            FATTR4_SUPPATTR_EXCLCREAT,
        ]),
        _ => Bitmap4(vec![inp.u32(), inp.u32(), inp.u32()]),
    }
}

/// Attributes to set or verify: a few settable ones with edge values, a
/// read-only one, or raw bytes behind a raw mask.
pub(super) fn attrs(inp: &mut Input<'_>) -> Fattr4 {
    let which = inp.u8();
    if which == 0xff {
        let attrmask = Bitmap4(vec![inp.u32(), inp.u32()]);
        let n = usize::from(inp.u8() % 64);
        return Fattr4 {
            attrmask,
            attr_vals: Bytes::copy_from_slice(inp.bytes(n)),
        };
    }
    let owners: [&'static [u8]; 7] = [b"0", b"1000", b"65534", b"root", b"nobody@x", b"", b"x@y"];
    let mut a = Attrs::default();
    if which & 1 != 0 {
        a.mode = Some(inp.pick(&[
            0o644,
            0o755,
            0o600,
            0o777,
            0o4755,
            0o1777,
            0,
            0o7777,
            u32::MAX,
        ]));
    }
    if which & 2 != 0 {
        a.size = Some(match inp.u8() % 5 {
            0 => 0,
            1 => 1,
            2 => 5000,
            3 => 1 << 40,
            _ => u64::MAX,
        });
    }
    if which & 4 != 0 {
        a.owner = Some(Bytes::from_static(inp.pick(&owners)));
    }
    if which & 8 != 0 {
        a.owner_group = Some(Bytes::from_static(inp.pick(&owners)));
    }
    if which & 16 != 0 {
        a.time_modify_set = Some(time_set(inp));
    }
    if which & 32 != 0 {
        a.time_access_set = Some(time_set(inp));
    }
    if which & 64 != 0 {
        match inp.u8() % 4 {
            0 => a.type_ = Some(NfsFtype4::Nf4Reg),
            1 => a.acl = Some(Vec::new()),
            2 => a.hidden = Some(true),
            _ => {
                a.mode_umask = Some(ModeUmask4 {
                    mode: 0o777,
                    umask: 0o22,
                })
            }
        }
    }
    a.encode()
}

fn time_set(inp: &mut Input<'_>) -> SetTime4 {
    match inp.u8() % 4 {
        0 => SetTime4::SetToServerTime4,
        1 => SetTime4::SetToClientTime4(NfsTime4 {
            seconds: 1_000_000_000,
            nseconds: 0,
        }),
        2 => SetTime4::SetToClientTime4(NfsTime4 {
            seconds: -1,
            nseconds: 1_000_000_000,
        }),
        _ => SetTime4::SetToClientTime4(NfsTime4 {
            seconds: i64::MAX,
            nseconds: 999_999_999,
        }),
    }
}

pub(super) fn sec_parms(inp: &mut Input<'_>) -> Vec<CallbackSecParms4> {
    match inp.u8() % 4 {
        0 => vec![CallbackSecParms4::AuthNone],
        1 => vec![CallbackSecParms4::AuthSys(AuthSysParms {
            stamp: 1,
            machinename: Bytes::from_static(b"cb"),
            uid: 0,
            gid: 0,
            gids: Vec::new(),
        })],
        2 => Vec::new(),
        _ => vec![CallbackSecParms4::RpcSecGss(GssCbHandles4 {
            service: RpcGssSvc::RpcGssSvcNone,
            handle_from_server: Bytes::new(),
            handle_from_client: Bytes::new(),
        })],
    }
}
