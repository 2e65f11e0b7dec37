//! [`State`]'s transitions, one file per concern; each takes the tables'
//! lock through [`State::with`] (or reads under it) and returns what the
//! driver must carry out.

use super::*;

mod clients;
mod delegations;
mod layouts;
mod nlm;
mod opens;
mod v40;
