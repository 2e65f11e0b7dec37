//! Referrals (RFC 8881 §11.15; in RFC 5661, §11.8): a path of the
//! namespace where no file system is present on this server, only the
//! places it lives. A client entering it is told NFS4ERR_MOVED and reads
//! where to go from `fs_locations` (§11.16) or `fs_locations_info`
//! (§11.17); `fs_status` (§11.18) says it is a referral.
//!
//! A location is "HOST:PORT:/path" (or "HOST:/path", port 2049). On the
//! wire, an address travels as a universal address, with the port as its
//! ".p1.p2" suffix unless it is 2049 (§11.16: "If the suffix is omitted,
//! then the default port, 2049, SHOULD be assumed"). A host name cannot
//! carry a port there, so a name with a port other than 2049 is refused.
//! (The Linux client connects to port 2049 of a referral's server
//! whatever the address says: nfs4namespace.c, try_location.)

use std::net::IpAddr;

use bytes::Bytes;
use proto::nfs4::{
    Fs4Status, Fs4StatusType, FsLocation4, FsLocations4, FsLocationsInfo4, FsLocationsItem4,
    FsLocationsServer4, NfsTime4, Pathname4,
};

use super::namespace::components;

/// The NFS port clients assume.
pub const NFS_PORT: u16 = 2049;

/// Most locations one referral may name.
pub const MAX_LOCATIONS: usize = 16;

/// One place a referred file system lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// An address, or a host name.
    pub host: String,
    pub port: u16,
    /// Its path on that server ("/" for its root).
    pub path: String,
}

impl Location {
    /// Parses "HOST:PORT:/path", "HOST:/path", "[V6ADDR]:PORT:/path" or
    /// "[V6ADDR]:/path".
    pub fn parse(s: &str) -> Result<Location, String> {
        let bad = |why: &str| format!("referral location {s:?}: {why} (expected HOST:PORT:/path)");
        let bracketed = s.starts_with('[');
        let (host, rest) = if let Some(v6) = s.strip_prefix('[') {
            let (h, rest) = v6.split_once(']').ok_or_else(|| bad("no closing ']'"))?;
            let rest = rest
                .strip_prefix(':')
                .ok_or_else(|| bad("no ':' after the address"))?;
            if h.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(bad("not an IPv6 address in brackets"));
            }
            (h.to_string(), rest)
        } else {
            let (h, rest) = s.split_once(':').ok_or_else(|| bad("no ':'"))?;
            (h.to_string(), rest)
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        if !bracketed && host.contains(':') {
            return Err(bad("an IPv6 address goes in brackets"));
        }
        let (port, path) = match rest.split_once(':') {
            Some((p, path)) => (
                p.parse::<u16>()
                    .ok()
                    .filter(|&p| p != 0)
                    .ok_or_else(|| bad("the port is not a number from 1 to 65535"))?,
                path,
            ),
            None => (NFS_PORT, rest),
        };
        if !path.starts_with('/') {
            return Err(bad("the path must be absolute"));
        }
        if components(path).iter().any(|c| *c == "." || *c == "..") {
            return Err(bad("\".\" and \"..\" are not allowed in the path"));
        }
        let is_addr = host.parse::<IpAddr>().is_ok();
        if !is_addr {
            let name_ok = host.len() <= 253
                && host.split('.').all(|l| {
                    !l.is_empty()
                        && l.len() <= 63
                        && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                });
            if !name_ok {
                return Err(bad("not an address or a host name"));
            }
            if port != NFS_PORT {
                return Err(bad(
                    "a host name cannot carry a port in fs_locations (RFC 8881 §11.16): give an address, or port 2049",
                ));
            }
        }
        Ok(Location {
            host,
            port,
            path: format!("/{}", components(path).join("/")),
        })
    }

    /// The server string of `fs_location4`: the host name, or the
    /// address as a universal address, with ".p1.p2" unless the port is
    /// 2049 (RFC 8881 §11.16; RFC 5665 §5.2.3.3, §5.2.3.4).
    pub fn server_string(&self) -> String {
        match self.host.parse::<IpAddr>() {
            Ok(ip) if self.port != NFS_PORT => {
                format!("{ip}.{}.{}", self.port >> 8, self.port & 0xff)
            }
            Ok(ip) => ip.to_string(),
            Err(_) => self.host.clone(),
        }
    }

    fn rootpath(&self) -> Pathname4 {
        pathname(&self.path)
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.host.parse::<IpAddr>() {
            Ok(IpAddr::V6(a)) => write!(f, "[{a}]:{}:{}", self.port, self.path),
            _ => write!(f, "{}:{}:{}", self.host, self.port, self.path),
        }
    }
}

/// A path as `pathname4` components.
pub fn pathname(path: &str) -> Pathname4 {
    components(path)
        .into_iter()
        .map(|c| Bytes::copy_from_slice(c.as_bytes()))
        .collect()
}

/// A referral configured at `path` of the namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferralConfig {
    pub path: String,
    pub locations: Vec<Location>,
}

impl ReferralConfig {
    /// Checks it: a clear error for a bad one.
    pub fn check(&self) -> Result<(), String> {
        if components(&self.path).is_empty() {
            return Err("a referral cannot be the namespace root \"/\"".into());
        }
        if self.locations.is_empty() {
            return Err(format!("referral {}: no location", self.path));
        }
        if self.locations.len() > MAX_LOCATIONS {
            return Err(format!(
                "referral {}: {} locations, at most {MAX_LOCATIONS}",
                self.path,
                self.locations.len()
            ));
        }
        Ok(())
    }

    /// `fs_locations` for it (§11.16): `fs_root` is the path the client
    /// reached it by; one location per configured place.
    pub fn fs_locations(&self) -> FsLocations4 {
        FsLocations4 {
            fs_root: pathname(&self.path),
            locations: self
                .locations
                .iter()
                .map(|l| FsLocation4 {
                    server: vec![Bytes::from(l.server_string())],
                    rootpath: l.rootpath(),
                })
                .collect(),
        }
    }

    /// `fs_locations_info` for it (§11.17): every location equal in rank
    /// and order, no continuity of handles, fileids, write verifiers,
    /// change attributes or cookies claimed (class bytes 0: "no match"),
    /// and currency unknown (-1). No location is the current one: in a
    /// referral none is (§11.17.1, FSLI4GF_CUR_REQ).
    pub fn fs_locations_info(&self) -> FsLocationsInfo4 {
        FsLocationsInfo4 {
            flags: 0,
            valid_for: 0,
            fs_root: pathname(&self.path),
            items: self
                .locations
                .iter()
                .map(|l| FsLocationsItem4 {
                    entries: vec![FsLocationsServer4 {
                        currency: -1,
                        info: Bytes::from_static(&[0; 12]),
                        server: Bytes::from(l.server_string()),
                    }],
                    rootpath: l.rootpath(),
                })
                .collect(),
        }
    }

    /// `fs_status` (§11.18): absent, and never present here
    /// (STATUS4_REFERRAL).
    pub fn fs_status(&self) -> Fs4Status {
        Fs4Status {
            absent: true,
            type_: Fs4StatusType::Status4Referral,
            source: Bytes::new(),
            current: Bytes::new(),
            age: 0,
            version: NfsTime4::default(),
        }
    }
}

/// The fsid of referral `index` (§11.4.1: "must be different from any
/// other fsid on the current server"): exports have minor numbers 1 to
/// 65535 and the pseudo filesystem 0.
pub fn fsid(index: u16) -> (u64, u64) {
    (0x4645_5252, 0x1_0000 + u64::from(index))
}

/// The mounted_on_fileid of referral `index` in its pseudo directory:
/// apart from the pseudo nodes' (their index + 1) and export roots'
/// (0x10000 + export id).
pub fn mounted_on_fileid(index: u16) -> u64 {
    0x2_0000 + u64::from(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse() {
        let l = Location::parse("10.0.0.2:20490:/data/x/").unwrap();
        assert_eq!(
            (l.host.as_str(), l.port, l.path.as_str()),
            ("10.0.0.2", 20490, "/data/x")
        );
        assert_eq!(l.server_string(), "10.0.0.2.80.10");
        let l = Location::parse("10.0.0.2:/").unwrap();
        assert_eq!((l.port, l.path.as_str()), (2049, "/"));
        assert_eq!(l.server_string(), "10.0.0.2");
        let l = Location::parse("[fd00::1]:2050:/a").unwrap();
        assert_eq!(l.server_string(), "fd00::1.8.2");
        assert_eq!(l.to_string(), "[fd00::1]:2050:/a");
        let l = Location::parse("nfs.example.org:2049:/b").unwrap();
        assert_eq!(l.server_string(), "nfs.example.org");
        for bad in [
            "",
            "10.0.0.2",
            "10.0.0.2:0:/a",
            "10.0.0.2:99999:/a",
            "10.0.0.2:2049:a",
            "10.0.0.2:2049:/a/../b",
            ":2049:/a",
            "fd00::1:2049:/a",
            "[fd00::1:2049:/a",
            "[nope]:2049:/a",
            "nfs.example.org:2050:/b",
            "bad host:2049:/b",
        ] {
            assert!(Location::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn attributes_name_every_location() {
        let r = ReferralConfig {
            path: "/far/away".into(),
            locations: vec![
                Location::parse("10.0.0.2:/data").unwrap(),
                Location::parse("10.0.0.3:2050:/").unwrap(),
            ],
        };
        r.check().unwrap();
        let l = r.fs_locations();
        assert_eq!(l.fs_root, vec![Bytes::from("far"), Bytes::from("away")]);
        assert_eq!(l.locations.len(), 2);
        assert_eq!(l.locations[0].server, vec![Bytes::from("10.0.0.2")]);
        assert_eq!(l.locations[0].rootpath, vec![Bytes::from("data")]);
        assert_eq!(l.locations[1].server, vec![Bytes::from("10.0.0.3.8.2")]);
        assert!(l.locations[1].rootpath.is_empty());
        let i = r.fs_locations_info();
        assert_eq!(i.items.len(), 2);
        assert!(i.items.iter().all(|it| it.entries[0].info.len() == 12));
        assert!(r.fs_status().absent);
        let none = ReferralConfig {
            path: "/x".into(),
            locations: vec![],
        };
        assert!(none.check().is_err());
        let root = ReferralConfig {
            path: "/".into(),
            locations: r.locations.clone(),
        };
        assert!(root.check().is_err());
        assert_ne!(fsid(0), (0x4645_5252, 0));
        assert_ne!(fsid(0).1, 65535);
    }
}
