//! A second NFSv4.1 client that tries, again and again, to take a lock
//! another client holds, following the file's export when it moves
//! between two servers (tests/realclient-exports.sh, the migration
//! scenario). Every try must be refused: a lock granted to it is a lock
//! granted twice.
//!
//! Usage: lockprobe SERVER_A SERVER_B EXPORT FILE STOPFILE
//!
//! Each round: OPEN EXPORT/FILE (read-write, no delegation), LOCK a byte
//! at offset 0 for a new lock owner, CLOSE. NFS4ERR_DENIED is counted
//! (by the server that said it); NFS4ERR_MOVED switches to the other
//! server; NFS4ERR_DELAY is retried by the client. The first refusal by
//! each server is printed ("refused at ADDR") as it happens. A grant
//! prints GRANTED and exits 2; other errors are counted and exit 3 at
//! the end; no refusal from either server exits 4. Stops when STOPFILE
//! exists. The last line says "verdict: ok" or what went wrong.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use client::{Client, ClientOptions, OpenOpts};
use proto::nfs4::*;

#[derive(Debug)]
enum Round {
    Denied,
    Moved,
    Granted,
    Other(String),
}

async fn round(c: &Client, export: &str, file: &str, n: u64) -> Round {
    let r = c
        .compound(vec![
            NfsArgOp4::PutRootFh,
            NfsArgOp4::Lookup(Lookup4Args {
                objname: Bytes::from(export.to_string()),
            }),
            NfsArgOp4::GetFh,
        ])
        .await;
    let dir = match r {
        Ok(r) => match &r[2] {
            NfsResOp4::GetFh(Res4::Ok(f)) => f.object.clone(),
            other => return Round::Other(format!("{other:?}")),
        },
        Err(e) if e.status() == Some(NfsStat4::Nfs4errMoved) => return Round::Moved,
        Err(e) => return Round::Other(e.to_string()),
    };
    let mut o = OpenOpts::both();
    o.access |= OPEN4_SHARE_ACCESS_WANT_NO_DELEG;
    let open = match c.open(&dir, file, o).await {
        Ok(o) => o,
        Err(e) if e.status() == Some(NfsStat4::Nfs4errMoved) => return Round::Moved,
        Err(e) => return Round::Other(e.to_string()),
    };
    let owner = StateOwner4 {
        clientid: c.clientid(),
        owner: Bytes::from(format!("probe-{n}")),
    };
    let got = c
        .lock(
            &open.fh,
            NfsLockType4::WriteLt,
            0,
            1,
            c.new_locker(open.stateid, owner),
        )
        .await;
    let out = match got {
        Ok(_) => Round::Granted,
        Err(e) if e.status() == Some(NfsStat4::Nfs4errDenied) => Round::Denied,
        Err(e) if e.status() == Some(NfsStat4::Nfs4errMoved) => Round::Moved,
        Err(e) => Round::Other(e.to_string()),
    };
    let _ = c.close(&open.fh, open.stateid).await;
    out
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 6 {
        eprintln!("usage: lockprobe SERVER_A SERVER_B EXPORT FILE STOPFILE");
        std::process::exit(64);
    }
    let servers: [SocketAddr; 2] = [
        args[1].parse().expect("SERVER_A: ADDR:PORT"),
        args[2].parse().expect("SERVER_B: ADDR:PORT"),
    ];
    let (export, file, stop) = (&args[3], &args[4], Path::new(&args[5]));
    let mut at = 0;
    let mut denied = [0u64; 2];
    let mut moves = 0;
    let mut errors = Vec::new();
    let mut client: Option<Client> = None;
    let mut n = 0;
    while !stop.exists() {
        n += 1;
        if client.is_none() {
            let mut o = ClientOptions::new(format!("lockprobe-{}-{n}", std::process::id()));
            o.auth = rpc::Auth::sys(0, 0, Vec::new(), "lockprobe");
            match Client::connect(servers[at], o).await {
                Ok(c) => client = Some(c),
                Err(e) => {
                    errors.push(format!("connect {}: {e}", servers[at]));
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            }
        }
        let Some(c) = client.as_ref() else { continue };
        match round(c, export, file, n).await {
            Round::Denied => {
                denied[at] += 1;
                if denied[at] == 1 {
                    println!("round {n}: refused at {}", servers[at]);
                }
            }
            Round::Moved => {
                moves += 1;
                at = 1 - at;
                client = None;
                println!("round {n}: NFS4ERR_MOVED: to {}", servers[at]);
                continue;
            }
            Round::Granted => {
                println!(
                    "GRANTED the lock at {} in round {n} (refused {} times at {}, {} at {})",
                    servers[at], denied[0], servers[0], denied[1], servers[1]
                );
                println!("verdict: a lock granted twice");
                std::process::exit(2);
            }
            Round::Other(e) => errors.push(format!("round {n} at {}: {e}", servers[at])),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "refused {} times at {}, {} at {}; {moves} moves followed; {} errors {:?}",
        denied[0],
        servers[0],
        denied[1],
        servers[1],
        errors.len(),
        errors.iter().take(5).collect::<Vec<_>>()
    );
    if !errors.is_empty() {
        println!("verdict: errors");
        std::process::exit(3);
    }
    if denied[0] == 0 || denied[1] == 0 {
        println!("verdict: not refused by both servers");
        std::process::exit(4);
    }
    println!("verdict: ok");
}
