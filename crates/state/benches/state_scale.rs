//! State costs against the amount of state (issue 9): EXCHANGE_ID, OPEN,
//! CLOSE and LOCK on the NFSv4 state API, with 10 to 10,000 clients each
//! holding 100 opens. None of these may scan the whole server's state.
//! The costs here are a microsecond or less, so what growth there is comes
//! from the state outgrowing the CPU caches (a million opens), not from
//! work: the run fails at a ratio above 4 between the largest and the
//! smallest size, where a scan of every stateid would show a ratio in the
//! thousands. The per-request ratio (compounds over the wire, where the
//! 2x target applies) is measured by `cargo bench -p e2e --bench state_wire`.
//!
//! `cargo bench -p state --bench state_scale` (FERRITE_STATE_SCALE=10,100
//! picks other client counts). Results: docs/benchmarks.md.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use proto::nfs4::*;
use state::clock::ManualClock;
use state::locks::LockKind;
use state::{LockRequest, Principal, State};

mod support;

const OPENS_PER_CLIENT: usize = 100;
/// Operations timed per measurement, and measurements per cell.
const BATCH: usize = 2_000;
const ROUNDS: usize = 5;

fn file(client: usize, n: usize) -> state::FileKey {
    let mut h = [0u8; 16];
    h[..8].copy_from_slice(&(client as u64).to_be_bytes());
    h[8..].copy_from_slice(&(n as u64).to_be_bytes());
    (1, Bytes::copy_from_slice(&h))
}

/// A state with `clients` clients holding `OPENS_PER_CLIENT` opens each.
fn populate(clients: usize) -> (State, Vec<ClientId4>) {
    let st = State::new(1, Duration::from_secs(90), Arc::new(ManualClock::default()));
    let owner = Bytes::from_static(b"open-owner");
    let mut ids = Vec::with_capacity(clients);
    for c in 0..clients {
        let Some(id) = support::client(&st, format!("client-{c}").as_bytes()) else {
            panic!("client {c} refused");
        };
        for n in 0..OPENS_PER_CLIENT {
            st.open(id, &owner, &file(c, n), 3, 0).expect("open");
        }
        ids.push(id);
    }
    (st, ids)
}

/// Median over `ROUNDS` of the mean time per operation of `BATCH` runs.
fn measure(mut round: impl FnMut(usize)) -> Duration {
    let mut per_op: Vec<Duration> = (0..ROUNDS)
        .map(|r| {
            let t = Instant::now();
            round(r);
            t.elapsed() / BATCH as u32
        })
        .collect();
    per_op.sort();
    per_op[ROUNDS / 2]
}

struct Costs {
    exchange_id: Duration,
    open: Duration,
    close: Duration,
    lock: Duration,
}

fn costs(st: &State, ids: &[ClientId4]) -> Costs {
    let owner = Bytes::from_static(b"bench-owner");
    // Spread the work over the clients, as many clients would.
    let who = |i: usize| (ids[i % ids.len()], i % ids.len());
    let exchange_id = measure(|r| {
        for i in 0..BATCH {
            let o = ClientOwner4 {
                verifier: [2; 8],
                ownerid: Bytes::from(format!("new-{r}-{i}")),
            };
            let x = st.exchange_id(&o, Principal::Sys { uid: 0, gid: 0 }, false);
            assert!(x.is_ok(), "EXCHANGE_ID failed: {x:?}");
        }
    });
    let mut opened = Vec::with_capacity(BATCH);
    let mut open = Vec::new();
    let mut close = Vec::new();
    for r in 0..ROUNDS {
        let t = Instant::now();
        for i in 0..BATCH {
            let (id, c) = who(i);
            let f = file(c, OPENS_PER_CLIENT + r * BATCH + i);
            opened.push((id, st.open(id, &owner, &f, 3, 0).expect("open"), f));
        }
        open.push(t.elapsed() / BATCH as u32);
        let t = Instant::now();
        for (id, sid, f) in opened.drain(..) {
            st.close(id, &sid, &f).expect("close");
        }
        close.push(t.elapsed() / BATCH as u32);
    }
    // LOCK: a new lock owner on one of the client's existing opens.
    let lock = {
        let targets: Vec<(ClientId4, StateId4, state::FileKey)> = (0..BATCH)
            .map(|i| {
                let (id, c) = who(i);
                let f = file(c, i % OPENS_PER_CLIENT);
                let sid = st
                    .open(id, &Bytes::from_static(b"open-owner"), &f, 3, 0)
                    .expect("re-open");
                (id, sid, f)
            })
            .collect();
        measure(|r| {
            for (i, (id, sid, f)) in targets.iter().enumerate() {
                let req = LockRequest {
                    client: *id,
                    new_owner: Some(Bytes::from(format!("lo-{r}"))),
                    presented: StateId4 { seqid: 0, ..*sid },
                    file: f.clone(),
                    start: (r * BATCH + i) as u64 * 10,
                    end: (r * BATCH + i) as u64 * 10 + 5,
                    kind: LockKind::Write,
                    blocking: false,
                    reclaim: false,
                    fh: Bytes::new(),
                };
                assert!(st.lock(&req).is_ok(), "LOCK failed");
            }
        })
    };
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    Costs {
        exchange_id,
        open: median(open),
        close: median(close),
        lock,
    }
}

fn main() {
    // `cargo test --benches` runs benchmarks with --bench absent: do a
    // small run then, so the benchmark's own check is exercised quickly.
    let quick = !std::env::args().any(|a| a == "--bench");
    let sizes: Vec<usize> = match std::env::var("FERRITE_STATE_SCALE") {
        Ok(s) => s.split(',').filter_map(|n| n.trim().parse().ok()).collect(),
        Err(_) if quick => vec![10, 200],
        Err(_) => vec![10, 100, 1_000, 10_000],
    };
    println!(
        "clients x {OPENS_PER_CLIENT} opens | EXCHANGE_ID | OPEN | CLOSE | LOCK (ns per operation, median of {ROUNDS} x {BATCH})"
    );
    let mut rows = Vec::new();
    for &n in &sizes {
        let t = Instant::now();
        let (st, ids) = populate(n);
        let built = t.elapsed();
        let c = costs(&st, &ids);
        println!(
            "{n:>7} | {:>6} | {:>6} | {:>6} | {:>6}   (state built in {:.1} s)",
            c.exchange_id.as_nanos(),
            c.open.as_nanos(),
            c.close.as_nanos(),
            c.lock.as_nanos(),
            built.as_secs_f64()
        );
        rows.push(c);
    }
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
        return;
    };
    let ratio = |a: Duration, b: Duration| b.as_secs_f64() / a.as_secs_f64().max(1e-9);
    let ratios = [
        ("EXCHANGE_ID", ratio(first.exchange_id, last.exchange_id)),
        ("OPEN", ratio(first.open, last.open)),
        ("CLOSE", ratio(first.close, last.close)),
        ("LOCK", ratio(first.lock, last.lock)),
    ];
    let mut flat = true;
    for (name, r) in ratios {
        println!("{name}: largest / smallest = {r:.2}");
        flat &= r <= 4.0;
    }
    assert!(
        flat,
        "a state cost grew more than 4x with the amount of state"
    );
}
