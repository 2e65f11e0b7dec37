//! EXCHANGE_ID (RFC 8881 §18.35).

use bytes::Bytes;
use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;

/// EXCHANGE_IDs refused for a full client table (the state's only
/// NFS4ERR_DELAY here), logged at most this often.
static FULL_LOG: rpc::RateLimit = rpc::RateLimit::per_secs(10);

/// Flags a client may send (§18.35.1); anything else is NFS4ERR_INVAL.
const CLIENT_FLAGS: u32 = EXCHGID4_FLAG_SUPP_MOVED_REFER
    | EXCHGID4_FLAG_SUPP_MOVED_MIGR
    | EXCHGID4_FLAG_BIND_PRINC_STATEID
    | EXCHGID4_FLAG_MASK_PNFS
    | EXCHGID4_FLAG_UPD_CONFIRMED_REC_A;

pub async fn run(cx: &mut Compound, args: ExchangeId4Args) -> ExchangeId4Res {
    if args.flags & !CLIENT_FLAGS != 0 {
        return Res4::Err(NfsStat4::Nfs4errInval);
    }
    if !matches!(args.state_protect, StateProtect4A::None) {
        // Only SP4_NONE: no machine-credential or SSV protection (§2.10.8.3).
        return Res4::Err(NfsStat4::Nfs4errEncrAlgUnsupp);
    }
    let update = args.flags & EXCHGID4_FLAG_UPD_CONFIRMED_REC_A != 0;
    let principal = cx.principal();
    let x = match cx
        .srv
        .state()
        .exchange_id(&args.clientowner, principal, update)
    {
        Ok(x) => x,
        Err(e) => {
            if e == NfsStat4::Nfs4errDelay {
                if let Some(n) = FULL_LOG.allow() {
                    tracing::warn!(
                        clients = cx.srv.state().client_count(),
                        "client table full: EXCHANGE_ID answered NFS4ERR_DELAY ({n} more not logged)"
                    );
                }
            }
            return Res4::Err(e);
        }
    };
    cx.srv
        .state()
        .note_client(x.clientid, cx.conn.peer(), cx.minorversion);
    // RFC 8881 §13.1: a metadata server says so (an export with data
    // servers hands out layouts), and then only that: it serves I/O
    // itself too, and Linux refuses a reply with both bits
    // (nfs4_check_cl_exchange_flags).
    let mut flags = if cx.exports.iter().any(|e| e.pnfs.is_some()) {
        EXCHGID4_FLAG_USE_PNFS_MDS
    } else {
        EXCHGID4_FLAG_USE_NON_PNFS
    };
    if x.confirmed {
        flags |= EXCHGID4_FLAG_CONFIRMED_R;
    }
    // A server that may refer clients elsewhere MUST say so (RFC 8881
    // §18.35.3).
    if !cx.exports.ns.referrals.is_empty() {
        flags |= EXCHGID4_FLAG_SUPP_MOVED_REFER;
    }
    let srv = &cx.srv;
    Res4::Ok(ExchangeId4ResOk {
        clientid: x.clientid,
        sequenceid: x.sequenceid,
        flags,
        state_protect: StateProtect4R::None,
        server_owner: srv.server_owner.clone(),
        server_scope: srv.server_scope.clone(),
        server_impl_id: Some(NfsImplId4 {
            domain: Bytes::from_static(b"ferrite.invalid"),
            name: Bytes::from(format!("ferrite {}", env!("CARGO_PKG_VERSION"))),
            date: NfsTime4::default(),
        }),
    })
}
