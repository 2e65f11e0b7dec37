//! The state's rules on a manual clock, without sockets.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use proto::nfs4::*;

use super::clock::ManualClock;
use super::slots::CacheMemory;
use super::*;
use crate::locks::LockKind;

mod clients;
mod delegations;
mod grace;
mod layouts;
mod migration;
mod nlm;
mod opens;
mod shared_locks;
mod v40;

const L: Duration = Duration::from_secs(10);
const R: u32 = OPEN4_SHARE_ACCESS_READ;
const W: u32 = OPEN4_SHARE_ACCESS_WRITE;

fn s(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn file(n: u8) -> FileKey {
    (1, Bytes::copy_from_slice(&[n; 8]))
}

fn attrs() -> ChannelAttrs4 {
    ChannelAttrs4 {
        headerpadsize: 0,
        maxrequestsize: 1 << 20,
        maxresponsesize: 1 << 20,
        maxresponsesize_cached: 4096,
        maxoperations: 16,
        maxrequests: 4,
        rdma_ird: None,
    }
}

struct Fixture {
    clock: Arc<ManualClock>,
    st: State,
}

impl Fixture {
    fn new() -> Fixture {
        let clock = Arc::new(ManualClock::default());
        let st = State::new(7, L, clock.clone());
        Fixture { clock, st }
    }

    fn advance_to(&self, t: Duration) {
        let now = self.clock.now();
        self.clock.advance(t.saturating_sub(now));
    }

    fn owner(name: &str, verf: u8) -> ClientOwner4 {
        ClientOwner4 {
            verifier: [verf; 8],
            ownerid: Bytes::copy_from_slice(name.as_bytes()),
        }
    }

    fn session_req(&self, clientid: ClientId4, sequence: u32, uid: u32) -> NewSession {
        NewSession {
            clientid,
            sequence,
            principal: Principal::Sys { uid, gid: 0 },
            flags: 0,
            fore: attrs(),
            back: attrs(),
            cb_program: 0x4000_0000,
            sec_parms: Vec::new(),
            minorversion: 1,
            conn: None,
            drc: CacheMemory::new(1 << 20),
            io: Box::new(()),
        }
    }

    /// EXCHANGE_ID for a new owner `name`, as root.
    fn exchange(&self, name: &str) -> ExchangeIdOk {
        let p = Principal::Sys { uid: 0, gid: 0 };
        self.st
            .exchange_id(&Self::owner(name, 1), p, false)
            .unwrap()
    }

    /// A confirmed client with a session, past its reclaims.
    fn client(&self, name: &str) -> (ClientId4, SessionId4) {
        let x = self.exchange(name);
        let c = self
            .st
            .create_session(self.session_req(x.clientid, x.sequenceid, 0))
            .unwrap();
        self.st.reclaim_complete(x.clientid).unwrap();
        (x.clientid, c.resok.sessionid)
    }

    fn lock(
        &self,
        client: ClientId4,
        owner: Option<&str>,
        presented: StateId4,
        f: &FileKey,
        range: (u64, u64),
        blocking: bool,
    ) -> Result<StateId4, LockError> {
        self.st.lock(&LockRequest {
            client,
            new_owner: owner.map(|o| Bytes::copy_from_slice(o.as_bytes())),
            presented,
            file: f.clone(),
            start: range.0,
            end: range.1,
            kind: LockKind::Write,
            blocking,
            reclaim: false,
            fh: Bytes::new(),
        })
    }
}

fn denied_by(r: Result<StateId4, LockError>) -> ClientId4 {
    match r {
        Err(LockError::Denied(h)) => h.owner.0,
        other => panic!("expected a denial, got {other:?}"),
    }
}
