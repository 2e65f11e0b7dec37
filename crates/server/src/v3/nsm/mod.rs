//! The status monitor's side of NLM (X/Open XNFS chapter 11, Network
//! Status Monitor), built into the server rather than asked of a separate
//! statd:
//!
//! * Every host that takes a lock or share is recorded on stable storage
//!   (`STATE_DIR/nsm/hosts/`, one file per host) before that is answered.
//! * The server's state number (`STATE_DIR/nsm/state`) goes up at every
//!   start and is odd while it runs.
//! * After a restart, each host recorded before is sent SM_NOTIFY (to its
//!   status monitor, found through its port mapper), naming this server as
//!   the host reached it, so that its lock manager reclaims; the grace
//!   period NFSv4 has is theirs too, and only reclaims are granted in it.
//!   A host's record goes once it has been told (or could not be, after
//!   [`NOTIFY_TRIES`] tries).
//! * SM_NOTIFY from a client that restarted frees its locks (program
//!   100024 is served for that); SM_STAT answers the state number. SM_MON,
//!   SM_UNMON and SM_UNMON_ALL are for a host's own lock manager, which
//!   here is inside the server: refused (`stat_fail`).

use std::collections::HashSet;
use std::io::{self, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use proto::nsm::*;
use tracing::{info, warn};

pub mod service;

use crate::v3::nlm::callback;
use crate::v3::nlm::hosts::Host;

/// How often SM_NOTIFY is tried per host after a restart, the waits
/// doubling from [`NOTIFY_FIRST_WAIT`].
pub const NOTIFY_TRIES: u32 = 8;
const NOTIFY_FIRST_WAIT: Duration = Duration::from_secs(1);

static NSM_LOG: rpc::RateLimit = rpc::RateLimit::per_secs(10);

/// A host recorded by an earlier instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub name: Bytes,
    pub addr: IpAddr,
    /// This server's address as the host reached it.
    pub server: IpAddr,
}

/// The status monitor's records and state number.
pub struct Nsm {
    /// Where host records are kept (none: in memory only, for tests).
    dir: Option<PathBuf>,
    state: i32,
    /// Hosts recorded by this instance (file names).
    recorded: Mutex<HashSet<String>>,
}

/// A record's file name: the host's address and its name in hex.
fn file_name(addr: IpAddr, name: &[u8]) -> String {
    let hex: String = name.iter().map(|b| format!("{b:02x}")).collect();
    format!("{addr}_{hex}")
}

fn parse_name(file: &str) -> Option<(IpAddr, Bytes)> {
    let (addr, hex) = file.rsplit_once('_')?;
    if hex.len() % 2 != 0 || hex.len() > 2 * SM_MAXSTRLEN {
        return None;
    }
    let name = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    Some((addr.parse().ok()?, Bytes::from(name)))
}

/// Writes `data` to `path` durably: a temporary file synced, renamed over
/// it, the directory synced.
fn write_durably(dir: &Path, name: &str, data: &[u8]) -> io::Result<()> {
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(data)?;
    f.sync_all()?;
    std::fs::rename(&tmp, dir.join(name))?;
    vfs::durable::sync_dir(dir)
}

impl Nsm {
    /// A monitor that records nothing on disk (state number 1).
    pub fn in_memory() -> Nsm {
        Nsm {
            dir: None,
            state: 1,
            recorded: Mutex::default(),
        }
    }

    /// Opens the records in `state_dir` and starts a new state number:
    /// the monitor and the hosts earlier instances recorded.
    pub fn open(state_dir: &Path) -> io::Result<(Nsm, Vec<Record>)> {
        let base = state_dir.join("nsm");
        let hosts = base.join("hosts");
        vfs::durable::create_dir_all(&hosts)?;
        let old: i32 = match std::fs::read_to_string(base.join("state")) {
            Ok(s) => s.trim().parse().unwrap_or(0),
            Err(e) if e.kind() == io::ErrorKind::NotFound => 0,
            Err(e) => return Err(e),
        };
        // Odd while up: the next odd number past the last.
        let state = if old % 2 == 0 { old + 1 } else { old + 2 }.max(1);
        write_durably(&base, "state", format!("{state}\n").as_bytes())?;
        let mut previous = Vec::new();
        for entry in std::fs::read_dir(&hosts)? {
            let entry = entry?;
            let file = entry.file_name().to_string_lossy().into_owned();
            if file.starts_with('.') {
                let _ = std::fs::remove_file(entry.path());
                continue;
            }
            let server = std::fs::read_to_string(entry.path())
                .ok()
                .and_then(|s| s.trim().parse().ok());
            match (parse_name(&file), server) {
                (Some((addr, name)), Some(server)) => previous.push(Record { name, addr, server }),
                _ => {
                    warn!(file, "NSM: ignoring a record that does not parse");
                }
            }
        }
        Ok((
            Nsm {
                dir: Some(hosts),
                state,
                recorded: Mutex::default(),
            },
            previous,
        ))
    }

    /// This instance's state number.
    pub fn state(&self) -> i32 {
        self.state
    }

    fn recorded(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.recorded.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records `host` on stable storage, once per instance (blocking).
    pub fn monitor(&self, host: &Host) -> io::Result<()> {
        let name = file_name(host.addr, &host.name);
        if self.recorded().contains(&name) {
            return Ok(());
        }
        if let Some(dir) = &self.dir {
            write_durably(dir, &name, format!("{}\n", host.server).as_bytes())?;
        }
        self.recorded().insert(name);
        Ok(())
    }

    /// Drops `host`'s record (it restarted, or freed everything).
    pub fn unmonitor(&self, host: &Host) -> io::Result<()> {
        let name = file_name(host.addr, &host.name);
        self.recorded().remove(&name);
        self.remove_file(&name)
    }

    fn remove_file(&self, name: &str) -> io::Result<()> {
        let Some(dir) = &self.dir else { return Ok(()) };
        match std::fs::remove_file(dir.join(name)) {
            Ok(()) => vfs::durable::sync_dir(dir),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Drops an earlier instance's record once its host was told, unless
    /// this instance recorded the host again meanwhile.
    fn told(&self, r: &Record) {
        let name = file_name(r.addr, &r.name);
        if self.recorded().contains(&name) {
            return;
        }
        if let Err(e) = self.remove_file(&name) {
            warn!(host = %r.addr, "NSM: cannot remove a record: {e}");
        }
    }
}

/// The grace-period owner standing for an NLM host recorded before a
/// restart (the grace period lasts its full length for them: NLM has no
/// "reclaims done").
pub fn grace_owner(r: &Record) -> Bytes {
    let mut b = b"nlm\0".to_vec();
    b.extend_from_slice(&r.name);
    Bytes::from(b)
}

/// Sends SM_NOTIFY to every host recorded before the restart, in the
/// background, each retried [`NOTIFY_TRIES`] times.
pub fn notify_all(nsm: Arc<Nsm>, records: Vec<Record>, pmap_port: u16, machine: String) {
    if records.is_empty() {
        return;
    }
    info!(
        hosts = records.len(),
        state = nsm.state(),
        "NSM: telling the NFSv3 lock holders of the restart (SM_NOTIFY)"
    );
    for r in records {
        let (nsm, machine) = (nsm.clone(), machine.clone());
        tokio::spawn(async move {
            let args = StatChge {
                mon_name: Bytes::from(r.server.to_string()),
                state: nsm.state(),
            };
            let mut wait = NOTIFY_FIRST_WAIT;
            for attempt in 1..=NOTIFY_TRIES {
                let sent = callback::call_host(
                    r.addr, pmap_port, SM_PROG, SM_VERS, SM_NOTIFY, "NSM", &machine, &args,
                );
                match sent.await {
                    Ok(_) => {
                        info!(host = %r.addr, "NSM: SM_NOTIFY sent");
                        forget(nsm, r).await;
                        return;
                    }
                    Err(e) => {
                        if let Some(n) = NSM_LOG.allow() {
                            warn!(host = %r.addr, attempt, "NSM: SM_NOTIFY failed: {e} ({n} more not logged)");
                        }
                    }
                }
                tokio::time::sleep(wait).await;
                wait *= 2;
            }
            warn!(host = %r.addr, "NSM: gave up telling the host of the restart");
            forget(nsm, r).await;
        });
    }
}

/// [`Nsm::told`] on the blocking pool (it removes a file and syncs its
/// directory).
async fn forget(nsm: Arc<Nsm>, r: Record) {
    let _ = crate::handoff::off_thread(move || nsm.told(&r)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_survive_and_state_goes_up_odd() {
        let d = tempfile::tempdir().unwrap();
        let (nsm, prev) = Nsm::open(d.path()).unwrap();
        assert_eq!((nsm.state(), prev.len()), (1, 0));
        let h = Host {
            id: 1,
            name: Bytes::from_static(b"guest_a"),
            addr: "10.0.2.15".parse().unwrap(),
            server: "10.0.2.2".parse().unwrap(),
        };
        nsm.monitor(&h).unwrap();
        nsm.monitor(&h).unwrap();
        drop(nsm);
        let (nsm, prev) = Nsm::open(d.path()).unwrap();
        assert_eq!(nsm.state(), 3);
        assert_eq!(
            prev,
            vec![Record {
                name: h.name.clone(),
                addr: h.addr,
                server: h.server
            }]
        );
        assert_eq!(grace_owner(&prev[0]), Bytes::from_static(b"nlm\0guest_a"));
        // Told: the record goes, unless recorded again.
        nsm.monitor(&h).unwrap();
        nsm.told(&prev[0]);
        let (nsm, prev) = Nsm::open(d.path()).unwrap();
        assert_eq!((nsm.state(), prev.len()), (5, 1));
        nsm.told(&prev[0]);
        let (_, prev) = Nsm::open(d.path()).unwrap();
        assert!(prev.is_empty());
        assert_eq!(parse_name("x"), None);
        assert_eq!(parse_name("10.0.0.1_zz"), None);
    }
}
