//! The flexible-file layout (pNFS, RFC 8881 §12 and RFC 8435, loosely
//! coupled) on the NFSv4.1 backend: READ and WRITE go straight to the
//! data servers the layouts name, over NFSv3, as the layouts' synthetic
//! users; the metadata server sees LAYOUTGET, GETDEVICEINFO,
//! LAYOUTCOMMIT and LAYOUTRETURN.
//!
//! What a benchmark client keeps, shared by its workers:
//! - per file, its layout stateid and the segments it got (LAYOUTGET
//!   READ for reads, RW for writes, each covering the stripe the I/O is
//!   in; a read may use an RW segment), what it wrote through them and
//!   not yet committed, and the errors to report;
//! - per device id, the data server's address (GETDEVICEINFO once);
//! - per data server address, one TCP connection, and on it one NFSv3
//!   client per synthetic user (uid, gid) the layouts name.
//!
//! Every data server call is counted and timed in the run's
//! [`OpStats`] like the metadata server's, as kinds `READ (DS)`,
//! `WRITE (DS)` and `COMMIT (DS)`. Writes go to every mirror. A commit
//! or close after writing sends COMMIT to the data servers written
//! UNSTABLE, then LAYOUTCOMMIT with the last byte written. A data server
//! call that fails is done through the metadata server instead (counted
//! as `READ (MDS fallback)`, `WRITE (MDS fallback)`, `COMMIT (MDS
//! fallback)`) and the error reported: LAYOUTERROR on NFSv4.2, else the
//! file's layout is returned with the error in its `ff_ioerr4`; so is
//! an I/O for which no layout is to be had (LAYOUTUNAVAILABLE, or
//! LAYOUTTRYLATER while the server settles a conflict: the file is then
//! left alone for a second). A recalled layout (CB_LAYOUTRECALL, as the
//! client's callback service records it) is dropped and given back
//! (committed first) by a task that looks every 20 ms; every layout
//! still held is given back at shutdown.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use client::observe::{CallInfo, Observer};
use client::v3;
use proto::nfs3::{NfsFh3, NfsStat3, StableHow, NFSPROC3_COMMIT, NFSPROC3_READ, NFSPROC3_WRITE};
use proto::nfs4::*;

use crate::fs::OpenFile;
use crate::nfs4::Nfs4Fs;
use crate::record::{call_overhead, current_phase, CallRecord, OpStats, REPLY_OVERHEAD};
use crate::{Error, Result};

/// Call kinds of the data servers' procedures.
pub const READ_DS: &str = "READ (DS)";
pub const WRITE_DS: &str = "WRITE (DS)";
pub const COMMIT_DS: &str = "COMMIT (DS)";
/// Call kinds of I/O done through the metadata server because the data
/// server path failed or no layout was to be had.
pub const READ_FALLBACK: &str = "READ (MDS fallback)";
pub const WRITE_FALLBACK: &str = "WRITE (MDS fallback)";
pub const COMMIT_FALLBACK: &str = "COMMIT (MDS fallback)";
/// A layout given back because the server recalled it.
pub const RETURN_RECALL: &str = "LAYOUTRETURN(recall)";

/// How long a file is left without layouts after LAYOUTTRYLATER, a
/// recall conflict or a data server error.
const BACK_OFF: Duration = Duration::from_secs(1);
/// ... and after the server said it has none for it.
const UNAVAILABLE: Duration = Duration::from_secs(30);
/// How often recalls are looked for.
const POLL: Duration = Duration::from_millis(20);

fn ds_kind(proc_: u32) -> &'static str {
    match proc_ {
        NFSPROC3_READ => READ_DS,
        NFSPROC3_WRITE => WRITE_DS,
        NFSPROC3_COMMIT => COMMIT_DS,
        _ => "NFSv3 (DS)",
    }
}

/// One mirror of a segment: a data file on one data server, and the
/// synthetic user to reach it as.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mirror {
    device: DeviceId4,
    fh: NfsFh3,
    uid: u32,
    gid: u32,
}

/// A layout segment: `[offset, end)` of the file, `end` u64::MAX for the
/// whole file.
#[derive(Debug, Clone)]
struct Seg {
    offset: u64,
    end: u64,
    iomode: LayoutIoMode4,
    mirrors: Vec<Mirror>,
}

impl Seg {
    fn serves(&self, off: u64, write: bool) -> bool {
        off >= self.offset && off < self.end && (!write || self.iomode == LayoutIoMode4::Rw)
    }
}

#[derive(Debug, Default)]
struct FileState {
    stateid: Option<StateId4>,
    segs: Vec<Seg>,
    /// Moves on each time segments are dropped: an I/O that found a
    /// segment before checks it is still held.
    epoch: u64,
    /// The last byte written through layouts, not yet LAYOUTCOMMITted.
    last_write: Option<u64>,
    /// Data files written UNSTABLE and not yet committed.
    unstable: Vec<Mirror>,
    /// Writes through the metadata server (fallbacks) not yet committed.
    mds_unstable: bool,
    /// Errors not yet reported (for the next LAYOUTRETURN).
    errors: Vec<FfIoErr4>,
    /// No LAYOUTGET before this.
    not_before: Option<Instant>,
}

/// One file's layouts.
struct File {
    fh: Bytes,
    /// One LAYOUTGET or return of this file at a time.
    get: tokio::sync::Mutex<()>,
    /// Data server I/O holds it shared; a return takes it alone, so that
    /// no I/O is under way with a layout being given back.
    io: tokio::sync::RwLock<()>,
    st: Mutex<FileState>,
}

impl File {
    fn st(&self) -> MutexGuard<'_, FileState> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A segment held for `off`, with the epoch it was found in.
    fn cached(&self, off: u64, write: bool) -> Option<(Seg, u64)> {
        let st = self.st();
        st.segs
            .iter()
            .find(|s| s.serves(off, write))
            .map(|s| (s.clone(), st.epoch))
    }

    /// Drops every segment (the stateid stays: the server still holds
    /// the layout until it is returned).
    fn drop_segs(&self, back_off: Option<Duration>) {
        let mut st = self.st();
        st.segs.clear();
        st.epoch += 1;
        if let Some(d) = back_off {
            st.not_before = Some(Instant::now() + d);
        }
    }
}

/// Why a data server call failed.
#[derive(Debug)]
enum DsFail {
    /// No connection, or it broke.
    Transport(String),
    /// The data server answered an NFSv3 error.
    Status(NfsStat3),
    /// A short WRITE or an undecodable reply.
    Bad(String),
}

impl std::fmt::Display for DsFail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DsFail::Transport(why) => write!(f, "unreachable: {why}"),
            DsFail::Status(s) => write!(f, "{s:?}"),
            DsFail::Bad(why) => f.write_str(why),
        }
    }
}

impl DsFail {
    fn of(e: v3::Error) -> DsFail {
        match e {
            v3::Error::Status { status, .. } => DsFail::Status(status),
            v3::Error::Io(e) => DsFail::Transport(e.to_string()),
            v3::Error::Rpc(e) => DsFail::Transport(e.to_string()),
            other => DsFail::Bad(other.to_string()),
        }
    }

    /// The status a `device_error4` reports (RFC 8435 §9.1.1).
    fn status4(&self) -> NfsStat4 {
        match self {
            DsFail::Transport(_) => NfsStat4::Nfs4errNxio,
            DsFail::Status(NfsStat3::Acces) => NfsStat4::Nfs4errAccess,
            DsFail::Status(NfsStat3::Perm) => NfsStat4::Nfs4errPerm,
            DsFail::Status(NfsStat3::Stale) => NfsStat4::Nfs4errStale,
            DsFail::Status(NfsStat3::Nospc) => NfsStat4::Nfs4errNospc,
            DsFail::Status(_) | DsFail::Bad(_) => NfsStat4::Nfs4errIo,
        }
    }
}

/// A pNFS client's layouts, devices and data server connections.
pub struct Layouts {
    stats: Arc<OpStats>,
    /// The AUTH_SYS machine name sent to data servers.
    machine: String,
    /// The metadata server's lease: the client renews it when it has
    /// sent nothing there for a third of it (its I/O goes elsewhere).
    pub lease: Duration,
    files: Mutex<HashMap<Bytes, Arc<File>>>,
    devices: Mutex<HashMap<DeviceId4, SocketAddr>>,
    device_get: tokio::sync::Mutex<()>,
    conns: Mutex<HashMap<SocketAddr, Arc<rpc::Connection>>>,
    connecting: tokio::sync::Mutex<()>,
    clients: Mutex<HashMap<(SocketAddr, u32, u32), v3::Client>>,
    /// CB_LAYOUTRECALLs handled so far (an index into the callback
    /// service's list).
    recalls_seen: AtomicUsize,
    recalling: tokio::sync::Mutex<()>,
    /// Data server I/O done through the metadata server instead.
    pub fallbacks: AtomicU64,
    stopped: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A universal address (RFC 5665 §5.2.3.3): `h1.h2.h3.h4.p1.p2`, or an
/// IPv6 address followed by `.p1.p2`.
pub fn parse_uaddr(s: &str) -> Option<SocketAddr> {
    let mut it = s.rsplitn(3, '.');
    let lo: u16 = it.next()?.parse().ok()?;
    let hi: u16 = it.next()?.parse().ok()?;
    let host: IpAddr = it.next()?.parse().ok()?;
    if hi > 255 || lo > 255 {
        return None;
    }
    Some(SocketAddr::new(host, hi * 256 + lo))
}

/// The mirrors of a flexible-file layout segment, if this client can
/// use them: each mirror's first data server, with a handle and a
/// numeric synthetic user and group.
fn mirrors_of(ff: &FfLayout4) -> Option<Vec<Mirror>> {
    let num = |b: &Bytes| std::str::from_utf8(b).ok()?.parse::<u32>().ok();
    let mut out = Vec::new();
    for m in &ff.mirrors {
        let d = m.data_servers.first()?;
        out.push(Mirror {
            device: d.deviceid,
            fh: NfsFh3 {
                data: d.fh_vers.first()?.0.clone(),
            },
            uid: num(&d.user)?,
            gid: num(&d.group)?,
        });
    }
    (!out.is_empty()).then_some(out)
}

fn putfh(fh: &Bytes) -> NfsArgOp4 {
    NfsArgOp4::PutFh(PutFh4Args {
        object: NfsFh4(fh.clone()),
    })
}

impl Layouts {
    pub fn new(stats: Arc<OpStats>, lease: Duration) -> Arc<Layouts> {
        Arc::new(Layouts {
            stats,
            machine: crate::runner::hostname(),
            lease,
            files: Mutex::new(HashMap::new()),
            devices: Mutex::new(HashMap::new()),
            device_get: tokio::sync::Mutex::new(()),
            conns: Mutex::new(HashMap::new()),
            connecting: tokio::sync::Mutex::new(()),
            clients: Mutex::new(HashMap::new()),
            recalls_seen: AtomicUsize::new(0),
            recalling: tokio::sync::Mutex::new(()),
            fallbacks: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
        })
    }

    fn file(&self, fh: &Bytes) -> Arc<File> {
        lock(&self.files)
            .entry(fh.clone())
            .or_insert_with(|| {
                Arc::new(File {
                    fh: fh.clone(),
                    get: tokio::sync::Mutex::new(()),
                    io: tokio::sync::RwLock::new(()),
                    st: Mutex::new(FileState::default()),
                })
            })
            .clone()
    }

    /// A segment for I/O at `off` (RW for a write), from the cache or a
    /// LAYOUTGET; `None` when the server has none to give now.
    async fn segment(
        &self,
        fs: &Nfs4Fs,
        file: &File,
        f: &OpenFile,
        off: u64,
        write: bool,
    ) -> Result<Option<(Seg, u64)>> {
        if let Some(s) = file.cached(off, write) {
            return Ok(Some(s));
        }
        let _g = file.get.lock().await;
        if let Some(s) = file.cached(off, write) {
            return Ok(Some(s));
        }
        if file.st().not_before.is_some_and(|t| Instant::now() < t) {
            return Ok(None);
        }
        let iomode = if write {
            LayoutIoMode4::Rw
        } else {
            LayoutIoMode4::Read
        };
        for attempt in 0..2 {
            let sid = file.st().stateid.unwrap_or(f.stateid);
            let r = fs
                .compound(vec![
                    putfh(&file.fh),
                    NfsArgOp4::LayoutGet(LayoutGet4Args {
                        signal_layout_avail: false,
                        layout_type: LAYOUT4_FLEX_FILES,
                        iomode,
                        offset: off,
                        length: u64::MAX,
                        minlength: 0,
                        stateid: sid,
                        maxcount: 16384,
                    }),
                ])
                .await;
            let back_off = match r {
                Ok(r) => match r.into_iter().nth(1) {
                    Some(NfsResOp4::LayoutGet(LayoutGet4Res::Ok(ok))) => {
                        if self.take_layout(file, ok) {
                            if let Some(s) = file.cached(off, write) {
                                return Ok(Some(s));
                            }
                            // Not the range or mode asked for: through
                            // the metadata server for a while.
                            BACK_OFF
                        } else {
                            UNAVAILABLE
                        }
                    }
                    other => return Err(Error::Msg(format!("expected LAYOUTGET, got {other:?}"))),
                },
                Err(Error::Nfs4 { status, .. }) => match status {
                    // Our layout stateid is gone (returned, revoked):
                    // start again from the open.
                    NfsStat4::Nfs4errBadStateid | NfsStat4::Nfs4errOldStateid if attempt == 0 => {
                        file.st().stateid = None;
                        continue;
                    }
                    NfsStat4::Nfs4errLayouttrylater
                    | NfsStat4::Nfs4errRecallconflict
                    | NfsStat4::Nfs4errDelay
                    | NfsStat4::Nfs4errGrace => BACK_OFF,
                    _ => UNAVAILABLE,
                },
                Err(e) => return Err(e),
            };
            file.st().not_before = Some(Instant::now() + back_off);
            return Ok(None);
        }
        Ok(None)
    }

    /// Keeps what a LAYOUTGET gave; false if none of it is usable.
    fn take_layout(&self, file: &File, ok: LayoutGet4ResOk) -> bool {
        let mut st = file.st();
        match st.stateid {
            Some(s) if s.other == ok.stateid.other && s.seqid >= ok.stateid.seqid => {}
            _ => st.stateid = Some(ok.stateid),
        }
        let mut any = false;
        for l in ok.layout {
            if l.content.layout_type != LAYOUT4_FLEX_FILES {
                continue;
            }
            let Some(mirrors) = FfLayout4::from_content(&l.content)
                .ok()
                .and_then(|ff| mirrors_of(&ff))
            else {
                continue;
            };
            let end = if l.length == u64::MAX {
                u64::MAX
            } else {
                l.offset.saturating_add(l.length)
            };
            st.segs.push(Seg {
                offset: l.offset,
                end,
                iomode: l.iomode,
                mirrors,
            });
            any = true;
        }
        any
    }

    /// The address of data server `id` (GETDEVICEINFO the first time).
    async fn device(&self, fs: &Nfs4Fs, id: &DeviceId4) -> Result<SocketAddr, DsFail> {
        if let Some(a) = lock(&self.devices).get(id) {
            return Ok(*a);
        }
        let _g = self.device_get.lock().await;
        if let Some(a) = lock(&self.devices).get(id) {
            return Ok(*a);
        }
        let r = fs
            .compound(vec![NfsArgOp4::GetDeviceInfo(GetDeviceInfo4Args {
                device_id: *id,
                layout_type: LAYOUT4_FLEX_FILES,
                maxcount: 16384,
                notify_types: Bitmap4::default(),
            })])
            .await
            .map_err(|e| DsFail::Bad(format!("GETDEVICEINFO: {e}")))?;
        let ok = match r.into_iter().next() {
            Some(NfsResOp4::GetDeviceInfo(GetDeviceInfo4Res::Ok(ok))) => ok,
            other => return Err(DsFail::Bad(format!("GETDEVICEINFO: {other:?}"))),
        };
        let addr = FfDeviceAddr4::from_device_addr(&ok.device_addr)
            .map_err(|e| DsFail::Bad(format!("ff_device_addr4: {e}")))?;
        if !addr.versions.iter().any(|v| v.version == 3) {
            return Err(DsFail::Bad("the data server does not speak NFSv3".into()));
        }
        let sa = addr
            .netaddrs
            .0
            .iter()
            .filter(|n| n.netid == "tcp" || n.netid == "tcp6")
            .find_map(|n| parse_uaddr(&n.addr))
            .ok_or_else(|| DsFail::Bad(format!("no TCP address in {:?}", addr.netaddrs)))?;
        lock(&self.devices).insert(*id, sa);
        Ok(sa)
    }

    /// The NFSv3 client for `m` (its data server's one connection, made
    /// the first time, and the mirror's user).
    async fn ds(&self, fs: &Nfs4Fs, m: &Mirror) -> Result<(SocketAddr, v3::Client), DsFail> {
        let addr = self.device(fs, &m.device).await?;
        let key = (addr, m.uid, m.gid);
        if let Some(c) = lock(&self.clients).get(&key) {
            return Ok((addr, c.clone()));
        }
        let have = lock(&self.conns).get(&addr).cloned();
        let conn = match have {
            Some(c) => c,
            None => {
                let _g = self.connecting.lock().await;
                let have = lock(&self.conns).get(&addr).cloned();
                match have {
                    Some(c) => c,
                    None => {
                        let c = rpc::connect(addr, None, rpc::ConnConfig::default())
                            .await
                            .map_err(|e| DsFail::Transport(format!("{addr}: {e}")))?;
                        lock(&self.conns).insert(addr, c.clone());
                        c
                    }
                }
            }
        };
        let mut clients = lock(&self.clients);
        let c = clients.entry(key).or_insert_with(|| {
            let auth = rpc::Auth::sys(m.uid, m.gid, Vec::new(), &self.machine);
            let overhead = call_overhead(&auth.to_opaque());
            let c = v3::Client::from_handle(conn, m.fh.clone(), auth);
            c.set_observer(observer(self.stats.clone(), overhead));
            c
        });
        Ok((addr, c.clone()))
    }

    /// A data server's connection failed: the next call makes a new one.
    fn forget(&self, addr: SocketAddr) {
        let gone: Vec<v3::Client> = {
            let mut clients = lock(&self.clients);
            let keys: Vec<_> = clients.keys().filter(|k| k.0 == addr).cloned().collect();
            keys.iter().filter_map(|k| clients.remove(k)).collect()
        };
        lock(&self.conns).remove(&addr);
        drop(gone);
    }

    /// READ of `[off, off + len)` of `f`: from the data servers, each
    /// piece through the segment covering it (the rest through the
    /// metadata server if that fails or no layout is to be had).
    pub async fn read(&self, fs: &Nfs4Fs, f: &OpenFile, off: u64, len: u32) -> Result<u64> {
        let file = self.file(&f.node.fh);
        let end = off.saturating_add(u64::from(len));
        let mut at = off;
        let mut got = 0u64;
        while at < end {
            let Some((seg, epoch)) = self.segment(fs, &file, f, at, false).await? else {
                return self.read_fallback(fs, f, at, end, got).await;
            };
            let io = file.io.read().await;
            if file.st().epoch != epoch {
                continue;
            }
            let piece = (end.min(seg.end) - at) as u32;
            let m = &seg.mirrors[0];
            let r = match self.ds(fs, m).await {
                Ok((addr, c)) => match c.read(&m.fh, at, piece).await {
                    Ok(ok) => Ok(ok),
                    Err(e) => {
                        let e = DsFail::of(e);
                        if matches!(e, DsFail::Transport(_)) {
                            self.forget(addr);
                        }
                        Err(e)
                    }
                },
                Err(e) => Err(e),
            };
            drop(io);
            match r {
                Ok(ok) => {
                    let n = ok.data.len() as u64;
                    got += n;
                    if n < u64::from(piece) {
                        return Ok(got);
                    }
                    at += n;
                }
                Err(e) => {
                    self.failed(fs, &file, m, at, u64::from(piece), OpNum4::Read, e)
                        .await;
                    return self.read_fallback(fs, f, at, end, got).await;
                }
            }
        }
        Ok(got)
    }

    async fn read_fallback(
        &self,
        fs: &Nfs4Fs,
        f: &OpenFile,
        at: u64,
        end: u64,
        got: u64,
    ) -> Result<u64> {
        self.fallbacks.fetch_add(1, Ordering::Relaxed);
        let n = fs.mds_read(f, at, (end - at) as u32, READ_FALLBACK).await?;
        Ok(got + n)
    }

    /// WRITE of `data` at `off` to every mirror of the segments covering
    /// it (a piece whose write fails, or that has no layout, through the
    /// metadata server).
    pub async fn write(
        &self,
        fs: &Nfs4Fs,
        f: &OpenFile,
        off: u64,
        data: Bytes,
        sync: bool,
    ) -> Result<()> {
        let file = self.file(&f.node.fh);
        let end = off + data.len() as u64;
        let stable = if sync {
            StableHow::FileSync
        } else {
            StableHow::Unstable
        };
        let mut at = off;
        while at < end {
            let rest = data.slice((at - off) as usize..);
            let Some((seg, epoch)) = self.segment(fs, &file, f, at, true).await? else {
                return self.write_fallback(fs, &file, f, at, rest, sync).await;
            };
            let io = file.io.read().await;
            if file.st().epoch != epoch {
                continue;
            }
            let piece = rest.slice(..(end.min(seg.end) - at) as usize);
            let len = piece.len() as u64;
            let mut failed = None;
            for m in &seg.mirrors {
                let r = match self.ds(fs, m).await {
                    Ok((addr, c)) => match c.write(&m.fh, at, piece.clone(), stable).await {
                        Ok(ok) if u64::from(ok.count) == len => Ok(()),
                        Ok(ok) => Err(DsFail::Bad(format!("short WRITE: {} of {len}", ok.count))),
                        Err(e) => {
                            let e = DsFail::of(e);
                            if matches!(e, DsFail::Transport(_)) {
                                self.forget(addr);
                            }
                            Err(e)
                        }
                    },
                    Err(e) => Err(e),
                };
                if let Err(e) = r {
                    failed = Some((m.clone(), e));
                    break;
                }
            }
            drop(io);
            if let Some((m, e)) = failed {
                self.failed(fs, &file, &m, at, len, OpNum4::Write, e).await;
                self.write_fallback(fs, &file, f, at, piece, sync).await?;
            } else {
                let mut st = file.st();
                let last = at + len - 1;
                st.last_write = Some(st.last_write.map_or(last, |l| l.max(last)));
                if !sync {
                    for m in &seg.mirrors {
                        if !st.unstable.contains(m) {
                            st.unstable.push(m.clone());
                        }
                    }
                }
            }
            at += len;
        }
        Ok(())
    }

    async fn write_fallback(
        &self,
        fs: &Nfs4Fs,
        file: &File,
        f: &OpenFile,
        at: u64,
        data: Bytes,
        sync: bool,
    ) -> Result<()> {
        self.fallbacks.fetch_add(1, Ordering::Relaxed);
        fs.mds_write(f, at, data, sync, WRITE_FALLBACK).await?;
        if !sync {
            file.st().mds_unstable = true;
        }
        Ok(())
    }

    /// A data server call failed: the file's segments are dropped (the
    /// next I/O asks for new ones, after a pause) and the error goes to
    /// the metadata server: LAYOUTERROR on NFSv4.2; on NFSv4.1 the
    /// layout is given back with the error in its `ff_ioerr4`.
    #[allow(clippy::too_many_arguments)]
    async fn failed(
        &self,
        fs: &Nfs4Fs,
        file: &File,
        m: &Mirror,
        offset: u64,
        length: u64,
        op: OpNum4,
        e: DsFail,
    ) {
        tracing::debug!("data server I/O failed ({e}): through the metadata server");
        let err = DeviceError4 {
            deviceid: m.device,
            status: e.status4(),
            opnum: op,
        };
        file.drop_segs(Some(BACK_OFF));
        let sid = file.st().stateid;
        let Some(sid) = sid else { return };
        if fs.client().minorversion() >= 2 {
            let r = fs
                .compound(vec![
                    putfh(&file.fh),
                    NfsArgOp4::LayoutError(LayoutError4Args {
                        offset,
                        length,
                        stateid: sid,
                        errors: vec![err],
                    }),
                ])
                .await;
            if r.is_ok() {
                return;
            }
        }
        file.st().errors.push(FfIoErr4 {
            offset,
            length,
            stateid: sid,
            errors: vec![err],
        });
        let _ = self.give_back(fs, file, None, "LAYOUTRETURN").await;
    }

    /// What a commit or close after writing sends: COMMIT to each data
    /// file written UNSTABLE (through the metadata server if one fails),
    /// COMMIT to the metadata server for fallback writes, then
    /// LAYOUTCOMMIT of the last byte written. False if nothing was
    /// written through a layout since the last time.
    async fn flush(&self, fs: &Nfs4Fs, file: &File) -> Result<bool> {
        let (unstable, last, mut mds, sid) = {
            let mut st = file.st();
            (
                std::mem::take(&mut st.unstable),
                st.last_write.take(),
                std::mem::take(&mut st.mds_unstable),
                st.stateid,
            )
        };
        if unstable.is_empty() && last.is_none() && !mds {
            return Ok(false);
        }
        let mut fallback = false;
        for m in &unstable {
            let r = match self.ds(fs, m).await {
                Ok((addr, c)) => c.commit(&m.fh, 0, 0).await.map(|_| ()).map_err(|e| {
                    let e = DsFail::of(e);
                    if matches!(e, DsFail::Transport(_)) {
                        self.forget(addr);
                    }
                    e
                }),
                Err(e) => Err(e),
            };
            if let Err(e) = r {
                tracing::debug!(
                    "COMMIT to a data server failed ({e}): through the metadata server"
                );
                if let Some(sid) = sid {
                    file.st().errors.push(FfIoErr4 {
                        offset: 0,
                        length: u64::MAX,
                        stateid: sid,
                        errors: vec![DeviceError4 {
                            deviceid: m.device,
                            status: e.status4(),
                            opnum: OpNum4::Commit,
                        }],
                    });
                }
                mds = true;
                fallback = true;
            }
        }
        if mds {
            if fallback {
                self.fallbacks.fetch_add(1, Ordering::Relaxed);
            }
            let kind = if fallback { COMMIT_FALLBACK } else { "COMMIT" };
            fs.mds_commit(&file.fh, kind).await?;
        }
        if let (Some(last), Some(sid)) = (last, sid) {
            let r = fs
                .compound(vec![
                    putfh(&file.fh),
                    NfsArgOp4::LayoutCommit(LayoutCommit4Args {
                        offset: 0,
                        length: u64::MAX,
                        reclaim: false,
                        stateid: sid,
                        last_write_offset: Some(last),
                        time_modify: None,
                        layoutupdate: LayoutUpdate4 {
                            layout_type: LAYOUT4_FLEX_FILES,
                            body: Bytes::new(),
                        },
                    }),
                ])
                .await;
            match r {
                Ok(_) => {}
                // The layout went (fenced, revoked): the metadata server
                // then learns the size from the data servers.
                Err(Error::Nfs4 {
                    status:
                        NfsStat4::Nfs4errBadStateid
                        | NfsStat4::Nfs4errOldStateid
                        | NfsStat4::Nfs4errBadiomode,
                    ..
                }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// COMMIT of `f` (the workload's): what [`Layouts::flush`] sends,
    /// or a COMMIT to the metadata server when nothing went through a
    /// layout.
    pub async fn commit(&self, fs: &Nfs4Fs, f: &OpenFile) -> Result<()> {
        let file = self.file(&f.node.fh);
        if !self.flush(fs, &file).await? {
            fs.mds_commit(&f.node.fh, "COMMIT").await?;
        }
        Ok(())
    }

    /// Before CLOSE: what was written through layouts is committed.
    pub async fn before_close(&self, fs: &Nfs4Fs, f: &OpenFile) -> Result<()> {
        let file = self.file(&f.node.fh);
        self.flush(fs, &file).await?;
        Ok(())
    }

    /// Gives the file's layout back: waits for I/O under way, commits
    /// what was written, LAYOUTRETURN of the whole file (with the errors
    /// not yet reported) under `recalled` (the recall's stateid) or the
    /// one held.
    async fn give_back(
        &self,
        fs: &Nfs4Fs,
        file: &File,
        recalled: Option<StateId4>,
        kind: &'static str,
    ) -> Result<()> {
        let _g = file.get.lock().await;
        let _w = file.io.write().await;
        file.drop_segs(None);
        let flushed = self.flush(fs, file).await;
        let (held, errors) = {
            let mut st = file.st();
            (st.stateid.take(), std::mem::take(&mut st.errors))
        };
        let sid = match (held, recalled) {
            (Some(h), Some(r)) if h.other == r.other && h.seqid > r.seqid => Some(h),
            (_, Some(r)) => Some(r),
            (h, None) => h,
        };
        let Some(sid) = sid else {
            return flushed.map(|_| ());
        };
        let body = FfLayoutReturn4 {
            ioerr_report: errors,
            iostats_report: Vec::new(),
        }
        .to_body();
        let ret = |sid: StateId4| {
            vec![
                putfh(&file.fh),
                NfsArgOp4::LayoutReturn(LayoutReturn4Args {
                    reclaim: false,
                    layout_type: LAYOUT4_FLEX_FILES,
                    iomode: LayoutIoMode4::Any,
                    layoutreturn: LayoutReturn4::File(LayoutReturnFile4 {
                        offset: 0,
                        length: u64::MAX,
                        stateid: sid,
                        body: body.clone(),
                    }),
                }),
            ]
        };
        let r = match fs.compound_as(ret(sid), Some(kind)).await {
            // A recall moved the seqid on since: the current one.
            Err(Error::Nfs4 {
                status: NfsStat4::Nfs4errOldStateid,
                ..
            }) => {
                let zero = StateId4 { seqid: 0, ..sid };
                fs.compound_as(ret(zero), Some(kind)).await
            }
            r => r,
        };
        flushed?;
        match r {
            Ok(_)
            | Err(Error::Nfs4 {
                status: NfsStat4::Nfs4errBadStateid | NfsStat4::Nfs4errNomatchingLayout,
                ..
            }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Handles the CB_LAYOUTRECALLs received since the last call: each
    /// recalled file's layout is dropped and given back (a recall of a
    /// file system or of everything gives back every file's).
    pub async fn recalls(&self, fs: &Nfs4Fs) {
        let seen = self.recalls_seen.load(Ordering::Acquire);
        let all = fs.client().callbacks().layout_recalls();
        if all.len() <= seen {
            return;
        }
        let _g = self.recalling.lock().await;
        let seen = self.recalls_seen.load(Ordering::Acquire);
        for r in all.iter().skip(seen) {
            match &r.recall {
                LayoutRecall4::File(rf) => {
                    let file = self.file(&rf.fh.0);
                    if let Err(e) = self
                        .give_back(fs, &file, Some(rf.stateid), RETURN_RECALL)
                        .await
                    {
                        tracing::debug!("returning a recalled layout: {e}");
                    }
                }
                LayoutRecall4::Fsid(_) | LayoutRecall4::All => {
                    let files: Vec<Arc<File>> = lock(&self.files).values().cloned().collect();
                    for file in files {
                        let _ = self.give_back(fs, &file, None, RETURN_RECALL).await;
                    }
                    let _ = fs
                        .compound_as(
                            vec![NfsArgOp4::LayoutReturn(LayoutReturn4Args {
                                reclaim: false,
                                layout_type: LAYOUT4_FLEX_FILES,
                                iomode: r.iomode,
                                layoutreturn: LayoutReturn4::All,
                            })],
                            Some(RETURN_RECALL),
                        )
                        .await;
                }
            }
        }
        self.recalls_seen.store(all.len(), Ordering::Release);
    }

    /// Every layout still held given back, the data server connections
    /// closed.
    pub async fn shutdown(&self, fs: &Nfs4Fs) -> Result<()> {
        self.stopped.store(true, Ordering::Release);
        self.recalls(fs).await;
        let files: Vec<Arc<File>> = lock(&self.files).values().cloned().collect();
        let mut first = Ok(());
        for file in files {
            let held = file.st().stateid.is_some();
            if held {
                if let Err(e) = self.give_back(fs, &file, None, "LAYOUTRETURN").await {
                    if first.is_ok() {
                        first = Err(e);
                    }
                }
            }
        }
        lock(&self.clients).clear();
        lock(&self.conns).clear();
        first
    }

    pub fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }
}

/// Counts each data server call in the run's statistics (its phase is
/// the calling unit's).
fn observer(stats: Arc<OpStats>, overhead: u64) -> Observer {
    Arc::new(move |c: &CallInfo| {
        let kind = ds_kind(c.proc_);
        stats.record(CallRecord {
            phase: current_phase(&stats),
            kind,
            ops: &[kind],
            bytes_sent: overhead + c.args_len,
            bytes_recv: if c.results_len > 0 {
                REPLY_OVERHEAD + c.results_len
            } else {
                0
            },
            queue: Duration::ZERO,
            rtt: c.rtt,
            ok: c.ok,
        })
    })
}

/// Looks for recalls every [`POLL`] and keeps the metadata server's
/// lease (a SEQUENCE when nothing went there for a third of it), until
/// the client shuts down or is dropped.
pub fn spawn_poller(fs: std::sync::Weak<Nfs4Fs>) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(POLL).await;
            let Some(fs) = fs.upgrade() else { return };
            let Some(p) = fs.layouts().cloned() else {
                return;
            };
            if p.stopped() {
                return;
            }
            p.recalls(&fs).await;
            if fs.idle() >= p.lease / 3 {
                let _ = fs.compound(Vec::new()).await;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn universal_addresses() {
        assert_eq!(
            parse_uaddr("127.0.0.1.8.3"),
            Some("127.0.0.1:2051".parse().unwrap())
        );
        assert_eq!(parse_uaddr("::1.8.1"), Some("[::1]:2049".parse().unwrap()));
        assert_eq!(parse_uaddr("127.0.0.1.300.1"), None);
        assert_eq!(parse_uaddr("127.0.0.1"), None);
        assert_eq!(parse_uaddr("host.8.1"), None);
    }

    #[test]
    fn mirrors_need_numeric_users() {
        let ds = |user: &'static str| FfDataServer4 {
            deviceid: [1; 16],
            efficiency: 1,
            stateid: StateId4::ANONYMOUS,
            fh_vers: vec![NfsFh4(Bytes::from_static(b"fh"))],
            user: Bytes::from_static(user.as_bytes()),
            group: Bytes::from_static(b"7"),
        };
        let ff = |user| FfLayout4 {
            stripe_unit: 0,
            mirrors: vec![FfMirror4 {
                data_servers: vec![ds(user)],
            }],
            flags: 0,
            stats_collect_hint: 0,
        };
        let m = mirrors_of(&ff("1073741824")).unwrap();
        assert_eq!((m[0].uid, m[0].gid), (1 << 30, 7));
        assert_eq!(&m[0].fh.data[..], b"fh");
        assert!(mirrors_of(&ff("someone@example")).is_none());
        assert!(mirrors_of(&FfLayout4::default()).is_none());
    }

    #[test]
    fn segments_serve_their_range_and_mode() {
        let s = Seg {
            offset: 64,
            end: 128,
            iomode: LayoutIoMode4::Read,
            mirrors: Vec::new(),
        };
        assert!(s.serves(64, false) && s.serves(127, false));
        assert!(!s.serves(128, false) && !s.serves(63, false));
        assert!(!s.serves(64, true), "a READ layout does not write");
        let rw = Seg {
            iomode: LayoutIoMode4::Rw,
            end: u64::MAX,
            ..s
        };
        assert!(rw.serves(1 << 40, true) && rw.serves(64, false));
    }
}
