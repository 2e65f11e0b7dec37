//! The NFSv4.1/4.2 server (RFC 8881, RFC 7862).

pub mod acl;
pub mod attrs;
pub mod callback;
pub mod check;
pub mod compound;
pub mod deleg;
pub mod dirdeleg;
pub mod dirs;
pub mod inproc;
pub mod ops;
pub mod pnfs;
pub mod reaper;
pub mod session_io;
pub mod space;
pub mod xattr;

use std::sync::Arc;

use rpc::{Call, Connection, Reply, ReplyFuture, Service};

use crate::instance::Server;

/// Makes `srv` an NFSv4 server too: its callbacks (recalls and
/// notifications for every protocol's changes) are NFSv4's.
pub fn install(srv: &Arc<Server>) {
    srv.install_callbacks(Arc::new(callback::Nfs4Callbacks {
        srv: Arc::downgrade(srv),
    }));
}

/// The RPC face of the NFSv4 server: program 100003 version 4.
pub struct Nfs4Service(pub Arc<Server>);

/// NFSPROC4_COMPOUND (RFC 8881 §16.2).
pub const NFSPROC4_COMPOUND: u32 = 1;

impl Service for Nfs4Service {
    fn call(&self, call: Call) -> ReplyFuture {
        let srv = self.0.clone();
        Box::pin(async move {
            match call.proc_ {
                NFSPROC4_COMPOUND => compound::run(srv, call).await,
                _ => Reply::Error(rpc::ReplyError::ProcUnavail),
            }
        })
    }

    fn disconnected(&self, conn: &Arc<Connection>) {
        self.0.state().disconnected(conn.id());
    }
}
