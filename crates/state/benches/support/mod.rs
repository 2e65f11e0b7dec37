//! What the state benchmarks share: confirmed clients made through the
//! state's own API, as EXCHANGE_ID and CREATE_SESSION make them.

use bytes::Bytes;
use proto::nfs4::*;
use state::slots::CacheMemory;
use state::{NewSession, Principal, State};

/// A confirmed client of `owner`, past its reclaims (`None` if the state
/// refused, which a benchmark reports by measuring nothing).
pub fn client(st: &State, owner: &[u8]) -> Option<ClientId4> {
    let p = Principal::Sys { uid: 0, gid: 0 };
    let owner = ClientOwner4 {
        verifier: [1; 8],
        ownerid: Bytes::copy_from_slice(owner),
    };
    let x = st.exchange_id(&owner, p.clone(), false).ok()?;
    let attrs = ChannelAttrs4 {
        headerpadsize: 0,
        maxrequestsize: 1 << 20,
        maxresponsesize: 1 << 20,
        maxresponsesize_cached: 4096,
        maxoperations: 16,
        maxrequests: 1,
        rdma_ird: None,
    };
    st.create_session(NewSession {
        clientid: x.clientid,
        sequence: x.sequenceid,
        principal: p,
        flags: 0,
        fore: attrs,
        back: attrs,
        cb_program: 0,
        sec_parms: Vec::new(),
        minorversion: 1,
        conn: None,
        drc: CacheMemory::new(1 << 20),
        io: Box::new(()),
    })
    .ok()?;
    st.reclaim_complete(x.clientid).ok()?;
    Some(x.clientid)
}
