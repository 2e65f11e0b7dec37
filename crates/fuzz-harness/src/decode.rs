//! `compound_decode`: bytes as COMPOUND arguments, read as the server
//! reads them (header, count, then one operation at a time), and as
//! COMPOUND and CB_COMPOUND results, read as the client and the
//! server's callback path read them.
//!
//! Whatever decodes must encode back to exactly the bytes it was decoded
//! from (the decoder accepts only canonical XDR) and decode again to the
//! same value; attributes inside an operation must survive
//! [`Attrs::decode`] and [`Attrs::encode`].

use bytes::Bytes;
use proto::nfs4::*;
use xdr::{Decoder, Pack, Unpack};

/// Most operations decoded from one input (the server stops far earlier,
/// at its `max_ops`, but the decoder must hold whatever the count says).
const MAX_OPS: usize = 4096;

pub fn compound_decode(data: &[u8]) {
    let bytes = Bytes::copy_from_slice(data);
    args_as_the_server_reads_them(&bytes);
    results::<NfsResOp4, Compound4Res>(&bytes, |r| &r.resarray);
    results::<NfsCbResOp4, CbCompound4Res>(&bytes, |r| &r.resarray);
    // CB_COMPOUND arguments, as a client reads them.
    if let Ok(v) = xdr::from_bytes::<CbCompound4Args>(bytes) {
        canonical(&v, data);
    }
}

fn args_as_the_server_reads_them(bytes: &Bytes) {
    let mut d = Decoder::new(bytes.clone());
    let Ok(head) = Compound4ArgsHeader::unpack(&mut d) else {
        return;
    };
    let Ok(n) = d.count(u32::MAX as usize, 4) else {
        return;
    };
    let mut ops = Vec::new();
    for _ in 0..n.min(MAX_OPS) {
        let before = d.rest().clone();
        let Ok(op) = NfsArgOp4::unpack(&mut d) else {
            break;
        };
        canonical(&op, &before[..before.len() - d.remaining()]);
        attrs_of(&op);
        ops.push(op);
    }
    // The whole message decoded at once agrees with the server's reading.
    if let Ok(whole) = xdr::from_bytes::<Compound4Args>(bytes.clone()) {
        assert_eq!(
            (&whole.tag, whole.minorversion),
            (&head.tag, head.minorversion)
        );
        assert_eq!(whole.argarray, ops);
        canonical(&whole, bytes);
    }
}

/// A reply decoded whole, and operation by operation after its header.
fn results<Op, Res>(bytes: &Bytes, ops_of: fn(&Res) -> &Vec<Op>)
where
    Op: Pack + Unpack + PartialEq + std::fmt::Debug,
    Res: Pack + Unpack + PartialEq + std::fmt::Debug,
{
    let mut d = Decoder::new(bytes.clone());
    // status, tag, count
    if d.u32().is_err() || Bytes::unpack(&mut d).is_err() || d.u32().is_err() {
        return;
    }
    let mut ops = Vec::new();
    while d.remaining() > 0 && ops.len() < MAX_OPS {
        let before = d.rest().clone();
        let Ok(op) = Op::unpack(&mut d) else { break };
        canonical(&op, &before[..before.len() - d.remaining()]);
        ops.push(op);
    }
    if let Ok(whole) = xdr::from_bytes::<Res>(bytes.clone()) {
        canonical(&whole, bytes);
        assert_eq!(ops_of(&whole), &ops);
    }
}

/// `v` was decoded from `wire`: it encodes to `wire` and decodes to itself.
fn canonical<T: Pack + Unpack + PartialEq + std::fmt::Debug>(v: &T, wire: &[u8]) {
    let enc = xdr::to_bytes(v);
    assert_eq!(&enc[..], wire, "{v:?} re-encodes differently");
    let again: T = xdr::from_bytes(enc).expect("re-encoding decodes");
    assert_eq!(&again, v);
}

/// The attributes an operation carries: those that decode re-encode to
/// the same values.
fn attrs_of(op: &NfsArgOp4) {
    let f = match op {
        NfsArgOp4::Create(a) => &a.createattrs,
        NfsArgOp4::SetAttr(a) => &a.obj_attributes,
        NfsArgOp4::Verify(a) => &a.obj_attributes,
        NfsArgOp4::NVerify(a) => &a.obj_attributes,
        NfsArgOp4::Open(Open4Args {
            openhow: OpenFlag4::Create(how),
            ..
        }) => match how {
            CreateHow4::Unchecked(f) | CreateHow4::Guarded(f) => f,
            CreateHow4::Exclusive41(c) => &c.attrs,
            CreateHow4::Exclusive(_) => return,
        },
        _ => return,
    };
    let Ok(a) = Attrs::decode(f) else { return };
    let again = Attrs::decode(&a.encode()).expect("encoded attributes decode");
    assert_eq!(again, a);
    assert_eq!(a.encode().attrmask, a.mask());
}
