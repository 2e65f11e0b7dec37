//! The hand-off of blocking work (file-system calls, fsync, the state
//! directory) from the async reactor threads to the blocking pool
//! (`iopool`), and running it in place when the thread is already a pool
//! thread running a whole request (a COMPOUND or an NFSv3 call sent
//! there). Every protocol's blocking call goes through here.

pub mod iopool;

/// READs of at least this many bytes whose reply is not kept for a retry
/// are answered with a range of the file, which the connection sends from
/// the page cache (`sendfile`) instead of copying the data into memory and
/// again into the socket; smaller ones are copied, which costs less than
/// another system call. (NFSv4 keeps unasked replies only below this.)
pub const SEND_FROM_FILE_MIN: usize = 64 << 10;

thread_local! {
    /// This thread is a blocking-pool thread running a whole COMPOUND.
    static ON_POOL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the current thread as running a COMPOUND on the blocking pool
/// until dropped.
pub struct OnPool;

impl OnPool {
    pub fn enter() -> OnPool {
        ON_POOL.with(|p| p.set(true));
        OnPool
    }
}

impl Drop for OnPool {
    fn drop(&mut self) {
        ON_POOL.with(|p| p.set(false));
    }
}

/// Runs `f`, which may block, off the async threads: in place when this
/// thread already runs a COMPOUND on the blocking pool, else there.
pub async fn off_thread<T, F>(f: F) -> Result<T, iopool::Panicked>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    off_thread_as(f, false).await
}

/// [`off_thread`] for a call other COMPOUNDs may be waiting for on the
/// pool (a group commit's sync): it never waits for a free thread.
pub async fn off_thread_urgent<T, F>(f: F) -> Result<T, iopool::Panicked>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    off_thread_as(f, true).await
}

async fn off_thread_as<T, F>(f: F, urgent: bool) -> Result<T, iopool::Panicked>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let pool = iopool::Pool::global();
    match (ON_POOL.with(|p| p.get()), urgent) {
        (true, _) => Ok(f()),
        (false, false) => pool.run(f).await,
        (false, true) => pool.run_urgent(f).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocking work runs in place on a thread already running a
    /// COMPOUND on the pool, and on the pool from an async thread.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn off_thread_runs_in_place_on_the_pool() {
        let here = std::thread::current().id();
        let there = off_thread(|| std::thread::current().id()).await.unwrap();
        assert_ne!(there, here, "from an async thread: on the pool");
        let rt = tokio::runtime::Handle::current();
        let (pool, ran) = tokio::task::spawn_blocking(move || {
            let _pool = OnPool::enter();
            let ran = rt.block_on(off_thread(|| std::thread::current().id()));
            (std::thread::current().id(), ran.unwrap())
        })
        .await
        .unwrap();
        assert_eq!(ran, pool, "on a pool thread running a COMPOUND: in place");
        assert!(!ON_POOL.with(|p| p.get()));
    }
}
