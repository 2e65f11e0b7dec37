//! The source's side of a migration (`ferrite migrate EXPORT --to
//! HOST:PORT`): carries out the actions of the phase machine
//! (`state::migration::phases::Outgoing`) and reports how long the move
//! took and how long the export was frozen.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;

use proto::migrate::*;
use serde::{Deserialize, Serialize};
use state::migration::phases::{OutAction, OutEvent, Outgoing, RECALL_POLL};
use tracing::{error, info, warn};
use xdr::Unpack;

use super::channel::Channel;
use super::{lock, Peer};
use crate::exports::away::{Away, Leaving};
use crate::exports::referral::Location;
use crate::handoff::off_thread;

/// What `ferrite migrate` reports of a move.
#[derive(Debug, Serialize, Deserialize)]
pub struct MoveReport {
    pub export: String,
    /// Where the state went (the destination's peer address).
    pub to: String,
    /// Where clients are sent (`fs_locations`).
    pub location: String,
    /// From the command to the commit.
    pub took_ms: u64,
    /// How long the export took no state changes (its clients were told
    /// NFS4ERR_DELAY for opens, closes and locks; reads and writes went
    /// on).
    pub frozen_ms: u64,
    pub clients: usize,
    pub stateids: usize,
}

/// Removes the export from those being moved when the move ends, however
/// it ends.
struct Moving<'a>(&'a Peer, u16);

impl Drop for Moving<'_> {
    fn drop(&mut self) {
        lock(&self.0.outgoing).remove(&self.1);
    }
}

async fn resolve_addr(to: &str) -> Result<SocketAddr, String> {
    let bad = || format!("--to {to:?}: expected HOST:PORT");
    if !to.contains(':') {
        return Err(bad());
    }
    tokio::net::lookup_host(to)
        .await
        .map_err(|e| format!("--to {to:?}: {e}"))?
        .next()
        .ok_or_else(bad)
}

fn answered(r: Result<super::channel::Answer, String>, to: &str) -> Result<bytes::Bytes, String> {
    match r {
        Ok((PeerStatus::Ok, _, body)) => Ok(body),
        Ok((PeerStatus::Auth, m, _)) => Err(format!(
            "{to} did not take this server's call as authentic ({m}): the two servers must share STATE_DIR/fh.key"
        )),
        Ok((_, m, _)) => Err(format!("{to} refused: {m}")),
        Err(e) => Err(e),
    }
}

/// Moves the export at `path` to the Ferrite at `to`, clients sent to
/// `location` (default `to`).
pub async fn migrate(
    peer: &Arc<Peer>,
    path: &str,
    to: &str,
    location: Option<&str>,
) -> Result<MoveReport, String> {
    let srv = &peer.srv;
    let addr = resolve_addr(to).await?;
    let shown = location.unwrap_or(to);
    let loc = Location::parse(&format!("{shown}:{path}"))
        .map_err(|why| format!("where clients are sent, {shown:?}: {why}"))?;
    let exports = srv.exports();
    let Some(e) = exports.iter().find(|e| e.path == path).cloned() else {
        let known: Vec<&str> = exports.iter().map(|e| e.path.as_str()).collect();
        return Err(format!(
            "no export {path} here (exports: {})",
            known.join(", ")
        ));
    };
    if e.path == "/" {
        return Err(
            "the export at \"/\" is the whole namespace: give it a path of its own to move it"
                .into(),
        );
    }
    match srv.away.get(e.id) {
        None => {}
        Some(Away::Leaving) => return Err(format!("a migration of {path} is already under way")),
        Some(Away::Elsewhere(l)) => return Err(format!("{path} is not served here: it is at {l}")),
        Some(Away::Arriving) => return Err(format!("{path} is arriving here from another server")),
        Some(Away::Uncertain(l)) => {
            return Err(format!(
                "{path} waits for {} to say whether an earlier move committed",
                l.to
            ))
        }
    }
    if !lock(&peer.outgoing).insert(e.id) {
        return Err(format!("a migration of {path} is already under way"));
    }
    let _moving = Moving(peer, e.id);
    let mut ch = Channel::open(addr, peer.key).await?;
    let mut id = [0u8; 16];
    getrandom::getrandom(&mut id).map_err(|e| format!("no randomness: {e}"))?;
    let started = srv.clock.now();
    let (mut m, first) = Outgoing::start(started, srv.cfg.lease * 2);
    let mut todo: VecDeque<OutAction> = first.into();
    let mut clients = 0;
    let mut stateids = 0;
    let mut recorded_leaving = false;
    let mut result = None;
    while let Some(a) = todo.pop_front() {
        let ev = match a {
            OutAction::SendPrepare => {
                let args = PrepareArgs {
                    migration: id,
                    export_path: bytes::Bytes::from(e.path.clone()),
                    export_id: u32::from(e.id),
                    root_identity: e.vfs.root_identity(),
                    lease_secs: srv.cfg.lease.as_secs() as u32,
                    source: bytes::Bytes::from(
                        String::from_utf8_lossy(&srv.server_scope).into_owned(),
                    ),
                };
                match answered(ch.call(PEER_PREPARE, &args).await, to) {
                    Ok(_) => OutEvent::Prepared,
                    Err(why) => OutEvent::PeerFailed(why),
                }
            }
            OutAction::StopGrants => {
                srv.state().stop_grants(e.id);
                let b = srv.state().break_export_delegations(e.id);
                let layouts = srv.state().recall_all_layouts(Some(e.id));
                if let Some(cb) = srv.callbacks() {
                    for r in b.recalls {
                        cb.recall(r);
                    }
                    for r in layouts {
                        cb.recall_layout(r);
                    }
                }
                info!(export = %path, to = %to, "migration: no new delegations or layouts on the export; those held recalled");
                continue;
            }
            OutAction::Freeze => {
                srv.away.set(e.id, Some(Away::Leaving));
                srv.state().freeze_export(e.id);
                continue;
            }
            OutAction::CheckRecalls => {
                // At once the first time: with nothing to recall the
                // export is frozen only as long as the transfer takes.
                let mut left = srv.state().held_on_export(e.id);
                if left > 0 {
                    tokio::time::sleep(RECALL_POLL).await;
                    left = srv.state().held_on_export(e.id);
                }
                OutEvent::Recalled { left }
            }
            OutAction::SendTransfer => match snapshot(srv, &e).await {
                Err(why) => OutEvent::SnapshotRefused(why),
                Ok(snap) => {
                    clients = snap.len();
                    stateids = snap.iter().map(|c| c.states.len()).sum();
                    let args = TransferArgs {
                        migration: id,
                        clients: snap,
                    };
                    match answered(ch.call(PEER_TRANSFER, &args).await, to) {
                        Ok(_) => OutEvent::Staged,
                        Err(why) => OutEvent::PeerFailed(why),
                    }
                }
            },
            OutAction::SendCommit => {
                // Durably first: a restart from here on must not serve
                // the export before learning whether the destination
                // committed (`exports::away`, `resolve`).
                let leaving = Leaving {
                    to: to.to_string(),
                    location: loc.clone(),
                    migration: super::hex(&id),
                };
                let (srv2, p) = (srv.clone(), e.path.clone());
                recorded_leaving = true;
                match off_thread(move || srv2.away.record_leaving(&p, &leaving)).await {
                    Ok(Ok(())) => match answered(
                        ch.call(PEER_COMMIT, &MigrationId { migration: id }).await,
                        to,
                    ) {
                        Ok(_) => OutEvent::Committed,
                        Err(why) => OutEvent::PeerFailed(why),
                    },
                    // Not sent: the ABORT that follows finds nothing
                    // committed, and the export stays.
                    Ok(Err(err)) => OutEvent::PeerFailed(format!("recording the move: {err}")),
                    Err(_) => OutEvent::PeerFailed("recording the move panicked".into()),
                }
            }
            OutAction::SendAbort(after) => {
                tokio::time::sleep(after).await;
                let mut r = ch.call(PEER_ABORT, &MigrationId { migration: id }).await;
                if r.is_err() {
                    // The connection may be what failed: a new one.
                    if let Ok(c) = Channel::open(addr, peer.key).await {
                        ch = c;
                        r = ch.call(PEER_ABORT, &MigrationId { migration: id }).await;
                    }
                }
                match answered(r, to) {
                    Ok(body) => OutEvent::AbortAnswered {
                        committed: bool::unpack(&mut xdr::Decoder::new(body)).unwrap_or(false),
                    },
                    Err(why) => OutEvent::PeerFailed(why),
                }
            }
            OutAction::Moved => {
                let (srv2, p, l) = (srv.clone(), e.path.clone(), loc.clone());
                match off_thread(move || srv2.away.record_moved(&p, &l)).await {
                    Ok(Ok(())) => {}
                    Ok(Err(err)) => {
                        error!(export = %path, "migration: the export moved, but recording it failed ({err}): after a restart this server would serve it again; add it to the state directory's `away` by hand")
                    }
                    Err(_) => error!(export = %path, "migration: recording the move panicked"),
                }
                srv.away.set(e.id, Some(Away::Elsewhere(loc.clone())));
                let dropped = srv.state().drop_export(e.id);
                srv.state().thaw_export(e.id);
                info!(export = %path, to = %loc, stateids = dropped, "migration committed: clients are sent to the destination");
                continue;
            }
            OutAction::Thaw => {
                if recorded_leaving {
                    let (srv2, p) = (srv.clone(), e.path.clone());
                    if let Ok(Err(err)) = off_thread(move || srv2.away.record_here(&p)).await {
                        // A restart would ask the destination, and learn
                        // nothing committed: nothing is lost.
                        warn!(export = %path, "migration: clearing the record of the move: {err}");
                    }
                }
                srv.state().thaw_export(e.id);
                srv.away.set(e.id, None);
                warn!(export = %path, "migration did not happen: the export is served here as before");
                continue;
            }
            OutAction::Finish(r) => {
                result = Some(r);
                continue;
            }
        };
        let now = srv.clock.now();
        todo.extend(m.on(ev, now));
    }
    ch.close();
    let now = srv.clock.now();
    match result {
        Some(Ok(())) => Ok(MoveReport {
            export: e.path.clone(),
            to: to.to_string(),
            location: loc.to_string(),
            took_ms: now.saturating_sub(started).as_millis() as u64,
            frozen_ms: m.frozen_for(now).as_millis() as u64,
            clients,
            stateids,
        }),
        Some(Err(why)) => Err(why),
        None => Err("the migration ended without an outcome (a bug)".into()),
    }
}

/// The export's state for the transfer, once its write log (if any) is
/// applied to its files: the destination serves them from there.
async fn snapshot(
    srv: &Arc<crate::instance::Server>,
    e: &Arc<crate::exports::export::Export>,
) -> Result<Vec<PeerClient>, String> {
    if let Some(log) = e.log.clone() {
        match off_thread(move || log.apply()).await {
            Ok(Ok(())) => {}
            Ok(Err(why)) => return Err(format!("applying the write log: {why}")),
            Err(_) => return Err("applying the write log panicked".into()),
        }
    }
    srv.state().export_state(e.id)
}

/// After a restart: asks the destinations of the moves this server was
/// committing when it stopped whether they committed, and serves each
/// export again, or sends its clients there, once one says. Until then the
/// export answers NFS4ERR_DELAY (`Away::Uncertain`). Asks again every
/// [`state::migration::phases::ABORT_RETRY`] while a destination does
/// not answer.
pub fn resolve(peer: &Arc<Peer>) {
    for (id, a) in peer.srv.away.all() {
        let Away::Uncertain(l) = a else { continue };
        let Some(path) = peer.srv.export(id).map(|e| e.path.clone()) else {
            continue;
        };
        let peer = peer.clone();
        tokio::spawn(async move {
            let mut said = false;
            loop {
                match ask(&peer, &l).await {
                    Ok(committed) => {
                        let srv = peer.srv.clone();
                        let (p, loc) = (path.clone(), l.location.clone());
                        let r = off_thread(move || {
                            if committed {
                                srv.away.record_moved(&p, &loc)
                            } else {
                                srv.away.record_here(&p)
                            }
                        })
                        .await;
                        if let Ok(Err(err)) = r {
                            error!(export = %path, "recording the outcome of the move: {err}");
                        }
                        if committed {
                            peer.srv
                                .away
                                .set(id, Some(Away::Elsewhere(l.location.clone())));
                            info!(export = %path, to = %l.location, "the move interrupted by the restart had committed: clients are sent there");
                        } else {
                            peer.srv.away.set(id, None);
                            info!(export = %path, "the move interrupted by the restart had not committed: serving the export");
                        }
                        return;
                    }
                    Err(why) => {
                        if !said {
                            warn!(export = %path, to = %l.to, "held off until the destination says whether the interrupted move committed: {why}");
                            said = true;
                        }
                        tokio::time::sleep(state::migration::phases::ABORT_RETRY).await;
                    }
                }
            }
        });
    }
}

/// ABORT of the interrupted migration: whether the destination had
/// committed it.
async fn ask(peer: &Peer, l: &Leaving) -> Result<bool, String> {
    let addr = resolve_addr(&l.to).await?;
    let mut id = [0u8; 16];
    for (i, b) in id.iter_mut().enumerate() {
        *b = l
            .migration
            .get(2 * i..2 * i + 2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .ok_or_else(|| {
                format!(
                    "migration id {:?} in the state directory is not one",
                    l.migration
                )
            })?;
    }
    let mut ch = Channel::open(addr, peer.key).await?;
    let body = answered(
        ch.call(PEER_ABORT, &MigrationId { migration: id }).await,
        &l.to,
    )?;
    ch.close();
    Ok(bool::unpack(&mut xdr::Decoder::new(body)).unwrap_or(false))
}
