//! The `ferrite` command: `ferrite serve DIR` and friends.

mod config;
mod man;
mod migrate;
mod notify;
mod reload;
mod stat;

use std::io::IsTerminal;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use tracing::{info, warn};

#[derive(Parser)]
#[command(
    name = "ferrite",
    version,
    about = "A userspace NFS server",
    after_help = "Examples:
  ferrite serve ./export                      # export ./export at / on 127.0.0.1:2049
  ferrite serve --config /etc/ferrite.toml    # exports and rules from a file
  ferrite stat --watch                        # what a running server is doing, every second
  ferrite reload                              # apply the edited --config file's exports and rules
  ferrite migrate /data --to 10.0.0.2:2049    # move an export and its clients' state to another Ferrite
  ferrite bench run randread --target nfs4://127.0.0.1:2049/
  ferrite man docs/man                        # write the manual pages"
)]
pub struct Cli {
    /// How log lines are written to standard error: "text" (coloured
    /// only on a terminal) or "json" (one object per line).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Cmd {
    /// Export a directory over NFSv4.0/4.1/4.2 and NFSv3 (created if missing).
    Serve(config::ServeArgs),
    /// Benchmark an NFS server: run, prepare, report, compare.
    Bench(bench::cli::BenchArgs),
    /// A running server's statistics: operations, latency, exports,
    /// clients (over its administration socket).
    Stat(stat::StatArgs),
    /// What a running server exports, and to whom (its rules in order).
    Exports(stat::ExportsArgs),
    /// Make a running server read its configuration again and apply the
    /// changes to its exports and rules (as SIGHUP does).
    Reload(reload::ReloadArgs),
    /// Move an export, with its clients' opens and locks, to another
    /// Ferrite that sees the same files (transparent state migration).
    Migrate(migrate::MigrateArgs),
    /// Write the manual pages (ferrite.1 and one per command) into DIR.
    Man(man::ManArgs),
}

/// mimalloc rather than glibc's malloc: every call allocates and frees
/// small buffers (records, replies, operation lists) on one thread or
/// another, and its thread-local free lists cost less per call than
/// glibc's arenas (`tools/cpu-ab.sh`: randread at 16 threads 0.79 to
/// 0.92, randwrite 0.89 to 0.90, dirlist 0.88 to 0.94; the one-request
/// rows unchanged). 1 MiB I/O buffers are reused from its segments, not
/// mapped per call.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    no_transparent_huge_pages();
    let cli = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match cli.log_format {
        LogFormat::Json => logs.json().init(),
        // No colour codes in a file or a journal.
        LogFormat::Text => logs.with_ansi(std::io::stderr().is_terminal()).init(),
    }
    match cli.cmd {
        Cmd::Serve(args) => serve(args),
        Cmd::Bench(args) => Ok(bench::cli::main(args)?),
        Cmd::Stat(args) => stat::main(args),
        Cmd::Exports(args) => stat::exports_main(args),
        Cmd::Reload(args) => reload::main(args),
        Cmd::Migrate(args) => migrate::main(args),
        Cmd::Man(args) => man::main(args),
    }
}

/// mimalloc asks for transparent huge pages for its arenas
/// (MADV_HUGEPAGE), and every fresh 2 MiB of them is zeroed at its first
/// touch: with the blocking pool's threads coming and going, a create
/// workload spent 32% of the server's CPU in `clear_page_erms` and its
/// resident memory grew to 600 MB (perf, 2x4 creating threads). Small
/// pages cost that only for what is used.
fn no_transparent_huge_pages() {
    // SAFETY: PR_SET_THP_DISABLE takes integer arguments and changes only
    // how this process's future page faults are served.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

fn serve(args: config::ServeArgs) -> anyhow::Result<()> {
    let cfg = config::load(&args)?;
    // Every connection is a descriptor: take all the system allows.
    match rpc::raise_nofile_limit() {
        Ok((old, new)) if new > old => info!("descriptor limit raised from {old} to {new}"),
        Ok(_) => {}
        Err(e) => warn!("could not raise the descriptor limit: {e}"),
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async move {
        let running = server::run::start(cfg.clone())
            .await
            .with_context(|| format!("starting the server on {}", cfg.listen))?;
        let served = running.nfs4.exports();
        for e in &cfg.exports {
            let away = served
                .iter()
                .find(|x| x.path == e.path)
                .and_then(|x| running.nfs4.away.get(x.id));
            let note = match away {
                Some(server::exports::away::Away::Elsewhere(at)) => {
                    format!(" (served by {at} now: NFSv4 clients are sent there)")
                }
                _ => String::new(),
            };
            println!(
                "ferrite: exporting {} as {} over NFSv4.0/4.1/4.2 on {} (lease {} s, state in {}){note}",
                e.dir.display(),
                e.path,
                running.addr,
                cfg.nfs4.lease.as_secs(),
                cfg.state_dir.display()
            );
        }
        for line in &running.programs {
            println!("ferrite: {line}");
        }
        // The handlers first: a SIGTERM right after READY stops cleanly.
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
        let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
        let mut asked = running.reload_requests();
        // Under systemd (Type=notify): serving from here on.
        notify::send(&format!(
            "READY=1\nSTATUS=serving on {}\nMAINPID={}",
            running.addr,
            std::process::id()
        ));
        loop {
            tokio::select! {
                _ = int.recv() => break info!("SIGINT: shutting down"),
                _ = term.recv() => break info!("SIGTERM: shutting down"),
                _ = hup.recv() => {
                    notify::send("RELOADING=1");
                    reload::reload(&args, &running, "SIGHUP").await;
                    notify::send("READY=1");
                }
                Some(answer) = asked.recv() => {
                    notify::send("RELOADING=1");
                    let _ = answer.send(reload::reload(&args, &running, "ferrite reload").await);
                    notify::send("READY=1");
                }
            }
        }
        notify::send("STOPPING=1");
        running.stop().await;
        println!("ferrite: stopped");
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(())
}
