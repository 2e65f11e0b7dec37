//! Security every protocol shares: RPCSEC_GSS with Kerberos V5
//! (`kerberos.rs`: the server's key table and principals mapped to local
//! users) and RPC-over-TLS (`tls.rs`: certificates and keys). The flavors
//! and transport security an export accepts are in `exports::export`.

pub mod kerberos;
pub mod tls;
