//! Client records on stable storage (RFC 8881 §8.4.2, §8.4.3): the
//! clients that may hold state, so that after a restart only they reclaim
//! (the grace period itself is the state's: `state::grace`).
//!
//! A client gets its record when it sends RECLAIM_COMPLETE, before the
//! reply: an NFSv4.1 client can take no new state before that (§18.51.3),
//! so every client holding an open or lock that the server acknowledged
//! has a record. A record goes when its client is purged (lease expired,
//! DESTROY_CLIENTID, a new incarnation of the client), durably before the
//! reply of the request that purged it, since that request may be taking
//! a lock the purged client held: after a restart that client must not
//! reclaim it (§8.4.3's edge conditions). The state notes the purge in
//! its [`RecordQueue`]; [`Records::settle`] makes it durable.
//!
//! Records are files `clients/<instance>-<clientid>` in the state
//! directory, each holding the client owner (`co_ownerid`). At start the
//! owners of every record, from any earlier instance, may reclaim; the
//! records of earlier instances are removed only when the grace period
//! ends, so a client that had no time to reclaim before another restart
//! still may after it.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use proto::nfs4::ClientId4;
use state::records::{Pending, RecordQueue};
use tracing::warn;

/// First bytes of a record file; the client owner follows.
const MAGIC: &[u8; 8] = b"FRCLNT01";

/// Records of this server's clients on stable storage.
pub struct Records {
    /// `None`: kept nowhere (tests, servers without a state directory).
    dir: Option<PathBuf>,
    /// This instance's prefix for its record files.
    instance: String,
    /// Held for every change on disk, so that they happen one at a time.
    io: Mutex<()>,
    /// Removals the state noted and not yet made. Never held during I/O:
    /// noting a removal (under the state tables' lock) does not wait for
    /// the disk.
    queue: Arc<RecordQueue>,
}

impl std::fmt::Debug for Records {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Records({:?})", self.dir)
    }
}

impl Records {
    /// Records kept nowhere.
    pub fn none() -> Records {
        Records {
            dir: None,
            instance: String::new(),
            io: Mutex::new(()),
            queue: Arc::new(RecordQueue::new(false)),
        }
    }

    /// Opens (creating) `state_dir/clients`; returns the records and the
    /// client owners recorded by earlier instances. `instance` names this
    /// one (unique across restarts: the start time in nanoseconds).
    pub fn open(state_dir: &Path, instance: u128) -> io::Result<(Records, HashSet<Bytes>)> {
        let dir = state_dir.join("clients");
        vfs::durable::create_dir_all(&dir)?;
        let mut owners = HashSet::new();
        for entry in fs::read_dir(&dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.ends_with(".tmp") {
                // A record never completed: its client was not answered.
                let _ = fs::remove_file(entry.path());
                continue;
            }
            match fs::read(entry.path()) {
                Ok(b) if b.len() > MAGIC.len() && b.starts_with(MAGIC) => {
                    owners.insert(Bytes::copy_from_slice(&b[MAGIC.len()..]));
                }
                Ok(_) => warn!(file = %entry.path().display(), "not a client record; ignored"),
                Err(e) => warn!(file = %entry.path().display(), "client record unreadable: {e}"),
            }
        }
        let records = Records {
            dir: Some(dir),
            instance: format!("{instance:032x}"),
            io: Mutex::new(()),
            queue: Arc::new(RecordQueue::new(true)),
        };
        Ok((records, owners))
    }

    /// The queue the state notes purged clients in.
    pub fn queue(&self) -> &Arc<RecordQueue> {
        &self.queue
    }

    fn path(&self, dir: &Path, id: ClientId4) -> PathBuf {
        dir.join(format!("{}-{id:016x}", self.instance))
    }

    fn io(&self) -> std::sync::MutexGuard<'_, ()> {
        self.io.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Puts client `id`'s record (its owner) on stable storage. Blocks.
    pub fn add(&self, id: ClientId4, owner: &[u8]) -> io::Result<()> {
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        let _io = self.io();
        let path = self.path(dir, id);
        let tmp = path.with_extension("tmp");
        let mut f = File::create(&tmp)?;
        f.write_all(MAGIC)?;
        f.write_all(owner)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, &path)?;
        sync_dir(dir)
    }

    /// Notes that client `id` was purged: its record goes at the next
    /// [`Records::settle`].
    pub fn dead(&self, ids: impl IntoIterator<Item = ClientId4>) {
        self.queue.dead(ids);
    }

    /// Whether removals wait for [`Records::settle`].
    pub fn has_pending(&self) -> bool {
        self.queue.has_pending()
    }

    /// Removes the records noted dead (and, once the grace period is
    /// over, those of earlier instances), durably. Blocks. A caller
    /// returns only once every removal noted before it is durable, its
    /// own or another caller's.
    pub fn settle(&self) -> io::Result<()> {
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        let _io = self.io();
        let work = self.queue.take();
        let done = self.remove(dir, &work);
        if done.is_err() {
            // Tried again at the next settle.
            self.queue.note(work);
        }
        done
    }

    fn remove(&self, dir: &Path, work: &Pending) -> io::Result<()> {
        let mut removed = 0;
        for id in &work.dead {
            match fs::remove_file(self.path(dir, *id)) {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        if work.forget_previous {
            let mine = format!("{}-", self.instance);
            for entry in fs::read_dir(dir)? {
                let entry = entry?;
                if !entry.file_name().to_string_lossy().starts_with(&mine) {
                    fs::remove_file(entry.path())?;
                    removed += 1;
                }
            }
        }
        if removed > 0 {
            sync_dir(dir)?;
        }
        Ok(())
    }

    /// Removes the records of earlier instances, durably. Blocks.
    pub fn forget_previous(&self) -> io::Result<()> {
        if self.dir.is_none() {
            return Ok(());
        }
        self.queue.note(Pending {
            dead: Vec::new(),
            forget_previous: true,
        });
        self.settle()
    }
}

pub use vfs::durable::sync_dir;

#[cfg(test)]
mod tests {
    use super::*;

    fn owners(r: &(Records, HashSet<Bytes>)) -> Vec<Bytes> {
        let mut v: Vec<Bytes> = r.1.iter().cloned().collect();
        v.sort();
        v
    }

    #[test]
    fn records_survive_a_restart_until_grace_ends_and_purges_remove_them() {
        let dir = tempfile::tempdir().unwrap();
        let (first, prev) = Records::open(dir.path(), 1).unwrap();
        assert!(prev.is_empty());
        first.add(7, b"client-a").unwrap();
        first.add(8, b"client-b").unwrap();
        first.add(9, b"client-c").unwrap();
        // Purged: gone once settled, not before.
        first.dead([9]);
        assert!(first.has_pending());
        let second = Records::open(dir.path(), 2).unwrap();
        assert_eq!(owners(&second).len(), 3);
        first.settle().unwrap();
        assert!(!first.has_pending());
        // A crash: the next instance sees a and b.
        let (second, prev) = Records::open(dir.path(), 2).unwrap();
        let mut prev: Vec<Bytes> = prev.into_iter().collect();
        prev.sort();
        assert_eq!(prev, vec![Bytes::from("client-a"), Bytes::from("client-b")]);
        // a reclaims in the second instance; another crash before grace
        // ends still lets b reclaim in the third.
        second.add(1, b"client-a").unwrap();
        let third = Records::open(dir.path(), 3).unwrap();
        assert_eq!(
            owners(&third),
            vec![Bytes::from("client-a"), Bytes::from("client-b")]
        );
        // Grace ends in the second: only its own records stay.
        second.forget_previous().unwrap();
        let fourth = Records::open(dir.path(), 4).unwrap();
        assert_eq!(owners(&fourth), vec![Bytes::from("client-a")]);
        // Leftovers of an interrupted write are not records.
        std::fs::write(dir.path().join("clients/x.tmp"), b"FRCLNT01zzz").unwrap();
        std::fs::write(dir.path().join("clients/junk"), b"nope").unwrap();
        let fifth = Records::open(dir.path(), 5).unwrap();
        assert_eq!(owners(&fifth), vec![Bytes::from("client-a")]);
        assert!(!dir.path().join("clients/x.tmp").exists());
    }
}
