//! Request costs against the amount of state, over the wire (issue 9):
//! an in-process server on loopback holds 10 to 10,000 clients with 100
//! opens each, and one more client times its requests: a new client
//! (EXCHANGE_ID, CREATE_SESSION, RECLAIM_COMPLETE on a new connection),
//! OPEN and CLOSE of an existing file, LOCK and LOCKU. No request may cost
//! time in the server's whole state: the run fails if a request's mean
//! time at the largest size is more than twice that at the smallest.
//!
//! The filler clients are made through the server's state API, as
//! EXCHANGE_ID and CREATE_SESSION make them (making a million opens over
//! the wire would take minutes and measure nothing more).
//!
//! `cargo bench -p e2e --bench state_wire` (FERRITE_STATE_SCALE=10,1000
//! picks other client counts). Results: docs/benchmarks.md.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use client::{Client, OpenOpts};
use common::*;
use proto::nfs4::*;
use state::slots::CacheMemory;
use state::{NewSession, Principal, State};

const OPENS_PER_CLIENT: usize = 100;
/// Requests timed per measurement.
const BATCH: usize = 300;
const NEW_CLIENTS: usize = 30;

/// Adds filler clients until `state` holds `target`, each with
/// `OPENS_PER_CLIENT` opens of its own files.
fn fill(state: &State, have: &mut usize, target: usize) {
    let attrs = client::fore_channel_attrs(4);
    let p = Principal::Sys { uid: 0, gid: 0 };
    let owner = Bytes::from_static(b"filler-open-owner");
    while *have < target {
        let n = *have;
        let co = ClientOwner4 {
            verifier: [1; 8],
            ownerid: Bytes::from(format!("filler-{n}")),
        };
        let x = state
            .exchange_id(&co, p.clone(), false)
            .expect("EXCHANGE_ID");
        state
            .create_session(NewSession {
                clientid: x.clientid,
                sequence: x.sequenceid,
                principal: p.clone(),
                flags: 0,
                fore: attrs,
                back: attrs,
                cb_program: 0,
                sec_parms: Vec::new(),
                minorversion: 1,
                conn: None,
                drc: CacheMemory::new(1 << 20),
                io: Box::new(()),
            })
            .expect("CREATE_SESSION");
        state
            .reclaim_complete(x.clientid)
            .expect("RECLAIM_COMPLETE");
        for i in 0..OPENS_PER_CLIENT {
            let h = Bytes::from(format!("filler-{n}-{i}"));
            state.open(x.clientid, &owner, &(0, h), 3, 0).expect("OPEN");
        }
        *have += 1;
    }
}

/// Mean time per iteration of `f` over `n` iterations.
async fn mean<F, Fut>(n: usize, mut f: F) -> Duration
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let t = Instant::now();
    for i in 0..n {
        f(i).await;
    }
    t.elapsed() / n as u32
}

struct Costs {
    new_client: Duration,
    open_close: Duration,
    lock_unlock: Duration,
}

async fn costs(srv: &TestServer, c: &Client, files: &[NfsFh4]) -> Costs {
    let new_client = mean(NEW_CLIENTS, |_| async {
        let n = srv.client().await;
        n.destroy().await.expect("destroy");
    })
    .await;
    let open_close = mean(BATCH, |i| async move {
        let o = c
            .open_fh(&files[i % files.len()], OpenOpts::both())
            .await
            .expect("OPEN");
        c.close(&o.fh, o.stateid).await.expect("CLOSE");
    })
    .await;
    let o = c.open_fh(&files[0], OpenOpts::both()).await.expect("OPEN");
    let owner = c.new_owner("bench-lock");
    let ls = c
        .lock(
            &o.fh,
            NfsLockType4::WriteLt,
            0,
            1,
            c.new_locker(o.stateid, owner),
        )
        .await
        .expect("LOCK");
    let cur = StateId4 {
        seqid: 0,
        other: ls.other,
    };
    let fh = o.fh.clone();
    let lock_unlock = mean(BATCH, |i| {
        let fh = fh.clone();
        async move {
            let at = 10 + i as u64 * 2;
            c.lock(&fh, NfsLockType4::WriteLt, at, 1, c.existing_locker(cur))
                .await
                .expect("LOCK");
            c.locku(&fh, NfsLockType4::WriteLt, cur, at, 1)
                .await
                .expect("LOCKU");
        }
    })
    .await;
    c.locku(&o.fh, NfsLockType4::WriteLt, cur, 0, u64::MAX)
        .await
        .expect("LOCKU all");
    c.close(&o.fh, o.stateid).await.expect("CLOSE");
    Costs {
        new_client,
        open_close,
        lock_unlock,
    }
}

fn main() {
    let quick = !std::env::args().any(|a| a == "--bench");
    let sizes: Vec<usize> = match std::env::var("FERRITE_STATE_SCALE") {
        Ok(s) => s.split(',').filter_map(|n| n.trim().parse().ok()).collect(),
        Err(_) if quick => vec![10, 100],
        Err(_) => vec![10, 100, 1_000, 10_000],
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        let root = c.root_fh().await.expect("root");
        let mut files = Vec::new();
        for i in 0..16 {
            let o = create_file(&c, &root, &format!("f{i}")).await;
            c.close(&o.fh, o.stateid).await.expect("CLOSE");
            files.push(o.fh);
        }
        let state = srv.running.as_ref().expect("running").nfs4.clone();
        let mut have = 0;
        println!(
            "clients x {OPENS_PER_CLIENT} opens | new client | OPEN+CLOSE | LOCK+LOCKU (µs per pair, loopback, mean)"
        );
        let mut rows = Vec::new();
        for &n in &sizes {
            fill(state.state(), &mut have, n);
            let k = costs(&srv, &c, &files).await;
            println!(
                "{n:>7} | {:>8.1} | {:>8.1} | {:>8.1}",
                k.new_client.as_secs_f64() * 1e6,
                k.open_close.as_secs_f64() * 1e6,
                k.lock_unlock.as_secs_f64() * 1e6
            );
            rows.push(k);
        }
        let (Some(a), Some(b)) = (rows.first(), rows.last()) else {
            return;
        };
        let r = |x: Duration, y: Duration| y.as_secs_f64() / x.as_secs_f64().max(1e-9);
        let ratios = [
            ("new client", r(a.new_client, b.new_client)),
            ("OPEN+CLOSE", r(a.open_close, b.open_close)),
            ("LOCK+LOCKU", r(a.lock_unlock, b.lock_unlock)),
        ];
        for (name, x) in ratios {
            println!("{name}: largest / smallest = {x:.2}");
        }
        assert!(
            ratios.iter().all(|(_, x)| *x <= 2.0),
            "a request's cost grew more than 2x with the amount of state"
        );
    });
}
