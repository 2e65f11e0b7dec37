//! The Kerberos V5 mechanism (RFC 4121) of the system's GSS-API library
//! (MIT Kerberos), through the libgssapi binding.
//!
//! The server's key comes from a key table (`nfs/HOST@REALM`); a client
//! (the project's own, in tests and benchmarks) takes its ticket from a
//! credential cache.

use std::ffi::CString;
use std::ptr;
use std::time::Duration;

use libgssapi::context::{ClientCtx, CtxFlags, SecurityContext, ServerCtx};
use libgssapi::credential::{Cred, CredUsage};
use libgssapi::name::Name;
use libgssapi::oid::{GSS_MECH_KRB5, GSS_NT_HOSTBASED_SERVICE, GSS_NT_KRB5_PRINCIPAL};

use super::mech::{MechContext, MechError, Mechanism, Step};

fn err(e: libgssapi::error::Error) -> MechError {
    MechError {
        major: e.major.bits(),
        minor: e.minor,
        what: e.to_string(),
    }
}

/// Credentials from a credential store (gss_acquire_cred_from, MIT's
/// extension): `keytab` for an acceptor, `ccache` for an initiator.
fn cred_from(store: &[(&str, &str)], usage: CredUsage) -> Result<Cred, MechError> {
    let c = |s: &str| CString::new(s).map_err(|_| MechError::new(0, "NUL in a path"));
    let strings: Vec<(CString, CString)> = store
        .iter()
        .map(|(k, v)| Ok((c(k)?, c(v)?)))
        .collect::<Result<_, MechError>>()?;
    let mut elements: Vec<libgssapi_sys::gss_key_value_element_desc> = strings
        .iter()
        .map(|(k, v)| libgssapi_sys::gss_key_value_element_desc {
            key: k.as_ptr(),
            value: v.as_ptr(),
        })
        .collect();
    let set = libgssapi_sys::gss_key_value_set_desc {
        count: elements.len() as u32,
        elements: elements.as_mut_ptr(),
    };
    let mut minor = 0u32;
    let mut cred: libgssapi_sys::gss_cred_id_t = ptr::null_mut();
    let usage = match usage {
        CredUsage::Accept => libgssapi_sys::GSS_C_ACCEPT,
        CredUsage::Initiate => libgssapi_sys::GSS_C_INITIATE,
        CredUsage::Both => libgssapi_sys::GSS_C_BOTH,
    };
    // SAFETY: every pointer passed lives until the call returns (the
    // strings, the element array, the set); the library
    // writes only `minor` and `cred`, whose ownership we take below.
    let major = unsafe {
        libgssapi_sys::gss_acquire_cred_from(
            &mut minor,
            ptr::null_mut(),
            libgssapi_sys::_GSS_C_INDEFINITE,
            ptr::null_mut(),
            usage as libgssapi_sys::gss_cred_usage_t,
            &set,
            &mut cred,
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    if major != 0 {
        let e = libgssapi::error::Error {
            major: libgssapi::error::MajorFlags::from_bits_retain(major),
            minor,
        };
        return Err(err(e));
    }
    // SAFETY: a credential the library just made, owned by the Cred now.
    Ok(unsafe { Cred::from_c(cred) })
}

/// The acceptor: the service's keys from a key table.
pub struct Krb5 {
    cred: Cred,
}

impl Krb5 {
    /// The acceptor with the keys in `keytab` (any principal in it:
    /// `nfs/HOST@REALM` for NFS). Fails if the table cannot be read or
    /// holds no key.
    pub fn acceptor_from_keytab(keytab: &str) -> Result<Krb5, MechError> {
        if !std::path::Path::new(keytab).exists() {
            return Err(MechError::new(0, format!("no key table at {keytab}")));
        }
        let cred = cred_from(&[("keytab", keytab)], CredUsage::Accept)?;
        Ok(Krb5 { cred })
    }
}

impl Mechanism for Krb5 {
    fn acceptor(&self) -> Result<Box<dyn MechContext>, MechError> {
        Ok(Box::new(Ctx(ServerCtx::new(Some(self.cred.clone())))))
    }

    fn local_name(&self, principal: &str) -> Option<String> {
        let n = Name::new(principal.as_bytes(), Some(GSS_NT_KRB5_PRINCIPAL)).ok()?;
        let local = n.local_name(Some(GSS_MECH_KRB5)).ok()?;
        String::from_utf8(local.to_vec()).ok()
    }
}

/// An initiator towards `service@host` (GSS_C_NT_HOSTBASED_SERVICE:
/// `nfs@server.example`), with the ticket in `ccache` (or the default
/// cache): the project's own client uses it.
pub fn initiator(target: &str, ccache: Option<&str>) -> Result<Box<dyn MechContext>, MechError> {
    let name = Name::new(target.as_bytes(), Some(GSS_NT_HOSTBASED_SERVICE)).map_err(err)?;
    let cred = match ccache {
        Some(c) => Some(cred_from(&[("ccache", c)], CredUsage::Initiate)?),
        None => None,
    };
    let flags =
        CtxFlags::GSS_C_MUTUAL_FLAG | CtxFlags::GSS_C_INTEG_FLAG | CtxFlags::GSS_C_CONF_FLAG;
    Ok(Box::new(Ctx(ClientCtx::new(
        cred,
        name,
        flags,
        Some(GSS_MECH_KRB5),
    ))))
}

/// One side of a context, as the common code below steps it.
trait Side: SecurityContext + Send {
    fn advance(
        &mut self,
        token: Option<&[u8]>,
    ) -> Result<Option<libgssapi::util::Buf>, libgssapi::error::Error>;
    /// The other side's name.
    fn peer_name(&self) -> Result<Name, libgssapi::error::Error>;
}

impl Side for ServerCtx {
    fn advance(
        &mut self,
        token: Option<&[u8]>,
    ) -> Result<Option<libgssapi::util::Buf>, libgssapi::error::Error> {
        self.step(token.unwrap_or(&[]), None)
    }
    fn peer_name(&self) -> Result<Name, libgssapi::error::Error> {
        self.source_name()
    }
}

impl Side for ClientCtx {
    fn advance(
        &mut self,
        token: Option<&[u8]>,
    ) -> Result<Option<libgssapi::util::Buf>, libgssapi::error::Error> {
        self.step(token, None)
    }
    fn peer_name(&self) -> Result<Name, libgssapi::error::Error> {
        self.target_name()
    }
}

/// A Kerberos context, acceptor or initiator.
struct Ctx<C: Side>(C);

impl<C: Side> MechContext for Ctx<C> {
    fn step(&mut self, token: Option<&[u8]>) -> Result<Step, MechError> {
        let out = self.0.advance(token).map_err(err)?.map(|b| b.to_vec());
        if self.0.is_complete() {
            Ok(Step::Done(out))
        } else {
            Ok(Step::More(out.unwrap_or_default()))
        }
    }
    fn peer(&self) -> Result<String, MechError> {
        Ok(self.0.peer_name().map_err(err)?.to_string())
    }
    fn lifetime(&self) -> Option<Duration> {
        self.0.lifetime().ok()
    }
    fn get_mic(&mut self, msg: &[u8]) -> Result<Vec<u8>, MechError> {
        self.0.get_mic(msg).map(|b| b.to_vec()).map_err(err)
    }
    fn verify_mic(&mut self, msg: &[u8], mic: &[u8]) -> Result<(), MechError> {
        self.0.verify_mic(msg, mic).map_err(err)
    }
    fn wrap(&mut self, msg: &[u8]) -> Result<Vec<u8>, MechError> {
        self.0.wrap(true, msg).map(|b| b.to_vec()).map_err(err)
    }
    fn unwrap(&mut self, token: &[u8]) -> Result<Vec<u8>, MechError> {
        self.0.unwrap(token).map(|b| b.to_vec()).map_err(err)
    }
}
