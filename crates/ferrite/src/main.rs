//! The `ferrite` command: `ferrite serve DIR` and friends.

mod config;

use anyhow::Context;
use clap::{Parser, Subcommand};
use tracing::{info, warn};

#[derive(Parser)]
#[command(name = "ferrite", version, about = "A userspace NFS server")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Export a directory over NFSv4.1/4.2 (created if missing).
    Serve(config::ServeArgs),
    /// Benchmark an NFS server: run, prepare, report, compare.
    Bench(bench::cli::BenchArgs),
}

fn main() -> anyhow::Result<()> {
    keep_io_buffers_in_the_heap();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Serve(args) => serve(args),
        Cmd::Bench(args) => Ok(bench::cli::main(args)?),
    }
}

/// READ replies and WRITE requests carry buffers of up to 1 MiB, made
/// and freed on every call. glibc serves an allocation that large with
/// its own mmap, unmapped again at free, unless its dynamic threshold
/// happens to have risen past it: every 1 MiB READ then paid 256 page
/// faults and the kernel's zeroing of each page (a quarter of seqread's
/// server CPU, measured with perf). Allocations up to 4 MiB come from
/// the heap, which keeps up to 64 MiB of free memory before giving it
/// back, so those buffers are reused.
fn keep_io_buffers_in_the_heap() {
    // SAFETY: mallopt only sets allocator parameters; called before any
    // other thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
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
        for e in &cfg.exports {
            println!(
                "ferrite: exporting {} as {} over NFSv4.1/4.2 on {} (lease {} s, state in {})",
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
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => info!("SIGINT: shutting down"),
            _ = term.recv() => info!("SIGTERM: shutting down"),
        }
        running.stop().await;
        println!("ferrite: stopped");
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(())
}
