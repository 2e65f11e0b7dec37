//! Kerberos for RPCSEC_GSS (RFC 2203; RFC 7530 §3.2.1.1 and RFC 8881
//! §2.2.1.1.1.2.1 name Kerberos V5 as the mechanism every server offers):
//! the acceptor's key table and how principals map to local users.
//!
//! A principal maps, in order: through the configuration's map
//! (`principal = "user"`), through the Kerberos library's own rules
//! (krb5.conf's auth_to_local: `user@DEFAULT_REALM` is `user`), then to
//! the local user of that name through the system's name service
//! (getpwnam, getgrouplist). A principal that maps to no local user acts
//! as the export's anonymous identity, as the Linux server's does.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use rpc::gss::mech::Mechanism;
use rpc::gss::{Gate, Ids};

/// `[kerberos]` in the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KerberosConfig {
    /// The key table with the service's keys (`nfs/HOST@REALM`).
    pub keytab: PathBuf,
    /// Principals mapped to local user names, before the library's rules.
    pub principals: Vec<(String, String)>,
    /// Contexts held at once (each client user has one or more).
    pub max_contexts: usize,
}

impl KerberosConfig {
    pub fn new(keytab: impl Into<PathBuf>) -> Self {
        KerberosConfig {
            keytab: keytab.into(),
            principals: Vec::new(),
            max_contexts: rpc::gss::DEFAULT_MAX_CONTEXTS,
        }
    }
}

/// The gate for calls under RPCSEC_GSS: fails if the key table cannot
/// be read or holds no key (the server then does not start).
pub fn gate(cfg: &KerberosConfig) -> Result<Arc<Gate>, String> {
    let mech = acceptor(cfg)?;
    let map: HashMap<String, String> = cfg.principals.iter().cloned().collect();
    let rules = mech.clone();
    let names = move |principal: &str| -> Option<Ids> {
        let user = map
            .get(principal)
            .cloned()
            .or_else(|| rules.local_name(principal))?;
        let (uid, gid, groups) = crate::ids::user_ids(&user)?;
        Some(Ids { uid, gid, groups })
    };
    Ok(Arc::new(Gate::new(mech, cfg.max_contexts, Arc::new(names))))
}

/// The Kerberos acceptor with the key table's keys.
#[cfg(feature = "kerberos")]
fn acceptor(cfg: &KerberosConfig) -> Result<Arc<dyn Mechanism>, String> {
    let keytab = cfg.keytab.to_string_lossy().into_owned();
    let mech = rpc::gss::krb5::Krb5::acceptor_from_keytab(&keytab)
        .map_err(|e| format!("kerberos: key table {keytab}: {e}"))?;
    Ok(Arc::new(mech))
}

#[cfg(not(feature = "kerberos"))]
fn acceptor(_: &KerberosConfig) -> Result<Arc<dyn Mechanism>, String> {
    Err(NOT_BUILT.to_string())
}

/// Why a [kerberos] section cannot be served by this build.
pub const NOT_BUILT: &str = "this Ferrite was built without Kerberos: install libkrb5-dev and \
     libclang-dev, then build with `cargo build --release -p ferrite --features kerberos`";
