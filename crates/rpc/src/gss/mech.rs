//! The GSS-API mechanism behind RPCSEC_GSS, as the RPC layer uses it: a
//! context accepted (or initiated) token by token, then checksums and
//! wrapping. The Kerberos V5 mechanism of the system's GSS-API library
//! is in `krb5.rs`; tests use a mechanism of their own.

use std::time::Duration;

/// A GSS-API failure: the major and minor status (RFC 2744 §3.9.1) and
/// what the library said of them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} (major {major:#x}, minor {minor})")]
pub struct MechError {
    pub major: u32,
    pub minor: u32,
    pub what: String,
}

impl MechError {
    pub fn new(major: u32, what: impl Into<String>) -> Self {
        MechError {
            major,
            minor: 0,
            what: what.into(),
        }
    }
}

/// One step of establishing a context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Established; the token, if any, goes to the peer.
    Done(Option<Vec<u8>>),
    /// The peer must answer this token.
    More(Vec<u8>),
}

/// One security context. Calls on one context never run concurrently
/// (RFC 2744 §1.1.1.3 leaves that unsafe): the caller holds a lock.
pub trait MechContext: Send {
    /// Takes the peer's token (none for an initiator's first step).
    fn step(&mut self, token: Option<&[u8]>) -> Result<Step, MechError>;
    /// The peer's principal (an acceptor's client, `user@REALM`).
    fn peer(&self) -> Result<String, MechError>;
    /// How long the context remains valid; None if it does not expire.
    fn lifetime(&self) -> Option<Duration>;
    /// GSS_GetMIC.
    fn get_mic(&mut self, msg: &[u8]) -> Result<Vec<u8>, MechError>;
    /// GSS_VerifyMIC.
    fn verify_mic(&mut self, msg: &[u8], mic: &[u8]) -> Result<(), MechError>;
    /// GSS_Wrap with confidentiality.
    fn wrap(&mut self, msg: &[u8]) -> Result<Vec<u8>, MechError>;
    /// GSS_Unwrap.
    fn unwrap(&mut self, token: &[u8]) -> Result<Vec<u8>, MechError>;
}

/// Makes contexts: the server's acceptor, whose credentials are the
/// service key; and, for clients, initiators towards a service.
pub trait Mechanism: Send + Sync {
    /// A new acceptor context, to be stepped with the client's tokens.
    /// This may read the key table: call it off the async threads.
    fn acceptor(&self) -> Result<Box<dyn MechContext>, MechError>;
    /// The local user a principal maps to by the mechanism's own rules
    /// (Kerberos: krb5.conf's auth_to_local), if any.
    fn local_name(&self, _principal: &str) -> Option<String> {
        None
    }
}
