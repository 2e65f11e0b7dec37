//! Filebench's personalities: the flow operations of fileserver and
//! varmail over the files each worker owns.

use std::time::Instant;

use super::params::Workload;
use super::worker::{Held, Worker, APPEND};
use crate::fs::{Node, OpenFile, OpenMode};
use crate::record::Phase;
use crate::Result;

impl Worker {
    /// The name and directory of owned file `k` of this worker.
    fn owned(&self, k: usize) -> (String, Node) {
        let i = u64::from(self.index()) + k as u64 * u64::from(self.p.workers());
        (format!("f{i}"), self.set.dir_of(i).clone())
    }

    /// A random owned file that exists (`true`) or does not; none if
    /// there is no such file.
    fn pick_owned(&mut self, held: &Held, exists: bool) -> Option<usize> {
        let n = held.owned.len();
        let start = self.rng.below(n as u64) as usize;
        (0..n)
            .map(|d| (start + d) % n)
            .find(|&k| held.owned[k].is_some() == exists)
    }

    /// A whole-file size around the mean (`--file-size`): uniform in
    /// [mean/2, 3·mean/2].
    fn file_size(&mut self) -> u64 {
        let mean = self.p.file_size;
        mean / 2 + self.rng.below(mean + 1)
    }

    /// Writes `len` bytes to `f` from `off`, `--io-size` at a time.
    async fn write_span(&self, f: &OpenFile, off: u64, len: u64) -> Result<()> {
        let io = u64::from(self.p.io_size).min(self.data.len() as u64).max(1);
        let mut done = 0;
        while done < len {
            let n = (len - done).min(io) as usize;
            self.fs
                .write(f, off + done, self.data.slice(..n), false)
                .await?;
            done += n as u64;
        }
        Ok(())
    }

    /// Reads an open file of `size` whole, `--io-size` at a time.
    async fn read_span(&self, f: &OpenFile, size: u64) -> Result<u64> {
        let io = u64::from(self.p.io_size);
        let mut got = 0;
        while got < size {
            let n = self.fs.read(f, got, (size - got).min(io) as u32).await?;
            if n == 0 {
                break;
            }
            got += n;
        }
        Ok(got)
    }

    /// fileserver and varmail: the next operation of the flow, each
    /// recorded as a unit ("op") and under its own name.
    pub(super) async fn flow_op(&mut self, held: &mut Held, phase: Phase) -> Result<()> {
        let t = Instant::now();
        let varmail = self.p.workload == Workload::Varmail;
        let flow: &[&str] = if varmail {
            &["delete", "create-append-fsync", "read-append-fsync", "read"]
        } else {
            &["create-write", "append", "read", "delete", "stat"]
        };
        let what = flow[held.step % flow.len()];
        held.step += 1;
        let me = self.index();
        let mut bytes = 0;
        match what {
            "create-write" | "create-append-fsync" => {
                // A free name; with none, one deleted first.
                let k = match self.pick_owned(held, false) {
                    Some(k) => k,
                    None => {
                        let k = self.pick_owned(held, true).unwrap_or(0);
                        let (name, dir) = self.owned(k);
                        self.fs.remove(&dir, &name).await?;
                        held.owned[k] = None;
                        k
                    }
                };
                let (name, dir) = self.owned(k);
                let f = self.fs.open(&dir, &name, OpenMode::Create, me).await?;
                let len = if varmail {
                    APPEND as u64
                } else {
                    self.file_size()
                };
                self.write_span(&f, 0, len).await?;
                if varmail {
                    self.fs.commit(&f).await?;
                }
                self.fs.close(f).await?;
                held.owned[k] = Some(len);
                bytes = len;
            }
            "append" | "read-append-fsync" | "read" => {
                let Some(k) = self.pick_owned(held, true) else {
                    return Ok(());
                };
                let (name, dir) = self.owned(k);
                let size = held.owned[k].unwrap_or(0);
                let mode = if what == "read" {
                    OpenMode::Read
                } else {
                    OpenMode::ReadWrite
                };
                let f = self.fs.open(&dir, &name, mode, me).await?;
                if what != "append" {
                    bytes += self.read_span(&f, size).await?;
                }
                if what != "read" {
                    let n = APPEND as u64;
                    self.write_span(&f, size, n).await?;
                    if varmail {
                        self.fs.commit(&f).await?;
                    }
                    held.owned[k] = Some(size + n);
                    bytes += n;
                }
                self.fs.close(f).await?;
            }
            "delete" => {
                let Some(k) = self.pick_owned(held, true) else {
                    return Ok(());
                };
                let (name, dir) = self.owned(k);
                self.fs.remove(&dir, &name).await?;
                held.owned[k] = None;
            }
            _ => {
                // stat
                let Some(k) = self.pick_owned(held, true) else {
                    return Ok(());
                };
                let (name, dir) = self.owned(k);
                if let Some(node) = self.fs.lookup(&dir, &name).await? {
                    self.fs.size(&node).await?;
                }
            }
        }
        self.rec.unit(phase, "op", t.elapsed(), bytes);
        self.rec.latency(phase, what, t.elapsed());
        Ok(())
    }
}
