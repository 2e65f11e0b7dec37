//! A worker's nhfsstone operations: one drawn from the mix, paced by the
//! open-loop schedule with `--rate`.

use std::time::Instant;

use super::mix::MixOp;
use super::schedule::Schedule;
use super::worker::{Held, Worker};
use crate::fs::OpenMode;
use crate::record::Phase;
use crate::{Error, Result};

impl Worker {
    /// With `--rate`: waits until this worker's next request of the
    /// current period ([`Schedule`]) falls due. When its response time
    /// counts from, or none: no request this time (the runner has moved
    /// on to another period or ended the run, or no more of this
    /// worker's requests fall due in this one).
    async fn pace(&mut self, held: &mut Held, phase: Phase) -> Option<Instant> {
        let mut rx = self.pace.clone();
        let period = (*rx.borrow_and_update())?;
        if period.phase != phase {
            // This unit's phase is the one before: the runner has just
            // moved on (it announces the period, then the phase).
            tokio::task::yield_now().await;
            return None;
        }
        if held.sched.map(|s| s.period) != Some(period) {
            // A new period starts a new schedule: what the last one still
            // owed is not sent in this one.
            held.sched = Some(Schedule::new(
                period,
                self.p.rate,
                self.p.workers(),
                self.index(),
            ));
        }
        let Some(due) = held.sched.as_mut().and_then(Schedule::next_due) else {
            // This worker is done with the period: until the next one (or
            // the end of the run).
            let _ = rx.changed().await;
            return None;
        };
        if due <= Instant::now() {
            return Some(due);
        }
        tokio::select! {
            biased;
            () = tokio::time::sleep_until(due.into()) => Some(Instant::now()),
            // The period ended first (the runner moved on).
            _ = rx.changed() => None,
        }
    }

    /// nhfsstone: one operation drawn from the mix. With `--rate`, a
    /// request the worker is late for (the last reply came after it was
    /// due) counts its response time from when it was due, so a server
    /// that falls behind the offered load sees the backlog in its
    /// response times instead of a slower client; one the worker waits
    /// for counts from when it is sent (the timer's lateness is the
    /// client's).
    pub(super) async fn mix_op(&mut self, held: &mut Held, phase: Phase) -> Result<()> {
        let start = if self.p.rate > 0.0 {
            match self.pace(held, phase).await {
                Some(t) => t,
                None => return Ok(()),
            }
        } else {
            Instant::now()
        };
        let mut pick = self.rng.f64() * self.mix_total;
        let op = self
            .mix
            .iter()
            .find(|(_, w)| {
                let hit = pick < *w;
                pick -= *w;
                hit
            })
            .or(self.mix.last())
            .map_or(MixOp::Lookup, |(op, _)| *op);
        let f = self.rng.below(held.open.len() as u64) as usize;
        let io = self.p.io_size;
        let mut bytes = 0;
        match op {
            MixOp::Getattr => {
                self.fs.size(&held.open[f].node).await?;
            }
            MixOp::Setattr => self.fs.set_mode(&held.open[f].node, 0o644).await?,
            MixOp::Lookup => {
                let i = self.rng.below(self.p.files);
                let dir = self.set.dir_of(i);
                self.fs
                    .lookup(dir, &format!("f{i}"))
                    .await?
                    .ok_or_else(|| Error::Msg(format!("nhfsstone: f{i} is missing")))?;
            }
            MixOp::Readlink => {
                let link = held
                    .link
                    .as_ref()
                    .ok_or_else(|| Error::Msg("no link".into()))?;
                self.fs.readlink(link).await?;
            }
            MixOp::Read => bytes = self.fs.read(&held.open[f], 0, io).await?,
            MixOp::Write => {
                let data = self.data.slice(..io as usize);
                self.fs.write(&held.open[f], 0, data, true).await?;
                bytes = u64::from(io);
            }
            MixOp::Create => self.mix_create(held).await?,
            MixOp::Remove => match held.created.is_empty() {
                false => {
                    let name = held.created.remove(0);
                    self.fs.remove(&self.own_dir()?, &name).await?;
                }
                // Nothing of ours left to remove: make one instead.
                true => self.mix_create(held).await?,
            },
            MixOp::Readdir => {
                let (dir, _) = held
                    .listed
                    .as_ref()
                    .ok_or_else(|| Error::Msg("no directory".into()))?;
                self.fs.readdir(dir).await?;
            }
            MixOp::Fsstat => {
                self.fs.fsstat(&self.set.bench).await?;
            }
        }
        let took = start.elapsed();
        self.rec.unit(phase, "op", took, bytes);
        self.rec.latency(phase, op.name(), took);
        Ok(())
    }

    /// nhfsstone's CREATE: an empty file in the client's directory (OPEN
    /// with create, CLOSE), remembered for a later REMOVE.
    pub(super) async fn mix_create(&mut self, held: &mut Held) -> Result<()> {
        let name = format!("m{}-{}", self.index(), held.cursor);
        held.cursor += 1;
        let f = self
            .fs
            .open(&self.own_dir()?, &name, OpenMode::Create, self.index())
            .await?;
        held.created.push(name);
        self.fs.close(f).await
    }
}
