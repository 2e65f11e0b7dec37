//! Latency injection without netem: an in-process TCP proxy that adds a
//! one-way delay in each direction.
//!
//! Each direction is a delay line. Whatever one `read()` on the incoming
//! socket returns (a chunk of up to 64 KiB) is stamped on arrival and
//! released to the outgoing socket at
//! `max(arrival + delay + jitter_sample + loss_penalty, previous release)`:
//! order within a direction is kept (the `max`), so jitter can bunch chunks
//! together but never reorder them. `jitter_sample` is uniform in
//! `[-jitter, +jitter]` (the total is never below zero). TCP cannot lose
//! bytes, so "loss" is modelled as what a loss costs a TCP stream: with
//! probability `loss` a chunk gets an extra [`LOSS_PENALTY`] (200 ms, Linux's
//! minimum RTO), and — because order is kept — everything behind it in that
//! direction waits too (head-of-line blocking).

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::rng::Rng;

/// The extra delay of a "lost" chunk.
pub const LOSS_PENALTY: Duration = Duration::from_millis(200);

/// What the proxy adds, per direction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DelayConfig {
    pub delay: Duration,
    pub jitter: Duration,
    /// Probability (0..1) that a chunk is "lost".
    pub loss: f64,
    pub seed: u64,
}

/// A running proxy; stops when dropped.
pub struct Proxy {
    pub addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// Listens on 127.0.0.1:0; every accepted connection is forwarded to
    /// `target` through two delay lines.
    pub async fn start(target: SocketAddr, cfg: DelayConfig) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let mut n = 0u64;
            let mut conns = AbortAll(Vec::new());
            loop {
                let Ok((inbound, _)) = listener.accept().await else {
                    break;
                };
                n += 1;
                let cfg = DelayConfig {
                    seed: cfg.seed ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15),
                    ..cfg
                };
                conns.0.retain(|t| !t.is_finished());
                conns.0.push(tokio::spawn(async move {
                    let Ok(outbound) = TcpStream::connect(target).await else {
                        return;
                    };
                    let _ = inbound.set_nodelay(true);
                    let _ = outbound.set_nodelay(true);
                    let (ir, iw) = inbound.into_split();
                    let (or, ow) = outbound.into_split();
                    let down_cfg = DelayConfig {
                        seed: cfg.seed.rotate_left(17) ^ 1,
                        ..cfg
                    };
                    let mut lines = AbortAll(vec![
                        tokio::spawn(delay_line(ir, ow, cfg)),
                        tokio::spawn(delay_line(or, iw, down_cfg)),
                    ]);
                    for t in lines.0.iter_mut() {
                        let _ = t.await;
                    }
                }));
            }
        });
        Ok(Proxy { addr, task })
    }
}

/// Aborts its tasks when dropped (so stopping the proxy stops every
/// connection it carries).
struct AbortAll(Vec<JoinHandle<()>>);

impl Drop for AbortAll {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}

/// Copies `from` to `to`, releasing each chunk after the configured delay.
async fn delay_line(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, cfg: DelayConfig) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Bytes)>();
    let writer = tokio::spawn(async move {
        while let Some((at, chunk)) = rx.recv().await {
            tokio::time::sleep_until(at).await;
            if to.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    });
    let mut rng = Rng::new(cfg.seed);
    let mut last = Instant::now();
    let mut buf = BytesMut::with_capacity(64 * 1024);
    loop {
        buf.reserve(64 * 1024);
        match from.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let arrival = Instant::now();
        let mut d = cfg.delay.as_secs_f64();
        if !cfg.jitter.is_zero() {
            d += (rng.f64() * 2.0 - 1.0) * cfg.jitter.as_secs_f64();
        }
        if cfg.loss > 0.0 && rng.f64() < cfg.loss {
            d += LOSS_PENALTY.as_secs_f64();
        }
        let at = (arrival + Duration::from_secs_f64(d.max(0.0))).max(last);
        last = at;
        if tx.send((at, buf.split().freeze())).is_err() {
            break;
        }
    }
    drop(tx);
    let _ = writer.await;
}
