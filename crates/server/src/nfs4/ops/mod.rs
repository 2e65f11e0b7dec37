//! One module per operation (RFC 8881 §18, RFC 7862 §15). Each has
//! `run(cx, args) -> result`; this table dispatches to them. Operations
//! without a module answer NFS4ERR_NOTSUPP (RFC 8881 §15.1.1.5). An
//! operation's module uses the compound, the state, the attributes and
//! the shared helpers (`check`, `dirs`, `space`, `callback`), never
//! another operation's module.

use proto::nfs4::*;

use super::compound::{Compound, OpResult};

pub mod access;
pub mod allocate;
pub mod backchannel_ctl;
pub mod bind_conn_to_session;
pub mod clone;
pub mod close;
pub mod commit;
pub mod copy;
pub mod create;
pub mod create_session;
pub mod deallocate;
pub mod delegreturn;
pub mod destroy_clientid;
pub mod destroy_session;
pub mod exchange_id;
pub mod free_stateid;
pub mod getattr;
pub mod getfh;
pub mod link;
pub mod lock;
pub mod lockt;
pub mod locku;
pub mod lookup;
pub mod lookupp;
pub mod nverify;
pub mod offload_cancel;
pub mod offload_status;
pub mod open;
pub mod open_downgrade;
pub mod putfh;
pub mod putpubfh;
pub mod putrootfh;
pub mod read;
pub mod readdir;
pub mod readlink;
pub mod reclaim_complete;
pub mod remove;
pub mod rename;
pub mod restorefh;
pub mod savefh;
pub mod secinfo;
pub mod secinfo_no_name;
pub mod seek;
pub mod sequence;
pub mod setattr;
pub mod test_stateid;
pub mod verify;
pub mod write;

/// Runs one operation (never SEQUENCE-position or ILLEGAL checks: the
/// compound loop did those).
pub async fn dispatch(cx: &mut Compound, op: NfsArgOp4) -> OpResult {
    let typed = match op {
        NfsArgOp4::Access(a) => NfsResOp4::Access(access::run(cx, a).await),
        NfsArgOp4::Close(a) => NfsResOp4::Close(close::run(cx, a).await),
        NfsArgOp4::Commit(a) => NfsResOp4::Commit(commit::run(cx, a).await),
        NfsArgOp4::Create(a) => NfsResOp4::Create(create::run(cx, a).await),
        NfsArgOp4::DelegPurge(_) => return notsupp(OpNum4::DelegPurge),
        NfsArgOp4::DelegReturn(a) => NfsResOp4::DelegReturn(delegreturn::run(cx, a).await),
        NfsArgOp4::GetAttr(a) => NfsResOp4::GetAttr(getattr::run(cx, a).await),
        NfsArgOp4::GetFh => NfsResOp4::GetFh(getfh::run(cx).await),
        NfsArgOp4::Link(a) => NfsResOp4::Link(link::run(cx, a).await),
        NfsArgOp4::Lock(a) => NfsResOp4::Lock(lock::run(cx, a).await),
        NfsArgOp4::LockT(a) => NfsResOp4::LockT(lockt::run(cx, a).await),
        NfsArgOp4::LockU(a) => NfsResOp4::LockU(locku::run(cx, a).await),
        NfsArgOp4::Lookup(a) => NfsResOp4::Lookup(lookup::run(cx, a).await),
        NfsArgOp4::LookupP => NfsResOp4::LookupP(lookupp::run(cx).await),
        NfsArgOp4::NVerify(a) => NfsResOp4::NVerify(nverify::run(cx, a).await),
        NfsArgOp4::Open(a) => NfsResOp4::Open(open::run(cx, a).await),
        NfsArgOp4::OpenAttr(_) => return notsupp(OpNum4::OpenAttr),
        NfsArgOp4::OpenConfirm(_) => return notsupp(OpNum4::OpenConfirm),
        NfsArgOp4::OpenDowngrade(a) => NfsResOp4::OpenDowngrade(open_downgrade::run(cx, a).await),
        NfsArgOp4::PutFh(a) => NfsResOp4::PutFh(putfh::run(cx, a).await),
        NfsArgOp4::PutPubFh => NfsResOp4::PutPubFh(putpubfh::run(cx).await),
        NfsArgOp4::PutRootFh => NfsResOp4::PutRootFh(putrootfh::run(cx).await),
        NfsArgOp4::Read(a) => NfsResOp4::Read(read::run(cx, a).await),
        NfsArgOp4::ReadDir(a) => NfsResOp4::ReadDir(readdir::run(cx, a).await),
        NfsArgOp4::ReadLink => NfsResOp4::ReadLink(readlink::run(cx).await),
        NfsArgOp4::Remove(a) => NfsResOp4::Remove(remove::run(cx, a).await),
        NfsArgOp4::Rename(a) => NfsResOp4::Rename(rename::run(cx, a).await),
        NfsArgOp4::Renew(_) => return notsupp(OpNum4::Renew),
        NfsArgOp4::RestoreFh => NfsResOp4::RestoreFh(restorefh::run(cx).await),
        NfsArgOp4::SaveFh => NfsResOp4::SaveFh(savefh::run(cx).await),
        NfsArgOp4::SecInfo(a) => NfsResOp4::SecInfo(secinfo::run(cx, a).await),
        NfsArgOp4::SetAttr(a) => NfsResOp4::SetAttr(setattr::run(cx, a).await),
        NfsArgOp4::SetClientId(_) => return notsupp(OpNum4::SetClientId),
        NfsArgOp4::SetClientIdConfirm(_) => return notsupp(OpNum4::SetClientIdConfirm),
        NfsArgOp4::Verify(a) => NfsResOp4::Verify(verify::run(cx, a).await),
        NfsArgOp4::Write(a) => NfsResOp4::Write(write::run(cx, a).await),
        NfsArgOp4::ReleaseLockOwner(_) => return notsupp(OpNum4::ReleaseLockOwner),
        NfsArgOp4::BackchannelCtl(a) => {
            NfsResOp4::BackchannelCtl(backchannel_ctl::run(cx, a).await)
        }
        NfsArgOp4::BindConnToSession(a) => {
            NfsResOp4::BindConnToSession(bind_conn_to_session::run(cx, a).await)
        }
        NfsArgOp4::ExchangeId(a) => NfsResOp4::ExchangeId(exchange_id::run(cx, a).await),
        NfsArgOp4::CreateSession(a) => NfsResOp4::CreateSession(create_session::run(cx, a).await),
        NfsArgOp4::DestroySession(a) => {
            NfsResOp4::DestroySession(destroy_session::run(cx, a).await)
        }
        NfsArgOp4::FreeStateId(a) => NfsResOp4::FreeStateId(free_stateid::run(cx, a).await),
        NfsArgOp4::GetDirDelegation(_) => return notsupp(OpNum4::GetDirDelegation),
        NfsArgOp4::GetDeviceInfo(_) => return notsupp(OpNum4::GetDeviceInfo),
        NfsArgOp4::GetDeviceList(_) => return notsupp(OpNum4::GetDeviceList),
        NfsArgOp4::LayoutCommit(_) => return notsupp(OpNum4::LayoutCommit),
        NfsArgOp4::LayoutGet(_) => return notsupp(OpNum4::LayoutGet),
        NfsArgOp4::LayoutReturn(_) => return notsupp(OpNum4::LayoutReturn),
        NfsArgOp4::SecInfoNoName(a) => NfsResOp4::SecInfoNoName(secinfo_no_name::run(cx, a).await),
        NfsArgOp4::Sequence(a) => NfsResOp4::Sequence(sequence::run(cx, a).await),
        NfsArgOp4::SetSsv(_) => return notsupp(OpNum4::SetSsv),
        NfsArgOp4::TestStateId(a) => NfsResOp4::TestStateId(test_stateid::run(cx, a).await),
        NfsArgOp4::WantDelegation(_) => return notsupp(OpNum4::WantDelegation),
        NfsArgOp4::DestroyClientId(a) => {
            NfsResOp4::DestroyClientId(destroy_clientid::run(cx, a).await)
        }
        NfsArgOp4::ReclaimComplete(a) => {
            NfsResOp4::ReclaimComplete(reclaim_complete::run(cx, a).await)
        }
        NfsArgOp4::Allocate(a) => NfsResOp4::Allocate(allocate::run(cx, a).await),
        NfsArgOp4::Copy(a) => NfsResOp4::Copy(copy::run(cx, a).await),
        NfsArgOp4::CopyNotify(_) => return notsupp(OpNum4::CopyNotify),
        NfsArgOp4::Deallocate(a) => NfsResOp4::Deallocate(deallocate::run(cx, a).await),
        NfsArgOp4::IoAdvise(_) => return notsupp(OpNum4::IoAdvise),
        NfsArgOp4::LayoutError(_) => return notsupp(OpNum4::LayoutError),
        NfsArgOp4::LayoutStats(_) => return notsupp(OpNum4::LayoutStats),
        NfsArgOp4::OffloadCancel(a) => NfsResOp4::OffloadCancel(offload_cancel::run(cx, a).await),
        NfsArgOp4::OffloadStatus(a) => NfsResOp4::OffloadStatus(offload_status::run(cx, a).await),
        NfsArgOp4::ReadPlus(_) => return notsupp(OpNum4::ReadPlus),
        NfsArgOp4::Seek(a) => NfsResOp4::Seek(seek::run(cx, a).await),
        NfsArgOp4::WriteSame(_) => return notsupp(OpNum4::WriteSame),
        NfsArgOp4::Clone(a) => NfsResOp4::Clone(clone::run(cx, a).await),
        NfsArgOp4::GetXattr(_) => return notsupp(OpNum4::GetXattr),
        NfsArgOp4::SetXattr(_) => return notsupp(OpNum4::SetXattr),
        NfsArgOp4::ListXattrs(_) => return notsupp(OpNum4::ListXattrs),
        NfsArgOp4::RemoveXattr(_) => return notsupp(OpNum4::RemoveXattr),
        NfsArgOp4::Illegal | NfsArgOp4::Unknown(_) => {
            return OpResult::Error(OpNum4::Illegal as u32, NfsStat4::Nfs4errOpIllegal)
        }
    };
    OpResult::Typed(typed)
}

/// An error result for an operation we do not implement.
fn notsupp(op: OpNum4) -> OpResult {
    OpResult::Error(op as u32, NfsStat4::Nfs4errNotsupp)
}

#[cfg(test)]
mod tests {
    /// An operation's module uses shared modules, never another
    /// operation's: the modules here other than this one say nothing of
    /// `super::` or `ops::`.
    #[test]
    fn operations_do_not_import_operations() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/nfs4");
        let mut files: Vec<_> = std::fs::read_dir(dir.join("ops"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().is_some_and(|n| n != "mod.rs"))
            .collect();
        assert!(files.len() >= 48, "{files:?}");
        // Nor do the shared modules (only the compound loop dispatches).
        for shared in ["attrs.rs", "callback.rs", "check.rs", "dirs.rs", "space.rs"] {
            files.push(dir.join(shared));
        }
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let op_file = f.parent().is_some_and(|p| p.ends_with("ops"));
            for (i, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                let bad = code.contains("ops::") || (op_file && code.contains("super::"));
                assert!(!bad, "{}:{}: {line}", f.display(), i + 1);
            }
        }
    }
}
