//! One TCP connection carrying RPC in both directions (RFC 5531; RFC 8881
//! §2.9.3.1 for the NFSv4.1 back channel sharing the fore connection).
//!
//! Incoming CALLs are handed to a [`Service`] as concurrent tasks and
//! answered in whatever order they finish; incoming REPLYs complete the
//! matching outgoing [`Connection::call`]. Server and client use the same
//! type: the server calls back over it, the client serves callbacks on it.
//!
//! Where things are: `message.rs` the RPC messages (the header of a call,
//! a reply and its errors), `service.rs` what serves the calls received,
//! `limits.rs` the limits and byte budgets of a connection and a listener,
//! `connection.rs` the [`Connection`] and what it sends, `tasks.rs` its
//! reader and writer tasks (dispatching calls, writing replies).

mod connection;
mod limits;
mod message;
mod service;
mod tasks;

pub use connection::Connection;
pub use limits::ConnConfig;
pub(crate) use limits::Shared;
pub use message::{
    parse_call, parse_head, parse_reply, parse_reply_verf, reply_message, simple_auth, Auth,
    CallError, CallHead, Reply, MAX_AUTH_BYTES,
};
pub use service::{Call, ReplyFuture, Service};
pub use tasks::{connect, start};
pub(crate) use tasks::{start_parts, start_shared, Socket};
