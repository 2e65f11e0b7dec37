//! The NFSv3 procedures (RFC 1813 §3.3), one per module, and their
//! dispatch.

pub mod access;
pub mod commit;
pub mod create;
pub mod fsinfo;
pub mod fsstat;
pub mod getattr;
pub mod link;
pub mod lookup;
pub mod mkdir;
pub mod mknod;
pub mod pathconf;
pub mod read;
pub mod readdir;
pub mod readdirplus;
pub mod readlink;
pub mod remove;
pub mod rename;
pub mod rmdir;
pub mod setattr;
pub mod symlink;
pub mod write;

use proto::nfs3::*;
use rpc::{Call, Reply, ReplyError, ReplyFuture, Service};

use super::{args, Ctx, Nfs3Service};

/// The NFSv3 program: each call runs with its context (the exports as
/// it began, the caller).
impl Service for Nfs3Service {
    fn call(&self, mut call: Call) -> ReplyFuture {
        let cx = Ctx {
            exports: self.0.exports(),
            srv: self.0.clone(),
            auth: call.auth.clone(),
            peer: call.conn.peer(),
            xprt: Some(call.conn.xprt()),
        };
        Box::pin(async move { run(&cx, &mut call).await })
    }
}

/// Runs procedure `call.proc_` (NULL is answered by the RPC layer).
pub async fn run(cx: &Ctx, call: &mut Call) -> Reply {
    macro_rules! proc_ {
        ($module:ident) => {
            match args(call) {
                Ok(a) => Reply::success(&$module::run(cx, a).await),
                Err(r) => r,
            }
        };
    }
    match call.proc_ {
        NFSPROC3_GETATTR => proc_!(getattr),
        NFSPROC3_LOOKUP => proc_!(lookup),
        NFSPROC3_ACCESS => proc_!(access),
        NFSPROC3_READLINK => proc_!(readlink),
        NFSPROC3_READ => proc_!(read),
        NFSPROC3_READDIR => proc_!(readdir),
        NFSPROC3_READDIRPLUS => proc_!(readdirplus),
        NFSPROC3_FSSTAT => proc_!(fsstat),
        NFSPROC3_FSINFO => proc_!(fsinfo),
        NFSPROC3_PATHCONF => proc_!(pathconf),
        NFSPROC3_SETATTR => proc_!(setattr),
        NFSPROC3_WRITE => proc_!(write),
        NFSPROC3_CREATE => proc_!(create),
        NFSPROC3_MKDIR => proc_!(mkdir),
        NFSPROC3_SYMLINK => proc_!(symlink),
        NFSPROC3_MKNOD => proc_!(mknod),
        NFSPROC3_REMOVE => proc_!(remove),
        NFSPROC3_RMDIR => proc_!(rmdir),
        NFSPROC3_RENAME => proc_!(rename),
        NFSPROC3_LINK => proc_!(link),
        NFSPROC3_COMMIT => proc_!(commit),
        _ => Reply::Error(ReplyError::ProcUnavail),
    }
}
