//! pNFS layouts in the tables (RFC 8881 §12.5): LAYOUTGET's grants and
//! their stateid (§12.5.3), returns of a range, a file system or
//! everything (§18.44), LAYOUTCOMMIT's check (§18.42), conflicts and
//! recalls (§12.5.5), and layouts lost with a recall unanswered or a
//! lease run out (§12.5.5.3, §12.7.3), which the driver must fence.

use super::*;
use crate::layouts::*;

impl Tables {
    /// The layout stateid `client` holds of `file`, if any.
    fn layout_of(&self, client: ClientId4, file: &FileKey) -> Option<[u8; 12]> {
        self.clients
            .get(&client)?
            .layouts_by_file
            .get(file)
            .copied()
    }

    fn layout_mut(
        &mut self,
        client: ClientId4,
        other: &[u8; 12],
    ) -> Option<(&mut u32, &mut LayoutState)> {
        let e = self.entry_mut(client, other).ok()?;
        match &mut e.kind {
            StateKind::Layout(l) => Some((&mut e.seqid, l)),
            _ => None,
        }
    }

    /// LAYOUTGET (§18.43.3) of `[offset, end)` of `file` in `iomode`
    /// (READ or RW) for `client`, presenting `sid`: an open, lock or
    /// delegation stateid of the file for its first layout, its layout
    /// stateid after (§12.5.3). Returns the layout stateid, its seqid
    /// advanced.
    #[allow(clippy::too_many_arguments)]
    pub fn layout_get(
        &mut self,
        client: ClientId4,
        sid: &StateId4,
        file: &FileKey,
        fh: &Bytes,
        iomode: LayoutIoMode4,
        offset: u64,
        end: u64,
    ) -> Result<StateId4, NfsStat4> {
        self.thawed(file)?;
        if self.no_grants.contains(&file.0) {
            return Err(NfsStat4::Nfs4errLayouttrylater);
        }
        if self.grace.active() {
            return Err(NfsStat4::Nfs4errGrace);
        }
        let (cid, e) = self.entry(&sid.other)?;
        if cid != client || &e.file != file {
            return Err(NfsStat4::Nfs4errBadStateid);
        }
        let other = match &e.kind {
            StateKind::Layout(l) => {
                // Several LAYOUTGETs may be in flight on one stateid
                // (§12.5.3): any seqid since the last return or recall
                // is good; one before it was sent before that return or
                // recall and would undo it.
                if sid.seqid > e.seqid {
                    return Err(NfsStat4::Nfs4errBadStateid);
                }
                if sid.seqid != 0 && sid.seqid < l.barrier {
                    return Err(NfsStat4::Nfs4errOldStateid);
                }
                sid.other
            }
            StateKind::Deleg { revoked: true, .. } => return Err(NfsStat4::Nfs4errDelegRevoked),
            _ => {
                check_seqid(sid.seqid, e.seqid)?;
                match self.layout_of(client, file) {
                    Some(o) => o,
                    None if self.layouts >= self.max_layouts => {
                        return Err(NfsStat4::Nfs4errLayouttrylater)
                    }
                    None => {
                        self.insert_state(
                            client,
                            StateEntry {
                                seqid: 0,
                                file: file.clone(),
                                kind: StateKind::Layout(Box::new(LayoutState {
                                    fh: fh.clone(),
                                    segs: Vec::new(),
                                    barrier: 0,
                                    recalled: None,
                                })),
                            },
                        )?
                        .other
                    }
                }
            }
        };
        let (seqid, l) = self
            .layout_mut(client, &other)
            .ok_or(NfsStat4::Nfs4errBadStateid)?;
        // No quiet period after a conflict, as delegations have: Linux's
        // client asks for a layout again and again rather than doing its
        // I/O through the metadata server meanwhile, so one would stall
        // the client that made the change; a recall settles each
        // conflict as it comes.
        let refusal = if l.recalled.is_some() {
            // §12.5.5.2: no new layout while the client has not answered
            // a recall of it.
            Some(NfsStat4::Nfs4errRecallconflict)
        } else if l.segs.len() >= MAX_SEGMENTS {
            Some(NfsStat4::Nfs4errLayouttrylater)
        } else {
            None
        };
        if let Some(why) = refusal {
            if l.segs.is_empty() {
                self.drop_state(client, &other);
            }
            return Err(why);
        }
        add_segment(
            &mut l.segs,
            Segment {
                iomode,
                offset,
                end,
            },
        );
        *seqid = next_seqid(*seqid);
        Ok(StateId4 {
            seqid: *seqid,
            other,
        })
    }

    /// LAYOUTRETURN of `[offset, end)` of `file` in modes `iomode` covers
    /// (§18.44.3), under the layout stateid `sid`. Returns the layout
    /// stateid if the client still holds some of the file's layout, none
    /// once it holds nothing (the stateid is then gone, §12.5.3).
    #[allow(clippy::too_many_arguments)]
    pub fn layout_return_file(
        &mut self,
        client: ClientId4,
        sid: &StateId4,
        file: &FileKey,
        iomode: LayoutIoMode4,
        offset: u64,
        end: u64,
    ) -> Result<Option<StateId4>, NfsStat4> {
        let (cid, e) = self.entry(&sid.other)?;
        if cid != client || &e.file != file || !matches!(e.kind, StateKind::Layout(_)) {
            return Err(NfsStat4::Nfs4errBadStateid);
        }
        check_seqid(sid.seqid, e.seqid)?;
        let other = sid.other;
        let (seqid, l) = self
            .layout_mut(client, &other)
            .ok_or(NfsStat4::Nfs4errBadStateid)?;
        subtract(&mut l.segs, iomode, offset, end);
        *seqid = next_seqid(*seqid);
        l.barrier = *seqid;
        if l.recalled.is_some_and(|(mode, _)| l.recall_done(mode)) {
            l.recalled = None;
        }
        let sid = StateId4 {
            seqid: *seqid,
            other,
        };
        let (empty, recalled) = (l.segs.is_empty(), l.recalled.is_some());
        if !recalled {
            self.layout_recalls.remove(&other);
        }
        if empty {
            self.drop_state(client, &other);
            return Ok(None);
        }
        Ok(Some(sid))
    }

    /// LAYOUTRETURN4_FSID (of the export `export`) or LAYOUTRETURN4_ALL
    /// (`None`) in modes `iomode` covers: the client gives back every
    /// such layout (§18.44.3). Returns the files returned and whether
    /// each had been RW.
    pub fn layout_return_bulk(
        &mut self,
        client: ClientId4,
        export: Option<u16>,
        iomode: LayoutIoMode4,
    ) -> Returned {
        let Some(c) = self.clients.get(&client) else {
            return Returned::default();
        };
        let mine: Vec<(FileKey, [u8; 12])> = c
            .layouts_by_file
            .iter()
            .filter(|(f, _)| export.is_none_or(|x| f.0 == x))
            .map(|(f, o)| (f.clone(), *o))
            .collect();
        let mut out = Returned::default();
        for (file, other) in mine {
            let Some((seqid, l)) = self.layout_mut(client, &other) else {
                continue;
            };
            let rw = l.has_rw();
            if !subtract(&mut l.segs, iomode, 0, u64::MAX) {
                continue;
            }
            *seqid = next_seqid(*seqid);
            l.barrier = *seqid;
            if l.recalled.is_some_and(|(mode, _)| l.recall_done(mode)) {
                l.recalled = None;
            }
            let (empty, recalled) = (l.segs.is_empty(), l.recalled.is_some());
            if !recalled {
                self.layout_recalls.remove(&other);
            }
            if empty {
                self.drop_state(client, &other);
            }
            out.files.push((file, rw));
        }
        out
    }

    /// Whether `client` may LAYOUTCOMMIT `file` under `sid` (§18.42.3): a
    /// layout stateid of its own for the file, not newer than the
    /// server's, holding the file in RW mode (else NFS4ERR_BADIOMODE).
    pub fn layout_commit_check(
        &self,
        client: ClientId4,
        sid: &StateId4,
        file: &FileKey,
    ) -> Result<(), NfsStat4> {
        let (cid, e) = self.entry(&sid.other)?;
        if cid != client || &e.file != file {
            return Err(NfsStat4::Nfs4errBadStateid);
        }
        let StateKind::Layout(l) = &e.kind else {
            return Err(NfsStat4::Nfs4errBadStateid);
        };
        if sid.seqid > e.seqid {
            return Err(NfsStat4::Nfs4errBadStateid);
        }
        if !l.has_rw() {
            return Err(NfsStat4::Nfs4errBadiomode);
        }
        Ok(())
    }

    /// The layouts of `file` a change conflicts with (§12.5.5): every
    /// other client's (`reads`: a read through the metadata server,
    /// which only RW layouts conflict with; their holders may have data
    /// not yet committed). Those of expired clients go with their client;
    /// the others are marked recalled, their seqid advanced. Returns the
    /// recalls to send now (client, stateid, filehandle, mode) and
    /// whether any conflicting layout remains.
    pub fn layout_conflicts(
        &mut self,
        file: &FileKey,
        breaker: Option<ClientId4>,
        reads: bool,
        now: Duration,
    ) -> (Vec<(ClientId4, RecallScope, LayoutIoMode4)>, bool) {
        let Some(f) = self.files.get(file) else {
            return (Vec::new(), false);
        };
        let ids: Vec<[u8; 12]> = f.layouts.iter().copied().collect();
        let mode = if reads {
            LayoutIoMode4::Rw
        } else {
            LayoutIoMode4::Any
        };
        let mut recalls = Vec::new();
        let mut pending = false;
        for o in ids {
            let Ok((cid, e)) = self.entry(&o) else {
                continue;
            };
            let StateKind::Layout(l) = &e.kind else {
                continue;
            };
            if Some(cid) == breaker || l.recall_done(mode) {
                continue;
            }
            if self.client_expired(cid, now) {
                self.purge_client(cid);
                continue;
            }
            pending = true;
            if let Some(r) = self.mark_layout_recalled(cid, o, mode, now) {
                recalls.push((cid, r, mode));
            }
        }
        if pending {
            self.recent_conflicts.insert(file.clone(), now);
        }
        (recalls, pending)
    }

    /// Marks the layout `o` of `cid` recalled in `mode` (once): its
    /// seqid advances and the recall carries it (§12.5.5.2.1).
    fn mark_layout_recalled(
        &mut self,
        cid: ClientId4,
        o: [u8; 12],
        mode: LayoutIoMode4,
        now: Duration,
    ) -> Option<RecallScope> {
        let (seqid, l) = self.layout_mut(cid, &o)?;
        if l.recalled.is_some() {
            return None;
        }
        l.recalled = Some((mode, now));
        *seqid = next_seqid(*seqid);
        l.barrier = *seqid;
        let r = RecallScope::File(
            StateId4 {
                seqid: *seqid,
                other: o,
            },
            l.fh.clone(),
        );
        self.layout_recalls.insert(o, cid);
        Some(r)
    }

    /// Recalls every layout on the export `export` (every export if
    /// `None`): its data servers changed. One recall per client, of the
    /// file system or of everything (LAYOUTRECALL4_FSID, _ALL); each of
    /// its layouts is marked recalled.
    pub fn recall_all_layouts(
        &mut self,
        export: Option<u16>,
        now: Duration,
    ) -> Vec<(ClientId4, RecallScope, LayoutIoMode4)> {
        let mut out = Vec::new();
        let holders: Vec<ClientId4> = self.layout_clients.iter().copied().collect();
        for cid in holders {
            let Some(c) = self.clients.get(&cid) else {
                continue;
            };
            let mine: Vec<[u8; 12]> = c
                .layouts_by_file
                .iter()
                .filter(|(f, _)| export.is_none_or(|x| f.0 == x))
                .map(|(_, o)| *o)
                .collect();
            let mut any = false;
            for o in mine {
                any |= self
                    .mark_layout_recalled(cid, o, LayoutIoMode4::Any, now)
                    .is_some();
            }
            if any {
                let scope = match export {
                    Some(x) => RecallScope::Fsid(x),
                    None => RecallScope::All,
                };
                out.push((cid, scope, LayoutIoMode4::Any));
            }
        }
        out
    }

    /// Ends the layouts whose recall went unanswered for a lease
    /// (§12.5.5.3) and those of clients whose lease ran out (§12.7.3: a
    /// layout is not kept in courtesy, its holder may be writing without
    /// the server knowing); each is noted in `layouts_lost` for the driver
    /// to fence. `undeliverable` ends one whose recall could not be sent.
    pub fn reap_layouts(&mut self, now: Duration) {
        let lease = self.lease;
        let overdue: Vec<([u8; 12], ClientId4)> = self
            .layout_recalls
            .iter()
            .filter(|(o, cid)| {
                self.entry(o).is_ok_and(|(_, e)| {
                    matches!(&e.kind, StateKind::Layout(l)
                        if l.recalled.is_some_and(|(_, at)| now > at + lease))
                }) || !self.clients.contains_key(cid)
            })
            .map(|(o, c)| (*o, *c))
            .collect();
        for (o, cid) in overdue {
            tracing::info!(stateid = ?o, "layout not returned within a lease of its recall: revoked and fenced");
            self.lose_layout(cid, &o);
        }
        let expired: Vec<ClientId4> = self
            .layout_clients
            .iter()
            .copied()
            .filter(|c| self.client_expired(*c, now))
            .collect();
        for cid in expired {
            let mine: Vec<[u8; 12]> = self
                .clients
                .get(&cid)
                .map(|c| c.layouts_by_file.values().copied().collect())
                .unwrap_or_default();
            for o in mine {
                self.lose_layout(cid, &o);
            }
        }
    }

    /// Ends a layout its client did not return: noted as lost (to fence)
    /// if it held anything.
    pub fn lose_layout(&mut self, cid: ClientId4, o: &[u8; 12]) {
        self.layout_recalls.remove(o);
        if let Ok((_, e)) = self.entry(o) {
            if let StateKind::Layout(l) = &e.kind {
                if !l.segs.is_empty() {
                    self.layouts_lost.push(LayoutLost {
                        file: e.file.clone(),
                        client: cid,
                        rw: l.has_rw(),
                    });
                }
            }
        }
        self.drop_state(cid, o);
    }

    /// Takes a layout stateid's bookkeeping off its file and client
    /// (`drop_state` and `purge_client`).
    pub(crate) fn unlist_layout(&mut self, cid: ClientId4, file: &FileKey, other: &[u8; 12]) {
        if let Some(f) = self.files.get_mut(file) {
            if f.layouts.remove(other) {
                self.layouts -= 1;
            }
        }
        self.layout_recalls.remove(other);
        if let Some(c) = self.clients.get_mut(&cid) {
            if c.layouts_by_file.get(file) == Some(other) {
                c.layouts_by_file.remove(file);
            }
            if c.layouts_by_file.is_empty() {
                self.layout_clients.remove(&cid);
            }
        }
    }

    /// Clients holding layouts, for CB_RECALL_ANY when layouts are many:
    /// each asked to keep half of what it holds (§20.6).
    pub fn layout_recall_any(&mut self, now: Duration) -> Vec<(ClientId4, u32)> {
        if self.layouts * 10 < self.max_layouts * 9 {
            return Vec::new();
        }
        if self
            .last_layout_recall_any
            .is_some_and(|t| now < t + RECALL_ANY_EVERY)
        {
            return Vec::new();
        }
        self.last_layout_recall_any = Some(now);
        self.layout_clients
            .iter()
            .filter_map(|c| self.clients.get(c))
            .map(|c| (c.id, (c.layouts_by_file.len() / 2) as u32))
            .collect()
    }
}
