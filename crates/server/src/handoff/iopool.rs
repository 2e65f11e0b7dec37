//! The threads that run backend calls which may block.
//!
//! A backend call that can wait for the disk never runs on the async
//! threads: it is queued here and its caller awaits the result. Tokio's
//! blocking pool wakes one sleeping thread per call; here a thread that is
//! awake takes every call queued before it goes back to sleep, so calls
//! that arrive together (sixteen WRITEs read from the sockets in one
//! pass) cost one wake-up and two context switches, not sixteen of each.
//!
//! Another thread is woken only when no thread is awake, or when calls
//! are queued and no thread has begun one for [`STALL`]: the awake
//! threads are then waiting for the disk themselves. While a call waits in
//! the queue with no thread woken for it, the pool's watchdog thread
//! checks the same every [`KICK`], in case no other call arrives to
//! notice; a call a thread was woken for, first in the queue, costs the
//! watchdog nothing (no timer per call: arming one woke the async
//! thread's reactor with a system call each time).
//! At most [`MAX_THREADS`] threads, but for urgent calls (a group
//! commit's sync, which the threads may all be waiting for), which always
//! get one; a thread idle for [`KEEP_ALIVE`] exits.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// How long queued calls may wait with no call begun before another
/// thread wakes.
const STALL: Duration = Duration::from_micros(200);
/// How often the watchdog checks that queued calls are not stuck behind
/// busy threads (the last resort: a new call checks the same when it
/// comes, so this is how long a stuck queue waits when none does).
const KICK: Duration = Duration::from_millis(5);
/// How long an idle thread lives.
const KEEP_ALIVE: Duration = Duration::from_secs(10);
/// Threads at most (tokio's blocking pool has the same default).
const MAX_THREADS: usize = 512;

/// A call, and when it was queued.
struct Job {
    run: Box<dyn FnOnce() + Send>,
    queued: Instant,
}

/// What the pool has done since it started, for the load model
/// ([`crate::observe::load`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Calls run.
    pub calls: u64,
    /// Nanoseconds threads spent in calls (blocked in I/O, mostly).
    pub busy_ns: u64,
    /// Nanoseconds calls waited in the queue for a thread.
    pub wait_ns: u64,
}

struct Worker {
    thread: Thread,
    woken: AtomicBool,
}

struct State {
    queue: VecDeque<Job>,
    /// Sleeping threads, the most recently active last.
    idle: Vec<Arc<Worker>>,
    threads: usize,
    /// When a thread last began a call.
    progress: Instant,
    /// The watchdog thread, once started, and whether it sleeps until
    /// woken (the queue was empty when it last looked).
    watchdog: Option<Thread>,
    watchdog_asleep: bool,
}

impl State {
    fn busy(&self) -> usize {
        self.threads - self.idle.len()
    }

    /// Calls are queued and no thread is awake to take them, or the awake
    /// ones have begun none for a while.
    fn needs_thread(&self) -> bool {
        !self.queue.is_empty() && (self.busy() == 0 || self.progress.elapsed() >= STALL)
    }
}

/// A pool of threads for blocking calls.
pub struct Pool {
    state: Mutex<State>,
    max: usize,
    name: &'static str,
    calls: AtomicU64,
    busy_ns: AtomicU64,
    wait_ns: AtomicU64,
}

impl Pool {
    pub fn new(name: &'static str, max: usize) -> Arc<Pool> {
        Arc::new(Pool {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                idle: Vec::new(),
                threads: 0,
                progress: Instant::now(),
                watchdog: None,
                watchdog_asleep: false,
            }),
            max: max.max(1),
            name,
            calls: AtomicU64::new(0),
            busy_ns: AtomicU64::new(0),
            wait_ns: AtomicU64::new(0),
        })
    }

    /// Its threads' name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Its most threads (urgent calls may take one more each).
    pub fn max_threads(&self) -> usize {
        self.max
    }

    /// What the pool has done so far.
    pub fn usage(&self) -> Usage {
        Usage {
            calls: self.calls.load(Ordering::Relaxed),
            busy_ns: self.busy_ns.load(Ordering::Relaxed),
            wait_ns: self.wait_ns.load(Ordering::Relaxed),
        }
    }

    /// The pool the NFS operations use.
    pub fn global() -> &'static Arc<Pool> {
        static POOL: OnceLock<Arc<Pool>> = OnceLock::new();
        POOL.get_or_init(|| Pool::new("ferrite-io", MAX_THREADS))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes a sleeping thread, or starts one if none sleeps and the cap
    /// allows (or `past_cap`); with neither, the busy threads will get to
    /// the queue. Whether a thread was woken or started.
    fn add_thread_beyond(self: &Arc<Self>, st: &mut State, past_cap: bool) -> bool {
        // The new thread counts as progress: it is about to begin a call.
        st.progress = Instant::now();
        if let Some(w) = st.idle.pop() {
            w.woken.store(true, Ordering::Release);
            w.thread.unpark();
            return true;
        }
        if st.threads >= self.max && !past_cap {
            return false;
        }
        let pool = self.clone();
        let spawned = std::thread::Builder::new()
            .name(self.name.to_string())
            .spawn(move || {
                let me = Arc::new(Worker {
                    thread: std::thread::current(),
                    woken: AtomicBool::new(false),
                });
                pool.work(me);
            });
        match spawned {
            Ok(_) => {
                st.threads += 1;
                true
            }
            Err(e) => {
                tracing::warn!("{}: could not start a thread: {e}", self.name);
                false
            }
        }
    }

    fn add_thread(self: &Arc<Self>, st: &mut State) -> bool {
        self.add_thread_beyond(st, false)
    }

    fn submit(self: &Arc<Self>, job: Job, urgent: bool) {
        let mut st = self.lock();
        let woke = if urgent {
            // First in line, and a thread for it even past the cap: the
            // threads may all be waiting for this very call.
            st.queue.push_front(job);
            // Below the cap a stuck queue gets a thread the usual way (if
            // not now, at the watchdog's look); at it, only here.
            let at_cap = st.threads >= self.max && st.idle.is_empty();
            (at_cap || st.needs_thread()) && self.add_thread_beyond(&mut st, true)
        } else {
            st.queue.push_back(job);
            st.needs_thread() && self.add_thread(&mut st)
        };
        // A thread woken for the only call queued takes it; any other call
        // may wait behind busy threads, which the watchdog watches.
        if !(woke && st.queue.len() == 1) {
            self.watch(&mut st);
        }
    }

    /// Wakes the watchdog (starting it the first time) unless it is awake.
    fn watch(self: &Arc<Self>, st: &mut State) {
        if let Some(t) = &st.watchdog {
            if st.watchdog_asleep {
                st.watchdog_asleep = false;
                t.unpark();
            }
            return;
        }
        let pool = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name(format!("{}-watch", self.name))
            .spawn(move || watchdog(pool));
        match spawned {
            Ok(h) => st.watchdog = Some(h.thread().clone()),
            Err(e) => tracing::warn!("{}: could not start the watchdog: {e}", self.name),
        }
    }

    /// One look of the watchdog: a thread for a stuck queue. Whether to
    /// look again after [`KICK`] (calls are queued).
    fn look(self: &Arc<Self>) -> bool {
        let mut st = self.lock();
        if st.queue.is_empty() {
            st.watchdog_asleep = true;
            return false;
        }
        if st.needs_thread() {
            self.add_thread(&mut st);
        }
        true
    }

    fn work(self: Arc<Self>, me: Arc<Worker>) {
        let mut st = self.lock();
        loop {
            if let Some(job) = st.queue.pop_front() {
                let began = Instant::now();
                st.progress = began;
                drop(st);
                (job.run)();
                let nanos = |d: Duration| d.as_nanos() as u64;
                self.calls.fetch_add(1, Ordering::Relaxed);
                self.busy_ns
                    .fetch_add(nanos(began.elapsed()), Ordering::Relaxed);
                self.wait_ns.fetch_add(
                    nanos(began.saturating_duration_since(job.queued)),
                    Ordering::Relaxed,
                );
                st = self.lock();
                continue;
            }
            me.woken.store(false, Ordering::Relaxed);
            st.idle.push(me.clone());
            drop(st);
            let deadline = Instant::now() + KEEP_ALIVE;
            while !me.woken.load(Ordering::Acquire) {
                let now = Instant::now();
                if now >= deadline {
                    let mut st = self.lock();
                    if me.woken.load(Ordering::Acquire) {
                        break;
                    }
                    st.idle.retain(|w| !Arc::ptr_eq(w, &me));
                    st.threads -= 1;
                    return;
                }
                std::thread::park_timeout(deadline - now);
            }
            st = self.lock();
        }
    }

    /// Runs `f` on the pool; the future resolves to its result, or to
    /// [`Panicked`] if it panicked.
    pub fn run<T, F>(self: &Arc<Self>, f: F) -> Run<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        self.run_as(f, false)
    }

    /// [`Pool::run`] for a call that others on the pool may be waiting
    /// for (the sync of a group commit): it goes first, and gets a thread
    /// of its own even when every thread is taken, so the waiters cannot
    /// starve it.
    pub fn run_urgent<T, F>(self: &Arc<Self>, f: F) -> Run<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        self.run_as(f, true)
    }

    fn run_as<T, F>(self: &Arc<Self>, f: F, urgent: bool) -> Run<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let slot = Arc::new(Slot {
            inner: Mutex::new((None, None)),
        });
        let s = slot.clone();
        self.submit(
            Job {
                queued: Instant::now(),
                run: Box::new(move || {
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
                    let waker = {
                        let mut g = s.inner.lock().unwrap_or_else(|e| e.into_inner());
                        g.0 = Some(r);
                        g.1.take()
                    };
                    if let Some(w) = waker {
                        w.wake();
                    }
                }),
            },
            urgent,
        );
        Run { slot }
    }
}

/// The watchdog: while calls are queued, looks every [`KICK`] whether
/// they are stuck behind busy threads; otherwise sleeps until a call
/// queued without a thread of its own wakes it. Ends with its pool.
fn watchdog(pool: std::sync::Weak<Pool>) {
    loop {
        let Some(p) = pool.upgrade() else {
            return;
        };
        let queued = p.look();
        drop(p);
        // Woken early (unpark) or not, the next look says what to do.
        std::thread::park_timeout(if queued { KICK } else { KEEP_ALIVE });
    }
}

/// The call panicked on the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the backend call panicked")]
pub struct Panicked;

type Outcome<T> = Option<std::thread::Result<T>>;

struct Slot<T> {
    inner: Mutex<(Outcome<T>, Option<Waker>)>,
}

/// The result of [`Pool::run`].
pub struct Run<T> {
    slot: Arc<Slot<T>>,
}

impl<T> Future for Run<T> {
    type Output = Result<T, Panicked>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut g = self.slot.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = g.0.take() {
            return Poll::Ready(r.map_err(|_| Panicked));
        }
        match &g.1 {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => g.1 = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn runs_calls_and_reports_panics() {
        let pool = Pool::new("test-pool", 4);
        assert_eq!(pool.run(|| 6 * 7).await, Ok(42));
        assert_eq!(pool.run(|| -> u32 { panic!("boom") }).await, Err(Panicked));
        assert_eq!(pool.run(|| 1).await, Ok(1), "the pool survives a panic");
    }

    /// Calls queued behind a thread that is stuck (waiting for the disk)
    /// get another thread, and many calls at once use few threads.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stuck_thread_does_not_hold_the_queue() {
        let pool = Pool::new("test-pool", 8);
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let began = Arc::new(AtomicBool::new(false));
        let b = began.clone();
        let stuck = pool.run(move || {
            b.store(true, Ordering::SeqCst);
            rx.recv().unwrap()
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        while !began.load(Ordering::SeqCst) {
            assert!(Instant::now() < deadline, "the stuck call never began");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        // Behind the stuck thread this call would wait for ever (until the
        // send below); another thread runs it. Whether that takes a
        // millisecond or, on a busy machine, seconds is not the question.
        let next = tokio::time::timeout(Duration::from_secs(30), pool.run(|| 5)).await;
        assert_eq!(next, Ok(Ok(5)), "a call waited behind a stuck thread");
        tx.send(()).unwrap();
        stuck.await.unwrap();

        let ran = Arc::new(AtomicUsize::new(0));
        let calls: Vec<_> = (0..200)
            .map(|_| {
                let ran = ran.clone();
                pool.run(move || ran.fetch_add(1, Ordering::Relaxed))
            })
            .collect();
        for c in calls {
            c.await.unwrap();
        }
        assert_eq!(ran.load(Ordering::Relaxed), 200);
        assert!(pool.lock().threads <= 8);
    }

    /// Two threads stuck (waiting for the disk) and a call queued behind
    /// them with no other call coming to notice: the watchdog gives it a
    /// thread once the queue stalls.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_call_queued_behind_stuck_threads_gets_one_with_no_other_call() {
        let pool = Pool::new("test-pool", 8);
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let rx = Arc::new(Mutex::new(rx));
        let began = Arc::new(AtomicUsize::new(0));
        let stuck: Vec<_> = (0..2)
            .map(|_| {
                let (rx, began) = (rx.clone(), began.clone());
                pool.run(move || {
                    began.fetch_add(1, Ordering::SeqCst);
                    // Each takes a message; the lock is held only to take it.
                    let r = rx.lock().unwrap_or_else(|e| e.into_inner());
                    r.recv().unwrap()
                })
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(30);
        while began.load(Ordering::SeqCst) < 2 {
            assert!(Instant::now() < deadline, "the stuck calls never began");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let next = tokio::time::timeout(Duration::from_secs(30), pool.run(|| 7)).await;
        assert_eq!(next, Ok(Ok(7)), "a call waited behind stuck threads");
        tx.send(()).unwrap();
        tx.send(()).unwrap();
        for s in stuck {
            s.await.unwrap();
        }
    }

    /// The pool counts its calls, the time they ran and the time they
    /// waited for a thread.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn usage_counts_calls_and_their_time() {
        let pool = Pool::new("test-pool", 1);
        assert_eq!(pool.usage(), Usage::default());
        let calls: Vec<_> = (0..10)
            .map(|_| pool.run(|| std::thread::sleep(Duration::from_millis(5))))
            .collect();
        for c in calls {
            c.await.unwrap();
        }
        // A call's result is delivered before its thread counts it.
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut u = pool.usage();
        while u.calls < 10 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
            u = pool.usage();
        }
        assert_eq!(u.calls, 10);
        // Lower bounds only: each call sleeps 5 ms, which a slower machine
        // can only stretch.
        assert!(u.busy_ns >= 50_000_000, "{u:?}");
        // One thread: the later calls queued behind the earlier ones.
        assert!(u.wait_ns >= 5_000_000, "{u:?}");
    }

    /// Every thread waits for a call not yet run: an urgent call still
    /// gets a thread, where an ordinary one would wait for ever.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_urgent_call_runs_when_every_thread_waits_for_it() {
        let pool = Pool::new("test-pool", 2);
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let rx = Arc::new(Mutex::new(rx));
        let waiting = Arc::new(AtomicUsize::new(0));
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let (rx, waiting) = (rx.clone(), waiting.clone());
                pool.run(move || {
                    waiting.fetch_add(1, Ordering::SeqCst);
                    rx.lock().unwrap().recv().unwrap()
                })
            })
            .collect();
        let waiters = tokio::spawn(async move {
            for w in waiters {
                w.await.unwrap();
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        while waiting.load(Ordering::SeqCst) < 2 {
            assert!(Instant::now() < deadline, "the waiters never began");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        // Both threads of the cap are taken (one waits for the channel,
        // the other for the lock); the sender of the two messages must run.
        let send = pool.run_urgent(move || {
            tx.send(()).unwrap();
            tx.send(()).unwrap();
        });
        tokio::time::timeout(Duration::from_secs(30), send)
            .await
            .expect("the urgent call ran")
            .unwrap();
        waiters.await.unwrap();
    }
}
