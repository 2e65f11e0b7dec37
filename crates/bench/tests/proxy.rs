//! The delay proxy: added round-trip time within a tolerance for a noisy
//! shared machine, order kept, loss as a 200 ms penalty. A busy machine
//! only adds time, so every ping pays at least the delay, and the
//! fastest of a few shows what the proxy adds: the upper bounds are on
//! it, with a margin of a whole further delay.

use std::time::{Duration, Instant};

use bench::proxy::{DelayConfig, Proxy, LOSS_PENALTY};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

async fn echo_server() -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = l.accept().await.unwrap();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                loop {
                    let n = match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    if s.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// The fastest round trip of `n` 100-byte pings.
async fn min_rtt(addr: std::net::SocketAddr, n: usize) -> Duration {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    let mut v = Vec::new();
    for i in 0..n {
        let msg = [i as u8; 100];
        let t = Instant::now();
        s.write_all(&msg).await.unwrap();
        let mut got = [0u8; 100];
        s.read_exact(&mut got).await.unwrap();
        assert_eq!(got, msg, "bytes arrive intact and in order");
        v.push(t.elapsed());
    }
    v.into_iter().min().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adds_the_delay_in_each_direction() {
    let echo = echo_server().await;
    let delay = Duration::from_millis(20);
    let p = Proxy::start(
        echo,
        DelayConfig {
            delay,
            jitter: Duration::ZERO,
            loss: 0.0,
            seed: 1,
        },
    )
    .await
    .unwrap();
    let via = min_rtt(p.addr, 5).await;
    // Every ping (the fastest too) waits the delay each way.
    assert!(via >= 2 * delay, "RTT {via:?} < 2 x {delay:?}");
    // And the proxy adds no more than that: the fastest of 5 is under a
    // third delay. Loopback and the proxy's copying take well under a
    // millisecond of its 20, so a machine ten times slower meets this,
    // and a stall would have to hold up all five pings.
    assert!(via < 3 * delay, "RTT {via:?} too long");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jitter_keeps_order_and_loss_costs_a_rto() {
    let echo = echo_server().await;
    let p = Proxy::start(
        echo,
        DelayConfig {
            delay: Duration::from_millis(5),
            jitter: Duration::from_millis(4),
            loss: 0.0,
            seed: 7,
        },
    )
    .await
    .unwrap();
    // A burst of writes comes back byte-exact and in order.
    let mut s = TcpStream::connect(p.addr).await.unwrap();
    let data: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let (mut r, mut w) = s.split();
    let send = async {
        for c in data.chunks(1000) {
            w.write_all(c).await.unwrap();
        }
    };
    let recv = async {
        let mut got = vec![0u8; data.len()];
        r.read_exact(&mut got).await.unwrap();
        got
    };
    let ((), got) = tokio::join!(send, recv);
    assert!(got == data);

    // loss = 100%: every chunk pays the penalty in each direction.
    let lossy = Proxy::start(
        echo,
        DelayConfig {
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            loss: 1.0,
            seed: 1,
        },
    )
    .await
    .unwrap();
    let t = min_rtt(lossy.addr, 2).await;
    assert!(t >= 2 * LOSS_PENALTY, "{t:?}");
    // One penalty each way, not more: the faster of two is under a third
    // (200 ms, against the well under a millisecond loopback takes, as
    // above).
    assert!(t < 3 * LOSS_PENALTY, "{t:?}");
}

/// A server that counts the bytes it is sent and says, on `done`, when
/// it has had `want` in all (over any number of connections).
async fn sink(
    want: usize,
) -> (
    std::net::SocketAddr,
    tokio::sync::oneshot::Receiver<Instant>,
) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let got = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let tx = std::sync::Arc::new(std::sync::Mutex::new(Some(tx)));
    tokio::spawn(async move {
        loop {
            let (mut s, _) = l.accept().await.unwrap();
            let (got, tx) = (got.clone(), tx.clone());
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                loop {
                    let n = match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    let total = got.fetch_add(n, std::sync::atomic::Ordering::SeqCst) + n;
                    if total >= want {
                        if let Some(tx) = tx.lock().unwrap().take() {
                            let _ = tx.send(Instant::now());
                        }
                    }
                }
            });
        }
    });
    (addr, rx)
}

/// A rate-limited proxy: N bytes take at least N / rate to get through,
/// on one connection or shared by several (one proxy is one link). Only
/// lower bounds: a busy machine makes it slower, never faster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_holds_bytes_to_the_link_capacity() {
    let rate = 2.0 * 1024.0 * 1024.0; // 2 MiB/s
    let n = 512 * 1024; // 0.25 s at the rate
    let min = Duration::from_secs_f64(n as f64 / rate);
    for conns in [1usize, 4] {
        let (server, done) = sink(n).await;
        let p = Proxy::start_at(
            "127.0.0.1:0".parse().unwrap(),
            server,
            DelayConfig::NONE,
            Some(rate),
        )
        .await
        .unwrap();
        let t0 = Instant::now();
        let mut senders = Vec::new();
        for _ in 0..conns {
            let addr = p.addr;
            let part = n / conns;
            senders.push(tokio::spawn(async move {
                let mut s = TcpStream::connect(addr).await.unwrap();
                let data = vec![7u8; part];
                for c in data.chunks(16 * 1024) {
                    s.write_all(c).await.unwrap();
                }
                s.flush().await.unwrap();
                // Held open until the sink has everything.
                s
            }));
        }
        let mut held = Vec::new();
        for s in senders {
            held.push(s.await.unwrap());
        }
        let at = done.await.unwrap();
        let took = at - t0;
        assert!(
            took >= min,
            "{conns} connections: {n} bytes in {took:?} < {min:?}"
        );
    }
}
