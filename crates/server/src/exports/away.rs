//! Exports configured here but not served here now (RFC 8881 §11.14):
//! moved to another server, or configured as served by one
//! (`served_by`), and answered NFS4ERR_MOVED with `fs_locations` naming
//! it; leaving (frozen while a migration hands their state over); or
//! arriving (held off until the migration that brings them commits).
//!
//! Which exports moved out and which arrived is kept in the state
//! directory (`away`, one line each, replaced whole and synced), so a
//! restart serves what the last migration left here and no more: two
//! servers never both serve one export's state. Before a source sends
//! COMMIT it records the export as leaving (to whom, by which
//! migration): a source that restarts with such a record does not know
//! whether the destination committed, so the export is held off
//! ([`Away::Uncertain`]) until the destination says (`crate::migrate`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use super::referral::Location;

/// The file in the state directory.
pub const FILE: &str = "away";

/// What an export is while it is not simply served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Away {
    /// Served by another server, at this location.
    Elsewhere(Location),
    /// Its state is being handed over: no state changes on it.
    Leaving,
    /// Its state is on its way here: nothing on it yet.
    Arriving,
    /// This server restarted while moving it away, after it asked the
    /// destination to commit: nothing on it until the destination says
    /// whether it did.
    Uncertain(Leaving),
}

/// A move under way at its commit: the destination's peer address, where
/// clients are sent, and the migration's id (hex).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaving {
    pub to: String,
    pub location: Location,
    pub migration: String,
}

/// One line of the file: an export path that moved to a location, or
/// that arrived (by a migration, the id given).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Record {
    Moved(String, Location),
    Arrived(String, String),
    Leaving(String, Leaving),
}

impl Record {
    fn path(&self) -> &str {
        match self {
            Record::Moved(p, _) | Record::Arrived(p, _) | Record::Leaving(p, _) => p,
        }
    }
}

/// The exports that are away, by id.
#[derive(Debug, Default)]
pub struct AwayExports {
    /// Whether any export is away: the only thing a request looks at
    /// when none is.
    any: AtomicBool,
    /// Read by every request on a server with an export away: no lock.
    map: ArcSwap<HashMap<u16, Away>>,
    /// The state directory's file; none: nothing kept (tests).
    file: Option<PathBuf>,
    records: Mutex<Vec<Record>>,
}

fn parse(text: &str) -> Result<Vec<Record>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split('\t').collect();
        let r = match f.as_slice() {
            ["moved", path, to] => Record::Moved(path.to_string(), Location::parse(to)?),
            ["arrived", path, id] => Record::Arrived(path.to_string(), id.to_string()),
            ["leaving", path, to, loc, id] => Record::Leaving(
                path.to_string(),
                Leaving {
                    to: to.to_string(),
                    location: Location::parse(loc)?,
                    migration: id.to_string(),
                },
            ),
            [""] => continue,
            _ => return Err(format!("line {}: {line:?}", n + 1)),
        };
        out.push(r);
    }
    Ok(out)
}

impl AwayExports {
    /// The exports away after a start: those the file says moved, and
    /// those configured `served_by` another server that no migration
    /// brought here. `exports` is (id, path, served_by) of each export.
    pub fn load(
        state_dir: Option<&Path>,
        exports: &[(u16, String, Option<Location>)],
    ) -> std::io::Result<AwayExports> {
        let file = state_dir.map(|d| d.join(FILE));
        let records = match &file {
            Some(f) => match std::fs::read_to_string(f) {
                Ok(t) => parse(&t).map_err(|why| {
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("{}: {why}", f.display()),
                    )
                })?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                Err(e) => return Err(e),
            },
            None => Vec::new(),
        };
        let mut map = HashMap::new();
        for (id, path, served_by) in exports {
            let moved = records.iter().find_map(|r| match r {
                Record::Moved(p, to) if p == path => Some(to.clone()),
                _ => None,
            });
            let arrived = records
                .iter()
                .any(|r| matches!(r, Record::Arrived(p, _) if p == path));
            let leaving = records.iter().find_map(|r| match r {
                Record::Leaving(p, l) if p == path => Some(l.clone()),
                _ => None,
            });
            if let Some(l) = leaving {
                map.insert(*id, Away::Uncertain(l));
                continue;
            }
            match (moved, served_by) {
                (Some(to), _) => {
                    map.insert(*id, Away::Elsewhere(to));
                }
                (None, Some(to)) if !arrived => {
                    map.insert(*id, Away::Elsewhere(to.clone()));
                }
                _ => {}
            }
        }
        Ok(AwayExports {
            any: AtomicBool::new(!map.is_empty()),
            map: ArcSwap::from_pointee(map),
            file,
            records: Mutex::new(records),
        })
    }

    /// What export `id` is, if it is away (cheap when none is).
    pub fn get(&self, id: u16) -> Option<Away> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        self.map.load().get(&id).cloned()
    }

    /// Whether any export is away.
    pub fn any(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// Sets (or, with `None`, clears) what export `id` is.
    pub fn set(&self, id: u16, away: Option<Away>) {
        // One writer at a time (the records' lock), readers never wait.
        let _one = self.records.lock().unwrap_or_else(|p| p.into_inner());
        let mut m = HashMap::clone(&self.map.load());
        match away {
            Some(a) => {
                m.insert(id, a);
            }
            None => {
                m.remove(&id);
            }
        }
        let any = !m.is_empty();
        self.map.store(Arc::new(m));
        self.any.store(any, Ordering::Release);
    }

    /// Every export away, for reports.
    pub fn all(&self) -> Vec<(u16, Away)> {
        let mut v: Vec<(u16, Away)> = self
            .map
            .load()
            .iter()
            .map(|(k, v)| (*k, v.clone()))
            .collect();
        v.sort_by_key(|(k, _)| *k);
        v
    }

    /// Records, durably, that the export at `path` moved to `to` (before
    /// it is answered NFS4ERR_MOVED). Blocking.
    pub fn record_moved(&self, path: &str, to: &Location) -> std::io::Result<()> {
        self.rewrite(|r| {
            r.retain(|x| x.path() != path);
            r.push(Record::Moved(path.to_string(), to.clone()));
        })
    }

    /// Records, durably, that the export at `path` is leaving as `l` says
    /// (before COMMIT is sent). Blocking.
    pub fn record_leaving(&self, path: &str, l: &Leaving) -> std::io::Result<()> {
        self.rewrite(|r| {
            r.retain(|x| x.path() != path);
            r.push(Record::Leaving(path.to_string(), l.clone()));
        })
    }

    /// Records, durably, that the export at `path` is served here as
    /// configured (a move that did not happen). Blocking.
    pub fn record_here(&self, path: &str) -> std::io::Result<()> {
        self.rewrite(|r| r.retain(|x| x.path() != path))
    }

    /// Records, durably, that the export at `path` arrived by migration
    /// `id` (before the arrival is acknowledged). Blocking.
    pub fn record_arrived(&self, path: &str, id: &str) -> std::io::Result<()> {
        self.rewrite(|r| {
            r.retain(|x| x.path() != path);
            r.push(Record::Arrived(path.to_string(), id.to_string()));
        })
    }

    /// Whether migration `id` arrived here (for a source asking after a
    /// COMMIT it got no answer to).
    pub fn arrived_by(&self, id: &str) -> bool {
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|r| matches!(r, Record::Arrived(_, i) if i == id))
    }

    fn rewrite(&self, change: impl FnOnce(&mut Vec<Record>)) -> std::io::Result<()> {
        let mut r = self.records.lock().unwrap_or_else(|p| p.into_inner());
        let mut next = r.clone();
        change(&mut next);
        if let Some(f) = &self.file {
            let mut text = String::new();
            for x in &next {
                match x {
                    Record::Moved(p, to) => text.push_str(&format!("moved\t{p}\t{to}\n")),
                    Record::Arrived(p, id) => text.push_str(&format!("arrived\t{p}\t{id}\n")),
                    Record::Leaving(p, l) => text.push_str(&format!(
                        "leaving\t{p}\t{}\t{}\t{}\n",
                        l.to, l.location, l.migration
                    )),
                }
            }
            let tmp = f.with_extension("tmp");
            {
                use std::io::Write;
                let mut w = std::fs::File::create(&tmp)?;
                w.write_all(text.as_bytes())?;
                w.sync_all()?;
            }
            std::fs::rename(&tmp, f)?;
            if let Some(d) = f.parent() {
                vfs::durable::sync_dir(d)?;
            }
        }
        *r = next;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_and_arrivals_survive_a_restart_and_override_served_by() {
        let dir = tempfile::tempdir().unwrap();
        let far = Location::parse("10.0.0.2:2049:/b").unwrap();
        let exports = vec![
            (0, "/a".to_string(), None),
            (1, "/b".to_string(), Some(far.clone())),
        ];
        let a = AwayExports::load(Some(dir.path()), &exports).unwrap();
        assert_eq!(a.get(0), None);
        assert_eq!(a.get(1), Some(Away::Elsewhere(far.clone())));
        // /a moves out, /b arrives.
        let to = Location::parse("10.0.0.3:2049:/a").unwrap();
        a.record_moved("/a", &to).unwrap();
        a.record_arrived("/b", "00ff").unwrap();
        let b = AwayExports::load(Some(dir.path()), &exports).unwrap();
        assert_eq!(b.get(0), Some(Away::Elsewhere(to)));
        assert_eq!(b.get(1), None);
        assert!(b.arrived_by("00ff") && !b.arrived_by("00fe"));
        // /a comes back.
        b.record_arrived("/a", "0100").unwrap();
        let c = AwayExports::load(Some(dir.path()), &exports).unwrap();
        assert_eq!((c.get(0), c.get(1)), (None, None));
        assert!(!c.any());
        // A restart in the middle of a commit: held off until resolved.
        let l = Leaving {
            to: "127.0.0.1:2050".into(),
            location: Location::parse("10.0.0.3:2049:/a").unwrap(),
            migration: "0101".into(),
        };
        c.record_leaving("/a", &l).unwrap();
        let d = AwayExports::load(Some(dir.path()), &exports).unwrap();
        assert_eq!(d.get(0), Some(Away::Uncertain(l)));
        d.record_here("/a").unwrap();
        assert_eq!(
            AwayExports::load(Some(dir.path()), &exports)
                .unwrap()
                .get(0),
            None
        );
        std::fs::write(dir.path().join(FILE), "bogus line\n").unwrap();
        assert!(AwayExports::load(Some(dir.path()), &exports).is_err());
    }
}
