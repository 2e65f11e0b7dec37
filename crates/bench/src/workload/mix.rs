//! nhfsstone's operation mix: the operations, reading and checking a mix,
//! the Legato paper's default, and what each worker keeps for it.

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Files of the set each nhfsstone worker holds open for its READs,
/// WRITEs, GETATTRs and SETATTRs.
pub(super) const MIX_FILES: usize = 4;

/// Entries of the directory an nhfsstone worker lists: its symbolic link
/// and empty files.
pub(super) const MIX_DIR_ENTRIES: usize = 16;

/// An operation of the nhfsstone mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MixOp {
    Getattr,
    Setattr,
    Lookup,
    Readlink,
    Read,
    Write,
    Create,
    Remove,
    Readdir,
    Fsstat,
}

/// A mix's weights must be non-negative numbers adding up to 100, and
/// name each operation at most once.
pub fn check_mix(m: &[(MixOp, f64)]) -> Result<()> {
    let total: f64 = m.iter().map(|(_, w)| w).sum();
    if m.iter().any(|(_, w)| !(w.is_finite() && *w >= 0.0)) || (total - 100.0).abs() > 0.01 {
        return Err(Error::Msg(format!(
            "the mix's percentages must be numbers of 0 or more adding up to 100 (these add up to {total})"
        )));
    }
    for (i, (op, _)) in m.iter().enumerate() {
        if m[..i].iter().any(|(o, _)| o == op) {
            return Err(Error::Msg(format!("the mix names {} twice", op.name())));
        }
    }
    Ok(())
}

/// Reads a mix: "getattr=13,lookup=34,..." (commas or new lines; "#"
/// starts a comment), or the name of a file holding one.
pub fn parse_mix(spec: &str) -> Result<Vec<(MixOp, f64)>> {
    let text = if spec.contains('=') {
        spec.to_string()
    } else {
        std::fs::read_to_string(spec).map_err(|e| Error::Msg(format!("--mix {spec}: {e}")))?
    };
    let mut out = Vec::new();
    for item in text
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .flat_map(|l| l.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let (name, w) = item
            .split_once('=')
            .ok_or_else(|| Error::Msg(format!("mix entry {item:?}: expected OPERATION=PERCENT")))?;
        let op = MixOp::ALL
            .into_iter()
            .find(|o| o.name() == name.trim().to_ascii_lowercase())
            .ok_or_else(|| {
                let known: Vec<&str> = MixOp::ALL.iter().map(|o| o.name()).collect();
                Error::Msg(format!(
                    "mix entry {item:?}: no operation {name:?} (known: {})",
                    known.join(", ")
                ))
            })?;
        let w: f64 =
            w.trim().trim_end_matches('%').parse().map_err(|_| {
                Error::Msg(format!("mix entry {item:?}: {w:?} is not a percentage"))
            })?;
        out.push((op, w));
    }
    check_mix(&out)?;
    Ok(out)
}

impl MixOp {
    pub const ALL: [MixOp; 10] = [
        MixOp::Getattr,
        MixOp::Setattr,
        MixOp::Lookup,
        MixOp::Readlink,
        MixOp::Read,
        MixOp::Write,
        MixOp::Create,
        MixOp::Remove,
        MixOp::Readdir,
        MixOp::Fsstat,
    ];

    pub fn name(self) -> &'static str {
        match self {
            MixOp::Getattr => "getattr",
            MixOp::Setattr => "setattr",
            MixOp::Lookup => "lookup",
            MixOp::Readlink => "readlink",
            MixOp::Read => "read",
            MixOp::Write => "write",
            MixOp::Create => "create",
            MixOp::Remove => "remove",
            MixOp::Readdir => "readdir",
            MixOp::Fsstat => "fsstat",
        }
    }
}

/// The Legato paper's Figure 1, "Typical Diskless NFS Operation Mix":
/// percent of operations (they add up to 100).
pub const NHFSSTONE_MIX: [(MixOp, u32); 10] = [
    (MixOp::Getattr, 13),
    (MixOp::Setattr, 1),
    (MixOp::Lookup, 34),
    (MixOp::Readlink, 8),
    (MixOp::Read, 22),
    (MixOp::Write, 15),
    (MixOp::Create, 2),
    (MixOp::Remove, 1),
    (MixOp::Readdir, 3),
    (MixOp::Fsstat, 1),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_is_figure_1() {
        assert_eq!(NHFSSTONE_MIX.iter().map(|(_, p)| p).sum::<u32>(), 100);
        let modify: u32 = NHFSSTONE_MIX
            .iter()
            .filter(|(op, _)| {
                matches!(
                    op,
                    MixOp::Setattr | MixOp::Write | MixOp::Create | MixOp::Remove
                )
            })
            .map(|(_, p)| p)
            .sum();
        assert_eq!(modify, 19, "the paper: 19% of these operations modify data");
    }
}
