//! The body of a call or reply under krb5i and krb5p (RFC 2203 §5.3.2.2,
//! §5.3.2.3): rpc_gss_data_t (the sequence number, then the arguments or
//! results) checksummed or wrapped, sealed by either side and opened by
//! the other, the same way for arguments and results.

use bytes::Bytes;
use xdr::Decoder;

use super::mech::{MechContext, MechError};
use super::wire::GssService;

/// rpc_gss_data_t: the sequence number, then the procedure's arguments
/// or results.
fn with_seq(seq: u32, body: &[Bytes]) -> Vec<u8> {
    let n: usize = body.iter().map(Bytes::len).sum();
    let mut v = Vec::with_capacity(4 + n);
    v.extend_from_slice(&seq.to_be_bytes());
    for b in body {
        v.extend_from_slice(b);
    }
    v
}

/// `body` sealed for `service` under sequence number `seq`: as it is
/// (krb5), rpc_gss_integ_data (krb5i) or rpc_gss_priv_data (krb5p).
pub fn seal(
    mech: &mut dyn MechContext,
    seq: u32,
    service: GssService,
    body: Vec<Bytes>,
) -> Result<Vec<Bytes>, MechError> {
    let mut e = xdr::Encoder::with_capacity(64);
    match service {
        GssService::None => return Ok(body),
        GssService::Integrity => {
            let data = Bytes::from(with_seq(seq, &body));
            let mic = mech.get_mic(&data)?;
            e.opaque_bytes(&data);
            e.opaque(&mic);
        }
        GssService::Privacy => {
            let sealed = Bytes::from(mech.wrap(&with_seq(seq, &body))?);
            e.opaque_bytes(&sealed);
        }
    }
    Ok(e.finish())
}

/// Why a sealed body did not open.
#[derive(Debug)]
pub enum Unopened {
    /// It does not decode.
    Xdr(xdr::Error),
    /// Its checksum does not verify, or it does not unwrap.
    Mech(MechError),
    /// It carries another sequence number than its header.
    Seq,
}

impl From<xdr::Error> for Unopened {
    fn from(e: xdr::Error) -> Self {
        Unopened::Xdr(e)
    }
}

/// The arguments or results inside a body sealed for `service` under
/// sequence number `seq`.
pub fn open(
    mech: &mut dyn MechContext,
    seq: u32,
    service: GssService,
    mut d: Decoder,
) -> Result<Decoder, Unopened> {
    let data = match service {
        GssService::None => return Ok(d),
        GssService::Integrity => {
            let n = d.remaining();
            let data = d.opaque(n)?;
            let mic = d.opaque(n)?;
            mech.verify_mic(&data, &mic).map_err(Unopened::Mech)?;
            data
        }
        GssService::Privacy => {
            let n = d.remaining();
            let sealed = d.opaque(n)?;
            Bytes::from(mech.unwrap(&sealed).map_err(Unopened::Mech)?)
        }
    };
    let mut inner = Decoder::new(data);
    if inner.u32()? != seq {
        return Err(Unopened::Seq);
    }
    Ok(inner)
}
