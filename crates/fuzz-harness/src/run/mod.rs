//! `compound_run`: the input as a small program of steps run against one
//! fresh in-process server over `vfs::mem` (with a session set up first),
//! so that state transitions are fuzzed, not only parsing.
//!
//! Steps are COMPOUNDs built from the input (operations with small
//! parameters: names from a short list, offsets near edges, filehandles,
//! stateids, clients and sessions picked among those earlier results
//! returned), raw COMPOUND bytes, clock advances past the lease, reaper
//! runs and answers to the server's callbacks. The input is read a byte
//! at a time and reads as zeros once it runs out, so that every input is
//! a program and small changes make small changes to it; `Input` and the
//! step functions document the order bytes are read in, which
//! [`crate::seeds`] follows.
//!
//! Besides panics, a run fails when a reply does not decode as
//! COMPOUND4res, its status is not its last result's, it has more
//! results than operations, or a task is left running after the
//! connection closes. Set `FERRITE_FUZZ_TRACE=1` to print every step.
//!
//! Where things are: `program.rs` the shape of a program (step and
//! operation codes, limits, the [`Input`] reader), `world.rs` the entry
//! point, the server under test and the steps (sending COMPOUNDs, checking
//! replies), `ops.rs` the operations generated after SEQUENCE,
//! `sessions.rs` those without a session (EXCHANGE_ID, CREATE_SESSION...),
//! `callbacks.rs` the answers to the back channel, `args.rs` argument
//! values drawn from the input alone.

mod args;
mod callbacks;
mod ops;
mod program;
mod sessions;
mod world;

pub use program::{op, step, Input, MAX_OPS, MAX_STEPS};
pub(crate) use world::fs_clock;
pub use world::{compound_run, pnfs_run, FS_LIMITS, LEASE};
