//! Filehandles (RFC 8881 §4): persistent, bound to their export's root and
//! authenticated so a client cannot forge one that reaches outside it.
//!
//! Layout (at most NFS4_FHSIZE = 128 bytes):
//! * an object: `[version=2][kind=1][export id: u16 BE][root tag: 8 bytes]
//!   [backend handle][MAC: 16 bytes]`;
//! * a non-directory with the directory it was reached in:
//!   `[version=2][kind=2][export id][root tag][handle length: u8]
//!   [backend handle][parent's backend handle][MAC]`; the parent is a hint
//!   the backend uses to place an object the kernel no longer can
//!   ([`vfs::Vfs::note_parent`]), left out when it would not fit;
//! * a pseudo node: `[version=2][kind=0][node: u16 BE][MAC: 16 bytes]`.
//!
//! The MAC is a keyed BLAKE3 hash of everything before it under a secret
//! kept in the server's state directory, so handles survive restarts of
//! the same server and nobody without the key can mint one. The root tag
//! is a keyed hash of the export root's identity ([`vfs::Vfs::root_identity`]):
//! a handle made while the export was another directory (wider, before it
//! was narrowed) no longer matches and is stale.
//!
//! Handles that fail the MAC, or are malformed, are NFS4ERR_BADHANDLE
//! (RFC 8881 §15.1.2.1); ours that cannot be honoured any more (an export
//! gone or re-rooted, version 1 handles from before the root tag) are
//! NFS4ERR_STALE (§15.1.2.7), as for an object that no longer exists.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;

use arc_swap::ArcSwap;
use bytes::{BufMut, Bytes, BytesMut};

/// Largest NFSv4 filehandle (RFC 8881 §4.2.1).
pub const NFS4_FHSIZE: usize = 128;
const VERSION: u8 = 2;
/// The format before handles carried a root tag.
const VERSION_UNBOUND: u8 = 1;
const MAC_LEN: usize = 16;
const HEADER: usize = 4;
const TAG_LEN: usize = 8;

/// What a filehandle names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FhTarget {
    /// A node of the pseudo filesystem (RFC 8881 §7.3), by its index.
    Pseudo(u16),
    /// An object in an export, by the backend's handle; for a
    /// non-directory, the directory it was reached in.
    Object {
        export: u16,
        handle: vfs::Handle,
        parent: Option<vfs::Handle>,
    },
}

/// Why a filehandle was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FhError {
    /// Not one of ours at all (NFS4ERR_BADHANDLE, RFC 8881 §15.1.2.1).
    Bad,
    /// Ours, but for an export that is gone or now another directory
    /// (NFS4ERR_STALE, RFC 8881 §15.1.2.7).
    Stale,
}

/// Mints and checks filehandles with the server's secret.
pub struct FhKey {
    key: [u8; 32],
    /// Export id → tag of its root's identity; replaced whole when the
    /// exports are reloaded ([`FhKey::bind_roots`]).
    roots: ArcSwap<HashMap<u16, [u8; TAG_LEN]>>,
}

impl FhKey {
    pub fn from_key(key: [u8; 32]) -> Self {
        FhKey {
            key,
            roots: ArcSwap::from_pointee(HashMap::new()),
        }
    }

    /// Binds the handles of each export to its root's identity
    /// ([`vfs::Vfs::root_identity`]); handles of unbound exports are stale.
    pub fn with_roots(self, roots: impl IntoIterator<Item = (u16, Bytes)>) -> Self {
        self.bind_roots(roots);
        self
    }

    /// [`FhKey::with_roots`] on a key in use: these exports, and no
    /// others, from now on (a reload of the exports).
    pub fn bind_roots(&self, roots: impl IntoIterator<Item = (u16, Bytes)>) {
        let tag_key = blake3::derive_key("ferrite filehandle export root tag", &self.key);
        let mut map = HashMap::new();
        for (export, identity) in roots {
            let h = blake3::keyed_hash(&tag_key, &identity);
            let mut tag = [0u8; TAG_LEN];
            tag.copy_from_slice(&h.as_bytes()[..TAG_LEN]);
            map.insert(export, tag);
        }
        self.roots.store(std::sync::Arc::new(map));
    }

    /// A key for `context` derived from the filehandle key: servers that
    /// share the one share the other (a migration pair's peer channel,
    /// `crate::migrate`).
    pub fn derive(&self, context: &str) -> [u8; 32] {
        blake3::derive_key(context, &self.key)
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
                vfs::durable::create_dir_all(state_dir)?;
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
                // The name too: a power loss must not take the key, and
                // with it every handle clients hold.
                crate::stable::records::sync_dir(state_dir)?;
            }
            Err(e) => return Err(e),
        }
        Ok(FhKey::from_key(key))
    }

    fn mac(&self, data: &[u8]) -> [u8; MAC_LEN] {
        let h = blake3::keyed_hash(&self.key, data);
        let mut out = [0u8; MAC_LEN];
        out.copy_from_slice(&h.as_bytes()[..MAC_LEN]);
        out
    }

    /// The filehandle of `t`, bound to its export's root.
    pub fn encode(&self, t: &FhTarget) -> Bytes {
        self.encode_within(t, NFS4_FHSIZE)
    }

    /// [`FhKey::encode`] in at most `max` bytes (NFSv3's are 64): the
    /// parent hint goes in only where it fits.
    pub fn encode_within(&self, t: &FhTarget, max: usize) -> Bytes {
        let mut b = BytesMut::with_capacity(max);
        b.put_u8(VERSION);
        match t {
            FhTarget::Pseudo(idx) => {
                b.put_u8(0);
                b.put_u16(*idx);
            }
            FhTarget::Object {
                export,
                handle,
                parent,
            } => {
                // The parent goes in only where it fits.
                let parent = parent.as_ref().filter(|p| {
                    HEADER + TAG_LEN + 1 + handle.0.len() + p.0.len() + MAC_LEN
                        <= max.min(NFS4_FHSIZE)
                        && handle.0.len() <= usize::from(u8::MAX)
                });
                b.put_u8(if parent.is_some() { 2 } else { 1 });
                b.put_u16(*export);
                // An unbound export's handles are refused by `decode`.
                b.put_slice(&self.roots.load().get(export).copied().unwrap_or_default());
                if let Some(p) = parent {
                    b.put_u8(handle.0.len() as u8);
                    b.put_slice(&handle.0);
                    b.put_slice(&p.0);
                } else {
                    b.put_slice(&handle.0);
                }
            }
        }
        let mac = self.mac(&b);
        b.put_slice(&mac);
        b.freeze()
    }

    /// Checks a filehandle a client presented: [`FhError::Bad`] unless this
    /// server minted it, [`FhError::Stale`] if its export is gone or is now
    /// another directory.
    pub fn decode(&self, fh: &Bytes) -> Result<FhTarget, FhError> {
        if fh.len() < HEADER + MAC_LEN || fh.len() > NFS4_FHSIZE {
            return Err(FhError::Bad);
        }
        let body = fh.len() - MAC_LEN;
        let mac = self.mac(&fh[..body]);
        // Constant-time comparison: the MAC is the only secret-derived part.
        let diff = mac
            .iter()
            .zip(&fh[body..])
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        match fh[0] {
            VERSION if diff == 0 => {}
            // Minted by this server before handles were bound to roots.
            VERSION_UNBOUND if diff == 0 => return Err(FhError::Stale),
            _ => return Err(FhError::Bad),
        }
        let id = u16::from_be_bytes([fh[2], fh[3]]);
        match fh[1] {
            0 if body == HEADER => Ok(FhTarget::Pseudo(id)),
            kind @ (1 | 2) if body >= HEADER + TAG_LEN => {
                let tag = &fh[HEADER..HEADER + TAG_LEN];
                if self.roots.load().get(&id).map(|t| &t[..]) != Some(tag) {
                    return Err(FhError::Stale);
                }
                let at = HEADER + TAG_LEN;
                let (handle, parent) = if kind == 1 {
                    (fh.slice(at..body), None)
                } else {
                    let len = usize::from(*fh[..body].get(at).ok_or(FhError::Bad)?);
                    let end = at + 1 + len;
                    if end > body {
                        return Err(FhError::Bad);
                    }
                    let parent = vfs::Handle(fh.slice(end..body));
                    (fh.slice(at + 1..end), Some(parent))
                };
                Ok(FhTarget::Object {
                    export: id,
                    handle: vfs::Handle(handle),
                    parent,
                })
            }
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

/// The parent hint a filehandle for an object with attributes `attr`,
/// reached in the directory `dir` of backend `fs`, carries: `dir` for a
/// non-directory where the backend uses hints to check that objects the
/// kernel no longer places lie inside the export ([`vfs::Vfs::note_parent`]).
pub fn parent_hint(fs: &dyn vfs::Vfs, attr: &vfs::Attr, dir: &vfs::Handle) -> Option<vfs::Handle> {
    (attr.ftype != vfs::FileType::Directory && fs.wants_parent_hints()).then(|| dir.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound(key: u8, roots: &[(u16, &'static [u8])]) -> FhKey {
        FhKey::from_key([key; 32]).with_roots(
            roots
                .iter()
                .map(|&(id, ident)| (id, Bytes::from_static(ident))),
        )
    }

    fn object(export: u16) -> FhTarget {
        FhTarget::Object {
            export,
            handle: vfs::Handle(Bytes::from_static(b"\x00\x00\x00\x01abcdefgh")),
            parent: None,
        }
    }

    #[test]
    fn nfsv3_handles_keep_within_64_bytes() {
        let k = bound(7, &[(3, b"root of 3")]);
        let handle = vfs::Handle(Bytes::from_static(b"\x00\x00\x00\x01abcdefgh"));
        let with = |n: usize| FhTarget::Object {
            export: 3,
            handle: handle.clone(),
            parent: Some(vfs::Handle(Bytes::from(vec![9u8; n]))),
        };
        // 4 + 8 + 1 + 12 + 12 + 16 = 53: the hint fits.
        let fh = k.encode_within(&with(12), 64);
        assert!(fh.len() <= 64);
        assert_eq!(k.decode(&fh), Ok(with(12)));
        // With a 24-byte parent it would take 65: left out.
        let fh = k.encode_within(&with(24), 64);
        assert!(fh.len() <= 64);
        assert_eq!(k.decode(&fh), Ok(object(3)));
        assert_eq!(k.encode(&with(24)).len(), 4 + 8 + 1 + 12 + 24 + 16);
    }

    #[test]
    fn a_parent_hint_travels_when_it_fits() {
        let k = bound(7, &[(3, b"root of 3")]);
        let handle = vfs::Handle(Bytes::from_static(b"\x00\x00\x00\x01abcdefgh"));
        let with = |n: usize| FhTarget::Object {
            export: 3,
            handle: handle.clone(),
            parent: Some(vfs::Handle(Bytes::from(vec![9u8; n]))),
        };
        let t = with(20);
        let fh = k.encode(&t);
        assert_eq!(k.decode(&fh), Ok(t));
        // Another parent, another handle for the same object.
        assert_ne!(k.encode(&with(21)), fh);
        // The largest that fits, and one byte more: left out.
        let room = NFS4_FHSIZE - (HEADER + TAG_LEN + 1 + handle.0.len() + MAC_LEN);
        assert_eq!(k.decode(&k.encode(&with(room))), Ok(with(room)));
        let big = k.encode(&with(room + 1));
        assert!(big.len() <= NFS4_FHSIZE);
        assert_eq!(k.decode(&big), Ok(object(3)));
        // A length past the end, under a valid MAC: malformed.
        for len in [0xffu8, 0] {
            let mut v = vec![VERSION, 2, 0, 3];
            v.extend_from_slice(&k.roots.load()[&3]);
            if len == 0 {
                // no length byte at all
            } else {
                v.push(len);
                v.extend_from_slice(b"short");
            }
            v.extend_from_slice(&k.mac(&v));
            assert_eq!(k.decode(&Bytes::from(v)), Err(FhError::Bad), "{len}");
        }
    }

    #[test]
    fn roundtrip_and_forgery() {
        let k = bound(7, &[(3, b"root of 3")]);
        let t = object(3);
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
        let other = bound(8, &[(3, b"root of 3")]);
        assert_eq!(other.decode(&fh), Err(FhError::Bad));
        assert_eq!(k.decode(&Bytes::from_static(b"abc")), Err(FhError::Bad));
        let p = k.encode(&FhTarget::Pseudo(0));
        assert_eq!(k.decode(&p), Ok(FhTarget::Pseudo(0)));
    }

    #[test]
    fn handles_are_bound_to_the_export_root() {
        let k = bound(7, &[(0, b"/srv"), (1, b"/srv/other")]);
        let fh = k.encode(&object(0));
        // The same key and export id, but export 0 is now another root.
        let narrowed = bound(7, &[(0, b"/srv/sub"), (1, b"/srv/other")]);
        assert_eq!(narrowed.decode(&fh), Err(FhError::Stale));
        // An export that no longer exists.
        assert_eq!(
            bound(7, &[(1, b"/srv/other")]).decode(&fh),
            Err(FhError::Stale)
        );
        // Moving a handle to another export breaks the MAC.
        let mut moved = fh.to_vec();
        moved[3] = 1;
        assert_eq!(k.decode(&Bytes::from(moved)), Err(FhError::Bad));
        // A restart with an export added keeps the others' handles.
        let more = bound(7, &[(0, b"/srv"), (1, b"/srv/other"), (2, b"/new")]);
        assert_eq!(more.decode(&fh), Ok(object(0)));
        // Unbound exports' handles are never accepted.
        let unbound = FhKey::from_key([7; 32]);
        assert_eq!(
            unbound.decode(&unbound.encode(&object(0))),
            Err(FhError::Stale)
        );
    }

    #[test]
    fn version_1_handles_are_stale_unless_forged() {
        let k = bound(7, &[(0, b"/srv")]);
        // [1][kind=1][export 0][backend handle][MAC] under the same key.
        let mut v1 = vec![1u8, 1, 0, 0, 0, 0, 0, 1, b'x'];
        v1.extend_from_slice(&k.mac(&v1));
        assert_eq!(k.decode(&Bytes::from(v1.clone())), Err(FhError::Stale));
        let last = v1.len() - 1;
        v1[last] ^= 1;
        assert_eq!(k.decode(&Bytes::from(v1)), Err(FhError::Bad));
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
