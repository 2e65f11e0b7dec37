//! The names the statistics give programs, procedures and statuses: the
//! RFCs' own (RFC 8881 §15.1 and §16.2, RFC 1813 §2.6 and §3, the MOUNT
//! and NSM appendices, XNFS for NLM).

/// The programs counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    Nfs4,
    Nfs3,
    Mount,
    Nlm,
    Nsm,
}

impl Program {
    pub const ALL: [Program; 5] = [
        Program::Nfs4,
        Program::Nfs3,
        Program::Mount,
        Program::Nlm,
        Program::Nsm,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Program::Nfs4 => "NFSv4",
            Program::Nfs3 => "NFSv3",
            Program::Mount => "MOUNT",
            Program::Nlm => "NLM",
            Program::Nsm => "NSM",
        }
    }

    /// One past the highest procedure (operation) number.
    pub(crate) fn procs(self) -> usize {
        match self {
            // OP_ILLEGAL is 10044: operations past 80 are counted there.
            Program::Nfs4 => 80,
            Program::Nfs3 => 22,
            Program::Mount => 6,
            Program::Nlm => 24,
            Program::Nsm => 7,
        }
    }
}

/// The name of procedure (or NFSv4 operation) `n` of `p`.
pub fn proc_name(p: Program, n: u32) -> String {
    let known = match p {
        Program::Nfs4 if n == ILLEGAL => Some("ILLEGAL"),
        Program::Nfs4 => <proto::nfs4::OpNum4 as xdr::Discriminant>::from_u32(n)
            .ok()
            .map(proto::nfs4::OpNum4::name),
        Program::Nfs3 => proto::nfs3::NFSPROC3_NAMES.get(n as usize).copied(),
        Program::Mount => MOUNT.get(n as usize).copied(),
        Program::Nlm => Some(proto::nlm::nlmproc4_name(n)).filter(|s| *s != "?"),
        Program::Nsm => NSM.get(n as usize).copied(),
    };
    known.map_or_else(|| format!("PROC{n}"), str::to_string)
}

/// Where NFSv4 operations with no number of their own are counted (no
/// operation is numbered 1; OP_ILLEGAL is 10044).
pub const ILLEGAL: u32 = 1;

/// RFC 1813 Appendix I.
const MOUNT: [&str; 6] = ["NULL", "MNT", "DUMP", "UMNT", "UMNTALL", "EXPORT"];
/// The NSM protocol (XNFS ch. 11).
const NSM: [&str; 7] = [
    "SM_NULL",
    "SM_STAT",
    "SM_MON",
    "SM_UNMON",
    "SM_UNMON_ALL",
    "SM_SIMU_CRASH",
    "SM_NOTIFY",
];

/// Statuses at the RPC level (RFC 5531 §9), kept among a procedure's
/// statuses under numbers no protocol uses.
pub const RPC_PROC_UNAVAIL: u32 = 0xFFFF_0001;
pub const RPC_GARBAGE_ARGS: u32 = 0xFFFF_0002;
pub const RPC_SYSTEM_ERR: u32 = 0xFFFF_0003;
pub const RPC_AUTH_ERROR: u32 = 0xFFFF_0004;
pub const RPC_OTHER: u32 = 0xFFFF_0005;

/// The name of status `s` of a procedure of `p`.
pub fn status_name(p: Program, s: u32) -> String {
    match s {
        RPC_PROC_UNAVAIL => return "PROC_UNAVAIL".into(),
        RPC_GARBAGE_ARGS => return "GARBAGE_ARGS".into(),
        RPC_SYSTEM_ERR => return "SYSTEM_ERR".into(),
        RPC_AUTH_ERROR => return "AUTH_ERROR".into(),
        RPC_OTHER => return "RPC_ERROR".into(),
        _ => {}
    }
    match p {
        Program::Nfs4 => nfsstat4_name(s),
        Program::Nfs3 => nfsstat3_name(s),
        _ => format!("{s}"),
    }
}

/// RFC 8881 §15.1: `Nfs4errBadCookie` is NFS4ERR_BAD_COOKIE (the enum's
/// words are the RFC's).
fn nfsstat4_name(s: u32) -> String {
    let Ok(st) = <proto::nfs4::NfsStat4 as xdr::Discriminant>::from_u32(s) else {
        return format!("NFS4ERR_{s}");
    };
    let debug = format!("{st:?}");
    if debug == "Nfs4Ok" {
        return "NFS4_OK".into();
    }
    let rest = debug.strip_prefix("Nfs4err").unwrap_or(&debug);
    let mut name = String::from("NFS4ERR");
    for c in rest.chars() {
        if c.is_ascii_uppercase() {
            name.push('_');
        }
        name.push(c.to_ascii_uppercase());
    }
    name
}

/// RFC 1813 §2.6.
fn nfsstat3_name(s: u32) -> String {
    let name = match s {
        0 => "NFS3_OK",
        1 => "NFS3ERR_PERM",
        2 => "NFS3ERR_NOENT",
        5 => "NFS3ERR_IO",
        6 => "NFS3ERR_NXIO",
        13 => "NFS3ERR_ACCES",
        17 => "NFS3ERR_EXIST",
        18 => "NFS3ERR_XDEV",
        19 => "NFS3ERR_NODEV",
        20 => "NFS3ERR_NOTDIR",
        21 => "NFS3ERR_ISDIR",
        22 => "NFS3ERR_INVAL",
        27 => "NFS3ERR_FBIG",
        28 => "NFS3ERR_NOSPC",
        30 => "NFS3ERR_ROFS",
        31 => "NFS3ERR_MLINK",
        63 => "NFS3ERR_NAMETOOLONG",
        66 => "NFS3ERR_NOTEMPTY",
        69 => "NFS3ERR_DQUOT",
        70 => "NFS3ERR_STALE",
        71 => "NFS3ERR_REMOTE",
        10001 => "NFS3ERR_BADHANDLE",
        10002 => "NFS3ERR_NOT_SYNC",
        10003 => "NFS3ERR_BAD_COOKIE",
        10004 => "NFS3ERR_NOTSUPP",
        10005 => "NFS3ERR_TOOSMALL",
        10006 => "NFS3ERR_SERVERFAULT",
        10007 => "NFS3ERR_BADTYPE",
        10008 => "NFS3ERR_JUKEBOX",
        _ => return format!("NFS3ERR_{s}"),
    };
    name.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_have_their_rfc_names() {
        use proto::nfs4::NfsStat4 as S;
        for (s, want) in [
            (S::Nfs4Ok, "NFS4_OK"),
            (S::Nfs4errNoent, "NFS4ERR_NOENT"),
            (S::Nfs4errBadCookie, "NFS4ERR_BAD_COOKIE"),
            (S::Nfs4errMinorVersMismatch, "NFS4ERR_MINOR_VERS_MISMATCH"),
            (S::Nfs4errDeadsession, "NFS4ERR_DEADSESSION"),
            (S::Nfs4errRepTooBigToCache, "NFS4ERR_REP_TOO_BIG_TO_CACHE"),
        ] {
            assert_eq!(status_name(Program::Nfs4, s as u32), want);
        }
        assert_eq!(status_name(Program::Nfs3, 70), "NFS3ERR_STALE");
        assert_eq!(status_name(Program::Nfs3, 10001), "NFS3ERR_BADHANDLE");
        assert_eq!(status_name(Program::Nfs3, RPC_GARBAGE_ARGS), "GARBAGE_ARGS");
        assert_eq!(proc_name(Program::Nfs4, 25), "READ");
        assert_eq!(proc_name(Program::Nfs3, 6), "READ");
        assert_eq!(proc_name(Program::Nlm, 2), "NLMPROC4_LOCK");
        assert_eq!(proc_name(Program::Mount, 1), "MNT");
        assert_eq!(proc_name(Program::Nsm, 99), "PROC99");
        assert_eq!(proc_name(Program::Nfs4, ILLEGAL), "ILLEGAL");
    }
}
