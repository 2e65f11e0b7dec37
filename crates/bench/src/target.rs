//! Benchmark targets: `nfs4://host:port/path[?persist=1&pnfs=off&sec=krb5p&tls=CA.pem]`
//! (NFSv4.1; `nfs4.0://` for NFSv4.0, RFC 7530),
//! `nfs3://host:port/path?mountport=N&nlmport=M` and `dir:/path`.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;

use crate::{Error, Result};

/// Where a workload runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// NFSv4.1 over TCP; `path` is looked up from the root filehandle.
    /// `persist`: the sessions ask for CREATE_SESSION4_FLAG_PERSIST, as
    /// Linux clients do. `pnfs`: READ and WRITE go to the data servers
    /// of flexible-file layouts when the server offers them (`?pnfs=off`:
    /// everything through the server).
    Nfs4 {
        host: String,
        port: u16,
        path: String,
        /// The minor version: 1 (`nfs4://`) or 0 (`nfs4.0://`: no
        /// session, per-owner sequence ids, no callback path so no
        /// delegations, no pNFS).
        minor: u32,
        persist: bool,
        pnfs: bool,
        /// RPCSEC_GSS with Kerberos (`sec=krb5`, `krb5i`, `krb5p`): the
        /// service `nfs@HOST`, the ticket from the default credential
        /// cache (KRB5CCNAME); none: AUTH_SYS.
        sec: Option<rpc::gss::GssService>,
        /// RPC-over-TLS (`tls=CA.pem`): the authority that signed the
        /// server's certificate, which must name HOST.
        tls: Option<PathBuf>,
        /// Mutual TLS (`tlscert=PEM&tlskey=PEM`): the client's certificate
        /// chain and key.
        tls_identity: Option<(PathBuf, PathBuf)>,
    },
    /// NFSv3 + MOUNT (+ NLM for locks) over TCP; `path` is the MNT path.
    /// Ports not given are asked of the portmapper on the host's port 111.
    Nfs3 {
        host: String,
        port: u16,
        path: String,
        mountport: Option<u16>,
        nlmport: Option<u16>,
    },
    /// POSIX calls on a local path (for example a kernel NFS mount).
    Dir(PathBuf),
}

fn host_port_path(rest: &str, default_port: u16) -> Result<(String, u16, String, String)> {
    let (hp, tail) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (path, query) = match tail.split_once('?') {
        Some((p, q)) => (p, q),
        None => (tail, ""),
    };
    let (host, port) = if let Some(h) = hp.strip_prefix('[') {
        // [v6]:port
        let (h, p) = h
            .split_once(']')
            .ok_or_else(|| Error::Msg(format!("bad address {hp}")))?;
        (h.to_string(), p.trim_start_matches(':'))
    } else {
        match hp.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), p),
            None => (hp.to_string(), ""),
        }
    };
    let port = if port.is_empty() {
        default_port
    } else {
        port.parse()
            .map_err(|_| Error::Msg(format!("bad port in {hp}")))?
    };
    if host.is_empty() {
        return Err(Error::Msg("missing host".into()));
    }
    Ok((host, port, path.to_string(), query.to_string()))
}

impl FromStr for Target {
    type Err = Error;

    fn from_str(s: &str) -> Result<Target> {
        let v4 = s
            .strip_prefix("nfs4://")
            .map(|r| (1, r))
            .or_else(|| s.strip_prefix("nfs4.0://").map(|r| (0, r)));
        if let Some((minor, rest)) = v4 {
            let (host, port, path, query) = host_port_path(rest, 2049)?;
            let (mut persist, mut pnfs, mut sec, mut tls) = (false, true, None, None);
            let (mut cert, mut key) = (None, None);
            for kv in query.split('&').filter(|k| !k.is_empty()) {
                match kv {
                    "persist=0" => persist = false,
                    "persist=1" => persist = true,
                    "pnfs=off" | "pnfs=0" => pnfs = false,
                    "pnfs=on" | "pnfs=1" => pnfs = true,
                    "sec=sys" => sec = None,
                    "sec=krb5" => sec = Some(rpc::gss::GssService::None),
                    "sec=krb5i" => sec = Some(rpc::gss::GssService::Integrity),
                    "sec=krb5p" => sec = Some(rpc::gss::GssService::Privacy),
                    q if q.starts_with("tls=") && q.len() > 4 => {
                        tls = Some(PathBuf::from(&q[4..]));
                    }
                    q if q.starts_with("tlscert=") && q.len() > 8 => {
                        cert = Some(PathBuf::from(&q[8..]));
                    }
                    q if q.starts_with("tlskey=") && q.len() > 7 => {
                        key = Some(PathBuf::from(&q[7..]));
                    }
                    q => {
                        return Err(Error::Msg(format!(
                            "unknown nfs4 option {q} (persist=1, pnfs=off, sec=krb5|krb5i|krb5p, \
                             tls=CA.pem, tlscert=PEM, tlskey=PEM)"
                        )))
                    }
                }
            }
            let tls_identity = match (cert, key) {
                (Some(c), Some(k)) if tls.is_some() => Some((c, k)),
                (None, None) => None,
                _ => {
                    return Err(Error::Msg(
                        "tlscert and tlskey go together, with tls=CA.pem".into(),
                    ))
                }
            };
            if minor == 0 && (persist || query.split('&').any(|q| q == "pnfs=on" || q == "pnfs=1"))
            {
                return Err(Error::Msg(
                    "nfs4.0:// has no sessions and no pNFS: persist=1 and pnfs=on are NFSv4.1's"
                        .into(),
                ));
            }
            Ok(Target::Nfs4 {
                host,
                port,
                path,
                minor,
                persist,
                pnfs: pnfs && minor > 0,
                sec,
                tls,
                tls_identity,
            })
        } else if let Some(rest) = s.strip_prefix("nfs3://") {
            let (host, port, path, query) = host_port_path(rest, 2049)?;
            let (mut mountport, mut nlmport) = (None, None);
            for kv in query.split('&').filter(|k| !k.is_empty()) {
                let (slot, v) = match kv.split_once('=') {
                    Some(("mountport", v)) => (&mut mountport, v),
                    Some(("nlmport", v)) => (&mut nlmport, v),
                    _ => {
                        return Err(Error::Msg(format!(
                            "unknown nfs3 option {kv} (mountport=N, nlmport=N)"
                        )))
                    }
                };
                *slot = Some(
                    v.parse()
                        .map_err(|_| Error::Msg(format!("bad port in {kv}")))?,
                );
            }
            Ok(Target::Nfs3 {
                host,
                port,
                path,
                mountport,
                nlmport,
            })
        } else if let Some(rest) = s.strip_prefix("dir:") {
            if rest.is_empty() {
                return Err(Error::Msg("dir: needs a path".into()));
            }
            Ok(Target::Dir(PathBuf::from(rest)))
        } else {
            Err(Error::Msg(format!(
                "unknown target {s}: use nfs4://HOST:PORT/PATH[?persist=1&pnfs=off&sec=krb5p], nfs4.0://HOST:PORT/PATH, nfs3://HOST:PORT/PATH[?mountport=N&nlmport=M] or dir:/PATH"
            )))
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Nfs4 {
                host,
                port,
                path,
                minor,
                persist,
                pnfs,
                sec,
                tls,
                tls_identity,
            } => {
                let scheme = if *minor == 0 { "nfs4.0" } else { "nfs4" };
                write!(f, "{scheme}://{host}:{port}{path}")?;
                let mut q = Vec::new();
                if *persist {
                    q.push("persist=1");
                }
                if !*pnfs && *minor > 0 {
                    q.push("pnfs=off");
                }
                match sec {
                    None => {}
                    Some(rpc::gss::GssService::None) => q.push("sec=krb5"),
                    Some(rpc::gss::GssService::Integrity) => q.push("sec=krb5i"),
                    Some(rpc::gss::GssService::Privacy) => q.push("sec=krb5p"),
                }
                let tls = tls.as_ref().map(|t| format!("tls={}", t.display()));
                if let Some(t) = &tls {
                    q.push(t);
                }
                let id = tls_identity
                    .as_ref()
                    .map(|(c, k)| format!("tlscert={}&tlskey={}", c.display(), k.display()));
                if let Some(i) = &id {
                    q.push(i);
                }
                if !q.is_empty() {
                    write!(f, "?{}", q.join("&"))?;
                }
                Ok(())
            }
            Target::Nfs3 {
                host,
                port,
                path,
                mountport,
                nlmport,
            } => {
                write!(f, "nfs3://{host}:{port}{path}")?;
                let mut sep = '?';
                for (k, v) in [("mountport", mountport), ("nlmport", nlmport)] {
                    if let Some(v) = v {
                        write!(f, "{sep}{k}={v}")?;
                        sep = '&';
                    }
                }
                Ok(())
            }
            Target::Dir(p) => write!(f, "dir:{}", p.display()),
        }
    }
}

impl Target {
    /// The server's address (network targets).
    pub async fn addr(&self) -> Result<Option<SocketAddr>> {
        let (host, port) = match self {
            Target::Nfs4 { host, port, .. } | Target::Nfs3 { host, port, .. } => (host, *port),
            Target::Dir(_) => return Ok(None),
        };
        let mut it = tokio::net::lookup_host((host.as_str(), port)).await?;
        it.next()
            .map(Some)
            .ok_or_else(|| Error::Msg(format!("{host} does not resolve")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn parses_targets() {
        let t: Target = "nfs4://127.0.0.1:12049/export/x".parse().unwrap();
        assert_eq!(
            t,
            Target::Nfs4 {
                host: "127.0.0.1".into(),
                port: 12049,
                path: "/export/x".into(),
                minor: 1,
                persist: false,
                pnfs: true,
                sec: None,
                tls: None,
                tls_identity: None,
            }
        );
        assert_eq!(t.to_string(), "nfs4://127.0.0.1:12049/export/x");
        let t: Target = "nfs4://h:1/?persist=1".parse().unwrap();
        assert!(matches!(t, Target::Nfs4 { persist: true, .. }));
        assert_eq!(t.to_string(), "nfs4://h:1/?persist=1");
        assert!("nfs4://h:1/?persist=2".parse::<Target>().is_err());
        let t: Target = "nfs4://h:1/?pnfs=off".parse().unwrap();
        assert!(matches!(
            t,
            Target::Nfs4 {
                pnfs: false,
                sec: None,
                persist: false,
                ..
            }
        ));
        assert_eq!(t.to_string(), "nfs4://h:1/?pnfs=off");
        let u = "nfs4://h:1/?persist=1&pnfs=off";
        let t: Target = u.parse().unwrap();
        assert!(matches!(
            t,
            Target::Nfs4 {
                pnfs: false,
                sec: None,
                persist: true,
                ..
            }
        ));
        assert_eq!(t.to_string(), u);
        assert!("nfs4://h:1/?pnfs=maybe".parse::<Target>().is_err());
        let k: Target = "nfs4://h:1/x?sec=krb5p".parse().unwrap();
        assert!(matches!(
            k,
            Target::Nfs4 {
                sec: Some(rpc::gss::GssService::Privacy),
                ..
            }
        ));
        assert_eq!(k.to_string(), "nfs4://h:1/x?sec=krb5p");
        assert!("nfs4://h:1/?sec=krb6".parse::<Target>().is_err());
        let t: Target = "nfs4://localhost:1/x?tls=/etc/ca.pem".parse().unwrap();
        assert!(matches!(&t, Target::Nfs4 { tls: Some(p), .. } if p == Path::new("/etc/ca.pem")));
        assert_eq!(t.to_string(), "nfs4://localhost:1/x?tls=/etc/ca.pem");
        assert!("nfs4://h:1/?tls=".parse::<Target>().is_err());
        let m = "nfs4://localhost:1/?tls=/ca.pem&tlscert=/c.pem&tlskey=/c.key";
        let t: Target = m.parse().unwrap();
        assert_eq!(t.to_string(), m);
        assert!("nfs4://h:1/?tls=/ca.pem&tlscert=/c.pem"
            .parse::<Target>()
            .is_err());
        assert!("nfs4://h:1/?tlscert=/c.pem&tlskey=/k"
            .parse::<Target>()
            .is_err());
        let t: Target = "nfs4.0://h:1/x?sec=krb5".parse().unwrap();
        assert!(matches!(
            t,
            Target::Nfs4 {
                minor: 0,
                pnfs: false,
                persist: false,
                sec: Some(rpc::gss::GssService::None),
                ..
            }
        ));
        assert_eq!(t.to_string(), "nfs4.0://h:1/x?sec=krb5");
        assert!("nfs4.0://h:1/?persist=1".parse::<Target>().is_err());
        assert!("nfs4.0://h:1/?pnfs=on".parse::<Target>().is_err());
        let t: Target = "nfs4://localhost".parse().unwrap();
        assert_eq!(t.to_string(), "nfs4://localhost:2049/");
        let t: Target = "nfs3://h:2049/e?mountport=20048".parse().unwrap();
        assert!(matches!(
            t,
            Target::Nfs3 {
                mountport: Some(20048),
                nlmport: None,
                ..
            }
        ));
        let u = "nfs3://h:2049/e?mountport=20048&nlmport=4045";
        let t: Target = u.parse().unwrap();
        assert!(matches!(
            t,
            Target::Nfs3 {
                mountport: Some(20048),
                nlmport: Some(4045),
                ..
            }
        ));
        assert_eq!(t.to_string(), u);
        assert!("nfs3://h/e?mountport=x".parse::<Target>().is_err());
        assert!("nfs3://h/e?port=1".parse::<Target>().is_err());
        let t: Target = "nfs4://[::1]:2050/".parse().unwrap();
        assert!(matches!(t, Target::Nfs4 { port: 2050, .. }));
        let t: Target = "dir:/mnt/nfs".parse().unwrap();
        assert_eq!(t, Target::Dir("/mnt/nfs".into()));
        assert!("http://x".parse::<Target>().is_err());
        assert!("nfs4://h:notaport/".parse::<Target>().is_err());
    }
}
