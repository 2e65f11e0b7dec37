//! The destination's side of a migration: the peer program's service.
//! PREPARE checks the export is the same here (path, id, root identity:
//! the source's filehandles must resolve to the same objects) and not
//! served here, and holds it off ("arriving"); TRANSFER stages the state
//! and checks it can be taken in; COMMIT makes the arrival durable (the
//! point of no return), takes the state in and serves the export; ABORT
//! drops what was staged, or says the migration had committed.

use std::sync::Arc;

use bytes::Bytes;
use proto::migrate::*;
use rpc::{Call, Reply, ReplyError, ReplyFuture, Service};
use state::migration::phases::{IncomingError, INCOMING_TIMEOUT};
use tracing::{info, warn};
use xdr::Unpack;

use super::channel::{call_mac, hello_mac, reply_mac, same_mac};
use super::{hex, lock, Peer, PeerSession, MAX_SESSIONS, SESSION_IDLE};
use crate::exports::away::Away;
use crate::handoff::off_thread;

static PEER_LOG: rpc::RateLimit = rpc::RateLimit::per_secs(10);

type Outcome = Result<Bytes, (PeerStatus, String)>;

fn refused(why: impl Into<String>) -> (PeerStatus, String) {
    (PeerStatus::Refused, why.into())
}

fn garbage(e: xdr::Error) -> (PeerStatus, String) {
    (PeerStatus::Garbage, format!("malformed arguments: {e}"))
}

/// The peer program (`proto::migrate`) of a server.
pub struct PeerService(pub Arc<Peer>);

impl Service for PeerService {
    fn call(&self, mut call: Call) -> ReplyFuture {
        let peer = self.0.clone();
        Box::pin(async move {
            match call.proc_ {
                PEER_NULL => Reply::Success(Vec::new()),
                PEER_HELLO => match HelloArgs::unpack(&mut call.args) {
                    Ok(a) => Reply::success(&peer.hello(a)),
                    Err(_) => Reply::Error(ReplyError::GarbageArgs),
                },
                p @ (PEER_PREPARE | PEER_TRANSFER | PEER_COMMIT | PEER_ABORT) => {
                    let Ok(s) = Sealed::unpack(&mut call.args) else {
                        return Reply::Error(ReplyError::GarbageArgs);
                    };
                    let outcome = if peer.admit(&s, p) {
                        peer.dispatch(p, s.body.clone()).await
                    } else {
                        if let Some(n) = PEER_LOG.allow() {
                            warn!(peer = %call.conn.peer(), "a migration call that is not authentic (wrong key, unknown session or replayed): refused ({n} more not logged)");
                        }
                        Err((PeerStatus::Auth, "not authentic".into()))
                    };
                    let (status, message, body) = match outcome {
                        Ok(b) => (PeerStatus::Ok, String::new(), b),
                        Err((st, m)) => (st, m, Bytes::new()),
                    };
                    let message = Bytes::from(message);
                    let mac = reply_mac(&peer.key, &s.session, s.counter, status, &message, &body);
                    Reply::success(&SealedRes {
                        status,
                        message,
                        body,
                        mac,
                    })
                }
                _ => Reply::Error(ReplyError::ProcUnavail),
            }
        })
    }
}

impl Peer {
    /// HELLO: a new peer session, and the proof this server holds the key.
    fn hello(&self, a: HelloArgs) -> HelloRes {
        let mut session = [0u8; 16];
        let _ = getrandom::getrandom(&mut session);
        let now = self.now();
        let mut s = lock(&self.sessions);
        s.retain(|_, p| now.saturating_sub(p.used) < SESSION_IDLE);
        if s.len() >= MAX_SESSIONS {
            if let Some(oldest) = s.iter().min_by_key(|(_, p)| p.used).map(|(k, _)| *k) {
                s.remove(&oldest);
            }
        }
        s.insert(
            session,
            PeerSession {
                counter: 0,
                used: now,
            },
        );
        HelloRes {
            session,
            mac: hello_mac(&self.key, &a.nonce, &session),
        }
    }

    /// Whether a sealed call is authentic: a live session, a counter above
    /// the last, the MAC right.
    fn admit(&self, s: &Sealed, proc_: u32) -> bool {
        if !same_mac(
            &s.mac,
            &call_mac(&self.key, &s.session, s.counter, proc_, &s.body),
        ) {
            return false;
        }
        let now = self.now();
        let mut m = lock(&self.sessions);
        match m.get_mut(&s.session) {
            Some(p) if s.counter > p.counter => {
                p.counter = s.counter;
                p.used = now;
                true
            }
            _ => false,
        }
    }

    async fn dispatch(self: &Arc<Self>, proc_: u32, body: Bytes) -> Outcome {
        let mut d = xdr::Decoder::new(body);
        match proc_ {
            PEER_PREPARE => self.prepare(PrepareArgs::unpack(&mut d).map_err(garbage)?),
            PEER_TRANSFER => self.transfer(TransferArgs::unpack(&mut d).map_err(garbage)?),
            PEER_COMMIT => {
                self.commit(MigrationId::unpack(&mut d).map_err(garbage)?)
                    .await
            }
            _ => self.abort(MigrationId::unpack(&mut d).map_err(garbage)?),
        }
    }

    /// Goes back to what `export` was before a migration that did not
    /// commit.
    fn restore(&self, export: u16) {
        let before = lock(&self.before).remove(&export).flatten();
        self.srv.away.set(export, before);
    }

    /// Drops migrations whose source went quiet.
    pub(super) fn expire(&self) {
        let gone = lock(&self.incoming).expire(self.now());
        for e in gone {
            warn!(
                export = e,
                "a migration to here was dropped: its source went quiet"
            );
            self.restore(e);
        }
    }

    fn prepare(self: &Arc<Self>, a: PrepareArgs) -> Outcome {
        self.expire();
        let path = String::from_utf8_lossy(&a.export_path).into_owned();
        let exports = self.srv.exports();
        let e = exports.iter().find(|e| e.path == path).ok_or_else(|| {
            refused(format!(
                "no export {path} here: configure it (served_by = the source) first"
            ))
        })?;
        if u32::from(e.id) != a.export_id {
            return Err(refused(format!(
                "export {path} has id {} here and {} at the source: the filehandles would not \
                 match (give both the same id)",
                e.id, a.export_id
            )));
        }
        if e.vfs.root_identity() != a.root_identity {
            return Err(refused(format!(
                "export {path} is not the same directory here (its root's identity differs): \
                 both servers must see the same files"
            )));
        }
        let lease = self.srv.cfg.lease.as_secs();
        if lease < u64::from(a.lease_secs) {
            return Err(refused(format!(
                "this server's lease ({lease} s) is shorter than the source's ({} s)",
                a.lease_secs
            )));
        }
        let now = self.now();
        match self.srv.away.get(e.id) {
            Some(Away::Elsewhere(_)) => {
                lock(&self.incoming)
                    .prepare(a.migration, e.id, now)
                    .map_err(incoming_error)?;
                lock(&self.before)
                    .entry(e.id)
                    .or_insert_with(|| self.srv.away.get(e.id));
                self.srv.away.set(e.id, Some(Away::Arriving));
                let me = self.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(INCOMING_TIMEOUT + std::time::Duration::from_secs(1)).await;
                    me.expire();
                });
                info!(export = %path, source = %String::from_utf8_lossy(&a.source), "a migration of this export is arriving");
                Ok(Bytes::new())
            }
            Some(Away::Arriving) => lock(&self.incoming)
                .prepare(a.migration, e.id, now)
                .map(|_| Bytes::new())
                .map_err(incoming_error),
            Some(Away::Leaving | Away::Uncertain(_)) => Err(refused(format!(
                "export {path} is itself being moved away from here"
            ))),
            None => Err(refused(format!(
                "export {path} is served here already: a destination takes an export it does \
                 not serve (configured with served_by, or moved away before)"
            ))),
        }
    }

    fn transfer(&self, a: TransferArgs) -> Outcome {
        let export = lock(&self.incoming)
            .transfer(&a.migration, a.clients.clone(), self.now())
            .map_err(incoming_error)?;
        if let Err(why) = self.srv.state().check_import(export, &a.clients) {
            lock(&self.incoming).abort(&a.migration);
            self.restore(export);
            return Err(refused(format!("the state cannot be taken in: {why}")));
        }
        Ok(Bytes::new())
    }

    async fn commit(&self, a: MigrationId) -> Outcome {
        let (export, clients) = lock(&self.incoming)
            .commit(&a.migration, self.now())
            .map_err(incoming_error)?;
        let fail = |why: String| {
            self.restore(export);
            Err(refused(why))
        };
        let Some(e) = self.srv.export(export) else {
            return fail("the export went (a reload)".into());
        };
        if let Err(why) = self.srv.state().check_import(export, &clients) {
            return fail(format!("the state cannot be taken in: {why}"));
        }
        // The point of no return: once this is durable the export is
        // served here, after a restart too.
        let srv = self.srv.clone();
        let (path, id) = (e.path.clone(), hex(&a.migration));
        let recorded = off_thread(move || srv.away.record_arrived(&path, &id)).await;
        match recorded {
            Ok(Ok(())) => {}
            Ok(Err(err)) => return fail(format!("recording the arrival: {err}")),
            Err(_) => return fail("recording the arrival panicked".into()),
        }
        let imported = match self.srv.state().import_state(export, clients) {
            Ok(i) => i,
            Err(why) => {
                // Checked just before, under nobody else's changes (the
                // export is held off): a bug if it happens.
                tracing::error!(export = %e.path, "migration committed, but its state could not be taken in: {why}");
                state::migration::Imported::default()
            }
        };
        lock(&self.before).remove(&export);
        self.srv.away.set(export, None);
        let srv = self.srv.clone();
        let owners = imported.clients.clone();
        let _ = off_thread(move || {
            for (id, owner) in owners {
                if let Err(err) = srv.records.add(id, &owner) {
                    tracing::error!("client record of a migrated client: {err}");
                }
            }
        })
        .await;
        info!(
            export = %e.path,
            clients = imported.clients.len(),
            stateids = imported.states,
            "migration committed: this server serves the export now"
        );
        Ok(xdr::to_bytes(&(imported.states as u32)))
    }

    fn abort(&self, a: MigrationId) -> Outcome {
        let staged = lock(&self.incoming).abort(&a.migration);
        let committed = match staged {
            Some(export) => {
                self.restore(export);
                false
            }
            None => self.srv.away.arrived_by(&hex(&a.migration)),
        };
        Ok(xdr::to_bytes(&committed))
    }
}

fn incoming_error(e: IncomingError) -> (PeerStatus, String) {
    match e {
        IncomingError::Unknown => (PeerStatus::Unknown, "no such migration here".into()),
        IncomingError::Refused(why) => refused(why),
    }
}
