//! Security every protocol shares: RPCSEC_GSS with Kerberos V5
//! (`kerberos.rs`: the server's key table and principals mapped to local
//! users). The flavors an export accepts are in `exports::export`.

pub mod kerberos;
