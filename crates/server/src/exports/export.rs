//! Exports: a backend published at a path of the server's namespace, and
//! the rules deciding which clients may use it and how.
//!
//! A client is matched against an export's rules in order; the first rule
//! whose [`ClientMatch`] covers the client's address decides its access
//! (read-write or read-only), identity squashing and whether it must come
//! from a privileged port. A client no rule matches cannot use the export.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use proto::nfs4::{AUTH_NONE, AUTH_SYS};

/// The uid and gid squashed identities map to unless configured.
pub const NOBODY: u32 = 65534;

/// One exported file system.
pub struct Export {
    /// Stable id, carried in filehandles.
    pub id: u16,
    /// Where clients see it (for example "/" or "/data").
    pub path: String,
    pub vfs: Arc<dyn vfs::Vfs>,
    /// The fsid clients see for this export (RFC 8881 §5.8.1.9).
    pub fsid: (u64, u64),
    /// Who may use it, and how.
    pub rules: ExportRules,
    /// Its write log, where stable WRITEs are made durable.
    pub log: Option<std::sync::Arc<crate::stable::writelog::WriteLog>>,
    /// Whether delegations of its files are granted (read ones, and write
    /// ones unless `Nfs4Config::write_delegations` is off).
    pub delegations: bool,
    /// Whether byte-range locks of its files are shared with local
    /// processes (`crate::conflicts::local_locks`).
    pub shared_locks: bool,
    /// Its data servers, when it is a pNFS metadata server: its `vfs` is
    /// then a [`crate::pnfs::vfs::DataVfs`] over them.
    pub pnfs: Option<Arc<crate::pnfs::Pnfs>>,
}

/// Which clients a rule covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientMatch {
    /// Every client ("*").
    Any,
    /// A network: an address and a prefix length ("10.0.0.0/8", "fd00::/8");
    /// a single address is a network with the full prefix.
    Net { addr: IpAddr, prefix: u8 },
    /// A host name, resolved to its addresses when the configuration is
    /// loaded.
    Host { name: String, addrs: Vec<IpAddr> },
}

/// Why a client match could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MatchError {
    #[error("bad network {0:?}: expected ADDRESS/PREFIX with a prefix of at most {1}")]
    BadNet(String, u8),
    #[error("host name {0:?} does not resolve: {1}")]
    Unresolved(String, String),
    #[error("empty client match")]
    Empty,
}

impl ClientMatch {
    /// Parses "*", an IPv4 or IPv6 address, a CIDR network or a host name
    /// (resolved now, with the system resolver).
    pub fn parse(s: &str) -> Result<ClientMatch, MatchError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(MatchError::Empty);
        }
        if s == "*" {
            return Ok(ClientMatch::Any);
        }
        if let Some((a, p)) = s.split_once('/') {
            let addr: IpAddr = a.parse().map_err(|_| MatchError::BadNet(s.into(), 128))?;
            let max = if addr.is_ipv4() { 32 } else { 128 };
            let prefix: u8 = p
                .parse()
                .ok()
                .filter(|&n| n <= max)
                .ok_or_else(|| MatchError::BadNet(s.into(), max))?;
            return Ok(ClientMatch::Net {
                addr: addr.to_canonical(),
                prefix,
            });
        }
        if let Ok(addr) = s.parse::<IpAddr>() {
            let addr = addr.to_canonical();
            let prefix = if addr.is_ipv4() { 32 } else { 128 };
            return Ok(ClientMatch::Net { addr, prefix });
        }
        let addrs: Vec<IpAddr> = (s, 0)
            .to_socket_addrs()
            .map_err(|e| MatchError::Unresolved(s.into(), e.to_string()))?
            .map(|a| a.ip().to_canonical())
            .collect();
        if addrs.is_empty() {
            return Err(MatchError::Unresolved(s.into(), "no addresses".into()));
        }
        Ok(ClientMatch::Host {
            name: s.into(),
            addrs,
        })
    }

    /// Whether the client at `ip` is covered. IPv4-mapped IPv6 addresses
    /// count as the IPv4 address they carry.
    pub fn matches(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        match self {
            ClientMatch::Any => true,
            ClientMatch::Net { addr, prefix } => in_net(ip, *addr, *prefix),
            ClientMatch::Host { addrs, .. } => addrs.contains(&ip),
        }
    }
}

fn in_net(ip: IpAddr, net: IpAddr, prefix: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX
                .checked_shl(32 - prefix.min(32) as u32)
                .unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX
                .checked_shl(128 - prefix.min(128) as u32)
                .unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// Identity squashing (exports(5): root_squash, no_root_squash, all_squash).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Squash {
    /// Requests act with the caller's identity.
    None,
    /// uid 0 becomes the anonymous uid, gid 0 (also among the groups) the
    /// anonymous gid.
    Root,
    /// Everyone acts as the anonymous uid and gid, without groups.
    All,
}

/// A security flavor an export accepts (RFC 8881 §2.6): AUTH_SYS,
/// AUTH_NONE, or RPCSEC_GSS with Kerberos V5 and one of its three
/// services.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Sys,
    None,
    /// Kerberos authentication (RPCSEC_GSS, rpc_gss_svc_none).
    Krb5,
    /// ... and integrity (rpc_gss_svc_integrity).
    Krb5i,
    /// ... and privacy (rpc_gss_svc_privacy).
    Krb5p,
}

/// The Kerberos V5 mechanism's OID, 1.2.840.113554.1.2.2, DER-encoded
/// (RFC 1964 §1), as SECINFO names it.
pub const KRB5_OID: &[u8] = &[
    0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02,
];

impl Flavor {
    /// The flavor number: RFC 5531's, or for Kerberos the pseudo-flavor
    /// MOUNT's auth_flavors list carries (RFC 2623 §2.2: 390003 to
    /// 390005).
    pub fn number(self) -> u32 {
        match self {
            Flavor::Sys => AUTH_SYS,
            Flavor::None => AUTH_NONE,
            Flavor::Krb5 => 390003,
            Flavor::Krb5i => 390004,
            Flavor::Krb5p => 390005,
        }
    }

    /// Its name in the configuration, exports(5)'s `sec=`.
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Sys => "sys",
            Flavor::None => "none",
            Flavor::Krb5 => "krb5",
            Flavor::Krb5i => "krb5i",
            Flavor::Krb5p => "krb5p",
        }
    }

    pub fn parse(s: &str) -> Option<Flavor> {
        [
            Flavor::Krb5p,
            Flavor::Krb5i,
            Flavor::Krb5,
            Flavor::Sys,
            Flavor::None,
        ]
        .into_iter()
        .find(|f| f.name() == s)
    }

    pub fn is_kerberos(self) -> bool {
        matches!(self, Flavor::Krb5 | Flavor::Krb5i | Flavor::Krb5p)
    }

    pub fn of(auth: &rpc::Auth) -> Flavor {
        match auth {
            rpc::Auth::Sys(_) => Flavor::Sys,
            rpc::Auth::None => Flavor::None,
            rpc::Auth::Gss(g) => match g.service {
                rpc::gss::GssService::None => Flavor::Krb5,
                rpc::gss::GssService::Integrity => Flavor::Krb5i,
                rpc::gss::GssService::Privacy => Flavor::Krb5p,
            },
        }
    }

    /// As SECINFO and SECINFO_NO_NAME list it (RFC 8881 §18.29.2).
    pub fn secinfo(self) -> proto::nfs4::SecInfo4 {
        use proto::nfs4::{RpcGssSvc, RpcSecGssInfo, SecInfo4};
        let gss = |service| {
            SecInfo4::RpcSecGss(RpcSecGssInfo {
                oid: bytes::Bytes::from_static(KRB5_OID),
                qop: 0,
                service,
            })
        };
        match self {
            Flavor::Sys | Flavor::None => SecInfo4::Flavor(self.number()),
            Flavor::Krb5 => gss(RpcGssSvc::RpcGssSvcNone),
            Flavor::Krb5i => gss(RpcGssSvc::RpcGssSvcIntegrity),
            Flavor::Krb5p => gss(RpcGssSvc::RpcGssSvcPrivacy),
        }
    }
}

/// One client rule of an export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientRule {
    pub matches: ClientMatch,
    /// Read-only: every modifying operation is NFS4ERR_ROFS.
    pub read_only: bool,
    pub squash: Squash,
    pub anonuid: u32,
    pub anongid: u32,
    /// Requests must come from a privileged source port (below 1024).
    pub secure: bool,
}

impl std::fmt::Display for ClientMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientMatch::Any => write!(f, "*"),
            ClientMatch::Net { addr, prefix } => {
                let full = if addr.is_ipv4() { 32 } else { 128 };
                if *prefix == full {
                    write!(f, "{addr}")
                } else {
                    write!(f, "{addr}/{prefix}")
                }
            }
            ClientMatch::Host { name, .. } => write!(f, "{name}"),
        }
    }
}

/// In exports(5) terms: `10.0.0.0/8(rw,root_squash,anonuid=65534,anongid=65534,secure)`.
impl std::fmt::Display for ClientRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let squash = match self.squash {
            Squash::None => "no_root_squash",
            Squash::Root => "root_squash",
            Squash::All => "all_squash",
        };
        write!(
            f,
            "{}({},{squash},anonuid={},anongid={},{})",
            self.matches,
            if self.read_only { "ro" } else { "rw" },
            self.anonuid,
            self.anongid,
            if self.secure { "secure" } else { "insecure" }
        )
    }
}

impl ClientRule {
    /// A rule for `matches` with the defaults of exports(5): read-write,
    /// root squashed to 65534, privileged port required.
    pub fn new(matches: ClientMatch) -> Self {
        ClientRule {
            matches,
            read_only: false,
            squash: Squash::Root,
            anonuid: NOBODY,
            anongid: NOBODY,
            secure: true,
        }
    }

    /// Everyone, read-write, no squashing, any port: the development
    /// default of `ferrite serve DIR`.
    pub fn open() -> Self {
        ClientRule {
            squash: Squash::None,
            secure: false,
            ..ClientRule::new(ClientMatch::Any)
        }
    }

    /// The identity a request with `auth` acts with under this rule.
    /// AUTH_NONE callers, and Kerberos principals that map to no local
    /// user, are always the anonymous identity.
    pub fn creds(&self, auth: &rpc::Auth) -> vfs::Creds {
        let anon = vfs::Creds {
            uid: self.anonuid,
            gid: self.anongid,
            groups: Vec::new(),
        };
        let (uid, gid, groups) = match auth {
            rpc::Auth::Sys(p) => (p.uid, p.gid, &p.gids),
            rpc::Auth::Gss(g) => match &g.principal.ids {
                Some(ids) => (ids.uid, ids.gid, &ids.groups),
                None => return anon,
            },
            rpc::Auth::None => return anon,
        };
        match self.squash {
            Squash::All => anon,
            Squash::None => vfs::Creds {
                uid,
                gid,
                groups: groups.clone(),
            },
            Squash::Root => {
                let g = |g: u32| if g == 0 { self.anongid } else { g };
                vfs::Creds {
                    uid: if uid == 0 { self.anonuid } else { uid },
                    gid: g(gid),
                    groups: groups.iter().map(|&x| g(x)).collect(),
                }
            }
        }
    }
}

/// Who may use an export and with which security flavors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportRules {
    /// Client rules, first match wins.
    pub clients: Vec<ClientRule>,
    /// Accepted flavors, preferred first (what SECINFO reports).
    pub sec: Vec<Flavor>,
    /// Accepted transport security (`xprtsec`, RFC 9289 as the Linux
    /// server names it): "none" a plain connection, "tls" TLS without a
    /// client certificate, "mtls" TLS with one the server verified.
    pub xprtsec: Vec<rpc::tls::Xprt>,
}

impl ExportRules {
    /// `*(rw, no_root_squash, insecure)` with AUTH_SYS and AUTH_NONE.
    pub fn open() -> Self {
        ExportRules {
            clients: vec![ClientRule::open()],
            sec: vec![Flavor::Sys, Flavor::None],
            xprtsec: Self::ANY_XPRT.to_vec(),
        }
    }

    /// The rule deciding for a client at `peer`, if any.
    pub fn rule_for(&self, peer: IpAddr) -> Option<&ClientRule> {
        self.clients.iter().find(|r| r.matches.matches(peer))
    }

    /// Whether the client at `peer` may use the export at all (has a rule,
    /// and comes from a privileged port if the rule asks for one). Errors
    /// are NFS4ERR_ACCESS (no rule) and NFS4ERR_PERM (insecure port,
    /// as the Linux server answers).
    pub fn admit(&self, peer: SocketAddr) -> Result<&ClientRule, proto::nfs4::NfsStat4> {
        let r = self
            .rule_for(peer.ip())
            .ok_or(proto::nfs4::NfsStat4::Nfs4errAccess)?;
        if r.secure && peer.port() >= 1024 {
            return Err(proto::nfs4::NfsStat4::Nfs4errPerm);
        }
        Ok(r)
    }

    /// Every transport security: the default, as the Linux server's.
    pub const ANY_XPRT: [rpc::tls::Xprt; 3] = [
        rpc::tls::Xprt::None,
        rpc::tls::Xprt::Tls,
        rpc::tls::Xprt::Mtls,
    ];

    pub fn allows(&self, f: Flavor) -> bool {
        self.sec.contains(&f)
    }

    /// Whether a call over a connection with transport security `x` may
    /// use the export.
    pub fn allows_xprt(&self, x: rpc::tls::Xprt) -> bool {
        self.xprtsec.contains(&x)
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn rules_read_as_in_exports5() {
        let mut r = ClientRule::new(ClientMatch::parse("10.0.0.0/8").unwrap());
        assert_eq!(
            r.to_string(),
            "10.0.0.0/8(rw,root_squash,anonuid=65534,anongid=65534,secure)"
        );
        r.matches = ClientMatch::parse("192.0.2.7").unwrap();
        r.read_only = true;
        r.squash = Squash::All;
        assert_eq!(
            r.to_string(),
            "192.0.2.7(ro,all_squash,anonuid=65534,anongid=65534,secure)"
        );
    }

    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn matches_networks_and_addresses() {
        let m = ClientMatch::parse("10.0.0.0/8").unwrap();
        assert!(m.matches(ip("10.1.2.3")));
        assert!(m.matches(ip("::ffff:10.1.2.3")));
        assert!(!m.matches(ip("11.0.0.1")));
        assert!(!m.matches(ip("::1")));
        let m = ClientMatch::parse("127.0.0.1").unwrap();
        assert!(m.matches(ip("127.0.0.1")) && !m.matches(ip("127.0.0.2")));
        let m = ClientMatch::parse("fd00::/8").unwrap();
        assert!(m.matches(ip("fd12::1")) && !m.matches(ip("fe80::1")));
        assert!(ClientMatch::parse("0.0.0.0/0")
            .unwrap()
            .matches(ip("1.2.3.4")));
        assert!(ClientMatch::parse("*").unwrap().matches(ip("::1")));
        assert!(ClientMatch::parse("10.0.0.0/33").is_err());
        assert!(ClientMatch::parse("10.0.0/8").is_err());
        assert!(ClientMatch::parse("::/129").is_err());
        assert!(ClientMatch::parse("").is_err());
        let m = ClientMatch::parse("localhost").unwrap();
        assert!(m.matches(ip("127.0.0.1")) || m.matches(ip("::1")));
    }

    #[test]
    fn squashing() {
        let sys = rpc::Auth::sys(0, 0, vec![0, 5], "m");
        let mut r = ClientRule::new(ClientMatch::Any);
        let c = r.creds(&sys);
        assert_eq!((c.uid, c.gid, c.groups), (NOBODY, NOBODY, vec![NOBODY, 5]));
        let user = rpc::Auth::sys(1000, 100, vec![0, 5], "m");
        assert_eq!(r.creds(&user).uid, 1000);
        r.squash = Squash::All;
        r.anonuid = 1234;
        r.anongid = 99;
        let c = r.creds(&user);
        assert_eq!((c.uid, c.gid, c.groups.len()), (1234, 99, 0));
        r.squash = Squash::None;
        assert_eq!(r.creds(&sys).uid, 0);
        assert_eq!(r.creds(&rpc::Auth::None).uid, 1234);
    }

    #[test]
    fn admission() {
        let mut rules = ExportRules::open();
        let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        assert!(rules.admit(peer).is_ok());
        rules.clients = vec![ClientRule::new(ClientMatch::parse("10.0.0.0/8").unwrap())];
        assert_eq!(
            rules.admit(peer).unwrap_err(),
            proto::nfs4::NfsStat4::Nfs4errAccess
        );
        rules.clients = vec![ClientRule::new(ClientMatch::Any)];
        assert_eq!(
            rules.admit(peer).unwrap_err(),
            proto::nfs4::NfsStat4::Nfs4errPerm
        );
        assert!(rules.admit("127.0.0.1:800".parse().unwrap()).is_ok());
    }
}
