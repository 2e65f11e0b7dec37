//! The lock split/join benchmark over the wire: an in-process server on
//! loopback, one client; per iteration OPEN, LOCK of the whole file, then
//! `n` LOCKU compounds (SEQUENCE, PUTFH, LOCKU) punching 1,000-byte holes
//! at a stride of 2,000 bytes, one after another, and CLOSE after a final
//! LOCKU of everything. Per-LOCKU time that stays flat from 3,000 to
//! 30,000 holes shows nothing quadratic in the server's lock path. The
//! in-process and local-file versions are `cargo bench -p state --bench
//! locks`; numbers in docs/benchmarks.md.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Duration;

use client::Client;
use common::*;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use proto::nfs4::*;

async fn split(c: &Client, root: &NfsFh4, n: u64) {
    let o = create_file(c, root, "locked").await;
    let owner = c.new_owner("bench");
    let ls = c
        .lock(
            &o.fh,
            NfsLockType4::WriteLt,
            0,
            u64::MAX,
            c.new_locker(o.stateid, owner),
        )
        .await
        .expect("LOCK");
    // seqid 0: "the current one" (RFC 8881 §8.2.2).
    let cur = StateId4 {
        seqid: 0,
        other: ls.other,
    };
    for i in 0..n {
        c.locku(&o.fh, NfsLockType4::WriteLt, cur, i * 2000, 1000)
            .await
            .expect("LOCKU");
    }
    c.locku(&o.fh, NfsLockType4::WriteLt, cur, 0, u64::MAX)
        .await
        .expect("LOCKU all");
    c.close(&o.fh, o.stateid).await.expect("CLOSE");
}

fn bench(cr: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (srv, c, root) = rt.block_on(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        let root = c.root_fh().await.expect("root");
        (srv, c, root)
    });
    let mut g = cr.benchmark_group("lock_split_wire");
    g.sample_size(10);
    g.warm_up_time(Duration::from_millis(500));
    for n in [3_000u64, 30_000] {
        g.bench_with_input(BenchmarkId::new("locku", n), &n, |b, &n| {
            b.iter(|| rt.block_on(split(&c, &root, n)))
        });
    }
    g.finish();
    rt.block_on(async move {
        let _ = c.destroy().await;
        drop(srv);
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
