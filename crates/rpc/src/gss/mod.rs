//! RPCSEC_GSS (RFC 2203): Kerberos V5 authentication (krb5), integrity
//! (krb5i) and privacy (krb5p) of ONC RPC calls, through the system's
//! GSS-API library.
//!
//! Where things are: `wire.rs` the protocol's types, `window.rs` a
//! context's sequence window, `table.rs` the server's bounded table of
//! contexts, `gate.rs` what the server does with each call and reply,
//! `client.rs` the same for a caller, `mech.rs` the mechanism as the RPC
//! layer sees it, `toy.rs` a mechanism for tests and
//! fuzzing, `krb5.rs` the Kerberos mechanism (libgssapi; with the
//! `kerberos` feature, which needs libkrb5-dev and libclang-dev to
//! build).

mod body;
mod client;
mod gate;
#[cfg(feature = "kerberos")]
pub mod krb5;
pub mod mech;
mod table;
pub mod toy;
mod window;
pub mod wire;

use std::sync::Arc;

pub use client::ClientContext;
pub use gate::{Gate, NameMap, Seal, Verdict};
pub use table::{Contexts, DEFAULT_MAX_CONTEXTS, MAX_CONTEXT_LIFETIME};
pub use window::{Seen, Window, SEQ_WINDOW};
pub use wire::GssService;

/// The local identity a principal acts as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ids {
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
}

/// A context's client: its principal name and, if it maps to one, the
/// local identity.
#[derive(Debug, PartialEq, Eq)]
pub struct Principal {
    pub name: String,
    pub ids: Option<Ids>,
}

/// The identity of a call under RPCSEC_GSS: the context's principal and
/// the service the call used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GssAuth {
    pub principal: Arc<Principal>,
    pub service: GssService,
}

#[cfg(test)]
mod tests;
