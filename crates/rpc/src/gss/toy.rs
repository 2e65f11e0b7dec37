//! A toy mechanism for tests and fuzzing, not secure: contexts need no
//! KDC and every step is deterministic, so the gate's logic can be
//! driven on a manual clock and by a fuzzer. A principal whose name
//! starts with "forged" is refused.

use std::time::Duration;

use super::mech::{MechContext, MechError, Mechanism, Step};
use super::wire::GSS_S_DEFECTIVE_TOKEN;

/// The key the toy shares for principal `p`.
pub fn key_of(p: &str) -> u64 {
    fnv(7, p.as_bytes())
}

/// A toy mechanism: the initiator's token is `principal`, the shared key
/// the principal's bytes; checksums are a keyed FNV-1a hash; "wrapping"
/// XORs with the key and appends the checksum. Not secure; deterministic.
pub struct Toy {
    principal: String,
    key: u64,
    /// A context whose lifetime is this.
    life: Option<Duration>,
}

/// The toy checksum: FNV-1a keyed with `key`.
pub fn fnv(key: u64, msg: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ key;
    for b in msg {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

impl MechContext for Toy {
    fn step(&mut self, token: Option<&[u8]>) -> Result<Step, MechError> {
        match token {
            // The initiator's first step: its principal.
            None => Ok(Step::More(self.principal.as_bytes().to_vec())),
            Some(t) if self.principal.is_empty() => {
                let p = std::str::from_utf8(t)
                    .map_err(|_| MechError::new(GSS_S_DEFECTIVE_TOKEN, "bad token"))?;
                if p.starts_with("forged") {
                    return Err(MechError::new(GSS_S_DEFECTIVE_TOKEN, "forged ticket"));
                }
                self.principal = p.to_string();
                self.key = key_of(p);
                Ok(Step::Done(Some(b"ok".to_vec())))
            }
            Some(b"ok") => Ok(Step::Done(None)),
            Some(_) => Err(MechError::new(GSS_S_DEFECTIVE_TOKEN, "unexpected token")),
        }
    }
    fn peer(&self) -> Result<String, MechError> {
        Ok(self.principal.clone())
    }
    fn lifetime(&self) -> Option<Duration> {
        self.life
    }
    fn get_mic(&mut self, msg: &[u8]) -> Result<Vec<u8>, MechError> {
        Ok(fnv(self.key, msg).to_be_bytes().to_vec())
    }
    fn verify_mic(&mut self, msg: &[u8], mic: &[u8]) -> Result<(), MechError> {
        if mic == fnv(self.key, msg).to_be_bytes() {
            Ok(())
        } else {
            Err(MechError::new(6 << 16, "bad checksum"))
        }
    }
    fn wrap(&mut self, msg: &[u8]) -> Result<Vec<u8>, MechError> {
        let k = self.key.to_be_bytes();
        let mut v: Vec<u8> = msg.iter().enumerate().map(|(i, b)| b ^ k[i % 8]).collect();
        v.extend_from_slice(&fnv(self.key, msg).to_be_bytes());
        Ok(v)
    }
    fn unwrap(&mut self, token: &[u8]) -> Result<Vec<u8>, MechError> {
        if token.len() < 8 {
            return Err(MechError::new(GSS_S_DEFECTIVE_TOKEN, "short"));
        }
        let (body, mic) = token.split_at(token.len() - 8);
        let k = self.key.to_be_bytes();
        let msg: Vec<u8> = body.iter().enumerate().map(|(i, b)| b ^ k[i % 8]).collect();
        self.verify_mic(&msg, mic)?;
        Ok(msg)
    }
}

pub struct ToyMech {
    /// The lifetime of the contexts it accepts (None: no expiry).
    pub life: Option<Duration>,
}

impl Mechanism for ToyMech {
    fn acceptor(&self) -> Result<Box<dyn MechContext>, MechError> {
        Ok(Box::new(Toy {
            principal: String::new(),
            key: 0,
            life: self.life,
        }))
    }
}

/// A client's side for principal `p`.
pub fn initiator(p: &str) -> Box<dyn MechContext> {
    Box::new(Toy {
        principal: p.into(),
        key: key_of(p),
        life: None,
    })
}
