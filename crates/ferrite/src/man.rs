//! `ferrite man DIR`: the manual pages, generated from the command-line
//! definitions (clap_mangen), so they say what `--help` says: ferrite.1
//! and one page per command (ferrite-serve.1, ferrite-stat.1, ...,
//! ferrite-bench-run.1). docs/man holds them as generated; a test keeps
//! them current.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::CommandFactory;

#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "Example:
  ferrite man docs/man && man -l docs/man/ferrite-serve.1")]
pub struct ManArgs {
    /// Where to write the pages (created if missing).
    pub dir: PathBuf,
}

pub fn main(args: ManArgs) -> anyhow::Result<()> {
    for (name, page) in pages()? {
        let at = args.dir.join(&name);
        write(&at, &page).with_context(|| format!("writing {}", at.display()))?;
        println!("{}", at.display());
    }
    Ok(())
}

fn write(at: &Path, page: &[u8]) -> std::io::Result<()> {
    if let Some(d) = at.parent() {
        std::fs::create_dir_all(d)?;
    }
    std::fs::write(at, page)
}

/// Every page: (file name, troff text).
pub fn pages() -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    let mut top = crate::Cli::command();
    top.build();
    add(&top, "ferrite", &mut out)?;
    Ok(out)
}

/// `cmd`'s page, named `name`, then its subcommands' (not `help`).
fn add(cmd: &clap::Command, name: &str, out: &mut Vec<(String, Vec<u8>)>) -> anyhow::Result<()> {
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone().name(name.to_string()))
        .date("")
        .render(&mut page)?;
    out.push((format!("{name}.1"), page));
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        add(sub, &format!("{name}-{}", sub.get_name()), out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// `ferrite serve --help` names the defaults the README's table gives,
    /// and they are the ones the server takes.
    #[test]
    fn serve_help_names_the_defaults() {
        use clap::CommandFactory;
        let mut top = crate::Cli::command();
        top.build();
        let serve = top.find_subcommand_mut("serve").unwrap();
        let help = serve.render_long_help().to_string();
        let lease = server::instance::Nfs4Config::default().lease.as_secs();
        for want in [
            format!("[default: {}]", crate::config::DEFAULT_LISTEN),
            format!("[default: {lease}]"),
            "[default:\n          /var/lib/ferrite as root, else ~/.local/state/ferrite]".into(),
            "[default: the lease]".into(),
            "[default: 4096]".into(),
        ] {
            let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(flat(&help).contains(&flat(&want)), "{want} not in:\n{help}");
        }
    }

    /// docs/man is what `ferrite man` writes now: regenerate it with
    /// `cargo run -p ferrite -- man docs/man` after changing an option.
    #[test]
    fn the_committed_pages_are_current() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/man");
        let pages = super::pages().unwrap();
        assert!(pages.iter().any(|(n, _)| n == "ferrite-serve.1"));
        assert!(pages.iter().any(|(n, _)| n == "ferrite-bench-run.1"));
        for (name, page) in &pages {
            let committed = std::fs::read(dir.join(name)).unwrap_or_else(|e| {
                panic!("docs/man/{name}: {e} (run `cargo run -p ferrite -- man docs/man`)")
            });
            assert!(
                committed == *page,
                "docs/man/{name} is stale: run `cargo run -p ferrite -- man docs/man`"
            );
        }
        let committed = std::fs::read_dir(&dir).unwrap().count();
        assert_eq!(
            committed,
            pages.len(),
            "docs/man holds pages no command has"
        );
    }
}
