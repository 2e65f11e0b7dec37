//! The NFSv3 procedures (RFC 1813 §3.3), one per module, and their
//! dispatch.

pub mod access;
pub mod fsinfo;
pub mod fsstat;
pub mod getattr;
pub mod lookup;
pub mod pathconf;
pub mod read;
pub mod readdir;
pub mod readdirplus;
pub mod readlink;

use proto::nfs3::*;
use rpc::{Call, Reply, ReplyError};

use super::{args, Ctx};

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
        // Not yet: answered NFS3ERR_NOTSUPP with an empty failure body
        // of the procedure's shape (a wcc_data or post_op_attr that says
        // nothing, both encode as FALSE words).
        NFSPROC3_SETATTR | NFSPROC3_WRITE | NFSPROC3_CREATE | NFSPROC3_MKDIR | NFSPROC3_SYMLINK
        | NFSPROC3_MKNOD | NFSPROC3_REMOVE | NFSPROC3_RMDIR | NFSPROC3_RENAME | NFSPROC3_LINK
        | NFSPROC3_COMMIT => not_yet(call.proc_),
        _ => Reply::Error(ReplyError::ProcUnavail),
    }
}

/// NFS3ERR_NOTSUPP for a procedure not built yet, with its failure body:
/// a `wcc_data` (two FALSE words; RENAME and LINK have two of them, or a
/// `post_op_attr` and a `wcc_data`: four) or a `post_op_attr` (one).
fn not_yet(proc_: u32) -> Reply {
    let falses = match proc_ {
        NFSPROC3_RENAME | NFSPROC3_LINK => 4,
        NFSPROC3_SETATTR | NFSPROC3_WRITE | NFSPROC3_CREATE | NFSPROC3_MKDIR | NFSPROC3_SYMLINK
        | NFSPROC3_MKNOD | NFSPROC3_REMOVE | NFSPROC3_RMDIR | NFSPROC3_COMMIT => 2,
        _ => 1,
    };
    let mut e = xdr::Encoder::new();
    xdr::Pack::pack(&NfsStat3::NotSupp, &mut e);
    for _ in 0..falses {
        e.bool(false);
    }
    Reply::Success(e.finish())
}
