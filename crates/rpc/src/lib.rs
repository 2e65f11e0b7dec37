//! ONC RPC version 2 (RFC 5531) over TCP.

pub mod conn;
pub mod msg;
pub mod record;
pub mod server;

pub use conn::{
    connect, start, Auth, Call, CallError, ConnConfig, Connection, Reply, ReplyFuture, Service,
};
pub use msg::*;
pub use server::{serve, Programs};

#[cfg(test)]
mod tests;
