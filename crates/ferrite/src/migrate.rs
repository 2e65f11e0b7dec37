//! `ferrite migrate`: moves an export, with its clients' state, from the
//! running server to another Ferrite (`server::migrate`).

use server::migrate::outgoing::MoveReport;

use crate::stat::{answer_of, ask_once, out, ServerArg};

#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "Examples:
  ferrite migrate /data --to 10.0.0.2:2049
  ferrite migrate /data --to 127.0.0.1:2050 --location 10.0.0.2:2049 --state-dir /srv/a
The destination must see the same files (the same directory, or a shared file
system), serve the export at the same path with the same id, configured with
served_by = this server, and share this server's STATE_DIR/fh.key. The export's
delegations and layouts are recalled, then its clients' opens and locks move
with their stateids: clients carry on at the destination without reclaiming.
If anything fails before the destination commits, the export stays here.")]
pub struct MigrateArgs {
    /// The export's path, as clients see it ("/data").
    pub export: String,
    /// The destination's NFS address, HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub to: String,
    /// Where clients are sent, if not --to (the address they reach the
    /// destination at; Linux clients use port 2049 whatever it says).
    #[arg(long, value_name = "HOST:PORT")]
    pub location: Option<String>,
    #[command(flatten)]
    pub server: ServerArg,
    /// Print the answer as JSON (one line).
    #[arg(long)]
    pub json: bool,
}

/// `ferrite migrate`: asks the server to move the export, prints how it
/// went.
pub fn main(args: MigrateArgs) -> anyhow::Result<()> {
    for w in [&args.export, &args.to]
        .into_iter()
        .chain(args.location.as_ref())
    {
        if w.is_empty() || w.contains(char::is_whitespace) {
            anyhow::bail!("{w:?}: no spaces allowed");
        }
    }
    let mut cmd = format!("migrate {} {}", args.export, args.to);
    if let Some(l) = &args.location {
        cmd.push(' ');
        cmd.push_str(l);
    }
    let r: MoveReport = answer_of(&ask_once(&args.server, &cmd)?, "not moved")?;
    if args.json {
        out(&format!("{}\n", serde_json::to_string(&r)?));
    } else {
        out(&format!(
            "moved {} to {} (clients sent to {}): {} clients, {} stateids; took {} ms, state changes held off {} ms\n",
            r.export, r.to, r.location, r.clients, r.stateids, r.took_ms, r.frozen_ms
        ));
    }
    Ok(())
}
