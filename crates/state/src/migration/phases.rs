//! The phases of a move (RFC 8881 §11.14), as machines that take what
//! happened and the time and return what to do; the server carries the
//! actions out (`server::migrate`). Tested on a manual clock.
//!
//! The source ([`Outgoing`]): PREPARE the destination (it checks it
//! serves the same files and will take the export); stop granting
//! delegations and layouts on the export and recall those held (their
//! holders may need to OPEN and LOCK to give them back, so nothing else
//! is held up yet); once none is held, freeze the export (no state
//! changes on it; reads and writes go on), snapshot the state and
//! TRANSFER it; COMMIT. The destination's commit is the point of no
//! return: before it, any failure thaws the export and the source goes
//! on serving with nothing lost; after it, the export is the
//! destination's. When COMMIT gets no answer the source cannot know
//! which side of that point it is on: it keeps the export frozen (clients
//! are told NFS4ERR_DELAY, never two servers' answers) and asks the
//! destination to ABORT until it answers whether it committed.
//!
//! The destination ([`Incoming`]): a PREPAREd export is "arriving" (its
//! clients are told NFS4ERR_DELAY) until the COMMIT, an ABORT, or
//! [`INCOMING_TIMEOUT`] without a call, after which what was staged is
//! dropped.

use std::collections::HashMap;
use std::time::Duration;

use proto::migrate::PeerClient;

/// How long a destination keeps a prepared or staged migration without
/// a call from its source.
pub const INCOMING_TIMEOUT: Duration = Duration::from_secs(60);
/// Migrations a destination stages at once.
pub const MAX_INCOMING: usize = 8;
/// How often the source looks whether the export's delegations and
/// layouts are back.
pub const RECALL_POLL: Duration = Duration::from_millis(100);
/// How often the source asks an unanswering destination again after a
/// COMMIT it got no answer to.
pub const ABORT_RETRY: Duration = Duration::from_secs(2);

/// Where a move is, on the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// PREPARE sent.
    Prepare,
    /// No new delegations or layouts; waiting for those held to come
    /// back.
    Recall,
    /// TRANSFER sent.
    Transfer,
    /// COMMIT sent.
    Commit,
    /// COMMIT went unanswered: asking the destination whether it
    /// committed (ABORT), frozen meanwhile.
    Uncertain,
    Done,
    Failed,
}

/// What happened, for the source's machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutEvent {
    /// The destination accepted PREPARE.
    Prepared,
    /// Delegations and layouts of the export still held.
    Recalled { left: usize },
    /// The snapshot was refused (state the transfer cannot carry).
    SnapshotRefused(String),
    /// The destination accepted TRANSFER.
    Staged,
    /// The destination committed.
    Committed,
    /// ABORT answered: whether the destination had committed.
    AbortAnswered { committed: bool },
    /// A call failed: refused, unreachable, not authentic.
    PeerFailed(String),
    /// Time passed.
    Tick,
}

/// What the source must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutAction {
    SendPrepare,
    /// Grant no more delegations or layouts on the export, and recall
    /// those held.
    StopGrants,
    /// Stop state changes on the export.
    Freeze,
    /// Count what is still held (waiting `RECALL_POLL` first if some
    /// is).
    CheckRecalls,
    /// Snapshot the export's state and send TRANSFER.
    SendTransfer,
    SendCommit,
    /// Ask the destination to drop the migration (and whether it had
    /// committed), after the delay given.
    SendAbort(Duration),
    /// The export is the destination's: answer NFS4ERR_MOVED for it and
    /// forget its state.
    Moved,
    /// Serve the export as before (grants again, state changes again).
    Thaw,
    /// The move is over: moved, or why not.
    Finish(Result<(), String>),
}

/// A move of one export, on the source.
#[derive(Debug)]
pub struct Outgoing {
    pub phase: Phase,
    pub started: Duration,
    /// When grants stopped (the recalls went out).
    pub recalling: Option<Duration>,
    /// When the export was frozen, and thawed or moved.
    pub frozen: Option<Duration>,
    pub unfrozen: Option<Duration>,
    /// The most to wait for delegations and layouts.
    recall_limit: Duration,
    /// Why COMMIT went unanswered, kept for the report.
    uncertain: Option<String>,
}

impl Outgoing {
    /// A move starting at `now`, waiting at most `recall_limit` for the
    /// export's delegations and layouts; returns the first actions.
    pub fn start(now: Duration, recall_limit: Duration) -> (Outgoing, Vec<OutAction>) {
        (
            Outgoing {
                phase: Phase::Prepare,
                started: now,
                recalling: None,
                frozen: None,
                unfrozen: None,
                recall_limit,
                uncertain: None,
            },
            vec![OutAction::SendPrepare],
        )
    }

    /// How long clients were held off (frozen), so far or in all.
    pub fn frozen_for(&self, now: Duration) -> Duration {
        match self.frozen {
            Some(f) => self.unfrozen.unwrap_or(now).saturating_sub(f),
            None => Duration::ZERO,
        }
    }

    fn fail(&mut self, now: Duration, why: String) -> Vec<OutAction> {
        let mut a = Vec::new();
        if self.recalling.is_some() {
            a.push(OutAction::Thaw);
            a.push(OutAction::SendAbort(Duration::ZERO));
            if self.frozen.is_some() {
                self.unfrozen = Some(now);
            }
        }
        self.phase = Phase::Failed;
        a.push(OutAction::Finish(Err(why)));
        a
    }

    /// What to do after `ev` at `now`.
    pub fn on(&mut self, ev: OutEvent, now: Duration) -> Vec<OutAction> {
        use OutEvent as E;
        match (self.phase, ev) {
            (Phase::Done | Phase::Failed, _) => Vec::new(),
            (_, E::Tick) => Vec::new(),
            (Phase::Prepare, E::Prepared) => {
                self.phase = Phase::Recall;
                self.recalling = Some(now);
                vec![OutAction::StopGrants, OutAction::CheckRecalls]
            }
            (Phase::Recall, E::Recalled { left: 0 }) => {
                self.phase = Phase::Transfer;
                self.frozen = Some(now);
                vec![OutAction::Freeze, OutAction::SendTransfer]
            }
            (Phase::Recall, E::Recalled { left }) => {
                let since = self.recalling.unwrap_or(now);
                if now.saturating_sub(since) >= self.recall_limit {
                    self.fail(
                        now,
                        format!(
                            "{left} delegations or layouts of the export were not returned within {:?}",
                            self.recall_limit
                        ),
                    )
                } else {
                    vec![OutAction::CheckRecalls]
                }
            }
            (Phase::Transfer, E::SnapshotRefused(why)) => self.fail(now, why),
            (Phase::Transfer, E::Staged) => {
                self.phase = Phase::Commit;
                vec![OutAction::SendCommit]
            }
            (Phase::Commit, E::Committed)
            | (Phase::Uncertain, E::AbortAnswered { committed: true }) => {
                self.phase = Phase::Done;
                self.unfrozen = Some(now);
                vec![OutAction::Moved, OutAction::Finish(Ok(()))]
            }
            (Phase::Commit, E::PeerFailed(why)) => {
                self.phase = Phase::Uncertain;
                self.uncertain = Some(why);
                vec![OutAction::SendAbort(Duration::ZERO)]
            }
            (Phase::Uncertain, E::AbortAnswered { committed: false }) => {
                self.phase = Phase::Failed;
                self.unfrozen = Some(now);
                let why = self.uncertain.take().unwrap_or_default();
                vec![
                    OutAction::Thaw,
                    OutAction::Finish(Err(format!(
                        "COMMIT failed ({why}); the destination had not committed, so the export stays here"
                    ))),
                ]
            }
            (Phase::Uncertain, E::PeerFailed(_)) => vec![OutAction::SendAbort(ABORT_RETRY)],
            (_, E::PeerFailed(why)) => self.fail(now, why),
            // Anything else is out of place: a bug in the driver, not
            // something to act on.
            _ => Vec::new(),
        }
    }
}

/// A migration staged on the destination.
#[derive(Debug)]
struct Staging {
    export: u16,
    /// The state TRANSFER carried, once it came.
    clients: Option<Vec<PeerClient>>,
    /// Dropped if no call comes before then.
    deadline: Duration,
}

/// Why the destination refused a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IncomingError {
    /// No migration of that id is staged.
    Unknown,
    /// Refused, with the reason.
    Refused(String),
}

/// The migrations a destination has staged (at most [`MAX_INCOMING`]).
#[derive(Debug, Default)]
pub struct Incoming {
    staged: HashMap<[u8; 16], Staging>,
}

impl Incoming {
    /// PREPARE of `export` under `id`: one migration per export at once.
    pub fn prepare(
        &mut self,
        id: [u8; 16],
        export: u16,
        now: Duration,
    ) -> Result<(), IncomingError> {
        self.expire(now);
        if let Some(s) = self.staged.get_mut(&id) {
            // A retransmission.
            if s.export == export {
                s.deadline = now + INCOMING_TIMEOUT;
                return Ok(());
            }
            return Err(IncomingError::Refused("migration id reused".into()));
        }
        if self.staged.values().any(|s| s.export == export) {
            return Err(IncomingError::Refused(
                "a migration of this export is already arriving".into(),
            ));
        }
        if self.staged.len() >= MAX_INCOMING {
            return Err(IncomingError::Refused(format!(
                "{MAX_INCOMING} migrations already arriving"
            )));
        }
        self.staged.insert(
            id,
            Staging {
                export,
                clients: None,
                deadline: now + INCOMING_TIMEOUT,
            },
        );
        Ok(())
    }

    /// TRANSFER under `id`: the export it is for.
    pub fn transfer(
        &mut self,
        id: &[u8; 16],
        clients: Vec<PeerClient>,
        now: Duration,
    ) -> Result<u16, IncomingError> {
        self.expire(now);
        let s = self.staged.get_mut(id).ok_or(IncomingError::Unknown)?;
        s.clients = Some(clients);
        s.deadline = now + INCOMING_TIMEOUT;
        Ok(s.export)
    }

    /// COMMIT under `id`: the export and its state, now the caller's to
    /// take in.
    pub fn commit(
        &mut self,
        id: &[u8; 16],
        now: Duration,
    ) -> Result<(u16, Vec<PeerClient>), IncomingError> {
        self.expire(now);
        match self.staged.get(id) {
            None => Err(IncomingError::Unknown),
            Some(Staging { clients: None, .. }) => {
                Err(IncomingError::Refused("COMMIT before TRANSFER".into()))
            }
            Some(_) => {
                let s = self.staged.remove(id).ok_or(IncomingError::Unknown)?;
                Ok((s.export, s.clients.unwrap_or_default()))
            }
        }
    }

    /// ABORT under `id`: the export it was for, if it was staged.
    pub fn abort(&mut self, id: &[u8; 16]) -> Option<u16> {
        self.staged.remove(id).map(|s| s.export)
    }

    /// Drops what waited past its deadline; returns their exports.
    pub fn expire(&mut self, now: Duration) -> Vec<u16> {
        let gone: Vec<[u8; 16]> = self
            .staged
            .iter()
            .filter(|(_, s)| now >= s.deadline)
            .map(|(id, _)| *id)
            .collect();
        gone.iter()
            .filter_map(|id| self.staged.remove(id))
            .map(|s| s.export)
            .collect()
    }

    /// Whether a migration of `export` is arriving.
    pub fn arriving(&self, export: u16) -> bool {
        self.staged.values().any(|s| s.export == export)
    }

    pub fn is_empty(&self) -> bool {
        self.staged.is_empty()
    }
}
