//! `ferrite reload`, and what a server does on SIGHUP: the configuration
//! read again and its exports and rules applied while serving
//! (`server::observe::reload`).

use std::fmt::Write;

use server::observe::reload::ReloadReport;
use server::run::Running;
use tracing::{error, info, warn};

use crate::config::{self, ServeArgs};
use crate::stat::{answer_of, ask_once, out, ServerArg};

#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "Examples:
  ferrite reload                         # the server whose state directory is the default one
  ferrite reload --state-dir /srv/state  # the server started with --state-dir /srv/state
  kill -HUP $(pidof ferrite)             # the same, without an answer
The server reads its --config file again and applies the changes to its exports
and their client rules without dropping a client. It prints what changed, and
what takes a restart; a configuration with an error changes nothing.")]
pub struct ReloadArgs {
    #[command(flatten)]
    pub server: ServerArg,
    /// Print the answer as JSON (one line).
    #[arg(long)]
    pub json: bool,
}

/// `ferrite reload`: asks the server to reload, prints what changed.
pub fn main(args: ReloadArgs) -> anyhow::Result<()> {
    let r: ReloadReport = answer_of(&ask_once(&args.server, "reload")?, "reload refused")?;
    if args.json {
        out(&format!("{}\n", serde_json::to_string(&r)?));
    } else {
        out(&render(&r));
    }
    Ok(())
}

fn render(r: &ReloadReport) -> String {
    let mut o = String::new();
    if r.changes.is_empty() {
        o.push_str("reloaded: no change to the exports\n");
    }
    for c in &r.changes {
        let _ = writeln!(o, "reloaded: {c}");
    }
    for c in &r.at_restart {
        let _ = writeln!(o, "not yet: {c}");
    }
    o
}

/// Reads the configuration again (as `ferrite serve` was started: the
/// same arguments) and applies it to `running`; logged, and answered as
/// the administration socket's JSON.
pub async fn reload(args: &ServeArgs, running: &Running, why: &str) -> String {
    info!("{why}: reading the configuration again");
    let a = args.clone();
    let loaded = tokio::task::spawn_blocking(move || config::load(&a))
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r.map_err(|e| format!("{e:#}")));
    let outcome = match loaded {
        Ok(cfg) => running.reload(cfg).await,
        Err(e) => {
            let why = format!("the configuration does not load: {e}");
            running.nfs4.stats.note_reload(Err(&why));
            Err(why)
        }
    };
    match outcome {
        Ok(r) => {
            if r.changes.is_empty() {
                info!("reload: no change to the exports");
            }
            for c in &r.changes {
                info!("reload: {c}");
            }
            for c in &r.at_restart {
                warn!("reload: {c}");
            }
            serde_json::to_string(&r).unwrap_or_else(|e| error_json(&e.to_string()))
        }
        Err(e) => {
            error!("reload refused, nothing changed: {e}");
            error_json(&e)
        }
    }
}

fn error_json(why: &str) -> String {
    serde_json::json!({ "error": why }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_changes_and_what_waits() {
        let r = ReloadReport {
            changes: vec!["export /a (id 0) added: /srv/a".into()],
            at_restart: vec![
                "the listening address changed: takes effect at the next start".into(),
            ],
        };
        assert_eq!(
            render(&r),
            "reloaded: export /a (id 0) added: /srv/a\n\
             not yet: the listening address changed: takes effect at the next start\n"
        );
        assert_eq!(
            render(&ReloadReport::default()),
            "reloaded: no change to the exports\n"
        );
    }
}
