//! Watching the server: statistics per operation, export and host
//! (`stats`), the Prometheus endpoint (`metrics`), the admin socket that
//! `ferrite stat`, `ferrite exports` and `ferrite reload` talk to
//! (`admin`), reloading the configuration (`reload`), and the load model
//! that names the limiting resource (`load`). docs/architecture.md has
//! the details.

pub mod admin;
pub mod load;
pub mod metrics;
pub mod process;
pub mod reload;
pub mod sampler;
pub mod stats;
