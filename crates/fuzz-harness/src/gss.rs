//! `gss_call`: RPCSEC_GSS credentials, verifiers and sealed arguments
//! through the server's gate (`rpc::gss::Gate`), as a connection hands
//! them over, with the toy mechanism (no KDC; deterministic checksums).
//!
//! The gate holds one established context for alice. The first byte
//! chooses what the rest is:
//!   0: a credential body, a verifier body and arguments, each as sent
//!      (length-prefixed by one byte each), for a procedure;
//!   1: a well-formed credential under alice's handle with the fuzzed
//!      sequence number, service and procedure, and a verifier that is
//!      the header's real checksum, so that the window and the
//!      integrity and privacy unwrapping take the fuzzed arguments;
//!   2: a context creation token (INIT and CONTINUE_INIT).
//! Findings: a panic; a call let through whose verifier is not the
//! header's checksum; one sequence number let through twice.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rpc::gss::toy::{fnv, key_of, ToyMech};
use rpc::gss::wire::{GssCred, GssProc, GssService, InitRes};
use rpc::gss::{Gate, Ids, Verdict};
use rpc::{OpaqueAuth, Reply, RPCSEC_GSS};
use xdr::{Decoder, Encoder, Pack, Unpack};

const ALICE: &str = "alice@TEST";

fn gate() -> (Gate, Bytes, Instant) {
    let g = Gate::new(
        Arc::new(ToyMech {
            life: Some(Duration::from_secs(3600)),
        }),
        8,
        Arc::new(|p: &str| {
            (p == ALICE).then(|| Ids {
                uid: 1,
                gid: 1,
                groups: vec![],
            })
        }),
    );
    let now = Instant::now();
    let cred = GssCred {
        proc_: GssProc::Init,
        seq_num: 0,
        service: GssService::None,
        handle: Bytes::new(),
    };
    let (reply, _, _) = g.init(&cred, ALICE.as_bytes(), now);
    let Reply::Success(body) = reply else {
        panic!("the toy context was refused")
    };
    let res = InitRes::unpack(&mut Decoder::new(Bytes::from(body.concat()))).expect("init res");
    (g, res.handle, now)
}

fn header(cred: &OpaqueAuth, proc_: u32) -> Vec<u8> {
    let mut e = Encoder::new();
    e.u32(7);
    e.u32(rpc::CALL);
    e.u32(rpc::RPC_VERSION);
    e.u32(100003);
    e.u32(4);
    e.u32(proc_);
    cred.pack(&mut e);
    e.to_bytes().to_vec()
}

/// Takes a one-byte length and that many bytes (fewer at the end).
fn piece<'a>(data: &mut &'a [u8]) -> &'a [u8] {
    let Some((&n, rest)) = data.split_first() else {
        return &[];
    };
    let n = usize::from(n).min(rest.len());
    let (p, rest) = rest.split_at(n);
    *data = rest;
    p
}

pub fn gss_call(data: &[u8]) {
    let Some((&mode, mut rest)) = data.split_first() else {
        return;
    };
    let (g, handle, now) = gate();
    let key = key_of(ALICE);
    match mode % 3 {
        0 => {
            let cred = Bytes::copy_from_slice(piece(&mut rest));
            let verf = OpaqueAuth {
                flavor: RPCSEC_GSS,
                body: Bytes::copy_from_slice(piece(&mut rest)),
            };
            let proc_ = u32::from(rest.first().copied().unwrap_or(0) & 3);
            let c = OpaqueAuth {
                flavor: RPCSEC_GSS,
                body: cred.clone(),
            };
            let h = header(&c, proc_);
            let real = fnv(key, &h).to_be_bytes();
            let v = g.check(
                &h,
                cred,
                &verf,
                proc_,
                Decoder::new(Bytes::copy_from_slice(rest)),
                now,
            );
            if let Verdict::Call { .. } = v {
                assert_eq!(
                    &verf.body[..],
                    &real[..],
                    "a call let through with a wrong checksum"
                );
            }
        }
        1 => {
            let mut seen = HashSet::new();
            // Several calls, each: seq (4 bytes), service and proc (1), args.
            while rest.len() >= 5 {
                let seq = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
                let sp = rest[4];
                rest = &rest[5..];
                let args = piece(&mut rest);
                let service = match sp & 3 {
                    0 | 1 => GssService::None,
                    2 => GssService::Integrity,
                    _ => GssService::Privacy,
                };
                let proc_ = match sp >> 2 & 3 {
                    0 | 1 => GssProc::Data,
                    2 => GssProc::Destroy,
                    _ => GssProc::ContinueInit,
                };
                let cred = GssCred {
                    proc_,
                    seq_num: seq,
                    service,
                    handle: handle.clone(),
                }
                .opaque();
                let h = header(&cred, u32::from(sp >> 4 & 1));
                let verf = OpaqueAuth {
                    flavor: RPCSEC_GSS,
                    body: Bytes::copy_from_slice(&fnv(key, &h).to_be_bytes()),
                };
                let v = g.check(
                    &h,
                    cred.body,
                    &verf,
                    u32::from(sp >> 4 & 1),
                    Decoder::new(Bytes::copy_from_slice(args)),
                    now,
                );
                if let Verdict::Call { seal, .. } = v {
                    assert!(seen.insert(seq), "sequence number {seq} let through twice");
                    // The reply seals whatever the body.
                    let _ = seal.seal(Some(vec![Bytes::copy_from_slice(args)]));
                }
            }
        }
        _ => {
            let proc_ = if rest.first().is_some_and(|b| b & 1 == 1) {
                GssProc::ContinueInit
            } else {
                GssProc::Init
            };
            let handle = if proc_ == GssProc::ContinueInit {
                handle
            } else {
                Bytes::new()
            };
            let cred = GssCred {
                proc_,
                seq_num: 0,
                service: GssService::None,
                handle,
            };
            let _ = g.init(&cred, rest, now);
        }
    }
    assert!(
        g.contexts().len() <= 8,
        "the context table outgrew its bound"
    );
}
