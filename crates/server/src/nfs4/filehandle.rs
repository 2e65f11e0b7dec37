//! Filehandles (RFC 8881 §4): persistent, bound to their export and
//! authenticated so a client cannot forge one that reaches outside it.
//!
//! Layout (at most NFS4_FHSIZE = 128 bytes):
//! `[version=1][kind][export id: u16 BE][backend handle][MAC: 16 bytes]`,
//! where the MAC is a keyed BLAKE3 hash of everything before it under a
//! secret kept in the server's state directory, so handles survive restarts
//! of the same server and nobody without the key can mint one.

use std::io::{Read, Write};
use std::path::Path;

use bytes::{BufMut, Bytes, BytesMut};

/// Largest NFSv4 filehandle (RFC 8881 §4.2.1).
pub const NFS4_FHSIZE: usize = 128;
const VERSION: u8 = 1;
const MAC_LEN: usize = 16;
const HEADER: usize = 4;

/// What a filehandle names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FhTarget {
    /// A node of the pseudo filesystem (RFC 8881 §7.3), by its index.
    Pseudo(u16),
    /// An object in an export, by the backend's handle.
    Object { export: u16, handle: vfs::Handle },
}

/// Why a filehandle was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FhError {
    /// Not one of ours at all (NFS4ERR_BADHANDLE).
    Bad,
}

/// Mints and checks filehandles with the server's secret.
pub struct FhKey {
    key: [u8; 32],
}

impl FhKey {
    pub fn from_key(key: [u8; 32]) -> Self {
        FhKey { key }
    }

    /// Loads the key from `state_dir/fh.key`, creating it (mode 0600) with
    /// fresh randomness the first time.
    pub fn load_or_create(state_dir: &Path) -> std::io::Result<Self> {
        let path = state_dir.join("fh.key");
        let mut key = [0u8; 32];
        match std::fs::File::open(&path) {
            Ok(mut f) => {
                f.read_exact(&mut key)?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(state_dir)?;
                getrandom::getrandom(&mut key).map_err(|e| std::io::Error::other(e.to_string()))?;
                let tmp = state_dir.join("fh.key.tmp");
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .mode_0600()
                    .open(&tmp)?;
                f.write_all(&key)?;
                f.sync_all()?;
                std::fs::rename(&tmp, &path)?;
            }
            Err(e) => return Err(e),
        }
        Ok(FhKey { key })
    }

    fn mac(&self, data: &[u8]) -> [u8; MAC_LEN] {
        let h = blake3::keyed_hash(&self.key, data);
        let mut out = [0u8; MAC_LEN];
        out.copy_from_slice(&h.as_bytes()[..MAC_LEN]);
        out
    }

    pub fn encode(&self, t: &FhTarget) -> Bytes {
        let mut b = BytesMut::with_capacity(NFS4_FHSIZE);
        b.put_u8(VERSION);
        match t {
            FhTarget::Pseudo(idx) => {
                b.put_u8(0);
                b.put_u16(*idx);
            }
            FhTarget::Object { export, handle } => {
                b.put_u8(1);
                b.put_u16(*export);
                b.put_slice(&handle.0);
            }
        }
        let mac = self.mac(&b);
        b.put_slice(&mac);
        b.freeze()
    }

    pub fn decode(&self, fh: &Bytes) -> Result<FhTarget, FhError> {
        if fh.len() < HEADER + MAC_LEN || fh.len() > NFS4_FHSIZE || fh[0] != VERSION {
            return Err(FhError::Bad);
        }
        let body = fh.len() - MAC_LEN;
        let mac = self.mac(&fh[..body]);
        // Constant-time comparison: the MAC is the only secret-derived part.
        let diff = mac
            .iter()
            .zip(&fh[body..])
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if diff != 0 {
            return Err(FhError::Bad);
        }
        let id = u16::from_be_bytes([fh[2], fh[3]]);
        match fh[1] {
            0 if body == HEADER => Ok(FhTarget::Pseudo(id)),
            1 => Ok(FhTarget::Object {
                export: id,
                handle: vfs::Handle(fh.slice(HEADER..body)),
            }),
            _ => Err(FhError::Bad),
        }
    }
}

trait Mode0600 {
    fn mode_0600(&mut self) -> &mut Self;
}

impl Mode0600 for std::fs::OpenOptions {
    fn mode_0600(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.mode(0o600)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_forgery() {
        let k = FhKey::from_key([7; 32]);
        let t = FhTarget::Object {
            export: 3,
            handle: vfs::Handle(Bytes::from_static(b"\x00\x00\x00\x01abcdefgh")),
        };
        let fh = k.encode(&t);
        assert!(fh.len() <= NFS4_FHSIZE);
        assert_eq!(k.decode(&fh), Ok(t));
        // flip any byte: refused
        for i in 0..fh.len() {
            let mut v = fh.to_vec();
            v[i] ^= 1;
            assert_eq!(k.decode(&Bytes::from(v)), Err(FhError::Bad), "byte {i}");
        }
        // another server's key: refused
        assert_eq!(FhKey::from_key([8; 32]).decode(&fh), Err(FhError::Bad));
        assert_eq!(k.decode(&Bytes::from_static(b"abc")), Err(FhError::Bad));
        let p = k.encode(&FhTarget::Pseudo(0));
        assert_eq!(k.decode(&p), Ok(FhTarget::Pseudo(0)));
    }

    #[test]
    fn key_persists() {
        let dir = tempfile::tempdir().unwrap();
        let a = FhKey::load_or_create(dir.path()).unwrap();
        let b = FhKey::load_or_create(dir.path()).unwrap();
        assert_eq!(a.key, b.key);
        let fh = a.encode(&FhTarget::Pseudo(1));
        assert!(b.decode(&fh).is_ok());
    }
}
