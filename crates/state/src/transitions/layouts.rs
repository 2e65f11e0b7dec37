//! pNFS layouts (RFC 8881 §12.5, §18.42-§18.44, §20.3): LAYOUTGET,
//! LAYOUTRETURN, LAYOUTCOMMIT's check, the recalls a conflicting change
//! sends, CB_RECALL_ANY for layouts, and layouts lost (driver hook
//! [`State::on_layouts_lost`]).

use super::*;
use crate::layouts::*;

impl State {
    /// Sets what to call with the layouts that ended without being
    /// returned (once): the driver fences their files (RFC 8435 §2.2).
    pub fn on_layouts_lost(&self, f: LayoutsLost) {
        let _ = self.layouts_lost.set(f);
    }

    /// Holds at most `n` layout stateids at once.
    pub fn with_max_layouts(self, n: usize) -> State {
        self.tables().max_layouts = n.max(1);
        self
    }

    /// Whether any layout is held (no conflict to look for if not).
    pub fn layouts_outstanding(&self) -> bool {
        self.layouts_live.load(Ordering::Relaxed) > 0
    }

    /// LAYOUTGET (RFC 8881 §18.43.3) of `[offset, end)` of `file` in
    /// `iomode` ([`Tables::layout_get`]).
    #[allow(clippy::too_many_arguments)]
    pub fn layout_get(
        &self,
        client: ClientId4,
        sid: &StateId4,
        file: &FileKey,
        fh: &Bytes,
        iomode: LayoutIoMode4,
        offset: u64,
        end: u64,
    ) -> Result<StateId4, NfsStat4> {
        self.with(|t, _| t.layout_get(client, sid, file, fh, iomode, offset, end))
    }

    /// LAYOUTRETURN4_FILE (§18.44.3): the layout stateid if some of the
    /// file's layout is still held.
    pub fn layout_return_file(
        &self,
        client: ClientId4,
        sid: &StateId4,
        file: &FileKey,
        iomode: LayoutIoMode4,
        offset: u64,
        end: u64,
    ) -> Result<Option<StateId4>, NfsStat4> {
        self.with(|t, _| t.layout_return_file(client, sid, file, iomode, offset, end))
    }

    /// LAYOUTRETURN4_FSID (`Some(export)`) or LAYOUTRETURN4_ALL (`None`).
    pub fn layout_return_bulk(
        &self,
        client: ClientId4,
        export: Option<u16>,
        iomode: LayoutIoMode4,
    ) -> Returned {
        self.with(|t, _| t.layout_return_bulk(client, export, iomode))
    }

    /// Whether `sid` is a layout stateid of `client` for `file`, not newer
    /// than the server's (LAYOUTERROR, LAYOUTSTATS: RFC 7862 §15.6.3,
    /// §15.7.3).
    pub fn layout_held(
        &self,
        client: ClientId4,
        sid: &StateId4,
        file: &FileKey,
    ) -> Result<(), NfsStat4> {
        match self.tables().layout_commit_check(client, sid, file) {
            Err(NfsStat4::Nfs4errBadiomode) => Ok(()),
            r => r,
        }
    }

    /// Whether `client` may LAYOUTCOMMIT `file` under `sid` (§18.42.3).
    pub fn layout_commit_check(
        &self,
        client: ClientId4,
        sid: &StateId4,
        file: &FileKey,
    ) -> Result<(), NfsStat4> {
        self.tables().layout_commit_check(client, sid, file)
    }

    /// The layouts of `file` a change by `breaker` (a client; `None` for
    /// NFSv3, NLM or the server itself) conflicts with (§12.5.5; `reads`:
    /// a read, which RW layouts alone conflict with): the recalls to send,
    /// and whether the change must wait. A holder with no session to call
    /// back on cannot be recalled: its layout is lost (fenced) at once.
    pub fn break_layouts(
        &self,
        file: &FileKey,
        breaker: Option<ClientId4>,
        reads: bool,
    ) -> LayoutBreaking {
        if !self.layouts_outstanding() {
            return LayoutBreaking::default();
        }
        self.with(|t, now| {
            let (found, pending) = t.layout_conflicts(file, breaker, reads, now);
            let (recalls, lost) = self.layout_recalls_of(t, found);
            let pending = if lost {
                t.layout_conflicts(file, breaker, reads, now).1
            } else {
                pending
            };
            LayoutBreaking { recalls, pending }
        })
    }

    /// Recalls every layout of the export `export` (all exports: `None`),
    /// whose data servers changed: one CB_LAYOUTRECALL of the file system
    /// (or of everything) per client.
    pub fn recall_all_layouts(&self, export: Option<u16>) -> Vec<LayoutRecall> {
        self.with(|t, now| {
            let found = t.recall_all_layouts(export, now);
            self.layout_recalls_of(t, found).0
        })
    }

    /// The CB_LAYOUTRECALLs of layouts found in conflict: a session of
    /// each holder to call back on. A holder with none loses its layouts
    /// of the recall's scope at once (the second value says some did).
    fn layout_recalls_of(
        &self,
        t: &mut Tables,
        found: Vec<(ClientId4, RecallScope, LayoutIoMode4)>,
    ) -> (Vec<LayoutRecall>, bool) {
        let sessions = self.sessions.read().unwrap_or_else(|p| p.into_inner());
        let mut recalls = Vec::new();
        let mut lost = false;
        for (client, scope, iomode) in found {
            match callable_session(t, &sessions, client) {
                Some(session) => recalls.push(LayoutRecall {
                    session,
                    client,
                    scope,
                    iomode,
                }),
                None => {
                    lost = true;
                    self.lose_scope(t, client, &scope);
                }
            }
        }
        (recalls, lost)
    }

    fn lose_scope(&self, t: &mut Tables, client: ClientId4, scope: &RecallScope) {
        let mine: Vec<[u8; 12]> = match (t.clients.get(&client), scope) {
            (None, _) => return,
            (Some(_), RecallScope::File(sid, _)) => vec![sid.other],
            (Some(c), RecallScope::Fsid(x)) => c
                .layouts_by_file
                .iter()
                .filter(|(f, _)| f.0 == *x)
                .map(|(_, o)| *o)
                .collect(),
            (Some(c), RecallScope::All) => c.layouts_by_file.values().copied().collect(),
        };
        for o in mine {
            t.lose_layout(client, &o);
        }
    }

    /// A CB_LAYOUTRECALL could not be delivered (or the client answered
    /// with an error other than NFS4ERR_NOMATCHING_LAYOUT): the layouts
    /// it recalled are lost, to be fenced.
    pub fn layout_recall_failed(&self, client: ClientId4, scope: &RecallScope) {
        self.with(|t, _| self.lose_scope(t, client, scope))
    }

    /// The client answered a CB_LAYOUTRECALL with
    /// NFS4ERR_NOMATCHING_LAYOUT (§20.3.3): it holds none of those
    /// layouts (it forgot them), so they are taken as returned.
    pub fn layout_recall_nomatch(&self, client: ClientId4, scope: &RecallScope) {
        self.with(|t, _| match scope {
            RecallScope::File(sid, _) => {
                let file = t.entry(&sid.other).ok().map(|(_, e)| e.file.clone());
                if let Some(file) = file {
                    let cur = StateId4 { seqid: 0, ..*sid };
                    let _ =
                        t.layout_return_file(client, &cur, &file, LayoutIoMode4::Any, 0, u64::MAX);
                }
            }
            RecallScope::Fsid(x) => {
                t.layout_return_bulk(client, Some(*x), LayoutIoMode4::Any);
            }
            RecallScope::All => {
                t.layout_return_bulk(client, None, LayoutIoMode4::Any);
            }
        })
    }

    /// CB_RECALL_ANYs for layouts to send now (§20.6): a session of each
    /// client holding layouts and how many it may keep, when layouts are
    /// near the most the server holds.
    pub fn layout_recall_any(&self) -> Vec<(Arc<Session>, u32)> {
        self.with(|t, now| {
            let targets = t.layout_recall_any(now);
            if targets.is_empty() {
                return Vec::new();
            }
            let sessions = self.sessions.read().unwrap_or_else(|p| p.into_inner());
            targets
                .into_iter()
                .filter_map(|(cid, keep)| Some((callable_session(t, &sessions, cid)?, keep)))
                .collect()
        })
    }

    /// The layouts `client` holds: (file, its filehandle, RW), for the
    /// driver (tests and `ferrite stat`).
    pub fn layouts_of(&self, client: ClientId4) -> Vec<(FileKey, Bytes, bool)> {
        let t = self.tables();
        let Some(c) = t.clients.get(&client) else {
            return Vec::new();
        };
        c.layouts_by_file
            .values()
            .filter_map(|o| match &c.states.get(o)?.kind {
                stateid::StateKind::Layout(l) => {
                    Some((c.states.get(o)?.file.clone(), l.fh.clone(), l.has_rw()))
                }
                _ => None,
            })
            .collect()
    }

    /// Whether anyone holds a layout of `file` in RW mode.
    pub fn layout_writers(&self, file: &FileKey) -> bool {
        if !self.layouts_outstanding() {
            return false;
        }
        let t = self.tables();
        t.files.get(file).is_some_and(|f| {
            f.layouts.iter().any(|o| {
                t.entry(o).is_ok_and(
                    |(_, e)| matches!(&e.kind, stateid::StateKind::Layout(l) if l.has_rw()),
                )
            })
        })
    }
}
