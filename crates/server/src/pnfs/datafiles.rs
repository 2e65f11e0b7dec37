//! The data files of an export's files on its data servers (RFC 8435
//! §2.2, the loosely coupled model): where each stripe of a file lives,
//! what its data file is called, and the metadata server's operations on
//! them over NFSv3 — create, truncate, remove, fence (re-own), sizes,
//! and its own reads, writes and commits.
//!
//! Placement. A file's bytes are cut into stripes of `stripe_unit`
//! bytes; stripe `k` of a file whose first data server is `b` lives on
//! data servers `(b + k + m) mod N` for mirrors `m = 0..M`, so mirrors of
//! one stripe are always on different servers and a file's stripes go
//! round every server. A file has one data file per data server (created
//! when first needed), holding the stripes on that server at their own
//! offsets: the data file's offset is the file's offset, the bytes of
//! other servers' stripes are holes. `b` comes from the file's handle,
//! so files start on different servers.
//!
//! Ownership and fencing (§2.2). A data file is owned by a synthetic uid
//! and gid, `FENCE_UID + g` and `FENCE_GID + g` for the file's fence
//! generation `g`, mode 0640: a client with an RW layout is told that
//! uid, one with a READ layout [`READ_UID`] (not the owner; the group
//! reads). Fencing a client out moves `g` on: the data files change
//! owner, and the client's writes fail with NFS3ERR_ACCES. The
//! generation lives on the data servers (the data files' owner), so a
//! restarted metadata server learns it back from there.

use bytes::Bytes;
use proto::nfs3::*;

use super::dataserver::{DataServer, DsError, IO_SIZE};

/// The first synthetic uid of data files' owners (fence generation 0).
pub const FENCE_UID: u32 = 0x4000_0000;
/// The first synthetic gid of data files' groups.
pub const FENCE_GID: u32 = 0x4000_0000;
/// Fence generations go round this many before they repeat.
pub const FENCE_GENERATIONS: u32 = 1 << 24;
/// The uid a READ layout's holder uses: never a data file's owner, so it
/// reads through the group's permission and cannot write.
pub const READ_UID: u32 = 0x3fff_fffe;

/// Data files' permissions: the owner (RW layouts) reads and writes, the
/// group (READ layouts) reads.
pub const DATA_MODE: u32 = 0o640;

/// How an export spreads its files over its data servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Data servers (N).
    pub servers: usize,
    /// Copies of each stripe (M, at most N).
    pub mirrors: usize,
    /// Bytes per stripe.
    pub stripe_unit: u64,
}

impl Geometry {
    /// The stripe `offset` is in.
    pub fn stripe(&self, offset: u64) -> u64 {
        offset / self.stripe_unit
    }

    /// The data servers holding stripe `k` of a file whose first server is
    /// `base`, one per mirror, in mirror order.
    pub fn servers_of(&self, base: usize, k: u64) -> Vec<usize> {
        let n = self.servers as u64;
        (0..self.mirrors as u64)
            .map(|m| ((base as u64 + k % n + m) % n) as usize)
            .collect()
    }

    /// Whether every stripe is on the same servers (one server, or as many
    /// mirrors as servers): a layout then covers the whole file.
    pub fn one_place(&self) -> bool {
        self.mirrors >= self.servers
    }

    /// The end of `[offset, offset + len)` (a length of all ones: to the
    /// end of the file).
    pub fn end_of(offset: u64, len: u64) -> u64 {
        if len == u64::MAX {
            u64::MAX
        } else {
            offset.saturating_add(len)
        }
    }

    /// The end of the stripe `offset` is in (a layout segment's end).
    pub fn stripe_end(&self, offset: u64) -> u64 {
        (self.stripe(offset) + 1).saturating_mul(self.stripe_unit)
    }
}

/// The first data server of the file with handle `h`.
pub fn base_of(h: &[u8], servers: usize) -> usize {
    let d = blake3::hash(h);
    let b = d.as_bytes();
    (u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) % servers as u64) as usize
}

/// The data file's name on every data server: the export's tag and the
/// file's handle in hex (unique, the same across restarts; a handle is
/// at most 80 bytes, so the name at most 175 characters).
pub fn data_name(tag: &str, h: &[u8]) -> String {
    let mut s = String::with_capacity(tag.len() + 1 + 2 * h.len());
    s.push_str(tag);
    s.push('.');
    for b in h {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// Attributes of a new data file, or of one re-owned by a fence.
pub fn owner_attrs(gen: u32, mode: bool) -> Sattr3 {
    Sattr3 {
        mode: mode.then_some(DATA_MODE),
        uid: Some(FENCE_UID + gen),
        gid: Some(FENCE_GID + gen),
        ..Sattr3::default()
    }
}

/// The fence generation a data file's owner says (none if it is not one
/// of ours).
pub fn gen_of_owner(uid: u32) -> Option<u32> {
    uid.checked_sub(FENCE_UID)
        .filter(|g| *g < FENCE_GENERATIONS)
}

/// LOOKUP of the data file `name` in `root` on `ds`: its handle and
/// attributes, `None` if it does not exist.
pub async fn lookup(
    ds: &DataServer,
    root: &NfsFh3,
    name: &str,
) -> Result<Option<(NfsFh3, Option<Fattr3>)>, DsError> {
    let (root, name) = (root.clone(), name.to_owned());
    match ds
        .call(|c| async move { c.lookup(&root, &name).await })
        .await
    {
        Ok(ok) => Ok(Some((ok.object, ok.obj_attributes))),
        Err(DsError::Status(NfsStat3::Noent)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// CREATE (UNCHECKED: a retry or a race finds the file) of the data file
/// `name` owned by fence generation `gen`; its handle.
pub async fn create(
    ds: &DataServer,
    root: &NfsFh3,
    name: &str,
    gen: u32,
) -> Result<NfsFh3, DsError> {
    let (root, name) = (root.clone(), name.to_owned());
    let created = ds
        .call(|c| async move {
            c.create(&root, &name, CreateHow3::Unchecked(owner_attrs(gen, true)))
                .await
        })
        .await?;
    Ok(created.fh)
}

/// SETATTR of `attrs` on a data file.
pub async fn setattr(ds: &DataServer, fh: &NfsFh3, attrs: Sattr3) -> Result<(), DsError> {
    let fh = fh.clone();
    ds.call(|c| async move { c.setattr(&fh, attrs, SattrGuard3::default()).await })
        .await
        .map(|_| ())
}

/// REMOVE of the data file `name` (one already gone is fine).
pub async fn remove(ds: &DataServer, root: &NfsFh3, name: &str) -> Result<(), DsError> {
    let (root, name) = (root.clone(), name.to_owned());
    match ds
        .call(|c| async move { c.remove(&root, &name).await })
        .await
    {
        Ok(_) | Err(DsError::Status(NfsStat3::Noent)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// GETATTR of a data file.
pub async fn getattr(ds: &DataServer, fh: &NfsFh3) -> Result<Fattr3, DsError> {
    let fh = fh.clone();
    ds.call(|c| async move { c.getattr(&fh).await }).await
}

/// READ of `[offset, offset + count)` of a data file, in calls of at
/// most [`IO_SIZE`]; bytes past its end (holes of the sparse data file)
/// read as zeros up to `count`.
pub async fn read(
    ds: &DataServer,
    fh: &NfsFh3,
    offset: u64,
    count: u32,
) -> Result<Vec<u8>, DsError> {
    let mut out = Vec::with_capacity(count as usize);
    while out.len() < count as usize {
        let at = offset + out.len() as u64;
        let want = (count as usize - out.len()).min(IO_SIZE as usize) as u32;
        let fh2 = fh.clone();
        let r = ds
            .call(|c| async move { c.read(&fh2, at, want).await })
            .await?;
        out.extend_from_slice(&r.data[..]);
        if r.eof || r.data.is_empty() {
            break;
        }
    }
    out.resize(count as usize, 0);
    Ok(out)
}

/// WRITE of `data` at `offset` to a data file, in calls of at most
/// [`IO_SIZE`]; how durable the least durable part is.
pub async fn write(
    ds: &DataServer,
    fh: &NfsFh3,
    offset: u64,
    data: Bytes,
    stable: StableHow,
) -> Result<StableHow, DsError> {
    let mut done = 0usize;
    let mut least = StableHow::FileSync;
    while done < data.len() {
        let end = (done + IO_SIZE as usize).min(data.len());
        let chunk = data.slice(done..end);
        let fh2 = fh.clone();
        let at = offset + done as u64;
        let r = ds
            .call(|c| async move { c.write(&fh2, at, chunk, stable).await })
            .await?;
        if r.count == 0 {
            return Err(DsError::Down("WRITE wrote nothing".into()));
        }
        if (r.committed as u32) < (least as u32) {
            least = r.committed;
        }
        done += (r.count as usize).min(end - done);
    }
    Ok(least)
}

/// COMMIT of a whole data file.
pub async fn commit(ds: &DataServer, fh: &NfsFh3) -> Result<(), DsError> {
    let fh = fh.clone();
    ds.call(|c| async move { c.commit(&fh, 0, 0).await })
        .await
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirrors_of_a_stripe_are_on_different_servers_and_stripes_go_round() {
        let g = Geometry {
            servers: 4,
            mirrors: 2,
            stripe_unit: 1 << 20,
        };
        assert_eq!(g.servers_of(3, 0), vec![3, 0]);
        assert_eq!(g.servers_of(3, 1), vec![0, 1]);
        assert_eq!(g.servers_of(3, 5), vec![0, 1]);
        assert_eq!(g.stripe((1 << 20) + 5), 1);
        assert_eq!(g.stripe_end(5), 1 << 20);
        assert!(!g.one_place());
        assert!(Geometry {
            servers: 2,
            mirrors: 2,
            stripe_unit: 1
        }
        .one_place());
        let h = [7u8; 20];
        assert!(base_of(&h, 4) < 4);
        assert_eq!(base_of(&h, 4), base_of(&h, 4));
    }

    #[test]
    fn names_and_owners() {
        assert_eq!(data_name("ab", &[0, 255, 16]), "ab.00ff10");
        assert_eq!(gen_of_owner(FENCE_UID + 5), Some(5));
        assert_eq!(gen_of_owner(1000), None);
        let a = owner_attrs(2, true);
        assert_eq!(
            (a.mode, a.uid, a.gid),
            (Some(0o640), Some(FENCE_UID + 2), Some(FENCE_GID + 2))
        );
    }
}
