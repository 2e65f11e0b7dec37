//! Latency injection without netem: an in-process TCP proxy that adds a
//! one-way delay in each direction, and optionally limits each direction
//! to a link capacity shared by every connection through the proxy.
//!
//! Each direction is a delay line. Whatever one `read()` on the incoming
//! socket returns (a chunk of up to 64 KiB) is stamped on arrival and
//! released to the outgoing socket at
//! `max(sent + delay + jitter_sample + loss_penalty, previous release)`:
//! order within a direction is kept (the `max`), so jitter can bunch chunks
//! together but never reorder them. `jitter_sample` is uniform in
//! `[-jitter, +jitter]` (the total is never below zero). TCP cannot lose
//! bytes, so "loss" is modelled as what a loss costs a TCP stream: with
//! probability `loss` a chunk gets an extra [`LOSS_PENALTY`] (200 ms, Linux's
//! minimum RTO), and — because order is kept — everything behind it in that
//! direction waits too (head-of-line blocking).
//!
//! `sent` is the arrival time without a rate limit. With one ([`Link`]),
//! it is when the chunk's last byte has crossed the link: each direction
//! of the proxy is one [`LinkClock`], shared by all its connections,
//! that transmits one chunk at a time at `rate` bytes a second, so a
//! chunk starts when it arrives or when the link is free, whichever is
//! later, and takes `len / rate` (transmission, then propagation: the
//! delay). The schedule is virtual and absolute, so timer granularity
//! delays a release a little but never lowers the rate below `rate` nor
//! lets the bytes of a period exceed it. The proxy reads as fast as the
//! sender writes: a chunk waiting for the link is held in memory, so the
//! sender sees its writes accepted and meets the limit when it waits for
//! replies (an NFS client's requests in flight bound what is held).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
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

impl DelayConfig {
    /// No delay, jitter or loss.
    pub const NONE: DelayConfig = DelayConfig {
        delay: Duration::ZERO,
        jitter: Duration::ZERO,
        loss: 0.0,
        seed: 0,
    };
}

/// One direction of a link of fixed capacity: when each chunk handed to
/// it has been transmitted, one chunk at a time.
#[derive(Debug, Clone, Copy)]
pub struct LinkClock {
    /// Bytes a second.
    pub rate: f64,
    /// When the link finishes what it was given so far.
    free_at: Option<Instant>,
}

impl LinkClock {
    pub fn new(rate: f64) -> LinkClock {
        LinkClock {
            rate,
            free_at: None,
        }
    }

    /// A chunk of `len` bytes arrives at `arrival`: when its last byte has
    /// crossed (it starts when the link is free, not before it arrives).
    pub fn send(&mut self, arrival: Instant, len: usize) -> Instant {
        let start = match self.free_at {
            Some(f) if f > arrival => f,
            _ => arrival,
        };
        let done = start + Duration::from_secs_f64(len as f64 / self.rate);
        self.free_at = Some(done);
        done
    }
}

/// A link of `rate` bytes a second in each direction, shared by every
/// connection of one proxy.
#[derive(Debug)]
pub struct Link {
    /// Client to server.
    pub up: Mutex<LinkClock>,
    /// Server to client.
    pub down: Mutex<LinkClock>,
}

impl Link {
    pub fn new(rate: f64) -> Arc<Link> {
        Arc::new(Link {
            up: Mutex::new(LinkClock::new(rate)),
            down: Mutex::new(LinkClock::new(rate)),
        })
    }
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
        Self::start_at(SocketAddr::from(([127, 0, 0, 1], 0)), target, cfg, None).await
    }

    /// Listens on `listen`; every accepted connection is forwarded to
    /// `target` through two delay lines and, with `rate` (bytes a second),
    /// through one link of that capacity per direction shared by all
    /// connections.
    pub async fn start_at(
        listen: SocketAddr,
        target: SocketAddr,
        cfg: DelayConfig,
        rate: Option<f64>,
    ) -> std::io::Result<Proxy> {
        if let Some(r) = rate {
            if !(r > 0.0 && r.is_finite()) {
                return Err(std::io::Error::other(format!("bad link rate {r}")));
            }
        }
        let listener = TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        let link = rate.map(Link::new);
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
                let link = link.clone();
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
                    let (up, down) = match &link {
                        Some(l) => (Some(Dir(l.clone(), true)), Some(Dir(l.clone(), false))),
                        None => (None, None),
                    };
                    let mut lines = AbortAll(vec![
                        tokio::spawn(delay_line(ir, ow, cfg, up)),
                        tokio::spawn(delay_line(or, iw, down_cfg, down)),
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

/// One direction of a shared link (`true`: up).
struct Dir(Arc<Link>, bool);

impl Dir {
    fn send(&self, arrival: Instant, len: usize) -> Instant {
        let clock = if self.1 { &self.0.up } else { &self.0.down };
        clock
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(arrival, len)
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

/// Copies `from` to `to`, releasing each chunk after the configured delay
/// (and, with `link`, once the link has carried it).
async fn delay_line(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    cfg: DelayConfig,
    link: Option<Dir>,
) {
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
        let sent = match &link {
            Some(l) => l.send(arrival, buf.len()),
            None => arrival,
        };
        let mut d = cfg.delay.as_secs_f64();
        if !cfg.jitter.is_zero() {
            d += (rng.f64() * 2.0 - 1.0) * cfg.jitter.as_secs_f64();
        }
        if cfg.loss > 0.0 && rng.f64() < cfg.loss {
            d += LOSS_PENALTY.as_secs_f64();
        }
        let at = (sent + Duration::from_secs_f64(d.max(0.0))).max(last);
        last = at;
        if tx.send((at, buf.split().freeze())).is_err() {
            break;
        }
    }
    drop(tx);
    let _ = writer.await;
}

/// `ferrite bench proxy`: a proxy on `listen` in front of `target` until
/// the process is stopped; prints where it listens.
pub async fn run_standalone(
    listen: SocketAddr,
    target: SocketAddr,
    cfg: DelayConfig,
    rate: Option<f64>,
) -> crate::Result<()> {
    let p = Proxy::start_at(listen, target, cfg, rate).await?;
    let rate_s = match rate {
        Some(r) => format!("{:.2} MiB/s per direction", r / f64::from(1u32 << 20)),
        None => "no rate limit".into(),
    };
    println!(
        "proxy: {} -> {target}, {rate_s}, delay {:?}, jitter {:?}, loss {}",
        p.addr, cfg.delay, cfg.jitter, cfg.loss
    );
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    drop(p);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: f64 = 1048576.0;

    /// Chunks handed over at once leave one after another at the rate:
    /// the k-th is out (k × len) / rate after the first arrived.
    #[test]
    fn a_link_releases_chunks_at_its_rate() {
        let t0 = Instant::now();
        let mut l = LinkClock::new(MIB);
        let chunk = 64 * 1024;
        let mut last = t0;
        for k in 1..=16u32 {
            let at = l.send(t0, chunk);
            let want = t0 + Duration::from_secs_f64(f64::from(k) / 16.0);
            let err = if at > want { at - want } else { want - at };
            assert!(
                err < Duration::from_micros(1),
                "chunk {k}: {at:?} vs {want:?}"
            );
            assert!(at > last);
            last = at;
        }
        // One MiB in all: a second.
        assert!(last - t0 >= Duration::from_secs(1) - Duration::from_micros(1));
    }

    /// An idle link starts a chunk when it arrives; a busy one when it
    /// is free; the bytes of any period never exceed the rate.
    #[test]
    fn an_idle_link_sends_on_arrival_and_a_busy_one_queues() {
        let t0 = Instant::now();
        let mut l = LinkClock::new(1000.0);
        assert_eq!(l.send(t0, 100), t0 + Duration::from_millis(100));
        // Arrives while the first is on the link: waits for it.
        assert_eq!(
            l.send(t0 + Duration::from_millis(50), 100),
            t0 + Duration::from_millis(200)
        );
        // Arrives long after: the link was idle, so no wait.
        let later = t0 + Duration::from_secs(5);
        assert_eq!(l.send(later, 500), later + Duration::from_millis(500));
        // 10,000 bytes in pieces arriving together take 10 s, however cut.
        let t1 = t0 + Duration::from_secs(100);
        let mut a = LinkClock::new(1000.0);
        let mut end = t1;
        for n in [1, 999, 3000, 4000, 2000] {
            end = a.send(t1, n);
        }
        assert_eq!(end, t1 + Duration::from_secs(10));
    }

    #[test]
    fn directions_of_a_link_are_separate() {
        let t0 = Instant::now();
        let l = Link::new(1000.0);
        let up = Dir(l.clone(), true);
        let down = Dir(l, false);
        assert_eq!(up.send(t0, 1000), t0 + Duration::from_secs(1));
        // The other direction is idle.
        assert_eq!(down.send(t0, 1000), t0 + Duration::from_secs(1));
        assert_eq!(up.send(t0, 1000), t0 + Duration::from_secs(2));
    }
}
