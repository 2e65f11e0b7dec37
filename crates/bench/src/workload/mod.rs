//! The NFSv4.1 evaluation micro-workloads: parameters, file sets
//! (`prepare`) and what each worker does.
//!
//! Where things are: `params.rs` the workloads and their parameters,
//! `fileset.rs` the layout of the file sets and `prepare.rs` building and
//! finding them, `worker.rs` what a worker does (setup, one unit of work,
//! teardown), `mix.rs` nhfsstone's operation mix and `nhfsstone.rs` a
//! worker's operations drawn from it, `schedule.rs` the open-loop
//! schedule of `--rate`, `filebench.rs` the flows of Filebench's
//! personalities.

mod filebench;
mod fileset;
mod mix;
mod nhfsstone;
mod params;
mod prepare;
mod schedule;
mod worker;

pub use fileset::{
    tree_depth, tree_dirs, tree_leaf, FileSet, SetNodes, BENCH_DIR, FILES_PER_DIR,
    PERSONALITY_DIR_WIDTH, TREE_WIDTH,
};
pub use mix::{check_mix, parse_mix, MixOp, NHFSSTONE_MIX};
pub use params::{Overrides, Params, Workload};
pub use prepare::{prepare, resolve};
pub use schedule::{Period, Schedule};
pub use worker::{in_phase, is_active, Counters, Held, Worker};
