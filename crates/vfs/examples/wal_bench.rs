//! The write log's own figures: appends per second, records per
//! `fdatasync` and bytes per second, for THREADS concurrent appenders of
//! SIZE-byte records on the file system holding DIR.
//!
//!   cargo run --release -p vfs --example wal_bench -- DIR [THREADS] [SIZE] [SECS]
//!
//! DIR must not exist or be empty: the bench makes its log there and
//! removes it afterwards. Applied records are released as they go (as the
//! server will once it applies them), so the log stays within its capacity.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use vfs::wal::{Wal, WalConfig};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.first().map(std::path::PathBuf::from) else {
        eprintln!("usage: wal_bench DIR [THREADS] [SIZE] [SECS]");
        std::process::exit(2);
    };
    let arg = |i: usize, d: u64| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let (threads, size, secs) = (arg(1, 16), arg(2, 4096) as usize, arg(3, 5));
    if dir.exists() && std::fs::read_dir(&dir).map_or(true, |mut d| d.next().is_some()) {
        eprintln!("{}: exists and is not empty", dir.display());
        std::process::exit(2);
    }
    let cfg = WalConfig {
        dir: dir.clone(),
        identity: [1; 16],
        segment_bytes: 64 << 20,
        capacity_bytes: 1 << 30,
    };
    let (wal, _) = Wal::open(cfg).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1);
    });
    let wal = Arc::new(wal);
    let stop = Arc::new(AtomicBool::new(false));
    let latency_ns = Arc::new(AtomicU64::new(0));
    let t0 = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (wal, stop, latency_ns) = (wal.clone(), stop.clone(), latency_ns.clone());
            std::thread::spawn(move || {
                let payload = vec![t as u8; size];
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let a = Instant::now();
                    let seq = wal.append(&payload).expect("append");
                    latency_ns.fetch_add(a.elapsed().as_nanos() as u64, Ordering::Relaxed);
                    n += 1;
                    // Everything durable is applied at once here.
                    if seq % 1024 == 0 {
                        wal.applied(seq).expect("applied");
                    }
                }
                n
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(secs));
    stop.store(true, Ordering::Relaxed);
    let appends: u64 = workers.into_iter().map(|w| w.join().unwrap_or(0)).sum();
    let took = t0.elapsed().as_secs_f64();
    let st = wal.stats();
    println!(
        "{threads} threads x {size} B records, {took:.1} s: {:.0} appends/s, {:.1} records per fdatasync ({} syncs), {:.1} MB/s logged, mean append {:.0} µs",
        appends as f64 / took,
        st.records as f64 / st.syncs.max(1) as f64,
        st.syncs,
        st.bytes as f64 / took / 1e6,
        latency_ns.load(Ordering::Relaxed) as f64 / appends.max(1) as f64 / 1e3,
    );
    drop(wal);
    let _ = std::fs::remove_dir_all(&dir);
}
