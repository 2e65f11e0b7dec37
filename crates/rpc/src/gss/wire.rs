//! RPCSEC_GSS version 1 on the wire (RFC 2203 §5).

use bytes::Bytes;
use xdr::{Pack, Unpack};

/// RFC 2203 §5: RPCSEC_GSS_VERS_1.
pub const RPCSEC_GSS_VERS_1: u32 = 1;

/// RFC 2203 §5: sequence numbers at or above MAXSEQ end the context.
pub const MAXSEQ: u32 = 0x8000_0000;

/// RFC 2203 §4: auth_stat values for RPCSEC_GSS.
pub const RPCSEC_GSS_CREDPROBLEM: u32 = 13;
pub const RPCSEC_GSS_CTXPROBLEM: u32 = 14;

/// RFC 2203 §5: rpc_gss_proc_t.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pack, Unpack)]
#[repr(u32)]
pub enum GssProc {
    Data = 0,
    Init = 1,
    ContinueInit = 2,
    Destroy = 3,
}

/// RFC 2203 §5: rpc_gss_service_t (krb5, krb5i and krb5p with Kerberos).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Pack, Unpack)]
#[repr(u32)]
pub enum GssService {
    /// Authentication only: the header's checksum (krb5).
    None = 1,
    /// Arguments and results carry a checksum (krb5i).
    Integrity = 2,
    /// Arguments and results are encrypted (krb5p).
    Privacy = 3,
}

/// RFC 2203 §5: rpc_gss_cred_vers_1_t, after the version number.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct GssCred {
    pub proc_: GssProc,
    pub seq_num: u32,
    pub service: GssService,
    /// The server's handle of the context; empty for INIT.
    #[xdr(max = 32)]
    pub handle: Bytes,
}

impl GssCred {
    /// rpc_gss_cred_t: the version, then the version 1 credential.
    pub fn decode(body: Bytes) -> Result<GssCred, xdr::Error> {
        let mut d = xdr::Decoder::new(body);
        let vers = d.u32()?;
        if vers != RPCSEC_GSS_VERS_1 {
            return Err(xdr::Error::BadDiscriminant(vers, "rpc_gss_cred_t"));
        }
        GssCred::unpack(&mut d)
    }

    pub fn encode(&self) -> Bytes {
        let mut e = xdr::Encoder::with_capacity(32);
        e.u32(RPCSEC_GSS_VERS_1);
        self.pack(&mut e);
        e.to_bytes()
    }

    /// The call's credential: flavor RPCSEC_GSS with this body.
    pub fn opaque(&self) -> crate::msg::OpaqueAuth {
        crate::msg::OpaqueAuth {
            flavor: crate::msg::RPCSEC_GSS,
            body: self.encode(),
        }
    }
}

/// RFC 2203 §5.2.3.1: rpc_gss_init_res.
#[derive(Debug, Clone, PartialEq, Eq, Pack, Unpack)]
pub struct InitRes {
    #[xdr(max = 32)]
    pub handle: Bytes,
    pub gss_major: u32,
    pub gss_minor: u32,
    pub seq_window: u32,
    #[xdr(max = 65536)]
    pub gss_token: Bytes,
}

/// The largest GSS token taken in an INIT or CONTINUE_INIT call: a
/// Kerberos AP-REQ carrying a ticket with a large PAC fits well inside.
pub const MAX_INIT_TOKEN: usize = 64 << 10;

/// GSS-API major status codes (RFC 2744 §3.9.1) the server reports.
pub const GSS_S_COMPLETE: u32 = 0;
pub const GSS_S_CONTINUE_NEEDED: u32 = 1;
pub const GSS_S_DEFECTIVE_TOKEN: u32 = 9 << 16;
pub const GSS_S_FAILURE: u32 = 13 << 16;

/// The XDR encoding of one unsigned integer, as the verifiers of
/// RFC 2203 §5.2.3.1 (seq_window) and §5.3.3.2 (seq_num) checksum it.
pub fn be32(v: u32) -> [u8; 4] {
    v.to_be_bytes()
}
