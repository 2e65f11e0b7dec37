//! Building a file set once (`ferrite bench prepare`) and looking it up
//! at the start of a run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::fileset::{tree_depth, tree_dirs, tree_leaf, FileSet, SetNodes, BENCH_DIR, TREE_WIDTH};
use super::params::Params;
use crate::fs::{BenchFs, OpenFile, OpenMode};
use crate::rng::Rng;
use crate::{Error, Result};

fn not_prepared(p: &Params, set: &FileSet) -> Error {
    let mut cmd = format!("ferrite bench prepare {} --target {}", p.workload, p.target);
    match set {
        FileSet::Large { size, n: 1 } => cmd += &format!(" --file-size {size}"),
        FileSet::Large { size, n } => cmd += &format!(" --files {n} --file-size {size}"),
        FileSet::Files { n, size, .. } => cmd += &format!(" --files {n} --file-size {size}"),
        FileSet::Tree { n } => cmd += &format!(" --files {n}"),
        FileSet::None => {}
    }
    Error::NotPrepared(format!(
        "file set {BENCH_DIR}/{} is not on {} (or its preparation did not finish); create it once with:\n  {cmd}",
        set.name(),
        p.target
    ))
}

/// Runs `n` jobs `0..n` with `conc` at a time; `f(i)` does job `i`.
async fn parallel<F, Fut>(n: u64, conc: usize, f: F) -> Result<()>
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<()>> + Send + 'static,
{
    let f = Arc::new(f);
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..conc.max(1) {
        let f = f.clone();
        let next = next.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return Ok(());
                }
                f(i).await?;
            }
        }));
    }
    let mut res = Ok(());
    for t in tasks {
        match t.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => res = Err(e),
            Err(e) => res = Err(Error::Msg(format!("task: {e}"))),
        }
    }
    res
}

fn pattern(len: usize, seed: u64) -> Bytes {
    let mut r = Rng::new(seed);
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        v.extend_from_slice(&r.next_u64().to_le_bytes());
    }
    v.truncate(len);
    Bytes::from(v)
}

/// Writes `size` bytes to `f` in pieces of at most 1 MiB (UNSTABLE).
async fn fill(fs: &dyn BenchFs, f: &OpenFile, size: u64, data: &Bytes) -> Result<()> {
    let mut off = 0;
    while off < size {
        let n = (size - off).min(data.len() as u64) as usize;
        fs.write(f, off, data.slice(..n), false).await?;
        off += n as u64;
    }
    Ok(())
}

/// Builds the file set `p` needs (idempotent: an existing complete set is
/// kept). Prints progress to stderr.
pub async fn prepare(fs: Arc<dyn BenchFs>, p: &Params) -> Result<()> {
    let set = p.file_set();
    let root = fs.root();
    let bench = fs.mkdir(&root, BENCH_DIR).await?;
    if set == FileSet::None {
        eprintln!("{}: nothing to prepare", p.workload);
        return Ok(());
    }
    if fs.lookup(&bench, &set.marker()).await?.is_some() {
        eprintln!(
            "{}: {BENCH_DIR}/{} is already prepared",
            p.workload,
            set.name()
        );
        return Ok(());
    }
    let started = Instant::now();
    let chunk = pattern(1 << 20, p.seed);
    let done = Arc::new(AtomicU64::new(0));
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let ticker = {
        let done = done.clone();
        let name = set.name();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                if tty {
                    eprint!(
                        "\rprepare {name}: {} done\x1b[K",
                        done.load(Ordering::Relaxed)
                    );
                }
            }
        })
    };
    let res: Result<()> = async {
        let mut total = 0;
        match set {
            FileSet::None => {}
            FileSet::Large { size, n } => {
                let mut files = Vec::new();
                for i in 0..n {
                    let f = fs
                        .open(&bench, &set.large_file(i), OpenMode::Create, 0)
                        .await?;
                    files.push(f);
                }
                let files = Arc::new(files);
                let pieces = size.div_ceil(1 << 20);
                total = pieces * n;
                let (fs2, f2, done2) = (fs.clone(), files.clone(), done.clone());
                // Four writes in flight per file, sixteen at most.
                let conc = (4 * n).min(16) as usize;
                parallel(pieces * n, conc, move |j| {
                    let (fs, files, chunk, done) =
                        (fs2.clone(), f2.clone(), chunk.clone(), done2.clone());
                    async move {
                        // Round the files: each gets written from the start.
                        let (i, piece) = (j % n, j / n);
                        let off = piece << 20;
                        let len = (size - off).min(1 << 20) as usize;
                        let f = &files[i as usize];
                        fs.write(f, off, chunk.slice(..len), false).await?;
                        done.fetch_add(1, Ordering::Relaxed);
                        Ok(())
                    }
                })
                .await?;
                let files =
                    Arc::try_unwrap(files).map_err(|_| Error::Msg("file still shared".into()))?;
                for f in files {
                    fs.commit(&f).await?;
                    fs.close(f).await?;
                }
            }
            FileSet::Files { n, size, .. } => {
                let base = fs.mkdir(&bench, &set.name()).await?;
                let per_dir = set.per_dir();
                let ndirs = n.div_ceil(per_dir);
                let mut dirs = Vec::new();
                for d in 0..ndirs {
                    dirs.push(fs.mkdir(&base, &format!("d{d}")).await?);
                }
                let dirs = Arc::new(dirs);
                total = n;
                let (fs2, done2) = (fs.clone(), done.clone());
                let data = chunk.clone();
                parallel(n, 16, move |i| {
                    let (fs, dirs, data, done) =
                        (fs2.clone(), dirs.clone(), data.clone(), done2.clone());
                    async move {
                        let dir = &dirs[(i / per_dir) as usize];
                        let f = fs
                            .open(dir, &format!("f{i}"), OpenMode::Create, (i % 16) as u32)
                            .await?;
                        fill(fs.as_ref(), &f, size, &data).await?;
                        fs.close(f).await?;
                        done.fetch_add(1, Ordering::Relaxed);
                        Ok(())
                    }
                })
                .await?;
            }
            FileSet::Tree { n } => {
                let base = fs.mkdir(&bench, &set.name()).await?;
                let dirs = tree_dirs(n);
                total = n;
                // Directories level by level (parents exist first).
                let nodes = Arc::new(std::sync::Mutex::new(std::collections::HashMap::new()));
                nodes
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(Vec::<String>::new(), base.clone());
                let maxlen = dirs.iter().map(|d| d.len()).max().unwrap_or(0);
                for level in 1..=maxlen {
                    let these: Arc<Vec<Vec<String>>> =
                        Arc::new(dirs.iter().filter(|d| d.len() == level).cloned().collect());
                    let (fs2, nodes2) = (fs.clone(), nodes.clone());
                    let count = these.len() as u64;
                    parallel(count, 16, move |i| {
                        let (fs, nodes, these) = (fs2.clone(), nodes2.clone(), these.clone());
                        async move {
                            let path = &these[i as usize];
                            let parent = nodes
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .get(&path[..path.len() - 1])
                                .cloned()
                                .ok_or_else(|| Error::Msg("missing parent".into()))?;
                            let node = fs.mkdir(&parent, &path[path.len() - 1]).await?;
                            nodes
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .insert(path.clone(), node);
                            Ok(())
                        }
                    })
                    .await?;
                }
                let depth = tree_depth(n);
                let (fs2, done2) = (fs.clone(), done.clone());
                parallel(n, 16, move |i| {
                    let (fs, nodes, done) = (fs2.clone(), nodes.clone(), done2.clone());
                    async move {
                        let leaf = tree_leaf(i / TREE_WIDTH, depth);
                        let dir = nodes
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .get(&leaf)
                            .cloned()
                            .ok_or_else(|| Error::Msg("missing leaf".into()))?;
                        let f = fs
                            .open(
                                &dir,
                                &format!("f{}", i % TREE_WIDTH),
                                OpenMode::Create,
                                (i % 16) as u32,
                            )
                            .await?;
                        fs.close(f).await?;
                        done.fetch_add(1, Ordering::Relaxed);
                        Ok(())
                    }
                })
                .await?;
            }
        }
        let m = fs.open(&bench, &set.marker(), OpenMode::Create, 0).await?;
        fs.close(m).await?;
        eprintln!(
            "{}prepare {}: {total} done in {:.1} s",
            if tty { "\r\x1b[K" } else { "" },
            set.name(),
            started.elapsed().as_secs_f64()
        );
        Ok(())
    }
    .await;
    ticker.abort();
    res
}

/// Looks up the prepared set (setup phase); an error that says how to
/// prepare it when it is missing.
pub async fn resolve(fs: &Arc<dyn BenchFs>, p: &Params) -> Result<SetNodes> {
    let set = p.file_set();
    let root = fs.root();
    let bench = match set {
        FileSet::None => fs.mkdir(&root, BENCH_DIR).await?,
        _ => fs
            .lookup(&root, BENCH_DIR)
            .await?
            .ok_or_else(|| not_prepared(p, &set))?,
    };
    if set != FileSet::None && fs.lookup(&bench, &set.marker()).await?.is_none() {
        return Err(not_prepared(p, &set));
    }
    let mut nodes = SetNodes {
        base: bench.clone(),
        bench,
        dirs: Vec::new(),
        per_dir: set.per_dir(),
    };
    match set {
        FileSet::None | FileSet::Large { .. } => {}
        FileSet::Files { n, .. } => {
            nodes.base = fs
                .lookup(&nodes.bench, &set.name())
                .await?
                .ok_or_else(|| not_prepared(p, &set))?;
            for d in 0..n.div_ceil(set.per_dir()) {
                let node = fs
                    .lookup(&nodes.base, &format!("d{d}"))
                    .await?
                    .ok_or_else(|| not_prepared(p, &set))?;
                nodes.dirs.push(node);
            }
        }
        FileSet::Tree { n } => {
            nodes.base = fs
                .lookup(&nodes.bench, &set.name())
                .await?
                .ok_or_else(|| not_prepared(p, &set))?;
            let dirs = tree_dirs(n);
            let mut map = std::collections::HashMap::new();
            map.insert(Vec::<String>::new(), nodes.base.clone());
            // Parents come first: resolve level by level, 16 at a time.
            let maxlen = dirs.iter().map(|d| d.len()).max().unwrap_or(0);
            let map = Arc::new(std::sync::Mutex::new(map));
            for level in 1..=maxlen {
                let these: Arc<Vec<Vec<String>>> =
                    Arc::new(dirs.iter().filter(|d| d.len() == level).cloned().collect());
                let (fs2, map2, set2, p2) = (fs.clone(), map.clone(), set, p.clone());
                parallel(these.len() as u64, 16, move |i| {
                    let (fs, map, these, p) =
                        (fs2.clone(), map2.clone(), these.clone(), p2.clone());
                    async move {
                        let path = &these[i as usize];
                        let parent = map
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .get(&path[..path.len() - 1])
                            .cloned()
                            .ok_or_else(|| not_prepared(&p, &set2))?;
                        let node = fs
                            .lookup(&parent, &path[path.len() - 1])
                            .await?
                            .ok_or_else(|| not_prepared(&p, &set2))?;
                        map.lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .insert(path.clone(), node);
                        Ok(())
                    }
                })
                .await?;
            }
            let map = map.lock().unwrap_or_else(|p| p.into_inner());
            for d in &dirs {
                if let Some(n) = map.get(d) {
                    nodes.dirs.push(n.clone());
                }
            }
        }
    }
    Ok(nodes)
}
