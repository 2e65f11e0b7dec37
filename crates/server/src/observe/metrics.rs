//! `--metrics ADDR:PORT`: the statistics in the Prometheus text format
//! over HTTP/1.1 (`GET /metrics`; anything else is 404, a request that is
//! not HTTP 400). Off unless asked for. Bounded: 16 connections at once,
//! a request head of at most 8 KiB read within 5 seconds, one request per
//! connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::instance::Server;

const MAX_CONNECTIONS: usize = 16;
const HEAD_MAX: usize = 8192;
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);

pub async fn serve(listener: TcpListener, srv: Arc<Server>, shutdown: watch::Receiver<bool>) {
    let l = &listener;
    crate::observe::admin::serve_each(
        "metrics",
        MAX_CONNECTIONS,
        move || async move { l.accept().await.map(|(s, _)| s) },
        shutdown,
        |stream| {
            let srv = srv.clone();
            Some(async move {
                let _ = answer(stream, &srv).await;
            })
        },
    )
    .await;
}

async fn answer(mut s: TcpStream, srv: &Arc<Server>) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(512);
    let got = tokio::time::timeout(HEAD_TIMEOUT, async {
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
            let n = s.read(&mut buf).await?;
            if n == 0 || head.len() + n > HEAD_MAX {
                return Ok::<bool, std::io::Error>(false);
            }
            head.extend_from_slice(&buf[..n]);
        }
        Ok(true)
    })
    .await;
    let complete = matches!(got, Ok(Ok(true)));
    let first = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let first = String::from_utf8_lossy(first);
    let mut words = first.split_whitespace();
    let (method, target) = (words.next(), words.next());
    let (status, kind, body) = match (complete, method, target) {
        (true, Some("GET"), Some(t)) if t == "/metrics" || t.starts_with("/metrics?") => (
            "200 OK",
            "text/plain; version=0.0.4; charset=utf-8",
            crate::observe::stats::prometheus::render(&crate::observe::stats::report::build(srv)),
        ),
        (true, Some(_), Some(_)) => (
            "404 Not Found",
            "text/plain",
            "Only /metrics is served here.\n".into(),
        ),
        _ => (
            "400 Bad Request",
            "text/plain",
            "Not an HTTP request.\n".into(),
        ),
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(reply.as_bytes()).await?;
    s.write_all(body.as_bytes()).await?;
    s.shutdown().await
}

/// Where the metrics are served, for the start-up line.
pub fn describe(at: SocketAddr) -> String {
    format!("metrics (Prometheus text) on http://{at}/metrics")
}
