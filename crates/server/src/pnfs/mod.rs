//! pNFS with flexible-file layouts over separate data servers (RFC 8881
//! §12, RFC 8435): an export configured with data servers keeps its
//! files' bytes there, in data files the metadata server makes and owns
//! as an NFSv3 client (`dataserver`, `datafiles`), and serves every
//! protocol's I/O through them (`vfs::DataVfs`), so that clients with a
//! layout, writing to the data servers directly, and clients without
//! (NFSv3, NFSv4 without pNFS) see the same bytes. Sizes and times stay
//! on the metadata server's own file (sparse there), which LAYOUTCOMMIT
//! and the server's own writes move on.
//!
//! What NFSv4 hands out (LAYOUTGET's ff_layout4, GETDEVICEINFO's
//! ff_device_addr4) is built in `nfs4/` from what this folder says of an
//! export: its [`Pnfs`].

pub mod datafiles;
pub mod dataserver;
pub mod fence;
pub mod resync;
pub mod vfs;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use proto::nfs3::{NfsFh3, Sattr3, StableHow};

use crate::cache::Cache;
use datafiles::Geometry;
use dataserver::{DataServer, DataServerAddr, DsError};

/// Stripe unit unless configured: 1 MiB (the rsize and wsize clients are
/// given, so one I/O never spans two data servers).
pub const DEFAULT_STRIPE_UNIT: u64 = 1 << 20;

/// Files whose data files' handles are kept at once.
const FILE_CACHE: usize = 1 << 16;

/// Files a data server may be behind on (written while it was down)
/// before it is only known to need a full resync.
const MAX_STALE: usize = 1 << 16;

/// How often a data server marked down is probed.
pub const PROBE_EVERY: Duration = Duration::from_secs(2);

/// How often the prober looks, with every data server up and none
/// behind, whether its export is still served (it is woken at once when
/// a data server is marked down).
const PROBER_IDLE: Duration = Duration::from_secs(60);

/// An export's data servers and how its files are spread over them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PnfsConfig {
    pub servers: Vec<DataServerAddr>,
    /// Bytes per stripe (a multiple of 4 KiB).
    pub stripe_unit: u64,
    /// Copies of each stripe, on different data servers (1 to N).
    pub mirrors: usize,
}

impl PnfsConfig {
    /// Checks the numbers: a clear error for a bad configuration.
    pub fn check(&self) -> Result<(), String> {
        if self.servers.is_empty() {
            return Err("no data server".into());
        }
        if self.stripe_unit < 4096 || !self.stripe_unit.is_multiple_of(4096) {
            return Err(format!(
                "stripe unit {} is not a multiple of 4096 bytes (at least 4096)",
                self.stripe_unit
            ));
        }
        if self.mirrors == 0 || self.mirrors > self.servers.len() {
            return Err(format!(
                "{} mirrors over {} data servers: mirrors must be between 1 and the number of data servers",
                self.mirrors,
                self.servers.len()
            ));
        }
        if self.servers.len() > 64 {
            return Err(format!("{} data servers: at most 64", self.servers.len()));
        }
        Ok(())
    }
}

/// What the metadata server knows of one file's data files.
#[derive(Debug, Default)]
struct FileData {
    /// Its data file's handle on each data server, once known.
    fhs: Mutex<Vec<Option<NfsFh3>>>,
    /// Its fence generation, once known (`u32::MAX`: not yet).
    gen: AtomicU32,
}

/// An export's pNFS side: its data servers, its geometry, and the data
/// files of its files.
pub struct Pnfs {
    pub export: u16,
    /// The export's local directory's backend: names, attributes, and
    /// the size and times the metadata server keeps (LAYOUTCOMMIT moves
    /// them there, never through the data servers).
    pub meta: Arc<dyn ::vfs::Vfs>,
    pub servers: Vec<Arc<DataServer>>,
    pub geometry: Geometry,
    /// Names the export's data files (several exports, or several
    /// metadata servers, may share data servers).
    tag: String,
    /// Changes when the data servers do: device ids carry it, so a
    /// client's old ones are unknown after a change (NFS4ERR_NOENT).
    pub generation: u64,
    rt: tokio::runtime::Handle,
    files: Cache<Bytes, Arc<FileData>>,
    /// The roots of the data servers' exports, once mounted.
    roots: Mutex<Vec<Option<NfsFh3>>>,
    /// Per data server, the files written while it was down (its copy of
    /// them is behind), and whether more were than could be kept.
    stale: Mutex<HashMap<usize, (HashSet<Bytes>, bool)>>,
    /// Where a data server's falling behind is recorded durably
    /// (`STATE_DIR/pnfs`), so that a restart does not forget it.
    degraded_dir: Mutex<Option<std::path::PathBuf>>,
    /// Data servers to bring up to date by going over every file (their
    /// marker was found at start, or their stale list overflowed).
    full_resync: Mutex<HashSet<usize>>,
    /// A resync is running (one at a time).
    resyncing: tokio::sync::Mutex<()>,
    /// Wakes the prober: a data server was marked down.
    trouble: Arc<tokio::sync::Notify>,
}

impl std::fmt::Debug for Pnfs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pnfs(export {}, {:?})", self.export, self.geometry)
    }
}

impl Pnfs {
    /// The pNFS side of export `export` (whose root is `identity`), on
    /// the runtime `rt` (data server calls run there).
    pub fn new(
        export: u16,
        meta: Arc<dyn ::vfs::Vfs>,
        cfg: &PnfsConfig,
        rt: tokio::runtime::Handle,
    ) -> Pnfs {
        let identity = meta.root_identity();
        let identity = &identity[..];
        let tag_hash = blake3::hash(identity);
        let tag: String = tag_hash.as_bytes()[..4]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let mut g = blake3::Hasher::new();
        g.update(identity);
        for s in &cfg.servers {
            g.update(s.to_string().as_bytes());
            g.update(b",");
        }
        g.update(&cfg.stripe_unit.to_be_bytes());
        g.update(&(cfg.mirrors as u64).to_be_bytes());
        let gh = g.finalize();
        let generation = u64::from_be_bytes(gh.as_bytes()[..8].try_into().unwrap_or([0; 8]));
        let trouble = Arc::new(tokio::sync::Notify::new());
        Pnfs {
            export,
            meta,
            servers: cfg
                .servers
                .iter()
                .map(|a| Arc::new(DataServer::new(a.clone()).watched_by(trouble.clone())))
                .collect(),
            geometry: Geometry {
                servers: cfg.servers.len(),
                mirrors: cfg.mirrors,
                stripe_unit: cfg.stripe_unit,
            },
            tag: format!("ferrite-{tag}"),
            generation,
            rt,
            files: Cache::new("data files", FILE_CACHE, Duration::from_secs(3600)),
            roots: Mutex::new(vec![None; cfg.servers.len()]),
            stale: Mutex::new(HashMap::new()),
            degraded_dir: Mutex::new(None),
            full_resync: Mutex::new(HashSet::new()),
            resyncing: tokio::sync::Mutex::new(()),
            trouble,
        }
    }

    /// The marker file saying data server `i` is behind.
    fn marker(&self, dir: &std::path::Path, i: usize) -> std::path::PathBuf {
        let addr: String = self.servers[i]
            .addr
            .to_string()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        dir.join(format!("behind-{}-{}-{addr}", self.export, i))
    }

    /// Uses `dir` for the markers of data servers that fell behind; a
    /// marker left by an earlier run means that server is brought up to
    /// date by going over every file once it answers.
    pub async fn open_degraded(&self, dir: &std::path::Path) -> std::io::Result<()> {
        let d = dir.to_path_buf();
        let markers: Vec<std::path::PathBuf> = (0..self.servers.len())
            .map(|i| self.marker(dir, i))
            .collect();
        let found = tokio::task::spawn_blocking(move || -> std::io::Result<Vec<usize>> {
            ::vfs::durable::create_dir_all(&d)?;
            Ok(markers
                .iter()
                .enumerate()
                .filter(|(_, m)| m.exists())
                .map(|(i, _)| i)
                .collect())
        })
        .await
        .map_err(std::io::Error::other)??;
        for i in &found {
            tracing::warn!(
                data_server = %self.servers[*i].addr,
                "data server was behind when the server stopped: every file will be brought up to date on it once it answers"
            );
        }
        self.full_resync
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(found);
        *self.degraded_dir.lock().unwrap_or_else(|p| p.into_inner()) = Some(dir.to_path_buf());
        Ok(())
    }

    /// Records durably that data server `i` is behind (before the write
    /// that left it behind is answered).
    async fn mark_behind(&self, i: usize) {
        let Some(dir) = self
            .degraded_dir
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
        else {
            return;
        };
        let m = self.marker(&dir, i);
        let r = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            if m.exists() {
                return Ok(());
            }
            let f = std::fs::File::create(&m)?;
            f.sync_all()?;
            ::vfs::durable::sync_dir(&dir)
        })
        .await;
        if !matches!(r, Ok(Ok(()))) {
            tracing::warn!(data_server = %self.servers[i].addr, "could not record that the data server is behind: {r:?}");
        }
    }

    async fn clear_behind(&self, i: usize) {
        let Some(dir) = self
            .degraded_dir
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
        else {
            return;
        };
        let m = self.marker(&dir, i);
        let _ = tokio::task::spawn_blocking(move || std::fs::remove_file(m)).await;
    }

    /// Runs `fut` on the runtime and waits for it: the blocking side's
    /// way in (the metadata server's own I/O runs on blocking threads).
    pub fn block_on<T: Send + 'static>(
        &self,
        fut: impl std::future::Future<Output = T> + Send + 'static,
    ) -> Option<T> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.rt.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv().ok()
    }

    /// The first data server of the file with handle `h`.
    pub fn base(&self, h: &[u8]) -> usize {
        datafiles::base_of(h, self.geometry.servers)
    }

    pub fn data_name(&self, h: &[u8]) -> String {
        datafiles::data_name(&self.tag, h)
    }

    fn file(&self, h: &[u8]) -> Arc<FileData> {
        let key = Bytes::copy_from_slice(h);
        self.files.get_or(&key, || {
            Arc::new(FileData {
                fhs: Mutex::new(vec![None; self.geometry.servers]),
                gen: AtomicU32::new(u32::MAX),
            })
        })
    }

    pub(super) async fn root_of(&self, i: usize) -> Result<NfsFh3, DsError> {
        self.root(i).await
    }

    async fn root(&self, i: usize) -> Result<NfsFh3, DsError> {
        if let Some(r) = self.roots.lock().unwrap_or_else(|p| p.into_inner())[i].clone() {
            return Ok(r);
        }
        let r = self.servers[i].root().await?;
        self.roots.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(r.clone());
        Ok(r)
    }

    /// The fence generation of the file `h`: learnt from its data files
    /// (their owner) the first time, 0 for a file that has none.
    pub async fn gen(&self, h: &[u8]) -> Result<u32, DsError> {
        let f = self.file(h);
        let g = f.gen.load(Ordering::Relaxed);
        if g != u32::MAX {
            return Ok(g);
        }
        let name = self.data_name(h);
        let mut learnt = None;
        let mut found = false;
        let mut last_err = None;
        let mut unreachable = 0;
        for i in 0..self.servers.len() {
            // One marked down is not waited for (a hung server would hold
            // up every new file); the prober marks it up when it answers.
            if !self.servers[i].is_up() {
                last_err = Some(DsError::Down("marked down".into()));
                unreachable += 1;
                continue;
            }
            let root = match self.root(i).await {
                Ok(r) => r,
                Err(e) => {
                    last_err = Some(e);
                    unreachable += 1;
                    continue;
                }
            };
            match datafiles::lookup(&self.servers[i], &root, &name).await {
                Ok(Some((fh, attrs))) => {
                    found = true;
                    f.fhs.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(fh);
                    if let Some(g) = attrs.and_then(|a| datafiles::gen_of_owner(a.uid)) {
                        learnt = Some(learnt.map_or(g, |l: u32| l.max(g)));
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    last_err = Some(e);
                    unreachable += 1;
                }
            }
        }
        let g = match (learnt, last_err) {
            (Some(g), _) => g,
            (None, None) => 0,
            // None found, and fewer servers unreachable than each stripe
            // has copies: a data file holds some stripe, whose every copy
            // has one, and one of those answered; so there is none (a new
            // file, while a mirror is down).
            (None, Some(_)) if !found && unreachable < self.geometry.mirrors => 0,
            // Else an unreachable server may hold one with a later
            // generation; do not guess.
            (None, Some(e)) => return Err(e),
        };
        f.gen.store(g, Ordering::Relaxed);
        Ok(g)
    }

    /// The data file of `h` on data server `i`: made if `create` and it
    /// does not exist (owned by the file's fence generation).
    pub async fn fh_on(&self, h: &[u8], i: usize, create: bool) -> Result<Option<NfsFh3>, DsError> {
        let f = self.file(h);
        if let Some(fh) = f.fhs.lock().unwrap_or_else(|p| p.into_inner())[i].clone() {
            return Ok(Some(fh));
        }
        let root = self.root(i).await?;
        let name = self.data_name(h);
        let fh = match datafiles::lookup(&self.servers[i], &root, &name).await? {
            Some((fh, _)) => fh,
            None if create => {
                let gen = self.gen(h).await?;
                datafiles::create(&self.servers[i], &root, &name, gen).await?
            }
            None => return Ok(None),
        };
        f.fhs.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(fh.clone());
        Ok(Some(fh))
    }

    /// Notes that data server `i` missed a change of the file `h`: kept
    /// for [`Pnfs::resync`], and recorded durably the first time.
    pub async fn note_stale(&self, i: usize, h: &[u8]) {
        let first = {
            let mut s = self.stale.lock().unwrap_or_else(|p| p.into_inner());
            let first = !s.contains_key(&i);
            let (set, overflow) = s.entry(i).or_default();
            if set.len() < MAX_STALE {
                set.insert(Bytes::copy_from_slice(h));
            } else {
                *overflow = true;
            }
            first
        };
        if first {
            self.mark_behind(i).await;
        }
    }

    /// The data servers that missed changes while down, and how many
    /// files each is behind on (`ferrite stat`, the tests).
    pub fn stale_counts(&self) -> Vec<(usize, usize, bool)> {
        let s = self.stale.lock().unwrap_or_else(|p| p.into_inner());
        let mut v: Vec<_> = s.iter().map(|(i, (set, o))| (*i, set.len(), *o)).collect();
        v.sort();
        v
    }

    /// Runs `op` on every data server where `h` has a data file; a server
    /// that cannot be reached is noted stale for the file. Fails only if
    /// every server failed (or one answered an NFS error).
    async fn each_existing<F, Fut>(&self, h: &[u8], op: F) -> Result<(), DsError>
    where
        F: Fn(usize, NfsFh3) -> Fut,
        Fut: std::future::Future<Output = Result<(), DsError>>,
    {
        let mut ok = 0;
        let mut down = None;
        for i in 0..self.servers.len() {
            let r = match self.fh_on(h, i, false).await {
                Ok(Some(fh)) => op(i, fh).await,
                Ok(None) => Ok(()),
                Err(e) => Err(e),
            };
            match r {
                Ok(()) => ok += 1,
                Err(DsError::Down(why)) => {
                    self.note_stale(i, h).await;
                    down = Some(DsError::Down(why));
                }
                Err(e) => return Err(e),
            }
        }
        match down {
            Some(e) if ok == 0 => Err(e),
            _ => Ok(()),
        }
    }

    /// Sets the size of `h`'s data files (a truncation or extension
    /// through the metadata server).
    pub async fn truncate(&self, h: &[u8], size: u64) -> Result<(), DsError> {
        self.each_existing(h, |i, fh| async move {
            let a = Sattr3 {
                size: Some(size),
                ..Sattr3::default()
            };
            datafiles::setattr(&self.servers[i], &fh, a).await
        })
        .await
    }

    /// Removes `h`'s data files (its last name went). One a data server
    /// could not remove is left behind, logged.
    pub async fn remove(&self, h: &[u8]) {
        let name = self.data_name(h);
        for i in 0..self.servers.len() {
            let r = match self.root(i).await {
                Ok(root) => datafiles::remove(&self.servers[i], &root, &name).await,
                Err(e) => Err(e),
            };
            match r {
                Err(DsError::Down(why)) => {
                    tracing::warn!(data_server = %self.servers[i].addr, file = %name, "data file not removed, the server is down ({why}): removed when it is back");
                    self.note_stale(i, h).await;
                }
                Err(e) => {
                    tracing::warn!(data_server = %self.servers[i].addr, file = %name, "data file not removed: {e}")
                }
                Ok(()) => {}
            }
        }
    }

    /// Fences the file `h` (RFC 8435 §2.2): its data files change owner
    /// to the next fence generation, so layouts handed out before no
    /// longer let their holders write. Returns the new generation.
    pub async fn fence(&self, h: &[u8]) -> Result<u32, DsError> {
        let gen = (self.gen(h).await? + 1) % datafiles::FENCE_GENERATIONS;
        self.file(h).gen.store(gen, Ordering::Relaxed);
        self.each_existing(h, |i, fh| async move {
            datafiles::setattr(&self.servers[i], &fh, datafiles::owner_attrs(gen, false)).await
        })
        .await?;
        Ok(gen)
    }

    /// The size the data files say the file has: the largest of them
    /// (each holds its stripes at their own offsets).
    pub async fn data_size(&self, h: &[u8]) -> Result<u64, DsError> {
        let mut size = 0;
        let mut reached = 0;
        let mut err = None;
        for i in 0..self.servers.len() {
            let r = match self.fh_on(h, i, false).await {
                Ok(Some(fh)) => datafiles::getattr(&self.servers[i], &fh)
                    .await
                    .map(|a| a.size),
                Ok(None) => Ok(0),
                Err(e) => Err(e),
            };
            match r {
                Ok(s) => {
                    size = size.max(s);
                    reached += 1;
                }
                Err(e) => err = Some(e),
            }
        }
        match err {
            Some(e) if reached == 0 => Err(e),
            _ => Ok(size),
        }
    }

    /// Reads `[offset, offset + count)` of `h` (whose size is `size`)
    /// from its data files: each stripe from its first mirror that
    /// answers.
    pub async fn read(
        &self,
        h: &[u8],
        offset: u64,
        count: u32,
        size: u64,
    ) -> Result<Vec<u8>, DsError> {
        let end = offset.saturating_add(count as u64).min(size);
        let mut out = Vec::with_capacity(end.saturating_sub(offset) as usize);
        let base = self.base(h);
        let mut at = offset;
        while at < end {
            let piece_end = self.geometry.stripe_end(at).min(end);
            let n = (piece_end - at) as u32;
            // Mirrors marked down are tried last.
            let mut order = self.geometry.servers_of(base, self.geometry.stripe(at));
            order.sort_by_key(|i| !self.servers[*i].is_up());
            let mut got = None;
            let mut last = DsError::Down("no data server".into());
            for i in order {
                match self.read_from(h, i, at, n).await {
                    Ok(d) => {
                        got = Some(d);
                        break;
                    }
                    Err(e) => last = e,
                }
            }
            out.extend_from_slice(&got.ok_or(last)?);
            at = piece_end;
        }
        Ok(out)
    }

    pub(super) async fn read_from(
        &self,
        h: &[u8],
        i: usize,
        at: u64,
        n: u32,
    ) -> Result<Vec<u8>, DsError> {
        match self.fh_on(h, i, false).await? {
            Some(fh) => datafiles::read(&self.servers[i], &fh, at, n).await,
            // No data file: nothing was ever written there.
            None => Ok(vec![0; n as usize]),
        }
    }

    /// Writes `data` at `offset` of `h` to every mirror of each stripe it
    /// touches; a mirror that cannot be reached is noted stale. How
    /// durable the least durable copy is.
    pub async fn write(
        &self,
        h: &[u8],
        offset: u64,
        data: Bytes,
        stable: StableHow,
    ) -> Result<StableHow, DsError> {
        let base = self.base(h);
        let mut least = StableHow::FileSync;
        let mut done = 0usize;
        while done < data.len() {
            let at = offset + done as u64;
            let piece_end = (self.geometry.stripe_end(at) - offset).min(data.len() as u64) as usize;
            let piece = data.slice(done..piece_end);
            let mut wrote = 0;
            let mut last = DsError::Down("no data server".into());
            for i in self.geometry.servers_of(base, self.geometry.stripe(at)) {
                let r = match self.fh_on(h, i, true).await {
                    Ok(Some(fh)) => {
                        datafiles::write(&self.servers[i], &fh, at, piece.clone(), stable).await
                    }
                    Ok(None) => Err(DsError::Down("no data file".into())),
                    Err(e) => Err(e),
                };
                match r {
                    Ok(s) => {
                        wrote += 1;
                        if (s as u32) < (least as u32) {
                            least = s;
                        }
                    }
                    Err(DsError::Down(why)) => {
                        self.note_stale(i, h).await;
                        last = DsError::Down(why);
                    }
                    Err(e) => return Err(e),
                }
            }
            if wrote == 0 {
                return Err(last);
            }
            done = piece_end;
        }
        Ok(least)
    }

    /// Commits `h`'s data files wherever they are.
    pub async fn commit(&self, h: &[u8]) -> Result<(), DsError> {
        self.each_existing(h, |i, fh| async move {
            datafiles::commit(&self.servers[i], &fh).await
        })
        .await
    }

    /// Closes the connections to the data servers (a harness ending; the
    /// next call connects again).
    pub async fn disconnect(&self) {
        for ds in &self.servers {
            ds.disconnect().await;
        }
    }

    /// Probes the data servers marked down, again and again while `keep`
    /// says to (in the background for the server's life).
    pub async fn probe_loop(self: Arc<Self>) {
        loop {
            // Every PROBE_EVERY while a data server is down or behind;
            // otherwise asleep until one is marked down.
            let trouble = self
                .servers
                .iter()
                .enumerate()
                .any(|(i, ds)| !ds.is_up() || self.behind(i));
            let wait = if trouble { PROBE_EVERY } else { PROBER_IDLE };
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.trouble.notified(), if !trouble => {
                    // Give the failing call time to finish before probing.
                    tokio::time::sleep(PROBE_EVERY).await;
                }
            }
            if Arc::strong_count(&self) == 1 {
                return;
            }
            for (i, ds) in self.servers.iter().enumerate() {
                if !ds.is_up() {
                    ds.probe().await;
                }
                if ds.is_up() && self.behind(i) {
                    let p = self.clone();
                    tokio::spawn(async move { p.resync(i).await });
                }
            }
        }
    }
}
