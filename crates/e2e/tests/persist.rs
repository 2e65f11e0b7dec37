//! Persistent sessions across a crash (RFC 8881 §2.10.6.5): a request
//! that changed the namespace, retried after the server restarted, gets
//! its original reply instead of running twice; anything else on the old
//! session gets NFS4ERR_DEADSESSION, and a session that was not persistent
//! is simply unknown.

mod common;

use client::{Client, ClientOptions};
use common::*;
use proto::nfs4::*;

fn persistent() -> ClientOptions {
    let mut o = options();
    o.persist = true;
    o
}

/// SEQUENCE on `slot` of `c`'s session with sequence ID `seqid`, then
/// `ops`: the request as the client would retransmit it.
fn request(c: &Client, slot: u32, seqid: u32, ops: &[NfsArgOp4]) -> Vec<NfsArgOp4> {
    let mut v = vec![NfsArgOp4::Sequence(Sequence4Args {
        sessionid: c.sessionid(),
        sequenceid: seqid,
        slotid: slot,
        highest_slotid: 1,
        cachethis: true,
    })];
    v.extend_from_slice(ops);
    v
}

fn remove(name: &str) -> Vec<NfsArgOp4> {
    vec![
        NfsArgOp4::PutRootFh,
        NfsArgOp4::Remove(Remove4Args { target: b(name) }),
    ]
}

#[tokio::test]
async fn a_remove_retried_after_a_crash_gets_its_reply_and_is_not_done_twice() {
    within(async {
        let mut srv = TestServer::start().await;
        let a = srv.client_with(persistent()).await;
        assert_ne!(
            a.session_flags() & CREATE_SESSION4_FLAG_PERSIST,
            0,
            "the session persists"
        );
        let plain = srv.client().await;
        assert_eq!(plain.session_flags() & CREATE_SESSION4_FLAG_PERSIST, 0);
        let root = a.root_fh().await.unwrap();
        for f in ["f", "g", "h"] {
            let o = create_file(&a, &root, f).await;
            a.close(&o.fh, o.stateid).await.unwrap();
        }
        // Slots 10 and 11 (the client's own traffic uses the lowest): a
        // REMOVE, then a GETATTR, whose reply is not kept across a crash.
        let rm = request(&a, 10, 1, &remove("f"));
        let first = a.compound_raw(b"rm", 1, &rm).await.unwrap();
        assert_eq!(first.status, NfsStat4::Nfs4Ok, "{first:?}");
        let look = request(&a, 11, 1, &[NfsArgOp4::PutRootFh, getattr(&[FATTR4_SIZE])]);
        assert_eq!(
            a.compound_raw(b"ga", 1, &look).await.unwrap().status,
            NfsStat4::Nfs4Ok
        );
        let p = request(&plain, 10, 1, &remove("h"));
        assert_eq!(
            plain.compound_raw(b"rm", 1, &p).await.unwrap().status,
            NfsStat4::Nfs4Ok
        );

        srv.crash_restart(|_| {}).await;
        // Any connection will do: the retry names its session.
        let c = srv.client().await;
        let again = c.compound_raw(b"rm", 1, &rm).await.unwrap();
        assert_eq!(again, first, "the original reply, not a second REMOVE");
        assert!(!srv.path("f").exists());
        // The same slot and sequence ID with other arguments: a false retry.
        let other = request(&a, 10, 1, &remove("g"));
        let r = c.compound_raw(b"rm", 1, &other).await.unwrap();
        assert_eq!(r.status, NfsStat4::Nfs4errSeqFalseRetry, "{r:?}");
        // A new request on the dead session, and the retry of a request
        // whose reply was not kept: the session is dead, nothing runs.
        let next = request(&a, 10, 2, &remove("g"));
        let r = c.compound_raw(b"rm", 1, &next).await.unwrap();
        assert_eq!(r.status, NfsStat4::Nfs4errDeadsession, "{r:?}");
        assert!(srv.path("g").exists());
        let r = c.compound_raw(b"ga", 1, &look).await.unwrap();
        assert_eq!(r.status, NfsStat4::Nfs4errDeadsession, "{r:?}");
        // A session that did not persist is unknown.
        let r = c.compound_raw(b"rm", 1, &p).await.unwrap();
        assert_eq!(r.status, NfsStat4::Nfs4errBadsession, "{r:?}");
        // The client starts over (new client ID and session) and goes on.
        let a2 = srv.client_with(persistent()).await;
        let root = a2.root_fh().await.unwrap();
        a2.remove(&root, "g").await.unwrap();
        // A clean stop keeps the live sessions the same way.
        let rm2 = request(&a2, 10, 1, &remove("new"));
        let o = create_file(&a2, &root, "new").await;
        a2.close(&o.fh, o.stateid).await.unwrap();
        let first = a2.compound_raw(b"rm", 1, &rm2).await.unwrap();
        srv.restart().await;
        let c = srv.client().await;
        assert_eq!(c.compound_raw(b"rm", 1, &rm2).await.unwrap(), first);
    })
    .await;
}
