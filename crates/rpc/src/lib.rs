//! ONC RPC version 2 (RFC 5531) over TCP, and over UDP for small programs.

mod admit;
pub mod conn;
pub mod gss;
pub mod msg;
mod out;
pub mod ratelimit;
pub mod record;
pub mod server;
pub mod tls;
pub mod udp;

pub use conn::{
    connect, parse_call, parse_head, reply_message, simple_auth, start, Auth, Call, CallError,
    CallHead, ConnConfig, Connection, Reply, ReplyFuture, Service, MAX_AUTH_BYTES,
};
pub use msg::*;
pub use ratelimit::RateLimit;
pub use server::{nofile_limit, raise_nofile_limit, serve, Programs};
pub use udp::serve_udp;

#[cfg(test)]
mod tests;
