//! Directory delegations in the tables (RFC 8881 §10.9, §18.39): grants,
//! the changes that conflict with them, and the notifications queued for
//! their holders (§20.4).

use super::*;

impl Tables {
    /// Grants `client` a delegation of the directory `dir` (RFC 8881
    /// §10.9, GET_DIR_DELEGATION), whose filehandle as the client knows it
    /// is `fh`, with the notifications `watch` says; refused (with why) in
    /// the grace period, when it holds one of it already, the server holds
    /// its most, or the directory was in a conflict lately.
    pub fn grant_dir_deleg(
        &mut self,
        client: ClientId4,
        dir: &FileKey,
        fh: Bytes,
        watch: DirWatch,
        now: Duration,
    ) -> Result<StateId4, WhyNoDelegation4> {
        let asker = (client, Bytes::new());
        if let Some(why) = self.deleg_refusal(&asker, dir, false, false, now) {
            return Err(why);
        }
        self.insert_state(
            client,
            StateEntry {
                seqid: 1,
                file: dir.clone(),
                kind: StateKind::Deleg {
                    write: false,
                    seen: None,
                    asking: false,
                    dir: Some(Box::new(watch)),
                    owner: Bytes::new(),
                    fh,
                    recalled: None,
                    revoked: false,
                    times: None,
                },
            },
        )
        .map_err(|_| WhyNoDelegation4::Wnd4Resource)
    }

    /// The directory delegations of `dir` a change of `kind` by `client`
    /// conflicts with (§10.9.1): those of other clients that did not ask to
    /// be notified of it. They are recalled like file delegations
    /// ([`Tables::deleg_conflicts`]); returns the recalls to send and
    /// whether any remains.
    pub fn dir_conflicts(
        &mut self,
        dir: &FileKey,
        client: ClientId4,
        kind: NotifyType4,
        now: Duration,
    ) -> (Vec<(ClientId4, StateId4, Bytes)>, bool) {
        let Some(f) = self.files.get(dir) else {
            return (Vec::new(), false);
        };
        let ids: Vec<[u8; 12]> = f.delegs.iter().copied().collect();
        self.recall_conflicting(dir, ids, now, |cid, e| {
            // One being recalled is told nothing more: it conflicts.
            matches!(&e.kind, StateKind::Deleg { dir: Some(w), recalled, .. }
                if cid != client && (!w.wants(kind) || recalled.is_some()))
        })
    }

    /// Queues a notification of `kind` (made by `note` for each holder's
    /// watch) for the directory delegations of `dir` held by clients other
    /// than `client` that asked for it (§20.4). Returns those whose sender
    /// must be started (their client and stateid's `other`), and the
    /// recalls to send of those whose queue is full.
    pub fn dir_notify(
        &mut self,
        dir: &FileKey,
        client: ClientId4,
        kind: NotifyType4,
        note: &dyn Fn(&DirWatch) -> Notify4,
        now: Duration,
    ) -> DirNotified {
        let mut out = DirNotified::default();
        let Some(f) = self.files.get(dir) else {
            return out;
        };
        let ids: Vec<[u8; 12]> = f.delegs.iter().copied().collect();
        for o in ids {
            let Some(cid) = client_of(self.epoch, &o).filter(|c| *c != client) else {
                continue;
            };
            let Ok(e) = self.entry_mut(cid, &o) else {
                continue;
            };
            let StateKind::Deleg {
                dir: Some(w),
                recalled: None,
                ..
            } = &mut e.kind
            else {
                continue;
            };
            if !w.wants(kind) {
                continue;
            }
            // Bounded: a holder whose notifications pile up has its
            // delegation recalled instead.
            if w.queue.len() >= MAX_QUEUED_NOTES {
                out.recalls.extend(self.mark_recalled(cid, o, now));
                continue;
            }
            w.queue.push(note(w));
            if !w.sending {
                w.sending = true;
                out.start.push((cid, o));
            }
        }
        out
    }

    /// The notifications queued for the directory delegation `other`, for
    /// its sender, oldest first and as many as `budget` bytes of XDR hold
    /// (one at least), with the delegation's stateid and filehandle; none
    /// (and the sender stops) once the queue is empty or the delegation
    /// gone.
    pub fn take_dir_notes(
        &mut self,
        other: &[u8; 12],
        budget: usize,
    ) -> Option<(StateId4, Bytes, Vec<Notify4>)> {
        let cid = client_of(self.epoch, other)?;
        let e = self.entry_mut(cid, other).ok()?;
        let seqid = e.seqid;
        let StateKind::Deleg {
            dir: Some(w),
            fh,
            revoked,
            ..
        } = &mut e.kind
        else {
            return None;
        };
        if w.queue.is_empty() || *revoked {
            w.sending = false;
            w.queue.clear();
            return None;
        }
        let mut used = 0;
        let n = w
            .queue
            .iter()
            .take_while(|n| {
                // bitmap4, then the opaque values.
                used += 4 + 4 * n.mask.0.len() + 4 + n.values.len().next_multiple_of(4);
                used <= budget
            })
            .count()
            .max(1);
        let notes: Vec<Notify4> = w.queue.drain(..n).collect();
        Some((
            StateId4 {
                seqid,
                other: *other,
            },
            fh.clone(),
            notes,
        ))
    }

    /// [`crate::State::dir_delegated`].
    pub fn dir_delegated(&self, dir: &FileKey) -> bool {
        self.files.get(dir).is_some_and(|f| {
            f.delegs.iter().any(|o| {
                self.entry(o)
                    .is_ok_and(|(_, e)| matches!(&e.kind, StateKind::Deleg { dir: Some(_), .. }))
            })
        })
    }

    /// [`crate::State::dir_watched`].
    pub fn dir_watched(&self, dir: &FileKey, client: ClientId4, kind: NotifyType4) -> bool {
        self.files.get(dir).is_some_and(|f| {
            f.delegs.iter().any(|o| {
                self.entry(o).is_ok_and(|(cid, e)| {
                    cid != client
                        && matches!(&e.kind, StateKind::Deleg { dir: Some(w), .. } if w.wants(kind))
                })
            })
        })
    }

    /// The attribute-change delay of the directory delegation `other`.
    pub fn dir_attr_delay(&self, other: &[u8; 12]) -> Duration {
        match self.entry(other) {
            Ok((_, e)) => match &e.kind {
                StateKind::Deleg { dir: Some(w), .. } => w.attr_delay,
                _ => Duration::ZERO,
            },
            Err(_) => Duration::ZERO,
        }
    }
}
