//! Reading and writing the result files other than a run's: a file's
//! text with its name in any error, its JSON `schema`, and a typed load.

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::{Error, Result};

/// The text of `path`; an error names the file.
pub fn text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| Error::Msg(format!("{}: {e}", path.display())))
}

/// The `schema` a JSON result file says it is, if any.
pub fn schema(path: &Path) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    Some(v.get("schema")?.as_str()?.to_string())
}

/// Reads `path` as JSON of type `T`; an error names the file.
pub fn load_json<T: DeserializeOwned>(path: &Path) -> Result<T> {
    serde_json::from_str(&text(path)?).map_err(|e| Error::Msg(format!("{}: {e}", path.display())))
}

/// Writes `value` to `path` as pretty JSON.
pub fn save_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let json = serde_json::to_string_pretty(value)?;
    std::fs::write(path, json).map_err(|e| Error::Msg(format!("{}: {e}", path.display())))
}
