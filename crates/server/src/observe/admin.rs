//! The administration socket: a Unix stream socket in the state
//! directory (`admin.sock`, mode 0600) through which `ferrite stat`,
//! `ferrite exports` and `ferrite reload` talk to a running server. Never reachable over
//! the network; only root and the user the server runs as may connect
//! (the socket's mode, and the peer's credentials checked again with
//! SO_PEERCRED).
//!
//! One request per connection: a line naming a command, answered with
//! one line of JSON. Commands: `stat` (a [`crate::observe::stats::report::Report`]),
//! `reload` (a [`crate::observe::reload::ReloadReport`], once whoever serves
//! the reload requests ([`crate::run::Running::reload_requests`]) has
//! re-read the configuration and applied it), `migrate EXPORT_PATH
//! HOST:PORT [LOCATION]` (a [`crate::migrate::outgoing::MoveReport`]).
//! Anything else, or a request not sent within 5 seconds or longer than
//! 256 bytes, is answered `{"error": ...}`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot, watch, Semaphore};
use tracing::{debug, warn};

use crate::instance::Server;

/// A reload asked for over the administration socket: the answer (JSON,
/// a [`crate::observe::reload::ReloadReport`] or `{"error": ...}`) goes back here.
pub type ReloadRequest = tokio::sync::oneshot::Sender<String>;

/// Where reload requests go, once someone serves them.
pub type ReloadSlot = Arc<std::sync::Mutex<Option<tokio::sync::mpsc::Sender<ReloadRequest>>>>;

/// The socket's name in the state directory.
pub const SOCKET: &str = "admin.sock";
/// Administration connections served at once.
const MAX_CONNECTIONS: usize = 16;
const REQUEST_MAX: u64 = 256;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// A reload opens new exports' directories and write logs: the most a
/// caller waits for one.
const RELOAD_TIMEOUT: Duration = Duration::from_secs(60);
/// The most a caller waits for a migration's outcome.
const MIGRATE_TIMEOUT: Duration = Duration::from_secs(600);

/// Listens at `path` (a stale socket file there is replaced) until
/// `shutdown`; the file is removed at the end.
pub fn bind(path: &Path) -> std::io::Result<UnixListener> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let l = UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(l)
}

pub async fn serve(
    listener: UnixListener,
    path: PathBuf,
    srv: Arc<Server>,
    reloads: ReloadSlot,
    shutdown: watch::Receiver<bool>,
) {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let l = &listener;
    serve_each(
        "administration socket",
        MAX_CONNECTIONS,
        move || async move { l.accept().await.map(|(s, _)| s) },
        shutdown,
        |stream| {
            let allowed = stream
                .peer_cred()
                .is_ok_and(|c| c.uid() == 0 || c.uid() == me);
            if !allowed {
                debug!(
                    "administration socket: a caller that is neither root nor the server's user"
                );
                return None;
            }
            Some(answer(stream, srv.clone(), reloads.clone()))
        },
    )
    .await;
    let _ = std::fs::remove_file(&path);
}

/// Accepts connections until `shutdown`, each answered by the future
/// `handle` makes of it in a task of its own (none: refused, closed at
/// once), at most `max` at a time (more are closed at once). A failed
/// accept is logged as `what`'s and retried after 100 ms. The
/// administration socket and the metrics endpoint both serve so.
pub(crate) async fn serve_each<S, A, AF, H, HF>(
    what: &str,
    max: usize,
    mut accept: A,
    mut shutdown: watch::Receiver<bool>,
    handle: H,
) where
    A: FnMut() -> AF,
    AF: std::future::Future<Output = std::io::Result<S>>,
    H: Fn(S) -> Option<HF>,
    HF: std::future::Future<Output = ()> + Send + 'static,
{
    let slots = Arc::new(Semaphore::new(max));
    loop {
        let accepted = tokio::select! {
            a = accept() => a,
            _ = shutdown.wait_for(|s| *s) => break,
        };
        let stream = match accepted {
            Ok(s) => s,
            Err(e) => {
                warn!("{what}: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Some(answer) = handle(stream) else {
            continue;
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            continue;
        };
        tokio::spawn(async move {
            let _permit = permit;
            answer.await;
        });
    }
}

async fn answer(stream: UnixStream, srv: Arc<Server>, reloads: ReloadSlot) {
    let (rd, mut wr) = stream.into_split();
    let mut line = String::new();
    let read = tokio::time::timeout(
        REQUEST_TIMEOUT,
        BufReader::new(rd.take(REQUEST_MAX)).read_line(&mut line),
    )
    .await;
    let reply = match read {
        Ok(Ok(_)) if line.trim() == "reload" => reload(&reloads).await,
        Ok(Ok(_)) if line.trim().starts_with("migrate ") => migrate(line.trim(), &srv).await,
        Ok(Ok(_)) => command(line.trim(), &srv),
        Ok(Err(e)) => error(&format!("reading the request: {e}")),
        Err(_) => error("no request within 5 seconds"),
    };
    let _ = wr.write_all(reply.as_bytes()).await;
    let _ = wr.write_all(b"\n").await;
    let _ = wr.shutdown().await;
}

fn command(cmd: &str, srv: &Arc<Server>) -> String {
    match cmd {
        "stat" => serde_json::to_string(&crate::observe::stats::report::build(srv))
            .unwrap_or_else(|e| error(&format!("encoding: {e}"))),
        other => error(&format!(
            "unknown command {other:?} (known: stat, reload, migrate)"
        )),
    }
}

/// Asks for a reload and waits for its outcome.
async fn reload(reloads: &ReloadSlot) -> String {
    let (tx, rx) = oneshot::channel();
    let not_here = || error("this server does not reload its configuration");
    let Some(to) = reloads.lock().unwrap_or_else(|e| e.into_inner()).clone() else {
        return not_here();
    };
    match to.try_send(tx) {
        Ok(()) => {}
        Err(mpsc::error::TrySendError::Full(_)) => {
            return error("reloads already waiting: try again when they are done")
        }
        Err(mpsc::error::TrySendError::Closed(_)) => return not_here(),
    }
    match tokio::time::timeout(RELOAD_TIMEOUT, rx).await {
        Ok(Ok(answer)) => answer,
        Ok(Err(_)) => not_here(),
        Err(_) => error("the reload did not finish within 60 seconds; see the server's log"),
    }
}

/// `migrate EXPORT_PATH HOST:PORT [LOCATION]`: moves the export to
/// another Ferrite (`crate::migrate`) and answers its report, or why
/// not. The move goes on if the caller stops waiting.
async fn migrate(line: &str, srv: &Arc<Server>) -> String {
    let words: Vec<&str> = line.split_whitespace().collect();
    let (export, to, location) = match words.as_slice() {
        ["migrate", e, t] => (e.to_string(), t.to_string(), None),
        ["migrate", e, t, l] => (e.to_string(), t.to_string(), Some(l.to_string())),
        _ => return error("usage: migrate EXPORT_PATH HOST:PORT [LOCATION]"),
    };
    let Some(m) = srv.migrator() else {
        return error("this server does not migrate exports");
    };
    let task = tokio::spawn(m.migrate(export, to, location));
    match tokio::time::timeout(MIGRATE_TIMEOUT, task).await {
        Ok(Ok(Ok(report))) => report,
        Ok(Ok(Err(why))) => error(&why),
        Ok(Err(e)) => error(&format!("the migration failed: {e}")),
        Err(_) => error(
            "the migration did not finish within 10 minutes; it goes on: see the server's log",
        ),
    }
}

fn error(why: &str) -> String {
    serde_json::json!({ "error": why }).to_string()
}

/// Sends `cmd` to the server listening at `path` and returns its answer
/// (one line of JSON), for `ferrite stat`.
pub async fn request(path: &Path, cmd: &str) -> std::io::Result<String> {
    let mut s = UnixStream::connect(path).await?;
    s.write_all(cmd.as_bytes()).await?;
    s.write_all(b"\n").await?;
    let mut out = String::new();
    s.read_to_string(&mut out).await?;
    Ok(out)
}
