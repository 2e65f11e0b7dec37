//! One module per operation (RFC 8881 §18, RFC 7862 §15), each with
//! `run(cx, args) -> result`, and the operation table [`OPS`]: every
//! operation's handler and the facts the compound loop checks before
//! running it. Operations without a module answer NFS4ERR_NOTSUPP
//! (RFC 8881 §15.1.1.5). An operation's module uses the compound, the
//! state, the attributes and the shared helpers (`check`, `dirs`,
//! `space`, `callback`), never another operation's module.

use std::future::Future;
use std::pin::Pin;

use proto::nfs4::*;

use super::attrs;
use super::compound::{context::Compound, reply::OpResult};
use OpNum4 as N;

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
pub mod delegpurge;
pub mod delegreturn;
pub mod destroy_clientid;
pub mod destroy_session;
pub mod exchange_id;
pub mod free_stateid;
pub mod get_dir_delegation;
pub mod getattr;
pub mod getdeviceinfo;
pub mod getdevicelist;
pub mod getfh;
pub mod getxattr;
pub mod layoutcommit;
pub mod layouterror;
pub mod layoutget;
pub mod layoutreturn;
pub mod layoutstats;
pub mod link;
pub mod listxattrs;
pub mod lock;
pub mod lockt;
pub mod locku;
pub mod lookup;
pub mod lookupp;
pub mod nverify;
pub mod offload_cancel;
pub mod offload_status;
pub mod open;
pub mod open_confirm;
pub mod open_downgrade;
pub mod putfh;
pub mod putpubfh;
pub mod putrootfh;
pub mod read;
pub mod readdir;
pub mod readlink;
pub mod reclaim_complete;
pub mod release_lockowner;
pub mod remove;
pub mod removexattr;
pub mod rename;
pub mod renew;
pub mod restorefh;
pub mod savefh;
pub mod secinfo;
pub mod secinfo_no_name;
pub mod seek;
pub mod sequence;
pub mod setattr;
pub mod setclientid;
pub mod setclientid_confirm;
pub mod setxattr;
pub mod test_stateid;
pub mod verify;
pub mod write;

/// A running operation.
pub type OpFuture<'a> = Pin<Box<dyn Future<Output = OpResult> + Send + 'a>>;

/// Runs an operation on its arguments (the table guarantees the variant).
pub type Handler = for<'a> fn(&'a mut Compound, NfsArgOp4) -> OpFuture<'a>;

/// The size estimate of an operation's reply: fixed, or from its
/// arguments.
#[derive(Clone, Copy)]
pub enum Size {
    Fixed(usize),
    Of(fn(&Compound, &NfsArgOp4) -> usize),
}

/// One operation's entry in [`OPS`].
pub struct OpDesc {
    pub num: OpNum4,
    /// As RFC 8881 §18 spells it.
    pub name: &'static str,
    /// `None`: not supported (NFS4ERR_NOTSUPP).
    pub handler: Option<Handler>,
    facts: u16,
    size: Size,
}

// The facts of an entry (bits of `OpDesc::facts`).
/// Needs a current filehandle (else NFS4ERR_NOFILEHANDLE).
const NEEDS_FH: u16 = 1;
/// Sets the current filehandle without checking its security flavor:
/// PUTFH, PUTPUBFH, PUTROOTFH, RESTOREFH (RFC 8881 §2.6.3.1.1.7).
const PUTS_FH: u16 = 1 << 1;
/// Answers NFS4ERR_WRONGSEC itself, so a put-filehandle operation before
/// it does not (RFC 8881 §2.6.3.1.1).
const OWN_SEC: u16 = 1 << 2;
/// Changes an object or state, so runs only if its reply fits
/// (RFC 8881 §2.10.6.4).
const MODIFIES: u16 = 1 << 3;
/// Modifies the current filehandle's object without checking for a
/// read-only export or pseudo directory itself: the loop does (ROFS).
const WRITES_FH: u16 = 1 << 4;
/// May be a compound's only operation, without SEQUENCE (RFC 8881
/// §18.46.3).
const ALONE: u16 = 1 << 5;
/// Returns bulk data: a reply holding it is cached only when the client
/// asks (sa_cachethis, RFC 8881 §2.10.6.1.3).
const BULK: u16 = 1 << 6;
/// NFSv4.2 (RFC 7862): NFS4ERR_NOTSUPP in an NFSv4.1 compound.
const V42: u16 = 1 << 7;
/// Never waits on the backend: it calls none, or first tries a call that
/// cannot block (READ: [`vfs::Vfs::read_nowait`]; GETATTR:
/// [`vfs::Vfs::getattr_nowait`]; LOOKUP: [`vfs::Vfs::lookup_nowait`]). A COMPOUND with
/// at most one operation that is not runs on the async thread (that
/// operation's backend call going to the blocking pool alone); one with
/// two or more runs on the blocking pool as a whole, its backend calls
/// made in place: one thread hand-off per COMPOUND rather than per call.
const QUICK: u16 = 1 << 8;
/// NFSv4.0 only (RFC 7530 §16): NFS4ERR_NOTSUPP in an NFSv4.1 compound
/// (RFC 8881 §18 marks them "MUST NOT implement").
const V40: u16 = 1 << 9;

impl OpDesc {
    pub fn needs_fh(&self) -> bool {
        self.facts & NEEDS_FH != 0
    }
    pub fn puts_fh(&self) -> bool {
        self.facts & PUTS_FH != 0
    }
    pub fn handles_wrongsec(&self) -> bool {
        self.facts & OWN_SEC != 0
    }
    pub fn modifies(&self) -> bool {
        self.facts & MODIFIES != 0
    }
    pub fn writes_cfh(&self) -> bool {
        self.facts & WRITES_FH != 0
    }
    pub fn sessionless(&self) -> bool {
        self.facts & ALONE != 0
    }
    pub fn cacheable(&self) -> bool {
        self.facts & BULK == 0
    }
    pub fn v42(&self) -> bool {
        self.facts & V42 != 0
    }
    pub fn quick(&self) -> bool {
        self.facts & QUICK != 0
    }
    pub fn v40(&self) -> bool {
        self.facts & V40 != 0
    }

    /// The most this operation's result (opnum, status and body) can take
    /// in the reply; exact or an upper bound for every modifying one.
    pub fn reply_size(&self, cx: &Compound, op: &NfsArgOp4) -> usize {
        match self.size {
            Size::Fixed(n) => n,
            Size::Of(f) => f(cx, op),
        }
    }
}

/// The table entry of operation number `opnum`; `None` for OP_ILLEGAL and
/// numbers that are no operation.
pub fn desc(opnum: u32) -> Option<&'static OpDesc> {
    OPS.get(opnum.checked_sub(FIRST_OP)? as usize)
}

/// The operation number of `OPS[0]`.
const FIRST_OP: u32 = OpNum4::Access as u32;

const fn op(num: OpNum4, h: Handler, facts: u16, size: Size) -> OpDesc {
    OpDesc {
        num,
        name: num.name(),
        handler: Some(h),
        facts,
        size,
    }
}

const fn no(num: OpNum4, facts: u16, size: Size) -> OpDesc {
    OpDesc {
        num,
        name: num.name(),
        handler: None,
        facts,
        size,
    }
}

const fn fixed(n: usize) -> Size {
    Size::Fixed(n)
}

// Encoded sizes for the estimates.
/// An operation's result header: opnum and status.
const RES: usize = 8;
const STATEID: usize = 16;
const SESSIONID: usize = NFS4_SESSIONID_SIZE;
const VERF: usize = 8;
/// `change_info4`.
const CINFO: usize = 4 + 8 + 8;
/// A `bitmap4` of the attributes this server knows (three words).
const BITMAP: usize = 4 + 3 * 4;
/// `LOCK4denied` with the longest owner (RFC 8881 §18.10.2).
const DENIED: usize = 8 + 8 + 4 + 8 + 4 + NFS4_OPAQUE_LIMIT;
/// `open_delegation4` as sent, at its largest: a write delegation (its
/// space limit, and an ACE with an empty name).
const DELEG: usize = 4 + STATEID + 4 + (4 + 8) + (4 + 4 + 4 + 4);
/// `OPEN4resok` as sent.
const OPEN_OK: usize = STATEID + CINFO + 4 + BITMAP + DELEG;
/// `GET_DIR_DELEGATION4res_non_fatal` granted.
const GDD_OK: usize = 4 + VERF + STATEID + 3 * BITMAP;
/// `BIND_CONN_TO_SESSION4resok`.
const BIND_CONN_OK: usize = SESSIONID + 4 + 4;
/// `CREATE_SESSION4resok`.
const CREATE_SESSION_OK: usize = SESSIONID + 4 + 4 + 2 * CHANNEL;
/// `write_response4` with a callback id (RFC 7862 §15.2.2).
const WRITE_RESPONSE: usize = 4 + STATEID + 8 + 4 + VERF;
/// A `SECINFO4resok` of up to eight flavors, RPCSEC_GSS ones included.
const SECINFO: usize = 4 + 8 * (4 + 4 + 16 + 4 + 4);
/// `channel_attrs4` with one `ca_rdma_ird`.
const CHANNEL: usize = 6 * 4 + 4 + 4;
/// `EXCHANGE_ID4resok` with the longest owner, scope and implementation id.
const EXCHANGE_ID: usize = 8
    + 4
    + 4
    + 4
    + (8 + 4 + NFS4_OPAQUE_LIMIT)
    + (4 + NFS4_OPAQUE_LIMIT)
    + (4 + 2 * (4 + NFS4_OPAQUE_LIMIT) + 12);
/// `SETCLIENTID4res` at its largest: NFS4ERR_CLID_INUSE's `netaddr4`
/// (larger than the client id and verifier of a success).
const NETADDR: usize = 2 * (4 + NFS4_OPAQUE_LIMIT);
/// The longest symbolic link text (PATH_MAX).
const LINK_TEXT: usize = 4 + 4096;
/// The longest extended attribute value (Linux XATTR_SIZE_MAX).
const XATTR: usize = 4 + 65536;
/// Layouts and device lists are not supported: a page for them.
const PNFS: usize = 4096;

/// READ: the data asked for, as much as one READ returns.
fn read_size(cx: &Compound, op: &NfsArgOp4) -> usize {
    let count = match op {
        NfsArgOp4::Read(a) => a.count,
        NfsArgOp4::ReadPlus(a) => a.count,
        _ => 0,
    };
    let n = count.min(cx.srv.cfg.max_io) as usize;
    // READ_PLUS has a content count, type and offset more than READ.
    RES + 4 + 4 + n + xdr::pad_len(n) + 16
}

/// READDIR and LISTXATTRS: the `maxcount` asked for.
fn maxcount_size(cx: &Compound, op: &NfsArgOp4) -> usize {
    let n = match op {
        NfsArgOp4::ReadDir(a) => a.maxcount,
        NfsArgOp4::ListXattrs(a) => a.maxcount,
        _ => 0,
    };
    RES + n.min(cx.srv.cfg.max_response) as usize
}

/// GETATTR: each attribute asked for at its largest.
fn getattr_size(_: &Compound, op: &NfsArgOp4) -> usize {
    match op {
        NfsArgOp4::GetAttr(a) => RES + attrs::max_len(&a.attr_request),
        _ => RES,
    }
}

/// TEST_STATEID: a status per stateid.
fn test_stateid_size(_: &Compound, op: &NfsArgOp4) -> usize {
    match op {
        NfsArgOp4::TestStateId(a) => RES + 4 + 4 * a.stateids.len(),
        _ => RES,
    }
}

/// Every operation of RFC 8881 §18 and RFC 7862 §15 (and RFC 8276's
/// extended attributes), indexed by operation number minus 3: number,
/// name, handler (`no`: NFS4ERR_NOTSUPP), facts, reply size.
///
/// SEQUENCE is not `MODIFIES`: it comes first, before there are limits.
/// COMMIT, LOCKT and TEST_STATEID change nothing a client could lose.
#[rustfmt::skip]
pub static OPS: [OpDesc; 73] = [
    op(N::Access, h::access, NEEDS_FH, fixed(RES + 8)),
    op(N::Close, h::close, NEEDS_FH | MODIFIES | QUICK, fixed(RES + STATEID)),
    op(N::Commit, h::commit, NEEDS_FH, fixed(RES + VERF)),
    op(N::Create, h::create, NEEDS_FH | MODIFIES, fixed(RES + CINFO + BITMAP)),
    op(N::DelegPurge, h::delegpurge, MODIFIES | QUICK, fixed(RES)),
    op(N::DelegReturn, h::delegreturn, NEEDS_FH | MODIFIES | QUICK, fixed(RES)),
    op(N::GetAttr, h::getattr, NEEDS_FH | QUICK, Size::Of(getattr_size)),
    op(N::GetFh, h::getfh, NEEDS_FH | QUICK, fixed(RES + 4 + NFS4_FHSIZE)),
    op(N::Link, h::link, NEEDS_FH | MODIFIES, fixed(RES + CINFO)),
    op(N::Lock, h::lock, NEEDS_FH | MODIFIES | QUICK, fixed(RES + DENIED)),
    op(N::LockT, h::lockt, NEEDS_FH, fixed(RES + DENIED)),
    op(N::LockU, h::locku, NEEDS_FH | MODIFIES | QUICK, fixed(RES + STATEID)),
    op(N::Lookup, h::lookup, NEEDS_FH | OWN_SEC | QUICK, fixed(RES)),
    op(N::LookupP, h::lookupp, NEEDS_FH | OWN_SEC, fixed(RES)),
    op(N::NVerify, h::nverify, NEEDS_FH, fixed(RES)),
    op(N::Open, h::open, NEEDS_FH | OWN_SEC | MODIFIES, fixed(RES + OPEN_OK)),
    no(N::OpenAttr, NEEDS_FH | MODIFIES, fixed(RES)),
    op(N::OpenConfirm, h::open_confirm, V40 | NEEDS_FH | MODIFIES | QUICK, fixed(RES + STATEID)),
    op(N::OpenDowngrade, h::open_downgrade, NEEDS_FH | MODIFIES | QUICK, fixed(RES + STATEID)),
    op(N::PutFh, h::putfh, PUTS_FH | OWN_SEC | QUICK, fixed(RES)),
    op(N::PutPubFh, h::putpubfh, PUTS_FH | OWN_SEC | QUICK, fixed(RES)),
    op(N::PutRootFh, h::putrootfh, PUTS_FH | OWN_SEC | QUICK, fixed(RES)),
    op(N::Read, h::read, NEEDS_FH | BULK | QUICK, Size::Of(read_size)),
    op(N::ReadDir, h::readdir, NEEDS_FH | BULK, Size::Of(maxcount_size)),
    op(N::ReadLink, h::readlink, NEEDS_FH | BULK, fixed(RES + LINK_TEXT)),
    op(N::Remove, h::remove, NEEDS_FH | MODIFIES, fixed(RES + CINFO)),
    op(N::Rename, h::rename, NEEDS_FH | MODIFIES, fixed(RES + 2 * CINFO)),
    op(N::Renew, h::renew, V40 | MODIFIES | QUICK, fixed(RES)),
    op(N::RestoreFh, h::restorefh, PUTS_FH | OWN_SEC | QUICK, fixed(RES)),
    op(N::SaveFh, h::savefh, NEEDS_FH | OWN_SEC | QUICK, fixed(RES)),
    op(N::SecInfo, h::secinfo, NEEDS_FH | OWN_SEC, fixed(RES + SECINFO)),
    op(N::SetAttr, h::setattr, NEEDS_FH | MODIFIES, fixed(RES + BITMAP)),
    op(N::SetClientId, h::setclientid, V40 | MODIFIES | QUICK, fixed(RES + NETADDR)),
    op(N::SetClientIdConfirm, h::setclientid_confirm, V40 | MODIFIES, fixed(RES)),
    op(N::Verify, h::verify, NEEDS_FH, fixed(RES)),
    op(N::Write, h::write, NEEDS_FH | MODIFIES, fixed(RES + 4 + 4 + VERF)),
    op(N::ReleaseLockOwner, h::release_lockowner, V40 | MODIFIES | QUICK, fixed(RES)),
    op(N::BackchannelCtl, h::backchannel_ctl, MODIFIES | QUICK, fixed(RES)),
    op(N::BindConnToSession, h::bind_conn_to_session, ALONE | MODIFIES | QUICK, fixed(RES + BIND_CONN_OK)),
    op(N::ExchangeId, h::exchange_id, ALONE | MODIFIES | QUICK, fixed(RES + EXCHANGE_ID)),
    op(N::CreateSession, h::create_session, ALONE | MODIFIES, fixed(RES + CREATE_SESSION_OK)),
    op(N::DestroySession, h::destroy_session, ALONE | MODIFIES | QUICK, fixed(RES)),
    op(N::FreeStateId, h::free_stateid, MODIFIES | QUICK, fixed(RES)),
    op(N::GetDirDelegation, h::get_dir_delegation, NEEDS_FH | MODIFIES, fixed(RES + GDD_OK)),
    op(N::GetDeviceInfo, h::getdeviceinfo, 0, fixed(RES + PNFS)),
    op(N::GetDeviceList, h::getdevicelist, NEEDS_FH, fixed(RES + PNFS)),
    op(N::LayoutCommit, h::layoutcommit, NEEDS_FH | MODIFIES, fixed(RES + 4 + 4 + 8)),
    op(N::LayoutGet, h::layoutget, NEEDS_FH | MODIFIES, fixed(RES + PNFS)),
    op(N::LayoutReturn, h::layoutreturn, MODIFIES, fixed(RES + 4 + STATEID)),
    op(N::SecInfoNoName, h::secinfo_no_name, NEEDS_FH | OWN_SEC, fixed(RES + SECINFO)),
    op(N::Sequence, h::sequence, QUICK, fixed(RES + SESSIONID + 5 * 4)),
    no(N::SetSsv, MODIFIES, fixed(RES + 4 + 64)),
    op(N::TestStateId, h::test_stateid, QUICK, Size::Of(test_stateid_size)),
    no(N::WantDelegation, MODIFIES, fixed(RES + PNFS)),
    op(N::DestroyClientId, h::destroy_clientid, ALONE | MODIFIES | QUICK, fixed(RES)),
    op(N::ReclaimComplete, h::reclaim_complete, MODIFIES, fixed(RES)),
    op(N::Allocate, h::allocate, V42 | NEEDS_FH | MODIFIES, fixed(RES)),
    op(N::Copy, h::copy, V42 | NEEDS_FH | MODIFIES | WRITES_FH, fixed(RES + WRITE_RESPONSE + 4 + 4)),
    no(N::CopyNotify, V42 | NEEDS_FH | MODIFIES, fixed(RES + PNFS)),
    op(N::Deallocate, h::deallocate, V42 | NEEDS_FH | MODIFIES, fixed(RES)),
    no(N::IoAdvise, V42 | NEEDS_FH, fixed(RES + BITMAP)),
    op(N::LayoutError, h::layouterror, V42 | NEEDS_FH, fixed(RES)),
    op(N::LayoutStats, h::layoutstats, V42 | NEEDS_FH, fixed(RES)),
    op(N::OffloadCancel, h::offload_cancel, V42 | NEEDS_FH | MODIFIES | QUICK, fixed(RES)),
    op(N::OffloadStatus, h::offload_status, V42 | NEEDS_FH | QUICK, fixed(RES + 8 + 4 + 4)),
    no(N::ReadPlus, V42 | NEEDS_FH | BULK, Size::Of(read_size)),
    op(N::Seek, h::seek, V42 | NEEDS_FH, fixed(RES + 4 + 8)),
    no(N::WriteSame, V42 | NEEDS_FH | MODIFIES | WRITES_FH, fixed(RES + WRITE_RESPONSE)),
    op(N::Clone, h::clone, V42 | NEEDS_FH | MODIFIES | WRITES_FH, fixed(RES)),
    op(N::GetXattr, h::getxattr, V42 | NEEDS_FH | BULK, fixed(RES + XATTR)),
    op(N::SetXattr, h::setxattr, V42 | NEEDS_FH | MODIFIES | WRITES_FH, fixed(RES + CINFO)),
    op(N::ListXattrs, h::listxattrs, V42 | NEEDS_FH | BULK, Size::Of(maxcount_size)),
    op(N::RemoveXattr, h::removexattr, V42 | NEEDS_FH | MODIFIES | WRITES_FH, fixed(RES + CINFO)),
];

/// Defines `h::<module>` for each operation module: unpacks the
/// arguments, runs the module's `run` and wraps its result.
macro_rules! handlers {
    ($($module:ident: $variant:ident $(($args:ident))?,)*) => {
        mod h {
            use crate::nfs4::ops::*;
            $(
                pub(super) fn $module(cx: &mut Compound, op: NfsArgOp4) -> OpFuture<'_> {
                    Box::pin(async move {
                        match op {
                            NfsArgOp4::$variant $(($args))? => OpResult::Typed(NfsResOp4::$variant(
                                crate::nfs4::ops::$module::run(cx $(, $args)?).await,
                            )),
                            other => mismatch(&other),
                        }
                    })
                }
            )*
        }
    };
}

/// A handler given another operation's arguments: a table bug.
fn mismatch(op: &NfsArgOp4) -> OpResult {
    OpResult::Error(op.opnum(), NfsStat4::Nfs4errServerfault)
}

handlers! {
    access: Access(a),
    allocate: Allocate(a),
    backchannel_ctl: BackchannelCtl(a),
    bind_conn_to_session: BindConnToSession(a),
    clone: Clone(a),
    close: Close(a),
    commit: Commit(a),
    copy: Copy(a),
    create: Create(a),
    create_session: CreateSession(a),
    deallocate: Deallocate(a),
    delegpurge: DelegPurge(a),
    delegreturn: DelegReturn(a),
    destroy_clientid: DestroyClientId(a),
    destroy_session: DestroySession(a),
    exchange_id: ExchangeId(a),
    free_stateid: FreeStateId(a),
    get_dir_delegation: GetDirDelegation(a),
    getdeviceinfo: GetDeviceInfo(a),
    getdevicelist: GetDeviceList(a),
    getattr: GetAttr(a),
    getfh: GetFh,
    getxattr: GetXattr(a),
    layoutcommit: LayoutCommit(a),
    layouterror: LayoutError(a),
    layoutget: LayoutGet(a),
    layoutreturn: LayoutReturn(a),
    layoutstats: LayoutStats(a),
    link: Link(a),
    listxattrs: ListXattrs(a),
    lock: Lock(a),
    lockt: LockT(a),
    locku: LockU(a),
    lookup: Lookup(a),
    lookupp: LookupP,
    nverify: NVerify(a),
    offload_cancel: OffloadCancel(a),
    offload_status: OffloadStatus(a),
    open: Open(a),
    open_confirm: OpenConfirm(a),
    open_downgrade: OpenDowngrade(a),
    putfh: PutFh(a),
    putpubfh: PutPubFh,
    putrootfh: PutRootFh,
    read: Read(a),
    readdir: ReadDir(a),
    readlink: ReadLink,
    reclaim_complete: ReclaimComplete(a),
    release_lockowner: ReleaseLockOwner(a),
    remove: Remove(a),
    removexattr: RemoveXattr(a),
    rename: Rename(a),
    renew: Renew(a),
    restorefh: RestoreFh,
    savefh: SaveFh,
    secinfo: SecInfo(a),
    secinfo_no_name: SecInfoNoName(a),
    seek: Seek(a),
    sequence: Sequence(a),
    setattr: SetAttr(a),
    setclientid: SetClientId(a),
    setclientid_confirm: SetClientIdConfirm(a),
    setxattr: SetXattr(a),
    test_stateid: TestStateId(a),
    verify: Verify(a),
    write: Write(a),
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    /// The statistics name every operation as its table does (both from
    /// `OpNum4::name`), and the table is in operation-number order.
    #[test]
    fn statistics_name_operations_as_the_table_does() {
        use crate::observe::stats::{names::proc_name, Program};
        for (i, d) in OPS.iter().enumerate() {
            let n = d.num as u32;
            assert_eq!(n, FIRST_OP + i as u32);
            assert_eq!(proc_name(Program::Nfs4, n), d.name);
        }
        assert_eq!(
            proc_name(Program::Nfs4, OpNum4::OpenDowngrade as u32),
            "OPEN_DOWNGRADE"
        );
        assert_eq!(proc_name(Program::Nfs4, 9999), "PROC9999");
    }

    #[test]
    fn table_is_in_operation_number_order() {
        for (i, d) in OPS.iter().enumerate() {
            assert_eq!(d.num as u32, FIRST_OP + i as u32, "{}", d.name);
            assert!(std::ptr::eq(desc(d.num as u32).unwrap(), d));
        }
        assert_eq!(OPS.last().map(|d| d.num), Some(OpNum4::RemoveXattr));
        for n in [0, 1, 2, 76, OpNum4::Illegal as u32, u32::MAX] {
            assert!(desc(n).is_none(), "{n}");
        }
        // The NFSv4.0-only operations (RFC 7530 §16), NFS4ERR_NOTSUPP in
        // NFSv4.1 (RFC 8881 §18), and only they.
        let v40 = [
            OpNum4::OpenConfirm,
            OpNum4::Renew,
            OpNum4::SetClientId,
            OpNum4::SetClientIdConfirm,
            OpNum4::ReleaseLockOwner,
        ];
        for d in OPS.iter() {
            assert_eq!(d.v40(), v40.contains(&d.num), "{}", d.name);
        }
        for n in v40 {
            assert!(desc(n as u32).unwrap().handler.is_some());
        }
    }

    fn fixed_size(n: OpNum4) -> usize {
        match desc(n as u32).map(|d| d.size) {
            Some(Size::Fixed(s)) => s,
            _ => panic!("{n:?} has no fixed size"),
        }
    }

    /// Every modifying operation's estimate holds its largest result:
    /// otherwise one could run and then not fit (RFC 8881 §2.10.6.4).
    #[test]
    fn estimates_hold_the_largest_results_of_modifying_operations() {
        let sid = StateId4 {
            seqid: 1,
            other: [7; 12],
        };
        let cinfo = ChangeInfo4 {
            atomic: true,
            before: 1,
            after: 2,
        };
        let mut attrset = Bitmap4::from_attrs(attrs::WRITABLE);
        attrset.insert(FATTR4_TIME_ACCESS);
        attrset.insert(FATTR4_TIME_MODIFY);
        let long = Bytes::from(vec![b'x'; NFS4_OPAQUE_LIMIT]);
        let channel = ChannelAttrs4 {
            rdma_ird: Some(1),
            ..Default::default()
        };
        let results = [
            NfsResOp4::Close(Res4::Ok(sid)),
            NfsResOp4::Create(Res4::Ok(Create4ResOk {
                cinfo,
                attrset: attrset.clone(),
            })),
            NfsResOp4::Link(Res4::Ok(Link4ResOk { cinfo })),
            NfsResOp4::Lock(Lock4Res::Denied(Lock4Denied {
                offset: 0,
                length: 1,
                locktype: NfsLockType4::WriteLt,
                owner: LockOwner4 {
                    clientid: 1,
                    owner: long.clone(),
                },
            })),
            NfsResOp4::LockU(Res4::Ok(sid)),
            NfsResOp4::Open(Res4::Ok(Open4ResOk {
                stateid: sid,
                cinfo,
                rflags: 0,
                attrset: attrset.clone(),
                delegation: OpenDelegation4::NoneExt(OpenNoneDelegation4::Resource(true)),
            })),
            NfsResOp4::OpenDowngrade(Res4::Ok(OpenDowngrade4ResOk { open_stateid: sid })),
            NfsResOp4::Remove(Res4::Ok(Remove4ResOk { cinfo })),
            NfsResOp4::Rename(Res4::Ok(Rename4ResOk {
                source_cinfo: cinfo,
                target_cinfo: cinfo,
            })),
            NfsResOp4::SetAttr(SetAttr4Res {
                status: NfsStat4::Nfs4Ok,
                attrsset: attrset,
            }),
            NfsResOp4::Write(Res4::Ok(Write4ResOk {
                count: 1,
                committed: StableHow4::FileSync4,
                writeverf: [1; 8],
            })),
            NfsResOp4::BindConnToSession(Res4::Ok(BindConnToSession4ResOk {
                sessid: [1; 16],
                dir: ChannelDirFromServer4::Cdfs4Both,
                use_conn_in_rdma_mode: false,
            })),
            NfsResOp4::ExchangeId(Res4::Ok(ExchangeId4ResOk {
                clientid: 1,
                sequenceid: 1,
                flags: 0,
                state_protect: StateProtect4R::None,
                server_owner: ServerOwner4 {
                    minor_id: 0,
                    major_id: long.clone(),
                },
                server_scope: long.clone(),
                server_impl_id: Some(NfsImplId4 {
                    domain: long.clone(),
                    name: long,
                    date: NfsTime4::default(),
                }),
            })),
            NfsResOp4::CreateSession(Res4::Ok(CreateSession4ResOk {
                sessionid: [1; 16],
                sequence: 1,
                flags: 0,
                fore_chan_attrs: channel,
                back_chan_attrs: channel,
            })),
            NfsResOp4::Copy(Copy4Res::Ok(Copy4ResOk {
                response: WriteResponse4 {
                    callback_id: Some(sid),
                    count: 1,
                    committed: StableHow4::Unstable4,
                    writeverf: [1; 8],
                },
                requirements: CopyRequirements4 {
                    consecutive: true,
                    synchronous: true,
                },
            })),
        ];
        for r in &results {
            let n = OPS[(r.opnum() - FIRST_OP) as usize].num;
            let len = xdr::to_bytes(r).len();
            assert!(len <= fixed_size(n), "{n:?}: {len} > {}", fixed_size(n));
        }
        // The others are a status alone; SETATTR's has its bitmap.
        for d in OPS.iter().filter(|d| d.modifies()) {
            let least = if d.num == OpNum4::SetAttr { 12 } else { RES };
            assert!(fixed_size(d.num) >= least, "{}", d.name);
        }
    }

    /// A QUICK operation's module calls no backend and uses no shared
    /// module that does, except READ, LOOKUP and GETATTR, which reach the
    /// blocking path only after a non-blocking call (checked in the text).
    #[test]
    fn quick_operations_do_not_wait_on_the_backend() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/nfs4/ops");
        let mut checked = 0;
        for d in OPS.iter().filter(|d| d.quick()) {
            let file = dir.join(format!("{}.rs", d.name.to_lowercase()));
            let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
            let code: String = text
                .lines()
                .map(|l| l.split("//").next().unwrap_or(""))
                .collect::<Vec<_>>()
                .join("\n");
            if matches!(d.num, OpNum4::Read | OpNum4::Lookup) {
                let nowait = code.find("vfs_nowait").expect("tries vfs_nowait");
                let blocking = code.find(".vfs(").expect("falls back to vfs");
                assert!(
                    nowait < blocking,
                    "{}: the non-blocking call comes first",
                    d.name
                );
            } else if d.num == OpNum4::GetAttr {
                // attrs::get_with tries getattr_nowait before the blocking
                // path (a write delegation's CB_GETATTR aside).
                assert!(
                    code.contains("attrs::get_with("),
                    "GETATTR goes through attrs::get_with"
                );
                let attrs = std::fs::read_to_string(dir.join("../attrs.rs")).unwrap();
                let get = &attrs[attrs
                    .find("pub async fn get_with(")
                    .expect("attrs::get_with")..];
                let get = &get[..get.find("\n}\n").expect("its end")];
                let nowait = get
                    .find("getattr_nowait")
                    .expect("attrs::get tries getattr_nowait");
                let blocking = get.find(".vfs(").expect("attrs::get falls back to vfs");
                assert!(
                    nowait < blocking,
                    "GETATTR: the non-blocking path comes first"
                );
            } else {
                for call in [
                    ".vfs(",
                    ".blocking(",
                    "spawn_blocking",
                    "attrs::",
                    "dirs::",
                    "space::",
                    "off_thread",
                ] {
                    assert!(!code.contains(call), "{}: {call}", d.name);
                }
            }
            checked += 1;
        }
        assert_eq!(checked, 29);
    }

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
        // Nor do the shared modules (the compound loop uses the table).
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
